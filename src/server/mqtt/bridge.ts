// The MQTT bridge: one MqttSession per connection, driven synchronously from socket
// chunks, routed through the NATS engine's Sublist with one internal client per
// connection. QoS 1/2 state and retained messages live in memory only for now: they
// do not survive a restart (the `$MQTT_*` streams come later; `persist` is ignored).
import * as MqttPacket from "mqtt-packet"
import type { MqttOptions } from "../../config/options.js"
import {
  defaultSessionConfig,
  type FlapRecord,
  MAX_TOPIC_BYTES,
  recordTakeover,
  type SessionAction,
  type SessionInput,
  type SessionSnapshot,
  topicMatchesFilter
} from "../../core/mqtt/index.js"
import type { Conn, ConnHandlers } from "../../services/transport.js"
import { GLOBAL_ACCOUNT } from "../account.js"
import type { Server } from "../server.js"
import { ClosedReason } from "../reasons.js"
import type { Subscription } from "../subscription.js"
import { encode, toClientPacket } from "./codec.js"
import { closedRecord, MqttConnection } from "./connection.js"

/** Takeovers of one client id within this window beyond the limit count as flapping (logged). */
const FLAP_WINDOW_MS = 10_000
const FLAP_MAX_TAKEOVERS = 3

const sessionKey = (account: string, clientId: string): string => `${account}\n${clientId}`

interface Retained {
  readonly topic: string
  readonly payload: Uint8Array
  readonly qos: number
}

export class MqttBridge {
  readonly connections = new Map<number, MqttConnection>()
  /** MQTT connections accepted since start (for /varz total_connections). */
  totalConnections = 0
  // Client ids, retained messages and stored sessions are per account, as subjects are.
  private readonly byClientId = new Map<string, MqttConnection>()
  private readonly retained = new Map<string, Map<string, Retained>>()
  /** Persistent (clean-session 0) sessions of disconnected clients, in memory only. */
  private readonly stored = new Map<string, SessionSnapshot>()
  readonly sessionConfig
  private readonly flaps = new Map<string, FlapRecord>()
  private dirty: Array<MqttConnection> = []
  private flushScheduled = false
  private readonly flushFn = () => this.flush()
  // QoS of the MQTT PUBLISH being routed right now (routing is synchronous); 0 for NATS-originated messages.
  private routingQos = 0
  /** The largest packet accepted: max_payload plus room for a full-length topic and the header fields. */
  readonly maxPacketBytes: number
  host: string
  port: number

  constructor(readonly server: Server, readonly options: MqttOptions) {
    this.maxPacketBytes = server.options.maxPayload + MAX_TOPIC_BYTES + 8
    this.sessionConfig = { ...defaultSessionConfig, ackWaitMs: options.ackWaitMs, maxAckPending: options.maxAckPending }
    this.host = options.host
    this.port = options.port
  }

  /** The open connection of a client id in an account. */
  connectedClient(clientId: string, account: string = GLOBAL_ACCOUNT): MqttConnection | undefined {
    return this.byClientId.get(sessionKey(account, clientId))
  }

  private retainedOf(c: MqttConnection): Map<string, Retained> {
    const name = c.client.account.name
    let m = this.retained.get(name)
    if (m === undefined) {
      m = new Map()
      this.retained.set(name, m)
    }
    return m
  }

