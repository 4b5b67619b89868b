// Incremental parser for what a cluster peer sends: the route protocol (RS+/RS-/RMSG/HMSG,
// and LS+/LMSG for interest and messages that came from a leaf node's cluster) or the leaf
// node protocol (LS+/LS-/LMSG/HMSG, no account on the wire), plus INFO/CONNECT/PING/PONG/-ERR.
// One byte-level state machine per connection, like the client parser: `feed` each chunk,
// ops go to a handler synchronously, and nothing is copied unless an op spans chunks.
// The grammar, as nats-server 2.9.10 was observed to send it, is in docs/cluster-protocol.md.

import {
  decode,
  isBlank,
  type ParseError,
  type ParseErrorKind,
  type ParserLimits,
  parseSize,
  skipBlanks,
  snippet,
  StringCache
} from "../nats/parser.js"

export type { ParseError, ParseErrorKind, ParserLimits }

/** Which protocol the peer speaks: a route carries the account in every op, a leaf connection is bound to one. */
export type PeerKind = "route" | "leaf"

/**
 * One message as the peer sent it. The parser hands the same record to every `msg` call:
 * its fields (and `queues`) are valid only during the call. The payload bytes themselves
 * are never written again (see NatsOpHandler.pub), so a caller may keep buf by reference.
 */
export interface PeerMsg {
  /** The account; "" on a leaf connection (its account was bound at CONNECT). */
  readonly account: string
  readonly subject: string
  /** "" when absent */
  readonly reply: string
  /**
   * The queue groups the sender picked this server to deliver one member of
   * (`| q1 q2` or `+ reply q1 q2`); empty when it named none.
   */
  readonly queues: ReadonlyArray<string>
  /** -1 without headers; else the header block is buf[start, start+hdrLen). */
  readonly hdrLen: number
  /** headers and payload are buf[start, end) */
  readonly buf: Buffer
  readonly start: number
  readonly end: number
  /** The cluster of the leaf node the message entered through (a route's LMSG), else "". */
  readonly origin: string
}

/** One RS+/RS-/LS+/LS- as the peer sent it; the same record every call, valid only during it. */
export interface PeerInterest {
  /** "" on a leaf connection. */
  readonly account: string
  readonly subject: string
  /** "" for a plain subscription. */
  readonly queue: string
  /** The queue group's weight behind the peer (the number of members; absolute, not a delta); 1 for a plain subscription and in unsubscribes. */
  readonly weight: number
  /** The leaf cluster the interest came from (a route's `LS+ <origin> ...`), else "" (also in a route's LS-, which names none). */
  readonly origin: string
  /**
   * A route's LS+/LS-: interest of a leaf node behind the peer, kept apart from the peer's
   * own (RS+/RS-) interest on the same subject. Always false on a leaf connection.
   */
  readonly fromLeaf: boolean
}

export interface PeerOpHandler {
  info(json: string): void
  connect(json: string): void
  ping(): void
  pong(): void
  /** the text after `-ERR`, with one pair of surrounding single quotes removed */
  err(message: string): void
  /** RS+ or LS+ */
  sub(interest: PeerInterest): void
  /** RS- or LS- */
  unsub(interest: PeerInterest): void
  /** RMSG, LMSG or HMSG */
  msg(msg: PeerMsg): void
  /** the parser is dead after this: every later `feed` is ignored */
  protocolError(error: ParseError): void
}

const Ch = {
  LF: 10,
  CR: 13,
  PLUS: 43,
  MINUS: 45,
  PIPE: 124,
  QUOTE: 39,
  ZERO: 48,
  NINE: 57,
  LOWER: 0x20, // OR-ing it into an ASCII letter gives the lower-case letter
  a_c: 0x63,
  a_h: 0x68,
  a_i: 0x69,
  a_l: 0x6c,
  a_p: 0x70,
  a_r: 0x72
} as const

