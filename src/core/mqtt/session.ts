// One MQTT 3.1.1 client connection and its session as a sans-IO state machine:
// `step(input, now)` returns actions as plain data, `nextDeadline()` says when to
// `tick`. Authentication, permissions and randomness are injected; the clock is `now`.
//
// Overlapping subscriptions: the shell inputs each routed message once per session;
// the session delivers it once, at the highest QoS granted by any matching filter
// (capped by the message's QoS, `bestGrant`) — what nats-server does, and allowed by
// MQTT-3.3.5-1. A persistent session outlives its connection in the `away` phase.
import { AckOrder, bestGrant, type Grant, type InboundAck, InQos2, type OutFlight, OutWindow, type Queued } from "./qos.js"
import {
  subjectToTopic,
  subscriptionSubjects,
  topicMatchesFilter,
  topicToSubject,
  validateTopicName
} from "./topic.js"
import { acceptConnect, connectRefusal, type ServerLimits } from "./v5/connect.js"
import { sessionHash } from "./record.js"
import { InboundTopicAliases } from "./v5/alias.js"
import { forwardedExpiry, SESSION_NEVER_EXPIRES, sessionExpiry, sessionExpiryOnDisconnect, willSurvives } from "./v5/expiry.js"
import { PacketError } from "./v5/reader.js"
import { encodeMessageProperties, publishSize, type PublishHead } from "./v5/encode.js"
import { headerBlock, publishToNats } from "./v5/nats.js"
import { DEFAULT_RECEIVE_MAXIMUM, InboundQuota } from "./v5/flow.js"
import { ReasonCode } from "./v5/reason.js"
import { natsSubscription, sendsRetained } from "./v5/subscription.js"
import { payloadMatchesFormat } from "./v5/information.js"
import { type Connect, type MessageProperties, NO_PROPERTIES, type Properties } from "./v5/types.js"
import {
  type ClientPacket,
  ConnackCode,
  type ConnectPacket,
  type PublishPacket,
  type QoS,
  type SessionAction,
  type SessionInput,
  type SessionSnapshot,
  type StoredProperties,
  type DelayedWill,
  SUBACK_FAILURE,
  type SubscriptionRequest,
  type Will
} from "./types.js"

export interface SessionConfig {
  /** Redelivery of an unacknowledged QoS 1/2 message (mqtt.ack_wait, default 30s). */
  readonly ackWaitMs: number
  /** Unacknowledged QoS 1/2 messages in flight (mqtt.max_ack_pending, default 1024). */
  readonly maxAckPending: number
  /**
   * Messages waiting for a free slot (mqtt.max_queued_messages); beyond it the oldest
   * gives way (`drop` action, reason `queue_full`).
   */
  readonly maxQueued: number
  /** Their payload bytes (mqtt.max_queued_bytes; 0: no bound), same policy. */
  readonly maxQueuedBytes?: number | undefined
  /** Packets a client may send after CONNECT before the session is ready. */
  readonly maxEarlyPackets: number
  /** Close a connection that sends no CONNECT within this time (none when undefined). */
  readonly connectTimeoutMs?: number | undefined
  /**
   * A stored message (numeric ref) whose payload is larger than this is not kept in
   * memory once sent: a resend reads it back from the store (`fetch`). The window then
   * costs memory in proportion to its count, not to the sizes of its messages (undefined:
   * every payload stays until acknowledged). The shell must not need the payload back
   * after the send action (it is not `released`: the shell's own write keeps it alive).
   */
  readonly keepSentPayloadMax?: number | undefined
  /** What the server announces to MQTT 5.0 clients in CONNACK (and holds them to). */
  readonly v5?: ServerLimits | undefined
}

export const defaultSessionConfig: SessionConfig = {
  ackWaitMs: 30_000,
  maxAckPending: 1024,
  maxQueued: 65_536,
  maxEarlyPackets: 1024
}

export type AuthResult =
  | typeof ConnackCode.Accepted
  | typeof ConnackCode.BadUsernameOrPassword
  | typeof ConnackCode.NotAuthorized

export interface SessionDeps {
  /**
   * `n` unguessable bytes, for server-assigned client ids (the server's Entropy: the OS's
   * CSPRNG in production, drawn from the seed in a simulation).
   */
  readonly randomBytes: (n: number) => Uint8Array
  readonly authenticate?: (connect: ConnectPacket) => AuthResult
  /** Whether the client may hold the subscription `filter`; `shared`: a `$share/G/…` filter made as a Shared Subscription (its inner filter is what is checked), else the filter as it is. */
  readonly canSubscribe?: (filter: string, shared: boolean) => boolean
  /**
   * Whether the client may receive a message on the literal `subject` (its subscribe
   * permissions, deny included). Live messages are filtered by the router; this is asked
   * of the ones the session sends on its own: retained messages on SUBSCRIBE and the
   * stored messages of a resumed session.
   */
  readonly canReceive?: (subject: string) => boolean
  /** Whether the client may publish to `topic` (translated to `subject`); asked of the will too. */
  readonly canPublish?: (topic: string, subject: string) => boolean
  /**
   * An acknowledgement took an outbound message out of the window (PUBACK, PUBCOMP): the
   * session never reads its payload again. Called once per message.
   */
  readonly released?: (payload: Uint8Array) => void
}

/**
 * Whether `owner` may resume the stored session: only the user that created it. A session
 * stored before owners were kept goes to the first user of its account to resume it, with
 * only what that user's permissions allow (see `restore`).
 */
export const mayResume = (stored: SessionSnapshot, owner: string | undefined): boolean =>
  stored.owner === undefined || stored.owner === (owner ?? "")

/** The highest QoS the server grants. */
export const MAX_QOS: QoS = 2

const ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** The bytes below this are taken (`byte % 62` is then uniform); the others are drawn again. */
const ID_BYTE_LIMIT = 256 - (256 % ID_ALPHABET.length)

/**
 * A server-assigned client id [MQTT-3.1.3-6]: 22 characters of [0-9A-Za-z] (about 131
 * bits), each from one unbiased byte of `randomBytes`. Unguessable: another client cannot
 * name it to take the connection over.
 */
export const assignClientId = (randomBytes: (n: number) => Uint8Array): string => {
  let id = ""
  while (id.length < 22) {
    const b = randomBytes(32)
    for (let i = 0; i < b.length && id.length < 22; i++) if (b[i] < ID_BYTE_LIMIT) id += ID_ALPHABET[b[i] % ID_ALPHABET.length]
  }
  return id
}

/** The MQTT 5.0 CONNACK reason code of each 3.1.1 refusal code. */
const V5_CONNACK: Readonly<Record<number, number>> = {
  [ConnackCode.UnacceptableProtocolVersion]: ReasonCode.UnsupportedProtocolVersion,
  [ConnackCode.IdentifierRejected]: ReasonCode.ClientIdentifierNotValid,
  [ConnackCode.ServerUnavailable]: ReasonCode.ServerUnavailable,
  [ConnackCode.BadUsernameOrPassword]: ReasonCode.BadUserNameOrPassword,
  [ConnackCode.NotAuthorized]: ReasonCode.NotAuthorized
}

/** The Reason String of a PUBACK/PUBREC that refuses a PUBLISH, by reason code. */
const REFUSED_PUBLISH: Readonly<Record<number, string>> = {
  [ReasonCode.NotAuthorized]: "not authorized to publish to this topic",
  [ReasonCode.ImplementationSpecificError]: "the Response Topic cannot be a NATS reply subject",
  [ReasonCode.TopicNameInvalid]: "the Response Topic is not a valid topic name",
  [ReasonCode.PayloadFormatInvalid]: "the payload is not UTF-8 though its Payload Format Indicator says so",
  [ReasonCode.QuotaExceeded]: "a storage limit refused the message"
}

/**
 * The level a client's Response Information ends with: its Client Identifier when that is
 * a plain word (a valid topic level and NATS token), else a hash of it.
 */
export const responseLevel = (clientId: string): string =>
  /^[A-Za-z0-9_-]{1,64}$/.test(clientId) ? clientId : sessionHash(clientId)

/** The Prefix of a Shared Subscription's filter (4.8.2). */
const SHARE_PREFIX = "$share/"

export const CloseReason = {
  ClientClosed: "Client Closed",
  DuplicateClientId: "Duplicate Client ID",
  KeepaliveTimeout: "Keepalive Timeout",
  ConnectTimeout: "Connect Timeout",
  ConnectionLost: "Connection Lost",
  ConnackRefused: "Connection Refused",
  ProtocolViolation: "Protocol Violation",
  AuthenticationFailure: "Authentication Failure"
} as const

/**
 * `awaitConnect` -> `connecting` (CONNECT accepted, the shell loads the stored session) ->
 * `connected` -> `closed`. `away`: a persistent session whose client is not connected (see
 * `MqttSession.away`); it is made from a snapshot and ends when a connection resumes it.
 */
type Phase = "awaitConnect" | "connecting" | "connected" | "away" | "closed"

interface Subscription extends Grant {
  readonly qos: QoS
  /** MQTT 5.0 Shared Subscription (`$share/G/filter`): the NATS queue group `G`. */
  readonly queue?: string | undefined
  /** MQTT 5.0 No Local: not for messages this connection published [MQTT-3.8.3-3]. */
  readonly noLocal?: boolean | undefined
  /** MQTT 5.0 Subscription Identifier, sent with what the subscription delivers [MQTT-3.3.4-3]. */
  readonly id?: number | undefined
  /** MQTT 5.0 Retain As Published: what it forwards keeps the RETAIN flag it was published with [MQTT-3.3.1-13]. */
  readonly rap?: boolean | undefined
  /** MQTT 5.0: made as a Shared Subscription (`$share/G/…` read as shared; a 3.1.1 one is a literal filter). */
  readonly shared?: boolean | undefined
}

/**
 * What a topic filter subscribes to on NATS: its subjects, and for a Shared Subscription
 * (`$share/G/filter`, MQTT 5.0; `shared` false reads it as a plain filter, as 3.1.1 does)
 * the queue group `G` [4.8.2].
 */