  accept(conn: Conn): ConnHandlers {
    const now = this.server.now()
    const client = this.server.internalClient(GLOBAL_ACCOUNT, "mqtt")
    const c = new MqttConnection(this.server, this.sessionConfig, this.server.allocateCid(), conn, client, now)
    this.connections.set(c.cid, c)
    this.totalConnections++
    c.parser.on("packet", (p: MqttPacket.Packet) => {
      if (c.closed) return
      const packet = toClientPacket(p)
      if (packet === undefined) this.input(c, { type: "protocolError", reason: `unexpected ${p.cmd.toUpperCase()}` })
      else this.input(c, { type: "packet", packet })
    })
    c.parser.on("error", (e: Error) => {
      if (!c.closed) this.input(c, { type: "protocolError", reason: e.message })
    })
    return {
      onData: (chunk) => {
        if (c.closed) return
        c.lastActivity = this.server.now()
        c.inBytes += chunk.length
        const buffered = c.parser.parse(chunk)
        // A packet announced (or buffered) past the limit is cut off before its bytes pile up.
        const announced = (c.parser as unknown as { packet?: { length?: number } }).packet?.length ?? 0
        if (!c.closed && (announced > this.maxPacketBytes || buffered > this.maxPacketBytes)) {
          this.input(c, { type: "protocolError", reason: `packet of ${Math.max(announced, buffered)} bytes over the limit of ${this.maxPacketBytes}` })
        }
      },
      onDrain: () => {},
      onClose: () => {
        if (!c.closed) {
          // The socket is gone: the session still runs its loss (will) but nothing is written.
          c.closed = true
          this.input(c, { type: "connectionLost" })
        }
        this.finish(c)
      }
    }
  }

  /** Feed one input to a connection's session and carry out what it asks for. */
  input(c: MqttConnection, input: SessionInput): void {
    const actions = c.session.step(input, this.server.now())
    for (let i = 0; i < actions.length; i++) this.run(c, actions[i])
  }

  private run(c: MqttConnection, a: SessionAction): void {
    switch (a.type) {
      case "send":
        return this.send(c, a.packet)
      case "close":
        return this.close(c)
      case "publish":
        return this.publish(c, a.subject, a.payload, a.qos, a.confirm)
      case "storeRetained":
        this.retainedOf(c).set(a.topic, { topic: a.topic, payload: a.payload, qos: a.qos })
        return
      case "deleteRetained":
        this.retainedOf(c).delete(a.topic)
        return
      case "accept":
        return this.onAccept(c, a.clientId, a.cleanSession)
      case "subscribe":
        return this.subscribe(c, a.filter, a.subjects, a.restored)
      case "unsubscribe":
        return this.unsubscribe(c, a.filter)
      // Persistence, acks of stored messages and deadlines: nothing is stored yet, and
      // deadlines are polled by the tick loop through nextDeadline().
      case "persist":
      case "ack":
      case "drop":
      case "deadline":
        return
    }
  }

  private send(c: MqttConnection, packet: Parameters<typeof encode>[0]): void {
    if (c.closed) return
    if (packet.cmd === "publish") c.outMsgs++
    const buf = encode(packet)
    c.outBytes += buf.length
    c.out.push(buf)
    if (!c.dirty) {
      c.dirty = true
      this.dirty.push(c)
      if (!this.flushScheduled) {
        this.flushScheduled = true
        this.server.env.scheduleFlush(this.flushFn)
      }
    }
  }

  /** One write per connection per event-loop turn. */
  flush(): void {
    this.flushScheduled = false
    const list = this.dirty
    this.dirty = []
    for (const c of list) {
      c.dirty = false
      c.lastBuf = undefined
      this.writeOut(c)
    }
  }

  private writeOut(c: MqttConnection): void {
    if (c.out.length === 0) return
    const bufs = c.out
    c.out = []
    c.lastActivity = this.server.now()
    if (bufs.length === 1) c.conn.write(bufs[0])
    else c.conn.writev(bufs)
    // A subscriber that does not read is cut off at max_pending, as NATS clients are; its will goes out.
    if (!c.closed && c.conn.writableLength() > this.server.options.maxPending) {
      this.server.slowConsumers++
      c.client.account.slowConsumers++
      c.reasonOverride = ClosedReason.SlowConsumerPendingBytes
      this.server.log.warn(`MQTT client "${c.session.clientId}" - Slow Consumer Detected: pending ${c.conn.writableLength()} bytes over max_pending ${this.server.options.maxPending}`)
      this.input(c, { type: "connectionLost" })
    }
  }

  private onAccept(c: MqttConnection, clientId: string, clean: boolean): void {
    const now = this.server.now()
    const key = sessionKey(c.client.account.name, clientId)
    const older = this.byClientId.get(key)
    if (older !== undefined && older !== c) {
      const flap = recordTakeover(this.flaps.get(key), now, FLAP_WINDOW_MS, FLAP_MAX_TAKEOVERS)
      this.flaps.set(key, flap.record)
      if (flap.flapping) this.server.log.warn(`MQTT client id "${clientId}" is flapping between connections`)
      // The older connection is closed (its will goes out) [MQTT-3.1.4-2].
      this.input(older, { type: "takenOver" })
    }
    this.byClientId.set(key, c)
    const stored = clean ? undefined : this.stored.get(key)
    this.stored.delete(key)
    this.input(c, { type: "sessionReady", stored })
  }