const Op = {
  INFO: 0,
  CONNECT: 1,
  PING: 2,
  PONG: 3,
  ERR: 4,
  RS_SUB: 5,
  RS_UNSUB: 6,
  RMSG: 7,
  LS_SUB: 8,
  LS_UNSUB: 9,
  LMSG: 10,
  HMSG: 11
} as const
type Op = (typeof Op)[keyof typeof Op]

/** Lower-case spelling of each op, indexed by Op. */
const KEYWORDS: ReadonlyArray<Uint8Array> = [
  "info", "connect", "ping", "pong", "-err", "rs+", "rs-", "rmsg", "ls+", "ls-", "lmsg", "hmsg"
].map((k) => Uint8Array.from(k, (c) => c.charCodeAt(0)))

/** Ops a leaf connection may send: the leaf protocol has no R ops. */
const LEAF_OPS: ReadonlySet<Op> = new Set([
  Op.INFO, Op.CONNECT, Op.PING, Op.PONG, Op.ERR, Op.LS_SUB, Op.LS_UNSUB, Op.LMSG, Op.HMSG
])

const State = {
  OP_START: 0,
  OP_NAME: 1, // matching the rest of KEYWORDS[op], switching to a sibling op where they part
  ARG: 2, // the rest of the control line, up to LF
  PAYLOAD: 3, // a payload and its CRLF spanning chunks, copied into `pending`
  DEAD: 4
} as const
type State = (typeof State)[keyof typeof State]

const EMPTY = Buffer.alloc(0)

/** Longest message line (before its sizes) remembered for the next message to repeat. */
const REPEAT_MAX = 256

/** A keyword byte matches case-insensitively when it is a letter, exactly otherwise (`+`, `-`). */
const keywordByte = (b: number, k: number): boolean => (k >= 0x61 ? (b | Ch.LOWER) === k : b === k)

const isMarker = (b: Buffer, s: number, e: number, marker: number): boolean => e - s === 1 && b[s] === marker

class MsgRecord implements PeerMsg {
  account = ""
  subject = ""
  reply = ""
  readonly queues: Array<string> = []
  hdrLen = -1
  buf: Buffer = EMPTY
  start = 0
  end = 0
  origin = ""
}

class InterestRecord implements PeerInterest {
  account = ""
  subject = ""
  queue = ""
  weight = 1
  origin = ""
  fromLeaf = false
}

export class PeerParser {
  private state: State = State.OP_START
  private op: Op = Op.RMSG
  private kwPos = 0

  /** Control-line bytes after the op name, when the line spans chunks. */
  private lineBuf: Buffer | undefined = undefined
  private lineLen = 0
  /** Token boundaries of the current control line: start, end pairs (grows with long queue lists). */
  private argv: Int32Array = new Int32Array(16)

  private readonly rec = new MsgRecord()
  private readonly interest = new InterestRecord()
  /** A payload spanning chunks with its CRLF, and how much of it has arrived. */
  private pending: Buffer = EMPTY
  private filled = 0

  private readonly strings = new StringCache()

  /** The size tokens `sizesAt` found: start, end of the last, then of the one before it. */
  private readonly sz = new Int32Array(4)
  /** The last message line (what came before its sizes) and what it parsed to; lastOp -1: none. */
  private lastLine: Buffer = EMPTY
  private lastLen = 0
  private lastOp: Op | -1 = -1
  private lastOrigin = ""
  private lastAccount = ""
  private lastSubject = ""
  private lastReply = ""

  constructor(
    readonly kind: PeerKind,
    private readonly handler: PeerOpHandler,
    private limits: ParserLimits
  ) {}

  get dead(): boolean {
    return this.state === State.DEAD
  }

  /** New limits (a configuration reload) from the next control line on. */
  setLimits(limits: ParserLimits): void {
    this.limits = limits
  }

  /** Makes the parser dead without an error (the connection is being closed); drops what it buffered. */
  stop(): void {
    this.state = State.DEAD
    this.lineBuf = undefined
    this.pending = EMPTY
  }

