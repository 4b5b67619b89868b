// The MQTT model: what every simulated MQTT message is (publisher connection, topic,
// per-connection sequence, QoS), what persistent sessions are owed, and the checks:
// at-least-once (QoS 1/2 to persistent sessions), exactly once (QoS 2), per-connection
// order (QoS 0/1), the last retained message per topic, and will iff no DISCONNECT.
import type { MqttConn, MqttDevice, QoS } from "./mqtt-client.js"

interface Msg {
  readonly no: number
  readonly conn: number
  readonly device: MqttDevice
  readonly topic: string
  readonly seq: number
  readonly qos: QoS
  /** The publisher sent it again (DUP): the server routes the copy as a new message. */
  resent: boolean
  /** Resent after a server restart before it was acknowledged: may be routed twice. */
  resentAfterRestart: boolean
  accepted: boolean
  /** The server life it was first sent in. */
  readonly life: number
  /**
   * MQTT 5.0 Message Expiry Interval (seconds) it was published with, and when (simulated
   * ms): its last send, since the server counts a resent copy's interval from its receipt.
   */
  readonly expiry?: number | undefined
  at: number
}

/** A delivery this long past its Message Expiry Interval (network and ticks included) is late. */
const EXPIRY_SLACK_MS = 1_500

interface Retained {
  /** In the owner's send order: message number, or 0 for an empty (deleting) publish. */
  readonly sends: Array<{ readonly no: number; readonly empty: boolean }>
  /** Index of the last acknowledged send, -1 when none. */
  acked: number
}

const matches = (filter: string, topic: string): boolean => {
  const f = filter.split("/")
  const t = topic.split("/")
  for (let i = 0; i < f.length; i++) {
    if (f[i] === "#") return true
    if (i >= t.length) return false
    if (f[i] !== "+" && f[i] !== t[i]) return false
  }
  return f.length === t.length
}

export class MqttModel {
  readonly violations: Array<string> = []
  private readonly msgs = new Map<number, Msg>()
  private nextNo = 1
  /** Persistent devices' confirmed subscriptions, and the message number they hold from. */
  private readonly subs = new Map<MqttDevice, { readonly list: ReadonlyArray<{ filter: string; qos: number }>; readonly from: number }>()
  /** device -> messages it dropped under a stale QoS 2 id (see `droppedUnderStaleId`). */
  private readonly droppedStale = new Map<MqttDevice, Set<number>>()
  /** device -> message numbers it is owed (QoS >= 1, acknowledged, persistent session). */
  private readonly owed = new Map<MqttDevice, Set<number>>()
  /** device -> message number -> application deliveries. */
  private readonly got = new Map<MqttDevice, Map<number, number>>()
  /** receiving connection -> (publisher connection, topic, qos) -> last sequence. */
  private readonly order = new Map<number, Map<string, number>>()
  readonly retained = new Map<string, Retained>()
  readonly wills = new Set<number>()
  readonly conns: Array<MqttConn> = []
  life = 0
  /** The first life after the last restart that lost promised state (0: none did). */
  private excusedSince = 0
  /** A restart lost what was promised (power cut under a sync_interval): owed sets were cleared. */
  excusedLosses = 0
  delivered = 0
  duplicates = 0
  /** Deliveries promised to persistent sessions (the at-least-once check's reach). */
  promised = 0

  /** The simulated clock (set by MqttSim). */
  now: () => number = () => 0
  /** MQTT 5.0 deliveries checked against their Message Expiry Interval, and messages that may expire unseen. */
  expiryChecked = 0
  mayExpire = 0

  publish(c: MqttConn, topic: string, qos: QoS, retain: boolean, empty: boolean, expiry?: number): { no: number; payload: Buffer } {
    const no = this.nextNo++
    const d = c.device
    const seq = (d.seqs.get(topic) ?? 0) + 1
    d.seqs.set(topic, seq)
    this.msgs.set(no, { no, conn: c.serial, device: d, topic, seq, qos, resent: false, resentAfterRestart: false, accepted: false, life: this.life, expiry, at: this.now() })
    if (retain) {
      let r = this.retained.get(topic)
      if (r === undefined) this.retained.set(topic, (r = { sends: [], acked: -1 }))
      r.sends.push({ no, empty })
    }
    return { no, payload: empty ? Buffer.alloc(0) : Buffer.from(`M${no}`) }
  }

