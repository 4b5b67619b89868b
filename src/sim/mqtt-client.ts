// Simulated MQTT clients. A device owns a client id and the client side of its session
// (outbound QoS 1/2 in flight, inbound QoS 2 ids before PUBREL); each of its connections
// is a small state machine over a SimLink that speaks MQTT 3.1.1 through mqtt-packet.
// Payloads are `M<n>`: the model knows every message by its number.
import * as MqttPacket from "mqtt-packet"
import type { ClientEnd, SimLink } from "./network.js"

export type QoS = 0 | 1 | 2

export interface OutMsg {
  readonly no: number
  readonly topic: string
  readonly payload: Buffer
  readonly qos: QoS
  readonly retain: boolean
  readonly pid: number
  phase: "publish" | "pubrel"
  /** MQTT 5.0: the Message Expiry Interval it was published with (a resend carries it too). */
  readonly expiry?: number | undefined
}

/** What a device tells the model. */
export interface MqttEvents {
  readonly connacked: (c: MqttConn, code: number, sessionPresent: boolean) => void
  readonly subacked: (d: MqttDevice, subs: ReadonlyArray<{ readonly filter: string; readonly qos: number }>) => void
  readonly accepted: (no: number) => void
  readonly received: (c: MqttConn, topic: string, payload: string, qos: QoS, retain: boolean, dup: boolean, expiryLeft?: number) => void
  readonly closed: (c: MqttConn) => void
  /** A QoS 2 message dropped as a resend under an id the server may have forgotten (see `staleQos2`). */
  readonly droppedUnderStaleId?: (c: MqttConn, payload: string) => void
}

export class MqttDevice {
  conn: MqttConn | undefined
  readonly outflight = new Map<number, OutMsg>()
  readonly inQos2 = new Set<number>()
  /**
   * Ids held in `inQos2` when a restart lost promised state (sync_interval, disk errors):
   * the server may hand one out again for a new message, which this side then drops as a
   * resend. A consequence of that excused loss, not a new one; cleared by its PUBREL.
   */
  readonly staleQos2 = new Set<number>()
  private lastPid = 0
  /** Subscriptions confirmed (SUBACK) for the current server session. */
  subscribed = false
  lastTakeoverAt = -Infinity
  /** Out of coverage until then (simulated ms): no reconnect before. */
  offlineUntil = 0
  /** Seconds; 0: none. */
  keepAlive = 0
  /** Per-topic sequence of the current connection (ordering is per connection). */
  seqs = new Map<string, number>()
  /**
   * An MQTT 5.0 device: its Session Expiry Interval (seconds; 0 for a clean one,
   * 0xFFFFFFFF never) and the Receive Maximum it announces. Undefined: MQTT 3.1.1.
   */
  v5: { readonly sessionExpiry: number; readonly receiveMaximum: number } | undefined = undefined
  /** When its last connection closed with none open after it (simulated ms), and whether the server died with it. */
  closedAt: number | undefined = undefined
  closedByServerDeath = false

  constructor(
    readonly clientId: string,
    readonly clean: boolean,
    readonly subs: ReadonlyArray<{ readonly filter: string; readonly qos: QoS }>,
    /** A topic this device alone publishes retained messages to. */
    readonly retainTopic: string | undefined,
    readonly events: MqttEvents
  ) {}

  nextPid(): number {
    for (let i = 0; i < 65535; i++) {
      this.lastPid = (this.lastPid % 65535) + 1
      if (!this.outflight.has(this.lastPid)) return this.lastPid
    }
    throw new Error(`${this.clientId}: no free packet id`)
  }

  /** A clean session starts from nothing, on both sides [MQTT-3.1.2-6]. */
  reset(): void {
    this.outflight.clear()
    this.inQos2.clear()
    this.staleQos2.clear()
    this.subscribed = false
  }
}

export class MqttConn implements ClientEnd {
  state: "connecting" | "ready" | "closed" = "connecting"
  link!: SimLink
  private readonly parser: ReturnType<typeof MqttPacket.parser>
  /** 4 or 5, as its device speaks. */
  private readonly level: 4 | 5
  /**
   * MQTT 5.0: the QoS 1/2 deliveries the server has in flight towards this connection (a
   * PUBACK or PUBCOMP not sent yet): never more than the Receive Maximum it announced.
   */
  private readonly serverInflight = new Set<number>()
  /** MQTT 5.0: sends a PUBACK a little later (the sim's clock), so the server's window fills. */
  delayAck: ((send: () => void) => void) | undefined
  gotConnack = false
  sentDisconnect = false
  /** DISCONNECT was sent while the server still read this connection (it may have closed it before reading it). */
  private disconnectBeforeServerClose = false
  /** The server process died while this connection was open. */
  diedWithServer = false
  /** The server was shut down (gracefully) while this connection was open: no will. */
  shutDown = false
  /** What this side sent and received: the server's /connz counters must agree. */
  readonly counts = { inMsgs: 0, outMsgs: 0, inBytes: 0, outBytes: 0 }
  /** Gone quiet without closing (see MqttSim.goSilent): sends nothing more. */
  silent = false
  /** Fault hook: called after answering a QoS 2 PUBLISH with PUBREC. */
  onPubrecSent: ((pid: number) => void) | undefined
  closedAtLife = -1
  readonly errors: Array<string> = []
  /**
   * Packet ids of the QoS 1 / QoS 2 PUBLISHes sent on this connection, oldest first, not
   * yet answered: the server must answer each kind in the order it received them
   * [MQTT-4.6.0-2, -3].
   */
  private readonly unanswered: Record<1 | 2, Array<number>> = { 1: [], 2: [] }