  /**
   * Parses every complete op in `chunk`; a partial op at the end is kept for the next call.
   * A handler that throws leaves the parse position lost: the parser stops and rethrows.
   */
  feed(chunk: Buffer): void {
    if (this.state === State.DEAD) return
    let done = false
    try {
      this.run(chunk)
      done = true
    } finally {
      if (!done) this.stop()
    }
  }

  private run(chunk: Buffer): void {
    let i = 0
    while (i >= 0 && i < chunk.length) i = this.step(chunk, i)
  }

  /** Runs the current state on chunk[i...]: the index after what it consumed, -1 when dead. */
  private step(chunk: Buffer, i: number): number {
    switch (this.state) {
      case State.OP_START:
        return this.opStart(chunk, i)
      case State.OP_NAME:
        return this.matchName(chunk, i)
      case State.ARG:
        return this.line(chunk, i)
      case State.PAYLOAD:
        return this.collect(chunk, i)
      default:
        return -1
    }
  }

  /** Picks the op from its first byte (the hot ops RMSG and LMSG first). */
  private opStart(chunk: Buffer, i: number): number {
    const b = chunk[i]
    let op: Op
    switch (b | Ch.LOWER) {
      case Ch.a_r:
        op = Op.RMSG
        break
      case Ch.a_l:
        op = Op.LMSG
        break
      case Ch.a_h:
        op = Op.HMSG
        break
      case Ch.a_p:
        op = Op.PING
        break
      case Ch.a_i:
        op = Op.INFO
        break
      case Ch.a_c:
        op = Op.CONNECT
        break
      default:
        op = Op.ERR
    }
    if ((op === Op.ERR && b !== Ch.MINUS) || !this.allowed(op)) {
      this.fail("UnknownOp", "unknown protocol operation", chunk, i)
      return -1
    }
    this.op = op
    this.kwPos = 1
    this.state = State.OP_NAME
    return i + 1
  }

  private allowed(op: Op): boolean {
    return this.kind === "route" || LEAF_OPS.has(op)
  }

  /** Matches the op name; returns the index after what it consumed, -1 when dead. */
  private matchName(chunk: Buffer, i: number): number {
    const len = chunk.length
    let kw = KEYWORDS[this.op]
    let k = this.kwPos
    while (k < kw.length && i < len) {
      if (!keywordByte(chunk[i], kw[k])) {
        if (!this.sibling(k, chunk[i])) {
          this.fail("UnknownOp", "unknown protocol operation", chunk, Math.max(0, i - k))
          return -1
        }
        kw = KEYWORDS[this.op]
      }
      k++
      i++
    }
    this.kwPos = k
    if (i === len) return len
    const b = chunk[i]
    if (!isBlank(b) && b !== Ch.CR && b !== Ch.LF) {
      this.fail("UnknownOp", "unknown protocol operation", chunk, Math.max(0, i - k))
      return -1
    }
    this.state = State.ARG
    this.lineLen = 0
    return i
  }

  /** Switches to another op spelled like the current one up to `pos` and with byte b there (PING/PONG, RMSG/RS+/RS-). */
  private sibling(pos: number, b: number): boolean {
    const kw = KEYWORDS[this.op]
    for (let op = 0; op < KEYWORDS.length; op++) {
      const cand = KEYWORDS[op]
      if (op === this.op || cand.length <= pos || !keywordByte(b, cand[pos]) || !this.allowed(op as Op)) continue
      let j = 0
      while (j < pos && cand[j] === kw[j]) j++
      if (j === pos) {
        this.op = op as Op
        return true
      }
    }
    return false
  }

