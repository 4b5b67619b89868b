// MQTT 5.0 retained messages removed when their Message Expiry Interval runs out
// [MQTT-3.3.2-5], not only when a subscription's lookup meets them (pacing.ts) or the
// streams are loaded: each account store's retained messages with an end wait in an
// ExpiryQueue (one entry per topic), the bridge's alarm is asked for the earliest end
// only while there is one (an idle server with nothing expiring runs nothing), and a tick
// removes at most RETAINED_EXPIRIES_PER_TICK of them, the rest at the next.
import { ExpiryQueue } from "../../core/expiry-queue.js"
import { topicToSubject } from "../../core/mqtt/topic.js"
import { messageExpiresAt } from "../../core/mqtt/v5/expiry.js"
import { messageExpiryOf } from "../../core/mqtt/v5/nats.js"
import { type MqttAccountStore, type RetainedMsg, storedExpired } from "./store.js"

/** Expired retained messages removed per tick at most: many ending together are spread over ticks. */
export const RETAINED_EXPIRIES_PER_TICK = 1000

/**
 * When a retained message is gone (ms), undefined without a Message Expiry Interval: the
 * first millisecond `storedExpired` says it ran out (its last second left is still sent).
 */
export const retainedEndsAt = (msg: RetainedMsg | undefined): number | undefined => {
  const interval = messageExpiryOf(msg?.props?.hdr)
  return interval === undefined ? undefined : messageExpiresAt(msg!.props!.at, interval) + 1
}

export class RetainedExpiry {
  private readonly queues = new Map<MqttAccountStore, ExpiryQueue<string>>()
  private readonly due: Array<string> = []

  constructor(private readonly wakeAt: (at: number) => void) {}

  /** Retained messages with an end waiting, over every account (tests, diagnostics). */
  get size(): number {
    let n = 0
    for (const q of this.queues.values()) n += q.size
    return n
  }

  /** An account's store is open: the retained messages it holds (loaded after a restart) are watched, once per store. */
  opened(store: MqttAccountStore): void {
    if (this.queues.has(store)) return
    const q = new ExpiryQueue<string>()
    this.queues.set(store, q)
    let first = Infinity
    for (const msg of store.retained.values()) {
      const at = retainedEndsAt(msg)
      if (at === undefined) continue
      q.set(msg.topic, at)
      if (at < first) first = at
    }
    if (first !== Infinity) this.wakeAt(first)
  }

  /** The retained message of `topic` in `store` was set or removed: its end, if it has one, is watched. */
  changed(store: MqttAccountStore, topic: string): void {
    this.opened(store)
    const q = this.queues.get(store)!
    const at = retainedEndsAt(store.retained.get(topic))
    if (at === undefined) {
      q.delete(topic)
      return
    }
    q.set(topic, at)
    this.wakeAt(at)
  }

  /**
   * Removes the retained messages that ran out by `now` (at most RETAINED_EXPIRIES_PER_TICK);
   * says whether it removed any and when it next needs to run (undefined: nothing waits).
   */
  tick(now: number): { readonly removed: boolean; readonly next: number | undefined } {
    let budget = RETAINED_EXPIRIES_PER_TICK
    let removed = false
    let next = Infinity
    const due = this.due
    for (const [store, q] of this.queues) {
      due.length = 0
      const all = q.takeDue(now, budget, due)
      budget -= due.length
      for (const topic of due) {
        // An entry moves whenever its topic's message changes, so what is due is the message
        // retained now; checked all the same, so that a newer message is never taken for it.
        if (!storedExpired(store.retained.get(topic)?.props, now)) continue
        const subject = topicToSubject(topic)
        if (subject.ok && store.deleteRetained(topic, subject.value)) removed = true
      }
      const after = all ? q.next() : now
      if (after !== undefined && after < next) next = after
    }
    due.length = 0
    return { removed, next: next === Infinity ? undefined : next }
  }
}
