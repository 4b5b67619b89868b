// The MQTT 5.0 encoder: every packet written in place into an OutBuf, checked first so
// that it never writes what the decoder would refuse (a property where the packet may
// not carry it, a reason code the packet does not allow, a string that is not
// well-formed). Where the standard allows a short form the bytes are the ones
// mqtt-packet writes (the tests compare them byte by byte). The PUBLISH of the delivery
// path has its own writer: properties that are the same for every receiver are encoded
// once per message (`encodeMessageProperties`), the per-delivery ones (Topic Alias,
// remaining Message Expiry Interval, Subscription Identifiers) are written around them.
import { OutBuf, type Pinner, putBytes } from "../../outbuf.js"
import { utf8Length } from "../topic.js"
import { encodableStringLength, propertiesLength, propertyId, putBinary, putProperties, putString, putU16, putU32, putVbi } from "./properties.js"
import { reasonAllowed, reasonName, type ReasonPacket } from "./reason.js"
import { malformed, MAX_VBI, protocolError, vbiLength } from "./reader.js"
import { type MessageProperties, NO_PROPERTIES, type Packet, PacketType, type Properties, type Publish, type Sender } from "./types.js"

/** Payloads from this size on go by reference (their own writev slot), as in the 3.1.1 encoder. */
export const PUBLISH_BY_REFERENCE = 4096

/** Who sends each packet type when only one side may. */
const NATURAL_SENDER: Partial<Record<Packet["cmd"], Sender>> = {
  connect: "client", subscribe: "client", unsubscribe: "client", pingreq: "client",
  connack: "server", suback: "server", unsuback: "server", pingresp: "server"
}

const checkReason = (cmd: ReasonPacket, code: number, from: Sender): void => {
  if (!reasonAllowed(cmd, code, from)) throw protocolError(`${cmd.toUpperCase()} from a ${from} cannot carry ${reasonName(code)} (0x${code.toString(16)})`)
}

const checkPacketId = (id: number | undefined): number => {
  if (id === undefined || !Number.isInteger(id) || id < 1 || id > 0xffff) throw protocolError(`packet identifier ${String(id)}`, "MQTT-2.2.1-3")
  return id
}

/** Property Length plus the properties. */
const propertyBlock = (props: number): number => vbiLength(props) + props

/**
 * What a packet needs before it is written: its remaining length and the sizes of the
 * parts the writer needs again. One allocation per packet, not per part.
 */
interface Plan {
  remaining: number
  props: number
  /** Will Properties (CONNECT). */
  willProps: number
  /** UTF-8 byte lengths of the strings, in writing order. */
  strings: Array<number>
}