  /**
   * Collects the control line up to LF (into lineBuf only when it spans chunks), bounds it
   * by max_control_line, then runs the op. Returns the index after what it consumed, -1 when dead.
   */
  private line(chunk: Buffer, i: number): number {
    const len = chunk.length
    const opLen = KEYWORDS[this.op].length
    // Bytes this chunk may add before the LF: what the limit leaves, plus one for a CR.
    const budget = this.limits.maxControlLine - opLen + 1 - this.lineLen
    const stop = Math.min(len, i + budget + 1)
    let lf = i
    while (lf < stop && chunk[lf] !== Ch.LF) lf++
    if (lf === stop) {
      // No LF yet: what arrived is already too long unless only a CR is missing its LF.
      const soFar = opLen + this.lineLen + (lf - i) - (chunk[lf - 1] === Ch.CR ? 1 : 0)
      if (stop < len || soFar > this.limits.maxControlLine) return this.tooLong(soFar, chunk, i)
      this.keepLine(chunk, i, len)
      return len
    }
    let b = chunk
    let s = i
    let e = lf
    if (this.lineLen > 0) {
      this.keepLine(chunk, i, lf)
      b = this.lineBuf!
      s = 0
      e = this.lineLen
      this.lineLen = 0
    }
    if (e > s && b[e - 1] === Ch.CR) e--
    if (opLen + (e - s) > this.limits.maxControlLine) return this.tooLong(opLen + e - s, b, s)
    this.state = State.OP_START
    return this.dispatch(b, s, e, chunk, lf + 1)
  }

  private keepLine(chunk: Buffer, s: number, e: number): void {
    const need = this.lineLen + (e - s)
    let buf = this.lineBuf
    if (buf === undefined || buf.length < need) {
      // Bounded by max_control_line + 1 (a trailing CR): longer lines fail before getting here.
      const grown = Buffer.allocUnsafe(Math.min(Math.max(need * 2, 256), this.limits.maxControlLine + 2))
      if (buf !== undefined) buf.copy(grown, 0, 0, this.lineLen)
      this.lineBuf = buf = grown
    }
    chunk.copy(buf, this.lineLen, s, e)
    this.lineLen = need
  }

  private tooLong(n: number, b: Buffer, s: number): number {
    this.fail("MaxControlLine", `control line of ${n}+ bytes exceeds max_control_line ${this.limits.maxControlLine}`, b, s)
    return -1
  }

  /** Runs a complete control line held in b[s, e); the chunk continues at `next`. */
  private dispatch(b: Buffer, s: number, e: number, chunk: Buffer, next: number): number {
    switch (this.op) {
      case Op.RMSG:
        return this.message(b, s, e, 2, 1, chunk, next)
      case Op.HMSG:
        return this.message(b, s, e, this.kind === "route" ? 2 : 1, 2, chunk, next)
      case Op.LMSG:
        return this.kind === "route" ? this.message(b, s, e, 3, 2, chunk, next) : this.message(b, s, e, 1, 1, chunk, next)
      case Op.RS_SUB:
        return this.subscribe(b, s, e, 1, next)
      case Op.LS_SUB:
        return this.subscribe(b, s, e, this.kind === "route" ? 2 : 0, next)
      case Op.RS_UNSUB:
      case Op.LS_UNSUB:
        // A route's LS- names no origin (nats-server 2.9.10 sends `LS-  <account> ...` and
        // reads `LS- <origin> ...` as a parse error): both are <account> <subject> [queue].
        return this.unsubscribe(b, s, e, this.kind === "route" ? 1 : 0, next)
      case Op.PING:
        if (!this.noArgs(b, s, e)) return -1
        this.handler.ping()
        return next
      case Op.PONG:
        if (!this.noArgs(b, s, e)) return -1
        this.handler.pong()
        return next
      case Op.INFO:
      case Op.CONNECT:
        return this.json(b, s, e, next)
      case Op.ERR:
        this.handler.err(unquote(b, skipBlanks(b, s, e), trimEnd(b, s, e)))
        return next
    }
  }

  private noArgs(b: Buffer, s: number, e: number): boolean {
    if (skipBlanks(b, s, e) === e) return true
    this.badArgs(`${this.opText()} takes no arguments`, b, s, e)
    return false
  }

  private json(b: Buffer, s: number, e: number, next: number): number {
    const js = skipBlanks(b, s, e)
    const je = trimEnd(b, js, e)
    const info = this.op === Op.INFO
    if (js === je) return this.badArgs(info ? "INFO without JSON" : "CONNECT without JSON", b, s, e)
    const text = decode(b, js, je)
    if (info) this.handler.info(text)
    else this.handler.connect(text)
    return next
  }

