// Plain-data shapes of MQTT 5.0 packets. Field names follow mqtt-packet's where it has
// them (cmd, messageId, clean, keepalive, …), so the tests can compare with it; where v5
// needs an ordered list (user properties, subscription identifiers) it is an array.

/**
 * The properties of one packet (section 2.2.2). Which a packet may carry, and how
 * often, is in properties.ts; the decoder refuses the rest. Absent means not on the
 * wire (the standard's default applies). One-byte flags (0 or 1 on the wire) are
 * booleans.
 */
export interface Properties {
  readonly payloadFormatIndicator?: boolean
  readonly messageExpiryInterval?: number
  readonly contentType?: string
  readonly responseTopic?: string
  readonly correlationData?: Buffer
  /** One in a SUBSCRIBE; one per matching subscription in a server's PUBLISH. Never 0. */
  readonly subscriptionIdentifiers?: ReadonlyArray<number>
  readonly sessionExpiryInterval?: number
  readonly assignedClientIdentifier?: string
  readonly serverKeepAlive?: number
  readonly authenticationMethod?: string
  readonly authenticationData?: Buffer
  readonly requestProblemInformation?: boolean
  readonly willDelayInterval?: number
  readonly requestResponseInformation?: boolean
  readonly responseInformation?: string
  readonly serverReference?: string
  readonly reasonString?: string
  readonly receiveMaximum?: number
  readonly topicAliasMaximum?: number
  readonly topicAlias?: number
  readonly maximumQoS?: number
  readonly retainAvailable?: boolean
  /** In order, repeats allowed [MQTT-3.3.2-18]. */
  readonly userProperties?: ReadonlyArray<readonly [string, string]>
  readonly maximumPacketSize?: number
  readonly wildcardSubscriptionAvailable?: boolean
  readonly subscriptionIdentifiersAvailable?: boolean
  readonly sharedSubscriptionAvailable?: boolean
}

export type PropertyName = keyof Properties

/** The properties of an Application Message: what travels with it from publisher to subscribers. */
export type MessageProperties = Pick<
  Properties,
  "payloadFormatIndicator" | "messageExpiryInterval" | "contentType" | "responseTopic" | "correlationData" | "userProperties"
>

/** Shared by every packet without properties: decoding allocates nothing for them. */
export const NO_PROPERTIES: Properties = Object.freeze({})

export interface Will {
  readonly topic: string
  readonly payload: Buffer
  readonly qos: number
  readonly retain: boolean
  /** Will Properties: payload format, message expiry, content type, response topic, correlation data, will delay, user properties. */
  readonly properties: Properties
}

export interface Connect {
  readonly cmd: "connect"
  readonly protocolId: "MQTT"
  readonly protocolVersion: 5
  /** Clean Start. */
  readonly clean: boolean
  readonly keepalive: number
  readonly clientId: string
  readonly properties: Properties
  readonly will?: Will | undefined
  readonly username?: string | undefined
  /** v5 allows a password without a user name (section 3.1.2.9). */
  readonly password?: Buffer | undefined
}

export interface Connack {
  readonly cmd: "connack"
  readonly sessionPresent: boolean
  readonly reasonCode: number
  readonly properties: Properties
}

export interface Publish {
  readonly cmd: "publish"
  /** Empty when the packet names its topic by a Topic Alias only. */
  readonly topic: string
  /** A view of the packet's bytes (not copied). */
  readonly payload: Buffer
  readonly qos: number
  readonly retain: boolean
  readonly dup: boolean
  readonly messageId?: number | undefined
  readonly properties: Properties
}

export interface Ack {
  readonly cmd: "puback" | "pubrec" | "pubrel" | "pubcomp"
  readonly messageId: number
  readonly reasonCode: number
  readonly properties: Properties
}

/** Subscription Options (section 3.8.3.1), named as mqtt-packet names them. */
export interface Subscription {
  readonly topic: string
  /** Maximum QoS. */
  readonly qos: number
  /** No Local. */
  readonly nl: boolean
  /** Retain As Published. */
  readonly rap: boolean
  /** Retain Handling: 0 send retained, 1 only for a new subscription, 2 never. */
  readonly rh: number
}

export interface Subscribe {
  readonly cmd: "subscribe"
  readonly messageId: number
  readonly properties: Properties
  readonly subscriptions: ReadonlyArray<Subscription>
}

export interface Suback {
  readonly cmd: "suback"
  readonly messageId: number
  readonly properties: Properties
  /** One per filter, in order [MQTT-3.9.3-1]. */
  readonly reasonCodes: ReadonlyArray<number>
}

export interface Unsubscribe {
  readonly cmd: "unsubscribe"
  readonly messageId: number
  readonly properties: Properties
  readonly unsubscriptions: ReadonlyArray<string>
}

export interface Unsuback {
  readonly cmd: "unsuback"
  readonly messageId: number
  readonly properties: Properties
  /** One per filter, in order [MQTT-3.11.3-1]. */
  readonly reasonCodes: ReadonlyArray<number>
}

export interface Disconnect {
  readonly cmd: "disconnect"
  readonly reasonCode: number
  readonly properties: Properties
}

export interface Auth {
  readonly cmd: "auth"
  readonly reasonCode: number
  readonly properties: Properties
}

export type Packet =
  | Connect
  | Connack
  | Publish
  | Ack
  | Subscribe
  | Suback
  | Unsubscribe
  | Unsuback
  | { readonly cmd: "pingreq" }
  | { readonly cmd: "pingresp" }
  | Disconnect
  | Auth

export type Cmd = Packet["cmd"]

/** Who sent a packet: the decoder checks the direction rules (which packets, which codes, which properties). */
export type Sender = "client" | "server"

/** Packet types (the high nibble of the fixed header); 15 is AUTH in v5. */
export const PacketType = {
  connect: 1,
  connack: 2,
  publish: 3,
  puback: 4,
  pubrec: 5,
  pubrel: 6,
  pubcomp: 7,
  subscribe: 8,
  suback: 9,
  unsubscribe: 10,
  unsuback: 11,
  pingreq: 12,
  pingresp: 13,
  disconnect: 14,
  auth: 15
} as const satisfies Record<Cmd, number>

export const CMD_OF_TYPE: ReadonlyArray<Cmd | undefined> = [
  undefined, "connect", "connack", "publish", "puback", "pubrec", "pubrel", "pubcomp",
  "subscribe", "suback", "unsubscribe", "unsuback", "pingreq", "pingresp", "disconnect", "auth"
]
