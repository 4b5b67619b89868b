// One simulation run: a seed chooses the server options, the fault mix and every step;
// the real `Server` runs on a simulated network and clock, driven by one event queue.
// With disk faults it also runs JetStream on the file store over a simulated disk, and
// crashes and restarts the server process (with and without power loss) mid-run.
// Invariants are checked after every step; a violation stops the run with a trace.
import { Effect, Exit } from "effect"
import type { ServerOptions } from "../config/options.js"
import { SimDisk } from "../services/disk-sim.js"
import { seededEntropy } from "../services/entropy.js"
import { makeLog, type LogService } from "../services/log.js"
import { type Delivery, GLOBAL_ACCOUNT, type Subscription } from "../engine/principal.js"
import { wireImports } from "../server/imports.js"
import { tickIntervalMs } from "../server/run.js"
import { makeServerId, Server } from "../server/server.js"
import { type Actor, clientProfile, publishBatch, requestOne, unsubscribeOne } from "./actions.js"
import { SimClient } from "./clients.js"
import { runClusterSim } from "./cluster.js"
import { diskFaultsFor, diskFullOn, type FaultMix, type FaultSet, faultsFor, optionsFor, type SimConfig, type SimResult, simResult, TraceLog, withNkeyUser } from "./faults.js"
import { Model } from "./invariants.js"
import { JsClient, SIM_STREAM, SIM_STREAM_SUBJECTS } from "./js-client.js"
import { JsConsumer } from "./js-consumer.js"
import { JsModel } from "./js-invariants.js"
import { settle, simClock, type SimJetStream, simStreamStore, startSimJetStream, stopSimJetStream, withMicrotaskScheduler } from "./jetstream.js"
import { MqttSim } from "./mqtt.js"
import { SimNetwork } from "./network.js"
import { Rng } from "./rng.js"

export { type FaultMix, type FaultSet, type PlantedBug, reproduceCommand, type SimConfig, type SimResult } from "./faults.js"


const SUBJECTS = ["s.a", "s.b", "s.c.d"] as const
const FILTERS = ["s.a", "s.b", "s.*", "s.>", "s.c.*", ">"] as const
const MAX_CLIENTS = 8

type RestartKind = "crash" | "power" | "power-torn" | "clean"

const JS_DIR = "/data/jetstream"
/** Subjects the server itself serves when JetStream runs: a request there always has a responder. */
const SERVER_SUBJECTS = ["$JS.API.>", "$JS.ACK.>", ...SIM_STREAM_SUBJECTS]
const JS_SUBJECTS = ["js.a", "js.b", "js.c.d"] as const
const MAX_JS_CLIENTS = 3
/** Simulated time a restart or a graceful stop may take before it counts as hung. */
const STARTUP_LIMIT_MS = 30_000

/** Run one simulation (async: JetStream's stores and Promises settle between events). */
export const runSim = (config: SimConfig): Promise<SimResult> =>
  config.cluster !== undefined && config.cluster > 0 ? runClusterSim(config) : withMicrotaskScheduler(() => new Sim(config).run())

/** The longest a stream waits between probes for space (PROBE_MAX_MS in server/jetstream/stream.ts), and some slack. */
const PROBE_BOUND_MS = 65_000

class Sim {
  private readonly rng: Rng
  private readonly net: SimNetwork
  private model: Model
  private server!: Server
  private readonly options: ServerOptions
  private readonly faults: FaultMix
  private readonly faultSet: FaultSet
  private readonly serverRng: Rng
  /** This server life's NATS clients (the invariants are per life: a restart resets the counters). */
  private clients: Array<SimClient> = []
  private retired: Array<SimClient> = []
  private jsClients: Array<JsClient> = []
  private consumers: Array<JsConsumer> = []
  private readonly jsModel = new JsModel()
  /** MQTT devices and the bridge (with `mqtt` on). */
  private readonly mqtt: MqttSim | undefined
  private readonly disk: SimDisk | undefined
  private readonly jsRng: Rng
  /** The server has an nkey user: INFO carries a nonce. */
  private readonly nonces: boolean
  private jetstream: SimJetStream | undefined
  /** Draws of the disk-full fault, from a generator of its own (runs without it keep their traces). */
  private readonly fullRng: Rng | undefined
  /** The disk-full episode under way (bumped when it ends). */
  private fullEpisode = 0
  private diskIsFull = false
  /** A restart due during the next advance. */
  private crashAt: { readonly at: number; readonly kind: RestartKind; readonly midFsync: boolean } | undefined
  /** Counters of the server lives before this one. */
  private readonly pastLives: Record<string, number> = {}
  /** Bumped when the server process dies: events of a dead life are ignored. */
  private life = 0
  private readonly violations: Array<string> = []
  private readonly log: TraceLog
  private step = 0
  private nextClientId = 1
  private readonly stats: Record<string, number> = {
    connects: 0, drops: 0, stalls: 0, clockJumps: 0, pubs: 0, subs: 0, unsubs: 0, requests: 0
  }