export const filterSubscription = (filter: string, shared: boolean): { ok: true; subjects: ReadonlyArray<string>; queue: string | undefined } | { ok: false } => {
  if (shared && filter.startsWith(SHARE_PREFIX)) {
    const n = natsSubscription(filter)
    return n.ok ? { ok: true, subjects: n.subjects, queue: n.queue } : { ok: false }
  }
  const subjects = subscriptionSubjects(filter)
  return subjects.ok ? { ok: true, subjects: subjects.value, queue: undefined } : { ok: false }
}

const minQos = (a: number, b: number): QoS => Math.min(a, b) as QoS

export class MqttSession {
  private phase: Phase = "awaitConnect"
  /** The protocol level of the connection: 5 from a CONNECT the v5 decoder read. */
  private versionValue: 4 | 5 = 4
  /** A level-4 CONNECT is refused with CONNACK 1 (a listener with `protocol_versions: [5]`). */
  refuseLevel4 = false
  /** MQTT 5.0: the CONNECT, kept until its CONNACK is built. */
  private connect5: Connect | undefined
  /** MQTT 5.0: whether the client wants Reason Strings on packets other than CONNACK, PUBLISH and DISCONNECT. */
  private problemInformation = true
  /** MQTT 5.0: the Session Expiry Interval in force (seconds; 0: the session ends with the connection). */
  private expiryInterval = 0
  /** An away session's end (from its snapshot), kept for its next snapshot. */
  private endsAtValue: number | undefined
  /** MQTT 5.0: the client's Topic Aliases (none accepted while the server announces no Topic Alias Maximum). */
  private inboundAliases: InboundTopicAliases | undefined
  /** MQTT 5.0: the QoS 1/2 PUBLISHes the client has in flight, within the server's Receive Maximum. */
  private inboundQuota: InboundQuota | undefined
  /** MQTT 5.0: the client's limits on what the server sends (from its CONNECT). */
  private clientReceiveMaximum = DEFAULT_RECEIVE_MAXIMUM
  private clientMaxPacket = Number.POSITIVE_INFINITY
  private clientAliasMax = 0
  /** For `tooLarge`: one record reused. */
  private sizeHead: { -readonly [K in keyof PublishHead]: PublishHead[K] } | undefined
  /** MQTT 5.0: the reason codes of PUBACKs/PUBRECs other than Success (refusals, 0x10) that wait their turn, by packet id. */
  private refusedAcks: Map<number, number> | undefined
  /** Clean Start (3.1.1: Clean Session): a stored session is discarded, not resumed. */
  private discardStored = true
  /** Whether this session was ever kept in the store (persistent, or resumed): its end then removes it there. */
  private storedValue = false
  private readyValue = false
  private clientIdValue = ""
  private clean = true
  /**
   * The user the connection authenticated as (from `sessionReady`; "" without auth): the owner
   * of what it stores. Undefined only in an away session stored before owners were kept.
   */
  private owner: string | undefined = ""
  private keepaliveMs = 0
  private lastActivity: number
  private readonly openedAt: number
  private will: Will | undefined
  private readonly subs = new Map<string, Subscription>()
  private readonly out: OutWindow
  private readonly inQos2 = new InQos2(65535)
  private readonly acks = new AckOrder()
  /** Stored messages asked of the shell (`fetch`) and not yet `fetched`, by ref. */
  private readonly fetching = new Map<number, Queued | OutFlight>()
  /** In-flight messages of a resumed session still being fetched: the resend waits for them. */
  private resendWaiting = 0
  private resumePending = false
  private early: ClientPacket[] = []
  private lastDeadline: number | undefined
  private closeReasonValue: string | undefined
  private actions: SessionAction[] = []
  // The last topic <-> subject translations (pure functions of their input).
  private lastPubTopic: string | undefined
  private lastPubSubject: ReturnType<typeof topicToSubject> | undefined
  private lastDeliverSubject: string | undefined
  private lastDeliverTopic = ""
  /** The best granted QoS for lastDeliverSubject, valid while `subsVersion` is `lastDeliverVersion`. */
  private lastDeliverBest = -1
  private lastDeliverVersion = -1
  /** Bumped on every change to `subs`. */
  private subsVersion = 0
  /** MQTT 5.0: subscriptions with No Local (the check costs nothing without any). */
  private noLocalSubs = 0
  /** MQTT 5.0: subscriptions with a Subscription Identifier, and those of the last subject asked for. */
  private idSubs = 0
  private lastDeliverIds: ReadonlyArray<number> | undefined
  /** MQTT 5.0: subscriptions with Retain As Published, and whether one of them matched the last subject asked for. */
  private rapSubs = 0
  private lastDeliverRap = false
  /** MQTT 5.0: an away session's delayed will, kept in its snapshot until it goes out. */
  private delayedWill: DelayedWill | undefined
  /** Stored messages (numeric refs) taken for delivery so far. */
  private storedTakenValue = 0

  constructor(
    now: number,
    readonly deps: SessionDeps,
    /** Replaced by `setLimits` on a configuration reload. */
    public config: SessionConfig = defaultSessionConfig
  ) {
    this.openedAt = now
    this.lastActivity = now
    this.out = new OutWindow(config.maxAckPending, config.maxQueued, config.maxQueuedBytes ?? 0)
  }

  /**
   * A persistent session whose client is away, from what it kept (`snapshot()` of the
   * connection that ended, or a session stored before a restart): its subscriptions stay,
   * what was in flight stays in flight, and the QoS 1/2 messages routed to it (`deliver`)
   * queue behind, within max_queued_messages / max_queued_bytes (the oldest give way:
   * `drop`). Stored messages wait in the store, not in memory: their payloads are let go
   * (`released`) and fetched when a connection resumes the session with its `snapshot()`.
   * It takes no other input and has no deadline.
   */
  static away(stored: SessionSnapshot, now: number, deps: SessionDeps, config: SessionConfig): MqttSession {
    const s = new MqttSession(now, deps, config)
    s.phase = "away"
    s.delayedWill = stored.will
    s.readyValue = true
    s.clean = false
    s.clientIdValue = stored.clientId
    s.owner = stored.owner
    for (const sub of stored.subscriptions) {
      const f = filterSubscription(sub.filter, sub.shared === true)
      if (f.ok) s.setSub({ filter: sub.filter, qos: sub.qos, subjects: f.subjects, queue: f.queue, noLocal: sub.noLocal, id: sub.id, rap: sub.rap, shared: sub.shared })
    }
    for (const o of stored.outbound) {
      const payload = o.phase === "publish" && typeof o.ref === "number" ? s.letGo(o.payload) : o.payload
      s.out.add({ ...o, payload, deadline: now + config.ackWaitMs })
    }
    for (const q of stored.queued) {
      const payload = typeof q.ref === "number" ? s.letGo(q.payload) : q.payload
      s.out.queue.push({ qos: q.qos, topic: q.topic, payload, size: q.size, retain: q.retain, ref: q.ref, properties: q.properties, receivedAt: q.receivedAt })
    }
    for (const id of stored.inboundQos2) s.inQos2.ids.set(id, { confirmed: true })
    s.out.setLastId(stored.lastPacketId)
    // An MQTT 5.0 session stays one while away (its queued messages keep their properties),
    // whether or not its Session Expiry Interval ever runs out.
    if (stored.protocolVersion === 5 || stored.expiryInterval !== undefined) {
      s.versionValue = 5
      s.expiryInterval = stored.expiryInterval ?? SESSION_NEVER_EXPIRES
      s.endsAtValue = stored.endsAt
    }
    return s
  }

  /** A stored message's payload is not kept in memory: released, it is fetched again when needed. */
  private letGo(payload: Uint8Array | undefined): undefined {
    if (payload !== undefined) this.deps.released?.(payload)
    return undefined
  }

  /** What an away session holds: messages waiting, their bytes, and how many of those bytes are in memory. */
  awayQueue(): { readonly messages: number; readonly bytes: number; readonly bytesInMemory: number } {
    let inMemory = 0
    for (const q of this.out.queue.toArray()) inMemory += q.payload?.length ?? 0
    for (const e of this.out.inflight.values()) inMemory += e.payload?.length ?? 0
    return { messages: this.out.queue.length, bytes: this.out.queue.bytes, bytesInMemory: inMemory }
  }

  get clientId(): string {
    return this.clientIdValue
  }

  /** Whether the session was ever established (CONNACK 0 sent): only then is there state to keep. */
  get isReady(): boolean {
    return this.readyValue
  }

  get isClosed(): boolean {
    return this.phase === "closed"
  }

  get closeReason(): string | undefined {
    return this.closeReasonValue
  }

  /**
   * Whether the session ends with its connection (3.1.1 Clean Session; 5.0 a Session
   * Expiry Interval of 0): nothing of it is kept in the store.
   */
  get cleanSession(): boolean {
    return this.clean
  }

  /** 4 (MQTT 3.1.1) or 5 (MQTT 5.0, from a CONNECT the v5 decoder read). */
  get protocolVersion(): 4 | 5 {
    return this.versionValue
  }

  /** CONNACK sent and not closed: a v5 server may end it with a DISCONNECT. */
  get isConnected(): boolean {
    return this.phase === "connected"
  }

  /** MQTT 5.0 Request Problem Information (true unless the client set it to 0). */
  get requestProblemInformation(): boolean {
    return this.problemInformation
  }

  /** MQTT 5.0: the largest packet the client accepts (Infinity: the protocol's limit). */
  get clientMaximumPacketSize(): number {
    return this.clientMaxPacket
  }

  /** MQTT 5.0: Topic Aliases the client accepts from the server (0: none). */
  get clientTopicAliasMaximum(): number {
    return this.clientAliasMax
  }

  /** MQTT 5.0: the Session Expiry Interval in force, seconds. */
  get sessionExpiryInterval(): number {
    return this.expiryInterval
  }

  /**
   * A session that ends now but was kept in the store (it was persistent, or resumed one that
   * was): the shell removes what the store holds of it.
   */
  get endsStored(): boolean {
    return this.clean && this.storedValue
  }

