// The MQTT 3.1.1 wire format of the server side. `MqttParser` decodes what clients send
// strictly (every malformed or hostile input is a close, never a guess); every server
// packet is written in place into the connection's output (the server does not load
// mqtt-packet, whose encoder keeps 65,536 cached Buffers in the heap; the tests check our
// bytes against it). Decoded packets use mqtt-packet's field names.
import type { ClientPacket, ConnectFlags, ServerPacket } from "./types.js"
import { OutBuf, type Pinner, putBytes } from "../outbuf.js"
import { DEFAULT_MAX_TOPIC_LEVELS } from "./topic.js"
import {
  connectProtocolLevel,
  Decoder as DecoderV5,
  headerViolation as headerViolationV5,
  lengthViolation as lengthViolationV5
} from "./v5/decode.js"
import { PacketError } from "./v5/reader.js"
import { ReasonCode } from "./v5/reason.js"
import type { Packet as PacketV5 } from "./v5/types.js"

/**
 * Payloads from this size on are written by reference (their own writev slot), not
 * copied. A QoS 1/2 payload may live in a slab its session reuses once the client
 * acknowledges (held.ts): it goes by reference only with that slab's owner (`pin`), which
 * keeps the slab until the write is done; without one it is copied.
 */
export const PUBLISH_BY_REFERENCE = 4096

const varintLength = (n: number): number => (n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4)

/**
 * A PUBLISH, the packet of the delivery path, written directly (mqtt-packet's generic
 * generator costs about a microsecond per packet): fixed header, topic, packet id,
 * payload, into the connection's output slab (one allocation per flush, not per
 * packet); a large payload is queued by reference. Returns the bytes appended.
 */
export const encodePublish = (
  out: OutBuf,
  topic: string,
  payload: Uint8Array,
  qos: number,
  retain: boolean,
  dup: boolean,
  messageId: number | undefined,
  pin?: Pinner
): number => {
  const p = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)
  return encodePublishRange(out, topic, p, 0, p.length, qos, retain, dup, messageId, pin)
}

/** `encodePublish` of the payload `src[start, end)` (no view of it is made). */
export const encodePublishRange = (
  out: OutBuf,
  topic: string,
  src: Buffer,
  start: number,
  end: number,
  qos: number,
  retain: boolean,
  dup: boolean,
  messageId: number | undefined,
  pin?: Pinner,
  /** MQTT 5.0: the same PUBLISH with an empty property block (Property Length 0). */
  emptyProperties = false
): number => {
  // Topics are mostly ASCII: then the length is known without encoding, and the bytes go in by a loop.
  let ascii = true
  for (let k = 0; k < topic.length; k++) {
    if (topic.charCodeAt(k) >= 0x80) {
      ascii = false
      break
    }
  }
  const topicLen = ascii ? topic.length : Buffer.byteLength(topic, "utf8")
  const size = end - start
  const remaining = 2 + topicLen + (qos > 0 ? 2 : 0) + (emptyProperties ? 1 : 0) + size
  const byRef = size >= PUBLISH_BY_REFERENCE && (qos === 0 || pin !== undefined)
  const headLen = 1 + varintLength(remaining) + remaining - (byRef ? size : 0)
  const b = out.reserve(headLen)
  let i = out.cursor
  b[i++] = 0x30 | (dup ? 0x08 : 0) | (qos << 1) | (retain ? 0x01 : 0)
  i = putVarint(b, i, remaining)
  b[i++] = topicLen >> 8
  b[i++] = topicLen & 0xff
  if (ascii) for (let k = 0; k < topicLen; k++) b[i++] = topic.charCodeAt(k)
  else i += b.write(topic, i, "utf8")
  if (qos > 0) {
    b[i++] = (messageId ?? 0) >> 8
    b[i++] = (messageId ?? 0) & 0xff
  }
  if (emptyProperties) b[i++] = 0
  if (byRef) {
    out.commit(i)
    if (pin !== undefined) out.writeRefPinned(src, start, end, pin)
    else out.writeRef(src, start, end)
  } else out.commit(putBytes(b, i, src, start, end))
  return headLen + (byRef ? size : 0)
}

/** First bytes of the four-byte packets that carry only a packet id (PUBREL has the required 0b0010 flags). */
const ACK_HEADER = { puback: 0x40, pubrec: 0x50, pubrel: 0x62, pubcomp: 0x70, unsuback: 0xb0 } as const

