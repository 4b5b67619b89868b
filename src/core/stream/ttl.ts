// Per-message TTL (JetStream ADR-43, nats-server 2.11): a message published with a
// `Nats-TTL` header, into a stream with `allow_msg_ttl`, is removed once its TTL has
// passed since it was stored, whatever max_age says; `never` keeps it from max_age too.
// `parseTtl` reads the header's value; `MessageTtls` is a stream's index of them: the
// ends, earliest first (an ExpiryQueue keyed by sequence, O(log n) per message), so the
// store expires only what ran out, in bounded batches, and the sequences that never expire.
import { ExpiryQueue } from "../expiry-queue.js"
import type { IndexEntry, StreamIndex } from "./stream-index.js"

/** The TTL of a message that never expires (`Nats-TTL: never`), not even by max_age. */
export const TTL_NEVER = -1

/** Messages whose TTL ran out removed per stream per run of the timer, at most: the rest at the next run. */
export const TTL_EXPIRIES_PER_TICK = 1000

const NS: Record<string, number> = { ns: 1, us: 1e3, "\u00b5s": 1e3, "\u03bcs": 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 }
const MAX_INT64 = 9_223_372_036_854_775_807
const MAX_INT64_N = 9_223_372_036_854_775_807n

/** Nanoseconds of a Go duration string (`1h30m`, `1.5s`, `-2m`, `0`); undefined when it is not one. */
export const parseGoDuration = (s: string): number | undefined => {
  let i = 0
  let sign = 1
  if (s[0] === "-" || s[0] === "+") {
    sign = s[0] === "-" ? -1 : 1
    i = 1
  }
  if (s.slice(i) === "0") return 0
  if (i === s.length) return undefined
  let total = 0
  while (i < s.length) {
    const num = /^([0-9]*)(?:\.([0-9]*))?/.exec(s.slice(i))!
    if (num[1] === "" && (num[2] === undefined || num[2] === "")) return undefined
    i += num[0].length
    const unit = /^[^0-9.]+/.exec(s.slice(i))?.[0]
    const scale = unit === undefined ? undefined : NS[unit]
    if (scale === undefined) return undefined
    i += unit!.length
    total += Number(`${num[1] === "" ? "0" : num[1]}.${num[2] ?? ""}0`) * scale
    if (total > MAX_INT64) return undefined
  }
  return sign * total
}

/**
 * A `Nats-TTL` value as nats-server reads it: `never` (TTL_NEVER), a Go duration or a
 * whole number of seconds, at least one second; whole seconds (a duration's fraction is
 * dropped). Undefined: not a valid TTL (the publish is refused).
 */
export const parseTtl = (value: string): number | undefined => {
  if (value.toLowerCase() === "never") return TTL_NEVER
  const ns = parseGoDuration(value)
  if (ns !== undefined) return ns < 1e9 ? undefined : Math.trunc(ns / 1e9)
  if (!/^[+-]?[0-9]+$/.test(value)) return undefined
  // a 64-bit integer, as nats-server parses it (a double cannot tell 2^63 from 2^63 - 1)
  const n = BigInt(value)
  return n < 1n || n > MAX_INT64_N ? undefined : Number(n)
}

const ALL: ReadonlyArray<string> = []

/** The TTLs of a stream's messages: when each ends, and which never do. */
export class MessageTtls {
  private readonly ends = new ExpiryQueue<number>()
  private readonly never = new Set<number>()
  /** Every live message below it never expires: where the search for the oldest one max_age may remove starts. */
  private agingFrom = 0

  /** Messages with a TTL (or `never`) known. */
  get size(): number {
    return this.ends.size + this.never.size
  }

  /** Message `seq`, stored at `ts` (ms), has `ttl` seconds to live (or TTL_NEVER); 0: none. */
  add(seq: number, ts: number, ttl: number): void {
    if (ttl === TTL_NEVER) this.never.add(seq)
    else if (ttl > 0) this.ends.set(seq, ts + ttl * 1000)
  }

  /** Message `seq` is gone (removed by anything). */
  forget(seq: number): void {
    if (!this.ends.delete(seq)) this.never.delete(seq)
  }

  /** When the next TTL ends (ms); undefined when none waits. */
  nextEnd(): number | undefined {
    return this.ends.next()
  }

  /**
   * Removes from `index` the messages whose TTL ended by `now`, at most TTL_EXPIRIES_PER_TICK
   * (appended to `out`); true when none is left due.
   */
  expire<L>(index: StreamIndex<L>, now: number, out: Array<IndexEntry<L>>): boolean {
    if (this.ends.size === 0) return true
    const due: Array<number> = []
    const all = this.ends.takeDue(now, TTL_EXPIRIES_PER_TICK, due)
    for (const seq of due) {
      const e = index.remove(seq)
      if (e !== undefined) out.push(e)
    }
    return all
  }

  /** The oldest live message that may expire by max_age (one whose TTL is not `never`). */
  firstAging<L>(index: StreamIndex<L>): IndexEntry<L> | undefined {
    if (this.never.size === 0) return index.firstEntry()
    let e = index.nextMatching(ALL, Math.max(this.agingFrom, index.first))
    while (e !== undefined && this.never.has(e.seq)) e = index.nextMatching(ALL, e.seq + 1)
    // Sequences are never reused and a message's TTL never changes: what was skipped stays skipped.
    this.agingFrom = e === undefined ? index.last + 1 : e.seq
    return e
  }
}
