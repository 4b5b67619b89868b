// The strict MQTT 5.0 decoder: one complete packet (its first byte and its body, as a
// framer such as MqttParser cuts them) into a `Packet`, or a `PacketError` with the
// reason code to close with. It checks what can be checked without session state:
// fixed-header flags, who may send the packet, lengths, properties (which, how often,
// which values), reason codes, strings. Topic semantics (wildcards in a topic name,
// filter syntax, NATS limits) and everything that needs state (Topic Alias mappings,
// Receive Maximum, Maximum QoS) are the session's.
import { DEFAULT_MAX_TOPIC_LEVELS } from "../topic.js"
import { readProperties } from "./properties.js"
import { reasonAllowed, reasonName, ReasonCode, type ReasonPacket } from "./reason.js"
import { malformed, PacketError, protocolError, Reader, TopicMemo, vbiLength } from "./reader.js"
import {
  type Ack,
  CMD_OF_TYPE,
  type Connect,
  NO_PROPERTIES,
  type Packet,
  PacketType,
  type Properties,
  type Sender,
  type Subscription,
  type Will
} from "./types.js"

export interface DecodeOptions {
  /** Who sent the packet (default "client": the server decoding what clients send). */
  readonly from?: Sender
  /** Deeper topic names and filters are refused (`mqtt.max_topic_levels`). */
  readonly maxTopicLevels?: number
  /**
   * The receiver's Maximum Packet Size: a larger packet (fixed header included) is
   * refused with 0x95 [MQTT-3.2.2-15], [MQTT-3.1.2-24]. Absent: no limit but the protocol's.
   */
  readonly maximumPacketSize?: number
}

/** Packet types as bits (1 << type): who may not send them. */
const SENT_BY_CLIENT_ONLY = (1 << PacketType.connect) | (1 << PacketType.subscribe) | (1 << PacketType.unsubscribe) | (1 << PacketType.pingreq)
const SENT_BY_SERVER_ONLY = (1 << PacketType.connack) | (1 << PacketType.suback) | (1 << PacketType.unsuback) | (1 << PacketType.pingresp)

/**
 * The first byte's checks: the reserved type 0, the flags each type requires
 * [MQTT-2.1.3-1] (PUBREL, SUBSCRIBE and UNSUBSCRIBE 0b0010 [MQTT-3.6.1-1], [MQTT-3.8.1-1],
 * [MQTT-3.10.1-1]; DISCONNECT and AUTH 0 [MQTT-3.14.1-1], [MQTT-3.15.1-1]), PUBLISH QoS 3
 * [MQTT-3.3.1-4] and DUP on QoS 0 [MQTT-3.3.1-2], and packets the sender may not send.
 */
export const headerViolation = (first: number, from: Sender = "client"): PacketError | undefined => {
  const type = first >> 4
  const flags = first & 0x0f
  if (type === 0) return malformed("reserved packet type 0")
  if (((from === "client" ? SENT_BY_SERVER_ONLY : SENT_BY_CLIENT_ONLY) & (1 << type)) !== 0) {
    return protocolError(`${from} sent ${CMD_OF_TYPE[type]!.toUpperCase()}`)
  }
  if (type === PacketType.publish) {
    const qos = (flags >> 1) & 3
    if (qos === 3) return malformed("PUBLISH with QoS 3", "MQTT-3.3.1-4")
    if (qos === 0 && (flags & 0x08) !== 0) return malformed("PUBLISH with DUP set on QoS 0", "MQTT-3.3.1-2")
    return undefined
  }
  const required = type === PacketType.pubrel || type === PacketType.subscribe || type === PacketType.unsubscribe ? 2 : 0
  if (flags === required) return undefined
  const rule = type === PacketType.pubrel ? "MQTT-3.6.1-1" : type === PacketType.subscribe ? "MQTT-3.8.1-1"
    : type === PacketType.unsubscribe ? "MQTT-3.10.1-1" : type === PacketType.disconnect ? "MQTT-3.14.1-1"
    : type === PacketType.auth ? "MQTT-3.15.1-1" : "MQTT-2.1.3-1"
  return malformed(`reserved flags 0x${flags.toString(16)} on ${CMD_OF_TYPE[type]!.toUpperCase()}`, rule)
}