/** A server packet (MQTT 3.1.1) written in place at the end of `out`. Returns the bytes appended. */
export const encodeInto = (out: OutBuf, p: ServerPacket, pin?: Pinner): number => {
  switch (p.cmd) {
    case "puback":
    case "pubrec":
    case "pubrel":
    case "pubcomp":
    case "unsuback": {
      const b = out.reserve(4)
      const i = out.cursor
      b[i] = ACK_HEADER[p.cmd]
      b[i + 1] = 2
      b[i + 2] = p.messageId >> 8
      b[i + 3] = p.messageId & 0xff
      out.commit(i + 4)
      return 4
    }
    case "publish":
      return encodePublish(out, p.topic, p.payload, p.qos, p.retain, p.dup, p.messageId, pin)
    case "connack": {
      // written in place like the acknowledgements: mqtt-packet's generic generator costs about a microsecond
      const b = out.reserve(4)
      const i = out.cursor
      b[i] = 0x20
      b[i + 1] = 2
      b[i + 2] = p.sessionPresent === true ? 1 : 0
      b[i + 3] = p.returnCode
      out.commit(i + 4)
      return 4
    }
    case "pingresp": {
      const b = out.reserve(2)
      const i = out.cursor
      b[i] = 0xd0
      b[i + 1] = 0
      out.commit(i + 2)
      return 2
    }
    case "suback": {
      // fixed header, remaining length, packet id, one return code per filter (0/1/2 or 0x80)
      const n = p.granted.length
      const remaining = 2 + n
      const len = 1 + varintLength(remaining) + remaining
      const b = out.reserve(len)
      let i = out.cursor
      b[i++] = 0x90
      i = putVarint(b, i, remaining)
      b[i++] = p.messageId >> 8
      b[i++] = p.messageId & 0xff
      for (let k = 0; k < n; k++) b[i++] = p.granted[k]
      out.commit(i)
      return len
    }
    case "disconnect":
      return 0 // a 3.1.1 server sends no DISCONNECT: it closes the connection
  }
}

/** MQTT's remaining length (7 bits a byte, high bit = more) at b[i]; returns the position after it. */
const putVarint = (b: Buffer, i: number, value: number): number => {
  let n = value
  do {
    let d = n % 128
    n = Math.floor(n / 128)
    if (n > 0) d |= 0x80
    b[i++] = d
  } while (n > 0)
  return i
}

/** The wire bytes of a server packet (MQTT 3.1.1). */
export const encode = (p: ServerPacket): Buffer => {
  const out = new OutBuf(64)
  encodeInto(out, p)
  return out.take()!
}

// ---- decoding ----

/** Packet types of MQTT 3.1.1 (the high nibble of the fixed header). */
export const PacketType = {
  Connect: 1,
  Connack: 2,
  Publish: 3,
  Puback: 4,
  Pubrec: 5,
  Pubrel: 6,
  Pubcomp: 7,
  Subscribe: 8,
  Suback: 9,
  Unsubscribe: 10,
  Unsuback: 11,
  Pingreq: 12,
  Pingresp: 13,
  Disconnect: 14
} as const

const ParseState = { Header: 0, Length: 1, Body: 2, Failed: 3 } as const
type ParseState = (typeof ParseState)[keyof typeof ParseState]

/** A remaining length takes at most four bytes [MQTT-2.2.3]: 268,435,455. */
export const MAX_REMAINING_LENGTH = 268_435_455

/**
 * Why bytes are refused: the text becomes the close reason. On an MQTT 5.0 connection
 * `code` is the reason code to close with (the CONNACK's for a CONNECT, the DISCONNECT's
 * after it); undefined on 3.1.1, which closes without a word.
 */
export class MalformedPacket extends Error {
  constructor(readonly reason: string, readonly code?: number | undefined) {
    super(reason)
  }
}

const SERVER_ONLY: Record<number, string> = {
  [PacketType.Connack]: "CONNACK",
  [PacketType.Suback]: "SUBACK",
  [PacketType.Unsuback]: "UNSUBACK",
  [PacketType.Pingresp]: "PINGRESP"
}

/**
 * The fixed-header check of the first byte: reserved types and flag bits
 * [MQTT-2.2.2-1, -2], QoS 3 [MQTT-3.3.1-4], DUP on QoS 0 [MQTT-3.3.1-2], and packets
 * only a server sends. Returns the reason, or undefined when the byte is acceptable.
 */
