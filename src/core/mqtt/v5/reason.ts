// MQTT 5.0 reason codes (section 2.4): their names, and which packet may carry which
// code, in which direction. A received packet with a code its type does not allow is a
// Protocol Error; the encoder refuses to write one.

/** Every reason code of MQTT 5.0 by its name in the standard. */
export const ReasonCode = {
  Success: 0x00,
  GrantedQoS1: 0x01,
  GrantedQoS2: 0x02,
  DisconnectWithWillMessage: 0x04,
  NoMatchingSubscribers: 0x10,
  NoSubscriptionExisted: 0x11,
  ContinueAuthentication: 0x18,
  ReAuthenticate: 0x19,
  UnspecifiedError: 0x80,
  MalformedPacket: 0x81,
  ProtocolError: 0x82,
  ImplementationSpecificError: 0x83,
  UnsupportedProtocolVersion: 0x84,
  ClientIdentifierNotValid: 0x85,
  BadUserNameOrPassword: 0x86,
  NotAuthorized: 0x87,
  ServerUnavailable: 0x88,
  ServerBusy: 0x89,
  Banned: 0x8a,
  ServerShuttingDown: 0x8b,
  BadAuthenticationMethod: 0x8c,
  KeepAliveTimeout: 0x8d,
  SessionTakenOver: 0x8e,
  TopicFilterInvalid: 0x8f,
  TopicNameInvalid: 0x90,
  PacketIdentifierInUse: 0x91,
  PacketIdentifierNotFound: 0x92,
  ReceiveMaximumExceeded: 0x93,
  TopicAliasInvalid: 0x94,
  PacketTooLarge: 0x95,
  MessageRateTooHigh: 0x96,
  QuotaExceeded: 0x97,
  AdministrativeAction: 0x98,
  PayloadFormatInvalid: 0x99,
  RetainNotSupported: 0x9a,
  QoSNotSupported: 0x9b,
  UseAnotherServer: 0x9c,
  ServerMoved: 0x9d,
  SharedSubscriptionsNotSupported: 0x9e,
  ConnectionRateExceeded: 0x9f,
  MaximumConnectTime: 0xa0,
  SubscriptionIdentifiersNotSupported: 0xa1,
  WildcardSubscriptionsNotSupported: 0xa2
} as const

export type ReasonCode = (typeof ReasonCode)[keyof typeof ReasonCode]

/** The error codes a decoder or a state machine of this module ends a connection with. */
export type ErrorCode =
  | typeof ReasonCode.MalformedPacket
  | typeof ReasonCode.ProtocolError
  | typeof ReasonCode.UnsupportedProtocolVersion
  | typeof ReasonCode.ReceiveMaximumExceeded
  | typeof ReasonCode.TopicAliasInvalid
  | typeof ReasonCode.PacketTooLarge
  | typeof ReasonCode.TopicNameInvalid
  | typeof ReasonCode.TopicFilterInvalid

const NAMES: Record<number, string> = {
  0x00: "Success",
  0x01: "Granted QoS 1",
  0x02: "Granted QoS 2",
  0x04: "Disconnect with Will Message",
  0x10: "No matching subscribers",
  0x11: "No subscription existed",
  0x18: "Continue authentication",
  0x19: "Re-authenticate",
  0x80: "Unspecified error",
  0x81: "Malformed Packet",
  0x82: "Protocol Error",
  0x83: "Implementation specific error",
  0x84: "Unsupported Protocol Version",
  0x85: "Client Identifier not valid",
  0x86: "Bad User Name or Password",
  0x87: "Not authorized",
  0x88: "Server unavailable",
  0x89: "Server busy",
  0x8a: "Banned",
  0x8b: "Server shutting down",
  0x8c: "Bad authentication method",
  0x8d: "Keep Alive timeout",
  0x8e: "Session taken over",
  0x8f: "Topic Filter invalid",
  0x90: "Topic Name invalid",
  0x91: "Packet Identifier in use",
  0x92: "Packet Identifier not found",
  0x93: "Receive Maximum exceeded",
  0x94: "Topic Alias invalid",
  0x95: "Packet too large",
  0x96: "Message rate too high",
  0x97: "Quota exceeded",
  0x98: "Administrative action",
  0x99: "Payload format invalid",
  0x9a: "Retain not supported",
  0x9b: "QoS not supported",
  0x9c: "Use another server",
  0x9d: "Server moved",
  0x9e: "Shared Subscriptions not supported",
  0x9f: "Connection rate exceeded",
  0xa0: "Maximum connect time",
  0xa1: "Subscription Identifiers not supported",
  0xa2: "Wildcard Subscriptions not supported"
}

/**
 * The name of a reason code as the standard writes it. 0x00 is "Success" except in a
 * DISCONNECT ("Normal disconnection") and a SUBACK ("Granted QoS 0").
 */
export const reasonName = (code: number, cmd?: string): string => {
  if (code === 0 && cmd === "disconnect") return "Normal disconnection"
  if (code === 0 && cmd === "suback") return "Granted QoS 0"
  return NAMES[code] ?? `reason code 0x${code.toString(16).padStart(2, "0")}`
}

/** Packets that carry reason codes. */
export type ReasonPacket = "connack" | "puback" | "pubrec" | "pubrel" | "pubcomp" | "suback" | "unsuback" | "disconnect" | "auth"

const set = (...codes: ReadonlyArray<number>): ReadonlySet<number> => new Set(codes)

const PUBACK_CODES = set(0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99)

/** Which codes each packet may carry [MQTT-3.4.2-1], [MQTT-3.9.3-2], [MQTT-3.14.2-1], … */
const ALLOWED: Record<ReasonPacket, ReadonlySet<number>> = {
  connack: set(0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8c, 0x90, 0x95, 0x97, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9f),
  puback: PUBACK_CODES,
  pubrec: PUBACK_CODES,
  pubrel: set(0x00, 0x92),
  pubcomp: set(0x00, 0x92),
  suback: set(0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8f, 0x91, 0x97, 0x9e, 0xa1, 0xa2),
  unsuback: set(0x00, 0x11, 0x80, 0x83, 0x87, 0x8f, 0x91),
  disconnect: set(
    0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8b, 0x8d, 0x8e, 0x8f, 0x90, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99,
    0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f, 0xa0, 0xa1, 0xa2
  ),
  auth: set(0x00, 0x18, 0x19)
}

/** DISCONNECT codes only a client sends (the rest of the client's are shared with the server). */
const CLIENT_ONLY_DISCONNECT = set(0x04)
/** DISCONNECT codes only a server sends (section 3.14.2.1, "Sent by"). */
const SERVER_ONLY_DISCONNECT = set(0x87, 0x89, 0x8b, 0x8d, 0x8e, 0x8f, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f, 0xa0, 0xa1, 0xa2)

/** Is `code` one the packet `cmd` may carry when `from` sends it? */
export const reasonAllowed = (cmd: ReasonPacket, code: number, from: "client" | "server"): boolean => {
  if (!ALLOWED[cmd].has(code)) return false
  if (cmd !== "disconnect") return true
  return from === "client" ? !SERVER_ONLY_DISCONNECT.has(code) : !CLIENT_ONLY_DISCONNECT.has(code)
}

/** Codes of 0x80 and above report a failure (section 2.4). */
export const isFailure = (code: number): boolean => code >= 0x80
