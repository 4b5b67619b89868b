// The NATS client protocol as the load generator needs it, straight on bytes:
// pre-encoded publish batches and a receive-side reader that counts MSG/HMSG frames
// and skips their payloads by the declared size, without allocating per message.
// Written from the protocol description (INFO/CONNECT/PUB/SUB/MSG/PING/PONG), not
// from any client library.

const CR = 13
const LF = 10
const SPACE = 32

export const PING = Buffer.from("PING\r\n")
export const PONG = Buffer.from("PONG\r\n")

const connectLines = new Map<string, Buffer>()

/** CONNECT line (cached per name): no echo of our own messages, no +OK acks, headers allowed. */
export const connectLine = (name: string): Buffer => {
  let b = connectLines.get(name)
  if (b === undefined) {
    b = encodeConnect(name)
    connectLines.set(name, b)
  }
  return b
}

const encodeConnect = (name: string): Buffer =>
  Buffer.from(
    `CONNECT ${JSON.stringify({
      verbose: false,
      pedantic: false,
      tls_required: false,
      name,
      lang: "switchyard-bench",
      version: "0.1.0",
      protocol: 1,
      echo: false,
      headers: true,
      no_responders: true
    })}\r\n`
  )

/** Payload of `size` bytes (printable, deterministic). */
export const payload = (size: number): Buffer => {
  const b = Buffer.allocUnsafe(size)
  for (let i = 0; i < size; i++) b[i] = 97 + (i % 26)
  return b
}

/** One encoded `PUB subject [reply] size\r\n<payload>\r\n`. */
export const encodePub = (subject: string, reply: string | undefined, body: Buffer): Buffer => {
  const head = Buffer.from(
    reply === undefined ? `PUB ${subject} ${body.length}\r\n` : `PUB ${subject} ${reply} ${body.length}\r\n`
  )
  return Buffer.concat([head, body, Buffer.from("\r\n")])
}

export interface PubBatch {
  /** `perBatch` copies of the message followed by one PING. */
  readonly full: Buffer
  /** Bytes of one encoded message. */
  readonly msgLen: number
  readonly perBatch: number
  /** The first n messages of the batch followed by a PING (for the tail of a run). */
  readonly partial: (n: number) => Buffer
}

/**
 * Many identical PUBs in one buffer with a PING at the end, written again and again.
 * The PING's PONG tells the publisher the server has consumed the whole batch.
 */
export const pubBatch = (msg: Buffer, targetBytes: number, minMsgs = 4): PubBatch => {
  const perBatch = Math.max(minMsgs, Math.floor(targetBytes / msg.length))
  const full = Buffer.allocUnsafe(perBatch * msg.length + PING.length)
  for (let i = 0; i < perBatch; i++) msg.copy(full, i * msg.length)
  PING.copy(full, perBatch * msg.length)
  return {
    full,
    msgLen: msg.length,
    perBatch,
    partial: (n) => Buffer.concat([full.subarray(0, n * msg.length), PING])
  }
}

export interface Captured {
  /** The control line without CRLF, e.g. `MSG subj 1 _INBOX.x 16`. */
  readonly line: string
  readonly payload: Buffer
}

/**
 * Incremental reader of server-to-client bytes. In counting mode (the default) a MSG
 * costs a byte scan to the end of its control line, a backwards parse of the size and
 * a jump over the payload; nothing is allocated. Control lines split across chunks
 * are the only thing copied. With `capture` set, each message's line and payload are
 * handed over (used by the request-reply responder, where latency, not throughput,
 * matters).
 */
export class NatsReader {
  /** MSG + HMSG frames seen. */
  msgs = 0
  /** Of those, HMSG frames (JetStream status messages arrive as HMSG). */
  hmsgs = 0
  /** Payload bytes (declared sizes) seen. */
  bytes = 0
  pongs = 0
  pings = 0
  info: string | undefined
  readonly errors: Array<string> = []

  /** Called on every PONG. */
  onPong: (() => void) | undefined
  /** Called on every server PING; the default owner answers with PONG. */
  onPing: (() => void) | undefined
  /** Called on INFO. */
  onInfo: ((info: string) => void) | undefined
  /** Called after each counted message (no arguments: nothing allocated). */
  onMsg: (() => void) | undefined
  /** Capture mode: full line and payload of each message. */
  capture: ((m: Captured) => void) | undefined

  private skip = 0
  private carry: Buffer | undefined
  // capture-mode state for a payload spanning chunks
  private capLine = ""
  private capNeed = 0
  private capParts: Array<Buffer> = []

