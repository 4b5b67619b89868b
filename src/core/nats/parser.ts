// Incremental parser for the NATS client protocol as a server receives it.
// One byte-level state machine per connection: `feed` each received chunk, ops are
// delivered synchronously to a handler. Nothing is copied unless an op spans chunks.

export interface NatsOpHandler {
  connect(json: string): void
  /**
   * reply is "" when absent; hdrLen is -1 for PUB, the header size for HPUB (headers are
   * buf[start, start+hdrLen)); the payload including headers is buf[start, end).
   * buf/start/end are only valid during the call, but the bytes themselves are never written
   * again (a transport chunk, or a payload buffer allocated for this op), so a caller may
   * keep a reference to them instead of copying, as long as it never writes to them.
   */
  pub(subject: string, reply: string, hdrLen: number, buf: Buffer, start: number, end: number): void
  /** queue is "" when absent */
  sub(subject: string, queue: string, sid: string): void
  /** max is -1 when absent */
  unsub(sid: string, max: number): void
  ping(): void
  pong(): void
  info(json: string): void
  ok(): void
  /** the text after `-ERR`, with one pair of surrounding single quotes removed */
  err(message: string): void
  /** the parser is dead after this: every later `feed` is ignored */
  protocolError(error: ParseError): void
}

export type ParseErrorKind = "UnknownOp" | "MaxControlLine" | "MaxPayload" | "BadArgs" | "BadHeaderSize"

export interface ParseError {
  readonly kind: ParseErrorKind
  readonly detail: string
}

export interface ParserLimits {
  readonly maxControlLine: number
  readonly maxPayload: number
}

const Ch = {
  TAB: 9,
  LF: 10,
  CR: 13,
  SPACE: 32,
  PLUS: 43,
  MINUS: 45,
  QUOTE: 39,
  ZERO: 48,
  NINE: 57,
  LOWER: 0x20, // OR-ing it into an ASCII letter gives the lower-case letter
  a_c: 0x63,
  a_h: 0x68,
  a_i: 0x69,
  a_o: 0x6f,
  a_p: 0x70,
  a_s: 0x73,
  a_u: 0x75
} as const

const Op = {
  PUB: 0,
  HPUB: 1,
  SUB: 2,
  UNSUB: 3,
  CONNECT: 4,
  INFO: 5,
  PING: 6,
  PONG: 7,
  OK: 8,
  ERR: 9
} as const
type Op = (typeof Op)[keyof typeof Op]

/** Lower-case spelling of each op, indexed by Op; only letters follow the first byte. */
const KEYWORDS: ReadonlyArray<Uint8Array> = [
  "pub", "hpub", "sub", "unsub", "connect", "info", "ping", "pong", "+ok", "-err"
].map((k) => Uint8Array.from(k, (c) => c.charCodeAt(0)))

const State = {
  OP_START: 0,
  OP_P: 1, // after P: PUB, PING or PONG
  OP_NAME: 2, // matching the rest of KEYWORDS[op]
  ARG: 3, // the rest of the control line, up to LF
  MSG_PAYLOAD: 4, // a payload spanning chunks, copied into payloadBuf
  MSG_END_R: 5,
  MSG_END_N: 6,
  DEAD: 7
} as const
type State = (typeof State)[keyof typeof State]

/** Most args any op takes (HPUB subject reply hdr total); one more slot detects excess. */
const MAX_ARGS = 5
/** How much client input an error detail may echo. */
const SNIPPET = 32
/** Sizes are parsed as doubles; longer digit strings are "huge" rather than exact. */
const MAX_SIZE_DIGITS = 15
const EMPTY = Buffer.alloc(0)
/** Slots in the per-connection subject string cache (a power of two). */
const SUBJECT_CACHE = 128

/** Node's Buffer has these native slicers; they skip toString's argument handling. */
interface FastSlices {
  latin1Slice(start: number, end: number): string
  utf8Slice(start: number, end: number): string
}

export const isBlank = (b: number): boolean => b === Ch.SPACE || b === Ch.TAB

/**
 * Subject and sid strings repeat from op to op; a small direct-mapped cache of ASCII
 * strings returns the same string instance (cheaper than decoding, and lets later
 * Map lookups reuse the string's cached hash).
 */
export class StringCache {
  private readonly slots: Array<string> = new Array<string>(SUBJECT_CACHE).fill("")