  constructor(private readonly config: SimConfig) {
    this.log = new TraceLog(config.traceTail ?? 30)
    const root = new Rng(config.seed)
    this.faultSet = config.faults ?? "net"
    const disk = this.faultSet === "disk"
    // An nkey user (so INFO carries nonces) in a third of the runs, from a generator of its own.
    this.nonces = config.nonces !== false && new Rng(config.seed ^ 0x4e4e4e4e).chance(1 / 3)
    this.options = this.nonces ? withNkeyUser(optionsFor(root.fork())) : optionsFor(root.fork())
    const faults = faultsFor(root.fork())
    this.rng = root.fork()
    this.net = new SimNetwork(root.fork(), (l) => this.trace(l))
    this.serverRng = root.fork()
    const diskRng = root.fork()
    this.jsRng = root.fork()
    const mix = disk ? diskFaultsFor(diskRng.fork(), faults) : faults
    // Forked last, from a generator of its own: runs without MQTT keep their traces.
    this.mqtt = config.mqtt === true
      ? new MqttSim(new Rng(config.seed ^ 0x5a5a5a5a).fork(), this.net, (l) => this.trace(l), config.plant === "mqtt-commit-before-sync" ? "commit-before-sync" : config.plant === "mqtt-forget-pubrel" ? "forget-pubrel" : undefined, config.mqttDeviceFaults === false ? undefined : new Rng(config.seed ^ 0x2b2b2b2b), config.mqttDeviceFaults === false ? undefined : new Rng(config.seed ^ 0x3c3c3c3c), config.mqttV5 === false ? undefined : new Rng(config.seed ^ 0x7e7e7e7e))
      : undefined
    this.fullRng = diskFullOn(this.faultSet, config.mqtt === true, config.diskFull) ? new Rng(config.seed ^ 0x6e6e6e6e) : undefined
    const full = this.fullRng === undefined ? mix : { ...mix, diskFull: this.fullRng.pick([0, 0.003, 0.008]) }
    // That plant breaks the default mode's promise; under a sync_interval acks never waited for the fsync.
    this.faults = config.plant === "ack-before-sync" ? { ...full, syncIntervalMs: 0 } : full
    this.model = this.newModel()
    if (disk) {
      const syncInterval = this.faults.syncIntervalMs > 0 ? this.faults.syncIntervalMs : "always"
      this.options = { ...this.options, jetstream: { storeDir: JS_DIR, maxMemory: -1, maxStorage: -1, syncInterval } }
      const tears = diskRng.fork()
      const latency = diskRng.fork()
      const [lo, hi] = this.faults.fsyncMs
      this.disk = new SimDisk({ random: () => tears.next(), later: (f) => this.net.q.schedule(this.net.q.now + latency.int(lo, hi), f) })
      this.disk.provision(JS_DIR)
      if (config.plant === "lying-fsync") this.disk.lyingSync = true
      for (const k of ["restarts", "restart:crash", "restart:power", "restart:power-torn", "restart:clean", "jsConnects", "jsPubs", "consumerConnects", "consumerAheadOfStream", "tornTails", "corruptOnRecovery", "streamsNotRecovered", "diskFulls", "writesResumed"]) this.stats[k] = 0
    }
    const o = this.options
    if (this.mqtt !== undefined) this.trace(`mqtt devices: ${this.mqtt.describe()}`)
    this.trace(`options max_pending=${o.maxPending} ping=${o.pingIntervalMs}ms/${o.pingMax} write_deadline=${o.writeDeadlineMs}ms${this.nonces ? " nkey_user+no_auth_user" : ""} faults=${JSON.stringify(this.faults)}`)
  }