  feed(b: Buffer): void {
    const len = b.length
    let pos = 0
    if (this.capNeed > 0) {
      pos = this.continueCapture(b)
      if (pos >= len) return
    } else if (this.skip > 0) {
      if (this.skip >= len) {
        this.skip -= len
        return
      }
      pos = this.skip
      this.skip = 0
    }
    if (this.carry !== undefined) {
      let nl = pos
      while (nl < len && b[nl] !== LF) nl++
      if (nl === len) {
        this.carry = Buffer.concat([this.carry, b.subarray(pos)])
        return
      }
      const line = Buffer.concat([this.carry, b.subarray(pos, nl + 1)])
      this.carry = undefined
      const after = this.line(line, 0, line.length - 1)
      // after is relative to `line`; payload bytes beyond it continue in b
      const over = after - line.length
      pos = nl + 1
      if (this.capNeed > 0) {
        pos = this.continueCapture(b, pos)
      } else if (over > 0) {
        pos += over
      }
      if (pos > len) {
        this.skip = pos - len
        return
      }
    }
    while (pos < len) {
      let nl = pos
      while (nl < len && b[nl] !== LF) nl++
      if (nl === len) {
        this.carry = Buffer.from(b.subarray(pos))
        return
      }
      const c0 = b[pos]
      if ((c0 === 77 /* M */ || c0 === 72) /* H */ && this.capture === undefined) {
        // MSG <subject> <sid> [reply] <size>  |  HMSG ... <hdr size> <total size>
        let e = nl - 1
        if (b[e] !== CR) e = nl
        let size = 0
        let mul = 1
        let i = e - 1
        while (i > pos && b[i] !== SPACE) {
          size += (b[i]! - 48) * mul
          mul *= 10
          i--
        }
        this.msgs++
        if (c0 === 72) this.hmsgs++
        this.bytes += size
        if (this.onMsg !== undefined) this.onMsg()
        pos = nl + 1 + size + 2
        if (pos > len) {
          this.skip = pos - len
          return
        }
      } else {
        const after = this.line(b, pos, nl)
        pos = after
        if (this.capNeed > 0) {
          pos = this.continueCapture(b, pos)
          if (pos >= len) return
        } else if (pos > len) {
          this.skip = pos - len
          return
        }
      }
    }
  }

  /** Handle one control line b[s..nl]; returns where parsing continues. */
  private line(b: Buffer, s: number, nl: number): number {
    let e = nl
    if (e > s && b[e - 1] === CR) e--
    const c0 = b[s]
    if (c0 === 77 || c0 === 72) {
      let size = 0
      let mul = 1
      let i = e - 1
      while (i > s && b[i] !== SPACE) {
        size += (b[i]! - 48) * mul
        mul *= 10
        i--
      }
      this.msgs++
      if (c0 === 72) this.hmsgs++
      this.bytes += size
      if (this.capture !== undefined) {
        this.capLine = b.toString("latin1", s, e)
        this.capNeed = size + 2
        this.capParts = []
        return nl + 1
      }
      if (this.onMsg !== undefined) this.onMsg()
      return nl + 1 + size + 2
    }
    if (c0 === 80 /* P */) {
      if (b[s + 1] === 73 /* I */) {
        this.pings++
        if (this.onPing !== undefined) this.onPing()
      } else {
        this.pongs++
        if (this.onPong !== undefined) this.onPong()
      }
    } else if (c0 === 73 /* I */) {
      this.info = b.toString("utf8", s + 5, e)
      if (this.onInfo !== undefined) this.onInfo(this.info)
    } else if (c0 === 45 /* - */) {
      this.errors.push(b.toString("utf8", s, e))
    }
    // +OK and anything else: ignored
    return nl + 1
  }

  /** Collect capture-mode payload bytes from b starting at `from`; returns the new position. */
  private continueCapture(b: Buffer, from = 0): number {
    const avail = b.length - from
    if (avail <= 0) return from
    const take = Math.min(avail, this.capNeed)
    this.capParts.push(b.subarray(from, from + take))
    this.capNeed -= take
    if (this.capNeed === 0) {
      const all = this.capParts.length === 1 ? this.capParts[0]! : Buffer.concat(this.capParts)
      this.capParts = []
      const body = Buffer.from(all.subarray(0, all.length - 2))
      if (this.onMsg !== undefined) this.onMsg()
      this.capture!({ line: this.capLine, payload: body })
    }
    return from + take
  }
}
