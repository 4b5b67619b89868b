// MQTT output that could be large, paced so that one client never holds up the others
// or runs out of memory: the retained messages a new subscription is owed (sent after its
// SUBACK, within a budget per event-loop turn, in the order of the SUBSCRIBEs) and a
// resumed session's backlog on disk (read back a batch at a time, as fast as the client's
// socket drains).
import type { RetainedCursor, SessionInput, StoredProperties } from "../../core/mqtt/index.js"
import type { Subscription } from "../../engine/principal.js"
import type { Server } from "../server.js"
import type { MqttConnection } from "./connection.js"
import { natsToPublish } from "../../core/mqtt/v5/nats.js"
import { topicToSubject } from "../../core/mqtt/topic.js"
import { type MqttAccountStore, type MqttStoreService, type RetainedMsg, storedExpired, type StoredProps } from "./store.js"

/** A stored copy's MQTT 5.0 properties for a v5 session (as a routed message's would be), and when it was received. */
const storedProperties = (props: StoredProps): StoredProperties => ({
  properties: natsToPublish("", props.reply, props.hdr).properties,
  receivedAt: props.at
})

/** A retained message for an MQTT 5.0 session: with the properties it was published with. */
const retainedFor5 = (m: RetainedMsg): RetainedMsg | (RetainedMsg & StoredProperties) =>
  m.props === undefined ? m : { ...m, ...storedProperties(m.props) }

/** What pacing has the connection driver do: give a session what it asked for. */
export interface PacingDriver {
  input(c: MqttConnection, input: SessionInput, now?: number): void
}

/**
 * Retained messages sent for new subscriptions per event-loop turn, and retained-tree
 * nodes visited: a SUBSCRIBE matching more is answered over several turns, so other
 * clients are served in between.
 */
const RETAINED_PER_TURN = 1000
const RETAINED_STEPS_PER_TURN = 50_000

/** Retained messages still due to a new subscription (a lookup paused at the turn's budget). */
interface RetainedDue {
  readonly c: MqttConnection
  readonly filter: string
  /** The subscription they are for: a later SUBSCRIBE of the same filter or an UNSUBSCRIBE ends them. */
  readonly subs: Array<Subscription>
  readonly cursor: RetainedCursor<RetainedMsg>
  readonly store: MqttAccountStore
}

export class RetainedLookups {
  /** Lookups waiting for a later turn, oldest first, and this turn's budget. */
  private due: Array<RetainedDue> = []
  private budget = RETAINED_PER_TURN
  private steps = RETAINED_STEPS_PER_TURN
  private turnScheduled = false

  constructor(
    private readonly server: Server,
    private readonly driver: PacingDriver
  ) {}

  /** `c` subscribed to `filter` (its SUBACK is out): the retained messages matching it follow [MQTT-3.3.1-6]. */
  want(c: MqttConnection, filter: string, store: MqttAccountStore): void {
    const subs = c.filters.get(filter)
    if (subs === undefined) return
    const due: RetainedDue = { c, filter, subs, cursor: store.retained.match(filter), store }
    // Behind lookups already waiting, so that retained messages keep the order of the SUBSCRIBEs.
    if (this.due.length > 0 || !this.send(due)) this.due.push(due)
  }

  /** Retained messages for a new subscription, within this turn's budget; true when all went out. */
  private send(due: RetainedDue): boolean {
    const { c, filter } = due
    if (c.closed || c.filters.get(filter) !== due.subs) return true
    // The budget is per turn: renewed at the next one, which also sends what is left.
    this.nextTurn()
    if (this.budget <= 0 || this.steps <= 0) return false
    let messages: Array<RetainedMsg> = []
    const before = due.cursor.steps
    const done = due.cursor.take(messages, this.budget, this.steps)
    this.budget -= messages.length
    this.steps -= due.cursor.steps - before
    if (messages.some((m) => m.props !== undefined)) messages = this.unexpired(messages, due.store)
    const v5 = c.session.protocolVersion === 5
    if (messages.length > 0) this.driver.input(c, { type: "retained", filter, messages: v5 ? messages.map(retainedFor5) : messages })
    return done
  }

