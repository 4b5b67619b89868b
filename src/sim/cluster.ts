// The cluster simulation: 2 to 4 real `Server`s in one process, each with its client and
// route listeners on a simulated network, driven by one event queue. Routes are the real
// ones (src/server/cluster): solicited from configured URLs (a topology the seed picks:
// every node naming every other, a star, a chain) and learned from INFO gossip, retried
// with the cluster's backoff on the servers' (simulated) clock. NATS clients connect to
// random nodes and subscribe, unsubscribe, publish and request. Seeded faults: client
// drops and stalls, route connections reset, partitions between node sets (bytes held
// both ways, dials across time out) and heals, slow routes (latency, small chunks,
// backpressure), node restarts (clean shutdown, or a crash nobody is told of). The
// invariants (cluster-model.ts) are checked after every step; at the end the network
// heals, every node comes back and, once quiet, delivery and interest convergence are checked.
import type { ServerOptions } from "../config/options.js"
import { Cluster, ROUTE_DIAL_TIMEOUT_MS } from "../server/cluster/cluster.js"
import { wireImports } from "../server/imports.js"
import { tickIntervalMs } from "../server/run.js"
import { makeServerId, Server } from "../server/server.js"
import type { Conn, ConnHandlers } from "../services/transport.js"
import { seededEntropy } from "../services/entropy.js"
import { makeLog } from "../services/log.js"
import { type Actor, clientProfile, publishBatch, requestOne, unsubscribeOne } from "./actions.js"
import { SimClient } from "./clients.js"
import { ClusterModel, type ModelNode } from "./cluster-model.js"
import { type ClusterBug, faultsFor, type FaultMix, optionsFor, type SimConfig, type SimResult, simResult, TraceLog } from "./faults.js"
import { EventQueue, SimNetwork } from "./network.js"
import { Rng } from "./rng.js"
import { type PipeEnd, type PipeProfile, RoutePipe } from "./route-pipe.js"

const CLIENT_PORT = 4222
const ROUTE_PORT = 6222
const SUBJECTS = ["s.a", "s.b", "s.c.d"] as const
const FILTERS = ["s.a", "s.b", "s.*", "s.>", "s.c.*", ">"] as const
const MAX_CLIENTS = 10
/** How long the end of a run may take to heal, reconnect and go quiet (simulated). */
const QUIESCE_LIMIT_MS = 180_000

/** The cluster faults of one run, drawn from its seed. */
export interface ClusterFaults {
  readonly routeDrop: number
  readonly partition: number
  readonly slowRoute: number
  readonly restart: number
  /** Of restarts, the share that are crashes (else clean shutdowns). */
  readonly crash: number
  readonly topology: "mesh" | "star" | "chain"
}

const clusterFaultsFor = (rng: Rng): ClusterFaults => ({
  routeDrop: rng.pick([0, 0.004, 0.015]),
  partition: rng.pick([0, 0.003, 0.01]),
  slowRoute: rng.pick([0, 0.01, 0.03]),
  restart: rng.pick([0, 0.002, 0.006]),
  crash: rng.pick([0.3, 0.7]),
  topology: rng.pick(["mesh", "star", "chain"] as const)
})

class Node implements ModelNode {
  server: Server | undefined = undefined
  life = 0
  readonly net: SimNetwork
  readonly pipes = new Set<PipeEnd>()
  /** The earliest extra tick asked for (wakeAt). */
  private wake = Infinity

  constructor(
    readonly index: number,
    readonly address: string,
    readonly options: ServerOptions,
    q: EventQueue,
    rng: Rng,
    trace: (l: string) => void
  ) {
    this.net = new SimNetwork(rng, trace, q, address, 40000 + 1000 * index)
  }

  /** A tick at `at` (the cluster's reconnect and handshake deadlines, a client's first). */
  wakeAt(at: number, run: () => void): void {
    const q = this.net.q
    const t = Math.max(at, q.now)
    if (t >= this.wake) return
    this.wake = t
    q.schedule(t, () => {
      if (this.wake === t) this.wake = Infinity
      run()
    })
  }
}

