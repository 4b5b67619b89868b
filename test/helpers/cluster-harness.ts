// Switchyard nodes of a cluster in one process, joined by an in-memory network: each node
// is a Server with its Cluster, listening on a made-up route port; `dial` connects two of
// them with a pair of in-memory connections. Nothing runs by itself: `pump` moves bytes
// and runs the flushes until the network is quiet, `tick` runs the nodes' timers at the
// harness clock, so reconnects and backoff are driven by the test's own time.
import { bareOptions, type ClusterOptions, type ServerOptions } from "../../src/config/options.js"
import { type InternalPrincipal } from "../../src/engine/principal.js"
import type { Delivery } from "../../src/engine/principal.js"
import { Cluster } from "../../src/server/cluster/cluster.js"
import { wireImports } from "../../src/server/imports.js"
import { Server } from "../../src/server/server.js"
import { seededEntropy } from "../../src/services/entropy.js"
import { makeLog } from "../../src/services/log.js"
import type { Conn, ConnHandlers } from "../../src/services/transport.js"

const seeded = (seed: number): (() => number) => {
  let x = seed
  return () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff
    return x / 0x80000000
  }
}

class MemConn implements Conn {
  readonly remoteAddress = "127.0.0.1"
  readonly tls = undefined
  peer!: MemConn
  handlers: ConnHandlers | undefined
  closed = false
  /** Bytes the "socket" claims to hold unsent: a peer that stopped reading. */
  stalled = 0

  constructor(
    private readonly net: MemNet,
    readonly remotePort: number,
    /** The same number at both ends of one connection. */
    readonly pair: number
  ) {}

  write(buf: Buffer, done?: () => void): void {
    if (!this.closed) this.net.send(this.peer, Buffer.from(buf))
    done?.()
  }

  writev(bufs: ReadonlyArray<Buffer>, done?: () => void): void {
    if (!this.closed) this.net.send(this.peer, Buffer.concat(bufs))
    done?.()
  }

  writableLength(): number {
    return this.stalled
  }

  end(): void {
    this.net.close(this)
  }

  destroy(): void {
    this.net.close(this)
  }
}

export interface Node {
  readonly name: string
  readonly server: Server
  readonly cluster: Cluster
  readonly routePort: number
  readonly log: Array<string>
  /** A subscriber of this node: what it receives is recorded as `subject payload`. */
  sub(subject: string, queue?: string): { got: Array<string>; unsubscribe(): void }
  /** Publishes from a client of this node; returns how many took it (remote servers count once). */
  pub(subject: string, payload: string, reply?: string): number
}

export class MemNet {
  now = 1_000_000
  private readonly random = seeded(7)
  private readonly queue: Array<{ to: MemConn; buf: Buffer | undefined }> = []
  private readonly flushes: Array<() => void> = []
  private readonly listeners = new Map<number, Cluster>()
  private nextPort = 40_000
  private nextPair = 1
  readonly nodes: Array<Node> = []
  /** Connection attempts, as `port` per dial. */
  readonly dials: Array<{ at: number; port: number; ok: boolean }> = []
  /** Pairs of nodes (`from>port`, both ways) a partition separates: a dial between them times out. */
  private readonly cuts = new Set<string>()
  /** Dials across a partition, failing when their timeout comes (`advance`). */
  private readonly timingOut: Array<{ at: number; failed: (e: Error) => void }> = []

  node(name: string, cluster: Partial<ClusterOptions> = {}, options: Partial<ServerOptions> = {}, limits: { readonly maxPeerInterest?: number } = {}): Node {
    const log: Array<string> = []
    const port = this.nextPort++
    const o: ServerOptions = {
      ...bareOptions,
      serverName: name,
      ...options,
      cluster: { name: "C1", host: "127.0.0.1", port, advertise: undefined, noAdvertise: false, routes: [], authorization: undefined, connectRetries: 0, ...cluster }
    }
    const server = new Server(o, {
      now: () => this.now,
      nanos: () => this.now * 1e6,
      random: this.random,
      randomBytes: seededEntropy(this.random).bytes,
      log: makeLog({ debug: true, trace: false, logtime: false, logFile: undefined }, (l) => log.push(l.trim()), () => this.now),
      scheduleFlush: (f) => this.flushes.push(f),
      serverId: `N${name.padEnd(55, "X").toUpperCase()}`
    })
    const c = new Cluster(server, o.cluster!, { dial: (_h, p, t, ok, fail) => this.dialFrom(port, p, t, ok, fail), wakeAt: () => {} }, limits)
    server.cluster = c
    server.router.watch(c)
    server.router.remote = c
    c.listening("127.0.0.1", port)
    this.listeners.set(port, c)
    wireImports(server)
    const client = server.router.internal("$G", `client of ${name}`)
    const node: Node = {
      name,
      server,
      cluster: c,
      routePort: port,
      log,
      sub: (subject, queue) => {
        const got: Array<string> = []
        const s = server.router.subscribe(client, subject, queue, (d: Delivery) => {
          got.push(`${d.subject} ${d.buf.toString("utf8", d.payloadStart, d.end)}`)
        })
        return { got, unsubscribe: () => client.removeSub(s) }
      },
      pub: (subject, payload, reply = "") => server.router.publish(client as InternalPrincipal, subject, reply, undefined, Buffer.from(payload))
    }
    this.nodes.push(node)
    return node
  }