  /** Splits b[s, e) on blanks into argv (start, end pairs); returns the token count. */
  private split(b: Buffer, s: number, e: number): number {
    let argv = this.argv
    let n = 0
    let j = s
    for (;;) {
      while (j < e && isBlank(b[j])) j++
      if (j === e) return n
      const from = j
      while (j < e && !isBlank(b[j])) j++
      if (2 * n + 2 > argv.length) this.argv = argv = doubled(argv)
      argv[2 * n] = from
      argv[2 * n + 1] = j
      n++
    }
  }

  private token(b: Buffer, i: number): string {
    return this.strings.get(b, this.argv[2 * i], this.argv[2 * i + 1])
  }

  /**
   * RS+ / LS+. `lead` tokens come before the subject: the account on a route (1), origin and
   * account on a route's LS+ (2), none on a leaf. Then `<subject> [<queue> <weight>]`.
   */
  private subscribe(b: Buffer, s: number, e: number, lead: number, next: number): number {
    const n = this.split(b, s, e)
    const r = this.interest
    if (n === lead + 1) {
      r.queue = ""
      r.weight = 1
    } else if (n === lead + 3) {
      const weight = parseSize(b, this.argv[2 * n - 2], this.argv[2 * n - 1])
      if (weight < 1) return this.badArgs("queue weight must be a positive number", b, s, e)
      r.queue = this.token(b, lead + 1)
      r.weight = weight
    } else {
      return this.badArgs(`${this.opText()} needs ${this.leadNames(lead)}<subject> [<queue> <weight>]`, b, s, e)
    }
    r.origin = lead === 2 ? this.token(b, 0) : ""
    r.fromLeaf = lead === 2
    r.account = lead > 0 ? this.token(b, lead - 1) : ""
    r.subject = this.token(b, lead)
    this.handler.sub(r)
    return next
  }

  /** RS- / LS-: `[<account>] <subject> [<queue>]`. */
  private unsubscribe(b: Buffer, s: number, e: number, lead: number, next: number): number {
    const n = this.split(b, s, e)
    if (n !== lead + 1 && n !== lead + 2) {
      return this.badArgs(`${this.opText()} needs ${this.leadNames(lead)}<subject> [<queue>]`, b, s, e)
    }
    const r = this.interest
    r.origin = ""
    r.fromLeaf = this.kind === "route" && this.op === Op.LS_UNSUB
    r.account = lead > 0 ? this.token(b, 0) : ""
    r.subject = this.token(b, lead)
    r.queue = n === lead + 2 ? this.token(b, lead + 1) : ""
    r.weight = 1
    this.handler.unsub(r)
    return next
  }

