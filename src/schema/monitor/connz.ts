// /connz: the connection list envelope and the per-connection record, with
// nats-server 2.10's field names (kind/type, rtt/uptime/idle, stop/reason for
// closed connections, subscription lists with `subs=true`/`subs=detail`).
import { Schema } from "effect"
import { Count, GoDuration, SubDetail, Timestamp, Uptime } from "./common.js"

export const ConnInfo = Schema.Struct({
  cid: Count,
  kind: Schema.String.annotations({ description: "Client, Router, Gateway, Leafnode, …" }),
  type: Schema.optional(Schema.String.annotations({ description: "nats, mqtt or websocket (client connections)" })),
  ip: Schema.String,
  port: Count,
  start: Timestamp,
  last_activity: Timestamp,
  stop: Schema.optional(Timestamp),
  reason: Schema.optional(Schema.String),
  rtt: GoDuration,
  uptime: Uptime,
  idle: Uptime,
  pending_bytes: Count,
  in_msgs: Count,
  out_msgs: Count,
  in_bytes: Count,
  out_bytes: Count,
  subscriptions: Count,
  name: Schema.String,
  lang: Schema.String,
  version: Schema.String,
  tls_version: Schema.optional(Schema.String),
  tls_cipher_suite: Schema.optional(Schema.String),
  authorized_user: Schema.optional(Schema.String),
  account: Schema.String,
  subscriptions_list: Schema.optional(Schema.Array(Schema.String)),
  subscriptions_list_detail: Schema.optional(Schema.Array(SubDetail)),
  mqtt_client: Schema.optional(Schema.String)
}).annotations({ identifier: "ConnInfo", description: "One client or leafnode connection" })
export type ConnInfo = typeof ConnInfo.Type

export const Connz = Schema.Struct({
  server_id: Schema.String,
  now: Timestamp,
  num_connections: Count,
  total: Count,
  offset: Count,
  limit: Count,
  connections: Schema.Array(ConnInfo)
}).annotations({ identifier: "Connz", description: "Connections (/connz)" })
export type Connz = typeof Connz.Type