  get(b: Buffer, s: number, e: number): string {
    const n = e - s
    // Subjects tend to differ in their last tokens: weigh the last two bytes most.
    const h = (n * 7 + b[e - 1] * 31 + b[e - (n > 1 ? 2 : 1)] * 131 + b[s + (n >> 1)] * 17) & (SUBJECT_CACHE - 1)
    const c = this.slots[h]
    if (c.length === n) {
      let j = 0
      while (j < n && c.charCodeAt(j) === b[s + j]) j++
      if (j === n) return c
    }
    for (let j = s; j < e; j++) {
      if (b[j] >= 0x80) return (b as unknown as FastSlices).utf8Slice(s, e)
    }
    const str = (b as unknown as FastSlices).latin1Slice(s, e)
    this.slots[h] = str
    return str
  }
}

export const decode = (b: Buffer, s: number, e: number): string => {
  for (let j = s; j < e; j++) {
    if (b[j] >= 0x80) return (b as unknown as FastSlices).utf8Slice(s, e)
  }
  return (b as unknown as FastSlices).latin1Slice(s, e)
}

/** Non-negative decimal, or -1 when empty or not all digits. */
export const parseSize = (b: Buffer, s: number, e: number): number => {
  if (s >= e) return -1
  if (e - s > MAX_SIZE_DIGITS) {
    for (let j = s; j < e; j++) if (b[j] < Ch.ZERO || b[j] > Ch.NINE) return -1
    return Number.MAX_SAFE_INTEGER
  }
  let n = 0
  for (let j = s; j < e; j++) {
    const d = b[j] - Ch.ZERO
    if (d < 0 || d > 9) return -1
    n = n * 10 + d
  }
  return n
}

/** Printable excerpt of client input for logs: at most SNIPPET bytes, controls as '.'. */
export const snippet = (b: Buffer, s: number, e: number): string => {
  const end = Math.min(e, s + SNIPPET)
  let out = ""
  for (let j = s; j < end; j++) {
    const c = b[j]
    out += c >= 0x20 && c < 0x7f ? String.fromCharCode(c) : "."
  }
  return e > end ? out + "..." : out
}

export class NatsParser {
  private state: State = State.OP_START
  private op: Op = Op.PUB
  private kwPos = 0
  private maxControlLine: number
  private maxPayload: number

  /** Control-line bytes after the op name, when the line spans chunks. */
  private argBuf: Buffer | undefined = undefined
  private argLen = 0
  /** Token boundaries of the current control line: start, end pairs. */
  private readonly argv = new Int32Array(MAX_ARGS * 2)

  /** A PUB/HPUB whose payload spans chunks. */
  private msgSubject = ""
  private msgReply = ""
  private msgHdrLen = -1
  private payloadBuf: Buffer = EMPTY
  private payloadFilled = 0

  private readonly subjects = new StringCache()

  constructor(
    private readonly handler: NatsOpHandler,
    limits: ParserLimits
  ) {
    this.maxControlLine = limits.maxControlLine
    this.maxPayload = limits.maxPayload
  }

  get dead(): boolean {
    return this.state === State.DEAD
  }

  setMaxPayload(n: number): void {
    this.maxPayload = n
  }

  /** New limits from the next op on (a configuration reload); an op already being read keeps the old ones. */
  setLimits(limits: ParserLimits): void {
    this.maxControlLine = limits.maxControlLine
    this.maxPayload = limits.maxPayload
  }

  /** Makes the parser dead without an error (e.g. the server closes the connection from a handler). */
  stop(): void {
    this.state = State.DEAD
    this.argBuf = undefined
    this.payloadBuf = EMPTY
  }

  /** Parses every complete op in `chunk`; a partial op at the end is kept for the next call. */
  feed(chunk: Buffer): void {
    if (this.state === State.DEAD) return
    try {
      this.run(chunk)
    } catch (e) {
      // Only a throwing handler gets here; the parse position is lost, so stop.
      this.state = State.DEAD
      throw e
    }
  }