export const runClusterSim = (config: SimConfig): Promise<SimResult> => Promise.resolve(new ClusterSim(config).run())

class ClusterSim {
  private readonly rng: Rng
  private readonly q = new EventQueue()
  private readonly nodes: Array<Node> = []
  private readonly model: ClusterModel
  private readonly faults: FaultMix
  private readonly cf: ClusterFaults
  private readonly serverRng: Rng
  private readonly pipeRng: Rng
  private readonly maxRng: Rng
  private readonly silentRng: Rng
  private clients: Array<SimClient> = []
  private readonly pipes: Array<RoutePipe> = []
  /** Node indexes on one side of the partition under way (undefined: none). */
  private partition: ReadonlySet<number> | undefined
  private readonly threw: Array<string> = []
  private readonly violations: Array<string> = []
  private readonly log: TraceLog
  private step = 0
  private nextClientId = 1
  private nextPipe = 1
  private quiescing = false
  private readonly stats: Record<string, number> = {
    nodes: 0, connects: 0, drops: 0, stalls: 0, pubs: 0, subs: 0, unsubs: 0, autoUnsubs: 0, requests: 0,
    routeDrops: 0, partitions: 0, slowRoutes: 0, restarts: 0, crashes: 0, silentCrashes: 0, dials: 0, dialsFailed: 0, routesCounted: 0, checkedDeliveries: 0
  }

  constructor(private readonly config: SimConfig) {
    this.log = new TraceLog(config.traceTail ?? 30)
    const root = new Rng(config.seed ^ 0x636c7573)
    const n = config.cluster === undefined || config.cluster <= 1 ? root.int(2, 4) : config.cluster
    this.stats.nodes = n
    const base = optionsFor(root.fork())
    this.faults = faultsFor(root.fork())
    this.cf = clusterFaultsFor(root.fork())
    this.rng = root.fork()
    this.serverRng = root.fork()
    this.pipeRng = root.fork()
    const netRng = root.fork()
    this.maxRng = new Rng(config.seed ^ 0x6d617821)
    this.silentRng = new Rng(config.seed ^ 0x73696c65)
    const noAdvertise = root.chance(0.2)
    const connectRetries = root.pick([0, 2, 10])
    const trace = (l: string): void => this.trace(l)
    const addr = (i: number): string => `10.0.1.${i + 1}`
    for (let i = 0; i < n; i++) {
      const peers = this.cf.topology === "mesh" ? [...Array(n).keys()].filter((j) => j !== i) : this.cf.topology === "star" ? (i === 0 ? [] : [0]) : i === 0 ? [] : [i - 1]
      const options: ServerOptions = {
        ...base,
        host: addr(i),
        serverName: `n${i}`,
        log: { ...base.log, debug: process.env.SIM_DEBUG === "1" },
        cluster: {
          name: "sim",
          host: addr(i),
          port: ROUTE_PORT,
          advertise: undefined,
          noAdvertise,
          routes: peers.map((j) => `nats-route://${addr(j)}:${ROUTE_PORT}`),
          authorization: undefined,
          connectRetries
        }
      }
      this.nodes.push(new Node(i, addr(i), options, this.q, netRng.fork(), trace))
    }
    this.model = new ClusterModel(this.nodes)
    for (const node of this.nodes) node.net.observers = [(link, chunk, wasOpen, closedDuring) => this.model.observe(node, link, chunk, wasOpen, closedDuring)]
    const o = base
    this.trace(`cluster of ${n} (${this.cf.topology}, connect_retries ${connectRetries}${noAdvertise ? ", no_advertise" : ""}) max_pending=${o.maxPending} ping=${o.pingIntervalMs}ms/${o.pingMax} write_deadline=${o.writeDeadlineMs}ms faults=${JSON.stringify({ ...this.faults, ...this.cf })}`)
  }

