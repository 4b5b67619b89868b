// One consumer at run time: the pure ConsumerMachine wired to its stream's store and
// to clients. It subscribes its ack, pull-request and flow-control subjects, runs the
// machine's actions (deliveries, status messages, retention removals), wakes it at
// `nextDeadline()`, and saves its snapshot in the stream's meta (coalesced).
import { Effect } from "effect"
import {
  ackReplySubject,
  type ConsumerAction,
  type ConsumerConfig,
  type ConsumerInput,
  ConsumerMachine,
  type ConsumerSnapshot,
  isPushConfig,
  parseAckReply,
  type PullRequest,
  type StoredMsgMeta,
  type StreamView
} from "../../core/consumer/index.js"
import { statusHeaderBlock } from "../../core/nats/encode.js"
import type { StreamConfig } from "../../core/jetstream/stream-config.js"
import type { StoreError, StoredMsg, StreamStore } from "../../services/store.js"
import type { Subscription } from "../../engine/principal.js"
import type { StreamHost } from "./host.js"
import { releaseUnheld } from "./interest.js"

/** Meta keys of a stream's consumers: `jetstream.consumer.<name>`. */
export const CONSUMER_META_PREFIX = "jetstream.consumer."

/** What is saved per consumer: its config and creation time, and the machine's snapshot. */
export interface StoredConsumer {
  readonly name: string
  readonly created: number
  readonly config: ConsumerConfig
  readonly state?: ConsumerSnapshot
}

/** What a consumer needs of its stream (the stream holds its consumers: see consumers.ts). */
export interface ConsumerStream {
  readonly name: string
  readonly host: StreamHost
  readonly store: StreamStore
  readonly config: StreamConfig
  readonly closed: boolean
  readonly consumers: ConsumerSet
}

/** A stream's consumers, as one of them sees them. */
export interface ConsumerSet {
  /** Every registered consumer (this one too, until it is removed). */
  values(): Iterable<JsConsumer>
  /** Forget a consumer and let go of what only it held. */
  remove(c: JsConsumer): Promise<void>
}

const metaOf = (m: StoredMsg): StoredMsgMeta => ({
  seq: m.seq,
  subject: m.subject,
  timestampMs: m.ts,
  size: m.subject.length + (m.headers?.length ?? 0) + m.payload.length
})

/**
 * The machine's synchronous view of a stream store, answered from the store's index
 * and the blocks in memory: it never waits for (or starts) a disk read. A message
 * only on disk is sized by the index (its stored size) until delivery loads it.
 */
export const storeView = (store: StreamStore): StreamView => ({
  get firstSeq() {
    return store.state().first_seq
  },
  get lastSeq() {
    return store.state().last_seq
  },
  loadNextMatching(filters, fromSeq) {
    const e = store.nextMatchingEntry(filters, fromSeq)
    if (e === undefined) return undefined
    const m = store.loadCached(e.seq)
    return m !== undefined ? metaOf(m) : { seq: e.seq, subject: e.subject, timestampMs: e.ts, size: e.size }
  },
  numPending: (filters, fromSeq) => store.numPending(filters, fromSeq),
  lastPerSubject(filters) {
    const seqs = new Set<number>()
    for (const f of filters.length === 0 ? [">"] : filters) for (const ss of store.subjectsState(f).values()) seqs.add(ss.last)
    return [...seqs].sort((a, b) => a - b)
  },
  seqAtOrAfterTime(ms) {
    let seq = store.state().first_seq
    for (;;) {
      const e = store.nextMatchingEntry([], seq)
      if (e === undefined) return store.state().last_seq + 1
      if (e.ts >= ms) return e.seq
      seq = e.seq + 1
    }
  }
})

const EMPTY = Buffer.alloc(0)

/** Pull request bodies: JSON, a bare batch size, or empty (one message). */
export const parsePullRequest = (body: string): PullRequest => {
  const t = body.trim()
  if (t === "") return { batch: 1 }
  if (/^\d+$/.test(t)) return { batch: Number(t) }
  try {
    const j = JSON.parse(t) as unknown
    return typeof j === "object" && j !== null ? (j as PullRequest) : { batch: 1 }
  } catch {
    return { batch: 1 }
  }
}