  constructor(
    readonly serial: number,
    readonly device: MqttDevice,
    readonly life: number,
    readonly will: boolean,
    private readonly trace: (line: string) => void
  ) {
    this.level = device.v5 === undefined ? 4 : 5
    this.parser = MqttPacket.parser({ protocolVersion: this.level })
    this.parser.on("packet", (p: MqttPacket.Packet) => this.onPacket(p))
    this.parser.on("error", (e: Error) => this.errors.push(`parse error: ${e.message}`))
  }

  get name(): string {
    return `${this.device.clientId}#${this.serial}`
  }

  /** CONNECT goes out first: an MQTT client speaks first. */
  start(): void {
    const d = this.device
    if (d.clean) d.reset()
    this.send({
      cmd: "connect",
      clientId: d.clientId,
      protocolId: "MQTT",
      protocolVersion: this.level,
      clean: d.clean,
      keepalive: d.keepAlive,
      ...(d.v5 === undefined ? {} : { properties: { sessionExpiryInterval: d.v5.sessionExpiry, receiveMaximum: d.v5.receiveMaximum } }),
      ...(this.will ? { will: { topic: `w/${d.clientId}`, payload: Buffer.from(`W${this.serial}`), qos: 1 as const, retain: false } } : {})
    })
  }

  send(p: MqttPacket.Packet): void {
    if (this.state === "closed" || this.silent) return
    if (p.cmd === "publish" && p.qos > 0) this.unanswered[p.qos as 1 | 2].push(p.messageId!)
    const bytes = MqttPacket.generate(p, { protocolVersion: this.level })
    this.counts.outBytes += bytes.length
    if (p.cmd === "publish") this.counts.outMsgs++
    this.link.send(bytes)
  }

  publish(no: number, topic: string, payload: Buffer, qos: QoS, retain: boolean, expiry?: number): void {
    const d = this.device
    const props = expiry === undefined || this.level !== 5 ? {} : { properties: { messageExpiryInterval: expiry } }
    if (qos === 0) return this.send({ cmd: "publish", topic, payload, qos, retain, dup: false, ...props })
    const pid = d.nextPid()
    d.outflight.set(pid, { no, topic, payload, qos, retain, pid, phase: "publish", expiry: props.properties?.messageExpiryInterval })
    this.send({ cmd: "publish", topic, payload, qos, retain, dup: false, messageId: pid, ...props })
  }

  disconnect(): void {
    this.send({ cmd: "disconnect" })
    this.sentDisconnect = true
    this.disconnectBeforeServerClose = !this.link.serverClosed
  }

  /**
   * The server read this connection's DISCONNECT: it was sent before the server closed the
   * link, and nothing the client sent was still on its way when it did. A server that cut
   * the connection first (a failed store write) never heard it, and owes the will.
   */
  get serverHeardDisconnect(): boolean {
    if (!this.sentDisconnect || !this.disconnectBeforeServerClose) return false
    return !this.link.serverClosed || this.link.upInFlightAtServerClose === 0
  }

  // ---- ClientEnd ----

  onData(chunk: Buffer): void {
    if (this.state === "closed") return
    this.counts.inBytes += chunk.length
    this.parser.parse(chunk)
  }

  onClose(): void {
    if (this.state === "closed") return
    this.state = "closed"
    this.device.events.closed(this)
  }

  /** An answer to a QoS 1/2 PUBLISH must be the answer to the oldest one not yet answered. */
  private answered(qos: 1 | 2, pid: number, what: string): void {
    const q = this.unanswered[qos]
    const at = q.indexOf(pid)
    if (at > 0) this.errors.push(`${what} ${pid} before ${what} ${q[0]}: out of the order of the PUBLISHes [MQTT-4.6.0-${qos === 1 ? 2 : 3}]`)
    if (at >= 0) q.splice(at, 1)
  }

