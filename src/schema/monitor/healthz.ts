// /healthz: `{status:"ok"}` (200) or `{status:"unavailable", error}` (503); with
// `details=true` nats-server's form, `{status:"ok"|"error", errors:[…]}`.
import { Schema } from "effect"

export const HealthzErrorType = Schema.Literal("CONNECTION", "BAD_REQUEST", "JETSTREAM", "ACCOUNT", "STREAM", "CONSUMER")

export const HealthzError = Schema.Struct({
  type: HealthzErrorType,
  account: Schema.optional(Schema.String),
  stream: Schema.optional(Schema.String),
  consumer: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String)
}).annotations({ identifier: "HealthzError" })
export type HealthzError = typeof HealthzError.Type

export const Healthz = Schema.Struct({
  status: Schema.Literal("ok", "unavailable", "error"),
  error: Schema.optional(Schema.String),
  errors: Schema.optional(Schema.Array(HealthzError))
}).annotations({ identifier: "Healthz", description: "Health (/healthz)" })
export type Healthz = typeof Healthz.Type
