// /connz: filter (cid, state, user, account, MQTT client id), sort (14 keys;
// cid ascending, the rest descending, ties by cid) and page (offset, limit)
// over connection snapshots, then render nats-server's ConnInfo records.
import { Either } from "effect"
import type { ConnInfo, ConnState, ConnzSort, Connz, ErrorBody, QueryOf, SubDetail } from "../../schema/monitor.js"
import { ConnzParams, ConnzSortKeys } from "../../schema/monitor.js"
import { formatRtt, formatTimestamp, formatUptime } from "./format.js"
import type { ClosedConnSnapshot, ConnSnapshot, SubSnapshot } from "./source.js"

export const DefaultListSize = 1024

export interface ConnzOptions {
  readonly sort: ConnzSort
  readonly auth: boolean
  readonly subs: boolean | "detail"
  readonly offset: number
  readonly limit: number
  /** 0 = no filter. */
  readonly cid: number
  readonly state: ConnState
  readonly user: string | undefined
  readonly acc: string | undefined
  readonly mqttClient: string | undefined
}

export type AnyConn = ConnSnapshot | ClosedConnSnapshot

const isClosed = (c: AnyConn): c is ClosedConnSnapshot => typeof (c as ClosedConnSnapshot).stop === "number"

/** Defaults and cross-parameter rules (nats-server: stop/reason sorts need state=closed). */
export const connzOptions = (q: QueryOf<typeof ConnzParams>): Either.Either<ConnzOptions, ErrorBody> => {
  const state: ConnState = q.state === undefined ? "open" : q.state === "any" ? "all" : q.state
  const sort = q.sort ?? "cid"
  if ((sort === "stop" || sort === "reason") && state !== "closed") {
    return Either.left({
      error: `sort by ${sort} only valid on closed connections`,
      parameter: "sort",
      value: sort,
      allowed: ConnzSortKeys.filter((k) => k !== "stop" && k !== "reason"),
      expected: "state=closed for sort=stop and sort=reason"
    })
  }
  const cid = q.cid ?? 0
  return Either.right({
    sort,
    auth: q.auth ?? false,
    subs: q.subs ?? false,
    offset: Math.max(0, q.offset ?? 0),
    limit: cid > 0 ? 1 : q.limit === undefined || q.limit <= 0 ? DefaultListSize : q.limit,
    cid,
    state,
    user: q.user,
    acc: q.acc,
    mqttClient: q.mqtt_client
  })
}

/** The moment a connection's durations are measured at: now, or when it closed. */
const endOf = (c: AnyConn, now: number): number => (isClosed(c) ? c.stop : now)

type Key = (c: AnyConn, now: number) => number | string

const keys: Record<Exclude<ConnzSort, "cid">, Key> = {
  start: (c) => c.start,
  subs: (c) => c.subs.length,
  pending: (c) => c.pendingBytes,
  msgs_to: (c) => c.outMsgs,
  msgs_from: (c) => c.inMsgs,
  bytes_to: (c) => c.outBytes,
  bytes_from: (c) => c.inBytes,
  last: (c) => c.lastActivity,
  idle: (c, now) => endOf(c, now) - c.lastActivity,
  uptime: (c, now) => endOf(c, now) - c.start,
  stop: (c) => (isClosed(c) ? c.stop : 0),
  reason: (c) => (isClosed(c) ? c.reason : ""),
  rtt: (c) => c.rttNs
}

/** Sort a copy: `cid` ascending, every other key descending, ties broken by cid ascending. */
export const sortConnections = <C extends AnyConn>(conns: ReadonlyArray<C>, sort: ConnzSort, now: number): Array<C> => {
  const out = [...conns]
  if (sort === "cid") return out.sort((a, b) => a.cid - b.cid)
  const key = keys[sort]
  const decorated = out.map((c) => ({ c, k: key(c, now) }))
  decorated.sort((a, b) => {
    if (a.k !== b.k) return a.k < b.k ? 1 : -1
    return a.c.cid - b.c.cid
  })
  return decorated.map((d) => d.c)
}

