// One stream at run time: its capture subscriptions, the publishes (what the pure
// rules of core/stream/publish.ts decide — dedup, expected-* headers, rollups —
// applied, with the account's limits), its consumers, and the PubAcks, which are sent only
// once a `sync()` covering the message completed (one sync serves every publish that
// arrived while the previous one ran: the GroupCommit service's rounds) — or, with a
// `sync_interval`, once a `flush()` handed it to the OS (the subsystem then fsyncs on a timer).
import { Cause, Effect, Exit, Option } from "effect"
import type { PubAck } from "../../core/jetstream/api-schema.js"
import { type ApiError, JsErr, publishRefused } from "../../core/jetstream/errors.js"
import { Hdr, parseHeaders, readPublishHeaders } from "../../core/jetstream/headers.js"
import { NANOS_PER_MS, type StreamConfig } from "../../core/jetstream/stream-config.js"
import {
  decidePublish,
  makePublishState,
  published,
  type PublishDecision,
  type PublishState,
  type PublishView,
  restoreMsgIds,
  unpublished
} from "../../core/stream/publish.js"
import type { Group } from "../../services/group-commit.js"
import { type StoreError, storeError, type StreamStore } from "../../services/store.js"
import type { Delivery, Subscription } from "../../engine/principal.js"
import type { ConsumerStream } from "./consumer.js"
import { StreamConsumers } from "./consumers.js"
import { answerDirectGet } from "./direct-get.js"
import type { StreamHost } from "./host.js"

interface PendingAck {
  readonly reply: string
  /** The PubAck's JSON. */
  readonly body: string
  /** The sequence it acknowledges (0: none, e.g. an error answered at once). */
  readonly seq: number
  readonly msgId: string
  readonly duplicate: boolean
}

export class JsStream implements ConsumerStream {
  /** The stream's consumers: it tells them of new and removed messages. */
  readonly consumers: StreamConsumers = new StreamConsumers(this)
  private subs: Subscription[] = []
  private directSubs: Subscription[] = []
  /** The message ids within the duplicate window, and the last one stored. */
  private readonly ids: PublishState = makePublishState()
  /** What the publish rules read of the store. */
  private readonly view: PublishView = {
    outOfSpace: () => this.store.outOfSpace(),
    lastSeq: () => this.store.state().last_seq,
    lastSeqOf: (subject) => this.store.subjectsState(subject).get(subject)?.last ?? 0
  }
  /** PubAcks waiting for the round that makes their messages durable (group commit). */
  private readonly acks: Group<PendingAck>
  closed = false

  constructor(
    readonly host: StreamHost,
    public config: StreamConfig,
    readonly created: number,
    readonly store: StreamStore
  ) {
    this.acks = host.groupCommit.group<PendingAck, StoreError>({
      commit: () => this.commit(),
      settle: (batch, outcome) => this.settle(batch, outcome),
      // Nothing pending any more: no later ack can be a duplicate of a refused message.
      idle: () => this.refused.clear()
    })
  }

  get name(): string {
    return this.config.name
  }

  /** A PubAck's JSON up to its sequence (the stream's name never changes). */
  private get ackPrefix(): string {
    const domain = this.host.domain === undefined ? "" : `"domain":${JSON.stringify(this.host.domain)},`
    return (this.ackPrefixJson ??= `{"stream":${JSON.stringify(this.name)},${domain}"seq":`)
  }
  private ackPrefixJson: string | undefined

  /** (Re)install the capture and direct-get subscriptions for the current config. */
  subscribe(): void {
    this.unsubscribe()
    const { server, principal } = this.host
    const router = server.router
    // One handler for every subject (a stream may have tens of thousands of them).
    const capture = (d: Delivery): void => this.capture(d)
    for (const subject of this.config.subjects) this.subs.push(router.subscribe(principal, subject, undefined, capture))
    if (this.config.allow_direct)
      for (const subject of [`$JS.API.DIRECT.GET.${this.name}`, `$JS.API.DIRECT.GET.${this.name}.>`])
        this.directSubs.push(router.subscribe(this.host.api, subject, "_sys_", (d) => answerDirectGet(this.host, this.name, this.store, d)))
  }

  unsubscribe(): void {
    for (const s of [...this.subs, ...this.directSubs]) s.principal.removeSub(s)
    this.subs = []
    this.directSubs = []
  }

