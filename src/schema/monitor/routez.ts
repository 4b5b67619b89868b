// /routez, /gatewayz, /leafz: the cluster-facing connection reports. With no
// routes, gateways or leafnodes they are empty envelopes, as nats-server answers.
import { Schema } from "effect"
import { ConnInfo } from "./connz.js"
import { Count, GoDuration, SubDetail, SubjectPermission, Timestamp, Uptime } from "./common.js"

export const RouteInfo = Schema.Struct({
  rid: Count,
  remote_id: Schema.String,
  remote_name: Schema.String,
  did_solicit: Schema.Boolean,
  is_configured: Schema.Boolean,
  ip: Schema.String,
  port: Count,
  start: Timestamp,
  last_activity: Timestamp,
  rtt: GoDuration,
  uptime: Uptime,
  idle: Uptime,
  import: Schema.optional(SubjectPermission),
  export: Schema.optional(SubjectPermission),
  pending_size: Count,
  in_msgs: Count,
  out_msgs: Count,
  in_bytes: Count,
  out_bytes: Count,
  subscriptions: Count,
  subscriptions_list: Schema.optional(Schema.Array(Schema.String)),
  subscriptions_list_detail: Schema.optional(Schema.Array(SubDetail)),
  account: Schema.optional(Schema.String),
  compression: Schema.optional(Schema.String)
}).annotations({ identifier: "RouteInfo", description: "One route connection" })
export type RouteInfo = typeof RouteInfo.Type

export const Routez = Schema.Struct({
  server_id: Schema.String,
  server_name: Schema.String,
  now: Timestamp,
  import: Schema.optional(SubjectPermission),
  export: Schema.optional(SubjectPermission),
  num_routes: Count,
  routes: Schema.Array(RouteInfo)
}).annotations({ identifier: "Routez", description: "Routes (/routez)" })
export type Routez = typeof Routez.Type

export const AccountGatewayz = Schema.Struct({
  name: Schema.String,
  interest_mode: Schema.String,
  no_interest_count: Schema.optional(Count),
  interest_only_threshold: Schema.optional(Count),
  num_subs: Schema.optional(Count),
  num_queue_subs: Schema.optional(Count),
  subscriptions_list: Schema.optional(Schema.Array(Schema.String)),
  subscriptions_list_detail: Schema.optional(Schema.Array(SubDetail))
}).annotations({ identifier: "AccountGatewayz" })

export const RemoteGatewayz = Schema.Struct({
  configured: Schema.Boolean,
  connection: Schema.optional(ConnInfo),
  accounts: Schema.optional(Schema.Array(AccountGatewayz))
}).annotations({ identifier: "RemoteGatewayz" })

export const Gatewayz = Schema.Struct({
  server_id: Schema.String,
  now: Timestamp,
  name: Schema.optional(Schema.String),
  host: Schema.optional(Schema.String),
  port: Schema.optional(Count),
  outbound_gateways: Schema.Record({ key: Schema.String, value: RemoteGatewayz }),
  inbound_gateways: Schema.Record({ key: Schema.String, value: Schema.Array(RemoteGatewayz) })
}).annotations({ identifier: "Gatewayz", description: "Gateways (/gatewayz)" })
export type Gatewayz = typeof Gatewayz.Type

export const LeafInfo = Schema.Struct({
  name: Schema.String,
  is_spoke: Schema.Boolean,
  account: Schema.String,
  ip: Schema.String,
  port: Count,
  rtt: GoDuration,
  in_msgs: Count,
  out_msgs: Count,
  in_bytes: Count,
  out_bytes: Count,
  subscriptions: Count,
  subscriptions_list: Schema.optional(Schema.Array(Schema.String)),
  compression: Schema.optional(Schema.String)
}).annotations({ identifier: "LeafInfo", description: "One leafnode connection" })
export type LeafInfo = typeof LeafInfo.Type

export const Leafz = Schema.Struct({
  server_id: Schema.String,
  now: Timestamp,
  leafnodes: Count,
  leafs: Schema.Array(LeafInfo)
}).annotations({ identifier: "Leafz", description: "Leafnodes (/leafz)" })
export type Leafz = typeof Leafz.Type