  /**
   * RMSG / LMSG / HMSG: `lead` tokens (origin, account, subject as the op has them), then
   * nothing, `<reply>`, `| <queue>...` or `+ <reply> [<queue>...]`, then `sizes` sizes
   * (`<#bytes>`, or `<#header bytes> <#total bytes>`). What comes before the sizes repeats
   * from message to message on a route (the same account, subject and reply): when it is
   * byte for byte the last one parsed for this op, its fields are taken again and only the
   * sizes are read.
   */
  private message(b: Buffer, s: number, e: number, lead: number, sizes: 1 | 2, chunk: Buffer, next: number): number {
    const cut = this.sizesAt(b, s, e, sizes)
    const m = this.rec
    if (cut >= 0 && this.op === this.lastOp && this.sameLine(b, s, cut)) {
      const sz = this.sz
      const total = parseSize(b, sz[0], sz[1])
      const hdr = sizes === 2 ? parseSize(b, sz[2], sz[3]) : -1
      if (!this.sizesOk(total, hdr, b, s, e)) return -1
      if (m.queues.length !== 0) m.queues.length = 0
      m.origin = this.lastOrigin
      m.account = this.lastAccount
      m.subject = this.lastSubject
      m.reply = this.lastReply
      m.hdrLen = sizes === 1 || (this.op === Op.LMSG && hdr === 0) ? -1 : hdr
      return this.payload(total, chunk, next)
    }
    const n = this.split(b, s, e)
    const middle = n - lead - sizes
    if (middle < 0) return this.badArgs(`${this.opText()} has too few arguments`, b, s, e)
    const argv = this.argv
    const total = parseSize(b, argv[2 * n - 2], argv[2 * n - 1])
    const hdr = sizes === 2 ? parseSize(b, argv[2 * n - 4], argv[2 * n - 3]) : -1
    if (total < 0 || (sizes === 2 && hdr < 0)) return this.badArgs(`${this.opText()} has a bad or missing size`, b, s, e)
    if (!this.sizesOk(total, hdr, b, s, e)) return -1

    // Writing an array's length costs a runtime call even when it does not change.
    if (m.queues.length !== 0) m.queues.length = 0
    m.reply = ""
    if (middle === 1) {
      const r = lead
      if (isMarker(b, argv[2 * r], argv[2 * r + 1], Ch.PLUS) || isMarker(b, argv[2 * r], argv[2 * r + 1], Ch.PIPE)) {
        return this.badArgs(`${this.opText()} has a reply or queue marker with nothing after it`, b, s, e)
      }
      m.reply = decode(b, argv[2 * r], argv[2 * r + 1])
    } else if (middle > 1) {
      const t = lead
      let q = t + 1
      if (isMarker(b, argv[2 * t], argv[2 * t + 1], Ch.PLUS)) {
        m.reply = decode(b, argv[2 * q], argv[2 * q + 1])
        q++
      } else if (!isMarker(b, argv[2 * t], argv[2 * t + 1], Ch.PIPE)) {
        return this.badArgs(`${this.opText()} needs '+' or '|' before a reply with queues`, b, s, e)
      }
      for (; q < lead + middle; q++) m.queues.push(this.token(b, q))
    }
    m.origin = lead === 3 ? this.token(b, 0) : ""
    m.account = lead >= 2 ? this.token(b, lead - 2) : ""
    m.subject = this.token(b, lead - 1)
    // A route's LMSG always has two sizes; a header size of 0 means no headers.
    m.hdrLen = sizes === 1 || (this.op === Op.LMSG && hdr === 0) ? -1 : hdr
    if (cut >= 0 && m.queues.length === 0) this.remember(b, s, cut)
    return this.payload(total, chunk, next)
  }

  /** The header and total sizes agree and are within max_payload; else the parser fails. */
  private sizesOk(total: number, hdr: number, b: Buffer, s: number, e: number): boolean {
    if (hdr > total) {
      this.fail("BadHeaderSize", `header size ${hdr} larger than total size ${total}`, b, s, e)
      return false
    }
    if (total > this.limits.maxPayload) {
      this.maxPayloadError(total)
      return false
    }
    return true
  }

  /**
   * Where what comes before a message's `sizes` size tokens ends in b[s, e) (its last
   * non-blank byte + 1), the sizes' bounds going to `sz` (the last one first); -1 when the
   * line does not end in that many blank-separated digit strings after something else.
   */
  private sizesAt(b: Buffer, s: number, e: number, sizes: 1 | 2): number {
    const sz = this.sz
    let j = e
    for (let k = 0; k < sizes; k++) {
      while (j > s && isBlank(b[j - 1])) j--
      const te = j
      while (j > s && b[j - 1] >= Ch.ZERO && b[j - 1] <= Ch.NINE) j--
      if (j === te || j === s || !isBlank(b[j - 1])) return -1
      sz[2 * k] = j
      sz[2 * k + 1] = te
    }
    while (j > s && isBlank(b[j - 1])) j--
    return j > s && j - s <= REPEAT_MAX ? j : -1
  }

  /** b[s, cut) is the line remembered by `remember`. */
  private sameLine(b: Buffer, s: number, cut: number): boolean {
    const n = cut - s
    if (n !== this.lastLen) return false
    const last = this.lastLine
    for (let j = 0; j < n; j++) if (b[s + j] !== last[j]) return false
    return true
  }

