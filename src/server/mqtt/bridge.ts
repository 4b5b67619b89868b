// The MQTT connection driver: one MqttSession per connection, driven synchronously from
// socket chunks, its actions carried out at once; each connection is a Principal of the
// engine, routed through its account's Sublist like any NATS client. Around it: who holds
// which client id and the sessions of absent clients (registry.ts), the output that waits
// for commits (commit-gate.ts), retained messages and stored backlogs paced to the turn and
// to the socket (pacing.ts), and where state is kept, the `MqttStore` port (store.ts): the
// account's `$MQTT_*` streams with the stream subsystem on, memory without it.
import type { Alarm } from "../alarm.js"
import { DEFAULT_MQTT_PROTOCOL_VERSIONS, DEFAULT_RESPONSE_INFORMATION, DEFAULT_TOPIC_ALIAS_MAXIMUM, type MqttOptions, type MqttProtocolLevel } from "../../config/options.js"
import {
  type ClientPacket,
  CloseReason,
  defaultSessionConfig,
  MAX_TOPIC_BYTES,
  type QoS,
  type ServerPacket,
  type SessionAction,
  type SessionConfig,
  type SessionInput,
  type SessionSnapshot,
  type DelayedWill,
  subjectToTopic
} from "../../core/mqtt/index.js"
import { encodeInto, encodePublishRange } from "../../core/mqtt/codec.js"
import { encodeIntoV5 } from "../../core/mqtt/codec5.js"
import { encodeMessageProperties, encodePublishRange as encodePublishRangeV5, publishSize } from "../../core/mqtt/v5/encode.js"
import { headerBlock, NatsHeader, natsToPublish, parseHeaderBlock, parseResponseSubject, RESPONSE_SUBJECT_PREFIX } from "../../core/mqtt/v5/nats.js"
import { topicToSubject } from "../../core/mqtt/topic.js"
import { OutboundTopicAliases } from "../../core/mqtt/v5/alias.js"
import { sessionEndsAt } from "../../core/mqtt/v5/expiry.js"
import { ReasonCode } from "../../core/mqtt/v5/reason.js"
import { type MessageProperties, NO_PROPERTIES } from "../../core/mqtt/v5/types.js"
import type { ServerLimits } from "../../core/mqtt/v5/connect.js"
import type { Conn, ConnHandlers } from "../../services/transport.js"
import { type Account, type Delivery, GLOBAL_ACCOUNT, type InternalPrincipal, type Principal, type Subscription } from "../../engine/principal.js"
import type { Server } from "../server.js"
import { ClosedReason } from "../reasons.js"
import { MqttCommitGate, type RouteExtra } from "./commit-gate.js"
import { closedRecord, MqttConnection, type MqttDriver, mqttLogPrefix } from "./connection.js"
import type { MalformedPacket } from "../../core/mqtt/codec.js"
import { HELD_MAX, HeldPayloads } from "./held.js"
import { BacklogPump, RetainedLookups } from "./pacing.js"
import { RetainedSync } from "./retained-sync.js"
import { RetainedExpiry } from "./retained-expiry.js"
import { type OwnerAnnouncement, givesWay, MqttOwners } from "./owners.js"
import { MqttRegistry } from "./registry.js"
import type { MqttAccountStore, MqttStoreService } from "./store.js"
import { traceMqttIn, traceMqttOut, traceMqttOutQos0 } from "./trace.js"

/**
 * What the server announces to MQTT 5.0 clients in CONNACK: its Maximum Packet Size (the
 * bound every connection is held to), Receive Maximum and Topic Alias Maximum
 * (`receive_maximum`, `topic_alias_maximum`), the longest Keep Alive (`max_keepalive`,
 * sent as Server Keep Alive where the client asks for more) and the Response Information
 * prefix (`response_information`).
 */
/** A will's delayed actions (its publish, and its retained copy) as data the session record can keep. */
const delayedWill = (at: number, actions: ReadonlyArray<SessionAction>): DelayedWill | undefined => {
  let topic: string | undefined
  for (const a of actions) if (a.type === "storeRetained" || a.type === "deleteRetained") topic = a.topic
  for (const a of actions) {
    if (a.type !== "publish") continue
    return {
      at, topic: topic ?? subjectToTopic(a.subject), subject: a.subject, payload: a.payload, qos: a.qos, retain: a.retain,
      ...(a.reply === undefined ? {} : { reply: a.reply }),
      ...(a.hdr === undefined ? {} : { hdr: a.hdr })
    }
  }
  return undefined
}

/** Store refusals that are a storage limit (a stream's limits, the disk full): MQTT 5.0's 0x97 Quota exceeded. */
const STORAGE_LIMITS: ReadonlySet<string> = new Set(["MaxMsgs", "MaxBytes", "MaxMsgSize", "MaxMsgsPerSubject", "NoSpace"])

export const mqtt5Limits = (options: MqttOptions, maxPacketBytes: number): ServerLimits => ({
  maximumPacketSize: maxPacketBytes,
  receiveMaximum: options.receiveMaximum,
  topicAliasMaximum: options.topicAliasMaximum ?? DEFAULT_TOPIC_ALIAS_MAXIMUM,
  ...(options.maxKeepAlive === undefined ? {} : { maximumKeepAlive: options.maxKeepAlive }),
  responseInformation: options.responseInformation ?? DEFAULT_RESPONSE_INFORMATION
})