const plan = (p: Packet, from: Sender): Plan => {
  const pl: Plan = { remaining: 0, props: 0, willProps: 0, strings: [] }
  const str = (s: string, what: string): number => {
    const n = encodableStringLength(s, what)
    pl.strings.push(n)
    return 2 + n
  }
  switch (p.cmd) {
    case "connect": {
      pl.props = propertiesLength(p.properties, "connect", from)
      let n = 2 + 4 + 1 + 1 + 2 + propertyBlock(pl.props) + str(p.clientId, "Client Identifier")
      if (p.will !== undefined) {
        if (!(p.will.qos >= 0 && p.will.qos <= 2)) throw malformed(`Will QoS ${p.will.qos}`, "MQTT-3.1.2-12")
        pl.willProps = propertiesLength(p.will.properties, "will", from)
        n += propertyBlock(pl.willProps) + str(p.will.topic, "Will Topic") + 2 + binaryLength(p.will.payload, "Will Payload")
      }
      if (p.username !== undefined) n += str(p.username, "User Name")
      if (p.password !== undefined) n += 2 + binaryLength(p.password, "Password")
      pl.remaining = n
      return pl
    }
    case "connack":
      checkReason("connack", p.reasonCode, from)
      if (p.sessionPresent && p.reasonCode !== 0) throw protocolError("Session Present with a failure reason code", "MQTT-3.2.2-6")
      pl.props = propertiesLength(p.properties, "connack", from)
      pl.remaining = 2 + propertyBlock(pl.props)
      return pl
    case "publish": {
      if (!(p.qos >= 0 && p.qos <= 2)) throw malformed(`PUBLISH QoS ${p.qos}`, "MQTT-3.3.1-4")
      if (p.qos === 0 && p.dup) throw malformed("PUBLISH with DUP set on QoS 0", "MQTT-3.3.1-2")
      if (p.qos > 0) checkPacketId(p.messageId)
      if (p.topic.length === 0 && p.properties.topicAlias === undefined) throw protocolError("PUBLISH with an empty Topic Name and no Topic Alias")
      pl.props = propertiesLength(p.properties, "publish", from)
      pl.remaining = str(p.topic, "Topic Name") + (p.qos > 0 ? 2 : 0) + propertyBlock(pl.props) + p.payload.length
      return pl
    }
    case "puback":
    case "pubrec":
    case "pubrel":
    case "pubcomp":
      checkPacketId(p.messageId)
      checkReason(p.cmd, p.reasonCode, from)
      pl.props = propertiesLength(p.properties, p.cmd, from)
      // the short form (2 bytes) for Success without properties, else reason code and Property Length
      pl.remaining = p.reasonCode === 0 && pl.props === 0 ? 2 : 3 + propertyBlock(pl.props)
      return pl
    case "subscribe": {
      checkPacketId(p.messageId)
      if (p.subscriptions.length === 0) throw protocolError("SUBSCRIBE without a Topic Filter", "MQTT-3.8.3-2")
      pl.props = propertiesLength(p.properties, "subscribe", from)
      let n = 2 + propertyBlock(pl.props)
      for (const s of p.subscriptions) {
        if (!(s.qos >= 0 && s.qos <= 2) || !(s.rh >= 0 && s.rh <= 2)) throw protocolError(`Subscription Options QoS ${s.qos}, Retain Handling ${s.rh}`)
        if (s.nl && s.topic.startsWith("$share/")) throw protocolError("No Local on a Shared Subscription", "MQTT-3.8.3-4")
        n += str(s.topic, "Topic Filter") + 1
      }
      pl.remaining = n
      return pl
    }
    case "suback":
    case "unsuback": {
      checkPacketId(p.messageId)
      if (p.reasonCodes.length === 0) throw protocolError(`${p.cmd.toUpperCase()} without a reason code`)
      for (const c of p.reasonCodes) checkReason(p.cmd, c, from)
      pl.props = propertiesLength(p.properties, p.cmd, from)
      pl.remaining = 2 + propertyBlock(pl.props) + p.reasonCodes.length
      return pl
    }
    case "unsubscribe": {
      checkPacketId(p.messageId)
      if (p.unsubscriptions.length === 0) throw protocolError("UNSUBSCRIBE without a Topic Filter", "MQTT-3.10.3-2")
      pl.props = propertiesLength(p.properties, "unsubscribe", from)
      let n = 2 + propertyBlock(pl.props)
      for (const t of p.unsubscriptions) n += str(t, "Topic Filter")
      pl.remaining = n
      return pl
    }
    case "pingreq":
    case "pingresp":
      return pl
    case "disconnect":
    case "auth":
      checkReason(p.cmd, p.reasonCode, from)
      pl.props = propertiesLength(p.properties, p.cmd, from)
      pl.remaining = 1 + propertyBlock(pl.props)
      return pl
  }
}

const binaryLength = (b: Uint8Array, what: string): number => {
  if (b.length > 0xffff) throw malformed(`${what} of ${b.length} bytes is longer than 65,535`)
  return b.length
}

/** The size of the whole packet (fixed header included), as `encodeInto` would write it; throws `PacketError` for a packet it would refuse. */
export const encodedSize = (p: Packet, from?: Sender): number => {
  const { remaining } = plan(p, from ?? NATURAL_SENDER[p.cmd] ?? "server")
  return 1 + vbiLength(remaining) + remaining
}

const firstByte = (p: Packet): number => {
  switch (p.cmd) {
    case "publish":
      return 0x30 | (p.dup ? 0x08 : 0) | (p.qos << 1) | (p.retain ? 1 : 0)
    case "pubrel":
    case "subscribe":
    case "unsubscribe":
      return (PacketType[p.cmd] << 4) | 0x02
    default:
      return PacketType[p.cmd] << 4
  }
}