  private newModel(): Model {
    const m = new Model(this.faultSet === "disk" ? SERVER_SUBJECTS : [])
    const mqtt = this.mqtt
    this.net.observers = [mqtt === undefined ? m.observe : (link, ...rest) => mqtt.isMqttLink(link) || m.observe(link, ...rest)]
    return m
  }

  private trace(line: string): void {
    this.log.add(`[${this.step} t=${this.net?.q.now ?? 0}] ${line}`)
  }

  /** A new server process: the engine on the network, and JetStream recovered from the disk. */
  private async boot(): Promise<void> {
    const life = this.life
    const q = this.net.q
    const random = () => this.serverRng.next()
    // The server's unguessable bytes (its id, nonces, generated names) come from its seeded generator too.
    const entropy = seededEntropy(random)
    const log = makeLog(this.options.log, (l) => {
      this.trace(`server: ${l.replace(/^\[\d+\] /, "").trimEnd()}`)
      this.mqtt?.noteServerLog(l)
    }, () => q.now)
    this.server = new Server(this.options, {
      now: () => q.now,
      nanos: () => q.now * 1_000_000,
      random,
      randomBytes: entropy.bytes,
      log,
      scheduleFlush: (flush) => q.schedule(q.now, () => life === this.life && this.net.callServer("flush", flush)),
      serverId: makeServerId(entropy.bytes)
    })
    this.trace(`server ${this.server.serverId} starts`)
    wireImports(this.server)
    if (this.config.plant === "drop-every-100th-delivery" || this.config.plant === "reorder-deliveries") plantBug(this.server, this.config.plant)
    this.server.setListener("127.0.0.1", 4222)
    const every = tickIntervalMs(this.options)
    const tick = (): void => {
      if (life !== this.life) return
      this.net.callServer("tick", () => this.server.tick(q.now))
      q.schedule(q.now + every, tick)
    }
    q.schedule(q.now + every, tick)
    if (this.disk !== undefined) await this.startJetStream(log)
    const mqtt = this.mqtt
    if (mqtt !== undefined) await mqtt.boot(this.server, this.jetstream?.js, log, () => life === this.life, (what, eff) => this.drive(what, eff))
    this.net.listen((conn) => (mqtt?.isMqttLink(conn) ? mqtt.accept(conn) : this.server.accept(conn)))
  }

  private async startJetStream(log: LogService): Promise<void> {
    const life = this.life
    const clock = simClock(this.net.q, () => life === this.life)
    const plant = this.config.plant === "ack-before-sync" || this.config.plant === "keep-refused" ? this.config.plant : undefined
    const disk = this.disk!
    disk.errorRate = 0
    const exit = await this.drive(
      "JetStream recovery",
      startSimJetStream(this.server, this.options.jetstream!, disk, { blockSize: this.faults.blockSize, cacheBlocks: 2 }, log, clock, plant)
    )
    disk.errorRate = this.faults.diskErrors
    if (exit === undefined) return
    if (Exit.isFailure(exit)) {
      this.violations.push(`JetStream failed to start: ${String(exit.cause)}`)
      return
    }
    this.jetstream = exit.value
    this.traceRecovery(exit.value.js)
  }

  /** What recovery found: unrecovered streams, the store's problems, where the consumer resumes. */
  private traceRecovery(js: SimJetStream["js"]): void {
    this.stats.streamsNotRecovered += js.problems.length
    for (const p of js.problems) {
      this.trace(`recovery problem: ${p}`)
      this.violations.push(`a stream was not recovered after a restart: ${p}`)
    }
    const store = simStreamStore(js)
    for (const p of store?.health().problems ?? []) {
      if (p.kind === "TornTail") this.stats.tornTails++
      else this.stats.corruptOnRecovery++
      this.trace(`store recovery: ${p.kind} ${p.file}: ${p.message}`)
    }
    const stream = js.accounts.get(GLOBAL_ACCOUNT)?.streams.get(SIM_STREAM)
    const last = store?.state().last_seq ?? 0
    for (const c of stream === undefined ? [] : stream.consumers.snapshots()) {
      this.trace(`consumer ${c.name} restored: delivered ${c.delivered.streamSeq}, ack floor ${c.ackFloor.streamSeq}, stream last_seq ${last}`)
      if (c.delivered.streamSeq <= last) continue
      // Restored past the end of its stream, it would skip the sequences new messages take.
      this.stats.consumerAheadOfStream++
      this.violations.push(`consumer ${c.name} restored ahead of its stream: delivered ${c.delivered.streamSeq} > last_seq ${last}`)
    }
  }

