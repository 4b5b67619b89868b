// Plain-data shapes of the MQTT session machine: packets (field names follow
// mqtt-packet so the codec maps 1:1), inputs from the shell and actions to it. A
// connection on MQTT 5.0 gets the packets of the v5 decoder (v5/types.ts), which are
// these with properties and reason codes: the optional fields below.
import type { MessageProperties, Properties } from "./v5/types.js"

export type QoS = 0 | 1 | 2

export interface Will {
  readonly topic: string
  readonly payload: Uint8Array
  readonly qos: number
  readonly retain: boolean
  /** MQTT 5.0 Will Properties. */
  readonly properties?: Properties | undefined
}

/** Raw CONNECT flag bits, when the codec passes them through (for validation). */
export interface ConnectFlags {
  readonly reserved: boolean
  readonly will: boolean
  readonly willQos: number
  readonly willRetain: boolean
  readonly username: boolean
  readonly password: boolean
}

export interface ConnectPacket {
  readonly cmd: "connect"
  readonly protocolId: string
  readonly protocolVersion: number
  readonly clean: boolean
  readonly clientId: string
  readonly keepalive: number
  readonly username?: string | undefined
  readonly password?: Uint8Array | undefined
  readonly will?: Will | undefined
  readonly flags?: ConnectFlags | undefined
  /** MQTT 5.0 (protocolVersion 5). */
  readonly properties?: Properties | undefined
}

export interface PublishPacket {
  readonly cmd: "publish"
  readonly topic: string
  readonly payload: Uint8Array
  readonly qos: number
  readonly retain: boolean
  readonly dup: boolean
  readonly messageId?: number | undefined
  /** MQTT 5.0 (a server PUBLISH of a v5 connection may carry them too). */
  readonly properties?: Properties | undefined
}

/** A v5 Subscription Options byte as mqtt-packet names its parts (absent on 3.1.1). */
export interface SubscriptionRequest {
  readonly topic: string
  readonly qos: number
  /** No Local. */
  readonly nl?: boolean | undefined
  /** Retain As Published. */
  readonly rap?: boolean | undefined
  /** Retain Handling: 0 send retained, 1 only for a new subscription, 2 never. */
  readonly rh?: number | undefined
}

/** What MQTT 5.0 adds to a packet: its reason code (absent: Success) and properties. */
interface V5Fields {
  readonly reasonCode?: number | undefined
  readonly properties?: Properties | undefined
}

export type ClientPacket =
  | ConnectPacket
  | PublishPacket
  | ({ readonly cmd: "puback" | "pubrec" | "pubrel" | "pubcomp"; readonly messageId: number } & V5Fields)
  | {
    readonly cmd: "subscribe"
    readonly messageId: number
    readonly subscriptions: ReadonlyArray<SubscriptionRequest>
    readonly properties?: Properties | undefined
  }
  | {
    readonly cmd: "unsubscribe"
    readonly messageId: number
    readonly unsubscriptions: ReadonlyArray<string>
    readonly properties?: Properties | undefined
  }
  | { readonly cmd: "pingreq" }
  | ({ readonly cmd: "disconnect" } & V5Fields)
  /** MQTT 5.0 enhanced authentication (the server implements no method). */
  | ({ readonly cmd: "auth" } & V5Fields)
  // Server-to-client packets: a client sending one is a protocol violation.
  | { readonly cmd: "connack" | "suback" | "unsuback" | "pingresp" }

/**
 * What the session sends. The 3.1.1 encoder writes the 3.1.1 fields; a v5 connection's
 * packets carry their reason codes and properties too (the bridge encodes them with the
 * v5 encoder), and DISCONNECT, which only v5 servers send.
 */
export type ServerPacket =
  | {
    readonly cmd: "connack"
    readonly returnCode: number
    readonly sessionPresent: boolean
    /** MQTT 5.0: the CONNACK reason code (returnCode is the 3.1.1 one). */
    readonly reasonCode?: number | undefined
    readonly properties?: Properties | undefined
  }
  | PublishPacket
  | ({ readonly cmd: "puback" | "pubrec" | "pubrel" | "pubcomp"; readonly messageId: number } & V5Fields)
  | {
    readonly cmd: "suback"
    readonly messageId: number
    readonly granted: ReadonlyArray<number>
    /** MQTT 5.0: one per filter (granted QoS or a failure code). */
    readonly reasonCodes?: ReadonlyArray<number> | undefined
    readonly properties?: Properties | undefined
  }
  | {
    readonly cmd: "unsuback"
    readonly messageId: number
    /** MQTT 5.0: one per filter (0x00 or 0x11 No subscription existed, or a failure). */
    readonly reasonCodes?: ReadonlyArray<number> | undefined
    readonly properties?: Properties | undefined
  }
  | { readonly cmd: "pingresp" }
  /** MQTT 5.0 only. */
  | { readonly cmd: "disconnect"; readonly reasonCode: number; readonly properties?: Properties | undefined }