  /**
   * After a restart: the message ids stored within the duplicate window, newest last,
   * so a publisher retrying across the restart is still de-duplicated.
   */
  restoreDedup(now: number): Effect.Effect<void> {
    const since = now - this.config.duplicate_window / NANOS_PER_MS
    const found: Array<{ msgId: string; seq: number; ts: number }> = []
    const self = this
    return Effect.gen(function*() {
      const st = self.store.state()
      for (let seq = st.last_seq; seq >= st.first_seq && seq > 0; seq--) {
        const m = yield* Effect.either(self.store.load(seq))
        if (m._tag === "Left") continue
        if (m.right.ts < since) break
        const hdrs = m.right.headers
        if (hdrs === undefined || hdrs.length === 0) continue
        const id = parseHeaders(hdrs, 0, hdrs.length).get(Hdr.msgId)
        if (id !== undefined && id !== "") found.push({ msgId: id, seq, ts: m.right.ts })
      }
      restoreMsgIds(self.ids, found)
    })
  }

  /** Every publish: the stream's rules decide (core/stream/publish.ts), this applies the decision. */
  private capture(d: Delivery): void {
    if (this.closed) return
    const { subject, reply, hdrLen, buf, start, end } = d
    const now = this.host.server.now()
    const headers = hdrLen > 0 ? buf.subarray(start, start + hdrLen) : undefined
    const payload = buf.subarray(start + Math.max(0, hdrLen), end)
    const h = headers !== undefined ? readPublishHeaders(buf, start, start + hdrLen) : undefined
    const decision = decidePublish(this.ids, this.config, this.view, subject, h, now)
    switch (decision.type) {
      case "store":
        return this.keep(subject, reply, headers, payload, decision, now)
      case "duplicate":
        return this.ack(reply, { stream: this.name, seq: decision.seq, duplicate: true }, decision.msgId)
      case "noSpace":
        // The disk is full: refused before anything is stored, and a probe looks for space again.
        this.probeSpace()
        return this.fail(reply, JsErr.insufficientResources)
      default:
        return this.fail(reply, publishRefused(decision))
    }
  }

  /** A publish the rules let through: the account's limits, interest retention, then the store. */
  private keep(
    subject: string,
    reply: string,
    headers: Buffer | undefined,
    payload: Buffer,
    { msgId, rollup, ttl }: Extract<PublishDecision, { readonly type: "store" }>,
    now: number
  ): void {
    const size = (headers?.length ?? 0) + payload.length + subject.length
    const over = this.host.admit(this.config.storage, size)
    if (over !== undefined) return this.fail(reply, over)
    if (this.config.retention === "interest" && !this.consumers.wantsNext(subject)) return this.skip(reply, msgId, size - subject.length, now)
    // Refusable when someone awaits the answer: should its sync fail, the publisher hears
    // "refused" and the store takes the message back out rather than write it later.
    const r = this.store.storeSync(subject, headers, payload, now, reply !== "", ttl)
    if (typeof r !== "number") return this.fail(reply, storeFailure(r))
    if (rollup !== undefined) Effect.runSync(Effect.ignore(this.store.purge(rollup)))
    this.consumers.notify(rollup !== undefined)
    published(this.ids, msgId, r, now)
    this.ack(reply, { stream: this.name, seq: r }, msgId)
  }

  /**
   * Interest retention with no consumer to hold it: the message takes its sequence
   * and is answered like any other, but is not kept (nats-server does the same).
   */
  private skip(reply: string, msgId: string, contentLen: number, now: number): void {
    if (this.config.max_msg_size > 0 && contentLen > this.config.max_msg_size) return this.fail(reply, JsErr.messageExceedsMaximum)
    const r = this.store.skipSync(now)
    if (typeof r !== "number") return this.fail(reply, storeFailure(r))
    published(this.ids, msgId, r, now)
    this.ack(reply, { stream: this.name, seq: r }, msgId)
  }

  private fail(reply: string, error: ApiError): void {
    if (reply === "") return
    const body: PubAck = { error, stream: this.name, ...(this.host.domain === undefined ? {} : { domain: this.host.domain }), seq: 0 }
    this.send(reply, Buffer.from(JSON.stringify(body)))
  }

  private ack(reply: string, body: PubAck, msgId = ""): void {
    if (reply === "") return
    // The usual PubAck, `{"stream":…,"seq":n}`, without a JSON.stringify per message.
    const json = body.duplicate === undefined && body.error === undefined ? `${this.ackPrefix}${body.seq}}` : JSON.stringify(body)
    this.acks.join({ reply, body: json, seq: body.seq, msgId, duplicate: body.duplicate === true })
  }

