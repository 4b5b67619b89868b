// One simulation run: a seed chooses the server options, the fault mix and every step;
// the real `Server` runs on a simulated network and clock, driven by one event queue.
// Invariants are checked after every step; a violation stops the run with a trace.
import { defaultOptions, type ServerOptions } from "../config/options.js"
import { makeLog } from "../services/log.js"
import { wireImports } from "../server/imports.js"
import { tickIntervalMs } from "../server/run.js"
import { makeServerId, Server } from "../server/server.js"
import { SimClient } from "./clients.js"
import { Model } from "./invariants.js"
import { type LinkProfile, SimNetwork } from "./network.js"
import { Rng } from "./rng.js"

/** A deliberately broken server, to prove the simulator catches it. */
export type PlantedBug = "drop-every-100th-delivery" | "reorder-deliveries"

export interface SimConfig {
  readonly seed: number
  readonly steps: number
  readonly plant?: PlantedBug | undefined
  /** Lines of trace kept for the failure report. */
  readonly traceTail?: number
}

/** The fault mix of one run, drawn from its seed. */
export interface FaultMix {
  readonly drop: number
  readonly stall: number
  readonly clockJump: number
  readonly splitChance: number
  readonly slowLinks: number
  readonly bigMessages: number
}

export interface SimResult {
  readonly ok: boolean
  readonly seed: number
  readonly steps: number
  /** The step the first violation was seen at (-1 when ok). */
  readonly failedStep: number
  readonly violations: ReadonlyArray<string>
  readonly trace: ReadonlyArray<string>
  /** FNV-1a of every trace line: equal hashes = identical runs. */
  readonly traceHash: string
  readonly traceLines: number
  readonly faults: FaultMix
  readonly stats: Record<string, number>
}

const SUBJECTS = ["s.a", "s.b", "s.c.d"] as const
const FILTERS = ["s.a", "s.b", "s.*", "s.>", "s.c.*", ">"] as const
const MAX_CLIENTS = 8

export const reproduceCommand = (seed: number, steps: number, plant?: PlantedBug): string =>
  `npm run sim -- --seed ${seed} --steps ${steps}${plant === undefined ? "" : ` --plant ${plant}`}`

const optionsFor = (rng: Rng): ServerOptions => ({
  ...defaultOptions,
  host: "127.0.0.1",
  port: 4222,
  httpPort: undefined,
  mqtt: undefined,
  jetstream: undefined,
  maxPending: rng.pick([4 * 1024, 16 * 1024, 64 * 1024, 256 * 1024, 64 * 1024 * 1024]),
  pingIntervalMs: rng.pick([100, 300, 1_000, 120_000]),
  pingMax: rng.int(1, 3),
  writeDeadlineMs: rng.pick([200, 1_000, 10_000]),
  log: { debug: false, trace: false, logtime: false, logFile: undefined }
})

const faultsFor = (rng: Rng): FaultMix => ({
  drop: rng.pick([0, 0.005, 0.02]),
  stall: rng.pick([0, 0.01, 0.04]),
  clockJump: rng.pick([0, 0.005, 0.02]),
  splitChance: rng.pick([0, 0.3, 0.8]),
  slowLinks: rng.pick([0, 0.3, 0.7]),
  bigMessages: rng.pick([0, 0.05, 0.2])
})

export const runSim = (config: SimConfig): SimResult => new Sim(config).run()

class Sim {
  private readonly rng: Rng
  private readonly net: SimNetwork
  private readonly model = new Model()
  private readonly server: Server
  private readonly options: ServerOptions
  private readonly faults: FaultMix
  private readonly clients: Array<SimClient> = []
  private readonly tail: Array<string> = []
  private hash = 0x811c9dc5
  private lines = 0
  private step = 0
  private nextClientId = 1
  private readonly stats: Record<string, number> = {
    connects: 0, drops: 0, stalls: 0, clockJumps: 0, pubs: 0, subs: 0, unsubs: 0, requests: 0
  }

  constructor(private readonly config: SimConfig) {
    const root = new Rng(config.seed)
    this.options = optionsFor(root.fork())
    this.faults = faultsFor(root.fork())
    this.rng = root.fork()
    this.net = new SimNetwork(root.fork(), (l) => this.trace(l))
    this.net.observers.push(this.model.observe)
    const serverRng = root.fork()
    const q = this.net.q
    const random = () => serverRng.next()
    this.server = new Server(this.options, {
      now: () => q.now,
      nanos: () => q.now * 1_000_000,
      random,
      log: makeLog(this.options.log, (l) => this.trace(`server: ${l.replace(/^\[\d+\] /, "").trimEnd()}`), () => q.now),
      scheduleFlush: (flush) => q.schedule(q.now, () => this.net.callServer("flush", flush)),
      serverId: makeServerId(random)
    })
    wireImports(this.server)
    if (config.plant !== undefined) plantBug(this.server, config.plant)
    this.server.setListener("127.0.0.1", 4222)
    this.net.listen((conn) => this.server.accept(conn))
    const every = tickIntervalMs(this.options)
    const tick = (): void => {
      this.net.callServer("tick", () => this.server.tick(q.now))
      q.schedule(q.now + every, tick)
    }
    q.schedule(every, tick)
    const o = this.options
    this.trace(`options max_pending=${o.maxPending} ping=${o.pingIntervalMs}ms/${o.pingMax} write_deadline=${o.writeDeadlineMs}ms faults=${JSON.stringify(this.faults)}`)
  }

