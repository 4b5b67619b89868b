// The ack reply subject stamped on every delivered message, and the ack payloads
// clients send back to it. v1: `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`;
// v2 adds `<domain>.<account hash>` after `$JS.ACK` and a trailing random token.
import { NS_PER_MS } from "./config.js"

export interface AckReplyFields {
  readonly stream: string
  readonly consumer: string
  readonly deliveryCount: number
  readonly streamSeq: number
  readonly consumerSeq: number
  readonly timestampMs: number
  readonly pending: number
  /** v2 only: `_` when there is no domain. */
  readonly domain?: string
  readonly accountHash?: string
  readonly token?: string
}

export interface ParsedAckReply extends AckReplyFields {
  /** Delivery time in ns since the epoch as sent (exceeds 2^53, so kept as text). */
  readonly timestampNs: string
}

const nsText = (ms: number): string => (ms <= 0 ? "0" : `${Math.floor(ms)}000000`)

export const ackReplySubject = (f: AckReplyFields): string => {
  const tail = `${f.stream}.${f.consumer}.${f.deliveryCount}.${f.streamSeq}.${f.consumerSeq}.${nsText(f.timestampMs)}.${f.pending}`
  if (f.domain === undefined && f.accountHash === undefined) return `$JS.ACK.${tail}`
  const v2 = `$JS.ACK.${f.domain || "_"}.${f.accountHash ?? "_"}.${tail}`
  return f.token ? `${v2}.${f.token}` : v2
}

const natural = (s: string): number | undefined => (/^\d+$/.test(s) ? Number(s) : undefined)

/** Undefined when `subject` is not an ack reply. */
export const parseAckReply = (subject: string): ParsedAckReply | undefined => {
  if (!subject.startsWith("$JS.ACK.")) return undefined
  const t = subject.split(".")
  let base: number
  let domain: string | undefined
  let accountHash: string | undefined
  let token: string | undefined
  if (t.length === 9) {
    base = 2
  } else if (t.length >= 11) {
    base = 4
    domain = t[2] === "_" ? "" : t[2]
    accountHash = t[3]
    token = t.length >= 12 ? t[11] : undefined
  } else {
    return undefined
  }
  const nums = t.slice(base + 2, base + 7).map(natural)
  if (nums.some((n) => n === undefined) || t[base] === "" || t[base + 1] === "") return undefined
  const tsNs = t[base + 5]
  return {
    stream: t[base],
    consumer: t[base + 1],
    deliveryCount: nums[0]!,
    streamSeq: nums[1]!,
    consumerSeq: nums[2]!,
    timestampNs: tsNs,
    timestampMs: tsNs.length > 6 ? Number(tsNs.slice(0, -6)) : 0,
    pending: nums[4]!,
    ...(domain !== undefined ? { domain, accountHash, ...(token !== undefined ? { token } : {}) } : {})
  }
}

/** A pull request body (`CONSUMER.MSG.NEXT` or `+NXT {…}`), durations in ns. */
export interface PullRequest {
  readonly batch?: number
  readonly expires?: number
  readonly no_wait?: boolean
  readonly max_bytes?: number
  readonly idle_heartbeat?: number
}

export type AckKind =
  | { readonly kind: "ack" }
  | { readonly kind: "nak"; readonly delayMs?: number }
  | { readonly kind: "progress" }
  | { readonly kind: "term"; readonly reason?: string }
  | { readonly kind: "next"; readonly request: PullRequest }
  | { readonly kind: "unknown" }

const toText = (p: string | Uint8Array): string => {
  if (typeof p === "string") return p
  let s = ""
  for (let i = 0; i < p.length; i++) s += String.fromCharCode(p[i])
  return s
}

const parseJson = (s: string): unknown => {
  try {
    return JSON.parse(s)
  } catch {
    return undefined
  }
}

/** Parses `+ACK`, `-NAK [{"delay":ns}|ns]`, `+WPI`, `+TERM [reason]`, `+NXT [n|{…}]`; empty is `+ACK`. */
export const parseAckPayload = (payload: string | Uint8Array): AckKind => {
  const text = toText(payload).trim()
  if (text === "" || text === "+ACK") return { kind: "ack" }
  const sp = text.indexOf(" ")
  const verb = sp < 0 ? text : text.slice(0, sp)
  const arg = sp < 0 ? "" : text.slice(sp + 1).trim()
  switch (verb) {
    case "+ACK":
      return { kind: "ack" }
    case "+WPI":
      return { kind: "progress" }
    case "+TERM":
      return arg === "" ? { kind: "term" } : { kind: "term", reason: arg }
    case "-NAK": {
      if (arg === "") return { kind: "nak" }
      const n = natural(arg)
      const j = n === undefined ? (parseJson(arg) as { delay?: unknown } | undefined) : undefined
      const ns = n ?? (typeof j?.delay === "number" ? j.delay : undefined)
      return ns !== undefined && ns > 0 ? { kind: "nak", delayMs: ns / NS_PER_MS } : { kind: "nak" }
    }
    case "+NXT": {
      if (arg === "") return { kind: "next", request: { batch: 1 } }
      const n = natural(arg)
      if (n !== undefined) return { kind: "next", request: { batch: n } }
      const j = parseJson(arg)
      return typeof j === "object" && j !== null ? { kind: "next", request: j as PullRequest } : { kind: "next", request: { batch: 1 } }
    }
    default:
      return { kind: "unknown" }
  }
}