  /** Whether the subscription `filter` was made as a Shared Subscription (a 3.1.1 session's `$share/…` filter is literal). */
  isShared(filter: string): boolean {
    return this.subs.get(filter)?.shared === true
  }

  /**
   * How many stored messages (numeric refs) the session took for delivery, so far: when a
   * `deliver` step changes it, the session holds the message until it is acknowledged or
   * dropped (the shell counts its holders). Taking one can push the oldest waiting one out
   * at the queue's bounds, so the number of messages pending does not tell.
   */
  get storedTaken(): number {
    return this.storedTakenValue
  }

  /** Unacknowledged outbound messages. */
  get inflightCount(): number {
    return this.out.inflight.size
  }

  /** A resumed session's resend [MQTT-4.4.0-1] waits for stored payloads (`fetch`): it goes out with the last `fetched`. */
  get resendPending(): boolean {
    return this.resumePending
  }

  step(input: SessionInput, now: number): SessionAction[] {
    this.actions = []
    if (this.phase !== "closed") this.dispatch(input, now)
    const at = this.nextDeadline()
    if (at !== undefined && at !== this.lastDeadline) this.emit({ type: "deadline", at })
    this.lastDeadline = at
    return this.actions
  }

  /** When the shell must `tick` next, or undefined when nothing is timed. */
  nextDeadline(): number | undefined {
    switch (this.phase) {
      case "closed":
      case "away":
        return undefined
      case "awaitConnect":
        return this.config.connectTimeoutMs === undefined ? undefined : this.openedAt + this.config.connectTimeoutMs
      default: {
        const ka = this.keepaliveMs > 0 ? this.lastActivity + this.keepaliveMs * 1.5 : undefined
        const redeliver = this.phase === "connected" && this.versionValue !== 5 ? this.out.nextDeadline() : undefined
        if (ka === undefined) return redeliver
        return redeliver === undefined ? ka : Math.min(ka, redeliver)
      }
    }
  }

  /** MQTT 5.0: an away session's will still waiting for its Will Delay Interval (the shell publishes it when due). */
  get pendingWill(): DelayedWill | undefined {
    return this.delayedWill
  }

  /** The delayed will went out (or was cancelled): the session no longer holds it. */
  willDone(): void {
    this.delayedWill = undefined
  }

  /** Subscriptions and pending QoS 1/2 state, for persistence of a non-clean session. */
  snapshot(): SessionSnapshot {
    return {
      clientId: this.clientIdValue,
      owner: this.owner,
      subscriptions: [...this.subs.values()].map((s) => ({
        filter: s.filter,
        qos: s.qos,
        ...(s.noLocal === true ? { noLocal: true } : {}),
        ...(s.id === undefined ? {} : { id: s.id }),
        ...(s.rap === true ? { rap: true } : {}),
        ...(s.shared === true ? { shared: true } : {})
      })),
      outbound: this.out.inSendOrder().map((e) => ({
        packetId: e.packetId,
        qos: e.qos,
        topic: e.topic,
        payload: e.payload,
        retain: e.retain,
        phase: e.phase,
        ref: e.ref,
        ...(e.properties === undefined ? {} : { properties: e.properties }),
        ...(e.receivedAt === undefined ? {} : { receivedAt: e.receivedAt })
      })),
      queued: this.out.queue.toArray().filter((q) => q.gone !== true).map((q) => ({
        qos: q.qos, topic: q.topic, payload: q.payload, size: q.size, retain: q.retain, ref: q.ref,
        ...(q.properties === undefined ? {} : { properties: q.properties, receivedAt: q.receivedAt })
      })),
      inboundQos2: [...this.inQos2.ids.keys()],
      lastPacketId: this.out.lastPacketId,
      ...(this.versionValue === 5 && this.expiryInterval !== SESSION_NEVER_EXPIRES
        ? { expiryInterval: this.expiryInterval, endsAt: this.endsAtValue }
        : {}),
      ...(this.versionValue === 5 ? { protocolVersion: 5 as const } : {}),
      ...(this.delayedWill === undefined ? {} : { will: this.delayedWill })
    }
  }

  private emit(a: SessionAction): void {
    this.actions.push(a)
  }

  private send(packet: Extract<SessionAction, { type: "send" }>["packet"]): void {
    this.emit({ type: "send", packet })
  }

  private dispatch(input: SessionInput, now: number): void {
    // Away, only routed messages reach it (they queue).
    if (this.phase === "away" && input.type !== "deliver") return
    switch (input.type) {
      case "packet":
        this.lastActivity = now
        return this.onPacket(input.packet, now)
      case "sessionReady":
        return this.onSessionReady(input.stored, input.owner, now)
      case "published":
        return this.onPublished(input.packetId, input.code)
      case "deliver":
        return this.onDeliver(input.subject, input.payload, input.qos, input.ref, now, input.properties, input.local, input.retain)
      case "fetched":
        return this.onFetched(input.messages, now)
      case "retained":
        return this.onRetained(input.filter, input.messages, now)
      case "tick":
        return this.onTick(now)
      case "connectionLost":
        return this.close(CloseReason.ConnectionLost, true)
      case "protocolError":
        return this.close(`${CloseReason.ProtocolViolation}: ${input.reason}`, true, input.code ?? ReasonCode.MalformedPacket)
      case "takenOver":
        return this.close(CloseReason.DuplicateClientId, true, ReasonCode.SessionTakenOver)
      case "refused":
        if (this.phase === "connecting") this.refuse(input.code)
        return
      case "revoked":
        return this.onRevoked(input.filters)
      case "deauthorized":
        return this.close(CloseReason.AuthenticationFailure, false, ReasonCode.NotAuthorized)
    }
  }

  /**
   * Ends the connection; the will goes out unless the client said DISCONNECT [MQTT-3.1.2-8, -10].
   * On MQTT 5.0 the server says why first (`code`): a DISCONNECT once the CONNACK went out
   * [MQTT-4.13.1-1], else a CONNACK refusing the CONNECT [MQTT-3.2.2-7]; with its Reason
   * String, which both may carry whatever Request Problem Information says [MQTT-3.1.2-29].
   */
  private close(reason: string, publishWill: boolean, code?: number): void {
    if (code !== undefined && this.versionValue === 5) {
      const properties: Properties = { reasonString: reason }
      if (this.phase === "connected") this.send({ cmd: "disconnect", reasonCode: code, properties })
      else if (this.phase === "awaitConnect" || this.phase === "connecting") {
        this.send({ cmd: "connack", returnCode: ConnackCode.ServerUnavailable, sessionPresent: false, reasonCode: code, properties })
      }
    }
    if (publishWill && this.will !== undefined) this.publishWill(this.will)
    this.will = undefined
    this.phase = "closed"
    this.closeReasonValue = reason
    this.emit({ type: "close", reason })
  }

  /** A protocol violation: closed with its will; on MQTT 5.0 with `code` (default Protocol Error). */
  private violation(reason: string, code: number = ReasonCode.ProtocolError): void {
    this.close(`${CloseReason.ProtocolViolation}: ${reason}`, true, code)
  }

  /**
   * The will goes out only if the client may still publish to its topic: it was checked at
   * CONNECT, and permissions can have changed since (a reload).
   */
  private publishWill(will: Will): void {
    // MQTT 5.0 Will Delay Interval: the will waits for it, or for the session's end when that
    // comes first (3.1.3.2.2); a session that ends with its connection sends it now.
    const delay = this.versionValue === 5 ? will.properties?.willDelayInterval ?? 0 : 0
    const afterMs = delay > 0 && this.expiryInterval > 0 ? Math.min(delay, this.expiryInterval) * 1000 : 0
    if (afterMs === 0) return this.emitWill(will)
    const outer = this.actions
    this.actions = []
    this.emitWill(will)
    const later = this.actions
    this.actions = outer
    if (later.length > 0) this.emit({ type: "willDelayed", afterMs, actions: later })
  }

  private emitWill(will: Will): void {
    const subject = topicToSubject(will.topic)
    if (!subject.ok) return
    if (!this.mayPublish(will.topic, subject.value)) return this.emit({ type: "denied", op: "will", topic: will.topic })
    const qos = minQos(will.qos, MAX_QOS)
    // MQTT 5.0 Will Properties cross to NATS as a PUBLISH's do (a Response Topic no reply can carry is left out).
    const p = this.versionValue === 5 && will.properties !== undefined && will.properties !== NO_PROPERTIES ? publishToNats(will.topic, will.properties) : undefined
    const n = p?.ok === true ? p : p === undefined ? undefined : publishToNats(will.topic, { ...will.properties, responseTopic: undefined, correlationData: undefined })
    const hdr = n?.ok === true ? headerBlock(n.headers) : undefined
    const reply = n?.ok === true ? n.reply : undefined
    this.emitRetain(will.topic, subject.value, will.payload, qos, will.retain, reply, hdr)
    this.emit({
      type: "publish",
      subject: subject.value,
      payload: will.payload,
      qos,
      retain: will.retain,
      ...(reply === undefined ? {} : { reply }),
      ...(hdr === undefined ? {} : { hdr })
    })
  }

  /** Retained store updates of a PUBLISH [MQTT-3.3.1-5, -7, -10, -11, -12]. */
  private emitRetain(topic: string, subject: string, payload: Uint8Array, qos: QoS, retain: boolean, reply?: string, hdr?: Buffer): void {
    if (!retain) return
    if (payload.length === 0) this.emit({ type: "deleteRetained", topic, subject })
    else if (reply === undefined && hdr === undefined) this.emit({ type: "storeRetained", topic, subject, payload, qos })
    else this.emit({ type: "storeRetained", topic, subject, payload, qos, reply, hdr })
  }