  private trace(line: string): void {
    const l = `[${this.step} t=${this.net?.q.now ?? 0}] ${line}`
    for (let i = 0; i < l.length; i++) this.hash = Math.imul(this.hash ^ l.charCodeAt(i), 0x01000193) >>> 0
    this.lines++
    this.tail.push(l)
    if (this.tail.length > (this.config.traceTail ?? 30)) this.tail.shift()
  }

  run(): SimResult {
    let failedStep = -1
    for (this.step = 1; this.step <= this.config.steps; this.step++) {
      this.act()
      this.advance(this.rng.int(1, 20))
      if (!this.check(false)) {
        failedStep = this.step
        break
      }
    }
    if (failedStep < 0) {
      this.trace("quiesce: unstall everyone, stop faults, let the network drain")
      for (const c of this.clients) c.link.heal()
      // Until every link has drained (bounded: a run that never settles is reported by checkComplete).
      for (let i = 0, settled = 0; i < 2_000 && settled < 40 && failedStep < 0; i++) {
        this.advance(25)
        settled = this.clients.every((c) => c.link.closed || c.link.writableLength() === 0) ? settled + 1 : 0
        if (!this.check(false)) failedStep = this.step
      }
      if (failedStep < 0 && !this.check(true)) failedStep = this.step
    }
    const violations = [...this.model.violations, ...this.net.serverThrew.map((e) => `server threw: ${e}`)]
    return {
      ok: violations.length === 0,
      seed: this.config.seed,
      steps: this.config.steps,
      failedStep,
      violations,
      trace: [...this.tail],
      traceHash: this.hash.toString(16).padStart(8, "0"),
      traceLines: this.lines,
      faults: this.faults,
      stats: {
        ...this.stats,
        ...this.closeReasons(),
        liveAtEnd: this.clients.filter((c) => !c.link.closed && !c.link.serverClosed).length,
        writeDeadlineWhileReading: this.model.writeDeadlineWhileReading,
        noRespondersStatuses: this.clients.reduce((n, c) => n + c.received.filter((m) => m.noResponders).length, 0),
        checkedDeliveries: this.clients.reduce((n, c) => n + c.received.length, 0),
        maxQueuedOverMaxPending: Math.max(...this.clients.map((c) => c.link.maxQueued)) - this.options.maxPending,
        inMsgs: this.server.inMsgs, outMsgs: this.server.outMsgs, slowConsumers: this.server.slowConsumers, staleConnections: this.server.staleConnections, closed: this.server.closed.size }
    }
  }

  private closeReasons(): Record<string, number> {
    const out: Record<string, number> = {}
    for (const cl of this.server.closed.toArray()) out[`closed:${cl.reason}`] = (out[`closed:${cl.reason}`] ?? 0) + 1
    return out
  }

  private advance(ms: number): void {
    this.net.q.runUntil(this.net.q.now + ms)
  }

  private check(quiet: boolean): boolean {
    const m = this.model
    m.checkReceived(this.clients)
    // max_pending plus the one message (up to ~30 KB here) that crossed it, plus a PING/-ERR.
    const bound = this.options.maxPending + 32 * 1024
    m.checkAccounting(this.server, this.clients, quiet, bound)
    m.checkClosed(this.server, this.clients, quiet)
    if (quiet) m.checkComplete()
    for (const v of m.violations) this.trace(`VIOLATION ${v}`)
    for (const e of this.net.serverThrew) this.trace(`VIOLATION server threw ${e.split("\n")[0]}`)
    return m.violations.length === 0 && this.net.serverThrew.length === 0
  }

  private live(): Array<SimClient> {
    return this.clients.filter((c) => c.state === "ready")
  }

  private act(): void {
    const r = this.rng
    const f = this.faults
    const live = this.live()
    const open = this.clients.filter((c) => c.state !== "closed").length
    if (open < 2 || (open < MAX_CLIENTS && r.chance(0.03))) return this.connect()
    if (r.chance(f.drop)) return this.drop(r.pick(live.length > 0 ? live : this.clients))
    if (r.chance(f.stall)) return this.toggleStall(r.pick(this.clients.filter((c) => c.state !== "closed")))
    if (r.chance(f.clockJump)) return this.clockJump()
    if (live.length === 0) return
    const c = r.pick(live)
    const roll = r.next()
    if (roll < 0.12) this.subscribe(c)
    else if (roll < 0.16) this.unsubscribe(c)
    else if (roll < 0.22) this.request(c)
    else this.publish(c)
  }

