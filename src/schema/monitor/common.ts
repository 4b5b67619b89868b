// Building blocks shared by every monitoring response: the wire forms nats-server
// uses for timestamps (RFC 3339 UTC with fractional seconds), durations (Go's
// `time.Duration.String()` and nats-server's short uptime form) and counters.
import { Schema } from "effect"

/** RFC 3339 / ISO 8601 UTC timestamp, always with fractional seconds. */
export const Timestamp = Schema.String.annotations({
  identifier: "Timestamp",
  description: "ISO 8601 / RFC 3339 UTC timestamp with fractional seconds",
  jsonSchema: {
    type: "string",
    format: "date-time",
    pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3,9}Z$"
  }
})

/** Go `time.Duration.String()`: `0s`, `350ns`, `1.5µs`, `1.5ms`, `2m3.4s`, `1h0m0s`. */
export const GoDuration = Schema.String.annotations({
  identifier: "GoDuration",
  description: "Duration in Go's time.Duration.String() form, e.g. 1.5ms, 350µs, 2m3.4s, 0s",
  jsonSchema: {
    type: "string",
    pattern: "^-?(0s|\\d+(\\.\\d+)?(ns|µs|ms)|(\\d+h)?(\\d+m)?\\d+(\\.\\d+)?s)$"
  }
})

/** nats-server's uptime form: whole seconds as `[Ny][Nd][Nh][Nm]Ns`, e.g. `1d2h3m4s`. */
export const Uptime = Schema.String.annotations({
  identifier: "Uptime",
  description: "Elapsed time in nats-server's short form, e.g. 1d2h3m4s, 5m0s, 12s",
  jsonSchema: { type: "string", pattern: "^(\\d+y)?(\\d+d)?(\\d+h)?(\\d+m)?\\d+s$" }
})

/** A non-negative integer count (messages, bytes, connections, …). */
export const Count = Schema.NonNegativeInt

/** A signed integer (configured limits that may be -1, nanosecond settings, …). */
export const Int = Schema.Int

/** Any JSON value (used for opaque, pass-through objects such as stream configs). */
export const JsonValue = Schema.declare((_u: unknown): _u is unknown => true, {
  identifier: "JsonValue",
  description: "any JSON value",
  jsonSchema: { type: ["object", "array", "string", "number", "boolean", "null"] }
})

/** A JSON object with arbitrary members. */
export const JsonObject = Schema.Record({ key: Schema.String, value: JsonValue })

/** The body of every 4xx answer: what was wrong and, for a bad parameter, what is allowed. */
export const ErrorBody = Schema.Struct({
  error: Schema.String,
  parameter: Schema.optional(Schema.String),
  value: Schema.optional(Schema.String),
  allowed: Schema.optional(Schema.Array(Schema.String)),
  expected: Schema.optional(Schema.String)
}).annotations({
  identifier: "ErrorBody",
  description: "Error answer: a message, and for a bad query parameter its name, the value given and what is allowed"
})
export type ErrorBody = typeof ErrorBody.Type

/** Subscription detail as nats-server prints it in connz/routez/subsz lists. */
export const SubDetail = Schema.Struct({
  account: Schema.optional(Schema.String),
  subject: Schema.String,
  qgroup: Schema.optional(Schema.String),
  sid: Schema.String,
  msgs: Count,
  max: Schema.optional(Count),
  cid: Count
}).annotations({ identifier: "SubDetail", description: "One subscription" })
export type SubDetail = typeof SubDetail.Type

/** Subject-permission lists (routez import/export). */
export const SubjectPermission = Schema.Struct({
  allow: Schema.optional(Schema.Array(Schema.String)),
  deny: Schema.optional(Schema.Array(Schema.String))
}).annotations({ identifier: "SubjectPermission" })

/** Sublist statistics (subsz, accountz). `cache_hit_rate` is a ratio 0..1 as nats-server reports it. */
export const SublistStatsFields = {
  num_subscriptions: Count,
  num_cache: Count,
  num_inserts: Count,
  num_removes: Count,
  num_matches: Count,
  cache_hit_rate: Schema.Number,
  max_fanout: Count,
  avg_fanout: Schema.Number
} as const
export const SublistStats = Schema.Struct(SublistStatsFields).annotations({ identifier: "SublistStats" })
export type SublistStats = typeof SublistStats.Type