export class MqttBridge implements MqttDriver {
  readonly connections = new Map<number, MqttConnection>()
  /** The shell's timer that runs tick() (set by the listener). */
  alarm: Alarm | undefined = undefined
  /** MQTT connections accepted since start (for /varz total_connections). */
  totalConnections = 0
  /** Protocol trace (-V) of MQTT packets; a reload may turn it on or off. */
  tracing: boolean
  /** The largest packet accepted: max_payload plus room for a full-length topic and the header fields. */
  maxPacketBytes: number
  /** Accounts whose `$MQTT.rr.>` answers are listened to, and who republishes them. */
  private readonly answering = new Set<string>()
  private readonly answerers = new Map<string, InternalPrincipal>()
  /** The message properties of the last routed message asked for (`propertiesOf`), by its seq. */
  private propsSeq = -1
  private props: { readonly properties: MessageProperties; readonly bytes: Buffer | undefined } | null = null
  /** MQTT 5.0 deliveries dropped for being larger than the client's Maximum Packet Size (/varz mqtt.packet_too_large_dropped). */
  tooLargeDrops = 0
  /** Memory held by partial packets of every connection (see MqttParser.held), and how many hold one. */
  partialBytes = 0
  partialPackets = 0
  host: string
  port: number
  /** `protocol_versions` of the mqtt listener (a reload may change it: new connections take it) and of the websocket one. */
  mqttLevels: ReadonlyArray<MqttProtocolLevel>
  websocketLevels: ReadonlyArray<MqttProtocolLevel> = DEFAULT_MQTT_PROTOCOL_VERSIONS
  /** MQTT 5.0 wills waiting for their Will Delay Interval, by account and client id: the closed connection they are published as. */
  private readonly delayedWills = new Map<string, { readonly account: string; readonly clientId: string; readonly will: DelayedWill }>()
  /** Payloads of QoS 1/2 messages in the sessions' windows (see held.ts). */
  private readonly held = new HeldPayloads()
  private readonly registry: MqttRegistry
  /** Client ids across servers: takeovers cluster-wide (owners.ts). */
  private readonly owners: MqttOwners
  private readonly gate: MqttCommitGate
  private readonly retained: RetainedLookups
  /** Retained messages cluster-wide, among Switchyard servers (retained-sync.ts). */
  private readonly retainedSync: RetainedSync
  /** When retained messages with a Message Expiry Interval run out (MQTT 5.0). */
  readonly retainedExpiry: RetainedExpiry
  private readonly backlog: BacklogPump

  constructor(
    readonly server: Server,
    readonly options: MqttOptions,
    /** Where sessions, QoS 1/2 messages and retained messages are kept (the `MqttStore` port). */
    readonly store: MqttStoreService
  ) {
    this.maxPacketBytes = server.options.maxPayload + MAX_TOPIC_BYTES + 8
    this.mqttLevels = options.protocolVersions ?? DEFAULT_MQTT_PROTOCOL_VERSIONS
    const sessionConfig: SessionConfig = {
      ...defaultSessionConfig,
      ackWaitMs: options.ackWaitMs,
      maxAckPending: options.maxAckPending,
      maxQueued: options.maxQueuedMessages,
      maxQueuedBytes: options.maxQueuedBytes,
      // A large stored message is read back from the store for a resend rather than kept
      // in memory while unacknowledged (a 1024-message window of 512 KiB payloads held
      // 500 MB); payloads up to HELD_MAX live in reused slabs and stay (see held.ts).
      keepSentPayloadMax: HELD_MAX,
      // A connection that never sends CONNECT is closed, as NATS clients are at auth_timeout.
      connectTimeoutMs: options.authorization?.timeoutMs ?? server.options.authTimeoutMs,
      v5: mqtt5Limits(options, this.maxPacketBytes)
    }
    this.host = options.host
    this.port = options.port
    this.tracing = server.log.traceEnabled
    this.registry = new MqttRegistry(server, store, this.held, sessionConfig)
    this.registry.wakeAt = (at) => this.wakeAt(at)
    this.registry.onStoredWill = (account, clientId, will) => {
      this.delayedWills.set(`${account}\n${clientId}`, { account, clientId, will })
      this.wakeAt(will.at)
    }
    this.gate = new MqttCommitGate(server, store, this)
    this.retained = new RetainedLookups(server, this)
    this.retainedExpiry = new RetainedExpiry((at) => this.wakeAt(at))
    this.retainedSync = new RetainedSync(server, store, (s, topic) => this.retainedExpiry.changed(s, topic))
    this.registry.onOpened = (s) => this.retainedExpiry.opened(s)
    server.peerOwn = this.retainedSync
    this.backlog = new BacklogPump(store, this)
    server.router.durable = { hold: (d) => this.holdRouted(d), release: (d) => this.releaseRouted(d) }
    this.owners = new MqttOwners(server, (account, a) => this.takenElsewhere(account, a))
  }

  /** Another server announced a connection with a client id this server holds: the older connection is closed. */
  private takenElsewhere(account: string, a: OwnerAnnouncement): void {
    const c = this.registry.connected(a.client_id, account)
    if (c === undefined || c.closed || !givesWay(c.claimedAt, this.server.serverId, a)) return
    this.server.log.warn(
      `${mqttLogPrefix(c, a.client_id)} - The same client id connected to server "${a.server_name}" (${a.server_id}): closing this connection`
    )
    this.input(c, { type: "takenOver" })
  }

  /**
   * A QoS 1/2 message from another server (a route, a leaf connection) that a persistent
   * session here would take is stored before it is routed, as a local publication is
   * (`publish`): it survives a restart until acknowledged. Nothing waits on the commit
   * (the other server had its acknowledgement), which follows this turn's flush.
   */
  private holdRouted(d: Delivery): void {
    const account = d.origin.publisher!.account
    const store = this.gate.storeOf(account.name)
    if (store === undefined || !store.durable || !this.heldDurably(account, d.subject)) return
    // With its headers and reply subject: an MQTT 5.0 session gets its properties from the stored copy too.
    const props = d.hdrLen > 0 || d.reply !== ""
      ? { reply: d.reply === "" ? undefined : d.reply, hdr: d.hdrLen > 0 ? d.buf.subarray(d.start, d.start + d.hdrLen) : undefined, at: d.now }
      : undefined
    const r = store.storeMessage(d.subject, d.buf.subarray(d.payloadStart, d.end), d.origin.qos as QoS, false, undefined, props)
    if (typeof r === "object") {
      this.server.log.error(`MQTT: message on '${d.subject}' from another server could not be stored: ${r.detail}`)
      return
    }
    d.origin.ref = r
    if (r !== undefined) this.gate.wrote()
  }