  private run(chunk: Buffer): void {
    const len = chunk.length
    let i = 0
    while (i < len) {
      switch (this.state) {
        case State.OP_START: {
          if (!this.opStart(chunk[i])) return this.fail("UnknownOp", "unknown protocol operation", chunk, i)
          i++
          break
        }
        case State.OP_P: {
          const b = chunk[i] | Ch.LOWER
          if (b === Ch.a_u) this.op = Op.PUB
          else if (b === Ch.a_i) this.op = Op.PING
          else if (b === Ch.a_o) this.op = Op.PONG
          else return this.fail("UnknownOp", "unknown protocol operation", chunk, Math.max(0, i - 1))
          this.kwPos = 2
          this.state = State.OP_NAME
          i++
          break
        }
        case State.OP_NAME: {
          const kw = KEYWORDS[this.op]
          let k = this.kwPos
          while (k < kw.length && i < len) {
            if ((chunk[i] | Ch.LOWER) !== kw[k]) {
              return this.fail("UnknownOp", "unknown protocol operation", chunk, Math.max(0, i - k))
            }
            k++
            i++
          }
          this.kwPos = k
          if (i === len) return
          const b = chunk[i]
          if (!isBlank(b) && b !== Ch.CR && b !== Ch.LF) {
            return this.fail("UnknownOp", "unknown protocol operation", chunk, Math.max(0, i - k))
          }
          this.state = State.ARG
          this.argLen = 0
          break
        }
        case State.ARG: {
          i = this.arg(chunk, i)
          if (i < 0) return
          break
        }
        case State.MSG_PAYLOAD: {
          const n = Math.min(this.payloadBuf.length - this.payloadFilled, len - i)
          chunk.copy(this.payloadBuf, this.payloadFilled, i, i + n)
          this.payloadFilled += n
          i += n
          if (this.payloadFilled === this.payloadBuf.length) this.state = State.MSG_END_R
          break
        }
        case State.MSG_END_R: {
          if (chunk[i] !== Ch.CR) return this.fail("UnknownOp", "payload not followed by CRLF", chunk, i)
          this.state = State.MSG_END_N
          i++
          break
        }
        case State.MSG_END_N: {
          if (chunk[i] !== Ch.LF) return this.fail("UnknownOp", "payload not followed by CRLF", chunk, i)
          i++
          const payload = this.payloadBuf
          const subject = this.msgSubject
          const reply = this.msgReply
          this.payloadBuf = EMPTY
          this.msgSubject = ""
          this.msgReply = ""
          this.state = State.OP_START
          this.handler.pub(subject, reply, this.msgHdrLen, payload, 0, payload.length)
          break
        }
        default:
          return
      }
    }
  }

  /** Picks the op (or the P family) from its first byte; false when no op starts so. */
  private opStart(b: number): boolean {
    let op: Op
    if (b === Ch.PLUS) op = Op.OK
    else if (b === Ch.MINUS) op = Op.ERR
    else {
      // Only ASCII letters are compared after OR-ing LOWER, so no other byte can match.
      switch (b | Ch.LOWER) {
        case Ch.a_p:
          this.state = State.OP_P
          return true
        case Ch.a_h:
          op = Op.HPUB
          break
        case Ch.a_s:
          op = Op.SUB
          break
        case Ch.a_u:
          op = Op.UNSUB
          break
        case Ch.a_c:
          op = Op.CONNECT
          break
        case Ch.a_i:
          op = Op.INFO
          break
        default:
          return false
      }
    }
    this.op = op
    this.kwPos = 1
    this.state = State.OP_NAME
    return true
  }

  /**
   * Collects the control line up to LF (buffering only when it spans chunks), enforces
   * max_control_line, then runs the op. Returns the index after what it consumed, -1 when dead.
   */
  private arg(chunk: Buffer, i: number): number {
    const len = chunk.length
    const opLen = KEYWORDS[this.op].length
    // Past `room` bytes without LF the line is over the limit (room allows for CR LF).
    const room = this.maxControlLine - opLen - this.argLen + 2
    const stop = len - i > room ? i + room : len
    let j = i
    while (j < stop && chunk[j] !== Ch.LF) j++
    if (j === stop && stop < len) return this.controlLineError(opLen + this.argLen + room - 1, chunk, i)

    if (j === len) {
      const pending = this.argLen + (len - i)
      const last = len > i ? chunk[len - 1] : Ch.SPACE
      const lineLen = opLen + pending - (last === Ch.CR ? 1 : 0)
      if (lineLen > this.maxControlLine) return this.controlLineError(lineLen, chunk, i)
      this.appendArg(chunk, i, len, pending)
      return len
    }

    let ab = chunk
    let as = i
    let ae = j
    if (this.argLen > 0) {
      const pending = this.argLen + (j - i)
      this.appendArg(chunk, i, j, pending)
      ab = this.argBuf as Buffer
      as = 0
      ae = pending
      this.argLen = 0
    }
    if (ae > as && ab[ae - 1] === Ch.CR) ae--
    if (opLen + (ae - as) > this.maxControlLine) return this.controlLineError(opLen + ae - as, ab, as)

    this.state = State.OP_START
    return this.dispatch(ab, as, ae, chunk, j + 1)
  }