  /** The message just parsed (no queue groups) as what the next one with the same b[s, cut) repeats. */
  private remember(b: Buffer, s: number, cut: number): void {
    const m = this.rec
    if (this.lastLine === EMPTY) this.lastLine = Buffer.allocUnsafe(REPEAT_MAX)
    const last = this.lastLine
    const n = cut - s
    // (a loop: a native copy of so few bytes costs more)
    for (let j = 0; j < n; j++) last[j] = b[s + j]
    this.lastLen = n
    this.lastOp = this.op
    this.lastOrigin = m.origin
    this.lastAccount = m.account
    this.lastSubject = m.subject
    this.lastReply = m.reply
  }

  /**
   * A payload of `size` bytes starts at chunk[i]: delivered in place when it and its CRLF are
   * in the chunk, else collected with its CRLF into `pending` (a fresh buffer, never written
   * again once delivered). Returns the index after what it consumed, -1 when dead.
   */
  private payload(size: number, chunk: Buffer, i: number): number {
    const end = i + size
    if (end + 2 > chunk.length) {
      this.pending = Buffer.allocUnsafe(size + 2)
      this.filled = 0
      this.state = State.PAYLOAD
      return i
    }
    if (!crlfAt(chunk, end)) return this.noCrlf(chunk, end)
    this.deliver(chunk, i, end)
    return end + 2
  }

  private collect(chunk: Buffer, i: number): number {
    const buf = this.pending
    const n = Math.min(buf.length - this.filled, chunk.length - i)
    chunk.copy(buf, this.filled, i, i + n)
    this.filled += n
    if (this.filled < buf.length) return i + n
    const size = buf.length - 2
    if (!crlfAt(buf, size)) return this.noCrlf(buf, size)
    this.pending = EMPTY
    this.state = State.OP_START
    this.deliver(buf, 0, size)
    return i + n
  }

  private noCrlf(b: Buffer, at: number): number {
    this.fail("UnknownOp", "payload not followed by CRLF", b, at)
    return -1
  }

  private deliver(buf: Buffer, start: number, end: number): void {
    const m = this.rec
    m.buf = buf
    m.start = start
    m.end = end
    this.handler.msg(m)
    m.buf = EMPTY
  }

  private opText(): string {
    return String.fromCharCode(...KEYWORDS[this.op]).toUpperCase()
  }

  private leadNames(lead: number): string {
    if (lead === 0) return ""
    return lead === 1 ? "<account> " : "<origin> <account> "
  }

  private badArgs(what: string, b: Buffer, s: number, e: number): number {
    this.fail("BadArgs", what, b, skipBlanks(b, s, e), e)
    return -1
  }

  private maxPayloadError(size: number): number {
    const shown = size >= Number.MAX_SAFE_INTEGER ? "huge" : String(size)
    this.failWith({ kind: "MaxPayload", detail: `payload size ${shown} exceeds max_payload ${this.limits.maxPayload}` })
    return -1
  }

  private fail(kind: ParseErrorKind, what: string, b: Buffer, s: number, e: number = b.length): void {
    this.failWith({ kind, detail: `${what}: '${snippet(b, s, e)}'` })
  }

  private failWith(error: ParseError): void {
    this.stop()
    this.handler.protocolError(error)
  }
}

const doubled = (a: Int32Array): Int32Array => {
  const grown = new Int32Array(a.length * 2)
  grown.set(a)
  return grown
}

const crlfAt = (b: Buffer, i: number): boolean => b[i] === Ch.CR && b[i + 1] === Ch.LF

const trimEnd = (b: Buffer, s: number, e: number): number => {
  while (e > s && isBlank(b[e - 1])) e--
  return e
}

/** b[s, e) without one pair of surrounding single quotes. */
const unquote = (b: Buffer, s: number, e: number): string =>
  e - s >= 2 && b[s] === Ch.QUOTE && b[e - 1] === Ch.QUOTE ? decode(b, s + 1, e - 1) : decode(b, s, e)