  /**
   * MQTT 5.0: a retained message whose Message Expiry Interval ran out is gone [MQTT-3.3.2-5]:
   * sent to nobody (3.1.1 subscribers included) and removed from the store when a lookup
   * meets it (a paused cursor skips what is removed). A retained message without an
   * interval is never looked at.
   */
  private unexpired(messages: Array<RetainedMsg>, store: MqttAccountStore): Array<RetainedMsg> {
    const now = this.server.now()
    const live: Array<RetainedMsg> = []
    for (const m of messages) {
      if (!storedExpired(m.props, now)) {
        live.push(m)
        continue
      }
      const subject = topicToSubject(m.topic)
      // Only this very message: a newer one on the topic stays.
      if (subject.ok && store.retained.get(m.topic) === m) store.deleteRetained(m.topic, subject.value)
    }
    return live
  }

  private nextTurn(): void {
    if (this.turnScheduled) return
    this.turnScheduled = true
    this.server.env.scheduleFlush(() => {
      this.turnScheduled = false
      this.budget = RETAINED_PER_TURN
      this.steps = RETAINED_STEPS_PER_TURN
      while (this.due.length > 0 && this.send(this.due[0])) this.due.shift()
    })
  }
}

/** A fetch of stored messages for a session waits while more than this waits in its socket. */
const FETCH_HIGH_WATER = 1024 * 1024
/** Stored messages read back at a time for a session, at most (and about this many bytes). */
const FETCH_BATCH = 64
const FETCH_BATCH_BYTES = 1024 * 1024

/**
 * Stored messages read back for a session (its `fetch`), at the pace its socket drains:
 * a batch at a time (about 1 MiB), the next one only when fewer than `FETCH_HIGH_WATER`
 * bytes wait in the socket. A resumed backlog of any size costs a batch of memory, and the
 * client is never cut off as a slow consumer by its own resend.
 */
export class BacklogPump {
  constructor(
    private readonly store: MqttStoreService,
    private readonly driver: PacingDriver
  ) {}

  /** The session asked for these stored messages. */
  fetch(c: MqttConnection, refs: ReadonlyArray<number>): void {
    for (const ref of refs) c.toFetch.push(ref)
    this.pump(c)
  }

  /** Its output reached the socket: a fetch that waited for that goes on if the socket took it. */
  written(c: MqttConnection, queued: number): void {
    if (c.waitingDrain && queued <= FETCH_HIGH_WATER) {
      c.waitingDrain = false
      this.pump(c)
    }
  }

  /** The socket drained: a fetch that waited for it goes on. */
  drained(c: MqttConnection): void {
    if (!c.waitingDrain) return
    c.waitingDrain = false
    this.pump(c)
  }

  private pump(c: MqttConnection): void {
    if (c.fetchBusy || c.closed || c.toFetch.length === 0) return
    // What the last batch made is still to be written (this turn's output, or output waiting
    // for a commit), or is in the socket above the mark: the next batch waits. A write of the
    // output (writeBufs) or the socket's drain takes it up again. A hold with no output (a
    // record written this turn, nothing to say) is no reason to wait: no write would end the
    // wait (found by the simulator with MQTT 5.0 devices: a small Receive Maximum refilled
    // from the store right after a PUBCOMP stalled for good).
    if (c.out.length > 0 || c.awaiting > 0 || c.conn.writableLength() > FETCH_HIGH_WATER) {
      c.waitingDrain = true
      return
    }
    const store = this.store.ready(c.account.name)
    const batch: number[] = []
    let bytes = 0
    while (c.toFetch.length > 0 && batch.length < FETCH_BATCH && bytes < FETCH_BATCH_BYTES) {
      const seq = c.toFetch.shift()!
      batch.push(seq)
      bytes += store?.sizeOf(seq) ?? 0
    }
    if (store === undefined) {
      return this.driver.input(c, { type: "fetched", messages: batch.map((ref) => ({ ref, payload: undefined })) })
    }
    c.fetchBusy = true
    store.loadMessages(batch).then((loaded) => {
      c.fetchBusy = false
      if (c.closed) return
      // The buffers read are the payloads (their own memory, freed once acknowledged).
      const v5 = c.session.protocolVersion === 5
      const messages = batch.map((ref, i) => {
        const m = loaded[i]
        if (m === undefined) return { ref, payload: undefined }
        return m.props === undefined || !v5 ? { ref, payload: m.payload, qos: m.qos } : { ref, payload: m.payload, qos: m.qos, ...storedProperties(m.props) }
      })
      const resending = c.session.resendPending
      const before = c.out.length
      this.driver.input(c, { type: "fetched", messages })
      // The resumed session's resend waited for these payloads and went out now: allowed
      // over max_pending as one from memory is (see the bridge's sessionReady).
      if (resending && !c.session.resendPending) c.pendingAllowance += Math.max(0, c.out.length - before)
      this.pump(c)
    })
  }
}