  /** Run an Effect to completion while the event queue moves on; undefined (and a violation) when it hangs. */
  private async drive<A, E>(what: string, eff: Effect.Effect<A, E>): Promise<Exit.Exit<A, E> | undefined> {
    let exit: Exit.Exit<A, E> | undefined
    void Effect.runPromiseExit(eff).then((e) => {
      exit = e
    })
    const q = this.net.q
    const limit = q.now + STARTUP_LIMIT_MS
    for (;;) {
      await settle()
      if (exit !== undefined) return exit
      if (!q.runNext(limit)) break
    }
    this.violations.push(`${what} did not complete within ${STARTUP_LIMIT_MS} ms of simulated time`)
    return undefined
  }

  /** The server never throws, not even from a Promise chain of its own (JetStream's acks, consumer saves). */
  private readonly rejected = (e: unknown): void => {
    this.violations.push(`unhandled rejection in the server: ${e instanceof Error ? e.stack ?? e.message : String(e)}`)
  }

  async run(): Promise<SimResult> {
    process.on("unhandledRejection", this.rejected)
    try {
      return await this.runSteps()
    } finally {
      process.off("unhandledRejection", this.rejected)
    }
  }

  private async runSteps(): Promise<SimResult> {
    await this.boot()
    let failedStep = -1
    for (this.step = 1; this.step <= this.config.steps && failedStep < 0; this.step++) {
      await this.act()
      for (const c of this.consumers) c.poll()
      await this.advance(this.rng.int(1, 20))
      if (!this.check(false)) failedStep = this.step
    }
    if (failedStep < 0) failedStep = await this.quiesce()
    if (failedStep < 0 && this.disk !== undefined) {
      // The last word on durability: cut the power once more and look at what comes back.
      await this.restart("power-torn")
      if (!this.check(false)) failedStep = this.step
    }
    const violations = this.allViolations()
    return simResult(this.config, failedStep, violations, this.log, this.faults, this.collectStats())
  }

  private async quiesce(): Promise<number> {
    this.trace("quiesce: unstall everyone, stop faults, let the network drain")
    this.mqtt?.quiesce()
    for (const c of this.clients) c.link.heal()
    for (const c of this.jsClients) c.link.heal()
    for (const c of this.consumers) c.link.heal()
    await this.checkWritesResume()
    // A pull consumer must be there at the end to show every acknowledged message reaches it.
    // Until every link has drained (bounded: a run that never settles is reported by checkComplete).
    for (let i = 0, settled = 0; i < 2_000 && settled < 40; i++) {
      if (this.disk !== undefined && this.consumers.every((c) => c.state === "closed")) this.consumerConnect()
      for (const c of this.consumers) c.poll()
      await this.advance(25)
      const drained = this.clients.every((c) => c.link.closed || c.link.writableLength() === 0) &&
        this.jsClients.every((c) => c.link.closed || (c.link.writableLength() === 0 && c.pending.size === 0)) &&
        this.jsModel.caughtUp()
      settled = drained ? settled + 1 : 0
      if (!this.check(false)) return this.step
    }
    for (const c of this.jsClients) {
      if (c.state !== "closed" && c.pending.size > 0) this.violations.push(`j${c.id}: ${c.pending.size} publish(es) never answered on a live connection`)
    }
    await this.checkStream("at the end of the run")
    if (this.consumers.some((c) => c.state === "ready")) this.jsModel.checkAllDelivered()
    if (this.mqtt !== undefined) await this.quiesceMqtt(this.mqtt)
    return this.check(true) ? -1 : this.step
  }