  private trace(line: string): void {
    this.log.add(`[${this.step} t=${this.q.now}] ${line}`)
  }

  private call(what: string, f: () => void): void {
    try {
      f()
    } catch (e) {
      this.threw.push(`${what}: ${e instanceof Error ? e.stack ?? e.message : String(e)}`)
    }
  }

  // ---- nodes ----

  private boot(node: Node): void {
    const life = ++node.life
    const q = this.q
    const random = () => this.serverRng.next()
    const entropy = seededEntropy(random)
    const log = makeLog(node.options.log, (l) => {
      this.trace(`n${node.index}: ${l.replace(/^\[\d+\] /, "").trimEnd()}`)
      const closed = /Router connection closed: (.*)$/.exec(l.trimEnd())
      if (closed !== null) this.stats[`routeClosed:${closed[1]}`] = (this.stats[`routeClosed:${closed[1]}`] ?? 0) + 1
    }, () => q.now)
    const live = (): boolean => node.life === life && node.server !== undefined
    const tick = (): void => {
      if (live()) this.call(`tick on n${node.index}`, () => server.tick(q.now))
    }
    const server = new Server(node.options, {
      now: () => q.now,
      nanos: () => q.now * 1_000_000,
      random,
      randomBytes: entropy.bytes,
      log,
      scheduleFlush: (flush) => q.schedule(q.now, () => live() && this.call(`flush on n${node.index}`, flush)),
      wakeAt: (at) => node.wakeAt(at, tick),
      serverId: makeServerId(entropy.bytes)
    })
    node.server = server
    this.trace(`n${node.index} (${server.serverId}) starts`)
    for (const p of this.pipes) if (p.deadEnd?.node === node.index) p.hostRebooted()
    // Wired as the shell wires it (run.ts): the cluster hears of every subscription, the router forwards through it.
    const cluster = new Cluster(server, node.options.cluster!, {
      dial: (host, port, timeoutMs, connected, failed) => this.dial(node, life, host, port, timeoutMs, connected, failed),
      wakeAt: (at) => node.wakeAt(at, tick)
    })
    server.cluster = cluster
    server.router.watch(cluster)
    server.router.remote = cluster
    const plant = this.config.plant
    if (plant === "route-no-unsub" || plant === "route-double-send") plantClusterBug(cluster, plant)
    wireImports(server)
    server.setListener(node.address, CLIENT_PORT)
    const every = tickIntervalMs(node.options)
    const periodic = (): void => {
      if (!live()) return
      tick()
      q.schedule(q.now + every, periodic)
    }
    q.schedule(q.now + every, periodic)
    node.net.listen((conn) => server.accept(conn))
    cluster.listening(node.address, ROUTE_PORT)
  }

  /** A server connects out to a route: refused by a node that is down, timed out across a partition. */
  private dial(from: Node, life: number, host: string, port: number, timeoutMs: number, connected: (conn: Conn) => ConnHandlers, failed: (e: Error) => void): void {
    const q = this.q
    const to = this.nodes.find((n) => n.address === host)
    this.stats.dials++
    const fail = (at: number, why: string): void => {
      this.stats.dialsFailed++
      q.schedule(at, () => from.life === life && this.call(`dial failure on n${from.index}`, () => failed(new Error(why))))
    }
    if (to === undefined || port !== ROUTE_PORT) return fail(q.now + 1, "connect ECONNREFUSED")
    if (this.cut(from.index, to.index)) return fail(q.now + Math.min(timeoutMs, ROUTE_DIAL_TIMEOUT_MS), "connect ETIMEDOUT")
    const r = this.rng
    const latency = r.int(0, 3)
    q.schedule(q.now + latency, () => {
      if (from.life !== life || from.server === undefined) return
      if (to.server === undefined || this.cut(from.index, to.index)) {
        this.stats.dialsFailed++
        this.call(`dial failure on n${from.index}`, () => failed(new Error("connect ECONNREFUSED")))
        return
      }
      const pipe = new RoutePipe(this.nextPipe++, q, (w, f) => this.call(w, f), (l) => this.trace(l),
        { node: from.index, address: from.address, port: 50000 + this.nextPipe }, { node: to.index, address: to.address, port: ROUTE_PORT },
        this.pipeRng.fork(), this.fastPipe())
      this.pipes.push(pipe)
      from.pipes.add(pipe.a)
      to.pipes.add(pipe.b)
      const target = to.server
      this.trace(`route pipe ${pipe.id}: n${from.index} -> n${to.index}`)
      this.call(`route accept on n${to.index}`, () => {
        pipe.b.handlers = target.cluster!.accept(pipe.b)
      })
      this.call(`route connected on n${from.index}`, () => {
        pipe.a.handlers = connected(pipe.a)
      })
    })
  }