  private releaseRouted(d: Delivery): void {
    const ref = d.origin.ref
    if (ref === undefined) return
    const store = this.gate.storeOf(d.origin.publisher!.account.name)
    store?.routed(ref)
    store?.releaseIfUnheld(ref)
  }

  /** Asks the shell to run tick() by then. */
  wakeAt(at: number): void {
    this.alarm?.wakeAt(at)
  }

  /** Limits of new sessions; a configuration reload replaces them (`setSessionConfig`). */
  get sessionConfig(): SessionConfig {
    return this.registry.sessionConfig
  }

  /** New session limits (a reload): for new sessions and the away ones (connected ones take them from `reloadMqtt`). */
  setSessionConfig(config: SessionConfig): void {
    this.registry.setSessionConfig(config)
  }

  /** MQTT 5.0 wills waiting for their Will Delay Interval. */
  get delayedWillCount(): number {
    return this.delayedWills.size
  }

  /** Messages dropped at a session's queue bounds (/varz mqtt.queue_dropped). */
  get queueDrops(): number {
    return this.registry.queueDrops
  }

  /**
   * What a persistent session whose client is away holds for it: messages, their bytes, and
   * how many of those bytes are in memory (stored messages wait in the store). Undefined when
   * the session is not away.
   */
  awayQueue(clientId: string, account: string = GLOBAL_ACCOUNT): { messages: number; bytes: number; bytesInMemory: number } | undefined {
    return this.registry.awayQueue(clientId, account)
  }

  /** The open connection of a client id in an account. */
  connectedClient(clientId: string, account: string = GLOBAL_ACCOUNT): MqttConnection | undefined {
    return this.registry.connected(clientId, account)
  }

  /** After a restart: every account that has MQTT state stored is opened and its sessions are away until their clients come. */
  openStoredAccounts(): Promise<void> {
    return this.registry.openStoredAccounts()
  }