  /** Every device back, a last acknowledged retained publish each, then a fresh subscriber looks at what is retained. */
  private async quiesceMqtt(mqtt: MqttSim): Promise<void> {
    this.crashAt = undefined
    const settle = async (what: string): Promise<void> => {
      for (let i = 0, ok = 0; ok < 20; i++) {
        if (i >= 2_000) return void this.violations.push(`MQTT did not settle (${what})`)
        await this.advance(25)
        ok = mqtt.settled() ? ok + 1 : 0
      }
    }
    await settle("devices reconnecting")
    mqtt.finalRetained()
    await settle("last retained publishes")
    const seen = mqtt.freshSubscriber()
    // A second without deliveries and with every device connected, however long the backlogs
    // take (bounded): a session with a small Receive Maximum drains one message per round
    // trip, and was still receiving what it was owed when the check came (seed 1093111220);
    // a device cut off meanwhile (a store failure) comes back (`settled` reconnects it).
    for (let i = 0, quietFor = 0, last = mqtt.model.delivered; i < 2_400 && quietFor < 40; i++) {
      await this.advance(25)
      quietFor = mqtt.model.delivered === last && mqtt.settled() ? quietFor + 1 : 0
      last = mqtt.model.delivered
    }
    mqtt.checkEnd(seen)
  }

  private allViolations(): Array<string> {
    return [...this.violations, ...this.model.violations, ...this.jsModel.violations, ...(this.mqtt?.model.violations ?? []), ...this.net.serverThrew.map((e) => `server threw: ${e}`)]
  }

  private collectStats(): Record<string, number> {
    const all = [...this.retired, ...this.clients]
    const out: Record<string, number> = {
      ...this.stats,
      ...(this.mqtt === undefined ? {} : { ...this.mqtt.stats, mqttDelivered: this.mqtt.model.delivered, mqttDuplicates: this.mqtt.model.duplicates, mqttPromised: this.mqtt.model.promised, mqttExcusedLosses: this.mqtt.model.excusedLosses, mqttWills: this.mqtt.model.wills.size, mqttExpiryChecked: this.mqtt.model.expiryChecked, mqttMayExpire: this.mqtt.model.mayExpire }),
      liveAtEnd: this.clients.filter((c) => !c.link.closed && !c.link.serverClosed).length,
      writeDeadlineWhileReading: this.model.writeDeadlineWhileReading,
      noRespondersStatuses: all.reduce((n, c) => n + c.received.filter((m) => m.noResponders).length, 0),
      checkedDeliveries: all.reduce((n, c) => n + c.received.length, 0),
      maxQueuedOverMaxPending: Math.max(...all.map((c) => c.link.maxQueued)) - this.options.maxPending
    }
    for (const [k, v] of Object.entries(this.serverCounters())) out[k] = (this.pastLives[k] ?? 0) + v
    if (this.disk !== undefined) {
      const d = this.disk.stats
      Object.assign(out, {
        jsAcks: this.jsModel.acks, jsAcked: this.jsModel.acked.size, jsFailures: this.jsModel.failures, jsVerified: this.jsModel.verified,
        consumerDeliveries: this.jsModel.deliveries, consumerRedeliveries: this.jsModel.redeliveries, jsForgotten: this.jsModel.forgotten,
        syncIntervalRuns: this.faults.syncIntervalMs > 0 ? 1 : 0,
        fsyncs: d.syncs, dirSyncs: d.dirSyncs, bytesLost: d.bytesLost, tornWrites: d.tornWrites, ioErrors: d.ioErrors, noSpace: d.noSpace
      })
    }
    return out
  }

  /** What this server life counted (a restart starts from zero). */
  private serverCounters(): Record<string, number> {
    const s = this.server
    const out: Record<string, number> = { inMsgs: s.inMsgs, outMsgs: s.outMsgs, slowConsumers: s.slowConsumers, staleConnections: s.staleConnections, closed: s.closed.size }
    for (const cl of s.closed.toArray()) out[`closed:${cl.reason}`] = (out[`closed:${cl.reason}`] ?? 0) + 1
    return out
  }

  private async advance(ms: number): Promise<void> {
    const q = this.net.q
    const until = q.now + ms
    if (this.disk === undefined) return q.runUntil(until)
    // JetStream's Promise chains and Effect fibers run between events, as between I/O callbacks.
    for (;;) {
      const crash = this.crashAt
      const due = crash !== undefined && (crash.midFsync && this.disk.inFlight > 0 ? true : crash.at <= until && (q.nextAt() ?? Infinity) >= crash.at)
      if (crash !== undefined && due) {
        // The crash lands between two events (before those due at the same time), wherever the store's writes and fsyncs are.
        this.crashAt = undefined
        if (crash.at > q.now && !(crash.midFsync && this.disk.inFlight > 0)) q.runUntil(crash.at)
        this.trace(`crash ${crash.midFsync ? "mid-fsync" : "at a random moment"} (${this.disk.inFlight} fsyncs in flight)`)
        await this.restart(crash.kind)
        continue
      }
      if (!q.runNext(until)) break
      await settle()
    }
    q.runUntil(until)
  }