  private fastPipe(): PipeProfile {
    const r = this.rng
    return { latency: [0, r.int(1, 4)], drainBytes: r.int(64 * 1024, 1 << 20), drainEveryMs: 1, splitChance: this.faults.splitChance }
  }

  /** Whether a partition separates two nodes. */
  private cut(a: number, b: number): boolean {
    const p = this.partition
    return p !== undefined && p.has(a) !== p.has(b)
  }

  /** A node stops: cleanly (clients and routes closed, flushed) or by a crash (everything reset; it says nothing). */
  private stop(node: Node, crash: boolean): void {
    const server = node.server
    if (server === undefined) return
    this.stats.restarts++
    if (crash) this.stats.crashes++
    this.trace(`n${node.index} ${crash ? "crashes" : "shuts down"}`)
    this.model.checkReceived(this.clients)
    if (!crash) this.call(`shutdown of n${node.index}`, () => server.shutdown())
    const finish = (): void => {
      node.server = undefined
      node.life++
      node.net.serverDied()
      // A process crash resets its connections (the OS is still there); a host that vanished (half
      // the crashes) sends nothing: the other ends find out by themselves.
      const silent = crash && this.silentRng.chance(0.5)
      if (silent) this.stats.silentCrashes++
      for (const end of node.pipes) {
        if (silent) end.pipe.halfOpen(end)
        else end.pipe.kill(end)
      }
      node.pipes.clear()
      this.model.nodeDied(node.index)
    }
    // A clean shutdown flushes first (its routes and clients hear of it); a crash does not.
    if (crash) finish()
    else {
      const life = node.life
      this.q.schedule(this.q.now + 50, () => node.life === life && finish())
    }
    const down = this.rng.int(0, 3_000)
    const at = this.q.now + (crash ? 0 : 50) + down
    this.q.schedule(at, () => {
      if (node.server === undefined && !this.quiescing) this.boot(node)
    })
  }

  // ---- the run ----

  run(): SimResult {
    for (const node of this.nodes) this.boot(node)
    let failedStep = -1
    for (this.step = 1; this.step <= this.config.steps && failedStep < 0; this.step++) {
      this.act()
      this.q.runUntil(this.q.now + this.rng.int(1, 20))
      if (!this.check()) failedStep = this.step
    }
    if (failedStep < 0 && !this.quiesce()) failedStep = this.step
    const violations = this.all()
    this.stats.checkedDeliveries = this.clients.reduce((n, c) => n + c.received.length, 0)
    this.stats.noRespondersStatuses = this.clients.reduce((n, c) => n + c.received.filter((m) => m.noResponders).length, 0)
    return simResult(this.config, failedStep, violations, this.log, this.faults, { ...this.stats, ...this.model.stats })
  }

  private all(): Array<string> {
    return [...this.violations, ...this.model.violations, ...this.threw.map((e) => `server threw: ${e}`), ...this.nodes.flatMap((n) => n.net.serverThrew.map((e) => `n${n.index} threw: ${e}`))]
  }