  private onPacket(packet: ClientPacket, now: number): void {
    switch (this.phase) {
      case "awaitConnect":
        if (packet.cmd !== "connect") return this.close(`${CloseReason.ProtocolViolation}: packet before CONNECT`, false)
        return this.onConnect(packet)
      case "connecting":
        if (packet.cmd === "connect") return this.violation("second CONNECT")
        if (this.early.length >= this.config.maxEarlyPackets) return this.violation("too many packets before CONNACK", ReasonCode.QuotaExceeded)
        this.early.push(packet)
        return
      case "connected":
        return this.onConnectedPacket(packet, now)
      case "closed":
        return
    }
  }

  private connectViolation(connect: ConnectPacket): string | undefined {
    const f = connect.flags
    if (f?.reserved) return "CONNECT reserved flag set"
    if (f !== undefined && !f.will && (f.willQos !== 0 || f.willRetain)) return "will QoS/retain without will flag"
    if (f !== undefined && f.willQos > 2) return "will QoS 3"
    if (f !== undefined && f.password && !f.username) return "password without user name"
    if (connect.will !== undefined) {
      if (connect.will.qos > 2 || connect.will.qos < 0) return "will QoS 3"
      const t = validateTopicName(connect.will.topic)
      if (!t.ok) return `will topic: ${t.reason}`
    }
    if (connect.keepalive < 0 || connect.keepalive > 65535) return "keepalive out of range"
    return undefined
  }

  /**
   * Refuses the CONNECT with a 3.1.1 return `code`; on MQTT 5.0 with its v5 reason code
   * (or `code5`) and, when given, a Reason String.
   */
  private refuse(code: number, code5?: number, reason?: string): void {
    // A refused CONNACK carries session present 0 [MQTT-3.2.2-4], then the connection closes [MQTT-3.2.2-5].
    if (this.versionValue === 5) {
      const reasonCode = code5 ?? V5_CONNACK[code] ?? ReasonCode.UnspecifiedError
      const properties: Properties = reason === undefined ? {} : { reasonString: reason }
      this.send({ cmd: "connack", returnCode: code, sessionPresent: false, reasonCode, properties })
      this.close(`${CloseReason.ConnackRefused} (0x${reasonCode.toString(16)}${reason === undefined ? "" : `: ${reason}`})`, false)
      return
    }
    this.send({ cmd: "connack", returnCode: code, sessionPresent: false })
    this.close(`${CloseReason.ConnackRefused} (${code})`, false)
  }

  private onConnect(connect: ConnectPacket): void {
    // MQTT 3.1 ("MQIsdp", level 3) is told its level is not supported; any other name
    // than "MQTT" is closed without CONNACK [MQTT-3.1.2-1], including "MQIsdp" at level 4.
    const v31 = connect.protocolId === "MQIsdp" && connect.protocolVersion === 3
    if (connect.protocolId !== "MQTT" && !v31) {
      return this.close(`${CloseReason.ProtocolViolation}: protocol name ${connect.protocolId}`, false)
    }
    if (connect.protocolVersion === 5 && connect.properties !== undefined) return this.onConnect5(connect as Connect)
    if (connect.protocolVersion !== 4 || this.refuseLevel4) return this.refuse(ConnackCode.UnacceptableProtocolVersion)
    const bad = this.connectViolation(connect)
    if (bad !== undefined) return this.close(`${CloseReason.ProtocolViolation}: ${bad}`, false)
    let clientId = connect.clientId
    let assigned = false
    if (clientId.length === 0) {
      if (!connect.clean) return this.refuse(ConnackCode.IdentifierRejected)
      clientId = assignClientId(this.deps.randomBytes)
      assigned = true
    }
    if (!this.admit(connect, clientId)) return
    this.clean = connect.clean
    this.discardStored = connect.clean
    this.storedValue = !connect.clean
    this.keepaliveMs = connect.keepalive * 1000
    this.will = connect.will
    this.phase = "connecting"
    this.emit({ type: "accept", clientId, cleanSession: connect.clean, persistent: !connect.clean, assignedId: assigned })
  }

  /**
   * The credentials and the will of a CONNECT: false (the CONNECT refused) when the
   * authenticator turns the client away, or when the will is one the client could not
   * publish itself: it would otherwise be a way around publish permissions (a will on
   * `$JS/API/...`, say).
   */
  private admit(connect: ConnectPacket, clientId: string): boolean {
    const auth = this.deps.authenticate?.(connect) ?? ConnackCode.Accepted
    if (auth !== ConnackCode.Accepted) {
      this.refuse(auth)
      return false
    }
    this.clientIdValue = clientId
    const will = connect.will
    if (will !== undefined) {
      const subject = topicToSubject(will.topic)
      if (subject.ok && !this.mayPublish(will.topic, subject.value)) {
        this.emit({ type: "denied", op: "will", topic: will.topic })
        this.refuse(ConnackCode.NotAuthorized, undefined, `not authorized to publish the will to ${JSON.stringify(will.topic)}`)
        return false
      }
    }
    return true
  }

  /**
   * An MQTT 5.0 CONNECT (the v5 decoder checked its form). Clean Start says whether a stored
   * session is discarded; the Session Expiry Interval whether this one is kept after the
   * connection. An empty Client Identifier is assigned one whatever Clean Start says
   * [MQTT-3.1.3-6]; refusals are CONNACKs with v5 reason codes.
   */
  private onConnect5(connect: Connect): void {
    this.versionValue = 5
    this.connect5 = connect
    this.problemInformation = connect.properties.requestProblemInformation ?? true
    const limits = this.config.v5 ?? {}
    const refusal = connectRefusal(connect, limits)
    if (refusal !== undefined) return this.refuse(ConnackCode.ServerUnavailable, refusal.code, refusal.reason)
    if (connect.will !== undefined) {
      const t = validateTopicName(connect.will.topic)
      if (!t.ok) return this.refuse(ConnackCode.ServerUnavailable, ReasonCode.TopicNameInvalid, `Will Topic: ${t.reason}`)
    }
    let clientId = connect.clientId
    const assigned = clientId.length === 0
    if (assigned) clientId = assignClientId(this.deps.randomBytes)
    if (!this.admit(connect, clientId)) return
    const will = connect.will
    this.expiryInterval = sessionExpiry(connect.properties.sessionExpiryInterval, limits.maximumSessionExpiry).interval
    this.clean = this.expiryInterval === 0
    this.discardStored = connect.clean
    this.storedValue = !this.clean
    this.keepaliveMs = connect.keepalive * 1000
    this.will = will
    this.inboundAliases = new InboundTopicAliases(limits.topicAliasMaximum ?? 0)
    this.phase = "connecting"
    this.emit({ type: "accept", clientId, cleanSession: connect.clean, persistent: !this.clean, assignedId: assigned })
  }

  /**
   * What the CONNACK announces: the listener's limits, and for a client that asked for
   * Response Information [MQTT-3.1.2-28] the prefix followed by a level of its own.
   */
  private connackLimits(connect: Connect): ServerLimits {
    const limits = this.config.v5 ?? {}
    const prefix = limits.responseInformation
    if (connect.properties.requestResponseInformation !== true || prefix === undefined) return limits
    return { ...limits, responseInformation: prefix === "" ? undefined : `${prefix}/${responseLevel(this.clientIdValue)}` }
  }

  private onSessionReady(stored: SessionSnapshot | undefined, owner: string | undefined, now: number): void {
    if (this.phase !== "connecting") return
    this.owner = owner ?? ""
    let present = false
    if (!this.discardStored && stored !== undefined) {
      // The store key is a hash of the id: a different full id is a collision, never resumed.
      if (stored.clientId !== this.clientIdValue) return this.refuse(ConnackCode.IdentifierRejected)
      if (mayResume(stored, owner)) {
        this.restore(stored, now)
        present = true
        this.storedValue = true
      } else {
        // Another user's session: never resumed (its subscriptions and messages are that
        // user's); it is discarded and this connection starts a fresh one [MQTT-3.2.2-3].
        this.emit({ type: "discardStored", stored })
      }
    }
    this.phase = "connected"
    this.readyValue = true
    if (this.connect5 !== undefined) {
      const n = acceptConnect(this.connect5, this.connackLimits(this.connect5), present, this.connect5.clientId === "" ? this.clientIdValue : undefined)
      this.connect5 = undefined
      this.keepaliveMs = n.keepAlive * 1000
      this.clientReceiveMaximum = n.clientReceiveMaximum
      this.clientMaxPacket = n.clientMaximumPacketSize
      this.clientAliasMax = n.clientTopicAliasMaximum
      // Never more QoS 1/2 deliveries unacknowledged than the client allows [MQTT-4.9.0-2].
      this.out.maxAckPending = Math.min(this.config.maxAckPending, n.clientReceiveMaximum)
      this.inboundQuota = new InboundQuota(this.config.v5?.receiveMaximum ?? DEFAULT_RECEIVE_MAXIMUM)
      this.send({ cmd: "connack", returnCode: ConnackCode.Accepted, sessionPresent: n.connack.sessionPresent, reasonCode: ReasonCode.Success, properties: n.connack.properties })
    } else this.send({ cmd: "connack", returnCode: ConnackCode.Accepted, sessionPresent: present })
    for (const [filter, s] of this.subs) {
      this.emit({ type: "subscribe", filter, subjects: s.subjects, qos: s.qos, restored: true, queue: s.queue })
    }
    // Unacknowledged messages go out again, in order, with DUP; PUBRELs again [MQTT-4.4.0-1].
    // Stored ones not in memory are fetched first, and the resend waits for all of them.
    const missing = this.out.inSendOrder().filter((e) => e.phase === "publish" && e.payload === undefined)
    if (missing.length > 0) {
      this.resendWaiting = missing.length
      this.resumePending = true
      this.requestFetch(missing)
    } else this.resendAll(now)
    const early = this.early
    this.early = []
    for (const p of early) {
      if (this.phase !== "connected") break
      this.onConnectedPacket(p, now)
    }
  }

