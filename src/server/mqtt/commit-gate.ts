// The MQTT output path gated by commits: nothing a client is told may depend on a write
// that a crash could still take back. With a durable store, output written this turn
// that depends on this turn's writes (a QoS 2 packet id handed out, a QoS 2 exchange or
// subscription recorded, a session resumed or discarded) is held at the Outbound's flush
// and written after the one commit that follows it; acknowledgements of publishes whose
// copies were stored wait for the same commit; a QoS 2 PUBLISH (with its de-duplication
// record and stored copy) is forwarded only after it, and what its publisher sent next
// waits behind it. A persistent session's record is rewritten before held output (`now`)
// or soon after a change that may wait (`lazy`, acknowledgements of a burst share one write).
import type { QoS, SessionInput } from "../../core/mqtt/index.js"
import { ReasonCode } from "../../core/mqtt/v5/reason.js"
import type { Server } from "../server.js"
import type { MqttConnection } from "./connection.js"
import type { MqttAccountStore, MqttStoreService } from "./store.js"

/**
 * How long a persistent session's stale record (acknowledged QoS 1 messages) may wait
 * before it is rewritten: acks of a burst share one write.
 */
export const LAZY_RECORD_MS = 250

/** In `confirms`, a packet id's bit 16: the message matched no subscriber. */
const UNMATCHED = 0x10000

/** What the gate has the connection driver do once a commit is done. */
export interface GateDriver {
  /** Feed a session an input (a publish confirmed, a connection lost) and carry out its actions. */
  input(c: MqttConnection, input: SessionInput, now?: number): void
  /** Route a publish through the engine; how many received it (0: MQTT 5.0's No matching subscribers). */
  route(c: MqttConnection, subject: string, buf: Buffer, qos: QoS, ref: number | undefined, now: number, extra?: RouteExtra): number
  /** Ask the shell's alarm to run the bridge's tick by then. */
  wakeAt(at: number): void
}

/**
 * An inbound message waiting for a commit before it is forwarded: a QoS 2 message, for
 * its de-duplication record, or any message its publisher sent after one.
 */
interface Deferred {
  readonly c: MqttConnection
  readonly subject: string
  readonly buf: Buffer
  readonly qos: QoS
  readonly ref: number | undefined
  readonly confirm: number | undefined
  readonly extra: RouteExtra | undefined
}

/** What an MQTT 5.0 PUBLISH adds on the NATS side: a reply subject and a header block. */
export interface RouteExtra {
  readonly reply: string | undefined
  readonly hdr: Buffer | undefined
  /** Published with RETAIN (for MQTT 5.0 subscribers with Retain As Published). */
  readonly retain?: boolean | undefined
}

export class MqttCommitGate {
  /** Connection, packet id pairs (flat) of publishes to confirm once this turn's writes are durable. */
  private confirms: Array<MqttConnection | number> = []
  /** Publishes to forward and acknowledge once this turn's writes are durable (see Deferred). */
  private deferred: Array<Deferred> = []
  /** Output held this turn for the commit that follows the flush (see `holdsOutput`). */
  private awaiting: Array<readonly [MqttConnection, Array<Buffer>]> | undefined = undefined
  /** Something was stored this turn that nothing else waits for (a message from another server): commit after the flush. */
  private written = false
  private readonly flushedFn = () => this.flushed()

  constructor(
    private readonly server: Server,
    private readonly store: MqttStoreService,
    private readonly driver: GateDriver
  ) {}

  /** The account's store, once open (every connection's is, from `sessionReady` on). */
  storeOf(account: string): MqttAccountStore | undefined {
    return this.store.ready(account)
  }

  /** Where a persistent session's state is kept (undefined for a clean session: nothing of it outlives the connection). */
  persisted(c: MqttConnection): MqttAccountStore | undefined {
    return c.session.cleanSession ? undefined : this.storeOf(c.account.name)
  }