  private appendArg(chunk: Buffer, s: number, e: number, total: number): void {
    let buf = this.argBuf
    if (buf === undefined || buf.length < total) {
      // Bounded by max_control_line (+1 for a trailing CR) because the length was checked.
      const size = Math.min(Math.max(total * 2, 128), this.maxControlLine + 2)
      const grown = Buffer.allocUnsafe(Math.max(size, total))
      if (buf !== undefined) buf.copy(grown, 0, 0, this.argLen)
      this.argBuf = buf = grown
    }
    chunk.copy(buf, this.argLen, s, e)
    this.argLen = total
  }

  private controlLineError(lineLen: number, b: Buffer, s: number): number {
    this.fail("MaxControlLine", `control line of ${lineLen}+ bytes exceeds max_control_line ${this.maxControlLine}`, b, s)
    return -1
  }

  /** Runs a complete control line held in ab[as, ae); the chunk continues at `next`. */
  private dispatch(ab: Buffer, as: number, ae: number, chunk: Buffer, next: number): number {
    switch (this.op) {
      case Op.PUB:
        return this.pub(ab, as, ae, chunk, next)
      case Op.HPUB:
        return this.hpub(ab, as, ae, chunk, next)
      case Op.SUB:
        return this.sub(ab, as, ae) ? next : -1
      case Op.UNSUB:
        return this.unsub(ab, as, ae) ? next : -1
      case Op.PING:
        this.handler.ping()
        return next
      case Op.PONG:
        this.handler.pong()
        return next
      case Op.OK:
        this.handler.ok()
        return next
      case Op.CONNECT: {
        const s = skipBlanks(ab, as, ae)
        if (s === ae) return this.badArgs("CONNECT without JSON", ab, as, ae)
        this.handler.connect(decode(ab, s, ae))
        return next
      }
      case Op.INFO: {
        const s = skipBlanks(ab, as, ae)
        if (s === ae) return this.badArgs("INFO without JSON", ab, as, ae)
        this.handler.info(decode(ab, s, ae))
        return next
      }
      case Op.ERR: {
        let s = skipBlanks(ab, as, ae)
        let e = ae
        if (e - s >= 2 && ab[s] === Ch.QUOTE && ab[e - 1] === Ch.QUOTE) {
          s++
          e--
        }
        this.handler.err(decode(ab, s, e))
        return next
      }
    }
  }

  /** Splits ab[as, ae) on blanks into argv; returns the token count (may exceed MAX_ARGS). */
  private split(ab: Buffer, as: number, ae: number): number {
    const argv = this.argv
    let n = 0
    let j = as
    while (j < ae) {
      while (j < ae && isBlank(ab[j])) j++
      if (j === ae) break
      const s = j
      while (j < ae && !isBlank(ab[j])) j++
      if (n < MAX_ARGS) {
        argv[2 * n] = s
        argv[2 * n + 1] = j
      }
      n++
    }
    return n
  }

  private pub(ab: Buffer, as: number, ae: number, chunk: Buffer, next: number): number {
    const n = this.split(ab, as, ae)
    if (n !== 2 && n !== 3) return this.badArgs("PUB needs <subject> [reply] <#bytes>", ab, as, ae)
    const argv = this.argv
    const size = parseSize(ab, argv[2 * n - 2], argv[2 * n - 1])
    if (size < 0) return this.badArgs("PUB has a bad size", ab, as, ae)
    if (size > this.maxPayload) return this.maxPayloadError(size)
    const subject = this.subjects.get(ab, argv[0], argv[1])
    const reply = n === 3 ? decode(ab, argv[2], argv[3]) : ""
    return this.payload(subject, reply, -1, size, chunk, next)
  }

