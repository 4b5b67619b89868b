// /accountz (account list, or one account's detail with `acc`) and
// /accountstatz (per-account connection and traffic statistics).
import { Schema } from "effect"
import { Count, SublistStats, Timestamp } from "./common.js"

const opt = Schema.optional

export const ExtExport = Schema.Struct({
  name: opt(Schema.String),
  subject: Schema.String,
  type: Schema.Literal("stream", "service"),
  token_req: opt(Schema.Boolean),
  response_type: opt(Schema.String),
  description: opt(Schema.String),
  approved_accounts: opt(Schema.Array(Schema.String))
}).annotations({ identifier: "ExtExport" })

export const ExtImport = Schema.Struct({
  name: opt(Schema.String),
  subject: Schema.String,
  account: Schema.String,
  local_subject: opt(Schema.String),
  type: Schema.Literal("stream", "service"),
  invalid: Schema.Boolean,
  share: Schema.Boolean,
  tracking: Schema.Boolean
}).annotations({ identifier: "ExtImport" })

export const MapDest = Schema.Struct({
  subject: Schema.String,
  weight: Count,
  cluster: opt(Schema.String)
}).annotations({ identifier: "MapDest" })

export const AccountInfo = Schema.Struct({
  account_name: Schema.String,
  update_time: Timestamp,
  is_system: opt(Schema.Boolean),
  expired: Schema.Boolean,
  complete: Schema.Boolean,
  jetstream_enabled: Schema.Boolean,
  leafnode_connections: Count,
  client_connections: Count,
  subscriptions: Count,
  mappings: opt(Schema.Record({ key: Schema.String, value: Schema.Array(MapDest) })),
  exports: opt(Schema.Array(ExtExport)),
  imports: opt(Schema.Array(ExtImport)),
  sublist_stats: opt(SublistStats)
}).annotations({ identifier: "AccountInfo" })

export const Accountz = Schema.Struct({
  server_id: Schema.String,
  now: Timestamp,
  system_account: opt(Schema.String),
  accounts: opt(Schema.Array(Schema.String)),
  account_detail: opt(AccountInfo)
}).annotations({ identifier: "Accountz", description: "Accounts (/accountz)" })
export type Accountz = typeof Accountz.Type

export const DataStats = Schema.Struct({ msgs: Count, bytes: Count }).annotations({ identifier: "DataStats" })

export const AccountStat = Schema.Struct({
  acc: Schema.String,
  name: opt(Schema.String),
  conns: Count,
  leafnodes: Count,
  total_conns: Count,
  num_subscriptions: Count,
  sent: DataStats,
  received: DataStats,
  slow_consumers: Count
}).annotations({ identifier: "AccountStat" })

export const AccountStatz = Schema.Struct({
  server_id: Schema.String,
  now: Timestamp,
  account_statz: Schema.Array(AccountStat)
}).annotations({ identifier: "AccountStatz", description: "Account statistics (/accountstatz, /accstatz)" })
export type AccountStatz = typeof AccountStatz.Type