  resent(no: number): void {
    const m = this.msgs.get(no)
    if (m === undefined) return
    m.resent = true
    if (m.life !== this.life) m.resentAfterRestart = true
    // The resend carries the interval it was published with, counted from when it arrives
    // (seed 1332367462 found the device resending without it, and the copy delivered bare).
    if (m.expiry !== undefined) m.at = this.now()
  }

  readonly subacked = (d: MqttDevice, list: ReadonlyArray<{ filter: string; qos: number }>): void => {
    // An identical filter replaces the earlier one, also within one SUBSCRIBE [MQTT-3.8.4-3].
    const last = new Map<string, number>()
    for (const x of list) last.set(x.filter, x.qos)
    if (!d.clean) this.subs.set(d, { list: [...last].map(([filter, qos]) => ({ filter, qos })), from: this.nextNo })
  }

  readonly accepted = (no: number): void => {
    const m = this.msgs.get(no)
    if (m === undefined || m.accepted) return
    m.accepted = true
    for (const r of this.retained.values()) {
      const i = r.sends.findIndex((s) => s.no === no)
      if (i > r.acked) r.acked = i
    }
    // First sent before a restart that lost promised state: the server may have routed it
    // then (QoS 2 routes on first receipt; the resend is a duplicate) and lost the copies.
    if (m.life < this.excusedSince) return
    // MQTT 5.0: one with a Message Expiry Interval may run out before a session gets it.
    if (m.expiry !== undefined) return void this.mayExpire++
    for (const [d, s] of this.subs) {
      if (no < s.from) continue
      if (!s.list.some((x) => x.qos >= 1 && x.qos <= 2 && matches(x.filter, m.topic))) continue
      if (this.got.get(d)?.has(no) || this.droppedStale.get(d)?.has(no)) continue
      let o = this.owed.get(d)
      if (o === undefined) this.owed.set(d, (o = new Set()))
      o.add(no)
      this.promised++
    }
  }

  readonly received = (c: MqttConn, topic: string, payload: string, qos: QoS, retain: boolean, dup: boolean, expiryLeft?: number): void => {
    if (topic.startsWith("w/")) {
      if (payload.startsWith("W")) this.wills.add(Number(payload.slice(1)))
      return
    }
    if (retain || !payload.startsWith("M")) return
    const no = Number(payload.slice(1))
    const m = this.msgs.get(no)
    if (m === undefined) return void this.violations.push(`${c.name} received '${payload}' on ${topic}, never published`)
    if (m.topic !== topic) this.violations.push(`${c.name} received M${no} on ${topic}, published on ${m.topic}`)
    const d = c.device
    if (m.expiry !== undefined && d.v5 !== undefined && !dup) {
      // MQTT 5.0: never sent once it ran out [MQTT-3.3.2-5], and with no more than is left [MQTT-3.3.2-6].
      // (A resend after reconnecting is counted down too, but a QoS 2 one goes even once its
      // interval ran out [MQTT-4.3.3-7]: not checked.)
      this.expiryChecked++
      const late = this.now() - (m.at + m.expiry * 1000)
      if (late > EXPIRY_SLACK_MS) this.violations.push(`${c.name} received M${no} ${late} ms after its Message Expiry Interval (${m.expiry}s) ran out [MQTT-3.3.2-5]`)
      if (expiryLeft === undefined || expiryLeft > m.expiry) this.violations.push(`${c.name} received M${no} with Message Expiry ${expiryLeft}, published with ${m.expiry} [MQTT-3.3.2-6]`)
    }
    this.delivered++
    this.owed.get(d)?.delete(no)
    let g = this.got.get(d)
    if (g === undefined) this.got.set(d, (g = new Map()))
    const n = (g.get(no) ?? 0) + 1
    g.set(no, n)
    if (n > 1) this.duplicates++
    // A QoS 2 message resent after a restart is still delivered once: the server forwards it
    // only once its de-duplication record is durable. Excused: first sent before a restart
    // that lost promised state (a power cut under a sync_interval).
    if (n > 1 && qos === 2 && m.qos === 2 && !(m.resentAfterRestart && m.life < this.excusedSince)) {
      this.violations.push(`QoS 2 M${no} (from ${m.device.clientId}#${m.conn}) delivered ${n} times to ${d.clientId} (now on #${c.serial}, dup=${dup})`)
    }
    if (qos === 2 || dup || m.resent) return
    // MQTT's ordered topics: one publisher connection, one topic, one QoS, one receiving connection.
    let o = this.order.get(c.serial)
    if (o === undefined) this.order.set(c.serial, (o = new Map()))
    const key = `${m.conn} ${m.topic} ${qos}`
    const last = o.get(key) ?? 0
    if (m.seq <= last) this.violations.push(`${c.name}: M${no} (#${m.conn} ${m.topic} seq ${m.seq}) arrived after seq ${last} at QoS ${qos}`)
    else o.set(key, m.seq)
  }

