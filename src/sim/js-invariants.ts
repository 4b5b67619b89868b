// The JetStream invariant: no acknowledged publish is ever lost or reordered within its
// stream, across crashes and power cuts. Every PubAck is recorded as it arrives (a
// sequence acknowledged for two different messages means one was lost and its number
// reused; one publisher's acks must grow in publish order), and after every restart the
// recovered stream must hold each acknowledged message at its sequence, byte for byte.
// A durable pull consumer must get every acknowledged message at least once, unchanged.
import { Effect } from "effect"
import type { StreamStore } from "../services/store.js"
import type { JsPub } from "./js-client.js"
import type { Delivery } from "./js-consumer.js"

const keyOf = (p: JsPub): string => `j${p.client}.${p.n}`

export class JsModel {
  /** Acknowledged messages by stream sequence. */
  readonly acked = new Map<number, JsPub>()
  readonly violations: Array<string> = []
  private readonly lastAck = new Map<number, { n: number; seq: number }>()
  maxAcked = 0
  acks = 0
  failures = 0
  /** Acknowledged messages found intact by the checks after restarts. */
  verified = 0

  readonly onAck = (pub: JsPub, seq: number, duplicate: boolean): void => {
    this.acks++
    if (duplicate) return
    const before = this.acked.get(seq)
    if (before !== undefined && keyOf(before) !== keyOf(pub)) {
      this.violations.push(`seq ${seq} acknowledged for ${keyOf(pub)} but earlier for ${keyOf(before)}: an acknowledged message was lost and its sequence reused`)
    }
    const last = this.lastAck.get(pub.client)
    if (last !== undefined && pub.n > last.n && seq <= last.seq) {
      this.violations.push(`${keyOf(pub)} acknowledged as seq ${seq}, not after j${pub.client}.${last.n} (seq ${last.seq}): reordered`)
    }
    if (last === undefined || pub.n > last.n) this.lastAck.set(pub.client, { n: pub.n, seq })
    this.acked.set(seq, pub)
    if (seq > this.maxAcked) this.maxAcked = seq
    const d = this.lifeDeliveries.get(seq)
    if (d !== undefined) this.sameMessage(pub, d, "delivered before its PubAck")
  }

  /** Stream sequences delivered to the pull consumer, in any server life. */
  readonly delivered = new Set<number>()
  /** This server life's deliveries (a power cut may legitimately reuse an unacknowledged sequence). */
  private lifeDeliveries = new Map<number, Delivery>()
  deliveries = 0
  redeliveries = 0

  readonly onDelivery = (d: Delivery): void => {
    this.deliveries++
    if (d.deliveryCount > 1) this.redeliveries++
    this.delivered.add(d.streamSeq)
    this.lifeDeliveries.set(d.streamSeq, d)
    const pub = this.acked.get(d.streamSeq)
    if (pub !== undefined) this.sameMessage(pub, d, "delivered")
  }

  private sameMessage(pub: JsPub, d: Delivery, how: string): void {
    if (d.subject === pub.subject && d.payload.equals(pub.payload)) return
    this.violations.push(`seq ${d.streamSeq} ${how} to the consumer as ${d.subject} (${d.payload.length} B), but acknowledged as ${keyOf(pub)} on ${pub.subject} (${pub.payload.length} B)`)
  }

  /**
   * A new server life: deliveries seen so far may name sequences a power cut has since
   * reused. `promised` false: the acks so far promised nothing that survives this restart
   * (a power cut under sync_interval), so they are forgotten.
   */
  restarted(promised: boolean, powerLoss: boolean): void {
    this.lifeDeliveries = new Map()
    // An unacknowledged message may be gone and its sequence reused: its delivery no longer counts.
    if (powerLoss) for (const seq of this.delivered) if (!this.acked.has(seq)) this.delivered.delete(seq)
    if (promised) return
    this.forgotten += this.acked.size
    this.acked.clear()
    this.delivered.clear()
    this.lastAck.clear()
    this.maxAcked = 0
  }
  /** Acknowledged publishes dropped from the model by `restarted(false)`. */
  forgotten = 0

  /** Every acknowledged message the consumer owes has reached it. */
  caughtUp(): boolean {
    for (const seq of this.acked.keys()) if (!this.delivered.has(seq)) return false
    return true
  }

  /** After the consumer had time to catch up: at-least-once for every acknowledged publish. */
  checkAllDelivered(): void {
    const missing = [...this.acked.keys()].filter((seq) => !this.delivered.has(seq)).sort((a, b) => a - b)
    if (missing.length > 0) {
      this.violations.push(`${missing.length} acknowledged message(s) never delivered to the durable pull consumer; first seq ${missing[0]} (${keyOf(this.acked.get(missing[0])!)})`)
    }
  }

  /** Publishes answered with an error: none may ever be found in the stream. */
  private readonly refused = new Map<string, JsPub>()

  readonly onFail = (pub: JsPub): void => {
    this.failures++
    this.refused.set(keyOf(pub), pub)
  }

  /** The stream as recovered (or as it is now): every acknowledged message at its sequence, byte-identical. */
  checkStore(store: StreamStore | undefined, when: string): Effect.Effect<void> {
    const self = this
    return Effect.gen(function*() {
      if (store !== undefined) yield* self.checkNoneRefused(store, when)
      if (self.acked.size === 0) return
      if (store === undefined) {
        self.violations.push(`${when}: the stream is gone but ${self.acked.size} messages were acknowledged`)
        return
      }
      const st = store.state()
      if (st.last_seq < self.maxAcked) self.violations.push(`${when}: stream last_seq ${st.last_seq} < ${self.maxAcked}, the highest acknowledged sequence`)
      const problems: Array<string> = []
      for (const seq of [...self.acked.keys()].sort((a, b) => a - b)) {
        const pub = self.acked.get(seq)!
        const m = yield* Effect.either(store.load(seq))
        if (m._tag === "Left") problems.push(`acknowledged ${keyOf(pub)} (seq ${seq}) lost: ${m.left.reason}`)
        else if (m.right.subject !== pub.subject || !Buffer.from(m.right.payload).equals(pub.payload)) {
          const got = Buffer.from(m.right.payload).toString("latin1", 0, 16).replace(/[^\x20-\x7e]/g, "?")
          problems.push(`seq ${seq} holds ${m.right.subject} '${got}…' (${m.right.payload.length} B), not acknowledged ${keyOf(pub)} on ${pub.subject} (${pub.payload.length} B)`)
        } else self.verified++
      }
      if (problems.length > 0) self.violations.push(`${when}: ${problems.length} acknowledged message(s) lost or changed; first: ${problems[0]}`)
    })
  }

  /** A publish refused (503 and the like) is never stored: not now, not after any restart. */
  private checkNoneRefused(store: StreamStore, when: string): Effect.Effect<void> {
    const self = this
    return Effect.gen(function*() {
      if (self.refused.size === 0) return
      const st = store.state()
      for (let seq = st.first_seq; seq <= st.last_seq; seq++) {
        const m = yield* Effect.either(store.load(seq))
        if (m._tag === "Left") continue
        const head = Buffer.from(m.right.payload).toString("latin1", 0, 24)
        const key = head.slice(0, head.indexOf(".", head.indexOf(".") + 1))
        const pub = self.refused.get(key)
        if (pub !== undefined && Buffer.from(m.right.payload).equals(pub.payload)) {
          self.violations.push(`${when}: ${key} was refused to its publisher but is stored at seq ${seq}`)
          return
        }
      }
    })
  }
}
