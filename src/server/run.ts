// The Effect shell around the engine: listens through the Transport, drives the
// engine's timers from Effect's Clock (so tests steer them with TestClock), flushes
// on setImmediate, and shuts down gracefully when its scope closes.
import { Effect, Random, type Scope } from "effect"
import type { ServerOptions } from "../config/options.js"
import { Log } from "../services/log.js"
import { Transport, type TransportError } from "../services/transport.js"
import { BusyPoll } from "./busy-poll.js"
import { GcPacer, nodeMinorGc } from "./gc-pacer.js"
import { type WiredImports, wireImports } from "./imports.js"
import { makeServerId, Server } from "./server.js"

export interface RunningServer {
  readonly server: Server
  readonly host: string
  readonly port: number
  /** The event loop's busy polling (`busy_poll`); undefined when it is off. */
  readonly busyPoll: BusyPoll | undefined
  /** The accounts' imports as wired now (a reload rewires them). */
  imports: WiredImports
}

/** A small, fast seeded generator (xorshift32) for per-message choices; the seed comes from Effect's Random. */
export const xorshift = (seed: number): (() => number) => {
  let x = seed | 0 || 0x9e3779b9
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) / 4294967296
  }
}

/** How often the engine's timers are checked: fine enough for the shortest configured timeout. */
export const tickIntervalMs = (o: ServerOptions): number => {
  const shortest = Math.min(o.pingIntervalMs, o.writeDeadlineMs, o.authorization?.timeoutMs ?? o.authTimeoutMs)
  return Math.max(10, Math.min(1000, Math.floor(shortest / 4)))
}

export const hostPort = (host: string, port: number): string => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`)

export const startNatsServer = (
  options: ServerOptions
): Effect.Effect<RunningServer, TransportError, Transport | Log | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const log = yield* Log
    const clock = yield* Effect.clock
    const random = xorshift(yield* Random.nextIntBetween(1, 0x7fffffff))
    const now = () => clock.unsafeCurrentTimeMillis()
    const poll = options.busyPollUs > 0
      ? new BusyPoll(options.busyPollUs / 1000, { now: () => performance.now(), schedule: (f) => setImmediate(f) })
      : undefined
    const minorGc = nodeMinorGc()
    const pacer = minorGc === undefined ? undefined : new GcPacer(minorGc)
    const server = new Server(options, {
      activity: (bytes) => {
        poll?.activity(bytes)
        pacer?.add(bytes)
      },
      now,
      nanos: () => Number(clock.unsafeCurrentTimeNanos()),
      random,
      log,
      scheduleFlush: (flush) => setImmediate(flush),
      serverId: makeServerId(random)
    })
    const imports = wireImports(server)
    const listener = yield* transport.listen(options.host, options.port, (conn) => server.accept(conn), options.tls)
    server.setListener(listener.host, listener.port)
    server.registerListener(listener)
    // Registered after the listener, so it runs first on close: clients are flushed and
    // closed before the listening socket waits for them to go.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        log.info("Initiating Shutdown...")
        server.shutdown()
      })
    )
    // Read each round: a reload may shorten the ping interval or a deadline.
    yield* Effect.suspend(() => Effect.sleep(tickIntervalMs(server.options))).pipe(
      Effect.zipRight(Effect.sync(() => server.tick(now()))),
      Effect.forever,
      Effect.forkScoped
    )
    log.info(`Listening for client connections on ${hostPort(listener.host, listener.port)}`)
    return { server, host: listener.host, port: listener.port, busyPoll: poll, imports }
  })