  /** The device dropped message `payload` under a QoS 2 id an excused restart left stale: not owed. */
  readonly droppedUnderStaleId = (c: MqttConn, payload: string): void => {
    if (!payload.startsWith("M")) return
    const no = Number(payload.slice(1))
    let x = this.droppedStale.get(c.device)
    if (x === undefined) this.droppedStale.set(c.device, (x = new Set()))
    x.add(no)
    if (this.owed.get(c.device)?.delete(no) === true) this.excusedLosses++
  }

  /** A persistent session came back without its state. */
  sessionLost(d: MqttDevice, excused: boolean): void {
    if (!excused && this.subs.has(d)) this.violations.push(`${d.clientId}: persistent session not present on reconnect (CONNACK session present 0)`)
    this.subs.delete(d)
    this.owed.delete(d)
  }

  /** The server restarted; `promised`: acknowledged state had to survive it. */
  restarted(promised: boolean): void {
    this.life++
    if (promised) return
    this.excusedSince = this.life
    this.excusedLosses++
    this.owed.clear()
    // Subscriptions confirmed before may be gone from a session that comes back present:
    // owed again from the SUBACK of the device's next SUBSCRIBE (see MqttSim.restarted).
    this.subs.clear()
    // What was delivered before may come again (the record of its delivery was not promised).
    this.got.clear()
    for (const r of this.retained.values()) r.acked = -1
  }

  /** At quiesce: every persistent session got what it is owed. */
  checkOwed(): void {
    for (const [d, o] of this.owed) {
      if (o.size === 0) continue
      const list = [...o].slice(0, 5).map((no) => {
        const m = this.msgs.get(no)!
        return `M${no} (${m.topic} QoS ${m.qos} from ${m.device.clientId}#${m.conn})`
      })
      this.violations.push(`${d.clientId}: ${o.size} acknowledged message(s) never delivered to its persistent session: ${list.join(", ")}`)
    }
  }

  /** `seen`: topic -> payload of the retained message a fresh subscriber got. */
  checkRetained(seen: ReadonlyMap<string, string>): void {
    for (const [topic, r] of this.retained) {
      const from = Math.max(r.acked, 0)
      const ok = new Set(r.sends.slice(from).map((s) => (s.empty ? "" : `M${s.no}`)))
      if (r.acked < 0) ok.add("")
      const got = seen.get(topic) ?? ""
      if (!ok.has(got)) this.violations.push(`retained ${topic}: fresh subscriber got '${got || "none"}', expected one of ${[...ok].map((x) => x || "none").join("/")} (last acked ${r.acked >= 0 ? `#${r.acked}` : "none"} of ${r.sends.length})`)
    }
    for (const [topic, p] of seen) if (!this.retained.has(topic)) this.violations.push(`retained ${topic}: '${p}' but nothing was ever retained there`)
  }

  /** A will goes out iff the client went away without DISCONNECT (server alive throughout). */
  checkWills(watcherFrom: number): void {
    for (const c of this.conns) {
      if (!c.will || c.serial < watcherFrom) continue
      const got = this.wills.has(c.serial)
      if (got && c.serverHeardDisconnect && !c.diedWithServer) this.violations.push(`${c.name}: will published although the server read its DISCONNECT`)
      const mustHave = c.gotConnack && !c.sentDisconnect && c.state === "closed" && !c.diedWithServer && !c.shutDown && c.closedAtLife === this.life
      if (!got && mustHave) this.violations.push(`${c.name}: went away without DISCONNECT but its will was never published`)
    }
  }
}