/**
 * A packet written in place at the end of `out`, as `from` sends it (by default the side
 * that sends that packet type, the server for the ones both send). Returns the bytes
 * appended; throws `PacketError` (nothing written) for a packet the decoder would refuse.
 * A large PUBLISH payload is queued by reference, pinned by `pin` when given.
 */
export const encodeInto = (out: OutBuf, p: Packet, from?: Sender, pin?: Pinner): number => {
  const sender = from ?? NATURAL_SENDER[p.cmd] ?? "server"
  const pl = plan(p, sender)
  if (pl.remaining > MAX_VBI) throw malformed(`packet of ${pl.remaining} bytes is larger than the protocol allows`)
  const payload = p.cmd === "publish" ? p.payload : undefined
  const byRef = payload !== undefined && goesByReference(payload.length, p.cmd === "publish" ? p.qos : 0, pin)
  const head = 1 + vbiLength(pl.remaining) + pl.remaining - (byRef ? payload.length : 0)
  const b = out.reserve(head)
  let i = out.cursor
  b[i++] = firstByte(p)
  i = putVbi(b, i, pl.remaining)
  const strings = pl.strings
  let s = 0
  const putProps = (props: Properties, n: number): void => {
    i = putVbi(b, i, n)
    i = putProperties(b, i, props)
  }
  switch (p.cmd) {
    case "connect": {
      i = putString(b, i, "MQTT", 4)
      b[i++] = 5
      const w = p.will
      b[i++] = (p.username !== undefined ? 0x80 : 0) | (p.password !== undefined ? 0x40 : 0) | (w?.retain === true ? 0x20 : 0) |
        ((w?.qos ?? 0) << 3) | (w !== undefined ? 0x04 : 0) | (p.clean ? 0x02 : 0)
      i = putU16(b, i, p.keepalive)
      putProps(p.properties, pl.props)
      i = putString(b, i, p.clientId, strings[s++])
      if (w !== undefined) {
        putProps(w.properties, pl.willProps)
        i = putString(b, i, w.topic, strings[s++])
        i = putBinary(b, i, w.payload)
      }
      if (p.username !== undefined) i = putString(b, i, p.username, strings[s++])
      if (p.password !== undefined) i = putBinary(b, i, p.password)
      break
    }
    case "connack":
      b[i++] = p.sessionPresent ? 1 : 0
      b[i++] = p.reasonCode
      putProps(p.properties, pl.props)
      break
    case "publish":
      i = putString(b, i, p.topic, strings[s++])
      if (p.qos > 0) i = putU16(b, i, p.messageId!)
      putProps(p.properties, pl.props)
      break
    case "puback":
    case "pubrec":
    case "pubrel":
    case "pubcomp":
      i = putU16(b, i, p.messageId)
      if (pl.remaining > 2) {
        b[i++] = p.reasonCode
        putProps(p.properties, pl.props)
      }
      break
    case "subscribe":
      i = putU16(b, i, p.messageId)
      putProps(p.properties, pl.props)
      for (const x of p.subscriptions) {
        i = putString(b, i, x.topic, strings[s++])
        b[i++] = x.qos | (x.nl ? 0x04 : 0) | (x.rap ? 0x08 : 0) | (x.rh << 4)
      }
      break
    case "suback":
    case "unsuback":
      i = putU16(b, i, p.messageId)
      putProps(p.properties, pl.props)
      for (const c of p.reasonCodes) b[i++] = c
      break
    case "unsubscribe":
      i = putU16(b, i, p.messageId)
      putProps(p.properties, pl.props)
      for (const t of p.unsubscriptions) i = putString(b, i, t, strings[s++])
      break
    case "pingreq":
    case "pingresp":
      break
    case "disconnect":
    case "auth":
      b[i++] = p.reasonCode
      putProps(p.properties, pl.props)
      break
  }
  if (payload !== undefined) return head + appendPayload(out, b, i, payload, 0, payload.length, byRef, pin)
  out.commit(i)
  return head
}

/**
 * Large payloads go by reference; a QoS 1/2 one only with its owner's pin, since it may
 * live in memory its session reuses once the client acknowledges it (held.ts).
 */
