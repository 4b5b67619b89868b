// MQTT in the simulation: the real MqttBridge next to the NATS server (same clock,
// random and network; with JetStream its `$MQTT_*` streams on the simulated disk), and
// a few seeded devices that publish, subscribe, drop, reconnect and take each other over.
import { Effect, type Exit } from "effect"
import type { MqttOptions } from "../config/options.js"
import { defaultOptions } from "../config/options.js"
import type { LogService } from "../services/log.js"
import type { Conn, ConnHandlers } from "../services/transport.js"
import type { JetStream } from "../server/jetstream/jetstream.js"
import { MqttBridge } from "../server/mqtt/bridge.js"
import { makeMemoryStore } from "../server/mqtt/store-memory.js"
import { StreamsStore } from "../server/mqtt/store-streams.js"
import type { MqttConnection } from "../server/mqtt/connection.js"
import type { Server } from "../server/server.js"
import { MqttConn, MqttDevice, type QoS } from "./mqtt-client.js"
import { MqttModel } from "./mqtt-invariants.js"
import type { SimNetwork } from "./network.js"
import { Rng } from "./rng.js"

const TOPICS = ["m/a", "m/b", "m/c/d"] as const
const FILTERS = ["m/a", "m/+", "m/#", "m/c/+", "m/b"] as const
const TICK_MS = 250
const TAKEOVER_GAP_MS = 12_000
/** Session expiry is checked to within this (the server's tick, the network, the close seen late). */
const EXPIRY_SLACK_MS = 1_500

export type MqttPlant = "commit-before-sync" | "forget-pubrel"

type Drive = <A, E>(what: string, eff: Effect.Effect<A, E>) => Promise<Exit.Exit<A, E> | undefined>

export class MqttSim {
  readonly model = new MqttModel()
  readonly devices: Array<MqttDevice> = []
  readonly watcher: MqttDevice
  bridge: MqttBridge | undefined
  private readonly links = new WeakSet<object>()
  private readonly handshakeDrops: number
  private readonly keepAliveOn: boolean
  private serial = 1
  private life = 0
  readonly stats: Record<string, number> = { mqttConnects: 0, mqttPubs: 0, mqttDrops: 0, mqttDisconnects: 0, mqttTakeovers: 0, mqttRetained: 0, mqttDegraded: 0, mqttHandshakeDrops: 0, mqttSilent: 0, mqttAccounted: 0, mqttV5Devices: 0, mqttSessionsExpired: 0 }

  constructor(
    private readonly rng: Rng,
    private readonly net: SimNetwork,
    private readonly trace: (line: string) => void,
    private readonly plant: MqttPlant | undefined,
    /**
     * Its own generator (earlier seeds keep their runs): in half the runs a device sometimes
     * drops its connection right after its PUBREC, leaving the server owing a PUBREL to an
     * offline session — the state a restart must not forget.
     */
    private readonly handshakeRng: Rng | undefined,
    /**
     * Its own generator too: in half the runs devices use a keep-alive (1-3 s, PINGREQ every
     * half of it), and sometimes one goes silent without closing (out of coverage, a half-open
     * TCP connection): the server must close it within 1.5 x keep-alive and publish its will.
     */
    private readonly keepAliveRng: Rng | undefined,
    /**
     * Its own generator too: in half the runs some devices speak MQTT 5.0, with a Session
     * Expiry Interval (a persistent one may run out while the device is away), a small
     * Receive Maximum (their PUBACKs come late, so the server's window fills), and Message
     * Expiry Intervals on some of what they publish.
     */
    private readonly v5Rng?: Rng | undefined
  ) {
    this.handshakeDrops = handshakeRng === undefined || handshakeRng.chance(0.5) ? 0 : 0.03
    this.keepAliveOn = keepAliveRng !== undefined && keepAliveRng.chance(0.5)
    const events = {
      connacked: (c: MqttConn, code: number, present: boolean) => this.connacked(c, code, present),
      subacked: this.model.subacked,
      accepted: this.model.accepted,
      received: this.model.received,
      droppedUnderStaleId: this.model.droppedUnderStaleId,
      closed: (c: MqttConn) => {
        c.closedAtLife = this.life
        if (c.device.conn === c) {
          c.device.closedAt = this.net.q.now
          c.device.closedByServerDeath = c.diedWithServer
        }
        this.trace(`${c.name} closed${c.sentDisconnect ? " (after DISCONNECT)" : ""}`)
      }
    }
    this.watcher = new MqttDevice("watch", false, [{ filter: "w/#", qos: 1 }], undefined, events)
    const n = rng.int(3, 5)
    for (let i = 1; i <= n; i++) {
      const subs = [{ filter: rng.pick(FILTERS), qos: rng.int(0, 2) as QoS }]
      if (rng.chance(0.4)) subs.push({ filter: rng.pick(FILTERS), qos: rng.int(0, 2) as QoS })
      this.devices.push(new MqttDevice(`d${i}`, i > 2 && rng.chance(0.5), subs, rng.chance(0.6) ? `r/${i}` : undefined, events))
    }
    if (this.keepAliveOn) for (const d of this.devices) d.keepAlive = keepAliveRng!.int(1, 3)
    this.model.now = () => this.net.q.now
    if (v5Rng !== undefined && v5Rng.chance(0.5)) {
      for (const d of this.devices) {
        if (!v5Rng.chance(0.5)) continue
        d.v5 = { sessionExpiry: d.clean ? 0 : v5Rng.pick([2, 5, 30, 0xffffffff]), receiveMaximum: v5Rng.int(1, 3) }
        this.stats.mqttV5Devices++
      }
    }
  }