  /**
   * Take a stored session up again, with what its user may still have: a subscription or a
   * stored message the permissions no longer allow (changed since, or a session stored
   * before owners were kept) is dropped, never delivered.
   */
  private restore(s: SessionSnapshot, now: number): void {
    let refused = false
    for (const sub of s.subscriptions) {
      const subjects = filterSubscription(sub.filter, sub.shared === true)
      if (!subjects.ok) continue
      // As it was made: a 3.1.1 session's `$share/…` filter stays literal, also for a v5 connection resuming it.
      if (!(this.deps.canSubscribe?.(sub.filter, sub.shared === true) ?? true)) {
        this.emit({ type: "denied", op: "subscribe", topic: sub.filter })
        this.persistSubscription(sub.filter, undefined)
        refused = true
        continue
      }
      this.setSub({ filter: sub.filter, qos: sub.qos, subjects: subjects.subjects, queue: subjects.queue, noLocal: sub.noLocal, id: sub.id, rap: sub.rap, shared: sub.shared })
    }
    // What came through a subscription refused now (one a queue permission allowed, say) is
    // not owed any more unless a subscription it still has takes it.
    const owed = (topic: string): boolean => this.mayReceive(topic) && (!refused || this.stillSubscribed(topic))
    for (const o of s.outbound) {
      if (o.phase === "publish" && !owed(o.topic)) this.emit({ type: "drop", reason: "not_permitted", ref: o.ref })
      else this.out.add({ ...o, deadline: now + this.config.ackWaitMs })
    }
    for (const q of s.queued) {
      if (!owed(q.topic)) this.emit({ type: "drop", reason: "not_permitted", ref: q.ref })
      else this.enqueue({ qos: q.qos, topic: q.topic, payload: q.payload, size: q.size, retain: q.retain, ref: q.ref, properties: q.properties, receivedAt: q.receivedAt })
    }
    for (const id of s.inboundQos2) this.inQos2.ids.set(id, { confirmed: true })
    this.out.setLastId(s.lastPacketId)
  }

  private onConnectedPacket(packet: ClientPacket, now: number): void {
    switch (packet.cmd) {
      case "connect":
        return this.violation("second CONNECT")
      case "publish":
        return this.onPublish(packet)
      case "puback":
        return this.onPuback(packet.messageId, now)
      case "pubrec":
        return this.onPubrec(packet.messageId, now, packet.reasonCode ?? 0)
      case "pubrel":
        return this.onPubrel(packet.messageId)
      case "pubcomp":
        return this.onPubcomp(packet.messageId, now)
      case "subscribe":
        if (this.versionValue === 5 && packet.properties?.subscriptionIdentifiers !== undefined && this.config.v5?.subscriptionIdentifiersAvailable === false) {
          // Announced as not available in CONNACK: a SUBSCRIBE with one is refused so (3.8.2.1.2).
          return this.violation("Subscription Identifier in SUBSCRIBE", ReasonCode.SubscriptionIdentifiersNotSupported)
        }
        return this.onSubscribe(packet.messageId, packet.subscriptions, packet.properties?.subscriptionIdentifiers?.[0])
      case "unsubscribe":
        return this.onUnsubscribe(packet.messageId, packet.unsubscriptions)
      case "pingreq":
        return this.send({ cmd: "pingresp" })
      case "disconnect":
        return this.onDisconnect(packet.reasonCode, packet.properties)
      case "auth":
        // No authentication method was agreed at CONNECT (4.12).
        return this.violation("AUTH without an authentication method")
      default:
        return this.violation(`client sent ${packet.cmd.toUpperCase()}`)
    }
  }

  /**
   * The client's DISCONNECT. On MQTT 5.0 its reason code says whether the will goes out
   * (0x04 Disconnect with Will Message) [MQTT-3.14.4-3], and it may change the Session
   * Expiry Interval, but not from 0 [MQTT-3.14.2-2].
   */
  private onDisconnect(reasonCode: number | undefined, properties: Properties | undefined): void {
    if (this.versionValue !== 5) return this.close(CloseReason.ClientClosed, false)
    try {
      this.expiryInterval = sessionExpiryOnDisconnect(this.expiryInterval, properties?.sessionExpiryInterval, this.config.v5?.maximumSessionExpiry)
    } catch (e) {
      if (e instanceof PacketError) return this.violation(e.reason, e.code)
      throw e
    }
    this.clean = this.expiryInterval === 0
    this.close(CloseReason.ClientClosed, willSurvives(reasonCode ?? 0))
  }

  private onPublish(p: PublishPacket): void {
    if (p.qos < 0 || p.qos > 2) return this.violation("PUBLISH QoS 3") // [MQTT-3.3.1-4]
    if (p.qos > 0 && (p.messageId === undefined || p.messageId < 1 || p.messageId > 65535)) {
      return this.violation("PUBLISH without a packet id") // [MQTT-2.3.1-1]
    }
    if (this.inboundAliases !== undefined) {
      let topic: string
      try {
        topic = this.inboundAliases.resolve(p.topic, p.properties?.topicAlias)
      } catch (e) {
        if (e instanceof PacketError) return this.violation(e.reason, e.code)
        throw e
      }
      if (topic !== p.topic) p = { ...p, topic }
    }
    // Devices publish to a few topics over and over: the last translation is kept.
    if (p.topic !== this.lastPubTopic) {
      this.lastPubTopic = p.topic
      this.lastPubSubject = topicToSubject(p.topic)
    }
    const subject = this.lastPubSubject!
    if (!subject.ok) return this.violation(`PUBLISH topic: ${subject.reason}`, ReasonCode.TopicNameInvalid)
    const qos = p.qos as QoS
    const id = p.messageId ?? 0
    if (qos > 0 && this.inboundQuota !== undefined) {
      try {
        this.inboundQuota.received(id)
      } catch (e) {
        if (e instanceof PacketError) return this.violation(e.reason, e.code)
        throw e
      }
    }
    // Not permitted: acknowledged as usual (3.1.1 has no negative ack) but not routed.
    const allowed = this.deps.canPublish?.(p.topic, subject.value) ?? true
    if (qos === 2 && this.inQos2.has(id)) {
      // A duplicate before PUBREL is not routed again [MQTT-4.3.3-2]; its PUBREC says what the first one's did.
      const q2 = this.inQos2.ids.get(id)!
      if (!q2.confirmed) return
      if (q2.code !== undefined) (this.refusedAcks ??= new Map()).set(id, q2.code)
      this.acknowledge(id, "pubrec")
      return
    }
    if (!allowed) {
      this.emit({ type: "denied", op: "publish", topic: p.topic })
      if (this.versionValue === 5) {
        // MQTT 5.0 says so: PUBACK or PUBREC 0x87, which ends the exchange (no PUBREL follows a failed PUBREC).
        if (qos > 0) {
          ;(this.refusedAcks ??= new Map()).set(id, ReasonCode.NotAuthorized)
          this.acknowledge(id, qos === 1 ? "puback" : "pubrec")
        }
        return
      }
      if (qos === 1) this.acknowledge(id, "puback")
      if (qos === 2) this.confirmQos2(id)
      return
    }
    // MQTT 5.0 message properties: NATS headers and a reply subject (nats.ts says how).
    let reply: string | undefined
    let hdr: Buffer | undefined
    if (this.versionValue === 5 && p.properties !== undefined && p.properties !== NO_PROPERTIES) {
      // Payload Format Indicator 1 promises UTF-8: a payload that is not is refused, PUBACK or
      // PUBREC 0x99, or DISCONNECT 0x99 at QoS 0, which has no acknowledgement [MQTT-3.3.2-4].
      if (!payloadMatchesFormat(p.properties.payloadFormatIndicator, p.payload)) {
        if (qos === 0) return this.violation("PUBLISH payload is not UTF-8 though its Payload Format Indicator says so", ReasonCode.PayloadFormatInvalid)
        ;(this.refusedAcks ??= new Map()).set(id, ReasonCode.PayloadFormatInvalid)
        this.acknowledge(id, qos === 1 ? "puback" : "pubrec")
        return
      }
      const n = publishToNats(p.topic, p.properties)
      if (!n.ok) {
        // A Response Topic no reply subject can carry: the request could never be answered.
        if (qos > 0) {
          ;(this.refusedAcks ??= new Map()).set(id, n.code)
          this.acknowledge(id, qos === 1 ? "puback" : "pubrec")
        }
        return
      }
      reply = n.reply
      hdr = headerBlock(n.headers)
    }
    this.emitRetain(p.topic, subject.value, p.payload, qos, p.retain, reply, hdr)
    // The shell writes a QoS 2 message's de-duplication record with it and forwards it only
    // once both are durable, so a resend after a crash is known as one [MQTT-4.3.3-2].
    if (qos === 2) this.inQos2.ids.set(id, { confirmed: false })
    if (qos > 0) this.acks.expect(id)
    this.emit({
      type: "publish",
      subject: subject.value,
      payload: p.payload,
      qos,
      retain: p.retain,
      confirm: qos > 0 ? id : undefined,
      ...(reply === undefined ? {} : { reply }),
      ...(hdr === undefined ? {} : { hdr })
    })
  }

  private confirmQos2(id: number): void {
    this.inQos2.ids.set(id, { confirmed: true })
    this.emit({ type: "persist", stream: "$MQTT_qos2in", key: this.recordKey(id), record: { packetId: id } })
    this.acknowledge(id, "pubrec")
  }

  /** PUBACK / PUBREC, behind the acknowledgements of earlier PUBLISHes still waiting [MQTT-4.6.0-2, -3]. */
  private acknowledge(id: number, ack: InboundAck): void {
    this.acks.confirm(id, ack)
    for (let e = this.acks.next(); e >= 0; e = this.acks.next()) {
      const messageId = AckOrder.packetId(e)
      const refused = this.refusedAcks?.get(messageId)
      // A PUBACK, or a PUBREC with a failure code, ends the exchange for flow control.
      if (this.inboundQuota !== undefined && (AckOrder.ack(e) === "puback" || (refused !== undefined && refused >= 0x80))) this.inboundQuota.completed(messageId)
      if (refused === undefined) this.send({ cmd: AckOrder.ack(e), messageId })
      else {
        this.refusedAcks!.delete(messageId)
        // A success code (0x10) needs no reason; a failure says why.
        if (refused < 0x80) this.send({ cmd: AckOrder.ack(e), messageId, reasonCode: refused })
        else {
          const properties: Properties = { reasonString: REFUSED_PUBLISH[refused] ?? "the PUBLISH was refused" }
          this.send({ cmd: AckOrder.ack(e), messageId, reasonCode: refused, properties })
        }
      }
    }
  }

