// /subsz: sublist statistics summed over accounts (or one account), and the
// subscription list, paged and filtered by a subject pattern (`subject`: any
// overlap) or a publish subject (`test`: the subscriptions it would reach).
import { Either } from "effect"
import type { ErrorBody, QueryOf, SubDetail, SublistStats, Subsz } from "../../schema/monitor.js"
import { SubszParams } from "../../schema/monitor.js"
import { DefaultListSize } from "./connz.js"
import { formatTimestamp } from "./format.js"
import type { AccountSnapshot, ConnSnapshot, SublistSnapshot } from "./source.js"
import { isValidLiteralSubject, isValidSubject, matchLiteral, subjectsCollide } from "./subject.js"

/** nats-server's SublistStats from raw counters (cache_hit_rate is a ratio 0..1). */
export const sublistStats = (parts: ReadonlyArray<SublistSnapshot>): SublistStats => {
  let subs = 0, cache = 0, inserts = 0, removes = 0, matches = 0, hits = 0, maxFanout = 0, totalFanout = 0
  for (const p of parts) {
    subs += p.subscriptions
    cache += p.cacheEntries
    inserts += p.inserts
    removes += p.removes
    matches += p.matches
    hits += p.cacheHits
    maxFanout = Math.max(maxFanout, p.maxFanout)
    totalFanout += p.totalFanout
  }
  return {
    num_subscriptions: subs,
    num_cache: cache,
    num_inserts: inserts,
    num_removes: removes,
    num_matches: matches,
    cache_hit_rate: matches > 0 ? hits / matches : 0,
    max_fanout: maxFanout,
    avg_fanout: cache > 0 ? totalFanout / cache : 0
  }
}

export interface SubszOptions {
  readonly subs: boolean
  readonly offset: number
  readonly limit: number
  readonly acc: string | undefined
  readonly subject: string | undefined
  readonly test: string | undefined
}

export const subszOptions = (q: QueryOf<typeof SubszParams>): Either.Either<SubszOptions, ErrorBody> => {
  if (q.test !== undefined && !isValidLiteralSubject(q.test)) {
    return Either.left({
      error: `invalid test subject, must be valid publish subject: ${q.test.slice(0, 200)}`,
      parameter: "test",
      value: q.test.slice(0, 200),
      expected: "a subject without wildcards, e.g. orders.eu.1"
    })
  }
  if (q.subject !== undefined && !isValidSubject(q.subject)) {
    return Either.left({
      error: `invalid subject filter: ${q.subject.slice(0, 200)}`,
      parameter: "subject",
      value: q.subject.slice(0, 200),
      expected: "a subject, wildcards allowed, e.g. orders.*.>"
    })
  }
  return Either.right({
    subs: q.subs ?? false,
    offset: Math.max(0, q.offset ?? 0),
    limit: q.limit === undefined || q.limit <= 0 ? DefaultListSize : q.limit,
    acc: q.acc,
    subject: q.subject,
    test: q.test
  })
}

/** Every client subscription the filters select, by connection id then subscription order. */
export const selectSubscriptions = (conns: ReadonlyArray<ConnSnapshot>, o: SubszOptions): Array<SubDetail> => {
  const out: Array<SubDetail> = []
  const ordered = [...conns].sort((a, b) => a.cid - b.cid)
  for (const c of ordered) {
    if (o.acc !== undefined && c.account !== o.acc) continue
    for (const s of c.subs) {
      if (o.test !== undefined && !matchLiteral(o.test, s.subject)) continue
      if (o.subject !== undefined && !subjectsCollide(o.subject, s.subject)) continue
      out.push({
        account: c.account,
        subject: s.subject,
        ...(s.queue ? { qgroup: s.queue } : {}),
        sid: s.sid,
        msgs: s.msgs,
        ...(s.max > 0 ? { max: s.max } : {}),
        cid: c.cid
      })
    }
  }
  return out
}

export const buildSubsz = (
  serverId: string,
  now: number,
  accounts: ReadonlyArray<AccountSnapshot>,
  conns: ReadonlyArray<ConnSnapshot>,
  o: SubszOptions
): Subsz => {
  const stats = sublistStats(accounts.filter((a) => o.acc === undefined || a.name === o.acc).map((a) => a.sublist))
  const selected = selectSubscriptions(conns, o)
  const start = Math.min(o.offset, selected.length)
  const page = selected.slice(start, Math.min(start + o.limit, selected.length))
  return {
    server_id: serverId,
    now: formatTimestamp(now),
    ...stats,
    total: selected.length,
    offset: o.offset,
    limit: o.limit,
    ...(o.subs ? { subscriptions_list: page } : {})
  }
}