  describe(): string {
    return this.devices.map((d) => `${d.clientId}${d.clean ? " clean" : ""}${d.v5 === undefined ? "" : ` v5 expiry ${d.v5.sessionExpiry} rmax ${d.v5.receiveMaximum}`} subs ${d.subs.map((s) => `${s.filter}@${s.qos}`).join(",")}`).join("; ")
  }

  isMqttLink(l: object): boolean {
    return this.links.has(l)
  }

  /** A server life starts: a bridge on it, its streams reopened from the disk first. */
  async boot(server: Server, js: JetStream | undefined, log: LogService, alive: () => boolean, drive: Drive): Promise<void> {
    const options: MqttOptions = { ...defaultOptions.mqtt!, host: "127.0.0.1", port: 1883, protocolVersions: [4, 5] }
    const persistence = js === undefined ? undefined : new StreamsStore(js, log)
    if (persistence !== undefined && this.plant === "commit-before-sync") plantCommitBeforeSync(persistence)
    const bridge = new MqttBridge(server, options, persistence ?? makeMemoryStore())
    if (persistence !== undefined && this.plant === "forget-pubrel") plantForgetPubrel(persistence)
    if (persistence !== undefined) await drive("MQTT recovery", Effect.promise(() => bridge.openStoredAccounts()))
    this.bridge = bridge
    const q = this.net.q
    const tick = (): void => {
      if (!alive()) return
      this.net.callServer("mqtt tick", () => bridge.tick(q.now))
      q.schedule(q.now + TICK_MS, tick)
    }
    q.schedule(q.now + TICK_MS, tick)
  }

  accept(conn: Conn): ConnHandlers {
    return this.bridge!.accept(conn)
  }

  /** The server process goes away; `clean`: a graceful shutdown (no wills). */
  serverDying(clean: boolean): void {
    for (const c of this.model.conns) {
      if (c.state === "closed") continue
      if (clean) c.shutDown = true
      else c.diedWithServer = true
    }
  }

  /**
   * A disk error made the bridge give up on its streams (state kept in memory, logged) or
   * fail a commit: from then on a restart promises nothing about MQTT state.
   */
  degraded = false

  noteServerLog(line: string): void {
    if (this.degraded || !/MQTT: (could not create stream|streams of account|stream sync failed).*simulated/.test(line)) return
    this.degraded = true
    this.stats.mqttDegraded = 1
    this.trace("MQTT state degraded by a disk error: later restarts excuse MQTT losses")
  }

  restarted(promised: boolean): void {
    this.life++
    const kept = promised && !this.degraded
    this.model.restarted(kept)
    if (!kept) {
      this.excuseSessionLoss = true
      for (const d of [this.watcher, ...this.devices]) {
        for (const pid of d.inQos2) d.staleQos2.add(pid)
        // What the server kept may be from before a SUBACK it gave (a power cut under a
        // sync_interval rolls the `$MQTT_sess` stream back to its last fsync): a session
        // that comes back present may lack a subscription confirmed after that. Nothing the
        // device was told of its subscriptions holds any more: it subscribes again on its
        // next connection, and is owed what that SUBACK covers (seed 838862713: a device
        // whose SUBACK'd subscription was lost in such a cut, session present since, was
        // owed every later message on it for the rest of the run).
        d.subscribed = false
      }
    }
  }