/** CONNACK return codes of MQTT 3.1.1. */
export const ConnackCode = {
  Accepted: 0,
  UnacceptableProtocolVersion: 1,
  IdentifierRejected: 2,
  ServerUnavailable: 3,
  BadUsernameOrPassword: 4,
  NotAuthorized: 5
} as const

export const SUBACK_FAILURE = 0x80

/** What a persistent session keeps between connections (in `$MQTT_sess` and friends). */
export interface SessionSnapshot {
  readonly clientId: string
  /**
   * The user that created the session (within its account): only that user resumes it.
   * Undefined for sessions stored before owners were kept.
   */
  readonly owner?: string | undefined
  /**
   * `noLocal`, `id`, `rap`: MQTT 5.0 No Local, Subscription Identifier and Retain As
   * Published; `shared`: made as a Shared Subscription (a `$share/…` filter without it is
   * a literal one, as 3.1.1 reads it).
   */
  readonly subscriptions: ReadonlyArray<{
    readonly filter: string
    readonly qos: QoS
    readonly noLocal?: boolean | undefined
    readonly id?: number | undefined
    readonly rap?: boolean | undefined
    readonly shared?: boolean | undefined
  }>
  readonly outbound: ReadonlyArray<{
    readonly packetId: number
    readonly qos: 1 | 2
    readonly topic: string
    /** Undefined: a stored message (numeric `ref`) the session fetches when it resumes. */
    readonly payload: Uint8Array | undefined
    readonly retain: boolean
    readonly phase: "publish" | "pubrel"
    readonly ref?: string | number | undefined
    /** MQTT 5.0: its properties (kept while the process runs; a stored copy keeps its own). */
    readonly properties?: Properties | undefined
    /** MQTT 5.0: when it was received, for one with a Message Expiry Interval (a resend counts it down from then). */
    readonly receivedAt?: number | undefined
  }>
  /** Messages accepted for delivery but not yet sent (window full). */
  readonly queued: ReadonlyArray<{
    readonly qos: 1 | 2
    readonly topic: string
    /** Undefined: a stored message (numeric `ref`), fetched when the window has room for it. */
    readonly payload: Uint8Array | undefined
    /** Payload bytes (for max_queued_bytes). */
    readonly size: number
    readonly retain: boolean
    readonly ref?: string | number | undefined
    /** MQTT 5.0: its properties and when it was received (its Message Expiry Interval counts from then). */
    readonly properties?: Properties | undefined
    readonly receivedAt?: number | undefined
  }>
  /** Inbound QoS 2 packet ids received and not yet released. */
  readonly inboundQos2: ReadonlyArray<number>
  readonly lastPacketId: number
  /**
   * MQTT 5.0: the Session Expiry Interval, seconds; absent: the session never expires
   * (3.1.1 persistent sessions, and 5.0 ones with 0xFFFFFFFF).
   */
  readonly expiryInterval?: number | undefined
  /** When the session ends unless a connection resumes it (ms since the epoch): set as its connection closes. */
  readonly endsAt?: number | undefined
  /** 5: an MQTT 5.0 session (absent: 3.1.1). */
  readonly protocolVersion?: 5 | undefined
  /** MQTT 5.0: a will waiting for its Will Delay Interval (kept with the session, restarts included). */
  readonly will?: DelayedWill | undefined
}

/** A will waiting for its Will Delay Interval: the publish its session's end (or the delay) sends, as data. */
export interface DelayedWill {
  /** When it is due (ms since the epoch). */
  readonly at: number
  readonly topic: string
  readonly subject: string
  readonly payload: Uint8Array
  readonly qos: QoS
  readonly retain: boolean
  /** MQTT 5.0 Will Properties as the bridge carries them: reply subject and header block. */
  readonly reply?: string | undefined
  readonly hdr?: Buffer | undefined
}