  private check(): boolean {
    this.model.checkReceived(this.clients)
    const v = this.all()
    for (const x of v) this.trace(`VIOLATION ${x.split("\n")[0]}`)
    return v.length === 0
  }

  /** Faults stop, the partition heals, routes speed up, every node comes back; then quiet, and the last checks. */
  private quiesce(): boolean {
    this.trace("quiesce: heal the network, restart every node, let it go quiet")
    this.quiescing = true
    this.heal()
    for (const p of this.pipes) if (!p.closed) p.slow(this.fastPipe())
    for (const c of this.clients) c.link.heal()
    for (const node of this.nodes) if (node.server === undefined) this.boot(node)
    let settled = 0
    for (let t = 0; t < QUIESCE_LIMIT_MS && settled < 40; t += 25) {
      this.q.runUntil(this.q.now + 25)
      const drained = this.pipes.every((p) => p.closed || p.pending === 0) && this.clients.every((c) => c.link.closed || c.link.writableLength() === 0)
      settled = drained && this.model.convergence().length === 0 ? settled + 1 : 0
      if (!this.check()) return false
    }
    this.model.checkReceived(this.clients)
    this.model.checkComplete()
    for (const v of this.model.convergence()) this.violations.push(`after ${QUIESCE_LIMIT_MS / 1000} s of healed network: ${v}`)
    this.checkRouteCounts()
    return this.check()
  }

  /** Once quiet, each open route connection lost nothing: what one end counted out, the other counted in. */
  private checkRouteCounts(): void {
    const routeOf = (end: PipeEnd) => [...this.nodes[end.node].server?.cluster?.routes.values() ?? []].find((r) => r.conn === end)
    for (const p of this.pipes) {
      if (p.closed) continue
      const a = routeOf(p.a)
      const b = routeOf(p.b)
      if (a === undefined || b === undefined || a.closed || b.closed) continue
      this.stats.routesCounted++
      if (a.outMsgs !== b.inMsgs || b.outMsgs !== a.inMsgs) {
        this.violations.push(`route pipe ${p.id}: n${p.a.node} sent ${a.outMsgs} and got ${a.inMsgs} messages, n${p.b.node} sent ${b.outMsgs} and got ${b.inMsgs}`)
      }
    }
  }

  private heal(): void {
    if (this.partition === undefined) return
    this.trace(`partition heals`)
    this.partition = undefined
    for (const p of this.pipes) if (p.partitioned) p.partition(false)
  }

  private up(): Array<Node> {
    return this.nodes.filter((n) => n.server !== undefined)
  }

  private act(): void {
    const r = this.rng
    const f = this.faults
    const cf = this.cf
    const live = this.clients.filter((c) => c.state === "ready")
    const open = this.clients.filter((c) => c.state !== "closed")
    const up = this.up()
    if (up.length > 0 && (open.length < 2 || (open.length < MAX_CLIENTS && r.chance(0.04)))) return this.connect(r.pick(up))
    const pipes = this.pipes.filter((p) => !p.closed)
    if (pipes.length > 0 && r.chance(cf.routeDrop)) {
      const p = r.pick(pipes)
      this.stats.routeDrops++
      return p.reset(undefined, "dropped by the network")
    }
    if (r.chance(cf.partition)) return this.partition === undefined ? this.split() : this.heal()
    if (pipes.length > 0 && r.chance(cf.slowRoute)) return this.slowRoute(r.pick(pipes))
    if (up.length > 0 && r.chance(cf.restart)) return this.stop(r.pick(up), r.chance(cf.crash))
    if (open.length > 0 && r.chance(f.drop)) {
      const c = r.pick(open)
      this.stats.drops++
      this.trace(`c${c.id} drops its connection`)
      return c.link.drop()
    }
    if (open.length > 0 && r.chance(f.stall)) {
      const c = r.pick(open)
      this.stats.stalls++
      this.trace(`c${c.id} ${c.link.stalled ? "resumes" : "stops"} reading`)
      return c.link.stall(!c.link.stalled)
    }
    if (live.length === 0) return
    const c = r.pick(live)
    const roll = r.next()
    if (roll < 0.12) this.subscribe(c)
    else if (roll < 0.17) unsubscribeOne(this.actor, c)
    else if (roll < 0.23) requestOne(this.actor, c)
    else publishBatch(this.actor, c, SUBJECTS, 12, this.faults.bigMessages, [2_000, 20_000])
  }

