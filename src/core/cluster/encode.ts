// Encoders for what this server sends a cluster peer: messages (RMSG/HMSG/LMSG) into an
// OutBuf on the hot path, interest (RS+/RS-/LS+/LS-), and the handshake lines. The forms
// are the ones nats-server 2.9.10 sends and accepts (docs/cluster-protocol.md).

import { BY_REFERENCE } from "../nats/encode.js"
import { INT_ROOM, putBytes, putInt, putUtf8, type OutBuf } from "../outbuf.js"
import type { PeerMsg } from "./parser.js"

export { encodeInfo, PING, PONG } from "../nats/encode.js"

const Ch = { SPACE: 32, CR: 13, LF: 10, PLUS: 43, PIPE: 124 } as const

const RMSG = Buffer.from("RMSG ")
const HMSG = Buffer.from("HMSG ")
const LMSG = Buffer.from("LMSG ")

/**
 * A message to a route: `RMSG <account> <subject> [reply] <#bytes>`, `HMSG <account>
 * <subject> [reply] <#hdr> <#total>` with headers, or, for a message that came in from a
 * leaf node's cluster (m.origin set), `LMSG <origin> <account> <subject> [reply] <#hdr>
 * <#total>` (always two sizes, 0 header bytes without headers). With queue groups the
 * reply part is `| <queue>...` or `+ <reply> <queue>...`.
 */
export const writeRouteMsg = (out: OutBuf, m: PeerMsg): void => {
  const b = out.reserve(headRoom(m) + inlineSize(m))
  let p = out.cursor
  if (m.origin !== "") {
    p = putWord(b, putWord(b, putHead(b, p, LMSG), m.origin), m.account)
    p = putReplyPart(b, putUtf8(b, p, m.subject), m)
    p = putInt(b, p, m.hdrLen < 0 ? 0 : m.hdrLen)
    b[p++] = Ch.SPACE
  } else {
    p = putWord(b, putHead(b, p, m.hdrLen < 0 ? RMSG : HMSG), m.account)
    p = putReplyPart(b, putUtf8(b, p, m.subject), m)
    if (m.hdrLen >= 0) p = putSpace(b, putInt(b, p, m.hdrLen))
  }
  finish(out, b, p, m)
}

/**
 * A message to a leaf connection (its account is the connection's): `LMSG <subject> [reply]
 * <#bytes>`, or `HMSG <subject> [reply] <#hdr> <#total>` with headers; queue groups as on routes.
 */
export const writeLeafMsg = (out: OutBuf, m: PeerMsg): void => {
  const b = out.reserve(headRoom(m) + inlineSize(m))
  let p = putHead(b, out.cursor, m.hdrLen < 0 ? LMSG : HMSG)
  p = putReplyPart(b, putUtf8(b, p, m.subject), m)
  if (m.hdrLen >= 0) p = putSpace(b, putInt(b, p, m.hdrLen))
  finish(out, b, p, m)
}

/** `<#bytes>\r\n<payload>\r\n`, the payload copied, or queued by reference when large. */
const finish = (out: OutBuf, b: Buffer, p: number, m: PeerMsg): void => {
  p = putInt(b, p, m.end - m.start)
  b[p++] = Ch.CR
  b[p++] = Ch.LF
  if (inlineSize(m) === 0) {
    out.commit(p)
    out.writeRef(m.buf, m.start, m.end)
    out.writeCrlf()
    return
  }
  p = putBytes(b, p, m.buf, m.start, m.end)
  b[p++] = Ch.CR
  b[p++] = Ch.LF
  out.commit(p)
}

/** Payload bytes copied into the slab: all of a small payload (+ CRLF), none of a large one. */
const inlineSize = (m: PeerMsg): number => {
  const size = m.end - m.start
  return size >= BY_REFERENCE ? 0 : size + 2
}

/** Upper bound on the bytes of a message's control line. */
const headRoom = (m: PeerMsg): number => {
  let n = m.origin.length + m.account.length + m.subject.length + m.reply.length
  for (let i = 0; i < m.queues.length; i++) n += m.queues[i].length + 1
  return 3 * n + 2 * INT_ROOM + 24
}