/**
 * MQTT 5.0: the properties a stored copy (a retained message, one read back from the
 * store) kept, and when it was received (ms), from which its Message Expiry Interval
 * counts down [MQTT-3.3.2-5]. The shell gives them to v5 sessions only.
 */
export interface StoredProperties {
  readonly properties?: MessageProperties | undefined
  readonly receivedAt?: number | undefined
}

export type SessionInput =
  | { readonly type: "packet"; readonly packet: ClientPacket }
  /**
   * The shell finished takeover/loading for an accepted CONNECT; `stored` is the persisted
   * session, if any; `owner` the user this connection authenticated as ("" without auth).
   */
  | { readonly type: "sessionReady"; readonly stored?: SessionSnapshot | undefined; readonly owner?: string | undefined }
  /**
   * The shell made a routed message durable (`confirm` of a `publish` action). MQTT 5.0
   * `code`: 0x10 when it matched no subscriber (PUBACK or PUBREC), 0x97 when a storage limit refused
   * it (PUBACK/PUBREC, the message was not routed); absent: Success.
   */
  | { readonly type: "published"; readonly packetId: number; readonly code?: number | undefined }
  /** A message routed to this client (once per message, whatever the number of matching subscriptions). */
  | {
    readonly type: "deliver"
    readonly subject: string
    readonly payload: Uint8Array
    readonly qos: number
    readonly ref?: string | number | undefined
    /** MQTT 5.0: what the NATS message's headers and reply subject make of it (the shell decides only for v5 sessions). */
    readonly properties?: MessageProperties | undefined
    /** Published by this very connection (No Local subscriptions do not take it). */
    readonly local?: boolean | undefined
    /** Published with RETAIN (MQTT 5.0 Retain As Published subscriptions forward it so). */
    readonly retain?: boolean | undefined
  }
  /**
   * Stored messages the session asked for (`fetch`): each payload (undefined when it is no
   * longer stored) and the QoS it was published with, when known.
   */
  | {
    readonly type: "fetched"
    readonly messages: ReadonlyArray<{ readonly ref: number; readonly payload: Uint8Array | undefined; readonly qos?: number | undefined } & StoredProperties>
  }
  /** Retained messages matching a filter the client just subscribed to. */
  | {
    readonly type: "retained"
    readonly filter: string
    readonly messages: ReadonlyArray<{ readonly topic: string; readonly payload: Uint8Array; readonly qos: number } & StoredProperties>
  }
  | { readonly type: "tick" }
  | { readonly type: "connectionLost" }
  /** The codec could not decode the bytes (malformed packet); `code`: the MQTT 5.0 reason code to close with (default 0x81). */
  | { readonly type: "protocolError"; readonly reason: string; readonly code?: number | undefined }
  /** Another connection with the same client id took this session over. */
  | { readonly type: "takenOver" }
  /** The shell refuses an accepted CONNECT (e.g. a client id flapping between connections). */
  | { readonly type: "refused"; readonly code: typeof ConnackCode.ServerUnavailable | typeof ConnackCode.IdentifierRejected }
  /** A configuration reload took these subscriptions from the client's permissions. */
  | { readonly type: "revoked"; readonly filters: ReadonlyArray<string> }
  /** A configuration reload no longer admits the client's credentials: closed, without its will. */
  | { readonly type: "deauthorized" }

export type PersistStream = "$MQTT_sess" | "$MQTT_out" | "$MQTT_qos2in"