  private recordKey(packetId: number): string {
    return `${this.clientIdValue}/${packetId}`
  }

  /** The shell made an inbound message durable: now it is acknowledged. */
  private onPublished(id: number, code: number | undefined): void {
    if (this.phase !== "connected") return
    const q2 = this.inQos2.ids.get(id)
    if (code !== undefined && this.versionValue === 5) {
      if (code >= 0x80) {
        // Refused (a storage limit): a failed PUBREC ends the exchange, no PUBREL follows [MQTT-4.3.3-4].
        if (q2 !== undefined) this.inQos2.ids.delete(id)
        ;(this.refusedAcks ??= new Map()).set(id, code)
        return this.acknowledge(id, q2 !== undefined ? "pubrec" : "puback")
      }
      // 0x10 No matching subscribers, on the PUBACK or the PUBREC; a PUBREL still follows a PUBREC with it.
      if (q2 === undefined || !q2.confirmed) (this.refusedAcks ??= new Map()).set(id, code)
      if (q2 !== undefined && !q2.confirmed) q2.code = code
    }
    if (q2 !== undefined) {
      if (!q2.confirmed) {
        q2.confirmed = true
        this.acknowledge(id, "pubrec")
      }
      return
    }
    this.acknowledge(id, "puback")
  }

  private onPubrel(id: number): void {
    // A PUBREL answers a PUBREC: before it, the client is ahead of the flow [MQTT-4.3.3].
    if (this.inQos2.ids.get(id)?.confirmed === false) return this.violation("PUBREL before PUBREC")
    this.inboundQuota?.completed(id)
    if (this.inQos2.ids.delete(id)) {
      this.emit({ type: "persist", stream: "$MQTT_qos2in", key: this.recordKey(id), record: undefined })
    } else if (this.versionValue === 5) {
      // Nothing to release: MQTT 5.0 says so in the PUBCOMP (3.7.2.1).
      return this.send({ cmd: "pubcomp", messageId: id, reasonCode: ReasonCode.PacketIdentifierNotFound })
    }
    this.send({ cmd: "pubcomp", messageId: id })
  }

  private onPuback(id: number, now: number): void {
    const e = this.out.inflight.get(id)
    if (e === undefined || e.qos !== 1) return // unsolicited: ignored
    this.out.inflight.delete(id)
    if (e.payload !== undefined) this.deps.released?.(e.payload)
    if (e.ref !== undefined) this.emit({ type: "ack", ref: e.ref })
    this.fillWindow(now)
  }

  private onPubrec(id: number, now: number, reasonCode: number): void {
    const e = this.out.inflight.get(id)
    if (e === undefined || e.qos !== 2) return
    if (reasonCode >= 0x80 && e.phase === "publish") {
      // The client refused the message (MQTT 5.0): the exchange ends here, no PUBREL
      // follows, and it is never sent again [MQTT-4.3.3-4].
      this.out.inflight.delete(id)
      if (e.payload !== undefined) this.deps.released?.(e.payload)
      if (e.ref !== undefined) this.emit({ type: "ack", ref: e.ref })
      return this.fillWindow(now)
    }
    if (e.phase === "publish") {
      e.phase = "pubrel"
      // Received: from here on only the PUBREL is resent [MQTT-4.3.3], the payload is not read again.
      e.payload = this.letGo(e.payload)
      if (e.ref !== undefined) this.emit({ type: "ack", ref: e.ref })
      this.emit({ type: "persist", stream: "$MQTT_out", key: this.recordKey(id), record: { packetId: id } })
    }
    this.out.touch(e, now + this.config.ackWaitMs)
    this.send({ cmd: "pubrel", messageId: id })
  }

  private onPubcomp(id: number, now: number): void {
    const e = this.out.inflight.get(id)
    if (e === undefined || e.phase !== "pubrel") return
    this.out.inflight.delete(id)
    if (e.payload !== undefined) this.deps.released?.(e.payload)
    this.emit({ type: "persist", stream: "$MQTT_out", key: this.recordKey(id), record: undefined })
    this.fillWindow(now)
  }

  private onSubscribe(messageId: number, list: ReadonlyArray<SubscriptionRequest>, id?: number): void {
    if (messageId < 1 || messageId > 65535) return this.violation("SUBSCRIBE with packet id 0") // [MQTT-2.3.1-1]
    if (list.length === 0) return this.violation("SUBSCRIBE without topic filters") // [MQTT-3.8.3-3]
    if (list.some((s) => s.qos < 0 || s.qos > 2)) return this.violation("SUBSCRIBE QoS 3") // [MQTT-3.8.3-4]
    const v5 = this.versionValue === 5
    const granted: number[] = []
    /** MQTT 5.0: the reason code of each filter. */
    const codes: number[] | undefined = v5 ? [] : undefined
    const refused = (code: number): void => {
      granted.push(SUBACK_FAILURE)
      codes?.push(code)
    }
    const added: string[] = []
    const retainedFor: string[] = []
    for (const req of list) {
      const filter = req.topic
      // MQTT 5.0: `$share/G/filter` is the NATS queue group G on the filter's subjects.
      const subjects = filterSubscription(filter, v5)
      if (!subjects.ok) {
        refused(ReasonCode.TopicFilterInvalid)
        continue
      }
      if (!(this.deps.canSubscribe?.(filter, subjects.queue !== undefined) ?? true)) {
        this.emit({ type: "denied", op: "subscribe", topic: filter })
        refused(ReasonCode.NotAuthorized)
        continue
      }
      const g = minQos(req.qos, MAX_QOS)
      const before = this.subs.get(filter)
      const existed = before !== undefined
      // An identical filter replaces the existing subscription [MQTT-3.8.4-3].
      const noLocal = v5 && req.nl === true
      this.setSub({ filter, qos: g, subjects: subjects.subjects, queue: subjects.queue, noLocal, id, rap: v5 && req.rap === true, shared: subjects.queue !== undefined })
      granted.push(g)
      codes?.push(g)
      added.push(filter)
      // Retain Handling (MQTT 5.0): 0 always, 1 only for a new subscription, 2 never [MQTT-3.3.1-9, -10].
      if (!v5 || sendsRetained({ rh: req.rh ?? 0, topic: filter }, existed)) retainedFor.push(filter)
      this.emit({ type: "subscribe", filter, subjects: subjects.subjects, qos: g, restored: false, queue: subjects.queue })
    }
    this.send(codes === undefined ? { cmd: "suback", messageId, granted } : { cmd: "suback", messageId, granted, reasonCodes: codes })
    for (const filter of added) this.persistSubscription(filter, this.subs.get(filter)!.qos)
    // Retained messages follow the SUBACK that grants their subscription, never precede it.
    for (const filter of retainedFor) this.emit({ type: "wantRetained", filter })
  }

  private onUnsubscribe(messageId: number, filters: ReadonlyArray<string>): void {
    if (messageId < 1 || messageId > 65535) return this.violation("UNSUBSCRIBE with packet id 0") // [MQTT-2.3.1-1]
    if (filters.length === 0) return this.violation("UNSUBSCRIBE without topic filters") // [MQTT-3.10.3-2]
    const codes: number[] | undefined = this.versionValue === 5 ? [] : undefined
    for (const filter of filters) {
      const s = this.subs.get(filter)
      if (s === undefined) {
        codes?.push(ReasonCode.NoSubscriptionExisted)
        continue
      }
      codes?.push(ReasonCode.Success)
      this.deleteSub(s)
      this.emit({ type: "unsubscribe", filter, subjects: s.subjects })
      this.persistSubscription(filter, undefined)
    }
    // even when nothing matched [MQTT-3.10.4-5]; on 5.0 with a code per filter [MQTT-3.11.3-1]
    this.send(codes === undefined ? { cmd: "unsuback", messageId } : { cmd: "unsuback", messageId, reasonCodes: codes })
  }

  /**
   * A persistent session's subscription changed: one record per filter is written (or
   * removed), not the whole list, so a session with thousands of filters costs the same
   * per SUBSCRIBE as one with a few.
   */
  private persistSubscription(filter: string, qos: QoS | undefined): void {
    if (this.clean) return
    const s = qos === undefined ? undefined : this.subs.get(filter)
    if (s === undefined || (s.noLocal !== true && s.id === undefined && s.rap !== true && s.shared !== true)) {
      return this.emit({ type: "persistSubscription", filter, qos })
    }
    this.emit({ type: "persistSubscription", filter, qos, options: { noLocal: s.noLocal, id: s.id, rap: s.rap, shared: s.shared } })
  }

  /** Add or replace (an identical filter [MQTT-3.8.4-3]) a subscription, keeping the counts of its MQTT 5.0 options. */
  private setSub(s: Subscription): void {
    const before = this.subs.get(s.filter)
    if (before !== undefined) this.deleteSub(before)
    this.subs.set(s.filter, s)
    if (s.noLocal === true) this.noLocalSubs++
    if (s.id !== undefined) this.idSubs++
    if (s.rap === true) this.rapSubs++
    this.subsVersion++
  }

  private deleteSub(s: Subscription): void {
    if (!this.subs.delete(s.filter)) return
    if (s.noLocal === true) this.noLocalSubs--
    if (s.id !== undefined) this.idSubs--
    if (s.rap === true) this.rapSubs--
    this.subsVersion++
  }