  private check(quiet: boolean): boolean {
    const m = this.model
    m.checkReceived(this.clients)
    // max_pending plus the one message (up to ~30 KB here) that crossed it, plus a PING/-ERR.
    const bound = this.options.maxPending + 32 * 1024
    m.checkAccounting(this.server, this.clients, quiet, bound)
    m.checkClosed(this.server, this.clients, quiet)
    if (quiet) m.checkComplete()
    const v = this.allViolations()
    for (const x of v) this.trace(`VIOLATION ${x.split("\n")[0]}`)
    return v.length === 0
  }

  private live(): Array<SimClient> {
    return this.clients.filter((c) => c.state === "ready")
  }

  private async act(): Promise<void> {
    const r = this.rng
    const f = this.faults
    const live = this.live()
    const open = this.clients.filter((c) => c.state !== "closed").length
    if (open < 2 || (open < MAX_CLIENTS && r.chance(0.03))) return this.connect()
    if (r.chance(f.drop)) return this.drop(r.pick(live.length > 0 ? live : this.clients))
    if (r.chance(f.stall)) return this.toggleStall(r.pick(this.clients.filter((c) => c.state !== "closed")))
    if (r.chance(f.clockJump)) return this.clockJump()
    if (this.disk !== undefined) {
      if (this.fullRng !== undefined && !this.diskIsFull && this.fullRng.chance(f.diskFull)) this.diskFills()
      if (this.crashAt === undefined && r.chance(f.crash)) {
        const kind = r.chance(f.powerLoss) ? r.pick(["power", "power-torn", "power-torn"] as const) : r.pick(["crash", "crash", "clean"] as const)
        // Either at a random moment, or the first time an fsync is in flight (else a little later).
        const midFsync = r.chance(0.6)
        this.crashAt = { at: this.net.q.now + (midFsync ? 100 : r.int(0, 15)), kind, midFsync }
        // Most often mid-publish: PubAcks in flight, writes not yet synced.
        if (r.chance(0.7)) this.jsAct()
        return
      }
      if (r.chance(0.3)) return this.jsAct()
    }
    if (this.mqtt !== undefined && r.chance(0.4)) return this.mqtt.act()
    if (live.length === 0) return
    const c = r.pick(live)
    const roll = r.next()
    if (roll < 0.12) this.subscribe(c)
    else if (roll < 0.16) this.unsubscribe(c)
    else if (roll < 0.22) this.request(c)
    else this.publish(c)
  }

  // ---- JetStream and the disk ----

  private jsAct(): void {
    const r = this.rng
    const open = this.jsClients.filter((c) => c.state !== "closed")
    if (open.length === 0 || (open.length < MAX_JS_CLIENTS && r.chance(0.02))) return this.jsConnect()
    const consumer = this.consumers.find((c) => c.state !== "closed")
    if (consumer === undefined ? r.chance(0.05) : r.chance(0.003)) return consumer === undefined ? this.consumerConnect() : this.drop(consumer)
    const ready = open.filter((c) => c.state === "ready")
    if (ready.length === 0) return
    const c = r.pick(ready)
    if (r.chance(0.01)) return this.drop(c)
    const subject = r.pick(JS_SUBJECTS)
    const n = r.int(1, 12)
    const big = r.chance(this.faults.bigMessages)
    // Big, but never past what a consumer's fetch (max_pending / 2) can carry.
    c.publish(subject, n, () => (big ? r.int(1_000, Math.min(20_000, this.options.maxPending / 4)) : r.int(0, 300)))
    this.stats.jsPubs += n
    this.trace(`j${c.id} JS PUB ${subject} x${n}${big ? " big" : ""} (pending ${c.pending.size})`)
  }

  /** The disk fills up (perhaps with a little room left); a while later space is freed. */
  private diskFills(): void {
    const rng = this.fullRng!
    const slack = rng.pick([0, 0, 200, 5_000])
    const episode = ++this.fullEpisode
    this.disk!.fill(slack)
    this.diskIsFull = true
    this.stats.diskFulls++
    const ms = rng.int(20, 1_500)
    this.trace(`disk full (${slack} bytes left) for ${ms}ms`)
    this.net.q.schedule(this.net.q.now + ms, () => {
      if (this.fullEpisode === episode) this.spaceFreed()
    })
  }

