// Stream limits as decisions over a StreamIndex: whether a new message is
// admitted (discard new), which messages go when one is added or the config
// changes (discard old, per-subject), which expire (max_age and per-message TTLs),
// and what a purge removes. Both stores call these, so memory and file streams cannot disagree.
import { limited, type StoreConfig } from "./config.js"
import { isAllFilter, type IndexEntry, type StreamIndex } from "./stream-index.js"
import type { MessageTtls } from "./ttl.js"

export type Rejection = "MaxMsgSize" | "MaxMsgs" | "MaxBytes" | "MaxMsgsPerSubject"

/**
 * Would storing a message of `size` counted bytes (`contentLen` = headers +
 * payload) break a limit that rejects rather than discards? When the subject is
 * at its own limit and that limit discards, its oldest message makes room, so
 * the stream-wide checks count that message as gone (nats-server does the same).
 */
export const admit = <L>(
  cfg: StoreConfig,
  index: StreamIndex<L>,
  subject: string,
  size: number,
  contentLen: number
): Rejection | undefined => {
  if (limited(cfg.max_msg_size) && contentLen > cfg.max_msg_size) return "MaxMsgSize"
  if (cfg.discard !== "new") return undefined
  let freedMsgs = 0
  let freedBytes = 0
  if (limited(cfg.max_msgs_per_subject)) {
    const list = index.subject(subject)
    if (list !== undefined && list.count >= cfg.max_msgs_per_subject) {
      if (cfg.discard_new_per_subject) return "MaxMsgsPerSubject"
      freedMsgs = list.count - cfg.max_msgs_per_subject + 1
      for (const seq of list.below(undefined).slice(0, freedMsgs)) freedBytes += index.get(seq)?.size ?? 0
    }
  }
  if (limited(cfg.max_msgs) && index.count - freedMsgs + 1 > cfg.max_msgs) return "MaxMsgs"
  if (limited(cfg.max_bytes) && index.bytes - freedBytes + size > cfg.max_bytes) return "MaxBytes"
  return undefined
}

/** Trim `subject` to `max_msgs_per_subject`, oldest first. */
const trimSubject = <L>(cfg: StoreConfig, index: StreamIndex<L>, subject: string, out: IndexEntry<L>[]): void => {
  if (!limited(cfg.max_msgs_per_subject)) return
  const list = index.subject(subject)
  if (list === undefined) return
  while (list.count > cfg.max_msgs_per_subject) {
    const e = index.remove(list.first!)
    if (e === undefined) break
    out.push(e)
  }
}

/** Under `discard: "old"`, drop the oldest messages until max_msgs and max_bytes hold. */
const trimStream = <L>(cfg: StoreConfig, index: StreamIndex<L>, out: IndexEntry<L>[]): void => {
  if (cfg.discard !== "old") return
  while (index.count > 0 && limited(cfg.max_msgs) && index.count > cfg.max_msgs) out.push(index.remove(index.first)!)
  while (index.count > 0 && limited(cfg.max_bytes) && index.bytes > cfg.max_bytes) out.push(index.remove(index.first)!)
}

/** After adding a message on `subject`: what the limits discard (appended to `out`). */
export const enforceOnStore = <L>(cfg: StoreConfig, index: StreamIndex<L>, subject: string, out: IndexEntry<L>[]): void => {
  trimSubject(cfg, index, subject, out)
  trimStream(cfg, index, out)
}

/** After a config change: every limit over the whole stream. */
export const enforceAll = <L>(cfg: StoreConfig, index: StreamIndex<L>): IndexEntry<L>[] => {
  const out: IndexEntry<L>[] = []
  if (limited(cfg.max_msgs_per_subject)) {
    const over: string[] = []
    for (const [subject, list] of index.subjectsMatching(">")) {
      if (list.count > cfg.max_msgs_per_subject) over.push(subject)
    }
    for (const subject of over) trimSubject(cfg, index, subject, out)
  }
  trimStream(cfg, index, out)
  return out
}

/**
 * What ran out at `nowMs`: messages older than max_age, oldest first, stopping at the
 * first that is not (timestamps are taken to grow with sequence, as they do when the
 * server stamps them), skipping those whose TTL is `never`; then those whose own TTL
 * ended (a bounded batch: `nextExpiry` says when to come back for the rest).
 */
export const expire = <L>(cfg: StoreConfig, index: StreamIndex<L>, nowMs: number, ttls?: MessageTtls): IndexEntry<L>[] => {
  const out: IndexEntry<L>[] = []
  if (limited(cfg.max_age_ms)) {
    for (;;) {
      const e = ttls === undefined ? index.firstEntry() : ttls.firstAging(index)
      if (e === undefined || nowMs - e.ts < cfg.max_age_ms) break
      out.push(index.remove(e.seq)!)
    }
  }
  ttls?.expire(index, nowMs, out)
  return out
}

/** When `expire` next has work: the oldest message's time plus max_age, or the next TTL's end if sooner. */
export const nextExpiry = <L>(cfg: StoreConfig, index: StreamIndex<L>, ttls?: MessageTtls): number | undefined => {
  const ttlEnd = ttls?.nextEnd()
  if (!limited(cfg.max_age_ms)) return ttlEnd
  const e = ttls === undefined ? index.firstEntry() : ttls.firstAging(index)
  const ageEnd = e === undefined ? undefined : e.ts + cfg.max_age_ms
  return ageEnd === undefined ? ttlEnd : ttlEnd === undefined ? ageEnd : Math.min(ageEnd, ttlEnd)
}

export interface PurgeOptions {
  /** Only messages whose subject matches this filter. */
  readonly subject?: string
  /** Only messages below this sequence. */
  readonly seq?: number
  /** Leave the newest `keep` (matching) messages. Not together with `seq`. */
  readonly keep?: number
}

/**
 * Remove what a purge asks for; "BadArgument" when `seq` and `keep` are both set.
 * Without a subject, `seq` moves the floor (beyond `last` too, so the next message
 * takes `seq`), and a full purge leaves first = last + 1.
 */
export const purge = <L>(index: StreamIndex<L>, opts: PurgeOptions = {}): IndexEntry<L>[] | "BadArgument" => {
  const seq = opts.seq ?? 0
  const keep = opts.keep ?? 0
  if (seq > 0 && keep > 0) return "BadArgument"
  const out: IndexEntry<L>[] = []
  if (opts.subject === undefined || isAllFilter(opts.subject)) {
    if (seq > 0) index.setFloor(seq, out)
    else if (keep > 0) {
      let n = index.count - keep
      while (n-- > 0) out.push(index.remove(index.first)!)
    } else index.setFloor(index.last + 1, out)
    return out
  }
  const seqs: number[] = []
  for (const [, list] of index.subjectsMatching(opts.subject)) {
    for (const s of list.below(seq > 0 ? seq : undefined)) seqs.push(s)
  }
  seqs.sort((a, b) => a - b)
  const n = keep > 0 ? seqs.length - keep : seqs.length
  for (let i = 0; i < n; i++) out.push(index.remove(seqs[i])!)
  return out
}