  /**
   * The highest QoS any subscription grants on `subject` (-1: none matches), and its topic
   * in `lastDeliverTopic`. Devices get the same few subjects over and over: the last
   * one's answer is kept until the subscriptions change.
   */
  private grantFor(subject: string): number {
    if (subject !== this.lastDeliverSubject || this.lastDeliverVersion !== this.subsVersion) {
      const best = bestGrant(this.subs.values(), subject)
      if (subject !== this.lastDeliverSubject) this.lastDeliverTopic = subjectToTopic(subject)
      this.lastDeliverSubject = subject
      this.lastDeliverBest = best
      this.lastDeliverVersion = this.subsVersion
      this.lastDeliverIds = this.idSubs > 0 ? this.identifiersFor(subject, false) : undefined
      this.lastDeliverRap = this.rapSubs > 0 && this.retainsAsPublished(subject, false)
    }
    return this.lastDeliverBest
  }

  /**
   * MQTT 5.0: the Subscription Identifiers of the subscriptions matching `subject` (not the
   * No Local ones for the connection's own message), in subscription order; undefined for none.
   */
  private identifiersFor(subject: string, local: boolean): ReadonlyArray<number> | undefined {
    let ids: Array<number> | undefined
    for (const s of this.subs.values()) {
      if (s.id === undefined || (local && s.noLocal === true) || bestGrant([s], subject) < 0) continue
      ;(ids ??= []).push(s.id)
    }
    return ids
  }

  /**
   * MQTT 5.0: does a subscription with Retain As Published match `subject` (not a No Local
   * one for the connection's own message)? Then a message published with RETAIN goes to
   * this client with it [MQTT-3.3.1-13] (one delivery for all matching subscriptions).
   */
  private retainsAsPublished(subject: string, local: boolean): boolean {
    for (const s of this.subs.values()) {
      if (s.rap === true && !(local && s.noLocal === true) && bestGrant([s], subject) >= 0) return true
    }
    return false
  }

  /** MQTT 5.0: the RETAIN flag of the delivery `deliverQos0` last decided, for a message published with `retain`. */
  deliveryRetain(retain: boolean): boolean {
    return retain && this.lastDeliverRap
  }

  /** MQTT 5.0: the Subscription Identifiers of the delivery `deliverQos0` last decided (undefined: none). */
  get deliveryIdentifiers(): ReadonlyArray<number> | undefined {
    return this.lastDeliverIds
  }

  private onDeliver(subject: string, payload: Uint8Array, msgQos: number, ref: string | number | undefined, now: number, properties?: MessageProperties, local = false, retain = false) {
    if (this.phase === "away") return this.queueAway(subject, payload, msgQos, ref, retain, properties, now)
    if (this.phase !== "connected") return
    const best = local && this.noLocalSubs > 0 ? this.grantForLocal(subject) : this.grantFor(subject)
    if (best < 0) return
    // Forwarded to an established subscription: retain is 0 [MQTT-3.3.1-12], or as published with Retain As Published [MQTT-3.3.1-13].
    const ids = this.lastDeliverIds
    this.deliverOut(this.lastDeliverTopic, payload, minQos(msgQos, best), retain && this.lastDeliverRap, ref, now, ids === undefined ? properties : { ...properties, subscriptionIdentifiers: ids })
  }

  /**
   * Away: a QoS 1/2 message the client may receive queues for it (QoS 0 is not kept for an
   * absent client); a stored one without its payload, which waits in the store.
   */
  private queueAway(subject: string, payload: Uint8Array, msgQos: number, ref: string | number | undefined, retain: boolean, properties: MessageProperties | undefined, now: number): void {
    const qos = minQos(msgQos, this.grantFor(subject))
    if (qos !== 1 && qos !== 2) return
    if (!(this.deps.canReceive?.(subject) ?? true)) return
    const stored = typeof ref === "number"
    if (stored) this.storedTakenValue++
    const kept = stored ? undefined : payload
    // MQTT 5.0: with its properties and Subscription Identifiers; its Message Expiry Interval counts from now [MQTT-3.3.2-5].
    const ids = this.lastDeliverIds
    const props: Properties | undefined = ids === undefined ? properties : { ...properties, subscriptionIdentifiers: ids }
    this.enqueue(props === undefined
      ? { qos, topic: this.lastDeliverTopic, payload: kept, size: payload.length, retain: retain && this.lastDeliverRap, ref }
      : {
        qos, topic: this.lastDeliverTopic, payload: kept, size: payload.length, retain: retain && this.lastDeliverRap, ref,
        properties: props, receivedAt: props.messageExpiryInterval === undefined ? undefined : now
      })
  }

  // ---- the hot paths: the same decisions as `step`, without building actions ----

  /**
   * A QoS 0 PUBLISH without RETAIN from the client: the subject to route it to, exactly as
   * `step` would route it; undefined when `step` must take the packet (not connected, a
   * topic that is not valid, or one the client may not publish to).
   */
  publishQos0(topic: string, now: number): string | undefined {
    if (this.phase !== "connected") return undefined
    if (topic !== this.lastPubTopic) {
      this.lastPubTopic = topic
      this.lastPubSubject = topicToSubject(topic)
    }
    const subject = this.lastPubSubject!
    if (!subject.ok) return undefined
    if (this.deps.canPublish !== undefined && !this.deps.canPublish(topic, subject.value)) return undefined
    this.lastActivity = now
    return subject.value
  }

  /**
   * A routed message (`msgQos` its QoS): the topic to send it on when it goes out at QoS 0,
   * as `step` would send it; null when it is not for this session (not connected, no
   * matching subscription); undefined when it goes out at QoS 1/2 (`step` must take it).
   */
  deliverQos0(subject: string, msgQos: number, local = false): string | null | undefined {
    if (this.phase !== "connected") return null
    const best = local && this.noLocalSubs > 0 ? this.grantForLocal(subject) : this.grantFor(subject)
    if (best < 0) return null
    return minQos(msgQos, best) === 0 ? this.lastDeliverTopic : undefined
  }

  /**
   * `grantFor` for a message this connection published itself: its No Local subscriptions
   * do not take it [MQTT-3.8.3-3] (not cached: only sessions with such subscriptions ask).
   */
  private grantForLocal(subject: string): number {
    this.grantFor(subject) // the topic, in lastDeliverTopic
    let best = -1
    for (const s of this.subs.values()) if (s.noLocal !== true && s.qos > best && bestGrant([s], subject) >= 0) best = s.qos
    // the cache is for other messages on the subject: the next grantFor computes it again
    this.lastDeliverIds = this.idSubs > 0 ? this.identifiersFor(subject, true) : undefined
    this.lastDeliverRap = this.rapSubs > 0 && this.retainsAsPublished(subject, true)
    this.lastDeliverVersion = -1
    return best
  }

  private onRetained(
    filter: string,
    messages: ReadonlyArray<{ topic: string; payload: Uint8Array; qos: number } & StoredProperties>,
    now: number
  ): void {
    if (this.phase !== "connected") return
    const s = this.subs.get(filter)
    if (s === undefined) return
    for (const m of messages) {
      // Sent because of a new subscription: retain is 1 [MQTT-3.3.1-6, -8]; only what the
      // client may receive (a filter can be allowed while some topics under it are denied).
      if (!topicMatchesFilter(m.topic, filter) || !this.mayReceive(m.topic)) continue
      // MQTT 5.0: with the properties it was published with, its Message Expiry Interval
      // counted down in the store; one whose life ran out is not sent [MQTT-3.3.2-5].
      let properties: Properties | undefined = m.properties
      const expiry = properties?.messageExpiryInterval
      if (expiry !== undefined && m.receivedAt !== undefined) {
        const left = forwardedExpiry(expiry, m.receivedAt, now)
        if (left === undefined) continue
        properties = { ...properties, messageExpiryInterval: left }
      }
      if (s.id !== undefined) properties = { ...properties, subscriptionIdentifiers: [s.id] }
      this.deliverOut(m.topic, m.payload, minQos(m.qos, s.qos), true, undefined, now, properties)
    }
  }

  private mayPublish(topic: string, subject: string): boolean {
    return this.deps.canPublish?.(topic, subject) ?? true
  }

  /** Whether a subscription of this session matches `topic`. */
  private stillSubscribed(topic: string): boolean {
    const subject = topicToSubject(topic)
    return subject.ok && this.grantFor(subject.value) >= 0
  }

  /** Whether a message on `topic` may go to this client under its subscribe permissions. */
  private mayReceive(topic: string): boolean {
    const canReceive = this.deps.canReceive
    if (canReceive === undefined) return true
    const subject = topicToSubject(topic)
    return subject.ok && canReceive(subject.value)
  }

  /**
   * MQTT 5.0: a PUBLISH the client's Maximum Packet Size does not admit, with its topic by
   * name (an alias the shell may choose only makes it shorter, or is left out). It is
   * discarded as if sent [MQTT-3.1.2-25] and counted (`drop`, `packet_too_large`).
   */
  private tooLarge(topic: string, payloadLength: number, qos: QoS, retain: boolean, properties?: Properties): boolean {
    if (this.clientMaxPacket === Number.POSITIVE_INFINITY) return false
    const h = (this.sizeHead ??= {
      topic: "", qos: 0, retain: false, dup: false, messageId: 1, topicAlias: 0,
      messageExpiryInterval: -1, subscriptionIdentifiers: undefined, messageProperties: undefined
    })
    h.topic = topic
    h.qos = qos
    h.retain = retain
    h.messageProperties = properties === undefined ? undefined : encodeMessageProperties(properties)
    h.messageExpiryInterval = properties?.messageExpiryInterval ?? -1
    h.subscriptionIdentifiers = properties?.subscriptionIdentifiers
    return publishSize(h, payloadLength) > this.clientMaxPacket
  }

  private deliverOut(
    topic: string,
    payload: Uint8Array,
    qos: QoS,
    retain: boolean,
    ref: string | number | undefined,
    now: number,
    properties?: Properties
  ): void {
    if (this.tooLarge(topic, payload.length, qos, retain, properties)) {
      // Not taken: a stored message stays the store's (no hold, nothing to release).
      this.emit({ type: "drop", reason: "packet_too_large" })
      return
    }
    if (qos === 0) {
      this.send(properties === undefined
        ? { cmd: "publish", topic, payload, qos: 0, retain, dup: false }
        : { cmd: "publish", topic, payload, qos: 0, retain, dup: false, properties })
      return
    }
    const q: Queued = properties === undefined
      ? { qos, topic, payload, size: payload.length, retain, ref }
      : { qos, topic, payload, size: payload.length, retain, ref, properties, receivedAt: properties.messageExpiryInterval === undefined ? undefined : now }
    if (typeof ref === "number") this.storedTakenValue++
    if (this.out.queue.length === 0 && this.resendWaiting === 0 && this.trySend(q, now, true)) return
    this.enqueue(q)
  }

