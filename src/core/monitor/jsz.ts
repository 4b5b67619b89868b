// /jsz and the /varz `jetstream` block from a stream-subsystem snapshot:
// totals, per-account detail (sorted by name, paged), stream and consumer
// detail on request, and the `disabled` form when streams are off.
import { Either } from "effect"
import type { ErrorBody, Jsz, QueryOf } from "../../schema/monitor.js"
import { JetStreamConfig, JetStreamStats, JszParams, MetaClusterInfo, MetaInfo, AccountDetail, StreamDetail, ConsumerInfo } from "../../schema/monitor.js"
import { DefaultListSize } from "./connz.js"
import { formatGoDuration, formatTimestamp } from "./format.js"
import type { ConsumerSnapshot, JetStreamAccountSnapshot, JetStreamSnapshot, StreamSnapshot } from "./source.js"

type Of<S extends { readonly Type: unknown }> = S["Type"]

/** Go's zero time, which nats-server prints for "never" (e.g. first_ts of an empty stream). */
export const GoZeroTimeMs = -62135596800000

export interface JszOptions {
  readonly acc: string | undefined
  readonly accounts: boolean
  readonly streams: boolean
  readonly consumers: boolean
  readonly config: boolean
  readonly leaderOnly: boolean
  readonly offset: number
  readonly limit: number
}

/** nats-server's implications: consumers ⇒ streams; streams without acc ⇒ accounts. */
export const jszOptions = (q: QueryOf<typeof JszParams>): JszOptions => {
  const consumers = q.consumers ?? false
  const streams = (q.streams ?? false) || consumers
  return {
    acc: q.acc,
    accounts: (q.accounts ?? false) || (streams && q.acc === undefined),
    streams,
    consumers,
    config: q.config ?? false,
    leaderOnly: q["leader-only"] ?? false,
    offset: Math.max(0, q.offset ?? 0),
    limit: q.limit === undefined || q.limit === 0 ? DefaultListSize : q.limit
  }
}

export const jetStreamConfig = (js: JetStreamSnapshot): Of<typeof JetStreamConfig> => ({
  max_memory: js.config.maxMemory,
  max_storage: js.config.maxStorage,
  ...(js.config.storeDir ? { store_dir: js.config.storeDir } : {}),
  ...(js.config.syncIntervalMs !== undefined ? { sync_interval: Math.round(js.config.syncIntervalMs * 1e6) } : {}),
  ...(js.config.syncAlways ? { sync_always: true } : {}),
  ...(js.config.domain ? { domain: js.config.domain } : {})
})

export const jetStreamStats = (js: JetStreamSnapshot): Of<typeof JetStreamStats> => ({
  memory: js.memory,
  storage: js.storage,
  reserved_memory: js.reservedMemory,
  reserved_storage: js.reservedStorage,
  accounts: js.accounts.length,
  ha_assets: js.haAssets,
  api: {
    total: js.api.total,
    errors: js.api.errors,
    ...(js.api.inflight ? { inflight: js.api.inflight } : {})
  }
})

export const metaClusterInfo = (js: JetStreamSnapshot): Of<typeof MetaClusterInfo> | undefined => {
  const m = js.meta
  if (m === undefined) return undefined
  return {
    name: m.name,
    leader: m.leader,
    peer: m.leaderId,
    ...(js.isLeader
      ? {
          replicas: m.peers.map((p) => ({
            name: p.name,
            current: p.current,
            ...(p.offline ? { offline: true } : {}),
            active: Math.trunc(p.activeNs),
            ...(p.lag > 0 ? { lag: p.lag } : {}),
            peer: p.id
          }))
        }
      : {}),
    cluster_size: m.clusterSize
  }
}

const metaInfo = (js: JetStreamSnapshot): Of<typeof MetaInfo> | undefined => {
  const m = js.meta
  if (m === undefined) return undefined
  return {
    name: m.name,
    leader: m.leader,
    peer: m.leaderId,
    peers: m.peers.map((p) => ({
      name: p.name,
      current: p.current,
      offline: p.offline,
      active: formatGoDuration(p.activeNs),
      lag: p.lag
    })),
    cluster_size: m.clusterSize
  }
}

const ts = (ms: number | undefined): string => formatTimestamp(ms === undefined || ms === 0 ? GoZeroTimeMs : ms)

