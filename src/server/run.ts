// The Effect shell around the engine: listens through the Transport, wakes the
// engine's timers on demand from Effect's Clock (so tests steer them with TestClock), flushes
// on setImmediate, and shuts down gracefully when its scope closes.
import { readFileSync } from "node:fs"
import { Effect, Option, Random, type Scope } from "effect"
import type { ServerOptions } from "../config/options.js"
import { Entropy, nodeEntropy } from "../services/entropy.js"
import { Log } from "../services/log.js"
import { Transport, type TransportError } from "../services/transport.js"
import { type Alarm, startAlarm } from "./alarm.js"
import { BusyPoll } from "./busy-poll.js"
import { optimizerRead } from "../startup-tiering.js"
import { GcPacer, IdleTrim, nodeMinorGc, nodeTrimGc } from "./gc-pacer.js"
import { type WiredImports, wireImports } from "./imports.js"
// Types only: routes and leaf nodes load with their blocks (parts.ts).
import type { Cluster } from "./cluster/cluster.js"
import type { InterestWatcher } from "../engine/principal.js"
import { holdsBcrypt, loadBcrypt } from "./nats/bcrypt.js"
import { loadPart, type StartupError } from "./parts.js"
import { makeServerId, Server } from "./server.js"
import { parseLeafUrl } from "../config/route-url.js"

/** A file's text, read when needed (a leaf remote's credentials at each attempt); undefined when it cannot be read. */
const readFile = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

