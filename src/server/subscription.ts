// One client subscription: what the Sublist indexes and what delivery updates.
import type { SubLike } from "../core/subject/sublist.js"
import type { Client } from "./client.js"

/**
 * How the server's own subsystems (stream API, MQTT bridge) receive messages: called
 * synchronously during routing. buf[start, end) holds headers (hdrLen bytes, -1 for
 * none) then payload; the bytes are never written again, so a handler may keep them.
 */
export type InternalHandler = (
  subject: string,
  reply: string,
  hdrLen: number,
  buf: Buffer,
  start: number,
  end: number
) => void

export class Subscription implements SubLike {
  /** Messages delivered on this subscription. */
  delivered = 0
  /** Auto-unsubscribe after this many deliveries; 0 = never. */
  max = 0
  closed = false
  /**
   * A persistent MQTT session holds the QoS 1/2 messages it receives here until they are
   * acknowledged, across restarts: a message any such subscription matches is stored
   * before it is routed (and only then).
   */
  holdsMessages = false

  constructor(
    readonly client: Client,
    readonly subject: string,
    readonly queue: string | undefined,
    readonly sid: string,
    /** Set for the server's internal subscriptions: delivery calls it instead of writing MSG. */
    readonly handler: InternalHandler | undefined = undefined
  ) {}
}
