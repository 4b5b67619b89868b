// Encoders for what the server sends to NATS clients: MSG/HMSG into an OutBuf on the
// hot path, and the fixed protocol lines (INFO, PING, PONG, +OK, -ERR, status HMSGs).

import { INT_ROOM, putBytes, putInt, putUtf8, type OutBuf } from "../outbuf.js"
import type { ParseErrorKind } from "./parser.js"

const Ch = { SPACE: 32, CR: 13, LF: 10, H: 72, M: 77, S: 83, G: 71 } as const
const EMPTY = Buffer.alloc(0)

export const PING: Buffer = Buffer.from("PING\r\n")
export const PONG: Buffer = Buffer.from("PONG\r\n")
export const OK: Buffer = Buffer.from("+OK\r\n")

/**
 * `MSG <subject> <sid> [reply] <#bytes>\r\n<payload>\r\n`, or when hdrLen >= 0
 * `HMSG <subject> <sid> [reply] <#hdr> <#total>\r\n<headers+payload>\r\n`;
 * buf[start, end) is the payload including headers.
 */
export const writeMsg = (
  out: OutBuf,
  subject: string,
  sid: string,
  reply: string,
  hdrLen: number,
  buf: Buffer,
  start: number,
  end: number
): void => {
  const size = end - start
  const byRef = size >= BY_REFERENCE
  const b = out.reserve(headRoom(subject, sid, reply) + (byRef ? 0 : size))
  let p = out.cursor
  if (hdrLen < 0) {
    p = putMsgHead(b, p, subject, sid, reply)
  } else {
    b[p++] = Ch.H
    p = putMsgHead(b, p, subject, sid, reply)
    p = putInt(b, p, hdrLen)
    b[p++] = Ch.SPACE
  }
  p = putInt(b, p, size)
  b[p++] = Ch.CR
  b[p++] = Ch.LF
  if (byRef) {
    out.commit(p)
    out.writeRef(buf, start, end)
    out.writeCrlf()
    return
  }
  p = putBytes(b, p, buf, start, end)
  b[p++] = Ch.CR
  b[p++] = Ch.LF
  out.commit(p)
}

/**
 * Payloads at least this large are queued by reference instead of copied: above it a
 * memcpy costs more than the extra iovec of a vectored write.
 */
export const BY_REFERENCE = 8 * 1024

/** Upper bound on the bytes of an (H)MSG line around a payload. */
const headRoom = (subject: string, sid: string, reply: string): number =>
  3 * (subject.length + sid.length + reply.length) + 2 * INT_ROOM + 16

/** `MSG <subject> <sid> [reply] ` */
const putMsgHead = (b: Buffer, p: number, subject: string, sid: string, reply: string): number => {
  b[p] = Ch.M
  b[p + 1] = Ch.S
  b[p + 2] = Ch.G
  b[p + 3] = Ch.SPACE
  p = putUtf8(b, p + 4, subject)
  b[p++] = Ch.SPACE
  p = putUtf8(b, p, sid)
  b[p++] = Ch.SPACE
  if (reply !== "") {
    p = putUtf8(b, p, reply)
    b[p++] = Ch.SPACE
  }
  return p
}

/** `INFO {json}\r\n` */
export const encodeInfo = (info: object): Buffer => Buffer.from(`INFO ${JSON.stringify(info)}\r\n`, "utf8")

/** `-ERR '<text>'\r\n` */
export const writeErr = (out: OutBuf, text: string): void => {
  out.writeAscii("-ERR '")
  out.writeUtf8(text)
  out.writeAscii("'\r\n")
}

/**
 * A header block opening with a status line: `NATS/1.0 <code>[ <description>]\r\n`,
 * then `Name: value\r\n` per header, then the blank line.
 */
export const statusHeaderBlock = (
  code: number,
  description: string = "",
  headers: Iterable<readonly [string, string]> = []
): Buffer => {
  let text = description === "" ? `NATS/1.0 ${code}\r\n` : `NATS/1.0 ${code} ${description}\r\n`
  for (const [name, value] of headers) text += `${name}: ${value}\r\n`
  return Buffer.from(text + "\r\n", "utf8")
}

/** An HMSG carrying a header block (e.g. from statusHeaderBlock) and an optional payload. */
export const writeHeaderMsg = (
  out: OutBuf,
  subject: string,
  sid: string,
  reply: string,
  headerBlock: Buffer,
  payload: Buffer = EMPTY
): void => {
  const hdr = headerBlock.length
  const b = out.reserve(headRoom(subject, sid, reply) + hdr + payload.length)
  let p = out.cursor
  b[p++] = Ch.H
  p = putMsgHead(b, p, subject, sid, reply)
  p = putInt(b, p, hdr)
  b[p++] = Ch.SPACE
  p = putInt(b, p, hdr + payload.length)
  b[p++] = Ch.CR
  b[p++] = Ch.LF
  p = putBytes(b, p, headerBlock, 0, hdr)
  p = putBytes(b, p, payload, 0, payload.length)
  b[p++] = Ch.CR
  b[p++] = Ch.LF
  out.commit(p)
}

/** An HMSG with only a status header block, e.g. 408 Request Timeout, 100 Idle Heartbeat. */
export const writeStatusHmsg = (
  out: OutBuf,
  subject: string,
  sid: string,
  reply: string,
  code: number,
  description: string = "",
  headers: Iterable<readonly [string, string]> = []
): void => writeHeaderMsg(out, subject, sid, reply, statusHeaderBlock(code, description, headers))

const NO_RESPONDERS = statusHeaderBlock(503)

/** What nats-server sends a requester when nobody subscribes to the request subject. */
export const noRespondersHmsg = (out: OutBuf, subject: string, sid: string): void =>
  writeHeaderMsg(out, subject, sid, "", NO_RESPONDERS)

/** The text nats-server puts in `-ERR '...'` for each parse failure. */
export const protocolErrorText = (kind: ParseErrorKind): string => {
  switch (kind) {
    case "UnknownOp":
      return "Unknown Protocol Operation"
    case "MaxControlLine":
      return "Maximum Control Line Exceeded"
    case "MaxPayload":
      return "Maximum Payload Violation"
    case "BadArgs":
    case "BadHeaderSize":
      return "Parser Error"
  }
}