/** A few fixed bytes: a loop (a native Buffer.copy per message costs more than the copy itself). */
const putHead = (b: Buffer, p: number, head: Buffer): number => {
  for (let i = 0; i < head.length; i++) b[p++] = head[i]
  return p
}

const putSpace = (b: Buffer, p: number): number => {
  b[p] = Ch.SPACE
  return p + 1
}

/** `<word> ` */
const putWord = (b: Buffer, p: number, word: string): number => putSpace(b, putUtf8(b, p, word))

/** ` [reply] ` without queues; ` | q1 q2 ` or ` + reply q1 q2 ` with them. */
const putReplyPart = (b: Buffer, p: number, m: PeerMsg): number => {
  b[p++] = Ch.SPACE
  const queues = m.queues
  if (queues.length === 0) return m.reply === "" ? p : putWord(b, p, m.reply)
  if (m.reply === "") {
    b[p++] = Ch.PIPE
    b[p++] = Ch.SPACE
  } else {
    b[p++] = Ch.PLUS
    b[p++] = Ch.SPACE
    p = putWord(b, p, m.reply)
  }
  for (let i = 0; i < queues.length; i++) p = putWord(b, p, queues[i])
  return p
}

/**
 * Interest to a route: `RS+ <account> <subject> [<queue> <weight>]`, or for interest behind a
 * leaf node's cluster `LS+ <origin> <account> <subject> [<queue> <weight>]`. The weight of a
 * queue group is absolute (how many members), sent again whenever it changes.
 */
export const writeRouteSub = (
  out: OutBuf,
  account: string,
  subject: string,
  queue: string = "",
  weight: number = 1,
  origin: string = ""
): void => {
  if (origin === "") out.writeAscii("RS+ ")
  else {
    out.writeAscii("LS+ ")
    out.writeUtf8(origin)
    out.writeByte(Ch.SPACE)
  }
  out.writeUtf8(account)
  out.writeByte(Ch.SPACE)
  writeSubTail(out, subject, queue, weight)
}

/**
 * Interest withdrawn on a route: `RS- <account> <subject> [<queue>]`, or `LS- <account>
 * <subject> [<queue>]` for interest that was announced with LS+ (nats-server 2.9.10 names no
 * origin in LS- and refuses one).
 */
export const writeRouteUnsub = (out: OutBuf, account: string, subject: string, queue: string = "", fromLeaf = false): void => {
  out.writeAscii(fromLeaf ? "LS- " : "RS- ")
  out.writeUtf8(account)
  out.writeByte(Ch.SPACE)
  writeUnsubTail(out, subject, queue)
}

/** Interest to a leaf connection: `LS+ <subject> [<queue> <weight>]`. */
export const writeLeafSub = (out: OutBuf, subject: string, queue: string = "", weight: number = 1): void => {
  out.writeAscii("LS+ ")
  writeSubTail(out, subject, queue, weight)
}

/** `LS- <subject> [<queue>]` */
export const writeLeafUnsub = (out: OutBuf, subject: string, queue: string = ""): void => {
  out.writeAscii("LS- ")
  writeUnsubTail(out, subject, queue)
}

const writeSubTail = (out: OutBuf, subject: string, queue: string, weight: number): void => {
  out.writeUtf8(subject)
  if (queue !== "") {
    out.writeByte(Ch.SPACE)
    out.writeUtf8(queue)
    out.writeByte(Ch.SPACE)
    out.writeInt(weight)
  }
  out.writeCrlf()
}

const writeUnsubTail = (out: OutBuf, subject: string, queue: string): void => {
  out.writeUtf8(subject)
  if (queue !== "") {
    out.writeByte(Ch.SPACE)
    out.writeUtf8(queue)
  }
  out.writeCrlf()
}

/** `CONNECT {json}\r\n` */
export const encodeConnect = (connect: object): Buffer => Buffer.from(`CONNECT ${JSON.stringify(connect)}\r\n`, "utf8")