const goesByReference = (size: number, qos: number, pin: Pinner | undefined): boolean =>
  size >= PUBLISH_BY_REFERENCE && (qos === 0 || pin !== undefined)

/**
 * Ends a PUBLISH whose header the caller wrote into b (from `out.reserve`) up to b[i]:
 * the payload src[start, end) copied behind it, or (`byRef`) queued as its own segment,
 * pinned by `pin` when given. Returns the bytes queued by reference (0 when copied).
 */
const appendPayload = (out: OutBuf, b: Buffer, i: number, src: Buffer, start: number, end: number, byRef: boolean, pin: Pinner | undefined): number => {
  if (!byRef) {
    out.commit(putBytes(b, i, src, start, end))
    return 0
  }
  out.commit(i)
  if (pin !== undefined) out.writeRefPinned(src, start, end, pin)
  else out.writeRef(src, start, end)
  return end - start
}

/** The wire bytes of a packet. */
export const encode = (p: Packet, from?: Sender): Buffer => {
  const out = new OutBuf(64)
  encodeInto(out, p, from)
  return out.take()!
}

// ---- Maximum Packet Size on what the server sends ----

const withoutProperty = (p: Packet, name: "reasonString" | "userProperties"): Packet | undefined => {
  if (!("properties" in p) || p.properties[name] === undefined) return undefined
  const { [name]: _dropped, ...rest } = p.properties
  return { ...p, properties: Object.keys(rest).length === 0 ? NO_PROPERTIES : rest } as Packet
}

/**
 * A packet other than PUBLISH made to fit the receiver's Maximum Packet Size: its Reason
 * String, then its User Properties are left out, as the standard requires of every
 * packet that carries them ([MQTT-3.2.2-19], [MQTT-3.2.2-20], [MQTT-3.4.2-2],
 * [MQTT-3.4.2-3], … [MQTT-3.14.2-3], [MQTT-3.15.2-2]). Undefined when it cannot fit:
 * the caller closes the connection rather than send it [MQTT-3.1.2-24].
 */
export const fitToMaximumPacketSize = (p: Packet, maximumPacketSize: number, from?: Sender): Packet | undefined => {
  let q = p
  if (encodedSize(q, from) <= maximumPacketSize) return q
  for (const name of ["reasonString", "userProperties"] as const) {
    const smaller = withoutProperty(q, name)
    if (smaller === undefined) continue
    q = smaller
    if (encodedSize(q, from) <= maximumPacketSize) return q
  }
  return undefined
}

// ---- the PUBLISH of the delivery path ----

/**
 * The property bytes (without a Property Length) of what every receiver of a message gets
 * unaltered: Payload Format Indicator [MQTT-3.3.2-4], Content Type [MQTT-3.3.2-20], Response
 * Topic [MQTT-3.3.2-15], Correlation Data [MQTT-3.3.2-16] and User Properties in order
 * [MQTT-3.3.2-17], [MQTT-3.3.2-18]; checked, encoded once per message; undefined when there
 * are none. The Message Expiry Interval is left out: what is left of it differs per
 * delivery (`PublishHead.messageExpiryInterval`).
 */
export const encodeMessageProperties = (m: MessageProperties): Buffer | undefined => {
  const props: Properties = {
    payloadFormatIndicator: m.payloadFormatIndicator,
    contentType: m.contentType,
    responseTopic: m.responseTopic,
    correlationData: m.correlationData,
    userProperties: m.userProperties
  }
  const n = propertiesLength(props, "publish", "server")
  if (n === 0) return undefined
  const b = Buffer.allocUnsafe(n)
  putProperties(b, 0, props)
  return b
}

/** What differs between the deliveries of one message. A caller may reuse one mutable record. */
export interface PublishHead {
  /** The Topic Name; "" when `topicAlias` already names it for this connection. */
  readonly topic: string
  readonly qos: number
  readonly retain: boolean
  readonly dup: boolean
  readonly messageId: number | undefined
  /** 0: none. */
  readonly topicAlias: number
  /** Seconds left to live [MQTT-3.3.2-6]; -1: none. */
  readonly messageExpiryInterval: number
  /** Of the subscriptions the message matched [MQTT-3.3.4-3]; undefined or empty: none. */
  readonly subscriptionIdentifiers: ReadonlyArray<number> | undefined
  /** From `encodeMessageProperties`. */
  readonly messageProperties: Uint8Array | undefined
}