  /** Behind the window: at its bounds (max_queued_messages / max_queued_bytes) the oldest waiting messages give way. */
  private enqueue(q: Queued): void {
    const queue = this.out.queue
    while (this.out.queueFull(q.size)) {
      const old = queue.shift()!
      if (typeof old.ref === "number") this.fetching.delete(old.ref)
      if (old.payload !== undefined) this.deps.released?.(old.payload)
      if (old.gone !== true) this.emit({ type: "drop", reason: "queue_full", ref: old.ref })
    }
    queue.push(q)
  }

  /** Sends `q` if the window has room and a packet id is free. */
  private trySend(q: Queued, now: number, sized = false): boolean {
    // `sized`: deliverOut measured it a moment ago; a message that waited is measured here.
    if (!sized && this.tooLarge(q.topic, q.size, q.qos, q.retain, q.properties)) {
      // Taken for delivery (queued): let go, and the store's hold with it; no packet id spent.
      if (q.payload !== undefined) this.deps.released?.(q.payload)
      this.emit({ type: "drop", reason: "packet_too_large", ref: q.ref })
      return true
    }
    // MQTT 5.0 Message Expiry: a message whose life ran out while it waited is not sent
    // [MQTT-3.3.2-5]; one that goes carries what is left of it [MQTT-3.3.2-6].
    let properties = q.properties
    if (q.receivedAt !== undefined && properties?.messageExpiryInterval !== undefined) {
      const left = forwardedExpiry(properties.messageExpiryInterval, q.receivedAt, now)
      if (left === undefined) {
        if (q.payload !== undefined) this.deps.released?.(q.payload)
        this.emit({ type: "drop", reason: "expired", ref: q.ref })
        return true
      }
      if (left !== properties.messageExpiryInterval) properties = { ...properties, messageExpiryInterval: left }
    }
    if (!this.out.hasRoom()) return false
    const packetId = this.out.nextPacketId()
    if (packetId === undefined) return false
    const e = this.out.addSent(q, packetId, now + this.config.ackWaitMs)
    this.send({ cmd: "publish", topic: e.topic, payload: q.payload!, qos: e.qos, retain: e.retain, dup: false, messageId: packetId, properties })
    this.afterSend(e)
    return true
  }

  /** A large stored payload just sent is let go: the store has it for a resend (`keepSentPayloadMax`). */
  private afterSend(e: OutFlight): void {
    const max = this.config.keepSentPayloadMax
    if (max !== undefined && typeof e.ref === "number" && e.payload !== undefined && e.payload.length > max) {
      e.payload = undefined
    }
  }

  private fillWindow(now: number): void {
    if (this.resendWaiting > 0) return
    const queue = this.out.queue
    for (let q = queue.peek(); q !== undefined; q = queue.peek()) {
      if (q.gone === true) {
        queue.shift()
        continue
      }
      if (q.payload === undefined) return this.fetchAhead()
      if (!this.trySend(q, now)) return
      queue.shift()
    }
  }

  /** The stored messages the window has room for next, fetched ahead of their turn. */
  private fetchAhead(): void {
    const room = this.out.maxAckPending - this.out.inflight.size
    const want: Queued[] = []
    const queue = this.out.queue
    for (let i = 0; i < queue.length && want.length < room; i++) {
      const q = queue.at(i)!
      if (q.payload === undefined && q.gone !== true) want.push(q)
    }
    this.requestFetch(want)
  }

  private resend(e: OutFlight, now: number): void {
    // MQTT 5.0: what is left of its Message Expiry Interval, now; undefined: none (or no interval).
    let properties = e.properties
    const expiry = properties?.messageExpiryInterval
    if (e.phase === "publish" && expiry !== undefined && e.receivedAt !== undefined) {
      const left = forwardedExpiry(expiry, e.receivedAt, now)
      if (left === undefined && e.qos === 1) {
        // Its life ran out since it was sent: a QoS 1 message is not sent again (nor read
        // back for it), as one still queued would not be [MQTT-3.3.2-5]; its packet id is
        // free (a QoS 1 receiver keeps no state for it).
        this.out.inflight.delete(e.packetId)
        if (e.payload !== undefined) this.deps.released?.(e.payload)
        this.emit({ type: "drop", reason: "expired", ref: e.ref })
        return
      }
      // A QoS 2 message whose PUBLISH went out completes its exchange whatever its age
      // [MQTT-4.3.3-7]: it goes again with nothing left (0) once its interval ran out.
      if (left !== expiry) properties = { ...properties, messageExpiryInterval: left ?? 0 }
    }
    this.out.touch(e, now + this.config.ackWaitMs)
    // Not in memory: read back from the store first (`fetched` resends it).
    if (e.phase === "publish" && e.payload === undefined) return this.requestFetch([e])
    if (e.phase === "pubrel") this.send({ cmd: "pubrel", messageId: e.packetId })
    else {
      this.send({ cmd: "publish", topic: e.topic, payload: e.payload!, qos: e.qos, retain: e.retain, dup: true, messageId: e.packetId, properties })
      this.afterSend(e)
    }
  }

  /** The resend of a resumed session, in order [MQTT-4.4.0-1], then new messages. */
  private resendAll(now: number): void {
    this.resendWaiting = 0
    this.resumePending = false
    for (const e of this.out.inSendOrder()) this.resend(e, now)
    this.fillWindow(now)
  }

  /**
   * Ask the shell for the payloads of stored messages not in memory. The shell answers
   * with `fetched` at the pace the client's socket drains; each ref is asked for once.
   */
  private requestFetch(entries: ReadonlyArray<Queued | OutFlight>): void {
    const refs: number[] = []
    for (const e of entries) {
      const ref = e.ref
      if (typeof ref !== "number" || this.fetching.has(ref)) continue
      this.fetching.set(ref, e)
      refs.push(ref)
    }
    if (refs.length > 0) this.emit({ type: "fetch", refs })
  }

  /**
   * Stored messages read back: their payloads (undefined: no longer stored, the message is
   * let go) and the QoS they were published with (a recovered one may be lower than the
   * subscription's grant). A resumed session's resend goes once all of it is here.
   */
  private onFetched(messages: ReadonlyArray<{ readonly ref: number; readonly payload: Uint8Array | undefined; readonly qos?: number | undefined } & StoredProperties>, now: number): void {
    if (this.phase !== "connected") return
    // In-flight messages read back for an ack_wait resend (not a resumed session's): sent on arrival.
    const resends: OutFlight[] = []
    for (const m of messages) {
      const e = this.fetching.get(m.ref)
      if (e === undefined) continue
      this.fetching.delete(m.ref)
      const inFlight = "packetId" in e
      if (m.payload === undefined) {
        if (inFlight) {
          if (this.out.inflight.get(e.packetId) === e) this.out.inflight.delete(e.packetId)
        } else e.gone = true
        this.emit({ type: "drop", reason: "gone", ref: e.ref })
      } else {
        e.payload = m.payload
        if (!inFlight && (m.qos === 1 || m.qos === 2) && m.qos < e.qos) e.qos = m.qos
        // MQTT 5.0: the properties its stored copy kept, beside the Subscription Identifiers it was queued with.
        if (m.properties !== undefined && this.versionValue === 5) {
          e.properties = e.properties?.subscriptionIdentifiers === undefined ? m.properties : { ...m.properties, subscriptionIdentifiers: e.properties.subscriptionIdentifiers }
          if (m.properties.messageExpiryInterval !== undefined) e.receivedAt = m.receivedAt
        }
        if (inFlight && !this.resumePending && e.phase === "publish" && this.out.inflight.get(e.packetId) === e) resends.push(e)
      }
      if (inFlight && this.resendWaiting > 0) this.resendWaiting--
    }
    for (const e of resends) this.resend(e, now)
    if (this.resendWaiting > 0) return
    if (this.resumePending) return this.resendAll(now)
    this.fillWindow(now)
  }

  private onTick(now: number): void {
    if (this.phase === "awaitConnect") {
      const t = this.config.connectTimeoutMs
      if (t !== undefined && now >= this.openedAt + t) this.close(CloseReason.ConnectTimeout, false)
      return
    }
    // Silence for 1.5 x keepalive closes the connection, will published [MQTT-3.1.2-24].
    if (this.keepaliveMs > 0 && now >= this.lastActivity + this.keepaliveMs * 1.5) {
      return this.close(CloseReason.KeepaliveTimeout, true, ReasonCode.KeepAliveTimeout)
    }
    if (this.phase !== "connected") return
    // MQTT 5.0 resends only on a new connection [MQTT-4.4.0-1]; 3.1.1 after ack_wait too.
    if (this.versionValue === 5) return
    for (const e of this.out.due(now)) this.resend(e, now)
  }

  // ---- configuration reload ----

  /** New ack_wait / max_ack_pending (a reload): from the next delivery and redelivery deadline on. */
  setLimits(config: SessionConfig): void {
    this.config = config
    this.out.maxAckPending = Math.min(config.maxAckPending, this.clientReceiveMaximum)
    this.out.maxQueued = config.maxQueued
    this.out.maxQueuedBytes = config.maxQueuedBytes ?? 0
  }

  /** Subscriptions the client may no longer have: gone without an UNSUBACK (it asked for nothing), and forgotten by the stored session. */
  private onRevoked(filters: ReadonlyArray<string>): void {
    for (const filter of filters) {
      const s = this.subs.get(filter)
      if (s === undefined) continue
      this.deleteSub(s)
      this.emit({ type: "unsubscribe", filter, subjects: s.subjects })
      this.persistSubscription(filter, undefined)
    }
  }
}