  /** A partition: a random proper subset of the nodes on one side; routes across hold their bytes. */
  private split(): void {
    const n = this.nodes.length
    const side = new Set<number>()
    const size = this.rng.int(1, n - 1)
    while (side.size < size) side.add(this.rng.int(0, n - 1))
    this.partition = side
    this.stats.partitions++
    this.trace(`partition: {${[...side].map((i) => `n${i}`).join(" ")}} | the rest`)
    for (const p of this.pipes) if (!p.closed && this.cut(p.a.node, p.b.node)) p.partition(true)
  }

  private slowRoute(p: RoutePipe): void {
    const r = this.rng
    const slow = r.chance(0.6)
    this.stats.slowRoutes++
    const profile: PipeProfile = slow
      ? { latency: [r.int(1, 10), r.int(20, 200)], drainBytes: r.int(256, 8 * 1024), drainEveryMs: r.int(5, 50), splitChance: Math.max(0.5, this.faults.splitChance) }
      : this.fastPipe()
    this.trace(`route pipe ${p.id} ${slow ? `slows down (${profile.drainBytes} B per ${profile.drainEveryMs} ms)` : "is fast again"}`)
    p.slow(profile)
  }

  // ---- clients ----

  private connect(node: Node): void {
    const r = this.rng
    const profile = clientProfile(r, this.faults)
    const c = new SimClient(this.nextClientId++, r.chance(0.8), r.chance(0.5), (l) => this.trace(l))
    c.link = node.net.connect(c, profile)
    this.clients.push(c)
    this.stats.connects++
    this.trace(`c${c.id} connects to n${node.index} on link ${c.link.id} echo=${c.echo} headers=${c.headers}`)
  }

  private subscribe(c: SimClient): void {
    const r = this.rng
    this.stats.subs++
    const roll = r.next()
    if (roll > 0.9 && !c.hasResponder()) {
      c.subscribe("svc.x", "svc", true)
      return this.trace(`c${c.id} serves svc.x (queue svc)`)
    }
    const subject = r.pick(FILTERS)
    const queue = roll < 0.3 ? r.pick(["q1", "q2"]) : ""
    const s = c.subscribe(subject, queue, false)
    this.trace(`c${c.id} SUB ${subject}${queue === "" ? "" : ` ${queue}`} sid ${s.sid}`)
    // An auto-unsubscribe now and then (its draws from a generator of its own: seeds recorded before it keep their runs' choices).
    if (queue === "" && this.config.autoUnsub !== false && this.maxRng.chance(0.2)) {
      const max = this.maxRng.int(1, 20)
      this.stats.autoUnsubs++
      c.unsubscribe(s.sid, max)
      this.trace(`c${c.id} UNSUB ${s.sid} ${max}`)
    }
  }

  /** What the shared client actions (actions.ts) draw from and count in. */
  private get actor(): Actor {
    return { rng: this.rng, stats: this.stats, trace: (l) => this.trace(l) }
  }
}

/** Break every route of a server on purpose: the harness must notice. */
const plantClusterBug = (cluster: Cluster, bug: ClusterBug): void => {
  const register = cluster.register.bind(cluster)
  cluster.register = (r) => {
    if (bug === "route-no-unsub") r.sendUnsub = () => {}
    else {
      const send = r.sendMsg.bind(r)
      r.sendMsg = (d, account) => send(d, account) && send(d, account)
    }
    register(r)
  }
}
