// /jsz and the `jetstream` block of /varz: persistent-stream configuration,
// usage and per-account/stream/consumer detail, in nats-server's shapes.
// /jsz additionally carries the spec's `stats` and `meta` objects (spec 2.5)
// next to nats-server's flat fields and `meta_cluster`, so both readers work.
import { Schema } from "effect"
import { Count, GoDuration, Int, JsonObject, Timestamp } from "./common.js"

export const JetStreamConfig = Schema.Struct({
  max_memory: Int,
  max_storage: Int,
  store_dir: Schema.optional(Schema.String),
  sync_interval: Schema.optional(Int),
  sync_always: Schema.optional(Schema.Boolean),
  domain: Schema.optional(Schema.String),
  compress_ok: Schema.optional(Schema.Boolean),
  unique_tag: Schema.optional(Schema.String)
}).annotations({ identifier: "JetStreamConfig", description: "Stream subsystem limits (bytes; -1 = unlimited)" })

export const JetStreamAPIStats = Schema.Struct({
  level: Schema.optional(Count),
  total: Count,
  errors: Count,
  inflight: Schema.optional(Count)
}).annotations({ identifier: "JetStreamAPIStats" })

const JetStreamStatsFields = {
  memory: Count,
  storage: Count,
  reserved_memory: Count,
  reserved_storage: Count,
  accounts: Count,
  ha_assets: Count,
  api: JetStreamAPIStats
} as const

export const JetStreamStats = Schema.Struct(JetStreamStatsFields).annotations({ identifier: "JetStreamStats" })
export type JetStreamStats = typeof JetStreamStats.Type

/** nats-server's PeerInfo: `active` is nanoseconds since last seen. */
export const PeerInfo = Schema.Struct({
  name: Schema.String,
  current: Schema.Boolean,
  offline: Schema.optional(Schema.Boolean),
  active: Int,
  lag: Schema.optional(Count),
  peer: Schema.String
}).annotations({ identifier: "PeerInfo" })

export const MetaClusterInfo = Schema.Struct({
  name: Schema.optional(Schema.String),
  leader: Schema.optional(Schema.String),
  peer: Schema.optional(Schema.String),
  replicas: Schema.optional(Schema.Array(PeerInfo)),
  cluster_size: Count,
  pending: Schema.optional(Count)
}).annotations({ identifier: "MetaClusterInfo" })

/** The spec's `meta` object (2.5): peers with `active` as a duration string. */
export const MetaPeer = Schema.Struct({
  name: Schema.String,
  current: Schema.Boolean,
  offline: Schema.Boolean,
  active: GoDuration,
  lag: Count
}).annotations({ identifier: "MetaPeer" })

export const MetaInfo = Schema.Struct({
  name: Schema.String,
  leader: Schema.String,
  peer: Schema.String,
  peers: Schema.Array(MetaPeer),
  cluster_size: Count
}).annotations({ identifier: "MetaInfo" })

export const ClusterInfo = Schema.Struct({
  name: Schema.optional(Schema.String),
  leader: Schema.optional(Schema.String),
  replicas: Schema.optional(Schema.Array(PeerInfo))
}).annotations({ identifier: "ClusterInfo" })

export const StreamState = Schema.Struct({
  messages: Count,
  bytes: Count,
  first_seq: Count,
  first_ts: Timestamp,
  last_seq: Count,
  last_ts: Timestamp,
  num_subjects: Schema.optional(Count),
  num_deleted: Schema.optional(Count),
  consumer_count: Count
}).annotations({ identifier: "StreamState" })

export const SequenceInfo = Schema.Struct({
  consumer_seq: Count,
  stream_seq: Count,
  last_active: Schema.optional(Timestamp)
}).annotations({ identifier: "SequenceInfo" })

export const ConsumerInfo = Schema.Struct({
  stream_name: Schema.String,
  name: Schema.String,
  created: Timestamp,
  config: Schema.optional(JsonObject),
  delivered: SequenceInfo,
  ack_floor: SequenceInfo,
  num_ack_pending: Count,
  num_redelivered: Count,
  num_waiting: Count,
  num_pending: Count,
  cluster: Schema.optional(ClusterInfo),
  push_bound: Schema.optional(Schema.Boolean),
  ts: Schema.optional(Timestamp)
}).annotations({ identifier: "ConsumerInfo" })

export const StreamDetail = Schema.Struct({
  name: Schema.String,
  created: Timestamp,
  cluster: Schema.optional(ClusterInfo),
  config: Schema.optional(JsonObject),
  state: StreamState,
  consumer_detail: Schema.optional(Schema.Array(ConsumerInfo))
}).annotations({ identifier: "StreamDetail" })

export const AccountDetail = Schema.Struct({
  name: Schema.String,
  id: Schema.String,
  ...JetStreamStatsFields,
  stream_detail: Schema.optional(Schema.Array(StreamDetail))
}).annotations({ identifier: "AccountDetail" })

export const Jsz = Schema.Struct({
  server_id: Schema.String,
  now: Timestamp,
  disabled: Schema.optional(Schema.Boolean),
  config: JetStreamConfig,
  ...JetStreamStatsFields,
  streams: Count,
  consumers: Count,
  messages: Count,
  bytes: Count,
  meta_cluster: Schema.optional(MetaClusterInfo),
  account_details: Schema.optional(Schema.Array(AccountDetail)),
  total: Count,
  stats: JetStreamStats,
  meta: Schema.optional(MetaInfo)
}).annotations({ identifier: "Jsz", description: "Persistent-stream status (/jsz)" })
export type Jsz = typeof Jsz.Type

/** The `jetstream` block of /varz: empty when streams are disabled. */
export const JetStreamVarz = Schema.Struct({
  config: Schema.optional(JetStreamConfig),
  stats: Schema.optional(JetStreamStats),
  meta: Schema.optional(MetaClusterInfo)
}).annotations({ identifier: "JetStreamVarz" })
