// One client subscription: what the Sublist indexes and what delivery updates.
import type { SubLike } from "../core/subject/sublist.js"
import type { Client } from "./client.js"

export class Subscription implements SubLike {
  /** Messages delivered on this subscription. */
  delivered = 0
  /** Auto-unsubscribe after this many deliveries; 0 = never. */
  max = 0
  closed = false

  constructor(
    readonly client: Client,
    readonly subject: string,
    readonly queue: string | undefined,
    readonly sid: string
  ) {}
}