  /** A new connection on the mqtt listener, or (`websocket`) on the websocket one. */
  accept(conn: Conn, listener: "mqtt" | "websocket" = "mqtt"): ConnHandlers {
    const now = this.server.now()
    const account = this.server.account(GLOBAL_ACCOUNT)
    const levels = listener === "mqtt" ? this.mqttLevels : this.websocketLevels
    const c = new MqttConnection(this.server, this.sessionConfig, this.server.allocateCid(), conn, account, now, this.held, this, levels)
    this.connections.set(c.cid, c)
    this.totalConnections++
    if (this.server.log.debugEnabled) this.server.log.debug(`${mqttLogPrefix(c)} - Client connection created`)
    // The CONNECT timeout: the session's first deadline, before it has stepped at all.
    const connectBy = c.session.nextDeadline()
    if (connectBy !== undefined) this.wakeAt(connectBy)
    c.parser.onPacket = (packet: ClientPacket) => {
      if (c.closed) return
      if (this.tracing) traceMqttIn(this.server.log, c, packet)
      if (packet.cmd === "publish") {
        // Every PUBLISH the client sent, routed or not (a QoS 2 resend is a duplicate).
        c.inMsgs++
        // The hot path: a QoS 0 PUBLISH the session routes as it is, without a step (on
        // MQTT 5.0 only one without properties: a Topic Alias is the session's to resolve).
        if (packet.qos === 0 && !packet.retain && (packet.properties === undefined || packet.properties === NO_PROPERTIES)) {
          const subject = c.session.publishQos0(packet.topic, c.readAt)
          if (subject !== undefined) return this.publish(c, subject, packet.payload, 0, undefined, c.readAt)
        }
      }
      this.input(c, { type: "packet", packet }, c.readAt)
    }
    c.parser.onError = (e: MalformedPacket) => {
      if (!c.closed) this.input(c, { type: "protocolError", reason: e.message, code: e.code }, c.readAt)
    }
    return {
      onData: (chunk) => {
        if (c.closed) return
        this.server.env.activity?.(chunk.length)
        const now = this.server.now()
        c.lastActivity = now
        c.inBytes += chunk.length
        // One clock reading serves every packet of the chunk (and what they route).
        c.readAt = now
        const buffered = c.parser.parse(chunk)
        this.accountPartial(c)
        // A packet announced (or buffered) past the limit is cut off before its bytes pile up.
        const announced = c.parser.announced
        if (!c.closed && (announced > this.maxPacketBytes || buffered > this.maxPacketBytes)) {
          const reason = `packet of ${Math.max(announced, buffered)} bytes over the limit of ${this.maxPacketBytes}`
          this.input(c, { type: "protocolError", reason, code: ReasonCode.PacketTooLarge }, now)
        }
      },
      onDrain: () => this.backlog.drained(c),
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

  /** Keep the totals of memory held by partial packets exact (a closed connection holds none). */
  private accountPartial(c: MqttConnection): void {
    const held = c.closed ? 0 : c.parser.held
    if (held === c.partialHeld) return
    this.partialBytes += held - c.partialHeld
    this.partialPackets += (held > 0 ? 1 : 0) - (c.partialHeld > 0 ? 1 : 0)
    c.partialHeld = held
  }

  /** Feed one input to a connection's session at `now` and carry out what it asks for (at the same time). */
  input(c: MqttConnection, input: SessionInput, now: number = this.server.now()): void {
    const actions = c.session.step(input, now)
    for (let i = 0; i < actions.length; i++) this.run(c, actions[i], now)
  }

  private run(c: MqttConnection, a: SessionAction, now: number): void {
    switch (a.type) {
      case "send":
        return this.send(c, a.packet)
      case "close":
        return this.close(c)
      case "publish":
        return this.publish(c, a.subject, a.payload, a.qos, a.confirm, now, a.reply === undefined && a.hdr === undefined && !a.retain ? undefined : { reply: a.reply, hdr: a.hdr, retain: a.retain })
      // The account's store is open from `sessionReady` on; before it, only a will can be
      // retained, which no session of the account could read yet: it is not kept.
      case "storeRetained": {
        const store = this.gate.storeOf(c.account.name)
        const props = a.reply === undefined && a.hdr === undefined ? undefined : { reply: a.reply, hdr: a.hdr, at: now }
        if (store === undefined) return
        store.setRetained(a.topic, a.subject, a.payload, a.qos, props)
        this.retainedExpiry.changed(store, a.topic)
        // Cluster-wide (retained-sync.ts).
        this.retainedSync.kept(c.account.name, a.topic, a.payload, a.qos, props, now)
        return
      }
      case "deleteRetained": {
        const store = this.gate.storeOf(c.account.name)
        if (store === undefined) return
        store.deleteRetained(a.topic, a.subject)
        this.retainedExpiry.changed(store, a.topic)
        this.retainedSync.removed(c.account.name, a.topic, now)
        return
      }
      case "accept":
        return this.onAccept(c, a.clientId, a.cleanSession, a.persistent)
      case "subscribe":
        return this.subscribe(c, a.filter, a.subjects, a.qos, a.queue)
      case "wantRetained": {
        const store = this.gate.storeOf(c.account.name)
        if (store !== undefined) this.retained.want(c, a.filter, store)
        return
      }
      case "unsubscribe":
        return this.unsubscribe(c, a.filter)
      case "persist":
        return this.persist(c, a.stream, a.key, a.record)
      case "persistSubscription": {
        // Written now; the SUBACK (or UNSUBACK) waits for the commit.
        const store = this.gate.persisted(c)
        if (store === undefined) return
        store.writeSubscription(c.session.clientId, a.filter, a.qos, a.options)
        return this.gate.hold(c, store)
      }
      case "fetch":
        return this.backlog.fetch(c, a.refs)
      case "ack":
      case "drop": {
        if (a.type === "drop" && a.reason === "queue_full") this.registry.queueDropped(c.session.clientId, c.account.name)
        if (a.type === "drop" && a.reason === "packet_too_large") this.tooLargeDrops++
        const store = this.gate.persisted(c)
        if (store !== undefined && typeof a.ref === "number") {
          store.unref(a.ref)
          this.gate.markLazy(c)
        }
        return
      }
      case "denied":
        return this.logDenied(c, a.op, a.topic)
      case "discardStored": {
        const store = this.gate.storeOf(c.account.name)
        store?.deleteSession(a.stored, a.stored.clientId)
        this.server.log.warn(
          `${mqttLogPrefix(c)} - session of user "${a.stored.owner ?? ""}" not resumed by user "${c.user}": discarded, a new session starts`
        )
        return
      }
      // The shell's alarm runs tick() by then (tick reads every session's nextDeadline()).
      case "deadline":
        return this.wakeAt(a.at)
      case "willDelayed": {
        const will = delayedWill(now + a.afterMs, a.actions)
        if (will === undefined) return
        this.delayedWills.set(`${c.account.name}\n${c.session.clientId}`, { account: c.account.name, clientId: c.session.clientId, will })
        return this.wakeAt(will.at)
      }
    }
  }

  /** Permission refusals are logged as the NATS ones are (nats-server's wording). */
  private logDenied(c: MqttConnection, op: "publish" | "subscribe" | "will", topic: string): void {
    const what = op === "subscribe" ? "Subscription Violation" : op === "will" ? "Will Publish Violation" : "Publish Violation"
    this.server.log.error(`${mqttLogPrefix(c)} - ${what} - User "${c.user}", Topic "${topic}"`)
  }

  /** QoS 2 state of a persistent session: written now, output held until durable. */
  private persist(c: MqttConnection, stream: string, key: string, record: unknown): void {
    const store = this.gate.persisted(c)
    if (store === undefined) return
    // The session record is rewritten in the same commit: a stale one would still list a
    // QoS 2 message whose PUBCOMP removed its $MQTT_out record, and a restart would resend
    // it as new (found by the simulator, seed 16).
    c.recordDirty = "now"
    if (stream !== "$MQTT_sess") {
      const packetId = Number(key.slice(key.lastIndexOf("/") + 1))
      store.qos2State(stream as "$MQTT_qos2in" | "$MQTT_out", c.session.clientId, packetId, record !== undefined)
    }
    this.gate.hold(c, store)
  }

  private send(c: MqttConnection, packet: ServerPacket): void {
    if (c.closed) return
    if (this.tracing) traceMqttOut(this.server.log, c, packet)
    if (packet.cmd === "publish") {
      c.outMsgs++
      this.gate.sending(c, packet.qos, packet.dup)
    }
    if (c.session.protocolVersion !== 5) c.outBytes += encodeInto(c.out, packet, this.held)
    else if (packet.cmd === "publish") {
      const p = packet.payload
      const buf = Buffer.isBuffer(p) ? p : Buffer.from(p.buffer, p.byteOffset, p.byteLength)
      const props = packet.properties === undefined ? undefined : encodeMessageProperties(packet.properties)
      this.head5(c, packet.topic, packet.qos, packet.retain, packet.dup, packet.messageId, props, packet.properties?.messageExpiryInterval, packet.properties?.subscriptionIdentifiers)
      c.outBytes += this.writePublish5(c, buf, 0, buf.length, this.held)
    } else c.outBytes += encodeIntoV5(c.out, packet, c.session.requestProblemInformation, c.session.clientMaximumPacketSize, this.held)
    this.gate.markDirty(c)
  }

  /** c's one PUBLISH head record, filled for a message by name (no Topic Alias yet). */
  private head5(
    c: MqttConnection,
    topic: string,
    qos: number,
    retain: boolean,
    dup: boolean,
    messageId: number | undefined,
    props: Buffer | undefined,
    expiry: number | undefined,
    ids: ReadonlyArray<number> | undefined
  ): MqttConnection["head5"] {
    const head = c.head5
    head.topic = topic
    head.topicAlias = 0
    head.qos = qos
    head.retain = retain
    head.dup = dup
    head.messageId = messageId
    head.messageProperties = props
    // Seconds left to live: encoded per delivery, not with the message's other properties.
    head.messageExpiryInterval = expiry ?? -1
    head.subscriptionIdentifiers = ids
    return head
  }

  /**
   * An MQTT 5.0 PUBLISH of src[start, end) into c's output, with the head `head5` filled:
   * the topic by a Topic Alias when the client takes them and it pays
   * (`OutboundTopicAliases`), else by name (also when the aliased form would not fit the
   * client's Maximum Packet Size, which the session checked by name). No packet object.
   */
  private writePublish5(c: MqttConnection, src: Buffer, start: number, end: number, pin?: HeldPayloads): number {
    const head = c.head5
    const topic = head.topic
    const max = c.session.clientTopicAliasMaximum
    if (max > 0) {
      const aliases = (c.aliases5 ??= new OutboundTopicAliases(max))
      const choice = aliases.choose(topic)
      if (choice.topicAlias !== 0) {
        head.topic = choice.topic
        head.topicAlias = choice.topicAlias
        if (publishSize(head, end - start) <= c.session.clientMaximumPacketSize) aliases.commit(topic, choice)
        else {
          head.topic = topic
          head.topicAlias = 0
        }
      }
    }
    return encodePublishRangeV5(c.out, head, src, start, end, pin)
  }

  // ---- MqttDriver: the Outbound's flush (through the commit gate), and a connection cut off ----

  holdsOutput(c: MqttConnection): boolean {
    return this.gate.holdsOutput(c)
  }

  awaitCommit(c: MqttConnection, bufs: Array<Buffer>): void {
    this.gate.awaitCommit(c, bufs)
  }

  written(c: MqttConnection, queued: number): void {
    this.backlog.written(c, queued)
  }

  /** A subscriber that does not read is cut off at max_pending, as NATS clients are; its will goes out. */
  cutOff(c: MqttConnection): void {
    this.input(c, { type: "connectionLost" })
  }

  /** The last words of a closing connection: to the socket now, without waiting for the flush. */
  private writeLast(c: MqttConnection): void {
    if (c.out.length > 0) {
      c.lastActivity = this.server.now()
      c.unannounced = false
    }
    this.server.outbound.flushNow(c)
  }

  // ---- a CONNECT accepted: the client id taken (over), the account's store open, the session resumed ----

  private onAccept(c: MqttConnection, clientId: string, clean: boolean, persistent: boolean): void {
    const claim = this.registry.claim(c, clientId, this.server.now())
    if (claim.kind === "flapping") {
      // Two clients fighting over one id would take it from each other forever: past the
      // limit the newcomer is turned away (CONNACK 3, "try later") and the connected one stays.
      this.server.log.warn(`MQTT client id "${clientId}" is flapping between connections: refusing the new one`)
      return this.input(c, { type: "refused", code: 3 })
    }
    if (claim.kind === "takeover") {
      // The older connection is closed (its will goes out) [MQTT-3.1.4-2].
      this.server.log.warn(`${mqttLogPrefix(c, clientId)} - Replacing the connection of the same client id (mid:${claim.older.cid})`)
      this.input(claim.older, { type: "takenOver" })
    }
    this.registry.register(c, clientId)
    // The other servers close a connection they hold with this client id (a server
    // without routes or leaf connections has nobody to tell).
    c.claimedAt = this.server.now()
    if (this.server.cluster !== undefined || this.server.leafnodes !== undefined) this.owners.announce(c.account.name, clientId, c.claimedAt)
    const key = `${c.account.name}\n${clientId}`
    const will = this.delayedWills.get(key)
    if (will !== undefined) {
      // A new connection to the session cancels a delayed will [MQTT-3.1.3-9]; Clean Start
      // ends that session instead, and its will goes out now, as does one already due (its
      // time came, or its session ended, before the alarm ran: after a long restart).
      this.delayedWills.delete(key)
      const now = this.server.now()
      if (clean || will.will.at <= now) this.runDelayedWill(will, now)
      else this.registry.willSent(will.account, will.clientId)
    }
    const ready = this.gate.storeOf(c.account.name)
    if (ready !== undefined) return this.sessionReady(c, clean, persistent, ready)
    // First client of the account since start: its store is opened (streams created) first.
    this.registry.openAccount(c.account.name).then((store) => {
      if (!c.closed && this.registry.holds(c)) this.sessionReady(c, clean, persistent, store)
    })
  }

  /**
   * `clean`: Clean Session / Clean Start, the stored session is discarded; `persistent`:
   * this one outlives the connection (on 3.1.1 the one is the other's opposite; an MQTT 5.0
   * client may resume a session it then lets end, or start afresh one that lasts).
   */
  private sessionReady(c: MqttConnection, clean: boolean, persistent: boolean, store: MqttAccountStore): void {
    const stored = this.registry.resume(c.account.name, c.session.clientId)
    const owner = c.user
    if (clean) {
      // A clean session discards what was stored under the id [MQTT-3.1.2-6].
      if (stored !== undefined) store.deleteSession(stored, c.session.clientId)
      this.input(c, { type: "sessionReady", stored: undefined, owner })
      return
    }
    // A new session's CONNACK (session present 0) waits for its record's commit: until it
    // is written, the client has not heard of the session (see `finish`).
    c.unannounced = stored === undefined
    this.input(c, { type: "sessionReady", stored, owner })
    // The resumed session resends what is unacknowledged at once [MQTT-4.4.0-1]: that burst
    // (bounded by the in-flight window) may exceed max_pending without the client being slow;
    // cut for it, a client with a backlog would reconnect into the same cut forever.
    if (stored !== undefined) c.pendingAllowance += c.out.length
    if (!c.closed && persistent) {
      c.recordDirty = "now"
      this.gate.hold(c, store)
    }
  }

  // ---- publishing: stored first when a persistent session will hold it, then routed, then confirmed ----

  private publish(c: MqttConnection, subject: string, payload: Uint8Array, qos: QoS, confirm: number | undefined, now: number, extra?: RouteExtra): void {
    const buf = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)
    const store = qos > 0 ? this.gate.storeOf(c.account.name) : undefined
    const later = c.deferred > 0 || (qos === 2 && confirm !== undefined && store?.durable === true)
    // A persistent session's QoS 2 PUBLISH: its de-duplication record goes to disk with it.
    const dedup = qos === 2 && confirm !== undefined ? this.gate.persisted(c) : undefined
    let ref: number | undefined
    if (store !== undefined && store.durable && this.heldDurably(c.account, subject)) {
      // Kept until every persistent session it is routed to has it acknowledged.
      const inbound = dedup === undefined ? undefined : { clientId: c.session.clientId, packetId: confirm! }
      const props = extra === undefined || (extra.hdr === undefined && extra.reply === undefined) ? undefined : { reply: extra.reply, hdr: extra.hdr, at: now }
      const r = store.storeMessage(subject, payload, qos, later, inbound, props)
      if (typeof r === "object") {
        this.server.log.error(`MQTT client "${c.session.clientId}": message on '${subject}' could not be stored: ${r.detail}`)
        if (confirm === undefined) {
          // QoS 0 is not acknowledged: routed without its stored copy, as before.
        } else if (c.session.protocolVersion === 5 && STORAGE_LIMITS.has(r.reason)) {
          // MQTT 5.0 can say so: PUBACK/PUBREC 0x97 Quota exceeded, the message not routed; the client stays.
          return this.input(c, { type: "published", packetId: confirm, code: ReasonCode.QuotaExceeded }, now)
        } else return this.gate.storeFailed(c)
      } else ref = r
    }
    if (dedup !== undefined) {
      // After its stored copy, which it names (see MqttAccountStore.qos2State); the session
      // record is rewritten in the same commit, as for every QoS 2 state change.
      dedup.qos2State("$MQTT_qos2in", c.session.clientId, confirm!, true, ref)
      c.recordDirty = "now"
      this.gate.hold(c, dedup)
    }
    if (later) return this.gate.defer(c, subject, buf, qos, ref, confirm, extra)
    if (qos === 2 && confirm !== undefined && c.session.protocolVersion !== 5) {
      // Without a durable store the PUBREC has nothing to wait for: it goes first, then the copies.
      if (!c.closed) this.input(c, { type: "published", packetId: confirm }, now)
      this.route(c, subject, buf, qos, ref, now, extra)
      return
    }
    // (An MQTT 5.0 PUBREC says whether the message matched anyone, 0x10 if not: it follows the routing, as a PUBACK does.)
    const receivers = this.route(c, subject, buf, qos, ref, now, extra)
    if (confirm === undefined || c.closed) return
    this.gate.confirm(c, confirm, store, ref, now, receivers === 0)
  }

  /**
   * Route a message from `c` through the engine, with its QoS and stored copy (`ref`) for
   * the MQTT subscribers; an MQTT 5.0 PUBLISH with its reply subject and header block
   * (`extra`: the headers go in front of the payload, as a NATS HPUB carries them).
   */
  route(c: Principal, subject: string, buf: Buffer, qos: QoS, ref: number | undefined, now: number, extra?: RouteExtra): number {
    const router = this.server.router
    const d = router.message(c, now)
    d.subject = subject
    d.reply = extra?.reply ?? ""
    const hdr = extra?.hdr
    d.hdrLen = hdr === undefined ? -1 : hdr.length
    d.buf = hdr === undefined ? buf : Buffer.concat([hdr, buf])
    d.start = 0
    d.end = d.buf.length
    d.origin.qos = qos
    d.origin.ref = ref
    d.origin.retain = extra?.retain === true
    if (extra?.reply !== undefined && extra.reply.startsWith(RESPONSE_SUBJECT_PREFIX)) this.answersFor(c.account.name)
    const receivers = router.route(d)
    if (ref === undefined) return receivers
    const store = this.gate.storeOf(c.account.name)
    store?.routed(ref)
    store?.releaseIfUnheld(ref)
    return receivers
  }

  /**
   * The account's listener on `$MQTT.rr.>`, made the first time an MQTT 5.0 request
   * carries its Correlation Data in its reply subject: an answer published there goes
   * on to the Response Topic with that Correlation Data (`Mqtt-Correlation-Data`), so
   * MQTT and NATS subscribers of the topic see it.
   */
  private answersFor(account: string): void {
    if (this.answering.has(account)) return
    this.answering.add(account)
    const router = this.server.router
    router.subscribe(this.answerer(account), `${RESPONSE_SUBJECT_PREFIX}>`, undefined, (m: Delivery) => this.answer(account, m))
  }

  private answer(account: string, m: Delivery): void {
    const rr = parseResponseSubject(m.subject)
    if (rr === undefined) return
    const subject = topicToSubject(rr.responseTopic)
    if (!subject.ok || subject.value.startsWith(RESPONSE_SUBJECT_PREFIX)) return
    // Only where the one who answered may publish: `$MQTT.rr.` is no way around permissions.
    const from = m.origin.publisher
    if (from?.perms !== undefined && !from.perms.canPublish(subject.value, this.server)) return
    const before = m.hdrLen > 0 ? parseHeaderBlock(m.buf.subarray(m.start, m.start + m.hdrLen)).headers : []
    const hdr = headerBlock([...before.filter(([k]) => k.toLowerCase() !== "mqtt-correlation-data"), [NatsHeader.correlationData, rr.correlationData.toString("base64")]])!
    const router = this.server.router
    const d = router.message(this.answerers.get(account)!, m.now)
    d.subject = subject.value
    d.reply = m.reply
    d.hdrLen = hdr.length
    d.buf = Buffer.concat([hdr, m.buf.subarray(m.payloadStart, m.end)])
    d.start = 0
    d.end = d.buf.length
    router.route(d)
  }

  private answerer(account: string): InternalPrincipal {
    const p = this.server.router.internal(account, "mqtt-responses")
    this.answerers.set(account, p)
    return p
  }

  /**
   * Whether a persistent session (connected, or away and still subscribed) would take a
   * QoS 1/2 message on `subject`: then it is stored before routing, so that it survives
   * a restart until acknowledged. Nothing else needs it on disk: a clean session's
   * messages end with its connection, restart or not.
   */
  private heldDurably(account: Account, subject: string): boolean {
    const psubs = account.sublist.match(subject).psubs
    for (let i = 0; i < psubs.length; i++) if (psubs[i].holdsMessages && !psubs[i].closed) return true
    return false
  }

  // ---- subscriptions and deliveries ----

  private subscribe(c: MqttConnection, filter: string, subjects: ReadonlyArray<string>, qos: QoS, queue?: string): void {
    this.unsubscribe(c, filter)
    const list: Array<Subscription> = []
    const holds = qos > 0 && !c.session.cleanSession
    for (const subject of subjects) {
      // A Shared Subscription joins its queue group: one member of G (MQTT or NATS) takes each message.
      const sub = this.server.router.subscribe(c, subject, queue)
      sub.holdsMessages = holds
      list.push(sub)
    }
    c.filters.set(filter, list)
  }

  private unsubscribe(c: MqttConnection, filter: string): void {
    const list = c.filters.get(filter)
    if (list === undefined) return
    c.filters.delete(filter)
    for (const s of list) s.principal.removeSub(s)
  }

  /** A message routed to one of `c`'s subscriptions (the router checked permissions and that it is open). */
  deliver(c: MqttConnection, d: Delivery): void {
    // Several subscriptions of one session can match one message: deliver it once.
    if (c.lastSeq === d.seq) return
    c.lastSeq = d.seq
    const { subject, buf, end } = d
    const from = d.payloadStart
    const qos = d.origin.qos
    // The hot path: a message that goes out at QoS 0 is written without a session step.
    const local = d.origin.publisher === c
    const topic = c.session.deliverQos0(subject, qos, local)
    if (topic === null) return
    // MQTT 5.0: what the message's headers and reply subject make of it, once per routed message.
    const v5 = c.session.protocolVersion === 5 && (d.hdrLen > 0 || d.reply !== "") ? this.propertiesOf(d) : undefined
    if (v5 === null) return
    if (topic !== undefined) {
      if (c.closed) return
      if (c.session.protocolVersion === 5) return this.deliverQos0V5(c, topic, buf, from, end, v5?.bytes, v5?.properties.messageExpiryInterval, c.session.deliveryRetain(d.origin.retain))
      if (this.tracing) traceMqttOutQos0(this.server.log, c, topic, end - from)
      c.outMsgs++
      c.outBytes += encodePublishRange(c.out, topic, buf, from, end, 0, false, false, undefined)
      this.gate.markDirty(c)
      return
    }
    const ref = d.origin.ref
    const store = ref === undefined ? undefined : this.gate.persisted(c)
    const taken = c.session.storedTaken
    // Held until acknowledged: a copy in a reusable slab, not a view pinning the read chunk.
    const payload = this.held.hold(buf, from, end)
    this.input(c, { type: "deliver", subject, payload, qos, ref, properties: v5?.properties, local, retain: d.origin.retain }, d.now)
    // A persistent session that took the stored message holds it until acknowledged or
    // dropped (taking it may have pushed the oldest waiting one out: the count of pending
    // messages would not tell).
    if (store !== undefined && c.session.storedTaken !== taken) store.ref(ref!)
  }

  /**
   * The MQTT 5.0 message properties of a routed message with headers or a reply subject
   * (`natsToPublish`), and their bytes, encoded once for all its deliveries (cached by its
   * `seq`); null for a status message (a 503 no-responders answer), which is not delivered.
   */
  private propertiesOf(d: Delivery): { readonly properties: MessageProperties; readonly bytes: Buffer | undefined } | null {
    if (this.propsSeq === d.seq) return this.props
    const hdr = d.hdrLen > 0 ? d.buf.subarray(d.start, d.start + d.hdrLen) : undefined
    const from = natsToPublish(d.subject, d.reply === "" ? undefined : d.reply, hdr)
    this.propsSeq = d.seq
    this.props = from.status !== undefined ? null : { properties: from.properties, bytes: encodeMessageProperties(from.properties) }
    return this.props
  }

  /** The QoS 0 fast path of an MQTT 5.0 connection: within the client's Maximum Packet Size, aliased where it pays. */
  private deliverQos0V5(c: MqttConnection, topic: string, buf: Buffer, from: number, end: number, props: Buffer | undefined, expiry: number | undefined, retain: boolean): void {
    const s = c.session
    // Nothing per delivery to add (no properties, Topic Aliases or Subscription Identifiers)
    // and surely within the client's Maximum Packet Size (a topic is at most 3 bytes a
    // character): the 3.1.1 PUBLISH with an empty property block.
    if (props === undefined && expiry === undefined && s.deliveryIdentifiers === undefined && s.clientTopicAliasMaximum === 0 &&
      end - from + 3 * topic.length + 8 <= s.clientMaximumPacketSize) {
      if (this.tracing) traceMqttOutQos0(this.server.log, c, topic, end - from)
      c.outMsgs++
      c.outBytes += encodePublishRange(c.out, topic, buf, from, end, 0, retain, false, undefined, undefined, true)
      this.gate.markDirty(c)
      return
    }
    const head = this.head5(c, topic, 0, retain, false, undefined, props, expiry, c.session.deliveryIdentifiers)
    // Larger than the client takes: discarded as if sent [MQTT-3.1.2-25], counted.
    if (publishSize(head, end - from) > c.session.clientMaximumPacketSize) {
      this.tooLargeDrops++
      return
    }
    if (this.tracing) traceMqttOutQos0(this.server.log, c, topic, end - from)
    c.outMsgs++
    c.outBytes += this.writePublish5(c, buf, from, end)
    this.gate.markDirty(c)
  }

  // ---- a connection's end ----

  /** The session ended: flush what it said last (CONNACK refusal, …), then end the socket. */
  private close(c: MqttConnection): void {
    if (c.closed) return
    c.closed = true
    // Output waiting for a commit (or held for this turn's) is not said: the connection ends first.
    if (c.awaiting === 0 && !c.held) this.writeLast(c)
    c.conn.end()
    this.finish(c)
  }

  /** Forget a connection once: routing entries, the client id (a persistent session goes away), and a /connz closed record. */
  private finish(c: MqttConnection): void {
    if (!this.connections.delete(c.cid)) return
    c.closed = true
    this.accountPartial(c)
    const record = closedRecord(c, this.server.now())
    if (this.server.log.debugEnabled) this.server.log.debug(`${mqttLogPrefix(c)} - Client connection closed: ${record.reason}`)
    this.server.closed.push(record)
    for (const list of c.filters.values()) for (const s of list) s.principal.removeSub(s)
    c.filters.clear()
    // What it had not said yet (output held for a commit) is never said: the flush skips it.
    c.out.clear()
    if (!this.registry.holds(c)) return
    let snap: SessionSnapshot | undefined
    if (c.session.endsStored && c.session.isReady) {
      // It was kept in the store (persistent once, or resumed), and ends now: removed there too.
      this.gate.storeOf(c.account.name)?.deleteSession(c.session.snapshot(), c.session.clientId)
      this.store.commit(() => {})
    }
    if (!c.session.cleanSession && c.session.isReady) {
      snap = c.session.snapshot()
      // MQTT 5.0: kept for its Session Expiry Interval from now, restarts included.
      if (snap.expiryInterval !== undefined) snap = { ...snap, endsAt: sessionEndsAt(this.server.now(), snap.expiryInterval) }
      // Its delayed will waits with it, restarts included.
      const will = this.delayedWills.get(`${c.account.name}\n${c.session.clientId}`)?.will
      if (will !== undefined) snap = { ...snap, will }
      const store = this.gate.storeOf(c.account.name)
      if (c.unannounced && c.session.closeReason !== CloseReason.ClientClosed) {
        // A session the client was never told of (its CONNACK not written: a failed commit
        // cut the connection, or the connection was lost first) is not kept: kept, the next
        // CONNECT would hear "session present" and trust subscriptions it never had confirmed
        // (found by the simulator, seeds 1619657144, 8, 72158729). One the client ended with
        // DISCONNECT without waiting for the CONNACK is kept: it chose not to hear it.
        store?.deleteSession(snap, c.session.clientId)
        if (store?.durable === true) this.store.commit(() => {})
        snap = undefined
      } else if (store?.durable === true) {
        store.writeSession(snap)
        this.store.commit(() => {})
      }
    }
    this.registry.release(c, snap)
  }

  /**
   * Wake sessions whose deadline (keepalive, redelivery) has come; rewrite stale session
   * records. Returns when a session next needs it (undefined: none does).
   */
  tick(now: number): number | undefined {
    const expired = this.registry.expire(now)
    const retained = this.retainedExpiry.tick(now)
    let wrote = expired.wrote || retained.removed
    let next = Math.min(expired.next ?? Infinity, retained.next ?? Infinity)
    for (const [key, will] of [...this.delayedWills]) {
      if (will.will.at > now) {
        next = Math.min(next, will.will.at)
        continue
      }
      this.delayedWills.delete(key)
      this.runDelayedWill(will, now)
    }
    for (const c of [...this.connections.values()]) {
      const at = c.session.nextDeadline()
      if (at !== undefined && at <= now && !c.closed) this.input(c, { type: "tick" })
      if (c.recordDirty === "lazy" && !c.closed) {
        this.gate.writeRecord(c)
        wrote = true
      }
      const after = c.closed ? undefined : c.session.nextDeadline()
      if (after !== undefined) next = Math.min(next, after)
    }
    if (wrote) this.store.commit(() => {})
    return next === Infinity ? undefined : next
  }

  /**
   * A delayed will's time has come (or its session ended): published for the session by
   * the server (its connection is gone, perhaps since before a restart), as that connection
   * would have: retained copy, stored copy for persistent sessions, routed.
   */
  private runDelayedWill(entry: { readonly account: string; readonly clientId: string; readonly will: DelayedWill }, now: number): void {
    const { account, will } = entry
    this.registry.willSent(account, entry.clientId)
    const store = this.gate.storeOf(account)
    const props = will.reply === undefined && will.hdr === undefined ? undefined : { reply: will.reply, hdr: will.hdr, at: now }
    if (will.retain && store !== undefined) {
      if (will.payload.length === 0) store.deleteRetained(will.topic, will.subject)
      else store.setRetained(will.topic, will.subject, will.payload, will.qos, props)
      this.retainedExpiry.changed(store, will.topic)
      if (will.payload.length === 0) this.retainedSync.removed(account, will.topic, now)
      else this.retainedSync.kept(account, will.topic, will.payload, will.qos, props, now)
    }
    const from = this.registry.internal(account)
    const buf = Buffer.from(will.payload.buffer, will.payload.byteOffset, will.payload.byteLength)
    let ref: number | undefined
    if (will.qos > 0 && store?.durable === true && this.heldDurably(from.account, will.subject)) {
      const r = store.storeMessage(will.subject, buf, will.qos, false, undefined, props)
      if (typeof r === "number") ref = r
      else if (r !== undefined) this.server.log.error(`MQTT client "${entry.clientId}": will on '${will.subject}' could not be stored: ${r.detail}`)
    }
    this.route(from, will.subject, buf, will.qos, ref, now, { reply: will.reply, hdr: will.hdr, retain: will.retain })
    if (store?.durable === true) this.store.commit(() => {})
  }

  /** Close one connection as the server stops (lame duck mode, shutdown): no will, its session kept. */
  closeForShutdown(c: MqttConnection): void {
    if (c.closed) return
    // MQTT 5.0 clients are told why [MQTT-4.13.1-1].
    if (c.session.protocolVersion === 5 && c.session.isConnected) {
      this.send(c, { cmd: "disconnect", reasonCode: ReasonCode.ServerShuttingDown, properties: { reasonString: "server shutting down" } })
    }
    c.closed = true
    c.reasonOverride ??= ClosedReason.ServerShutdown
    if (c.awaiting === 0) this.writeLast(c)
    c.conn.end()
    this.finish(c)
  }

  /** Server shutdown: close every connection without publishing wills; stored state is synced. */
  shutdown(): Promise<void> {
    for (const c of [...this.connections.values()]) this.closeForShutdown(c)
    return new Promise((resolve) => this.store.commit(() => resolve()))
  }
}