  shutdown(): Promise<void> {
    return this.bridge?.shutdown() ?? Promise.resolve()
  }

  private connacked(c: MqttConn, code: number, present: boolean): void {
    this.trace(`${c.name} CONNACK ${code}${present ? " session present" : ""}`)
    const d = c.device
    // MQTT 5.0: how long the session has been away, against its Session Expiry Interval.
    const away = d.v5 === undefined || d.closedAt === undefined || d.v5.sessionExpiry === 0xffffffff ? undefined : this.net.q.now - d.closedAt
    if (code === 0 && present && away !== undefined && !d.closedByServerDeath && away > d.v5!.sessionExpiry * 1000 + EXPIRY_SLACK_MS) {
      this.model.violations.push(`${c.name}: session present ${away} ms after its connection closed, Session Expiry Interval ${d.v5!.sessionExpiry}s [MQTT-4.1.0-2]`)
    }
    if (code === 0) d.closedAt = undefined // connected again: not away
    if (code !== 0 || d.clean || !d.subscribed || present) return
    // Ran out while the device was away: discarded as it should be, nothing is owed to it.
    const expired = away !== undefined && away >= d.v5!.sessionExpiry * 1000 - EXPIRY_SLACK_MS
    if (expired) this.stats.mqttSessionsExpired++
    // A persistent session the device had confirmed subscriptions in came back empty.
    this.model.sessionLost(d, this.excuseSessionLoss || expired)
  }

  /** Set by the runner: a restart may lose persistent sessions (power cut under a sync_interval). */
  excuseSessionLoss = false

  /**
   * The run is quiescing: devices no longer drop their connections mid-handshake. One that
   * did during the last second before the final check was still away (offline for up to
   * 5 s) when it ran, and everything owed to it counted as lost (seeds 1093111220, 691070054).
   */
  private quiet = false

  quiesce(): void {
    this.quiet = true
  }

