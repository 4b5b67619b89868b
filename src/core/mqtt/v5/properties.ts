// MQTT 5.0 properties (section 2.2.2): the identifier table, which packet may carry
// which property and how often, the value rules, and reading and writing a property
// block. A property a packet may not carry is a Malformed Packet (2.2.2.2); one repeated
// where only one is allowed, or with a value the standard forbids, a Protocol Error.
import { utf8Length } from "../topic.js"
import { ReasonCode } from "./reason.js"
import { malformed, PacketError, protocolError, type Reader, vbiLength } from "./reader.js"
import { NO_PROPERTIES, type Properties, type PropertyName, type Sender } from "./types.js"

/** Where properties stand: each packet type, and the Will Properties of a CONNECT. */
export type PropertyContext =
  | "connect" | "will" | "connack" | "publish" | "puback" | "pubrec" | "pubrel" | "pubcomp"
  | "subscribe" | "suback" | "unsubscribe" | "unsuback" | "disconnect" | "auth"

const CONTEXT_BIT: Record<PropertyContext, number> = {
  connect: 1 << 0,
  will: 1 << 1,
  connack: 1 << 2,
  publish: 1 << 3,
  puback: 1 << 4,
  pubrec: 1 << 5,
  pubrel: 1 << 6,
  pubcomp: 1 << 7,
  subscribe: 1 << 8,
  suback: 1 << 9,
  unsubscribe: 1 << 10,
  unsuback: 1 << 11,
  disconnect: 1 << 12,
  auth: 1 << 13
}

const CONTEXT_NAME: Record<PropertyContext, string> = {
  connect: "CONNECT", will: "Will Properties", connack: "CONNACK", publish: "PUBLISH", puback: "PUBACK",
  pubrec: "PUBREC", pubrel: "PUBREL", pubcomp: "PUBCOMP", subscribe: "SUBSCRIBE", suback: "SUBACK",
  unsubscribe: "UNSUBSCRIBE", unsuback: "UNSUBACK", disconnect: "DISCONNECT", auth: "AUTH"
}

const ctx = (...cs: ReadonlyArray<PropertyContext>): number => cs.reduce((m, c) => m | CONTEXT_BIT[c], 0)

/** Wire types: `flag` is a Byte that must be 0 or 1. */
type PropertyType = "flag" | "byte" | "u16" | "u32" | "vbi" | "string" | "binary" | "pair"

interface PropertyDef {
  readonly id: number
  readonly name: PropertyName
  /** As the standard names it, for error texts. */
  readonly title: string
  readonly type: PropertyType
  readonly contexts: number
  /** May appear more than once (User Property, Subscription Identifier). */
  readonly multiple: boolean
}

const def = (id: number, name: PropertyName, title: string, type: PropertyType, contexts: number, multiple = false): PropertyDef =>
  ({ id, name, title, type, contexts, multiple })

const REASON_CONTEXTS = ctx("connack", "puback", "pubrec", "pubrel", "pubcomp", "suback", "unsuback", "disconnect", "auth")
const MESSAGE = ctx("publish", "will")

/**
 * Every property of MQTT 5.0 (table 2-4), in the order the encoder writes them: the
 * per-delivery ones of a PUBLISH first, then the message's own (so a PUBLISH can append
 * a block encoded once per message), the rest, and User Properties last.
 */