export const headerViolation = (first: number): string | undefined => {
  const type = first >> 4
  const flags = first & 0x0f
  if (type === 0 || type === 15) return `reserved packet type ${type}`
  if (SERVER_ONLY[type] !== undefined) return `client sent ${SERVER_ONLY[type]}`
  if (type === PacketType.Publish) {
    const qos = (flags >> 1) & 3
    if (qos === 3) return "PUBLISH QoS 3"
    if (qos === 0 && (flags & 0x08) !== 0) return "PUBLISH DUP set on QoS 0"
    return undefined
  }
  const required = type === PacketType.Pubrel || type === PacketType.Subscribe || type === PacketType.Unsubscribe ? 2 : 0
  return flags === required ? undefined : `reserved header flags 0x${flags.toString(16)} on packet type ${type}`
}

/** Remaining lengths fixed by the packet type, checked before any body byte is kept. */
const lengthViolation = (type: number, length: number): string | undefined => {
  switch (type) {
    case PacketType.Puback:
    case PacketType.Pubrec:
    case PacketType.Pubrel:
    case PacketType.Pubcomp:
      return length === 2 ? undefined : `remaining length ${length} of an acknowledgement (must be 2)`
    case PacketType.Pingreq:
    case PacketType.Disconnect:
      return length === 0 ? undefined : `remaining length ${length} of a packet without body (must be 0)`
    case PacketType.Publish:
      return length < 2 ? "PUBLISH shorter than its topic length" : undefined
    case PacketType.Subscribe:
    case PacketType.Unsubscribe:
      return length < 2 ? "packet shorter than its packet identifier" : undefined
    default:
      return undefined
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const EMPTY = Buffer.alloc(0)

/**
 * A cursor over one packet body, buf[pos, end); every read checks the bounds ("lengths
 * that lie"). One per parser, reset for each packet.
 */
class BodyReader {
  buf: Buffer = EMPTY
  pos = 0
  end = 0
  /** The last topic name read and its bytes: a device publishes to the same topics over and over. */
  private lastTopic = ""
  private lastTopicBytes: Buffer = EMPTY

  constructor(readonly maxTopicLevels: number = DEFAULT_MAX_TOPIC_LEVELS) {}

  reset(buf: Buffer, start: number, end: number): this {
    this.buf = buf
    this.pos = start
    this.end = end
    return this
  }

  get remaining(): number {
    return this.end - this.pos
  }

  byte(what: string): number {
    if (this.remaining < 1) throw new MalformedPacket(`${what} past the end of the packet`)
    return this.buf[this.pos++]
  }

  u16(what: string): number {
    if (this.remaining < 2) throw new MalformedPacket(`${what} past the end of the packet`)
    const v = this.buf.readUInt16BE(this.pos)
    this.pos += 2
    return v
  }

  /** A length-prefixed field: skips it and returns where it starts (it ends at `pos`). */
  private field(what: string): number {
    const n = this.u16(`${what} length`)
    if (this.remaining < n) throw new MalformedPacket(`${what} of ${n} bytes past the end of the packet`)
    const start = this.pos
    this.pos += n
    return start
  }

  binary(what: string): Buffer {
    const start = this.field(what)
    return this.buf.subarray(start, this.pos)
  }

  /** A UTF-8 encoded string: well-formed [MQTT-1.5.3-1] and without U+0000 [MQTT-1.5.3-2]. */
  string(what: string): string {
    const start = this.field(what)
    const end = this.pos
    const buf = this.buf
    let ascii = true
    for (let i = start; i < end; i++) {
      if (buf[i] === 0) throw new MalformedPacket(`${what} contains U+0000`)
      if (buf[i] >= 0x80) ascii = false
    }
    // Most topics and ids are ASCII: no decoder needed for them.
    if (ascii) return buf.toString("latin1", start, end)
    try {
      return utf8.decode(buf.subarray(start, end))
    } catch {
      throw new MalformedPacket(`${what} is not well-formed UTF-8`)
    }
  }

  /**
   * A topic name or filter: a string of at most `maxTopicLevels` levels. Fewer bytes than
   * the limit cannot hold more levels than it, so only long topics are scanned for `/`.
   */
  topicString(what: string): string {
    const at = this.pos + 2
    const s = this.string(what)
    if (this.pos - at >= this.maxTopicLevels) {
      let levels = 1
      for (let i = at; i < this.pos; i++) if (this.buf[i] === 0x2f) levels++
      if (levels > this.maxTopicLevels) {
        throw new MalformedPacket(`${what} has ${levels} levels, more than max_topic_levels (${this.maxTopicLevels})`)
      }
    }
    return s
  }

  /** A topic name: the same string as last time when the bytes are the same (no allocation, same identity). */
  topic(what: string): string {
    if (this.remaining >= 2) {
      const buf = this.buf
      const n = (buf[this.pos] << 8) | buf[this.pos + 1]
      const last = this.lastTopicBytes
      if (n === last.length && n > 0 && this.remaining >= 2 + n) {
        const start = this.pos + 2
        let same = true
        for (let i = 0; i < n; i++) {
          if (buf[start + i] !== last[i]) {
            same = false
            break
          }
        }
        if (same) {
          this.pos = start + n
          return this.lastTopic
        }
      }
    }
    const at = this.pos + 2
    const s = this.topicString(what)
    if (this.pos - at <= 256) {
      this.lastTopic = s
      this.lastTopicBytes = Buffer.from(this.buf.subarray(at, this.pos))
    }
    return s
  }

  rest(): Buffer {
    const b = this.buf.subarray(this.pos, this.end)
    this.pos = this.end
    return b
  }

  done(what: string): void {
    if (this.remaining !== 0) throw new MalformedPacket(`${this.remaining} bytes after the end of the ${what}`)
  }
}

const decodeConnect = (r: BodyReader): ClientPacket => {
  const protocolId = r.string("protocol name")
  const protocolVersion = r.byte("protocol level")
  // Only level 4 is parsed further: any other level is answered with CONNACK 1 [MQTT-3.1.2-2],
  // a wrong name is closed [MQTT-3.1.2-1], whatever their remaining bytes say.
  if (protocolId !== "MQTT" || protocolVersion !== 4) {
    return { cmd: "connect", protocolId, protocolVersion, clean: false, clientId: "", keepalive: 0 }
  }
  const f = r.byte("connect flags")
  const flags: ConnectFlags = {
    reserved: (f & 0x01) !== 0,
    will: (f & 0x04) !== 0,
    willQos: (f >> 3) & 3,
    willRetain: (f & 0x20) !== 0,
    password: (f & 0x40) !== 0,
    username: (f & 0x80) !== 0
  }
  const keepalive = r.u16("keepalive")
  const clientId = r.string("client identifier") // [MQTT-3.1.3-4]
  const will = flags.will
    ? { topic: r.topicString("will topic"), payload: r.binary("will message"), qos: flags.willQos, retain: flags.willRetain }
    : undefined
  const username = flags.username ? r.string("user name") : undefined // [MQTT-3.1.3-11]
  const password = flags.password ? r.binary("password") : undefined
  r.done("CONNECT payload")
  return { cmd: "connect", protocolId, protocolVersion, clean: (f & 0x02) !== 0, clientId, keepalive, username, password, will, flags }
}

const decodePublish = (first: number, r: BodyReader): ClientPacket => {
  const qos = (first >> 1) & 3
  const topic = r.topic("topic name") // [MQTT-3.3.2-1]
  const messageId = qos > 0 ? r.u16("packet identifier") : undefined
  return { cmd: "publish", topic, payload: r.rest(), qos, retain: (first & 1) !== 0, dup: (first & 8) !== 0, messageId }
}

const decodeSubscribe = (r: BodyReader): ClientPacket => {
  const messageId = r.u16("packet identifier")
  const subscriptions: Array<{ topic: string; qos: number }> = []
  while (r.remaining > 0) {
    const topic = r.topicString("topic filter")
    const options = r.byte("requested QoS")
    // Reserved bits of the requested QoS byte [MQTT-3-8.3-4]; QoS 3 is the session's to refuse.
    if ((options & 0xfc) !== 0) throw new MalformedPacket(`reserved bits set in requested QoS 0x${options.toString(16)}`)
    subscriptions.push({ topic, qos: options })
  }
  return { cmd: "subscribe", messageId, subscriptions }
}

const decodeUnsubscribe = (r: BodyReader): ClientPacket => {
  const messageId = r.u16("packet identifier")
  const unsubscriptions: Array<string> = []
  while (r.remaining > 0) unsubscriptions.push(r.topicString("topic filter"))
  return { cmd: "unsubscribe", messageId, unsubscriptions }
}

/** The packet of a complete fixed header and body; throws `MalformedPacket`. */
export const decodePacket = (first: number, body: Buffer): ClientPacket => decodeWith(new BodyReader().reset(body, 0, body.length), first)

const decodeWith = (r: BodyReader, first: number): ClientPacket => {
  switch (first >> 4) {
    case PacketType.Connect:
      return decodeConnect(r)
    case PacketType.Publish:
      return decodePublish(first, r)
    case PacketType.Puback:
      return { cmd: "puback", messageId: r.u16("packet identifier") }
    case PacketType.Pubrec:
      return { cmd: "pubrec", messageId: r.u16("packet identifier") }
    case PacketType.Pubrel:
      return { cmd: "pubrel", messageId: r.u16("packet identifier") }
    case PacketType.Pubcomp:
      return { cmd: "pubcomp", messageId: r.u16("packet identifier") }
    case PacketType.Subscribe:
      return decodeSubscribe(r)
    case PacketType.Unsubscribe:
      return decodeUnsubscribe(r)
    case PacketType.Pingreq:
      return { cmd: "pingreq" }
    case PacketType.Disconnect:
      return { cmd: "disconnect" }
    default:
      throw new MalformedPacket(headerViolation(first) ?? `packet type ${first >> 4}`)
  }
}

/** What a parser accepts beyond strict 3.1.1. */
export interface ParserOptions {
  /** Deeper topic names and filters are malformed (`mqtt.max_topic_levels`). */
  readonly maxTopicLevels?: number | undefined
  /** A level-5 CONNECT switches the connection to MQTT 5.0 (`protocol_versions` has 5). */
  readonly v5?: boolean | undefined
  /** MQTT 5.0: the server's Maximum Packet Size; a larger packet is refused (0x95) before its body is read. */
  readonly maximumPacketSize?: number | undefined
}

/** A v5 packet as the session takes it (the same shapes, with the v5 fields). */
const asClientPacket = (p: PacketV5): ClientPacket => p as ClientPacket

/** The first buffer of a body that spans chunks (or the whole body, when smaller). */
const FIRST_PARTIAL = 1024

/**
 * The byte-level framing machine: fixed header, remaining length, body. It calls
 * `onPacket` with each `ClientPacket` and, once, `onError` with a `MalformedPacket`; after
 * an error every later byte is ignored. A body inside one chunk is decoded in place. A
 * body that spans chunks is copied, as it arrives, into one buffer that grows by doubling
 * up to the announced length: what it holds is proportional to the bytes received (at
 * most twice, plus 1 KiB), never the chunks themselves — a client dribbling one byte per
 * read would otherwise pin a whole socket read buffer per byte. `announced` shows the
 * announced length so the shell can cut a client off before it sends that much; `held`
 * is the memory the partial packet holds.
 *
 * With `v5` on, a CONNECT of protocol level 5 makes the connection an MQTT 5.0 one: that
 * CONNECT and every packet after it go through the v5 `Decoder` (fixed-header and length
 * rules of 5.0, the server's Maximum Packet Size, Remaining Lengths in their fewest bytes
 * [MQTT-1.5.5-1]); its errors carry their reason code.
 */
export class MqttParser {
  onPacket: (packet: ClientPacket) => void = () => {}
  onError: (error: MalformedPacket) => void = () => {}
  private state: ParseState = ParseState.Header
  private first = 0
  private length = 0
  private lengthBytes = 0
  private multiplier = 1
  /** The body received so far of a packet that spans chunks, [0, have); its own memory. */
  private partial: Buffer = EMPTY
  private have = 0
  private readonly reader: BodyReader
  private readonly options: ParserOptions
  /** The connection's MQTT 5.0 decoder, from its CONNECT on (undefined: 3.1.1). */
  private v5: DecoderV5 | undefined
  /** Whether the first packet (the CONNECT) is still to come. */
  private awaitingConnect = true

  constructor(options: ParserOptions | number = {}) {
    this.options = typeof options === "number" ? { maxTopicLevels: options } : options
    this.reader = new BodyReader(this.options.maxTopicLevels ?? DEFAULT_MAX_TOPIC_LEVELS)
  }

  /** The protocol level the connection speaks: 5 once a v5 CONNECT was read, else 4. */
  get protocolLevel(): 4 | 5 {
    return this.v5 === undefined ? 4 : 5
  }

  /** The announced remaining length of the packet being read (0 between packets). */
  get announced(): number {
    return this.state === ParseState.Body ? this.length : 0
  }

  /** Bytes of memory held for the packet being read (0 between packets and for bodies read in place). */
  get held(): number {
    return this.partial.length
  }

  /** Feeds a chunk; returns the bytes held for an incomplete packet. */
  parse(chunk: Buffer): number {
    let i = 0
    while (i < chunk.length && this.state !== ParseState.Failed) {
      switch (this.state) {
        case ParseState.Header: {
          if (this.v5 !== undefined) {
            const e = headerViolationV5(chunk[i])
            if (e !== undefined) return this.fail(e.message, e.code)
          } else {
            const bad = headerViolation(chunk[i])
            if (bad !== undefined) return this.fail(bad)
          }
          this.first = chunk[i++]
          this.length = 0
          this.lengthBytes = 0
          this.multiplier = 1
          this.state = ParseState.Length
          break
        }
        case ParseState.Length: {
          const b = chunk[i++]
          this.length += (b & 0x7f) * this.multiplier
          this.multiplier *= 128
          this.lengthBytes++
          if ((b & 0x80) !== 0) {
            if (this.lengthBytes === 4) return this.fail("remaining length longer than 4 bytes", this.v5 === undefined ? undefined : ReasonCode.MalformedPacket)
            break
          }
          if (this.v5 !== undefined) {
            // A Variable Byte Integer in its fewest bytes: no trailing zero digit [MQTT-1.5.5-1].
            if (b === 0 && this.lengthBytes > 1) return this.fail("Remaining Length not in its fewest bytes [MQTT-1.5.5-1]", ReasonCode.MalformedPacket)
            const e = lengthViolationV5(this.first, this.length, this.options.maximumPacketSize)
            if (e !== undefined) return this.fail(e.message, e.code)
          } else {
            const bad = lengthViolation(this.first >> 4, this.length)
            if (bad !== undefined) return this.fail(bad)
          }
          this.state = ParseState.Body
          if (this.length === 0) this.complete(chunk, i, i)
          break
        }
        case ParseState.Body: {
          // The whole body in this chunk (the common case): decoded in place.
          if (this.have === 0 && chunk.length - i >= this.length) {
            const end = i + this.length
            this.complete(chunk, i, end)
            i = end
            break
          }
          const take = Math.min(this.length - this.have, chunk.length - i)
          this.room(this.have + take)
          chunk.copy(this.partial, this.have, i, i + take)
          this.have += take
          i += take
          if (this.have === this.length) {
            // The packet owns the buffer now (a payload may be kept as a view of it).
            const body = this.partial
            this.partial = EMPTY
            this.complete(body, 0, this.length)
          }
          break
        }
      }
    }
    return this.buffered()
  }

  /** Grows the partial buffer to hold `need` bytes: doubling, never past the announced length. */
  private room(need: number): void {
    const cur = this.partial
    if (need <= cur.length) return
    // Twice what arrived: a body split once (the usual large message) takes one allocation.
    const size = Math.min(this.length, Math.max(2 * need, cur.length * 2, FIRST_PARTIAL))
    const next = Buffer.allocUnsafe(size)
    if (this.have > 0) cur.copy(next, 0, 0, this.have)
    this.partial = next
  }

  private buffered(): number {
    switch (this.state) {
      case ParseState.Length:
        return 1 + this.lengthBytes
      case ParseState.Body:
        return 1 + this.lengthBytes + this.have
      default:
        return 0
    }
  }

  private complete(buf: Buffer, start: number, end: number): void {
    this.have = 0
    this.state = ParseState.Header
    let packet: ClientPacket
    if (this.awaitingConnect) {
      this.awaitingConnect = false
      // The CONNECT says which protocol the connection speaks (a 3.1.1 listener answers level 5 with CONNACK 1).
      if (this.options.v5 === true && this.first >> 4 === PacketType.Connect && connectProtocolLevel(buf.subarray(start, end)) === 5) {
        this.v5 = new DecoderV5({ maxTopicLevels: this.options.maxTopicLevels, maximumPacketSize: this.options.maximumPacketSize })
        const e = lengthViolationV5(this.first, this.length, this.options.maximumPacketSize)
        if (e !== undefined) {
          this.fail(e.message, e.code)
          return
        }
      }
    }
    try {
      if (this.v5 !== undefined) packet = asClientPacket(this.v5.decode(this.first, buf, start, end))
      else {
        packet = decodeWith(this.reader.reset(buf, start, end), this.first)
        this.reader.reset(EMPTY, 0, 0) // the chunk is not kept past its packets
      }
    } catch (e) {
      if (e instanceof PacketError) {
        this.fail(e.message, e.code)
        return
      }
      if (!(e instanceof MalformedPacket)) throw e
      this.fail(e.reason)
      return
    }
    this.onPacket(packet)
  }

  private fail(reason: string, code?: number): number {
    this.state = ParseState.Failed
    this.partial = EMPTY
    this.have = 0
    this.onError(new MalformedPacket(reason, code))
    return 0
  }
}
