// The one error type of the v5 codec and the bounds-checked cursor the decoder reads
// a packet body with. Every read checks what is left ("lengths that lie"), strings are
// checked as the standard asks (well-formed UTF-8 without U+0000, a BOM kept), and every
// failure is a `PacketError` carrying the reason code to close with.
import { ReasonCode, type ErrorCode } from "./reason.js"

/**
 * Why bytes are refused: `code` is the reason code the receiver closes the connection
 * with (CONNACK for a CONNECT, DISCONNECT after it), `reason` a text for the log,
 * `ruleId` the normative statement when one applies.
 */
export class PacketError extends Error {
  override readonly name = "PacketError"
  constructor(
    readonly code: ErrorCode,
    readonly reason: string,
    readonly ruleId?: string
  ) {
    super(ruleId === undefined ? reason : `${reason} [${ruleId}]`)
  }
}

export const malformed = (reason: string, ruleId?: string): PacketError => new PacketError(ReasonCode.MalformedPacket, reason, ruleId)
export const protocolError = (reason: string, ruleId?: string): PacketError => new PacketError(ReasonCode.ProtocolError, reason, ruleId)

/** The largest Variable Byte Integer (four bytes) [MQTT-1.5.5]: 268,435,455. */
export const MAX_VBI = 268_435_455

/** Bytes a Variable Byte Integer takes. */
export const vbiLength = (n: number): number => (n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4)

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const EMPTY = Buffer.alloc(0)

/** A cursor over buf[pos, end). */
export class Reader {
  buf: Buffer = EMPTY
  pos = 0
  end = 0

  reset(buf: Buffer, start: number, end: number): this {
    this.buf = buf
    this.pos = start
    this.end = end
    return this
  }

  /** Drops the reference to the last packet's bytes. */
  release(): void {
    this.buf = EMPTY
    this.pos = this.end = 0
  }

  get remaining(): number {
    return this.end - this.pos
  }

  private need(n: number, what: string): void {
    if (this.end - this.pos < n) throw malformed(`${what} past the end of the packet`)
  }

  byte(what: string): number {
    this.need(1, what)
    return this.buf[this.pos++]
  }

  u16(what: string): number {
    this.need(2, what)
    const v = (this.buf[this.pos] << 8) | this.buf[this.pos + 1]
    this.pos += 2
    return v
  }

  u32(what: string): number {
    this.need(4, what)
    const v = this.buf.readUInt32BE(this.pos)
    this.pos += 4
    return v
  }

  /** A Variable Byte Integer in the fewest bytes that hold it [MQTT-1.5.5-1]. */
  vbi(what: string): number {
    let value = 0
    let multiplier = 1
    for (let n = 1; n <= 4; n++) {
      const b = this.byte(what)
      value += (b & 0x7f) * multiplier
      if ((b & 0x80) === 0) {
        if (n > 1 && b === 0) throw malformed(`${what} is not encoded in the fewest bytes`, "MQTT-1.5.5-1")
        return value
      }
      multiplier *= 128
    }
    throw malformed(`${what} is longer than four bytes`, "MQTT-1.5.5-1")
  }

  /** Steps over a two-byte length and the bytes it counts; returns the count (the bytes end at `pos`). */
  private skipField(what: string): number {
    const n = this.u16(`${what} length`)
    this.need(n, `${what} of ${n} bytes`)
    this.pos += n
    return n
  }

  /** Binary Data: a view of the packet's bytes, not a copy. */
  binary(what: string): Buffer {
    const n = this.skipField(what)
    return this.buf.subarray(this.pos - n, this.pos)
  }

  /** A UTF-8 Encoded String: well-formed [MQTT-1.5.4-1], no U+0000 [MQTT-1.5.4-2], a BOM kept [MQTT-1.5.4-3]. */
  string(what: string): string {
    const n = this.skipField(what)
    return decodeUtf8(this.buf, this.pos - n, this.pos, what)
  }
}

/** The text of buf[start, end) as an MQTT string, or a Malformed Packet error. */
export const decodeUtf8 = (buf: Buffer, start: number, end: number, what: string): string => {
  let high = 0 // the OR of every byte: below 0x80 means ASCII, which needs no decoder
  for (let i = start; i < end; i++) {
    const c = buf[i]
    if (c === 0) throw malformed(`${what} contains U+0000`, "MQTT-1.5.4-2")
    high |= c
  }
  if (high < 0x80) return buf.toString("latin1", start, end)
  try {
    return utf8.decode(buf.subarray(start, end))
  } catch {
    throw malformed(`${what} is not well-formed UTF-8`, "MQTT-1.5.4-1")
  }
}

/**
 * The last topic name a decoder read, with its bytes: a device publishes to the same
 * topics over and over, and the same bytes give back the same string without decoding
 * or allocating. Only short topics are remembered.
 */
export class TopicMemo {
  private text = ""
  private bytes: Buffer = EMPTY

  /** The remembered topic when buf[start, end) holds its bytes. */
  recall(buf: Buffer, start: number, end: number): string | undefined {
    const n = end - start
    const bytes = this.bytes
    if (n === 0 || n !== bytes.length) return undefined
    // a byte loop: for topics this short, Buffer#compare's call into C++ costs more (5% of a v5 QoS 0 server's time)
    for (let i = 0; i < n; i++) if (buf[start + i] !== bytes[i]) return undefined
    return this.text
  }

  remember(text: string, buf: Buffer, start: number, end: number): void {
    if (end - start > 256) return
    this.text = text
    this.bytes = Buffer.from(buf.subarray(start, end))
  }
}