/** Bytes of a whole packet with a body of `remainingLength` bytes. */
export const packetSize = (remainingLength: number): number => 1 + vbiLength(remainingLength) + remainingLength

/**
 * The checks a framer can make as soon as it knows the remaining length, before it
 * keeps any body byte: the receiver's Maximum Packet Size, and the lengths a type fixes.
 */
export const lengthViolation = (first: number, remainingLength: number, maximumPacketSize?: number): PacketError | undefined => {
  if (maximumPacketSize !== undefined && packetSize(remainingLength) > maximumPacketSize) {
    return new PacketError(
      ReasonCode.PacketTooLarge,
      `packet of ${packetSize(remainingLength)} bytes is larger than the Maximum Packet Size ${maximumPacketSize}`,
      "MQTT-3.2.2-15"
    )
  }
  switch (first >> 4) {
    case PacketType.pingreq:
    case PacketType.pingresp:
      return remainingLength === 0 ? undefined : malformed(`${CMD_OF_TYPE[first >> 4]!.toUpperCase()} with a body of ${remainingLength} bytes`)
    case PacketType.puback:
    case PacketType.pubrec:
    case PacketType.pubrel:
    case PacketType.pubcomp:
      return remainingLength >= 2 ? undefined : malformed(`${CMD_OF_TYPE[first >> 4]!.toUpperCase()} shorter than its packet identifier`)
    default:
      return undefined
  }
}

const SHARE_PREFIX = "$share/"

/** A reusable decoder: one per connection; packets keep views of the bytes they came in. */
export class Decoder {
  private readonly r = new Reader()
  private readonly from: Sender
  private readonly maxTopicLevels: number
  private readonly maximumPacketSize: number | undefined
  private readonly lastTopic = new TopicMemo()

  constructor(options: DecodeOptions = {}) {
    this.from = options.from ?? "client"
    this.maxTopicLevels = options.maxTopicLevels ?? DEFAULT_MAX_TOPIC_LEVELS
    this.maximumPacketSize = options.maximumPacketSize
  }

  /** The packet of the first byte `first` and the body buf[start, end); throws `PacketError`. */
  decode(first: number, buf: Buffer, start = 0, end = buf.length): Packet {
    if (first >> 4 === PacketType.publish && this.from === "client") {
      const p = this.plainPublish(first, buf, start, end)
      if (p !== undefined) return p
    }
    if (end - start === 2) {
      const p = this.shortAck(first, buf, start)
      if (p !== undefined) return p
    }
    const bad = headerViolation(first, this.from) ?? lengthViolation(first, end - start, this.maximumPacketSize)
    if (bad !== undefined) throw bad
    const r = this.r.reset(buf, start, end)
    try {
      const p = this.body(first, r)
      if (r.remaining !== 0) throw malformed(`${r.remaining} bytes after the end of the ${p.cmd.toUpperCase()}`)
      return p
    } finally {
      r.release() // the bytes are not kept past their packet
    }
  }

  /**
   * The hot path: a PUBLISH without properties on the topic of the one before it (a
   * device publishing again), decoded without the reader; undefined sends anything else,
   * and everything the full path would refuse, down the full path.
   */
  private plainPublish(first: number, buf: Buffer, start: number, end: number): Packet | undefined {
    const qos = (first >> 1) & 3
    if (qos === 3 || (qos === 0 && (first & 0x08) !== 0)) return undefined
    if (this.maximumPacketSize !== undefined && packetSize(end - start) > this.maximumPacketSize) return undefined
    if (end - start < 2) return undefined
    const at = start + 2
    const topicEnd = at + ((buf[start] << 8) | buf[start + 1])
    const propsAt = qos > 0 ? topicEnd + 2 : topicEnd
    // a Property Length of 0 (one byte), and a body that holds it
    if (propsAt >= end || buf[propsAt] !== 0) return undefined
    const topic = this.lastTopic.recall(buf, at, topicEnd)
    if (topic === undefined) return undefined
    let messageId: number | undefined
    if (qos > 0) {
      messageId = (buf[topicEnd] << 8) | buf[topicEnd + 1]
      if (messageId === 0) return undefined
    }
    const payload = buf.subarray(propsAt + 1, end)
    return { cmd: "publish", topic, payload, qos, retain: (first & 1) !== 0, dup: (first & 0x08) !== 0, messageId, properties: NO_PROPERTIES }
  }