const matches = (c: AnyConn, o: ConnzOptions): boolean =>
  (o.cid === 0 || c.cid === o.cid) &&
  (o.acc === undefined || c.account === o.acc) &&
  (o.user === undefined || c.user === o.user) &&
  (o.mqttClient === undefined || c.mqttClient === o.mqttClient)

/** The connections the options select, sorted, plus how many matched before paging. */
export const selectConnections = (
  open: ReadonlyArray<ConnSnapshot>,
  closed: ReadonlyArray<ClosedConnSnapshot>,
  o: ConnzOptions,
  now: number
): { readonly total: number; readonly page: ReadonlyArray<AnyConn> } => {
  const pool: Array<AnyConn> = []
  if (o.state !== "closed") for (const c of open) if (matches(c, o)) pool.push(c)
  // With a cid filter an open match wins over a closed one (cids are unique anyway).
  if (o.state !== "open" && !(o.cid > 0 && pool.length > 0)) for (const c of closed) if (matches(c, o)) pool.push(c)
  const sorted = sortConnections(pool, o.sort, now)
  const start = Math.min(o.offset, sorted.length)
  const end = Math.min(start + o.limit, sorted.length)
  return { total: pool.length, page: sorted.slice(start, end) }
}

const subDetail = (s: SubSnapshot, cid: number): SubDetail => ({
  subject: s.subject,
  ...(s.queue ? { qgroup: s.queue } : {}),
  sid: s.sid,
  msgs: s.msgs,
  ...(s.max > 0 ? { max: s.max } : {}),
  cid
})

/** One nats-server ConnInfo. Fields are copied one by one: nothing else in the snapshot can leak. */
export const connInfo = (c: AnyConn, now: number, o: { readonly auth: boolean; readonly subs: boolean | "detail" }): ConnInfo => {
  const end = endOf(c, now)
  const closed = isClosed(c)
  return {
    cid: c.cid,
    kind: c.kind,
    ...(c.type !== undefined ? { type: c.type } : {}),
    ip: c.ip,
    port: c.port,
    start: formatTimestamp(c.start),
    last_activity: formatTimestamp(c.lastActivity),
    ...(closed ? { stop: formatTimestamp(c.stop), reason: c.reason } : {}),
    rtt: formatRtt(c.rttNs),
    uptime: formatUptime(end - c.start),
    idle: formatUptime(end - c.lastActivity),
    pending_bytes: c.pendingBytes,
    in_msgs: c.inMsgs,
    out_msgs: c.outMsgs,
    in_bytes: c.inBytes,
    out_bytes: c.outBytes,
    subscriptions: c.subs.length,
    name: c.name,
    lang: c.lang,
    version: c.version,
    ...(c.tlsVersion !== undefined ? { tls_version: c.tlsVersion } : {}),
    ...(c.tlsCipher !== undefined ? { tls_cipher_suite: c.tlsCipher } : {}),
    ...(o.auth && c.user ? { authorized_user: c.user } : {}),
    account: c.account,
    ...(o.subs === "detail" && c.subs.length > 0
      ? { subscriptions_list_detail: c.subs.map((s) => subDetail(s, c.cid)) }
      : o.subs === true && c.subs.length > 0
        ? { subscriptions_list: c.subs.map((s) => s.subject) }
        : {}),
    ...(c.mqttClient !== undefined ? { mqtt_client: c.mqttClient } : {})
  }
}

export const buildConnz = (
  serverId: string,
  now: number,
  open: ReadonlyArray<ConnSnapshot>,
  closed: ReadonlyArray<ClosedConnSnapshot>,
  o: ConnzOptions
): Connz => {
  const { page, total } = selectConnections(open, closed, o, now)
  const connections = page.map((c) => connInfo(c, now, o))
  return {
    server_id: serverId,
    now: formatTimestamp(now),
    num_connections: connections.length,
    total,
    offset: o.offset,
    limit: o.limit,
    connections
  }
}