export const PROPERTIES: ReadonlyArray<PropertyDef> = [
  def(0x23, "topicAlias", "Topic Alias", "u16", ctx("publish")),
  def(0x02, "messageExpiryInterval", "Message Expiry Interval", "u32", MESSAGE),
  def(0x0b, "subscriptionIdentifiers", "Subscription Identifier", "vbi", ctx("publish", "subscribe"), true),
  def(0x01, "payloadFormatIndicator", "Payload Format Indicator", "flag", MESSAGE),
  def(0x03, "contentType", "Content Type", "string", MESSAGE),
  def(0x08, "responseTopic", "Response Topic", "string", MESSAGE),
  def(0x09, "correlationData", "Correlation Data", "binary", MESSAGE),
  def(0x11, "sessionExpiryInterval", "Session Expiry Interval", "u32", ctx("connect", "connack", "disconnect")),
  def(0x12, "assignedClientIdentifier", "Assigned Client Identifier", "string", ctx("connack")),
  def(0x13, "serverKeepAlive", "Server Keep Alive", "u16", ctx("connack")),
  def(0x15, "authenticationMethod", "Authentication Method", "string", ctx("connect", "connack", "auth")),
  def(0x16, "authenticationData", "Authentication Data", "binary", ctx("connect", "connack", "auth")),
  def(0x17, "requestProblemInformation", "Request Problem Information", "flag", ctx("connect")),
  def(0x18, "willDelayInterval", "Will Delay Interval", "u32", ctx("will")),
  def(0x19, "requestResponseInformation", "Request Response Information", "flag", ctx("connect")),
  def(0x1a, "responseInformation", "Response Information", "string", ctx("connack")),
  def(0x1c, "serverReference", "Server Reference", "string", ctx("connack", "disconnect")),
  def(0x1f, "reasonString", "Reason String", "string", REASON_CONTEXTS),
  def(0x21, "receiveMaximum", "Receive Maximum", "u16", ctx("connect", "connack")),
  def(0x22, "topicAliasMaximum", "Topic Alias Maximum", "u16", ctx("connect", "connack")),
  def(0x24, "maximumQoS", "Maximum QoS", "byte", ctx("connack")),
  def(0x25, "retainAvailable", "Retain Available", "flag", ctx("connack")),
  def(0x27, "maximumPacketSize", "Maximum Packet Size", "u32", ctx("connect", "connack")),
  def(0x28, "wildcardSubscriptionAvailable", "Wildcard Subscription Available", "flag", ctx("connack")),
  def(0x29, "subscriptionIdentifiersAvailable", "Subscription Identifier Available", "flag", ctx("connack")),
  def(0x2a, "sharedSubscriptionAvailable", "Shared Subscription Available", "flag", ctx("connack")),
  def(0x26, "userProperties", "User Property", "pair", REASON_CONTEXTS | MESSAGE | ctx("connect", "subscribe", "unsubscribe"), true)
]

const BY_ID: ReadonlyArray<PropertyDef | undefined> = (() => {
  const table: Array<PropertyDef | undefined> = new Array(128).fill(undefined)
  for (const d of PROPERTIES) table[d.id] = d
  return table
})()

const BY_NAME: ReadonlyMap<string, PropertyDef> = new Map(PROPERTIES.map((d) => [d.name, d]))

/** The property's identifier byte. */
export const propertyId = (name: PropertyName): number => BY_NAME.get(name)!.id

/** May `name` stand in `context`? (Table 2-4.) */
export const propertyAllowed = (name: PropertyName, context: PropertyContext): boolean =>
  (BY_NAME.get(name)!.contexts & CONTEXT_BIT[context]) !== 0

/** The largest Subscription Identifier (a four-byte Variable Byte Integer). */
export const MAX_SUBSCRIPTION_IDENTIFIER = 268_435_455

/** Does a topic (a Response Topic here) contain a wildcard character? */
const hasWildcard = (s: string): boolean => s.includes("+") || s.includes("#")

/**
 * The value rules of one property: 0/1 flags, the values the standard calls a Protocol
 * Error, and the rules that depend on who sends it. Undefined when the value is allowed.
 */
const valueViolation = (d: PropertyDef, value: unknown, context: PropertyContext, from: Sender): PacketError | undefined => {
  switch (d.name) {
    case "receiveMaximum":
      return value === 0 ? protocolError("Receive Maximum of 0") : undefined
    case "maximumPacketSize":
      return value === 0 ? protocolError("Maximum Packet Size of 0") : undefined
    case "maximumQoS":
      return value !== 0 && value !== 1 ? protocolError(`Maximum QoS of ${String(value)}`) : undefined
    case "topicAlias":
      return value === 0 ? new PacketError(ReasonCode.TopicAliasInvalid, "Topic Alias of 0", "MQTT-3.3.2-8") : undefined
    case "subscriptionIdentifiers":
      if (value === 0) return protocolError("Subscription Identifier of 0")
      if (context === "publish" && from === "client") return protocolError("PUBLISH from a client with a Subscription Identifier", "MQTT-3.3.4-6")
      return undefined
    case "sessionExpiryInterval":
      return context === "disconnect" && from === "server"
        ? protocolError("Session Expiry Interval on a DISCONNECT from the server", "MQTT-3.14.2-2")
        : undefined
    case "responseTopic": {
      const t = value as string
      if (t.length === 0) return protocolError("empty Response Topic", "MQTT-4.7.3-1")
      return hasWildcard(t) ? protocolError("Response Topic with a wildcard character", "MQTT-3.3.2-14") : undefined
    }
    default:
      return undefined
  }
}