const consumerInfo = (stream: string, c: ConsumerSnapshot, withConfig: boolean): Of<typeof ConsumerInfo> => ({
  stream_name: stream,
  name: c.name,
  created: formatTimestamp(c.created),
  ...(withConfig ? { config: { ...c.config } } : {}),
  delivered: {
    consumer_seq: c.delivered.consumerSeq,
    stream_seq: c.delivered.streamSeq,
    ...(c.delivered.lastActive !== undefined ? { last_active: formatTimestamp(c.delivered.lastActive) } : {})
  },
  ack_floor: {
    consumer_seq: c.ackFloor.consumerSeq,
    stream_seq: c.ackFloor.streamSeq,
    ...(c.ackFloor.lastActive !== undefined ? { last_active: formatTimestamp(c.ackFloor.lastActive) } : {})
  },
  num_ack_pending: c.numAckPending,
  num_redelivered: c.numRedelivered,
  num_waiting: c.numWaiting,
  num_pending: c.numPending,
  ...(c.pushBound ? { push_bound: true } : {})
})

const streamDetail = (s: StreamSnapshot, o: JszOptions): Of<typeof StreamDetail> => {
  const consumers = o.consumers ? s.consumers.map((c) => consumerInfo(s.name, c, o.config)) : []
  return {
    name: s.name,
    created: formatTimestamp(s.created),
    ...(o.config ? { config: { ...s.config } } : {}),
    state: {
      messages: s.state.messages,
      bytes: s.state.bytes,
      first_seq: s.state.firstSeq,
      first_ts: ts(s.state.firstTs),
      last_seq: s.state.lastSeq,
      last_ts: ts(s.state.lastTs),
      ...(s.state.numSubjects ? { num_subjects: s.state.numSubjects } : {}),
      ...(s.state.numDeleted ? { num_deleted: s.state.numDeleted } : {}),
      consumer_count: s.state.consumerCount
    },
    ...(consumers.length > 0 ? { consumer_detail: consumers } : {})
  }
}

const accountDetail = (a: JetStreamAccountSnapshot, o: JszOptions): Of<typeof AccountDetail> => {
  const streams = o.streams ? [...a.streams].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0)).map((s) => streamDetail(s, o)) : []
  return {
    name: a.name,
    id: a.name,
    memory: a.memory,
    storage: a.storage,
    reserved_memory: a.reservedMemory,
    reserved_storage: a.reservedStorage,
    accounts: 0,
    ha_assets: 0,
    api: { total: a.api.total, errors: a.api.errors },
    ...(streams.length > 0 ? { stream_detail: streams } : {})
  }
}

const zeroStats = { memory: 0, storage: 0, reserved_memory: 0, reserved_storage: 0, accounts: 0, ha_assets: 0, api: { total: 0, errors: 0 } }

export const NotLeader: ErrorBody = { error: "filtered response: not leader", parameter: "leader-only", value: "true" }

export const buildJsz = (
  serverId: string,
  now: number,
  js: JetStreamSnapshot | undefined,
  o: JszOptions
): Either.Either<Jsz, ErrorBody> => {
  if (js === undefined) {
    if (o.leaderOnly) return Either.left(NotLeader)
    return Either.right({
      server_id: serverId,
      now: formatTimestamp(now),
      disabled: true,
      config: { max_memory: 0, max_storage: 0 },
      ...zeroStats,
      streams: 0,
      consumers: 0,
      messages: 0,
      bytes: 0,
      total: 0,
      stats: zeroStats
    })
  }
  if (o.leaderOnly && !js.isLeader) return Either.left(NotLeader)
  let streams = 0, consumers = 0, messages = 0, bytes = 0
  for (const a of js.accounts) {
    streams += a.streams.length
    for (const s of a.streams) {
      consumers += s.state.consumerCount
      messages += s.state.messages
      bytes += s.state.bytes
    }
  }
  const sorted = [...js.accounts].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))
  const target = o.acc === undefined ? undefined : sorted.find((a) => a.name === o.acc)
  const selected =
    target !== undefined
      ? [target]
      : o.accounts
        ? sorted.slice(Math.min(o.offset, sorted.length), o.limit < 0 ? undefined : Math.min(o.offset, sorted.length) + o.limit)
        : []
  const stats = jetStreamStats(js)
  const meta = metaClusterInfo(js)
  const specMeta = metaInfo(js)
  return Either.right({
    server_id: serverId,
    now: formatTimestamp(now),
    config: jetStreamConfig(js),
    ...stats,
    streams,
    consumers,
    messages,
    bytes,
    ...(meta !== undefined ? { meta_cluster: meta } : {}),
    ...(selected.length > 0 ? { account_details: selected.map((a) => accountDetail(a, o)) } : {}),
    total: js.accounts.length,
    stats,
    ...(specMeta !== undefined ? { meta: specMeta } : {})
  })
}