  /** The node stops listening and every connection to it breaks. */
  down(n: Node): void {
    this.listeners.delete(n.routePort)
    for (const r of [...n.cluster.routes.values()]) this.close(r.conn as MemConn)
  }

  up(n: Node): void {
    this.listeners.set(n.routePort, n.cluster)
  }

  /**
   * A partition between two nodes: their route breaks and a call from one to the other
   * times out (after the dial's timeout, as time advances) until `heal`.
   */
  cut(a: Node, b: Node): void {
    this.cuts.add(`${a.routePort}>${b.routePort}`).add(`${b.routePort}>${a.routePort}`)
    for (const r of [...a.cluster.routes.values()]) if (r.remoteName === b.name) this.close(r.conn as MemConn)
  }

  heal(a: Node, b: Node): void {
    this.cuts.delete(`${a.routePort}>${b.routePort}`)
    this.cuts.delete(`${b.routePort}>${a.routePort}`)
  }

  /** Calls in flight (not yet connected nor failed). */
  get dialsInFlight(): number {
    return this.timingOut.length
  }

  /** A call from the node listening on `from`: across a partition it times out. */
  private dialFrom(from: number, port: number, timeoutMs: number, connected: (c: Conn) => ConnHandlers, failed: (e: Error) => void): void {
    if (!this.cuts.has(`${from}>${port}`)) return this.dial(port, connected, failed)
    this.dials.push({ at: this.now, port, ok: false })
    this.timingOut.push({ at: this.now + timeoutMs, failed })
  }

  private dial(port: number, connected: (c: Conn) => ConnHandlers, failed: (e: Error) => void): void {
    const target = this.listeners.get(port)
    this.dials.push({ at: this.now, port, ok: target !== undefined })
    if (target === undefined) {
      failed(new Error("connect ECONNREFUSED"))
      return
    }
    const pair = this.nextPair++
    const out = new MemConn(this, port, pair)
    const inc = new MemConn(this, 50_000 + pair, pair)
    out.peer = inc
    inc.peer = out
    inc.handlers = target.accept(inc)
    out.handlers = connected(out)
  }

  send(to: MemConn, buf: Buffer): void {
    this.queue.push({ to, buf })
  }

  close(c: MemConn): void {
    if (c.closed) return
    c.closed = true
    c.peer.closed = true
    this.queue.push({ to: c, buf: undefined }, { to: c.peer, buf: undefined })
  }

  /** Flushes and bytes until nothing moves. */
  pump(): void {
    for (let i = 0; i < 10_000; i++) {
      if (this.flushes.length > 0) {
        const fs = this.flushes.splice(0)
        for (const f of fs) f()
        continue
      }
      const e = this.queue.shift()
      if (e === undefined) return
      if (e.buf === undefined) e.to.handlers?.onClose(undefined)
      else if (!e.to.closed || e.to.handlers !== undefined) e.to.handlers?.onData(e.buf)
    }
    throw new Error("the network did not settle")
  }

  /** Time passes: every node's timers run at the new time, then the network settles. */
  advance(ms: number): void {
    this.now += ms
    for (const d of this.timingOut.filter((d) => d.at <= this.now)) {
      this.timingOut.splice(this.timingOut.indexOf(d), 1)
      d.failed(new Error("connect ETIMEDOUT"))
    }
    for (const n of this.nodes) n.cluster.tick(this.now)
    this.pump()
  }

  /** Each node's kept routes, as the remote names. */
  mesh(): Record<string, Array<string>> {
    return Object.fromEntries(this.nodes.map((n) => [n.name, [...n.cluster.byId.values()].map((r) => r.remoteName).sort()]))
  }
}