/** UTF-8 bytes of a topic known to be well-formed; ASCII (the common case) without encoding. */
const topicBytes = (s: string): number => {
  for (let k = 0; k < s.length; k++) if (s.charCodeAt(k) >= 0x80) return utf8Length(s)
  return s.length
}

const TOPIC_ALIAS_ID = propertyId("topicAlias")
const EXPIRY_ID = propertyId("messageExpiryInterval")
const SUBSCRIPTION_ID = propertyId("subscriptionIdentifiers")

const headProperties = (h: PublishHead): number => {
  let n = h.messageProperties?.length ?? 0
  if (h.topicAlias > 0) n += 3
  if (h.messageExpiryInterval >= 0) n += 5
  const ids = h.subscriptionIdentifiers
  if (ids !== undefined) for (let k = 0; k < ids.length; k++) n += 1 + vbiLength(ids[k])
  return n
}

/** The size of the PUBLISH `encodePublishRange` writes: what a Maximum Packet Size is compared with [MQTT-3.1.2-24]. */
export const publishSize = (h: PublishHead, payloadLength: number): number => {
  const topicLen = topicBytes(h.topic)
  const props = headProperties(h)
  const remaining = 2 + topicLen + (h.qos > 0 ? 2 : 0) + vbiLength(props) + props + payloadLength
  return 1 + vbiLength(remaining) + remaining
}

/**
 * A server's PUBLISH of the payload src[start, end), written directly: no packet object,
 * no property object, the message's properties copied from their pre-encoded bytes.
 * The caller has checked the size against the client's Maximum Packet Size
 * (`publishSize`) and chosen the Topic Alias. Returns the bytes appended.
 */
export const encodePublishRange = (out: OutBuf, h: PublishHead, src: Buffer, start: number, end: number, pin?: Pinner): number => {
  const topicLen = topicBytes(h.topic)
  const props = headProperties(h)
  const size = end - start
  const remaining = 2 + topicLen + (h.qos > 0 ? 2 : 0) + vbiLength(props) + props + size
  const byRef = goesByReference(size, h.qos, pin)
  const headLen = 1 + vbiLength(remaining) + remaining - (byRef ? size : 0)
  const b = out.reserve(headLen)
  let i = out.cursor
  b[i++] = 0x30 | (h.dup ? 0x08 : 0) | (h.qos << 1) | (h.retain ? 1 : 0)
  i = putVbi(b, i, remaining)
  i = putString(b, i, h.topic, topicLen)
  if (h.qos > 0) i = putU16(b, i, h.messageId ?? 0)
  i = putVbi(b, i, props)
  // the order `PROPERTIES` gives: Topic Alias, Message Expiry Interval, Subscription Identifiers, then the message's
  if (h.topicAlias > 0) {
    b[i++] = TOPIC_ALIAS_ID
    i = putU16(b, i, h.topicAlias)
  }
  if (h.messageExpiryInterval >= 0) {
    b[i++] = EXPIRY_ID
    i = putU32(b, i, h.messageExpiryInterval)
  }
  const ids = h.subscriptionIdentifiers
  if (ids !== undefined) {
    for (let k = 0; k < ids.length; k++) {
      b[i++] = SUBSCRIPTION_ID
      i = putVbi(b, i, ids[k])
    }
  }
  const m = h.messageProperties
  if (m !== undefined) {
    b.set(m, i)
    i += m.length
  }
  return headLen + appendPayload(out, b, i, src, start, end, byRef, pin)
}

/** The `PublishHead` equivalent of a PUBLISH packet's properties (for tests and slow paths). */
export const publishHeadOf = (p: Publish): PublishHead => ({
  topic: p.topic,
  qos: p.qos,
  retain: p.retain,
  dup: p.dup,
  messageId: p.messageId,
  topicAlias: p.properties.topicAlias ?? 0,
  messageExpiryInterval: p.properties.messageExpiryInterval ?? -1,
  subscriptionIdentifiers: p.properties.subscriptionIdentifiers,
  messageProperties: encodeMessageProperties(p.properties)
})