  private spaceFreed(): void {
    if (!this.diskIsFull) return
    this.fullEpisode++
    this.disk!.free()
    this.diskIsFull = false
    this.trace("disk space freed")
  }

  /**
   * After the disk was full: with space back (and no restart), the stream takes a
   * publish again — once the server noticed, within its probe period.
   */
  private async checkWritesResume(): Promise<void> {
    if (this.stats.diskFulls === 0 || this.jetstream === undefined) return
    this.crashAt = undefined
    this.spaceFreed()
    await this.advance(2_500)
    let c = this.jsClients.find((j) => j.state === "ready")
    if (c === undefined) {
      this.jsConnect()
      c = this.jsClients[this.jsClients.length - 1]
      for (let i = 0; i < 400 && c.state !== "ready" && c.state !== "closed"; i++) await this.advance(25)
    }
    if (c.state !== "ready") return
    // Only space is asked about: a random write or fsync failure would refuse it too (seed 1617773215).
    const errorRate = this.disk!.errorRate
    this.disk!.errorRate = 0
    // The server notices within its probe period, which backs off (up to a minute) while
    // space keeps running out (seed 916289366): a publisher retrying every second is
    // taken again within that bound.
    let acked = false
    for (let waited = 0; !acked && waited <= PROBE_BOUND_MS && c.state === "ready"; waited += 1_000) {
      const acks = c.acks
      c.publish("js.a", 1, () => 16)
      if (waited === 0) this.trace(`j${c.id} JS PUB js.a x1 (space is back: must be acknowledged within ${PROBE_BOUND_MS / 1000} s)`)
      for (let i = 0; i < 400 && c.pending.size > 0 && c.state === "ready"; i++) await this.advance(25)
      acked = c.acks > acks
      if (!acked) await this.advance(1_000)
    }
    this.disk!.errorRate = errorRate
    if (c.state !== "ready") return
    if (!acked) this.violations.push(`after the disk had space again (no restart), j${c.id}'s publishes were not acknowledged within ${PROBE_BOUND_MS / 1000} s`)
    else this.stats.writesResumed++
  }

  private jsConnect(): void {
    const r = this.rng
    const c = new JsClient(this.nextClientId++, this.jsRng.fork(), { acked: this.jsModel.onAck, failed: this.jsModel.onFail }, (l) => this.trace(l))
    c.link = this.net.connect(c, { latency: [r.int(0, 2), r.int(3, 10)], drainBytes: r.int(16 * 1024, 256 * 1024), drainEveryMs: 1, splitChance: this.faults.splitChance })
    this.jsClients.push(c)
    this.stats.jsConnects++
    this.trace(`j${c.id} connects on link ${c.link.id}`)
  }

  private consumerConnect(): void {
    const r = this.rng
    const c = new JsConsumer(this.nextClientId++, this.jsRng.fork(), () => this.net.q.now, this.options.maxPending / 2, this.jsModel.onDelivery, (l) => this.trace(l))
    c.link = this.net.connect(c, { latency: [r.int(0, 2), r.int(3, 10)], drainBytes: r.int(16 * 1024, 256 * 1024), drainEveryMs: 1, splitChance: this.faults.splitChance })
    this.consumers.push(c)
    this.stats.consumerConnects++
    this.trace(`p${c.id} (pull consumer) connects on link ${c.link.id}`)
  }