  /**
   * The other hot path: PUBACK, PUBREC, PUBREL or PUBCOMP as the packet id alone (Success
   * without properties, the form every QoS 1/2 exchange ends with), read without the
   * reader; undefined sends anything else, and what the full path would refuse, down it.
   */
  private shortAck(first: number, buf: Buffer, start: number): Ack | undefined {
    const type = first >> 4
    if (type < PacketType.puback || type > PacketType.pubcomp) return undefined
    // the flags each requires [MQTT-3.6.1-1], and a size the receiver admits
    if ((first & 0x0f) !== (type === PacketType.pubrel ? 2 : 0)) return undefined
    if (this.maximumPacketSize !== undefined && this.maximumPacketSize < 4) return undefined
    const messageId = (buf[start] << 8) | buf[start + 1]
    if (messageId === 0) return undefined
    return { cmd: CMD_OF_TYPE[type] as Ack["cmd"], messageId, reasonCode: ReasonCode.Success, properties: NO_PROPERTIES }
  }

  private body(first: number, r: Reader): Packet {
    const type = first >> 4
    switch (type) {
      case PacketType.connect:
        return this.connect(r)
      case PacketType.connack:
        return this.connack(r)
      case PacketType.publish:
        return this.publish(first, r)
      case PacketType.puback:
      case PacketType.pubrec:
      case PacketType.pubrel:
      case PacketType.pubcomp:
        return this.ack(CMD_OF_TYPE[type] as Ack["cmd"], r)
      case PacketType.subscribe:
        return this.subscribe(r)
      case PacketType.suback:
      case PacketType.unsuback:
        return this.subackLike(type === PacketType.suback ? "suback" : "unsuback", r)
      case PacketType.unsubscribe:
        return this.unsubscribe(r)
      case PacketType.pingreq:
        return { cmd: "pingreq" }
      case PacketType.pingresp:
        return { cmd: "pingresp" }
      default: {
        // DISCONNECT and AUTH: a Remaining Length of 0 is Success without properties.
        const cmd = type === PacketType.disconnect ? "disconnect" : "auth"
        if (r.remaining === 0) return { cmd, reasonCode: 0, properties: readNone() }
        const reasonCode = this.reason(cmd, r)
        // A DISCONNECT of one byte has no Property Length (3.14.2.2.1); an AUTH must have it.
        const properties = cmd === "disconnect" && r.remaining === 0 ? readNone() : readProperties(r, cmd, this.from)
        return { cmd, reasonCode, properties }
      }
    }
  }

  private reason(cmd: ReasonPacket, r: Reader): number {
    const code = r.byte("reason code")
    if (!reasonAllowed(cmd, code, this.from)) {
      throw protocolError(`${cmd.toUpperCase()} from a ${this.from} with ${reasonName(code)} (0x${code.toString(16)})`)
    }
    return code
  }

  /** A packet identifier: never 0 [MQTT-2.2.1-3], [MQTT-2.2.1-4]. */
  private packetId(r: Reader): number {
    const id = r.u16("packet identifier")
    if (id === 0) throw protocolError("packet identifier 0", this.from === "client" ? "MQTT-2.2.1-3" : "MQTT-2.2.1-4")
    return id
  }

