// Reading the few JetStream headers a publish may carry (`Nats-Msg-Id`, the
// `Nats-Expected-*` family, `Nats-Rollup`, `Nats-TTL`) out of a NATS header block, and
// building the header blocks the API sends (direct get). Names match case-insensitively.
import type { PublishHeaders } from "../stream/publish.js"
import { parseTtl } from "../stream/ttl.js"

export const Hdr = {
  msgId: "nats-msg-id",
  expectedStream: "nats-expected-stream",
  expectedLastSeq: "nats-expected-last-sequence",
  expectedLastSubjSeq: "nats-expected-last-subject-sequence",
  expectedLastMsgId: "nats-expected-last-msg-id",
  rollup: "nats-rollup",
  ttl: "nats-ttl"
} as const

/** Every `Name: value` line of a header block (after the `NATS/1.0` status line), names lower-cased. */
export const parseHeaders = (buf: Uint8Array, start: number, end: number): Map<string, string> => {
  const out = new Map<string, string>()
  const text = Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString("latin1")
  const lines = text.split("\r\n")
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]
    const colon = line.indexOf(":")
    if (colon <= 0) continue
    const name = line.slice(0, colon).trim().toLowerCase()
    if (!out.has(name)) out.set(name, line.slice(colon + 1).trim())
  }
  return out
}

/** Quick check before parsing: does the block mention any `Nats-` header at all? */
export const mayHaveJsHeaders = (buf: Uint8Array, start: number, end: number): boolean =>
  Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString("latin1").toLowerCase().includes("nats-")

/** The JetStream headers of a publish's header block `buf[start, end)`; undefined when it names none. */
export const readPublishHeaders = (buf: Uint8Array, start: number, end: number): PublishHeaders | undefined => {
  if (!mayHaveJsHeaders(buf, start, end)) return undefined
  const h = parseHeaders(buf, start, end)
  return {
    msgId: h.get(Hdr.msgId),
    expectedStream: h.get(Hdr.expectedStream),
    expectedLastSeq: h.get(Hdr.expectedLastSeq),
    expectedLastSubjSeq: h.get(Hdr.expectedLastSubjSeq),
    expectedLastMsgId: h.get(Hdr.expectedLastMsgId),
    rollup: h.get(Hdr.rollup),
    ttl: utf8Value(h.get(Hdr.ttl))
  }
}

/** A value `parseHeaders` read as latin1, as the UTF-8 text it is (`µs` in a `Nats-TTL`). */
const utf8Value = (v: string | undefined): string | undefined =>
  v === undefined || !/[^\x00-\x7f]/.test(v) ? v : Buffer.from(v, "latin1").toString("utf8")

/**
 * The per-message TTL a stored message's header block `buf[start, end)` gives it, as the
 * publish path read it (`parseTtl`): seconds, TTL_NEVER, or 0 for none (or one not valid,
 * which the publish path never stores).
 */
export const ttlOfHeaders = (buf: Uint8Array, start: number, end: number): number => {
  if (!mayHaveJsHeaders(buf, start, end)) return 0
  const v = utf8Value(parseHeaders(buf, start, end).get(Hdr.ttl))
  return v === undefined ? 0 : parseTtl(v) ?? 0
}

/** A header block from a status line and pairs, appending an existing block's fields. */
export const buildHeaders = (
  status: string,
  pairs: ReadonlyArray<readonly [string, string]>,
  extra?: Uint8Array
): Buffer => {
  let s = status === "" ? "NATS/1.0\r\n" : `NATS/1.0 ${status}\r\n`
  for (const [k, v] of pairs) s += `${k}: ${v}\r\n`
  if (extra !== undefined && extra.length > 0) {
    const t = Buffer.from(extra).toString("latin1")
    const firstEnd = t.indexOf("\r\n")
    const body = firstEnd < 0 ? "" : t.slice(firstEnd + 2)
    s += body.endsWith("\r\n\r\n") ? body.slice(0, -2) : body
  }
  return Buffer.from(s + "\r\n", "latin1")
}