export type SessionAction =
  | { readonly type: "send"; readonly packet: ServerPacket }
  | { readonly type: "close"; readonly reason: string }
  /**
   * Route a message to NATS. With `confirm`, the shell inputs `published(confirm)`
   * once the message is durable (QoS 1/2 acknowledgment waits for it). For QoS 2 the
   * shell also keeps the de-duplication record (`$MQTT_qos2in`) of a persistent session,
   * durable before the message is forwarded or acknowledged.
   */
  | {
    readonly type: "publish"
    readonly subject: string
    readonly payload: Uint8Array
    readonly qos: QoS
    readonly retain: boolean
    readonly confirm?: number | undefined
    /** MQTT 5.0: the reply subject its Response Topic (and Correlation Data) make. */
    readonly reply?: string | undefined
    /** MQTT 5.0: the NATS header block its properties make (`headerBlock`). */
    readonly hdr?: Buffer | undefined
  }
  /** A persistent session's subscription to `filter` is now `qos` (undefined: removed); the shell keeps it. */
  | {
    readonly type: "persistSubscription"
    readonly filter: string
    readonly qos: QoS | undefined
    /** MQTT 5.0 options the record keeps (No Local, Subscription Identifier, Retain As Published, shared). */
    readonly options?: { readonly noLocal?: boolean | undefined; readonly id?: number | undefined; readonly rap?: boolean | undefined; readonly shared?: boolean | undefined } | undefined
  }
  /** Write (record) or delete (undefined) the record `key` of a `$MQTT_*` stream. */
  | { readonly type: "persist"; readonly stream: PersistStream; readonly key: string; readonly record: unknown }
  | {
    readonly type: "storeRetained"
    readonly topic: string
    readonly subject: string
    readonly payload: Uint8Array
    readonly qos: QoS
    /** MQTT 5.0: the reply subject and header block of its properties, kept with the retained copy [MQTT-3.3.1-5]. */
    readonly reply?: string | undefined
    readonly hdr?: Buffer | undefined
  }
  | { readonly type: "deleteRetained"; readonly topic: string; readonly subject: string }
  /** CONNECT passed validation: the shell takes over any older connection, loads the session, then inputs `sessionReady`. */
  | {
    readonly type: "accept"
    readonly clientId: string
    /** Clean Session (3.1.1) or Clean Start (5.0): a stored session under the id is discarded, not resumed. */
    readonly cleanSession: boolean
    /** The session outlives the connection (3.1.1: not Clean Session; 5.0: a Session Expiry Interval above 0). */
    readonly persistent: boolean
    readonly assignedId: boolean
  }
  /** Add (or replace) the subscription `filter` on `subjects`. */
  | {
    readonly type: "subscribe"
    readonly filter: string
    readonly subjects: ReadonlyArray<string>
    readonly qos: QoS
    /** Re-established from a stored session: no retained messages are due [MQTT-3.3.1-6 applies to new subscriptions]. */
    readonly restored: boolean
    /** MQTT 5.0 Shared Subscription: the NATS queue group it joins. */
    readonly queue?: string | undefined
  }
  | { readonly type: "unsubscribe"; readonly filter: string; readonly subjects: ReadonlyArray<string> }
  /**
   * After the SUBACK: the shell looks up the retained messages matching a new
   * subscription's filter and inputs them as `retained` [MQTT-3.3.1-6].
   */
  | { readonly type: "wantRetained"; readonly filter: string }
  /** The stored outbound message `ref` is acknowledged and may be removed. */
  | { readonly type: "ack"; readonly ref: string | number }
  /**
   * A message will not be sent: the oldest waiting one gave way to a newer one at the queue's
   * bounds (`queue_full`), the client may no longer receive it (`not_permitted`: a stored
   * message of a resumed session), or it is no longer stored (`gone`), or (MQTT 5.0) it is
   * larger than the client's Maximum Packet Size (`packet_too_large`).
   */
  | {
    readonly type: "drop"
    readonly reason: "queue_full" | "not_permitted" | "gone" | "packet_too_large" | "expired"
    readonly ref?: string | number | undefined
  }
  /**
   * Read these stored messages (refs of `$MQTT_msgs`) back for sending: the shell answers
   * with `fetched`, as fast as the client's socket drains.
   */
  | { readonly type: "fetch"; readonly refs: ReadonlyArray<number> }
  /**
   * Refused by the client's permissions (the shell logs it): a PUBLISH, a SUBSCRIBE filter,
   * the will (at CONNECT, refused with CONNACK 5; or when it was due), or a stored
   * subscription the resuming user may not have.
   */
  | { readonly type: "denied"; readonly op: "publish" | "subscribe" | "will"; readonly topic: string }
  /**
   * The stored session under this client id belongs to another user: it is not resumed but
   * discarded (its record, QoS 2 state and hold on stored messages), and a fresh one starts.
   */
  | { readonly type: "discardStored"; readonly stored: SessionSnapshot }
  | { readonly type: "deadline"; readonly at: number }
  /**
   * MQTT 5.0: the will's actions, to be carried out `afterMs` from now (its Will Delay
   * Interval, or the session's end if sooner), unless a new connection takes up the
   * session before then [MQTT-3.1.3-9].
   */
  | { readonly type: "willDelayed"; readonly afterMs: number; readonly actions: ReadonlyArray<SessionAction> }