  /** A topic name or filter of at most maxTopicLevels levels (fewer bytes cannot hold more). */
  private topicString(r: Reader, what: string, code: typeof ReasonCode.TopicNameInvalid | typeof ReasonCode.TopicFilterInvalid): string {
    const at = r.pos + 2
    const s = r.string(what)
    if (r.pos - at >= this.maxTopicLevels) {
      let levels = 1
      for (let i = at; i < r.pos; i++) if (r.buf[i] === 0x2f) levels++
      if (levels > this.maxTopicLevels) {
        throw new PacketError(code, `${what} has ${levels} levels, more than max_topic_levels (${this.maxTopicLevels})`)
      }
    }
    return s
  }

  /** A topic name: the remembered string when the bytes are the same as last time. */
  private topicName(r: Reader): string {
    if (r.remaining >= 2) {
      const at = r.pos + 2
      const end = at + ((r.buf[r.pos] << 8) | r.buf[r.pos + 1])
      const known = end <= r.end ? this.lastTopic.recall(r.buf, at, end) : undefined
      if (known !== undefined) {
        r.pos = end
        return known
      }
    }
    const from = r.pos + 2
    const s = this.topicString(r, "Topic Name", ReasonCode.TopicNameInvalid) // [MQTT-3.3.2-1]
    this.lastTopic.remember(s, r.buf, from, r.pos)
    return s
  }

  private connect(r: Reader): Connect {
    const protocolId = r.string("Protocol Name")
    const level = r.byte("Protocol Version")
    if (protocolId !== "MQTT" || level !== 5) {
      throw new PacketError(ReasonCode.UnsupportedProtocolVersion, `CONNECT for protocol ${JSON.stringify(protocolId)} level ${level}`, "MQTT-3.1.2-2")
    }
    const f = r.byte("Connect Flags")
    if ((f & 0x01) !== 0) throw malformed("reserved Connect Flag set", "MQTT-3.1.2-3")
    const willFlag = (f & 0x04) !== 0
    const willQos = (f >> 3) & 3
    const willRetain = (f & 0x20) !== 0
    if (willQos === 3) throw malformed("Will QoS 3", "MQTT-3.1.2-12")
    if (!willFlag && willQos !== 0) throw malformed(`Will QoS ${willQos} without a Will Flag`, "MQTT-3.1.2-11")
    if (!willFlag && willRetain) throw malformed("Will Retain without a Will Flag", "MQTT-3.1.2-13")
    const keepalive = r.u16("Keep Alive")
    const properties = readProperties(r, "connect", this.from)
    const clientId = r.string("Client Identifier") // [MQTT-3.1.3-4]
    let will: Will | undefined
    if (willFlag) {
      const willProperties = readProperties(r, "will", this.from)
      const topic = this.topicString(r, "Will Topic", ReasonCode.TopicNameInvalid) // [MQTT-3.1.3-11]
      will = { topic, payload: r.binary("Will Payload"), qos: willQos, retain: willRetain, properties: willProperties }
    }
    const username = (f & 0x80) !== 0 ? r.string("User Name") : undefined // [MQTT-3.1.3-12]
    const password = (f & 0x40) !== 0 ? r.binary("Password") : undefined
    return { cmd: "connect", protocolId: "MQTT", protocolVersion: 5, clean: (f & 0x02) !== 0, keepalive, clientId, properties, will, username, password }
  }

  private connack(r: Reader): Packet {
    const flags = r.byte("Connect Acknowledge Flags")
    if ((flags & 0xfe) !== 0) throw malformed(`reserved Connect Acknowledge Flags 0x${flags.toString(16)}`, "MQTT-3.2.2-1")
    const reasonCode = this.reason("connack", r)
    const sessionPresent = flags === 1
    if (sessionPresent && reasonCode !== 0) throw protocolError("Session Present with a failure reason code", "MQTT-3.2.2-6")
    return { cmd: "connack", sessionPresent, reasonCode, properties: readProperties(r, "connack", this.from) }
  }