  /** Where a persistent session's record is kept current for a restart (a durable store's). */
  recorded(c: MqttConnection): MqttAccountStore | undefined {
    const store = this.persisted(c)
    return store !== undefined && store.durable ? store : undefined
  }

  /** This turn's output of `c` depends on what was written to `store` this turn: it waits for the commit (when there is one to wait for). */
  hold(c: MqttConnection, store: MqttAccountStore): void {
    if (store.durable) c.held = true
    this.markDirty(c)
  }

  /** `c` has output this turn: the Outbound writes (or holds) it, then the gate commits what waits for that. */
  markDirty(c: MqttConnection): void {
    if (c.dirty) return
    this.server.outbound.markDirty(c)
    this.scheduleFlush()
  }

  /** The end of this turn's flush has work: confirms, deferred publishes, held output. */
  private scheduleFlush(): void {
    this.server.outbound.afterFlush(this.flushedFn)
  }

  /** A PUBLISH goes out to `c`'s session: what its record must say first. */
  sending(c: MqttConnection, qos: number, dup: boolean): void {
    // A QoS 2 packet id handed out must be on disk first: after a restart the message
    // goes out again under the same id, which the client uses to drop the duplicate.
    if (qos === 2 && !dup && this.recorded(c) !== undefined) {
      c.recordDirty = "now"
      c.held = true
    } else if (qos === 1) this.markLazy(c)
  }

  /** A persistent session's record is stale in a way that may wait: it is rewritten by the next tick, soon. */
  markLazy(c: MqttConnection): void {
    if (c.recordDirty !== undefined || this.recorded(c) === undefined) return
    c.recordDirty = "lazy"
    this.driver.wakeAt(this.server.now() + LAZY_RECORD_MS)
  }

  writeRecord(c: MqttConnection): void {
    c.recordDirty = undefined
    const store = this.recorded(c)
    if (store !== undefined && !c.session.isClosed) store.writeSession(c.session.snapshot())
  }

  /**
   * A QoS 2 message (or one its publisher sent after such a message) is forwarded once the
   * commit that makes its de-duplication record (and its stored copy) durable is done,
   * and after its PUBREC: a crash before then leaves the publisher to resend, and the
   * resend is known as one. What the same client publishes after it waits behind it, so
   * its messages keep their order.
   */
  defer(c: MqttConnection, subject: string, buf: Buffer, qos: QoS, ref: number | undefined, confirm: number | undefined, extra?: RouteExtra): void {
    c.deferred++
    this.deferred.push({ c, subject, buf, qos, ref, confirm, extra })
    this.scheduleFlush()
  }

  /**
   * A routed message counts as accepted once what it depends on is durable: with a durable
   * store, the commit that follows this turn's flush (one for all of them) when anything
   * was written this turn; at once when nothing was (no persistent session wanted it, no
   * retained copy), or when the store is not durable. The session keeps the
   * acknowledgements in the order of the PUBLISHes.
   */
  confirm(c: MqttConnection, packetId: number, store: MqttAccountStore | undefined, ref: number | undefined, now: number, unmatched = false): void {
    if (store === undefined || !store.durable || (ref === undefined && !this.store.hasWrites())) {
      return this.driver.input(c, unmatched ? { type: "published", packetId, code: ReasonCode.NoMatchingSubscribers } : { type: "published", packetId }, now)
    }
    // Packet ids are below 2^16: the bit above says "no matching subscribers" without another slot.
    this.confirms.push(c, unmatched ? packetId | UNMATCHED : packetId)
    this.scheduleFlush()
  }

  /** A write nobody waits for (a message from another server stored for a session): the commit after this turn's flush covers it. */
  wrote(): void {
    this.written = true
    this.scheduleFlush()
  }

  // ---- the Outbound's flush: one write per connection per turn; output that depends on this turn's writes waits for their commit ----

