// Wire shapes of the JetStream API requests this server reads and of the PubAck it
// sends, as plain Schema structs (no `_tag`: they must match nats-server's JSON).
import { Schema } from "effect"

const Seq = Schema.Number.pipe(Schema.int(), Schema.nonNegative())

export const ApiErrorSchema = Schema.Struct({
  code: Schema.Number,
  err_code: Schema.Number,
  description: Schema.String
})

export const PubAck = Schema.Struct({
  stream: Schema.String,
  /** The stream's JetStream domain, when the server has one. */
  domain: Schema.optional(Schema.String),
  seq: Seq,
  duplicate: Schema.optional(Schema.Boolean),
  error: Schema.optional(ApiErrorSchema)
})
export type PubAck = typeof PubAck.Type

export const PurgeRequest = Schema.Struct({
  filter: Schema.optional(Schema.String),
  seq: Schema.optional(Seq),
  keep: Schema.optional(Seq)
})

export const MsgGetRequest = Schema.Struct({
  seq: Schema.optional(Seq),
  last_by_subj: Schema.optional(Schema.String),
  next_by_subj: Schema.optional(Schema.String)
})

export const MsgDeleteRequest = Schema.Struct({
  seq: Seq,
  no_erase: Schema.optional(Schema.Boolean)
})

export const ListRequest = Schema.Struct({
  offset: Schema.optional(Seq),
  subject: Schema.optional(Schema.String)
})

export const StreamInfoRequest = Schema.Struct({
  subjects_filter: Schema.optional(Schema.String),
  deleted_details: Schema.optional(Schema.Boolean)
})