  private connect(): void {
    const r = this.rng
    const slow = r.chance(this.faults.slowLinks)
    const profile: LinkProfile = {
      latency: [r.int(0, 2), r.int(3, 10)],
      drainBytes: slow ? r.int(64, 2048) : r.int(16 * 1024, 256 * 1024),
      drainEveryMs: slow ? r.int(5, 50) : 1,
      splitChance: this.faults.splitChance
    }
    const c = new SimClient(this.nextClientId++, r.chance(0.8), r.chance(0.5), (l) => this.trace(l))
    c.link = this.net.connect(c, profile)
    this.clients.push(c)
    this.stats.connects++
    this.trace(`c${c.id} connects on link ${c.link.id} echo=${c.echo} headers=${c.headers} drain=${profile.drainBytes}B/${profile.drainEveryMs}ms`)
  }

  private drop(c: SimClient): void {
    this.stats.drops++
    this.trace(`c${c.id} drops its connection`)
    c.link.drop()
  }

  private toggleStall(c: SimClient): void {
    const on = !c.link.stalled
    if (on) this.stats.stalls++
    this.trace(`c${c.id} ${on ? "stops" : "resumes"} reading`)
    c.link.stall(on)
  }

  private clockJump(): void {
    const ms = this.rng.int(1, 3) * Math.min(this.options.pingIntervalMs, this.options.writeDeadlineMs) + this.rng.int(0, 100)
    this.stats.clockJumps++
    this.trace(`clock jumps ${ms}ms`)
    this.advance(ms)
  }

  private subscribe(c: SimClient): void {
    const r = this.rng
    const subject = r.pick(FILTERS)
    const roll = r.next()
    const queue = roll < 0.25 ? r.pick(["q1", "q2"]) : ""
    this.stats.subs++
    if (roll > 0.9 && !c.hasResponder()) {
      c.subscribe("svc.x", "svc", true)
      this.trace(`c${c.id} serves svc.x (queue svc)`)
      return
    }
    const s = c.subscribe(subject, queue, false)
    this.trace(`c${c.id} SUB ${subject}${queue === "" ? "" : ` ${queue}`} sid ${s.sid}`)
    if (queue === "" && r.chance(0.2)) {
      const max = r.int(1, 20)
      c.unsubscribe(s.sid, max)
      this.trace(`c${c.id} UNSUB ${s.sid} ${max}`)
    }
  }

  private unsubscribe(c: SimClient): void {
    const subs = [...c.subs.values()].filter((s) => !s.subject.startsWith("_INBOX."))
    if (subs.length === 0) return
    const s = this.rng.pick(subs)
    this.stats.unsubs++
    this.trace(`c${c.id} UNSUB ${s.sid}`)
    c.unsubscribe(s.sid, 0)
  }

  private request(c: SimClient): void {
    this.stats.requests++
    const subject = this.rng.chance(0.3) ? "svc.none" : "svc.x"
    c.request(subject, this.rng.int(0, 64))
    this.trace(`c${c.id} requests ${subject} (seq ${c.seq})`)
  }

  private publish(c: SimClient): void {
    const r = this.rng
    const subject = r.pick(SUBJECTS)
    const n = r.int(1, 20)
    const big = r.chance(this.faults.bigMessages)
    for (let i = 0; i < n; i++) c.publish(subject, big ? r.int(4_000, 30_000) : r.int(0, 200), "")
    this.stats.pubs += n
    this.trace(`c${c.id} PUB ${subject} x${n} (to seq ${c.seq})${big ? " big" : ""}`)
  }
}

/** Break the server on purpose: the harness must notice. */
const plantBug = (server: Server, bug: PlantedBug): void => {
  const deliver = server.deliver.bind(server)
  let n = 0
  if (bug === "drop-every-100th-delivery") {
    server.deliver = (s, subject, reply, hdrLen, buf, start, end) => (++n % 100 === 0 ? true : deliver(s, subject, reply, hdrLen, buf, start, end))
    return
  }
  // Hold every 50th delivery back and send it after the next one to the same subscription.
  let held: Parameters<Server["deliver"]> | undefined
  server.deliver = (...args) => {
    const ok = ++n % 50 === 0 && held === undefined ? ((held = args), true) : deliver(...args)
    if (held !== undefined && held[0] === args[0] && held !== args) {
      const h = held
      held = undefined
      deliver(...h)
    }
    return ok
  }
}