  /** The flush reached `c`: its session record first when stale, then whether its output must wait for the commit. */
  holdsOutput(c: MqttConnection): boolean {
    if (c.recordDirty === "now") this.writeRecord(c)
    if (c.held || c.awaiting > 0) {
      c.held = false
      return true
    }
    c.held = false
    if (c.out.length > 0) {
      c.lastActivity = this.server.now()
      c.unannounced = false
    }
    return false
  }

  awaitCommit(c: MqttConnection, bufs: Array<Buffer>): void {
    ;(this.awaiting ??= []).push([c, bufs])
    c.awaiting++
  }

  /** After the flush: one commit for every write of this turn, then the output and acknowledgements that waited for it. */
  private flushed(): void {
    const batch = this.awaiting
    this.awaiting = undefined
    const written = this.written
    this.written = false
    if (batch === undefined && !written && this.confirms.length === 0 && this.deferred.length === 0 && !this.store.hasRemovals()) return
    const confirms = this.confirms
    this.confirms = []
    const deferred = this.deferred
    this.deferred = []
    this.store.commit((ok) => {
      if (batch !== undefined)
        for (const [c, bufs] of batch) {
          c.awaiting--
          if (c.closed) continue
          if (!ok) this.storeFailed(c)
          else {
            c.lastActivity = this.server.now()
            c.unannounced = false
            this.server.outbound.writeBufs(c, bufs)
          }
        }
      for (let i = 0; i < confirms.length; i += 2) {
        const c = confirms[i] as MqttConnection
        if (c.closed) continue
        const id = confirms[i + 1] as number
        if (!ok) this.storeFailed(c)
        else if ((id & UNMATCHED) === 0) this.driver.input(c, { type: "published", packetId: id })
        else this.driver.input(c, { type: "published", packetId: id & 0xffff, code: ReasonCode.NoMatchingSubscribers })
      }
      if (deferred.length > 0) this.routeDeferred(deferred, ok)
    })
  }

  /**
   * Messages held back until this commit, in the order they came: a QoS 2 one from a
   * 3.1.1 client is acknowledged (PUBREC) and then forwarded; the others (MQTT 5.0's
   * PUBREC carries 0x10 when nobody received the message) are forwarded and then
   * acknowledged (their stored copies are in this commit). They are forwarded even when
   * the commit failed or the publisher has gone: a QoS 2 message's de-duplication record
   * in memory (and perhaps on disk) says "received", so the publisher's resend would not
   * bring it again. A failed commit still cuts the publisher off, unacknowledged.
   */
  private routeDeferred(list: ReadonlyArray<Deferred>, ok: boolean): void {
    const now = this.server.now()
    for (const d of list) {
      const c = d.c
      c.deferred--
      // An MQTT 5.0 PUBREC tells whether anyone received the message (0x10): it follows the routing.
      const ackFirst = d.qos === 2 && c.session.protocolVersion !== 5
      if (ackFirst) this.confirmDeferred(c, d.confirm, ok, false)
      const receivers = this.driver.route(c, d.subject, d.buf, d.qos, d.ref, now, d.extra)
      if (!ackFirst) this.confirmDeferred(c, d.confirm, ok, receivers === 0)
    }
  }

  private confirmDeferred(c: MqttConnection, confirm: number | undefined, ok: boolean, unmatched: boolean): void {
    if (confirm === undefined || c.closed) return
    if (!ok) this.storeFailed(c)
    else if (unmatched) this.driver.input(c, { type: "published", packetId: confirm, code: ReasonCode.NoMatchingSubscribers })
    else this.driver.input(c, { type: "published", packetId: confirm })
  }

  /** The store could not make a write durable: the client is cut off and retries (nothing was confirmed). */
  storeFailed(c: MqttConnection): void {
    if (c.closed) return
    c.reasonOverride = "Store Failure"
    // What queued behind the failed write may acknowledge state that is not on disk
    // (PUBRECs of later QoS 2 publishes): the client hears nothing more and resends.
    c.out.clear()
    this.driver.input(c, { type: "connectionLost" })
  }
}