  private publish(first: number, r: Reader): Packet {
    const qos = (first >> 1) & 3
    const topic = this.topicName(r)
    const messageId = qos > 0 ? this.packetId(r) : undefined
    const properties = readProperties(r, "publish", this.from)
    if (topic.length === 0 && properties.topicAlias === undefined) {
      throw protocolError("PUBLISH with an empty Topic Name and no Topic Alias")
    }
    const payload = r.buf.subarray(r.pos, r.end)
    r.pos = r.end
    return { cmd: "publish", topic, payload, qos, retain: (first & 1) !== 0, dup: (first & 8) !== 0, messageId, properties }
  }

  private ack(cmd: Ack["cmd"], r: Reader): Ack {
    const messageId = this.packetId(r)
    // Remaining Length 2: Success without properties; 3: a reason code without them [MQTT-3.4.2-1].
    if (r.remaining === 0) return { cmd, messageId, reasonCode: 0, properties: readNone() }
    const reasonCode = this.reason(cmd, r)
    const properties = r.remaining === 0 ? readNone() : readProperties(r, cmd, this.from)
    return { cmd, messageId, reasonCode, properties }
  }

  private subscribe(r: Reader): Packet {
    const messageId = this.packetId(r)
    const properties = readProperties(r, "subscribe", this.from)
    const subscriptions: Array<Subscription> = []
    while (r.remaining > 0) {
      const topic = this.topicString(r, "Topic Filter", ReasonCode.TopicFilterInvalid) // [MQTT-3.8.3-1]
      const o = r.byte("Subscription Options")
      if ((o & 0xc0) !== 0) throw malformed(`reserved Subscription Options bits 0x${o.toString(16)}`, "MQTT-3.8.3-5")
      const qos = o & 3
      const rh = (o >> 4) & 3
      const nl = (o & 0x04) !== 0
      if (qos === 3) throw protocolError("Subscription Option Maximum QoS 3")
      if (rh === 3) throw protocolError("Retain Handling 3")
      if (nl && topic.startsWith(SHARE_PREFIX)) throw protocolError("No Local on a Shared Subscription", "MQTT-3.8.3-4")
      subscriptions.push({ topic, qos, nl, rap: (o & 0x08) !== 0, rh })
    }
    if (subscriptions.length === 0) throw protocolError("SUBSCRIBE without a Topic Filter", "MQTT-3.8.3-2")
    return { cmd: "subscribe", messageId, properties, subscriptions }
  }

  private unsubscribe(r: Reader): Packet {
    const messageId = this.packetId(r)
    const properties = readProperties(r, "unsubscribe", this.from)
    const unsubscriptions: Array<string> = []
    while (r.remaining > 0) unsubscriptions.push(this.topicString(r, "Topic Filter", ReasonCode.TopicFilterInvalid)) // [MQTT-3.10.3-1]
    if (unsubscriptions.length === 0) throw protocolError("UNSUBSCRIBE without a Topic Filter", "MQTT-3.10.3-2")
    return { cmd: "unsubscribe", messageId, properties, unsubscriptions }
  }

  private subackLike(cmd: "suback" | "unsuback", r: Reader): Packet {
    const messageId = this.packetId(r)
    const properties = readProperties(r, cmd, this.from)
    const reasonCodes: Array<number> = []
    while (r.remaining > 0) reasonCodes.push(this.reason(cmd, r))
    if (reasonCodes.length === 0) throw protocolError(`${cmd.toUpperCase()} without a reason code`)
    return { cmd, messageId, properties, reasonCodes }
  }
}

/** The properties of a packet whose short form leaves them out. */
const readNone = (): Properties => NO_PROPERTIES

/** The packet of a complete first byte and body; throws `PacketError`. */
export const decodePacket = (first: number, body: Buffer, options?: DecodeOptions): Packet => new Decoder(options).decode(first, body)

/** The Protocol Version a CONNECT body asks for, or undefined when the body is too short to say (for choosing a decoder). */
export const connectProtocolLevel = (body: Buffer): number | undefined => {
  if (body.length < 2) return undefined
  const n = (body[0] << 8) | body[1]
  return body.length > 2 + n ? body[2 + n] : undefined
}