/** With `headers_only`: the message's headers plus `Nats-Msg-Size`, no payload. */
const headersOnly = (headers: Uint8Array | undefined, size: number): Buffer => {
  const base = headers !== undefined && headers.length > 4 ? Buffer.from(headers).toString("latin1") : "NATS/1.0\r\n\r\n"
  return Buffer.from(`${base.slice(0, base.length - 2)}Nats-Msg-Size: ${size}\r\n\r\n`, "latin1")
}

const toBuffer = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.length)

export class JsConsumer {
  private subs: Subscription[] = []
  private interest = false
  /** Counted among the push consumers whose deliver subject's interest is watched. */
  private watching = false
  private stepping = false
  private readonly inbox: ConsumerInput[] = []
  /** Deliveries waiting for a store read, kept in order. */
  private outChain: Promise<void> | undefined
  /** Sequences whose delivery waits for a store read (count per sequence): still held. */
  private readonly loading = new Map<number, number>()
  private persistQueued = false
  private writes: Promise<unknown> = Promise.resolve()
  closed = false

  constructor(
    readonly stream: ConsumerStream,
    readonly name: string,
    readonly created: number,
    public machine: ConsumerMachine
  ) {}

  static make(stream: ConsumerStream, stored: StoredConsumer, now: number): JsConsumer {
    const opts = { stream: stream.name, name: stored.name, config: stored.config, view: storeView(stream.store) }
    const m = stored.state === undefined ? ConsumerMachine.create(opts, now) : ConsumerMachine.restore(opts, stored.state, now)
    return new JsConsumer(stream, stored.name, stored.created, m)
  }

  get config(): ConsumerConfig {
    return this.machine.config
  }

  get isPush(): boolean {
    return isPushConfig(this.machine.config)
  }

  get pushBound(): boolean {
    return this.interest
  }

  private get server() {
    return this.stream.host.server
  }

  /** Subscribe the consumer's subjects and start it. */
  start(): void {
    const { server, principal } = this.stream.host
    const router = server.router
    const base = `${this.stream.name}.${this.name}`
    this.subs.push(
      router.subscribe(principal, `$JS.ACK.${base}.>`, undefined, (d) => {
        const ref = parseAckReply(d.subject)
        if (ref === undefined) return
        const payload = d.buf.subarray(d.payloadStart, d.end)
        const reply = d.reply
        this.input({ type: "ack", ack: { streamSeq: ref.streamSeq, consumerSeq: ref.consumerSeq, deliveryCount: ref.deliveryCount }, payload, ...(reply !== "" ? { reply } : {}) })
      })
    )
    if (this.isPush) {
      this.subs.push(router.subscribe(principal, `$JS.FC.${base}.*`, undefined, (d) => this.input({ type: "flowControlReply", subject: d.subject })))
      this.stream.host.watchInterest(1)
      this.watching = true
      this.checkInterest()
    } else {
      this.subs.push(
        router.subscribe(this.stream.host.api, `$JS.API.CONSUMER.MSG.NEXT.${base}`, undefined, (d) => {
          if (d.reply === "") return
          this.input({ type: "pull", request: parsePullRequest(d.buf.toString("utf8", d.payloadStart, d.end)), reply: d.reply })
        })
      )
    }
    // A first step starts the timers (inactive_threshold even if nobody ever comes).
    this.input({ type: "tick" })
  }

  /**
   * Driven by the subsystem's timer (Effect's Clock, so TestClock in tests), which runs
   * when a deadline is due or a subscription came or went: run the machine's deadlines
   * (ack_wait, pull expiry, heartbeats, inactivity) once they are due, and for push
   * consumers notice subscribers appearing on or leaving `deliver_subject`. Returns the
   * machine's next deadline.
   */
  tick(now: number): number | undefined {
    if (this.stopIfStreamClosed()) return undefined
    if (this.isPush) this.checkInterest()
    const at = this.machine.nextDeadline()
    if (at !== undefined && at <= now) this.input({ type: "tick" })
    return this.closed ? undefined : this.machine.nextDeadline()
  }

  /**
   * Push consumers have no event for a subscription on `deliver_subject`: look at the
   * Sublist, and with a JetStream domain at the other servers' interest too (their
   * subscribers are served across routes and leaf connections).
   */
  private checkInterest(): void {
    if (this.stopIfStreamClosed()) return
    const subject = this.machine.config.deliver_subject!
    const account = this.stream.host.principal.account
    const server = this.server
    const active =
      account.sublist.hasInterest(subject) ||
      (this.stream.host.domain !== undefined &&
        (server.cluster?.interest.hasInterest(account.name, subject) === true || server.leafnodes?.interest.hasInterest(account.name, subject) === true))
    if (active !== this.interest) {
      this.interest = active
      this.input({ type: "interest", active })
    }
  }

