// /subsz: sublist statistics, optionally the subscriptions themselves
// (`subs=true`, paged), filtered by account, subject pattern or a test subject.
import { Schema } from "effect"
import { Count, SubDetail, SublistStatsFields, Timestamp } from "./common.js"

export const Subsz = Schema.Struct({
  server_id: Schema.String,
  now: Timestamp,
  ...SublistStatsFields,
  total: Count.annotations({ description: "subscriptions matching the subject/test filters" }),
  offset: Count,
  limit: Count,
  subscriptions_list: Schema.optional(Schema.Array(SubDetail))
}).annotations({ identifier: "Subsz", description: "Subscription statistics (/subsz)" })
export type Subsz = typeof Subsz.Type
