// What the running server does on each process signal, as nats-server documents them
// (the listeners themselves are installed at the very start of the process:
// src/signals.ts). SIGUSR1 reopens the log file (logrotate), SIGHUP reloads the
// configuration file, SIGUSR2 enters lame duck mode and stops once every client is
// closed, SIGQUIT stops at once. SIGTERM and SIGINT stop gracefully (NodeRuntime
// interrupts the program and the scopes close the listeners).
import { Deferred, Effect, Queue, type Scope } from "effect"
import type { ServerOptions } from "../config/options.js"
import { Log, type LogService } from "../services/log.js"
import { onSignal } from "../signals.js"
import { type LameDuckTarget, runLameDuck } from "./lame-duck.js"
import { ClosedReason } from "./reasons.js"
import { bcryptLoaded, holdsBcrypt, loadBcrypt } from "./nats/bcrypt.js"
import { loadPart } from "./parts.js"
import { applyReload } from "./reload.js"
import type { Serving } from "./serve.js"

/** SIGUSR1 from the start of the server, so a rotation during start-up is not lost. */
export const handleLogReopen: Effect.Effect<void, never, Log | Scope.Scope> = Effect.gen(function*() {
  const log = yield* Log
  yield* Effect.acquireRelease(
    Effect.sync(() =>
      onSignal("SIGUSR1", () => {
        try {
          if (log.reopen()) log.info("File log re-opened")
        } catch (e) {
          // The old file stays open: nothing is lost, the operator is told why.
          log.error(`Could not re-open the log file: ${e instanceof Error ? e.message : String(e)}`)
        }
      })
    ),
    (off) => Effect.sync(off)
  )
})

export interface SignalContext {
  readonly serving: Serving
  /**
   * The configuration read again from its file (under the same flags), with its
   * warnings; fails with the reason when it cannot be read or is invalid.
   */
  readonly reread: Effect.Effect<{ readonly options: ServerOptions; readonly warnings: ReadonlyArray<string> }, Error>
  /** Completed when lame duck mode is over: the program then stops gracefully. */
  readonly stop: Deferred.Deferred<void>
}

/** The running server as lame duck mode sees it. */
export const lameDuckTarget = (s: Serving): LameDuckTarget => ({
  stopAccepting: () => {
    s.server.lameDuck = true
    for (const l of s.server.listeners) l.stopAccepting?.()
  },
  announce: () => {
    // The other servers of the cluster stop sending clients here.
    s.server.cluster?.enterLameDuck()
    for (const c of s.server.clients.values()) {
      if (c.closed || !c.connectReceived) continue
      const info = s.server.infoFor(c, { ldm: true })
      c.out.writeBytes(info, 0, info.length)
      s.server.outbound.markDirty(c)
    }
  },
  connections: () => [
    ...[...s.server.clients.values()].map((c) => () => c.close(ClosedReason.ServerShutdown)),
    ...[...(s.mqtt?.connections.values() ?? [])].map((c) => () => s.mqtt!.closeForShutdown(c))
  ]
})

const reload = (ctx: SignalContext, log: LogService): Effect.Effect<void> =>
  Effect.gen(function*() {
    log.info("Reloading server configuration (SIGHUP)")
    const read = yield* Effect.either(ctx.reread)
    if (read._tag === "Left") {
      log.error(`Configuration reload failed: ${read.left.message}; the running configuration is unchanged`)
      return
    }
    for (const w of read.right.warnings) log.warn(w)
    // The first bcrypt hash the server sees may come with a reload.
    if (!bcryptLoaded() && holdsBcrypt(read.right.options)) {
      const loaded = yield* Effect.either(loadPart("bcrypt support", loadBcrypt))
      if (loaded._tag === "Left") {
        log.error(`Configuration reload failed: ${loaded.left.message}; the running configuration is unchanged`)
        return
      }
    }
    applyReload(ctx.serving, read.right.options, log)
  })

/** SIGHUP, SIGUSR2 and SIGQUIT for the life of the scope; each signal is handled in turn, in the order received. */
export const handleServerSignals = (ctx: SignalContext): Effect.Effect<void, never, Log | Scope.Scope> =>
  Effect.gen(function*() {
    const log = yield* Log
    const received = yield* Queue.unbounded<"SIGHUP" | "SIGUSR2">()
    let lameDuck = false
    const handle = (sig: "SIGHUP" | "SIGUSR2"): Effect.Effect<void, never, Scope.Scope> => {
      if (sig === "SIGHUP") return reload(ctx, log)
      if (lameDuck) return Effect.sync(() => log.info("Already in lame duck mode"))
      lameDuck = true
      const o = ctx.serving.server.options
      return runLameDuck(lameDuckTarget(ctx.serving), { durationMs: o.lameDuckDurationMs, graceMs: o.lameDuckGracePeriodMs }, log).pipe(
        Effect.zipRight(Deferred.succeed(ctx.stop, undefined)),
        Effect.forkScoped,
        Effect.asVoid
      )
    }
    yield* Queue.take(received).pipe(Effect.flatMap(handle), Effect.forever, Effect.forkScoped)
    for (const sig of ["SIGHUP", "SIGUSR2"] as const) {
      yield* Effect.acquireRelease(
        Effect.sync(() => onSignal(sig, () => Queue.unsafeOffer(received, sig))),
        (off) => Effect.sync(off)
      )
    }
    // SIGQUIT: no graceful anything. The line is written (synchronously), then Node's
    // own handling of the signal ends the process, as an unhandled SIGQUIT would.
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const off = onSignal("SIGQUIT", () => {
          log.warn("Received SIGQUIT: stopping at once, without closing clients")
          off()
          process.kill(process.pid, "SIGQUIT")
        })
        return off
      }),
      (off) => Effect.sync(off)
    )
  })