  private onPacket(p: MqttPacket.Packet): void {
    if (this.state === "closed") return
    const d = this.device
    switch (p.cmd) {
      case "connack": {
        // Only an accepted CONNECT stores the will [MQTT-3.1.2-8].
        const code = this.level === 5 ? p.reasonCode ?? -1 : p.returnCode ?? -1
        this.gotConnack = code === 0
        d.events.connacked(this, code, p.sessionPresent)
        if (code !== 0) return
        this.state = "ready"
        if (!p.sessionPresent) {
          d.subscribed = false
          // No session on the server: the QoS 2 ids it held for us are gone with it.
          d.inQos2.clear()
          d.staleQos2.clear()
        }
        // Unacknowledged publishes go out again with DUP, PUBRELs again [MQTT-4.4.0-1].
        for (const m of d.outflight.values()) {
          if (m.phase === "pubrel") this.send({ cmd: "pubrel", messageId: m.pid })
          // The same PUBLISH, properties included, as client libraries resend what they stored.
          else this.send({ cmd: "publish", topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain, dup: true, messageId: m.pid, ...(m.expiry === undefined || this.level !== 5 ? {} : { properties: { messageExpiryInterval: m.expiry } }) })
        }
        if (!d.subscribed && d.subs.length > 0) this.send({ cmd: "subscribe", messageId: d.nextPid(), subscriptions: d.subs.map((s) => ({ topic: s.filter, qos: s.qos })) })
        return
      }
      case "suback":
        d.subscribed = true
        d.events.subacked(d, d.subs.map((s, i) => ({ filter: s.filter, qos: p.granted[i] as number })))
        return
      case "puback": {
        this.answered(1, p.messageId!, "PUBACK")
        const m = d.outflight.get(p.messageId!)
        if (m === undefined || m.qos !== 1) return
        d.outflight.delete(m.pid)
        d.events.accepted(m.no)
        return
      }
      case "pubrec": {
        this.answered(2, p.messageId!, "PUBREC")
        const m = d.outflight.get(p.messageId!)
        if (m === undefined || m.qos !== 2) return
        if (m.phase === "publish") d.events.accepted(m.no)
        m.phase = "pubrel"
        this.send({ cmd: "pubrel", messageId: m.pid })
        return
      }
      case "pubcomp": {
        const m = d.outflight.get(p.messageId!)
        if (m !== undefined && m.phase === "pubrel") d.outflight.delete(m.pid)
        return
      }
      case "publish": {
        this.counts.inMsgs++
        const payload = Buffer.from(p.payload).toString("latin1")
        const pid = p.messageId ?? 0
        const expiryLeft = p.properties?.messageExpiryInterval
        if (d.v5 !== undefined && p.qos > 0 && !this.serverInflight.has(pid)) {
          // The server never has more QoS 1/2 deliveries in flight than the client allows [MQTT-4.9.0-2].
          if (this.serverInflight.size >= d.v5.receiveMaximum) this.errors.push(`QoS ${p.qos} PUBLISH ${pid} with ${this.serverInflight.size} in flight, Receive Maximum ${d.v5.receiveMaximum} [MQTT-4.9.0-2]`)
          this.serverInflight.add(pid)
        }
        if (p.qos === 2) {
          // Seen before its PUBREL: a resend, dropped here (the application gets it once).
          if (!d.inQos2.has(pid)) {
            this.trace(`${this.name} QoS 2 pid ${pid} ${payload}${p.dup ? " dup" : ""}`)
            d.inQos2.add(pid)
            d.events.received(this, p.topic, payload, 2, p.retain, p.dup, expiryLeft)
          } else {
            this.trace(`${this.name} drops resent QoS 2 pid ${pid}`)
            if (d.staleQos2.has(pid)) d.events.droppedUnderStaleId?.(this, payload)
          }
          this.send({ cmd: "pubrec", messageId: pid })
          this.onPubrecSent?.(pid)
          return
        }
        d.events.received(this, p.topic, payload, p.qos, p.retain, p.dup, expiryLeft)
        if (p.qos !== 1) return
        const ack = (): void => {
          this.serverInflight.delete(pid)
          this.send({ cmd: "puback", messageId: pid })
        }
        if (this.delayAck === undefined) ack()
        else this.delayAck(ack)
        return
      }
      case "pubrel":
        this.trace(`${this.name} PUBREL pid ${p.messageId} -> PUBCOMP`)
        d.inQos2.delete(p.messageId!)
        d.staleQos2.delete(p.messageId!)
        this.serverInflight.delete(p.messageId!)
        this.send({ cmd: "pubcomp", messageId: p.messageId! })
        return
      case "disconnect":
        // MQTT 5.0: the server says why it closes (takeover, keep alive, shutdown); the close follows.
        if (this.level === 5) return void this.trace(`${this.name} DISCONNECT 0x${(p.reasonCode ?? 0).toString(16)} from the server`)
        this.errors.push("unexpected disconnect from the server")
        return
      case "unsuback":
      case "pingresp":
        return
      default:
        this.errors.push(`unexpected ${p.cmd} from the server`)
    }
  }
}