export interface RunningServer {
  readonly server: Server
  readonly host: string
  readonly port: number
  /** The event loop's busy polling (`busy_poll`); undefined when it is off. */
  readonly busyPoll: BusyPoll | undefined
  /** The accounts' imports as wired now (a reload rewires them). */
  imports: WiredImports
  /** The timer of the clients' deadlines (pings, auth and write deadlines). */
  readonly alarm: Alarm
  /** The routes to the other servers of a cluster, when the configuration has a `cluster` block. */
  readonly cluster: Cluster | undefined
  /** Gives memory back when traffic stops (Node 22 on); undefined where the runtime cannot. */
  readonly idleTrim: IdleTrim | undefined
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

/** The closest two runs of the engine's timers may be: fine enough for the shortest configured timeout. */
export const tickIntervalMs = (o: ServerOptions): number => {
  const shortest = Math.min(o.pingIntervalMs, o.writeDeadlineMs, o.authorization?.timeoutMs ?? o.authTimeoutMs)
  return Math.max(10, Math.min(1000, Math.floor(shortest / 4)))
}

export const hostPort = (host: string, port: number): string => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`)

export const startNatsServer = (
  options: ServerOptions
): Effect.Effect<RunningServer, TransportError | StartupError, Transport | Log | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const log = yield* Log
    // What this configuration uses and a server without it never loads (parts.ts).
    if (holdsBcrypt(options)) yield* loadPart("bcrypt support", loadBcrypt)
    const clustering = options.cluster === undefined ? undefined : yield* loadPart("cluster support", () => import("./cluster/cluster.js"))
    const leafing = options.leafnodes === undefined ? undefined : yield* loadPart("leaf node support", () => import("./leafnodes/leafnodes.js"))
    if (dialsWebSocket(options) && transport.loadWebSocket !== undefined) yield* transport.loadWebSocket
    const clock = yield* Effect.clock
    const random = xorshift(yield* Random.nextIntBetween(1, 0x7fffffff))
    // The OS's CSPRNG unless the context provides another Entropy (a seeded one in tests).
    const entropy = Option.getOrElse(yield* Effect.serviceOption(Entropy), () => nodeEntropy)
    const now = () => clock.unsafeCurrentTimeMillis()
    const poll = options.busyPollUs > 0
      ? new BusyPoll(options.busyPollUs / 1000, { now: () => performance.now(), schedule: (f) => setImmediate(f) })
      : undefined
    let alarm: Alarm | undefined
    const minorGc = nodeMinorGc()
    const pacer = minorGc === undefined ? undefined : new GcPacer(minorGc)
    const trimGc = nodeTrimGc()
    const idle = trimGc === undefined ? undefined : new IdleTrim(trimGc, (ms, f) => setTimeout(f, ms).unref(), () => performance.now())
    const server = new Server(options, {
      activity: (bytes) => {
        poll?.activity(bytes)
        pacer?.add(bytes)
        idle?.add(bytes)
        optimizerRead(bytes)
      },
      now,
      nanos: () => Number(clock.unsafeCurrentTimeNanos()),
      random,
      randomBytes: entropy.bytes,
      log,
      scheduleFlush: (flush) => setImmediate(flush),
      wakeAt: (at) => alarm?.wakeAt(at),
      serverId: makeServerId(entropy.bytes)
    })
    // The cluster hears of every subscription from the start (JetStream, MQTT and the
    // imports subscribe below), so what it announces to routes is complete.
    // Its timers (handshakes, pings, write deadlines, reconnects) run with the clients'
    // (Server.tick), on the same alarm.
    const cluster = clustering === undefined
      ? undefined
      : new clustering.Cluster(server, options.cluster!, { dial: transport.dial, wakeAt: (at) => alarm?.wakeAt(at), readFile })
    if (cluster !== undefined) {
      server.cluster = cluster
      server.router.watch(cluster)
      server.router.remote = cluster
    }
    // Leaf nodes the same way: they take messages published here and those from routes
    // (the router's edge). With routes too, each hears of the other's interest: a leaf's
    // is this server's own to the routes, the routes' is the cluster's to the leaf nodes.
    const leafnodes = leafing === undefined
      ? undefined
      : new leafing.LeafNodes(server, options.leafnodes!, { dial: transport.dial, dialWebSocket: transport.dialWebSocket, wakeAt: (at) => alarm?.wakeAt(at), readFile })
    if (leafnodes !== undefined) {
      server.leafnodes = leafnodes
      server.router.edge = leafnodes
      if (cluster === undefined) server.router.watch(leafnodes)
      else {
        cluster.leafs = leafnodes
        leafnodes.routes = cluster
        server.router.watch(bothWatch(cluster, leafnodes))
      }
    }
    const imports = wireImports(server)
    // Pings, stale connections, auth and write deadlines, and the routes' timers: woken
    // only when a connection has one due, never more often than the tick interval (so
    // nearby deadlines share a run; read each time: a reload may shorten the ping
    // interval or a deadline).
    const timer = yield* startAlarm((t) => server.tick(t), () => tickIntervalMs(server.options))
    alarm = timer
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
    log.info(`Listening for client connections on ${hostPort(listener.host, listener.port)}`)
    if (cluster !== undefined) {
      const c = options.cluster!
      // Routes speak TLS from the first byte, as nats-server's do (its INFO comes after the handshake).
      const routes = yield* transport.listen(
        c.host,
        c.port,
        (conn) => cluster.accept(conn),
        c.tls === undefined ? undefined : { ...c.tls, handshakeFirst: true },
        { onTlsFailure: (peer, error) => cluster.tlsFailed(peer, error) }
      )
      cluster.listening(routes.host, routes.port)
      // Runs before the route listener closes (which waits for its connections to end).
      yield* Effect.addFinalizer(() => Effect.sync(() => cluster.shutdown()))
      log.info(`Cluster name is ${cluster.name}${cluster.dynamicName ? " (made up: no name configured)" : ""}`)
      log.info(`Listening for route connections on ${hostPort(routes.host, routes.port)}`)
      if (transport.dial === undefined && c.routes.length > 0) log.warn("This transport cannot connect out: configured routes are not solicited")
    }
    if (leafnodes !== undefined) {
      const l = options.leafnodes!
      if (l.port !== undefined) {
        // Leaf connections the NATS way: INFO in the clear (saying tls_required), then the upgrade.
        const leafListener = yield* transport.listen(l.host, l.port, (conn) => leafnodes.accept(conn), l.tls)
        leafnodes.start(leafListener.host, leafListener.port)
        log.info(`Listening for leafnode connections on ${hostPort(leafListener.host, leafListener.port)}`)
      } else {
        leafnodes.start(undefined, undefined)
      }
      // Runs before the leaf listener closes (which waits for its connections to end).
      yield* Effect.addFinalizer(() => Effect.sync(() => leafnodes.shutdown()))
      if (transport.dial === undefined && l.remotes.length > 0) log.warn("This transport cannot connect out: leafnode remotes are not solicited")
    }
    return { server, host: listener.host, port: listener.port, busyPoll: poll, imports, alarm: timer, cluster, idleTrim: idle }
  })

/** A leaf remote connects through a WebSocket (a ws:// or wss:// URL). */
const dialsWebSocket = (o: ServerOptions): boolean =>
  o.leafnodes?.remotes.some((r) => r.urls.some((u) => parseLeafUrl(u)?.ws === true)) === true

/** Routes and leaf nodes both hear of every local subscription. */
const bothWatch = (a: InterestWatcher, b: InterestWatcher): InterestWatcher => ({
  subscribed: (account, sub) => {
    a.subscribed(account, sub)
    b.subscribed(account, sub)
  },
  unsubscribed: (account, sub) => {
    a.unsubscribed(account, sub)
    b.unsubscribed(account, sub)
  }
})