/** Rules across properties of one block. */
const blockViolation = (p: Record<string, unknown>, context: PropertyContext): PacketError | undefined => {
  if (p.authenticationData !== undefined && p.authenticationMethod === undefined) {
    return protocolError("Authentication Data without an Authentication Method")
  }
  const ids = p.subscriptionIdentifiers as ReadonlyArray<number> | undefined
  if (context === "subscribe" && ids !== undefined && ids.length > 1) return protocolError("more than one Subscription Identifier in a SUBSCRIBE")
  return undefined
}

// ---- reading ----

const readValue = (r: Reader, d: PropertyDef): unknown => {
  switch (d.type) {
    case "flag": {
      const v = r.byte(d.title)
      if (v > 1) throw protocolError(`${d.title} of ${v} (must be 0 or 1)`)
      return v === 1
    }
    case "byte":
      return r.byte(d.title)
    case "u16":
      return r.u16(d.title)
    case "u32":
      return r.u32(d.title)
    case "vbi":
      return r.vbi(d.title)
    case "string":
      return r.string(d.title)
    case "binary":
      return r.binary(d.title)
    case "pair":
      // both strings follow the string rules [MQTT-1.5.7-1]
      return [r.string("User Property name"), r.string("User Property value")] as const
  }
}

/**
 * Reads a Property Length and the properties after it, for `context` as sent by `from`.
 * A block without properties yields the shared `NO_PROPERTIES`.
 */
export const readProperties = (r: Reader, context: PropertyContext, from: Sender): Properties => {
  const length = r.vbi("Property Length")
  if (length === 0) return NO_PROPERTIES
  if (length > r.remaining) throw malformed(`Property Length ${length} past the end of the packet`)
  const end = r.pos + length
  const outer = r.end
  r.end = end // no value may run past the block
  const bit = CONTEXT_BIT[context]
  const out: Record<string, unknown> = {}
  while (r.pos < end) {
    const id = r.byte("property identifier")
    // Every identifier of v5 is one byte: a longer Variable Byte Integer names none.
    const d = id < 0x80 ? BY_ID[id] : undefined
    if (d === undefined) throw malformed(`unknown property identifier 0x${id.toString(16)}`)
    if ((d.contexts & bit) === 0) throw malformed(`${d.title} is not allowed in ${CONTEXT_NAME[context]}`)
    const value = readValue(r, d)
    const bad = valueViolation(d, value, context, from)
    if (bad !== undefined) throw bad
    if (d.multiple) {
      const list = out[d.name] as Array<unknown> | undefined
      if (list === undefined) out[d.name] = [value]
      else list.push(value)
    } else if (out[d.name] !== undefined) {
      throw protocolError(`${d.title} more than once in ${CONTEXT_NAME[context]}`)
    } else {
      out[d.name] = value
    }
  }
  r.end = outer
  const bad = blockViolation(out, context)
  if (bad !== undefined) throw bad
  return out as Properties
}

// ---- writing ----

/** The bytes a string takes in UTF-8, checked as the encoder must write it: well-formed, no U+0000, at most 65,535 bytes. */
export const encodableStringLength = (s: string, what: string): number => {
  const n = utf8Length(s)
  if (n < 0) throw malformed(`${what} is not well-formed UTF-8`, "MQTT-1.5.4-1")
  if (n > 65_535) throw malformed(`${what} of ${n} bytes is longer than 65,535`)
  if (s.includes("\u0000")) throw malformed(`${what} contains U+0000`, "MQTT-1.5.4-2")
  return n
}

const binaryLength = (b: Uint8Array, what: string): number => {
  if (b.length > 65_535) throw malformed(`${what} of ${b.length} bytes is longer than 65,535`)
  return b.length
}

const valueLength = (d: PropertyDef, v: unknown): number => {
  switch (d.type) {
    case "flag":
    case "byte":
      return 1
    case "u16":
      return 2
    case "u32":
      return 4
    case "vbi":
      return vbiLength(v as number)
    case "string":
      return 2 + encodableStringLength(v as string, d.title)
    case "binary":
      return 2 + binaryLength(v as Uint8Array, d.title)
    case "pair": {
      const [k, x] = v as readonly [string, string]
      return 4 + encodableStringLength(k, "User Property name") + encodableStringLength(x, "User Property value")
    }
  }
}