  /** The round PubAcks wait for: one sync (or flush, with a `sync_interval`) covering every message they acknowledge. */
  private commit(): Effect.Effect<void, StoreError> {
    return this.host.syncAlways ? this.store.sync() : this.store.flush()
  }

  /**
   * After a round: each PubAck of the batch goes out, or its publisher is refused. A
   * failed write refuses the batch: the store has taken its messages back out (see
   * `storeSync`'s `refusable`). A message a failed round took back while its ack waited
   * here is refused too, even when the batch's own sync succeeded.
   */
  private settle(batch: ReadonlyArray<PendingAck>, outcome: Exit.Exit<void, StoreError>): void {
    const failed = Exit.isSuccess(outcome)
      ? undefined
      : Option.getOrElse(Cause.failureOption(outcome.cause), () => storeError("Io", Cause.pretty(outcome.cause)))
    // A failed sync refuses what it took back; what an earlier round wrote stays, and is acknowledged.
    const kept = this.host.syncAlways ? this.store.durableSeq() : this.store.writtenSeq()
    let refusedAny = false
    for (const a of batch) if (!a.duplicate && a.seq > 0 && this.store.takeRefused(a.seq)) this.refused.add(a.seq)
    for (const a of batch) {
      // A duplicate of a refused message is refused with it.
      if (!this.refused.has(a.seq) && (failed === undefined || a.seq <= kept)) {
        this.send(a.reply, Buffer.from(a.body))
        continue
      }
      refusedAny = true
      unpublished(this.ids, a.msgId, a.seq)
      const noSpace = failed === undefined ? this.store.outOfSpace() : failed.reason === "NoSpace"
      const error = noSpace ? JsErr.insufficientResources : JsErr.streamStoreFailed(failed?.message ?? "the write failed")
      this.send(a.reply, Buffer.from(JSON.stringify({ error, stream: this.name, seq: 0 })))
    }
    if (refusedAny) this.consumers.notify(true)
    if (failed === undefined || failed.reason === "NoSpace") this.spaceSeen(failed === undefined)
  }

  /** Refused sequences while acks are pending (their duplicates, acknowledged later, are refused too). */
  private readonly refused = new Set<number>()

  private probing = false
  /** When the last probe for space started (ms). */
  private lastProbeAt = 0
  /**
   * How long between probes: a probe's few bytes may fit where messages do not, and
   * then the publishes it lets through fail again, so each time that happens the wait
   * doubles (up to a minute); a stored message brings it back to a second.
   */
  private probeEveryMs = PROBE_MIN_MS
  private probed = false

  /**
   * While the disk is full, a write attempt now and then (a publish or the subsystem's
   * timer asks); publishes meanwhile are refused without storing anything.
   */
  probeSpace(): void {
    const now = this.host.server.now()
    if (this.probing || now - this.lastProbeAt < this.probeEveryMs) return
    this.probing = true
    this.lastProbeAt = now
    Effect.runPromise(Effect.either(this.store.probe())).then((r) => {
      this.probing = false
      this.probed = r._tag === "Right"
      this.wakeForProbe()
    })
  }

  /** When the next probe is due (undefined while there is space). */
  nextProbeAt(): number | undefined {
    return this.store.outOfSpace() ? this.lastProbeAt + this.probeEveryMs : undefined
  }

  /** The subsystem's timer wakes for the next probe (it runs only when something is due). */
  private wakeForProbe(): void {
    const at = this.nextProbeAt()
    if (at !== undefined) this.host.wakeAt(at)
  }

  /** A batch of publishes was written (true) or refused for want of space (false). */
  private spaceSeen(written: boolean): void {
    if (written) this.probeEveryMs = PROBE_MIN_MS
    else if (this.probed) this.probeEveryMs = Math.min(PROBE_MAX_MS, this.probeEveryMs * 2)
    this.probed = false
    this.wakeForProbe()
  }

  private send(reply: string, body: Buffer): void {
    this.host.server.router.publish(this.host.principal, reply, "", undefined, body)
  }
}

const PROBE_MIN_MS = 1_000
const PROBE_MAX_MS = 60_000

export const storeFailure = (e: StoreError): ApiError =>
  e.reason === "MaxMsgSize" ? JsErr.messageExceedsMaximum : JsErr.streamStoreFailed(e.message)
