// /varz: server identity, configuration, limits, live usage and counters, with
// the nested `cluster`, `gateway`, `leaf`, `mqtt`, `websocket` and `jetstream`
// blocks nats-server always prints (empty objects when the feature is off).
import { Schema } from "effect"
import { Count, Int, Timestamp, Uptime } from "./common.js"
import { JetStreamVarz } from "./jsz.js"

const opt = Schema.optional
const Strings = Schema.Array(Schema.String)

export const ClusterOptsVarz = Schema.Struct({
  name: opt(Schema.String),
  addr: opt(Schema.String),
  cluster_port: opt(Count),
  auth_timeout: opt(Schema.Number),
  urls: opt(Strings),
  tls_timeout: opt(Schema.Number),
  tls_required: opt(Schema.Boolean),
  tls_verify: opt(Schema.Boolean),
  pool_size: opt(Int)
}).annotations({ identifier: "ClusterOptsVarz" })

export const RemoteGatewayOptsVarz = Schema.Struct({
  name: Schema.String,
  tls_timeout: opt(Schema.Number),
  urls: opt(Strings)
}).annotations({ identifier: "RemoteGatewayOptsVarz" })

export const GatewayOptsVarz = Schema.Struct({
  name: opt(Schema.String),
  host: opt(Schema.String),
  port: opt(Count),
  auth_timeout: opt(Schema.Number),
  tls_timeout: opt(Schema.Number),
  tls_required: opt(Schema.Boolean),
  tls_verify: opt(Schema.Boolean),
  advertise: opt(Schema.String),
  connect_retries: opt(Int),
  gateways: opt(Schema.Array(RemoteGatewayOptsVarz)),
  reject_unknown: opt(Schema.Boolean)
}).annotations({ identifier: "GatewayOptsVarz" })

export const RemoteLeafOptsVarz = Schema.Struct({
  local_account: opt(Schema.String),
  tls_timeout: opt(Schema.Number),
  urls: opt(Strings),
  deny: opt(Schema.Struct({ exports: opt(Strings), imports: opt(Strings) }))
}).annotations({ identifier: "RemoteLeafOptsVarz" })

export const LeafNodeOptsVarz = Schema.Struct({
  host: opt(Schema.String),
  port: opt(Count),
  auth_timeout: opt(Schema.Number),
  tls_timeout: opt(Schema.Number),
  tls_required: opt(Schema.Boolean),
  tls_verify: opt(Schema.Boolean),
  remotes: opt(Schema.Array(RemoteLeafOptsVarz))
}).annotations({ identifier: "LeafNodeOptsVarz" })

export const MQTTOptsVarz = Schema.Struct({
  host: opt(Schema.String),
  port: opt(Count),
  no_auth_user: opt(Schema.String),
  auth_timeout: opt(Schema.Number),
  tls_map: opt(Schema.Boolean),
  tls_timeout: opt(Schema.Number),
  tls_pinned_certs: opt(Strings),
  js_domain: opt(Schema.String),
  ack_wait: opt(Int.annotations({ description: "nanoseconds" })),
  max_ack_pending: opt(Count),
  max_queued_messages: opt(Count.annotations({ description: "Switchyard: QoS 1/2 messages a session holds beyond its in-flight window" })),
  max_queued_bytes: opt(Count.annotations({ description: "Switchyard: their payload bytes (0: no bound)" })),
  queue_dropped: opt(Count.annotations({ description: "Switchyard: messages dropped, oldest first, at a session's queue bounds since start" })),
  protocol_versions: opt(Schema.Array(Count).annotations({ description: "Switchyard: the MQTT protocol levels the listener accepts (4: 3.1.1, 5: 5.0)" })),
  packet_too_large_dropped: opt(Count.annotations({ description: "Switchyard: MQTT 5.0 deliveries dropped since start for exceeding the client's Maximum Packet Size" }))
}).annotations({ identifier: "MQTTOptsVarz" })

export const WebsocketOptsVarz = Schema.Struct({
  host: opt(Schema.String),
  port: opt(Count),
  advertise: opt(Schema.String),
  no_auth_user: opt(Schema.String),
  jwt_cookie: opt(Schema.String),
  handshake_timeout: opt(Int.annotations({ description: "nanoseconds" })),
  auth_timeout: opt(Schema.Number),
  no_tls: opt(Schema.Boolean),
  tls_map: opt(Schema.Boolean),
  tls_pinned_certs: opt(Strings),
  same_origin: opt(Schema.Boolean),
  allowed_origins: opt(Strings),
  compression: opt(Schema.Boolean),
  protocol_versions: opt(Schema.Array(Count).annotations({ description: "Switchyard: the MQTT protocol levels MQTT over WebSocket accepts (4: 3.1.1, 5: 5.0)" }))
}).annotations({ identifier: "WebsocketOptsVarz" })

export const SlowConsumersStats = Schema.Struct({
  clients: Count,
  routes: Count,
  gateways: Count,
  leafs: Count
}).annotations({ identifier: "SlowConsumersStats" })

export const Varz = Schema.Struct({
  server_id: Schema.String,
  server_name: Schema.String,
  version: Schema.String,
  proto: Int,
  git_commit: Schema.String,
  go: Schema.String.annotations({ description: "runtime version, e.g. node v20.11.1" }),
  host: Schema.String,
  port: Count,
  auth_required: Schema.Boolean,
  tls_required: Schema.Boolean,
  tls_verify: Schema.Boolean,
  connect_urls: opt(Strings),
  ws_connect_urls: opt(Strings),
  max_connections: Int,
  max_subscriptions: Int,
  ping_interval: Int.annotations({ description: "nanoseconds" }),
  ping_max: Int,
  http_host: Schema.String,
  http_port: Count,
  http_base_path: Schema.String,
  https_port: Count,
  auth_timeout: Schema.Number.annotations({ description: "seconds" }),
  max_control_line: Int,
  max_payload: Int,
  max_pending: Int,
  cluster: ClusterOptsVarz,
  gateway: GatewayOptsVarz,
  leaf: LeafNodeOptsVarz,
  mqtt: MQTTOptsVarz,
  websocket: WebsocketOptsVarz,
  jetstream: JetStreamVarz,
  tls_timeout: Schema.Number.annotations({ description: "seconds" }),
  write_deadline: Int.annotations({ description: "nanoseconds" }),
  start: Timestamp,
  now: Timestamp,
  uptime: Uptime,
  mem: Count,
  cores: Count,
  gomaxprocs: Count,
  cpu: Schema.Number,
  connections: Count,
  total_connections: Count,
  routes: Count,
  remotes: Count,
  leafnodes: Count,
  in_msgs: Count,
  out_msgs: Count,
  in_bytes: Count,
  out_bytes: Count,
  slow_consumers: Count,
  stale_connections: Count,
  stalled_clients: Count,
  subscriptions: Count,
  http_req_stats: Schema.Record({ key: Schema.String, value: Count }),
  config_load_time: Timestamp,
  system_account: opt(Schema.String),
  slow_consumer_stats: SlowConsumersStats,
  tls_cert_not_after: opt(Timestamp)
}).annotations({ identifier: "Varz", description: "Server information (/varz)" })
export type Varz = typeof Varz.Type