  /** The server process stops (crash, power cut, or a clean shutdown) and a new one recovers from the disk. */
  private async restart(kind: RestartKind): Promise<void> {
    this.stats.restarts++
    this.stats[`restart:${kind}`]++
    const d = this.disk!
    this.trace(`server ${kind === "clean" ? "shuts down" : kind === "crash" ? "crashes" : `loses power${kind === "power-torn" ? " mid-write" : ""}`} (${[...d.files().values()].reduce((n, f) => n + f.unsyncedWrites, 0)} unsynced writes)`)
    this.model.checkReceived(this.clients)
    this.mqtt?.serverDying(kind === "clean")
    if (kind === "clean") {
      if (this.mqtt !== undefined) await this.drive("graceful MQTT stop", Effect.promise(() => this.mqtt!.shutdown()))
      this.server.shutdown()
      if (this.jetstream !== undefined) await this.drive("graceful JetStream stop", stopSimJetStream(this.jetstream))
    }
    for (const [k, v] of Object.entries(this.serverCounters())) this.pastLives[k] = (this.pastLives[k] ?? 0) + v
    this.life++
    if (kind === "power") d.powerLoss(false)
    else if (kind === "power-torn") d.powerLoss(true)
    else d.crash()
    // Whoever restarts it frees space first.
    this.spaceFreed()
    this.jetstream = undefined
    this.net.serverDied()
    this.retired.push(...this.clients)
    this.clients = []
    this.jsClients = []
    this.consumers = []
    // With a sync_interval, a power cut may take back acknowledged publishes: only a process crash may not.
    const promised = this.faults.syncIntervalMs === 0 || kind === "crash" || kind === "clean"
    this.jsModel.restarted(promised, kind === "power" || kind === "power-torn")
    this.mqtt?.restarted(promised)
    this.model = this.newModel()
    await this.boot()
    await this.checkStream(`after ${kind} restart`)
  }

  private async checkStream(when: string): Promise<void> {
    if (this.disk === undefined || this.jetstream === undefined) return
    await this.drive(`stream check ${when}`, this.jsModel.checkStore(simStreamStore(this.jetstream.js), when))
  }

  // ---- NATS core ----

  private connect(): void {
    const r = this.rng
    const profile = clientProfile(r, this.faults)
    const c = new SimClient(this.nextClientId++, r.chance(0.8), r.chance(0.5), (l) => this.trace(l))
    c.link = this.net.connect(c, profile)
    this.clients.push(c)
    this.stats.connects++
    this.trace(`c${c.id} connects on link ${c.link.id} echo=${c.echo} headers=${c.headers} drain=${profile.drainBytes}B/${profile.drainEveryMs}ms`)
  }

  private drop(c: SimClient | JsClient | JsConsumer): void {
    this.stats.drops++
    this.trace(`${c instanceof JsClient ? "j" : c instanceof JsConsumer ? "p" : "c"}${c.id} drops its connection`)
    c.link.drop()
  }

  private toggleStall(c: SimClient): void {
    const on = !c.link.stalled
    if (on) this.stats.stalls++
    this.trace(`c${c.id} ${on ? "stops" : "resumes"} reading`)
    c.link.stall(on)
  }

  private clockJump(): Promise<void> {
    const ms = this.rng.int(1, 3) * Math.min(this.options.pingIntervalMs, this.options.writeDeadlineMs) + this.rng.int(0, 100)
    this.stats.clockJumps++
    this.trace(`clock jumps ${ms}ms`)
    return this.advance(ms)
  }

  private subscribe(c: SimClient): void {
    const r = this.rng
    // With JetStream on, `>` would also match the server's own replies, which the model does not route.
    const subject = r.pick(this.disk === undefined && this.mqtt === undefined ? FILTERS : FILTERS.slice(0, -1))
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
    unsubscribeOne(this.actor, c)
  }

  private request(c: SimClient): void {
    requestOne(this.actor, c)
  }

  private publish(c: SimClient): void {
    publishBatch(this.actor, c, SUBJECTS, 20, this.faults.bigMessages, [4_000, 30_000])
  }

  /** What the shared client actions (actions.ts) draw from and count in. */
  private get actor(): Actor {
    return { rng: this.rng, stats: this.stats, trace: (l) => this.trace(l) }
  }
}

/** Break the server on purpose: the harness must notice. */
const plantBug = (server: Server, bug: "drop-every-100th-delivery" | "reorder-deliveries"): void => {
  const router = server.router
  const deliver = router.deliver.bind(router)
  let n = 0
  if (bug === "drop-every-100th-delivery") {
    router.deliver = (s, d) => (++n % 100 === 0 ? true : deliver(s, d))
    return
  }
  // Hold every 50th delivery back and send it after the next one to the same subscription
  // (a copy of the record: the router reuses it).
  let held: readonly [Subscription, Delivery] | undefined
  router.deliver = (s, d) => {
    const hold = ++n % 50 === 0 && held === undefined
    const ok = hold ? ((held = [s, d.clone()]), true) : deliver(s, d)
    if (!hold && held !== undefined && held[0] === s) {
      const h = held
      held = undefined
      deliver(h[0], h[1])
    }
    return ok
  }
}