  private hpub(ab: Buffer, as: number, ae: number, chunk: Buffer, next: number): number {
    const n = this.split(ab, as, ae)
    if (n !== 3 && n !== 4) {
      return this.badArgs("HPUB needs <subject> [reply] <#header bytes> <#total bytes>", ab, as, ae)
    }
    const argv = this.argv
    const hdr = parseSize(ab, argv[2 * n - 4], argv[2 * n - 3])
    const size = parseSize(ab, argv[2 * n - 2], argv[2 * n - 1])
    if (hdr < 0 || size < 0) return this.badArgs("HPUB has a bad size", ab, as, ae)
    if (hdr > size) {
      this.fail("BadHeaderSize", `header size ${hdr} larger than total size ${size}`, ab, as, ae)
      return -1
    }
    if (size > this.maxPayload) return this.maxPayloadError(size)
    const subject = this.subjects.get(ab, argv[0], argv[1])
    const reply = n === 4 ? decode(ab, argv[2], argv[3]) : ""
    return this.payload(subject, reply, hdr, size, chunk, next)
  }

  /** Delivers a payload lying wholly in the chunk without copying, or starts collecting it. */
  private payload(subject: string, reply: string, hdrLen: number, size: number, chunk: Buffer, i: number): number {
    const end = i + size
    const len = chunk.length
    if (end + 2 <= len) {
      if (chunk[end] !== Ch.CR || chunk[end + 1] !== Ch.LF) {
        this.fail("UnknownOp", "payload not followed by CRLF", chunk, end)
        return -1
      }
      this.handler.pub(subject, reply, hdrLen, chunk, i, end)
      return end + 2
    }
    this.msgSubject = subject
    this.msgReply = reply
    this.msgHdrLen = hdrLen
    this.payloadBuf = size === 0 ? EMPTY : Buffer.allocUnsafe(size)
    const n = Math.min(size, len - i)
    chunk.copy(this.payloadBuf, 0, i, i + n)
    this.payloadFilled = n
    this.state = n === size ? State.MSG_END_R : State.MSG_PAYLOAD
    return i + n
  }

  private sub(ab: Buffer, as: number, ae: number): boolean {
    const n = this.split(ab, as, ae)
    if (n !== 2 && n !== 3) {
      this.badArgs("SUB needs <subject> [queue] <sid>", ab, as, ae)
      return false
    }
    const argv = this.argv
    const subject = this.subjects.get(ab, argv[0], argv[1])
    const queue = n === 3 ? this.subjects.get(ab, argv[2], argv[3]) : ""
    const sid = decode(ab, argv[2 * n - 2], argv[2 * n - 1])
    this.handler.sub(subject, queue, sid)
    return true
  }

  private unsub(ab: Buffer, as: number, ae: number): boolean {
    const n = this.split(ab, as, ae)
    if (n !== 1 && n !== 2) {
      this.badArgs("UNSUB needs <sid> [max_msgs]", ab, as, ae)
      return false
    }
    const argv = this.argv
    let max = -1
    if (n === 2) {
      max = parseSize(ab, argv[2], argv[3])
      if (max < 0) {
        this.badArgs("UNSUB has a bad max_msgs", ab, as, ae)
        return false
      }
    }
    this.handler.unsub(decode(ab, argv[0], argv[1]), max)
    return true
  }

  private badArgs(what: string, ab: Buffer, as: number, ae: number): number {
    this.fail("BadArgs", what, ab, as, ae)
    return -1
  }

  private maxPayloadError(size: number): number {
    const shown = size >= Number.MAX_SAFE_INTEGER ? "huge" : String(size)
    this.failWith({ kind: "MaxPayload", detail: `payload size ${shown} exceeds max_payload ${this.maxPayload}` })
    return -1
  }

  private fail(kind: ParseErrorKind, what: string, b: Buffer, s: number, e: number = b.length): void {
    this.failWith({ kind, detail: `${what}: '${snippet(b, s, e)}'` })
  }

  private failWith(error: ParseError): void {
    this.state = State.DEAD
    this.argBuf = undefined
    this.payloadBuf = EMPTY
    this.handler.protocolError(error)
  }
}

export const skipBlanks = (b: Buffer, s: number, e: number): number => {
  while (s < e && isBlank(b[s])) s++
  return s
}
