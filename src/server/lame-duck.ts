// Lame duck mode (SIGUSR2), as nats-server runs it: stop accepting connections, tell
// the NATS clients (an INFO with `ldm: true`, which their libraries report so they can
// move to another server), wait `lame_duck_grace_period`, then close the clients one
// by one spread over the rest of `lame_duck_duration` (never more than a second apart,
// so a few clients do not wait minutes), and then stop. Time is Effect's Clock, so
// tests drive it with TestClock.
import { Duration, Effect } from "effect"
import type { LogService } from "../services/log.js"

export interface LameDuckTarget {
  /** Close the listeners and refuse whatever still arrives. */
  readonly stopAccepting: () => void
  /** Tell the clients that have a way to hear it (NATS: INFO with `ldm: true`). */
  readonly announce: () => void
  /** One closer per connected client (NATS and MQTT), taken after the grace period; each does nothing once its client is gone. */
  readonly connections: () => ReadonlyArray<() => void>
}

export interface LameDuckPacing {
  /** Clients closed together. */
  readonly batch: number
  /** Pause between batches, milliseconds. */
  readonly intervalMs: number
}

/**
 * How `clients` closes are spread over what is left of the duration after the grace
 * period (at least a second): evenly, at most a second apart, and in batches when
 * there are more clients than milliseconds.
 */
export const lameDuckPacing = (clients: number, durationMs: number, graceMs: number): LameDuckPacing => {
  const spreadMs = Math.max(1_000, durationMs - graceMs)
  if (clients <= 0) return { batch: 0, intervalMs: 0 }
  const each = spreadMs / clients
  if (each < 1) return { batch: Math.ceil(clients / spreadMs), intervalMs: 1 }
  return { batch: 1, intervalMs: Math.min(1_000, Math.floor(each)) }
}

const human = (ms: number): string => Duration.format(Duration.millis(ms))

/** The whole of lame duck mode, up to the moment the server may stop. */
export const runLameDuck = (
  target: LameDuckTarget,
  o: { readonly durationMs: number; readonly graceMs: number },
  log: LogService
): Effect.Effect<void> =>
  Effect.gen(function*() {
    log.info("Entering lame duck mode, stop accepting new clients")
    target.stopAccepting()
    target.announce()
    if (o.graceMs > 0) {
      log.info(`Waiting ${human(o.graceMs)} (lame_duck_grace_period) before closing the clients`)
      yield* Effect.sleep(Duration.millis(o.graceMs))
    }
    const closers = target.connections()
    const { batch, intervalMs } = lameDuckPacing(closers.length, o.durationMs, o.graceMs)
    if (closers.length > 0) log.info(`Closing ${closers.length} existing clients, ${batch} every ${intervalMs}ms`)
    for (let i = 0; i < closers.length; i += batch) {
      for (const close of closers.slice(i, i + batch)) close()
      if (i + batch < closers.length) yield* Effect.sleep(Duration.millis(intervalMs))
    }
    log.info("Lame duck mode: every client is closed, stopping")
  })