  private stopIfStreamClosed(): boolean {
    if (this.stream.closed && !this.closed) this.stop()
    return this.closed
  }

  /** Feed the machine; inputs arriving while it runs (a delivery routed back to us) queue behind. */
  input(i: ConsumerInput): void {
    if (this.stopIfStreamClosed()) return
    this.inbox.push(i)
    if (this.stepping) return
    this.stepping = true
    try {
      while (this.inbox.length > 0 && !this.closed) {
        const next = this.inbox.shift()!
        this.run(this.machine.step(next, this.server.now()))
      }
    } finally {
      this.stepping = false
    }
    // What the step armed (an ack wait, a pull request's expiry, a heartbeat) wakes the timer.
    const at = this.closed ? undefined : this.machine.nextDeadline()
    if (at !== undefined) this.stream.host.wakeAt(at)
  }



  private run(actions: ReadonlyArray<ConsumerAction>): void {
    for (const a of actions) {
      switch (a.type) {
        case "deliver":
          this.deliver(a)
          break
        case "status": {
          const subject = a.target.kind === "pull" ? a.target.reply : a.target.subject
          this.publish(subject, a.reply ?? "", statusHeaderBlock(a.code, a.description, Object.entries(a.headers)), EMPTY)
          break
        }
        case "acked":
          this.retire(a.seqs)
          break
        case "released":
          if (this.stream.config.retention === "interest") this.release(a.seqs)
          break
        case "ackAck":
          this.publish(a.reply, "", undefined, EMPTY)
          break
        case "persist":
          this.persistSoon()
          break
        case "advisory":
          this.advise(a)
          break
        case "terminate":
          // Inactive past its threshold: it removes itself.
          void this.stream.consumers.remove(this)
          break
      }
    }
  }

  /**
   * Retention on acks: a workqueue stream drops what its consumer acked; an interest
   * stream drops what no consumer holds any more (see interest.ts).
   */
  private retire(seqs: ReadonlyArray<number>): void {
    const retention = this.stream.config.retention
    if (retention === "workqueue") {
      for (const seq of seqs) Effect.runSync(Effect.ignore(this.stream.store.remove(seq)))
    } else if (retention === "interest") {
      this.release(seqs)
    }
  }

  /** Interest retention: remove each of `seqs` that no consumer of the stream holds. */
  private release(seqs: ReadonlyArray<number>): void {
    // Stopped (shutdown, replaced) is not gone: only a live consumer lets messages go.
    if (this.closed || this.stream.closed) return
    releaseUnheld(this.stream.store, [...this.stream.consumers.values()], seqs)
  }

  /** Whether this consumer keeps message `seq` on `subject` in an interest stream. */
  holds(seq: number, subject: string): boolean {
    return this.machine.holds(seq, subject) || this.loading.has(seq)
  }

  private advise(a: Extract<ConsumerAction, { type: "advisory" }>): void {
    const now = this.server.now()
    const base = {
      id: this.server.randomId(11),
      timestamp: new Date(now).toISOString(),
      stream: this.stream.name,
      consumer: this.name,
      stream_seq: a.streamSeq,
      deliveries: a.deliveries
    }
    const [kind, body] =
      a.kind === "max_deliveries"
        ? ["MAX_DELIVERIES", { type: "io.nats.jetstream.advisory.v1.max_deliver", ...base }]
        : ["MSG_TERMINATED", { type: "io.nats.jetstream.advisory.v1.terminated", ...base, ...(a.reason ? { reason: a.reason } : {}) }]
    this.publish(`$JS.EVENT.ADVISORY.CONSUMER.${kind}.${this.stream.name}.${this.name}`, "", undefined, Buffer.from(JSON.stringify(body)))
  }

  private publish(subject: string, reply: string, headers: Buffer | undefined, payload: Buffer): void {
    this.server.router.publish(this.stream.host.principal, subject, reply, headers, payload)
  }