  connect(d: MqttDevice): MqttConn {
    const c = new MqttConn(this.serial++, d, this.life, d !== this.watcher, this.trace)
    if (this.handshakeDrops > 0 && d !== this.watcher) {
      // Gone a few ms after the PUBREC left: often after the server took it, before its PUBREL came.
      c.onPubrecSent = (pid) => {
        if (!this.handshakeRng!.chance(this.handshakeDrops)) return
        const q = this.net.q
        q.schedule(q.now + this.handshakeRng!.int(1, 8), () => {
          if (c.state === "closed" || c.sentDisconnect || !d.inQos2.has(pid) || this.quiet) return
          this.stats.mqttHandshakeDrops++
          // And stays away a while, as a device out of coverage would: a restart may come first.
          d.offlineUntil = q.now + this.handshakeRng!.int(500, 5000)
          this.trace(`${c.name} drops its connection while awaiting PUBREL ${pid}, offline until t=${d.offlineUntil}`)
          c.link.drop()
        })
      }
    }
    const old = d.conn
    // Taking over an open connection: the session was never away.
    if (old !== undefined && old.state !== "closed") d.closedAt = undefined
    d.conn = c
    c.link = this.net.connect(c, { latency: [this.rng.int(0, 2), this.rng.int(3, 10)], drainBytes: 256 * 1024, drainEveryMs: 1, splitChance: this.rng.pick([0, 0.5]) })
    this.links.add(c.link as object)
    this.model.conns.push(c)
    this.stats.mqttConnects++
    this.trace(`${c.name} connects on link ${c.link.id}${old !== undefined && old.state !== "closed" ? ` (takes over #${old.serial})` : ""}`)
    if (d.v5 !== undefined) {
      const q = this.net.q
      c.delayAck = (send) => q.schedule(q.now + this.v5Rng!.int(0, 30), send)
    }
    c.start()
    for (const m of d.outflight.values()) if (m.phase === "publish") this.model.resent(m.no)
    if (d.keepAlive > 0) {
      const q = this.net.q
      const ping = (): void => {
        if (c.state === "closed") return
        if (c.state === "ready" && !c.silent && !c.sentDisconnect) c.send({ cmd: "pingreq" })
        q.schedule(q.now + d.keepAlive * 500, ping)
      }
      q.schedule(q.now + d.keepAlive * 500, ping)
    }
    return c
  }

  /**
   * The device goes silent without closing its connection: the server must end it within
   * 1.5 x keep-alive [MQTT-3.1.2-24] (plus its tick), publishing the will (checked with the others).
   */
  private goSilent(d: MqttDevice, c: MqttConn): void {
    const q = this.net.q
    const limit = d.keepAlive * 1500 + 2 * TICK_MS + 50
    c.silent = true
    d.offlineUntil = q.now + limit + this.keepAliveRng!.int(100, 3000)
    this.stats.mqttSilent++
    this.trace(`${c.name} goes silent (keep-alive ${d.keepAlive}s), offline until t=${d.offlineUntil}`)
    q.schedule(q.now + limit, () => {
      if (c.state !== "closed" && c.life === this.life) this.model.violations.push(`${c.name}: silent for ${limit}ms with keep-alive ${d.keepAlive}s and still connected`)
    })
  }

  /** One MQTT step. */
  act(): void {
    const r = this.rng
    if (this.watcher.conn === undefined || (this.watcher.conn.state === "closed" && r.chance(0.2))) {
      this.connect(this.watcher)
      return
    }
    const d = r.pick(this.devices)
    const c = d.conn
    if (c === undefined || c.state === "closed") {
      if (r.chance(0.5) && this.net.q.now >= d.offlineUntil) this.connect(d)
      return
    }
    if (c.state !== "ready" || c.sentDisconnect || c.silent) return
    if (d.keepAlive > 0 && this.keepAliveRng!.chance(0.01)) return this.goSilent(d, c)
    const roll = r.next()
    const now = this.net.q.now
    if (roll < 0.03) {
      this.stats.mqttDrops++
      this.trace(`${c.name} drops its connection`)
      c.link.drop()
    } else if (roll < 0.05) {
      this.stats.mqttDisconnects++
      this.trace(`${c.name} sends DISCONNECT`)
      c.disconnect()
    } else if (roll < 0.06 && now - d.lastTakeoverAt > TAKEOVER_GAP_MS) {
      d.lastTakeoverAt = now
      this.stats.mqttTakeovers++
      this.connect(d)
    } else if (roll < 0.15 && d.retainTopic !== undefined) {
      this.retain(c, r.int(0, 2) as QoS, r.chance(0.2))
    } else {
      const topic = r.pick(TOPICS)
      const qos = r.int(0, 2) as QoS
      const n = r.int(1, 5)
      // MQTT 5.0: some messages live only a few seconds.
      const expiry = d.v5 !== undefined && this.v5Rng!.chance(0.3) ? this.v5Rng!.int(1, 4) : undefined
      for (let i = 0; i < n; i++) {
        const m = this.model.publish(c, topic, qos, false, false, expiry)
        c.publish(m.no, topic, m.payload, qos, false, expiry)
      }
      this.stats.mqttPubs += n
      this.trace(`${c.name} PUBLISH ${topic} QoS ${qos} x${n}`)
    }
  }

  private retain(c: MqttConn, qos: QoS, empty: boolean): void {
    const topic = c.device.retainTopic!
    const m = this.model.publish(c, topic, qos, true, empty)
    c.publish(m.no, topic, m.payload, qos, true)
    this.stats.mqttRetained++
    this.trace(`${c.name} PUBLISH ${topic} retained QoS ${qos}${empty ? " (empty)" : ` M${m.no}`}`)
  }

  /** Stop the faults: every device connected and subscribed, with nothing in flight. */
  settled(): boolean {
    for (const d of [this.watcher, ...this.devices]) {
      const c = d.conn
      if (c === undefined || c.state === "closed") {
        this.connect(d)
        return false
      }
      // A silent device waits for the server to end its connection (keep-alive), then comes back.
      // Bytes written a moment ago and moving are not unsettled: a keep-alive PINGRESP every
      // period would otherwise be seen at every check when the two periods line up.
      const stuck = c.link.writableLength() > 0 && this.net.q.now - c.link.lastProgressAt > 100
      if (c.state !== "ready" || c.silent || stuck || d.outflight.size > 0 || (!d.subscribed && d.subs.length > 0)) return false
    }
    return true
  }

  /** Every retain-owning device publishes a last retained message, acknowledged (QoS 1). */
  finalRetained(): void {
    for (const d of this.devices) if (d.retainTopic !== undefined && d.conn?.state === "ready") this.retain(d.conn, 1, this.rng.chance(0.3))
  }

  /** A fresh subscriber to `r/#`; what it got is checked once the network drained. */
  freshSubscriber(): Map<string, string> {
    const seen = new Map<string, string>()
    const events = {
      connacked: () => {},
      subacked: () => {},
      accepted: () => {},
      received: (_c: MqttConn, topic: string, payload: string, _q: QoS, retain: boolean) => {
        if (retain) seen.set(topic, payload)
      },
      closed: () => {}
    }
    const d = new MqttDevice("fresh", true, [{ filter: "r/#", qos: 1 }], undefined, events)
    const c = new MqttConn(this.serial++, d, this.life, false, this.trace)
    d.conn = c
    c.link = this.net.connect(c, { latency: [1, 3], drainBytes: 1 << 20, drainEveryMs: 1, splitChance: 0 })
    this.links.add(c.link as object)
    c.start()
    return seen
  }

  checkEnd(seen: ReadonlyMap<string, string>): void {
    this.model.checkOwed()
    this.model.checkRetained(seen)
    this.model.checkWills(this.firstWatcherSerial())
    // Every QoS 2 exchange the server started is finished once all are connected and idle:
    // an id still held here waits for a PUBREL the server forgot (and may reuse the id).
    if (!this.excuseSessionLoss) {
      for (const d of [this.watcher, ...this.devices]) {
        if (d.inQos2.size > 0) this.model.violations.push(`${d.clientId}: QoS 2 ids ${[...d.inQos2].join(",")} never released (no PUBREL) after every session resumed`)
      }
    }
    for (const c of this.model.conns) for (const e of c.errors) this.model.violations.push(`${c.name}: ${e}`)
    this.checkAccounting()
  }

  /** Once the network drained: each open connection's /connz counters are what its device sent and got. */
  private checkAccounting(): void {
    const byLink = new Map<unknown, MqttConnection>()
    for (const sc of this.bridge?.connections.values() ?? []) byLink.set(sc.conn, sc)
    for (const c of this.model.conns) {
      if (c.state === "closed") continue
      const sc = byLink.get(c.link)
      if (sc === undefined) {
        this.model.violations.push(`${c.name}: open, but not among the server's MQTT connections`)
        continue
      }
      // Only where nothing is on the way (a keep-alive PINGREQ may be): counted at both ends.
      if (c.link.upInFlight > 0 || c.link.writableLength() > 0 || sc.out.length > 0 || sc.awaiting > 0) continue
      this.stats.mqttAccounted++
      const mine = c.counts
      if (sc.inMsgs !== mine.outMsgs || sc.inBytes !== mine.outBytes || sc.outMsgs !== mine.inMsgs || sc.outBytes !== mine.inBytes) {
        this.model.violations.push(
          `${c.name}: server counted in ${sc.inMsgs} msgs/${sc.inBytes} B, out ${sc.outMsgs}/${sc.outBytes}; the device sent ${mine.outMsgs}/${mine.outBytes}, got ${mine.inMsgs}/${mine.inBytes}`
        )
      }
    }
  }

  /** Wills are checked only for connections opened after the watcher's first SUBACK could exist. */
  private firstWatcherSerial(): number {
    return (this.model.conns.find((c) => c.device === this.watcher)?.serial ?? 0) + 1
  }
}

/** A broken recovery: restored sessions forget the QoS 2 ids they still owe a PUBREL. */
const plantForgetPubrel = (p: StreamsStore): void => {
  const open = p.open.bind(p)
  p.open = (account) =>
    open(account).then((store) => {
      const take = store.takeSessions.bind(store)
      store.takeSessions = () => {
        const sessions = take()
        for (const [id, s] of sessions) sessions.set(id, { ...s, outbound: s.outbound.filter((o) => o.phase !== "pubrel") })
        return sessions
      }
      return store
    })
}

/** A broken bridge: its group commit answers before the fsync (writes only handed to the OS). */
const plantCommitBeforeSync = (p: StreamsStore): void => {
  // The commit reads `syncInterval`: a number means "flush, do not fsync".
  const js = p.js
  ;(p as { js: JetStream }).js = Object.create(js, { options: { value: { ...js.options, syncInterval: 1_000_000 } } }) as JetStream
}