  private publish(c: MqttConnection, subject: string, payload: Uint8Array, qos: number, confirm: number | undefined): void {
    c.inMsgs++
    const buf = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)
    const outer = this.routingQos
    this.routingQos = qos
    try {
      this.server.internalPublish(c.client, subject, "", undefined, buf)
    } finally {
      this.routingQos = outer
    }
    // Not durable yet: in memory, a routed message counts as accepted.
    if (confirm !== undefined && !c.closed) this.input(c, { type: "published", packetId: confirm })
  }

  private subscribe(c: MqttConnection, filter: string, subjects: ReadonlyArray<string>, restored: boolean): void {
    this.unsubscribe(c, filter)
    const list: Array<Subscription> = []
    for (const subject of subjects) {
      list.push(this.server.internalSubscribe(c.client, subject, undefined, (subj, _reply, hdrLen, buf, start, end) => {
        // Several subscriptions of one session can match one message: deliver it once.
        if (c.lastBuf === buf && c.lastStart === start) return
        c.lastBuf = buf
        c.lastStart = start
        if (!c.dirty) {
          // Make sure the dedup marker is cleared at the end of this turn even if nothing is sent.
          c.dirty = true
          this.dirty.push(c)
          if (!this.flushScheduled) {
            this.flushScheduled = true
            this.server.env.scheduleFlush(this.flushFn)
          }
        }
        const from = hdrLen >= 0 ? start + hdrLen : start
        this.input(c, { type: "deliver", subject: subj, payload: buf.subarray(from, end), qos: this.routingQos })
      }))
    }
    c.subs.set(filter, list)
    if (restored) return
    const messages: Array<Retained> = []
    for (const r of this.retainedOf(c).values()) if (topicMatchesFilter(r.topic, filter)) messages.push(r)
    if (messages.length > 0) this.input(c, { type: "retained", filter, messages })
  }

  private unsubscribe(c: MqttConnection, filter: string): void {
    const list = c.subs.get(filter)
    if (list === undefined) return
    c.subs.delete(filter)
    for (const s of list) this.removeSub(c, s)
  }

  private removeSub(c: MqttConnection, s: Subscription): void {
    s.closed = true
    c.client.subs.delete(s.sid)
    c.client.account.sublist.remove(s)
  }

  /** The session ended: flush what it said last (CONNACK refusal, …), then end the socket. */
  private close(c: MqttConnection): void {
    if (c.closed) return
    c.closed = true
    this.writeOut(c)
    c.conn.end()
    this.finish(c)
  }

  /** Forget a connection once: routing entries, the client id, and a /connz closed record. */
  private finish(c: MqttConnection): void {
    if (!this.connections.delete(c.cid)) return
    c.closed = true
    c.client.closed = true
    this.server.closed.push(closedRecord(c, this.server.now()))
    for (const list of c.subs.values()) for (const s of list) this.removeSub(c, s)
    c.subs.clear()
    const id = c.session.clientId
    const key = sessionKey(c.client.account.name, id)
    if (id !== "" && this.byClientId.get(key) === c) {
      this.byClientId.delete(key)
      if (!c.session.cleanSession) this.stored.set(key, c.session.snapshot())
    }
  }

  /** Wake sessions whose deadline (keepalive, redelivery) has come. */
  tick(now: number): void {
    for (const c of [...this.connections.values()]) {
      const at = c.session.nextDeadline()
      if (at !== undefined && at <= now && !c.closed) this.input(c, { type: "tick" })
    }
  }

  /** Server shutdown: close every connection without publishing wills. */
  shutdown(): void {
    for (const c of [...this.connections.values()]) {
      c.closed = true
      this.writeOut(c)
      c.conn.end()
      this.finish(c)
    }
  }
}