  /**
   * A stored message goes to the subscribers of `to` (the pull request's reply or the
   * deliver subject) but shows its own subject, as nats-server delivers it; clients
   * tell messages from status replies by that difference.
   */
  private deliverAs(to: string, subject: string, reply: string, headers: Buffer | undefined, payload: Buffer): void {
    const router = this.server.router
    router.deliverTo(to, router.compose(this.stream.host.principal, subject, reply, headers, payload))
  }

  private deliver(a: Extract<ConsumerAction, { type: "deliver" }>): void {
    const send = (m: StoredMsg | undefined) => {
      if (m === undefined || this.closed) return
      const reply = ackReplySubject({
        stream: this.stream.name,
        consumer: this.name,
        deliveryCount: a.deliveryCount,
        streamSeq: a.seq,
        consumerSeq: a.consumerSeq,
        timestampMs: m.ts,
        pending: a.pending
      })
      const to = a.target.kind === "pull" ? a.target.reply : a.target.subject
      if (this.machine.config.headers_only) this.deliverAs(to, m.subject, reply, headersOnly(m.headers, m.payload.length), EMPTY)
      else this.deliverAs(to, m.subject, reply, m.headers !== undefined && m.headers.length > 0 ? toBuffer(m.headers) : undefined, toBuffer(m.payload))
    }
    const interest = this.stream.config.retention === "interest"
    const store = this.stream.store
    if (this.outChain === undefined) {
      const m = store.loadCached(a.seq)
      if (m !== undefined) {
        send(m)
        // Ack policy none: delivered is acknowledged.
        if (interest && this.machine.config.ack_policy === "none") this.release([a.seq])
        return
      }
    }
    // Held while it loads; once sent, look again (an ack may have come meanwhile).
    // Loads run one after another, so a replay reads each block once (see the file store).
    this.loading.set(a.seq, (this.loading.get(a.seq) ?? 0) + 1)
    const chain: Promise<void> = (this.outChain ?? Promise.resolve())
      .then(() => store.loadCached(a.seq) ?? Effect.runPromise(Effect.option(store.load(a.seq))).then((m) => (m._tag === "Some" ? m.value : undefined)))
      .then(send)
      .finally(() => {
        const n = this.loading.get(a.seq) ?? 1
        if (n > 1) this.loading.set(a.seq, n - 1)
        else this.loading.delete(a.seq)
        if (interest) this.release([a.seq])
        if (this.outChain === chain) this.outChain = undefined
      })
    this.outChain = chain
  }

  /** What is saved: config and the machine's durable state. */
  stored(): StoredConsumer {
    return { name: this.name, created: this.created, config: this.machine.config, state: this.machine.snapshot() }
  }

  /**
   * At most one save waits behind the one in flight, and it snapshots when it starts:
   * however fast acks come, writes never queue up.
   */
  private persistSoon(): void {
    if (this.persistQueued) return
    this.persistQueued = true
    this.writes = this.writes
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => {
        this.persistQueued = false
        return this.closed ? undefined : this.write()
      })
  }

  /** Writes the saved state; a failure is logged (the next save tries again) and returned. */
  private write(): Promise<StoreError | undefined> {
    const body = Buffer.from(JSON.stringify(this.stored()))
    return Effect.runPromise(Effect.either(this.stream.store.writeMeta(CONSUMER_META_PREFIX + this.name, body))).then((r) => {
      if (r._tag === "Right") return undefined
      this.server.log.error(`JetStream consumer '${this.stream.name} > ${this.name}': state not saved: ${r.left.message}`)
      return r.left
    })
  }

  /** Write the current state after the writes before it; resolves to the error when it could not be saved. */
  save(): Promise<StoreError | undefined> {
    const w = this.writes.then(() => this.write())
    this.writes = w.then(() => undefined)
    return w
  }

  /** Stop timers and subscriptions (server shutdown, stream deleted, consumer replaced). */
  stop(): void {
    this.closed = true
    if (this.watching) this.stream.host.watchInterest(-1)
    this.watching = false
    for (const s of this.subs) s.principal.removeSub(s)
    this.subs = []
  }

  /** Delete: 409 to waiting pull requests, stop, and forget the saved state. */
  remove(): Promise<void> {
    if (!this.closed) this.run(this.machine.step({ type: "delete" }, this.server.now()))
    this.stop()
    const store = this.stream.store
    const w = this.writes.then(() => Effect.runPromise(Effect.ignore(store.deleteMeta(CONSUMER_META_PREFIX + this.name))))
    this.writes = w
    return w
  }
}