const inRange = (d: PropertyDef, v: unknown): boolean => {
  switch (d.type) {
    case "flag":
      return typeof v === "boolean"
    case "byte":
      return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0xff
    case "u16":
      return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0xffff
    case "u32":
      return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0xffff_ffff
    case "vbi":
      return Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_SUBSCRIPTION_IDENTIFIER
    case "string":
      return typeof v === "string"
    case "binary":
      return v instanceof Uint8Array
    case "pair":
      return Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "string"
  }
}

/**
 * The bytes of the property block (without its Property Length), after checking that
 * every property may stand in `context` and holds an allowed value: the encoder never
 * writes what the decoder would refuse.
 */
export const propertiesLength = (p: Properties, context: PropertyContext, from: Sender): number => {
  if (p === NO_PROPERTIES) return 0
  const bit = CONTEXT_BIT[context]
  const rec = p as Record<string, unknown>
  let n = 0
  for (const d of PROPERTIES) {
    const v = rec[d.name]
    if (v === undefined) continue
    if ((d.contexts & bit) === 0) throw malformed(`${d.title} is not allowed in ${CONTEXT_NAME[context]}`)
    const values: ReadonlyArray<unknown> = d.multiple ? (v as ReadonlyArray<unknown>) : [v]
    for (const x of values) {
      if (!inRange(d, x)) throw malformed(`${d.title} value ${String(x)} does not fit its type`)
      const bad = valueViolation(d, x, context, from)
      if (bad !== undefined) throw bad
      n += 1 + valueLength(d, x)
    }
  }
  const bad = blockViolation(rec, context)
  if (bad !== undefined) throw bad
  return n
}

/** A Variable Byte Integer (at most 268,435,455: it fits 32 bits) at b[i]; returns the position after it. */
export const putVbi = (b: Buffer, i: number, value: number): number => {
  let n = value >>> 0
  while (n >= 0x80) {
    b[i++] = (n & 0x7f) | 0x80
    n >>>= 7
  }
  b[i++] = n
  return i
}

export const putU16 = (b: Buffer, i: number, v: number): number => {
  b[i] = v >> 8
  b[i + 1] = v & 0xff
  return i + 2
}

export const putU32 = (b: Buffer, i: number, v: number): number => {
  b.writeUInt32BE(v, i)
  return i + 4
}

/** A length-prefixed UTF-8 string of `n` bytes (from encodableStringLength). */
export const putString = (b: Buffer, i: number, s: string, n: number): number => {
  i = putU16(b, i, n)
  if (n === s.length) {
    for (let k = 0; k < n; k++) b[i + k] = s.charCodeAt(k)
    return i + n
  }
  return i + b.write(s, i, n, "utf8")
}

export const putBinary = (b: Buffer, i: number, v: Uint8Array): number => {
  i = putU16(b, i, v.length)
  b.set(v, i)
  return i + v.length
}

const putValue = (b: Buffer, i: number, d: PropertyDef, v: unknown): number => {
  switch (d.type) {
    case "flag":
      b[i] = v === true ? 1 : 0
      return i + 1
    case "byte":
      b[i] = v as number
      return i + 1
    case "u16":
      return putU16(b, i, v as number)
    case "u32":
      return putU32(b, i, v as number)
    case "vbi":
      return putVbi(b, i, v as number)
    case "string":
      return putString(b, i, v as string, utf8Length(v as string))
    case "binary":
      return putBinary(b, i, v as Uint8Array)
    case "pair": {
      const [k, x] = v as readonly [string, string]
      i = putString(b, i, k, utf8Length(k))
      return putString(b, i, x, utf8Length(x))
    }
  }
}

/** Writes the properties (validated by `propertiesLength`) at b[i], without their length; returns the end. */
export const putProperties = (b: Buffer, i: number, p: Properties): number => {
  if (p === NO_PROPERTIES) return i
  const rec = p as Record<string, unknown>
  for (const d of PROPERTIES) {
    const v = rec[d.name]
    if (v === undefined) continue
    const values: ReadonlyArray<unknown> = d.multiple ? (v as ReadonlyArray<unknown>) : [v]
    for (const x of values) {
      b[i++] = d.id
      i = putValue(b, i, d, x)
    }
  }
  return i
}
