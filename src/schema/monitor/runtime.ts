// /stacksz, /raftz, /ipqueuesz: runtime internals. /stacksz differs from
// nats-server on purpose: Node has no goroutine dump, so it answers JSON — the
// parts of the process diagnostic report that show what every thread is doing.
import { Schema } from "effect"
import { Count, JsonObject, JsonValue } from "./common.js"

export const Stacksz = Schema.Struct({
  header: JsonObject,
  javascriptStack: JsonObject,
  nativeStack: Schema.Array(JsonValue),
  javascriptHeap: Schema.optional(JsonObject),
  resourceUsage: Schema.optional(JsonObject),
  uvthreadResourceUsage: Schema.optional(JsonObject),
  libuv: Schema.Array(JsonValue),
  workers: Schema.Array(JsonValue)
}).annotations({
  identifier: "Stacksz",
  description:
    "Node.js process diagnostic report (process.report.getReport()): JavaScript stack, native stack, " +
    "libuv handles; environment variables, command line and network details are left out"
})
export type Stacksz = typeof Stacksz.Type

export const RaftzGroupPeer = Schema.Struct({
  name: Schema.String,
  known: Schema.Boolean,
  last_replicated_index: Schema.optional(Count),
  last_seen: Schema.optional(Schema.String)
}).annotations({ identifier: "RaftzGroupPeer" })

export const RaftzGroup = Schema.Struct({
  id: Schema.String,
  state: Schema.String,
  size: Count,
  quorum_needed: Count,
  observer: Schema.optional(Schema.Boolean),
  paused: Schema.optional(Schema.Boolean),
  committed: Count,
  applied: Count,
  catching_up: Schema.optional(Schema.Boolean),
  leader: Schema.optional(Schema.String),
  ever_had_leader: Schema.Boolean,
  term: Count,
  voted_for: Schema.optional(Schema.String),
  pterm: Count,
  pindex: Count,
  ipq_proposal_len: Count,
  ipq_entry_len: Count,
  ipq_resp_len: Count,
  ipq_apply_len: Count,
  wal: JsonObject,
  wal_error: Schema.optional(Schema.String),
  peers: Schema.Record({ key: Schema.String, value: RaftzGroupPeer })
}).annotations({ identifier: "RaftzGroup" })

/** account → group name → group. With no consensus groups the endpoint answers 404 instead. */
export const Raftz = Schema.Record({
  key: Schema.String,
  value: Schema.Record({ key: Schema.String, value: RaftzGroup })
}).annotations({ identifier: "Raftz", description: "Consensus groups (/raftz), by account then group" })
export type Raftz = typeof Raftz.Type

export const IpqueueszQueue = Schema.Struct({
  pending: Count,
  in_progress: Schema.optional(Count)
}).annotations({ identifier: "IpqueueszQueue" })

export const Ipqueuesz = Schema.Record({ key: Schema.String, value: IpqueueszQueue }).annotations({
  identifier: "Ipqueuesz",
  description: "Internal queues by name with their depth (/ipqueuesz)"
})
export type Ipqueuesz = typeof Ipqueuesz.Type
