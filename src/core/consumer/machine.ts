// One JetStream consumer as a sans-IO state machine: `step(input, now)` returns
// actions as data, `nextDeadline()` says when to `tick`. It reads its stream only
// through the synchronous `StreamView`; it never touches a clock, socket or disk.
import { type PullRequest, parseAckPayload } from "./ack.js"
import { type ConsumerConfig, NS_PER_MS, applyConsumerDefaults, consumerFilters, isPushConfig } from "./config.js"
import { subjectMatches } from "../stream/stream-index.js"
import type {
  AckRef,
  ConsumerAction,
  ConsumerInput,
  ConsumerSnapshot,
  ConsumerState,
  DeliveryTarget,
  SequenceInfo,
  StoredMsgMeta,
  StreamView
} from "./types.js"

/** A delivered, not yet acknowledged message. */
interface Pending {
  /** Consumer sequence of the first delivery (orders the ack floor). */
  readonly cseq: number
  /** Last delivery time. */
  ts: number
  /** Deliveries so far. */
  dc: number
  /** When it becomes due for redelivery (ack wait, backoff step or NAK delay). */
  deadline: number
  /** Waiting in the redelivery queue. */
  due: boolean
}

interface Waiting {
  readonly reply: string
  readonly batch: number
  readonly maxBytes: number
  readonly expiresAt: number | undefined
  readonly noWait: boolean
  readonly hbMs: number
  nextHb: number
  delivered: number
  bytes: number
}

type Candidate =
  | { readonly from: "redeliver"; readonly meta: StoredMsgMeta; readonly entry: Pending }
  | { readonly from: "lps"; readonly meta: StoredMsgMeta }
  | { readonly from: "new"; readonly meta: StoredMsgMeta }

export interface ConsumerOptions {
  readonly stream: string
  /** The consumer's name (durable name, or the name the shell generated). */
  readonly name: string
  readonly config: ConsumerConfig
  readonly view: StreamView
  /** Push flow control: bytes in flight before a request must be answered. */
  readonly flowControlWindowBytes?: number
}

const EMPTY: Readonly<Record<string, string>> = {}

/** Go's `time.Duration` text for whole milliseconds (`1s`, `500ms`, `1m30s`). */
export const goDuration = (ms: number): string => {
  if (ms === 0) return "0s"
  if (ms < 1000) return `${ms}ms`
  const h = Math.floor(ms / 3_600_000)
  const m = Math.floor((ms % 3_600_000) / 60_000)
  const s = (ms % 60_000) / 1000
  return (h > 0 ? `${h}h${m}m` : m > 0 ? `${m}m` : "") + `${s}s`
}

/**
 * A saved consumer state never points past the end of its stream. After a power cut
 * the consumer's own (fsynced) state can be ahead of the stream, whose last unsynced
 * messages were lost (they were never acknowledged to their publishers); left as it
 * was, the sequences reused by new publishes would be skipped. Found by the disk
 * simulation (seed 57433).
 */
export const clampToStream = (s: ConsumerSnapshot, lastSeq: number): ConsumerSnapshot => {
  if (s.cursor <= lastSeq + 1 && s.delivered.stream_seq <= lastSeq && s.ack_floor.stream_seq <= lastSeq) return s
  return {
    ...s,
    cursor: Math.min(s.cursor, lastSeq + 1),
    delivered: { ...s.delivered, stream_seq: Math.min(s.delivered.stream_seq, lastSeq) },
    ack_floor: { ...s.ack_floor, stream_seq: Math.min(s.ack_floor.stream_seq, lastSeq) },
    lps: s.lps.filter((q) => q <= lastSeq),
    pending: s.pending.filter((p) => p[0] <= lastSeq)
  }
}

export class ConsumerMachine {
  readonly stream: string
  readonly name: string
  /** The config with defaults applied (what CONSUMER.INFO reports). */
  readonly config: ConsumerConfig
  private readonly view: StreamView
  private readonly filters: ReadonlyArray<string>
  private readonly push: boolean
  private readonly ackNone: boolean
  private readonly ackAll: boolean
  private readonly ackWaitMs: number
  private readonly backoffMs: ReadonlyArray<number>
  private readonly maxDeliver: number
  private readonly maxAckPending: number
  private readonly maxWaiting: number
  private readonly hbMs: number
  private readonly inactiveMs: number
  private readonly fcWindow: number

  private delivered: { consumer_seq: number; stream_seq: number; last_active?: number }
  private ackFloor: { consumer_seq: number; stream_seq: number; last_active?: number }
  private cursor: number
  private lps: number[]
  private lpsAt = 0
  /** Insertion order is ascending stream sequence, so the first entry bounds the ack floor. */
  private readonly pending = new Map<number, Pending>()
  private redeliverQ: number[] = []
  private waiting: Waiting[] = []
  private interest = false
  private lastPushSend: number
  private lastActivity: number
  private fcOutstanding: string | undefined
  private fcBytesAtRequest = 0
  private fcBytes = 0
  private fcCounter = 0
  private deleted = false
  private dirty = false
  /** Lower bounds of the earliest ack and request deadlines, so most steps skip the scans. */
  private ackDeadlineLB = Infinity
  private waitDeadlineLB = Infinity

  private constructor(opts: ConsumerOptions, now: number, snapshot: ConsumerSnapshot | undefined) {
    this.stream = opts.stream
    this.name = opts.name
    this.view = opts.view
    const cfg = applyConsumerDefaults(opts.config)
    this.config = cfg
    this.filters = consumerFilters(cfg)
    this.push = isPushConfig(cfg)
    this.ackNone = cfg.ack_policy === "none"
    this.ackAll = cfg.ack_policy === "all"
    this.ackWaitMs = (cfg.ack_wait ?? 0) / NS_PER_MS
    this.backoffMs = (cfg.backoff ?? []).map((b) => b / NS_PER_MS)
    this.maxDeliver = cfg.max_deliver ?? -1
    this.maxAckPending = cfg.max_ack_pending ?? 0
    this.maxWaiting = cfg.max_waiting ?? 0
    this.hbMs = (cfg.idle_heartbeat ?? 0) / NS_PER_MS
    this.inactiveMs = (cfg.inactive_threshold ?? 0) / NS_PER_MS
    this.fcWindow = opts.flowControlWindowBytes ?? 1024 * 1024
    this.lastPushSend = now
    this.lastActivity = now
    if (snapshot) {
      this.delivered = { ...snapshot.delivered }
      this.ackFloor = { ...snapshot.ack_floor }
      this.cursor = snapshot.cursor
      this.lps = [...snapshot.lps]
      const rows = [...snapshot.pending].sort((a, b) => a[0] - b[0])
      for (const [sseq, cseq, ts, dc] of rows) {
        this.pending.set(sseq, { cseq, ts, dc, deadline: ts + this.ackWaitFor(dc), due: false })
        this.ackDeadlineLB = Math.min(this.ackDeadlineLB, ts + this.ackWaitFor(dc))
      }
    } else {
      const start = this.startPosition()
      this.cursor = start.cursor
      this.lps = start.lps
      const first = this.lps.length > 0 ? this.lps[0] : this.cursor
      this.delivered = { consumer_seq: 0, stream_seq: Math.max(0, first - 1) }
      this.ackFloor = { consumer_seq: 0, stream_seq: Math.max(0, first - 1) }
    }
  }

  /** A new consumer positioned by its `deliver_policy`. Validate the config first. */
  static create(opts: ConsumerOptions, now: number): ConsumerMachine {
    return new ConsumerMachine(opts, now, undefined)
  }

  /** A consumer resumed from `snapshot()`; ack timers restart from each message's last delivery. */
  static restore(opts: ConsumerOptions, snapshot: ConsumerSnapshot, now: number): ConsumerMachine {
    return new ConsumerMachine(opts, now, clampToStream(snapshot, opts.view.lastSeq))
  }

  private startPosition(): { cursor: number; lps: number[] } {
    const v = this.view
    const cfg = this.config
    switch (cfg.deliver_policy) {
      case "last": {
        if (this.filters.length === 0) return { cursor: v.lastSeq >= v.firstSeq ? v.lastSeq : v.lastSeq + 1, lps: [] }
        const seqs = v.lastPerSubject(this.filters)
        return { cursor: seqs.length > 0 ? seqs[seqs.length - 1] : v.lastSeq + 1, lps: [] }
      }
      case "new":
        return { cursor: v.lastSeq + 1, lps: [] }
      case "by_start_sequence":
        return { cursor: Math.max(1, cfg.opt_start_seq ?? 1), lps: [] }
      case "by_start_time":
        return { cursor: v.seqAtOrAfterTime(Date.parse(cfg.opt_start_time ?? "")), lps: [] }
      case "last_per_subject":
        return { cursor: v.lastSeq + 1, lps: [...v.lastPerSubject(this.filters)] }
      default:
        return { cursor: Math.max(1, v.firstSeq), lps: [] }
    }
  }

  private ackWaitFor(dc: number): number {
    const b = this.backoffMs
    return b.length === 0 ? this.ackWaitMs : b[Math.min(dc - 1, b.length - 1)]
  }

  private isActive(): boolean {
    return this.push ? this.interest : this.waiting.length > 0
  }

  // ---------------------------------------------------------------- stepping

  step(input: ConsumerInput, now: number): ConsumerAction[] {
    const out: ConsumerAction[] = []
    if (this.deleted) return out
    const activeBefore = this.isActive()
    switch (input.type) {
      case "newMessages":
      case "tick":
        break
      case "pull":
        this.onPull(input.request, input.reply, now, out)
        break
      case "ack":
        this.onAck(input.ack, input.payload, input.reply, now, out)
        break
      case "streamPurged":
        this.onPurge()
        break
      case "msgDeleted":
        if (this.pending.has(input.seq)) this.dropPending(input.seq)
        break
      case "flowControlReply":
        if (input.subject === this.fcOutstanding) {
          this.fcOutstanding = undefined
          this.fcBytes = Math.max(0, this.fcBytes - this.fcBytesAtRequest)
        }
        break
      case "interest":
        if (input.active && !this.interest) this.lastPushSend = now
        this.interest = input.active
        break
      case "delete":
        for (const w of this.waiting) out.push(this.status(w, 409, "Consumer Deleted"))
        this.waiting = []
        this.deleted = true
        return out
    }
    this.onTimers(now, out)
    if (!this.deleted) this.pump(now, out)
    if (activeBefore || this.isActive()) this.lastActivity = now
    if (this.dirty) {
      this.dirty = false
      out.push({ type: "persist" })
    }
    return out
  }

  /** When `step({type:"tick"})` must next run; `undefined` when nothing is timed. */
  nextDeadline(): number | undefined {
    if (this.deleted) return undefined
    // Lower bounds: waking early is harmless, the tick tightens them.
    let next = Math.min(this.ackDeadlineLB, this.waiting.length > 0 ? this.waitDeadlineLB : Infinity)
    if (this.push && this.hbMs > 0 && this.interest) next = Math.min(next, this.lastPushSend + this.hbMs)
    if (this.inactiveMs > 0 && !this.isActive()) next = Math.min(next, this.lastActivity + this.inactiveMs)
    return next === Infinity ? undefined : next
  }

  // ---------------------------------------------------------------- pull requests

  private onPull(req: PullRequest, reply: string, now: number, out: ConsumerAction[]): void {
    const target: DeliveryTarget = { kind: "pull", reply }
    const reject = (description: string) => out.push({ type: "status", target, code: 409, description, headers: EMPTY })
    if (this.push) return void reject("Consumer is push based")
    const batch = req.batch && req.batch > 0 ? req.batch : 1
    const maxBatch = this.config.max_batch ?? 0
    if (maxBatch > 0 && batch > maxBatch) return void reject(`Exceeded MaxRequestBatch of ${maxBatch}`)
    const expiresMs = (req.expires ?? 0) > 0 ? req.expires! / NS_PER_MS : 0
    const maxExpires = (this.config.max_expires ?? 0) / NS_PER_MS
    if (maxExpires > 0 && (expiresMs === 0 || expiresMs > maxExpires)) {
      return void reject(`Exceeded MaxRequestExpires of ${goDuration(maxExpires)}`)
    }
    const maxBytes = req.max_bytes && req.max_bytes > 0 ? req.max_bytes : 0
    const cfgMaxBytes = this.config.max_bytes ?? 0
    if (cfgMaxBytes > 0 && maxBytes > cfgMaxBytes) return void reject(`Exceeded MaxRequestMaxBytes of ${cfgMaxBytes}`)
    if (this.maxWaiting > 0 && this.waiting.length >= this.maxWaiting) this.expireRequests(now, out)
    if (this.maxWaiting > 0 && this.waiting.length >= this.maxWaiting) return void reject("Exceeded MaxWaiting")
    const hbMs = (req.idle_heartbeat ?? 0) / NS_PER_MS
    const expiresAt = expiresMs > 0 ? now + expiresMs : undefined
    this.waiting.push({ reply, batch, maxBytes, expiresAt, noWait: req.no_wait === true, hbMs, nextHb: now + hbMs, delivered: 0, bytes: 0 })
    if (expiresAt !== undefined) this.waitDeadlineLB = Math.min(this.waitDeadlineLB, expiresAt)
    if (hbMs > 0) this.waitDeadlineLB = Math.min(this.waitDeadlineLB, now + hbMs)
  }

  private status(w: Waiting, code: 100 | 404 | 408 | 409, description: string): ConsumerAction {
    const headers =
      code === 408 || code === 409
        ? { "Nats-Pending-Messages": String(w.batch - w.delivered), "Nats-Pending-Bytes": String(w.maxBytes > 0 ? w.maxBytes - w.bytes : 0) }
        : EMPTY
    return { type: "status", target: { kind: "pull", reply: w.reply }, code, description, headers }
  }

  // ---------------------------------------------------------------- acks

  private onAck(ref: AckRef, payload: string | Uint8Array, reply: string | undefined, now: number, out: ConsumerAction[]): void {
    const ack = parseAckPayload(payload)
    const seq = ref.streamSeq
    this.lastActivity = now
    switch (ack.kind) {
      case "ack":
      case "next": {
        const seqs = this.ackAll ? this.ackUpTo(seq) : this.dropPending(seq) ? [seq] : []
        if (seqs.length > 0) out.push({ type: "acked", seqs })
        break
      }
      case "nak": {
        const p = this.pending.get(seq)
        if (p && !p.due) {
          if (ack.delayMs === undefined) this.expire(seq, p, out)
          else this.setDeadline(p, now + ack.delayMs)
        }
        break
      }
      case "progress": {
        const p = this.pending.get(seq)
        if (p && !p.due) this.setDeadline(p, now + this.ackWaitFor(p.dc))
        break
      }
      case "term": {
        const p = this.pending.get(seq)
        if (p) {
          this.dropPending(seq)
          out.push({ type: "released", seqs: [seq] })
          out.push({ type: "advisory", kind: "terminated", streamSeq: seq, deliveries: p.dc, ...(ack.reason ? { reason: ack.reason } : {}) })
        }
        break
      }
      case "unknown":
        return
    }
    if (ack.kind === "ack" || ack.kind === "next") this.ackFloor = { ...this.ackFloor, last_active: now }
    if (ack.kind === "next") {
      if (reply) this.onPull(ack.request, reply, now, out)
    } else if (reply) {
      out.push({ type: "ackAck", reply })
    }
  }

  private setDeadline(p: Pending, at: number): void {
    p.deadline = at
    if (at < this.ackDeadlineLB) this.ackDeadlineLB = at
  }

  private ackUpTo(seq: number): number[] {
    const acked: number[] = []
    for (const [s] of this.pending) {
      if (s > seq) break
      this.dropPending(s)
      acked.push(s)
    }
    return acked
  }

  /** Forget a pending message (acked, terminated, gone from the stream, out of deliveries). */
  private dropPending(seq: number): boolean {
    const p = this.pending.get(seq)
    if (!p) return false
    this.pending.delete(seq)
    if (p.due) this.redeliverQ.splice(this.redeliverQ.indexOf(seq), 1)
    this.updateAckFloor()
    this.dirty = true
    return true
  }

  private updateAckFloor(): void {
    const last_active = this.ackFloor.last_active
    const first = this.pending.entries().next()
    if (first.done) {
      this.ackFloor = { consumer_seq: this.delivered.consumer_seq, stream_seq: this.delivered.stream_seq, last_active }
    } else {
      const [sseq, p] = first.value
      const stream_seq = Math.max(this.ackFloor.stream_seq, sseq - 1)
      const consumer_seq = Math.max(this.ackFloor.consumer_seq, p.cseq - 1)
      this.ackFloor = { consumer_seq, stream_seq, last_active }
    }
  }

  // ---------------------------------------------------------------- timers

  private onTimers(now: number, out: ConsumerAction[]): void {
    if (this.ackDeadlineLB <= now) {
      let min = Infinity
      for (const [seq, p] of this.pending) {
        if (p.due) continue
        if (p.deadline <= now) this.expire(seq, p, out)
        else if (p.deadline < min) min = p.deadline
      }
      this.ackDeadlineLB = min
    }
    if (this.waiting.length > 0 && this.waitDeadlineLB <= now) this.expireRequests(now, out)
    if (this.push && this.hbMs > 0 && this.interest && this.lastPushSend + this.hbMs <= now) {
      this.pushHeartbeat(now, out)
    }
    if (this.inactiveMs > 0 && !this.isActive() && this.lastActivity + this.inactiveMs <= now) {
      this.deleted = true
      out.push({ type: "terminate", reason: "inactive" })
    }
  }

  /** 408 for expired requests and 100 for those due a heartbeat. */
  private expireRequests(now: number, out: ConsumerAction[]): void {
    const keep: Waiting[] = []
    let min = Infinity
    for (const w of this.waiting) {
      if (w.expiresAt !== undefined && w.expiresAt <= now) {
        out.push(this.status(w, 408, "Request Timeout"))
        continue
      }
      if (w.hbMs > 0 && w.nextHb <= now) {
        out.push(this.status(w, 100, "Idle Heartbeat"))
        w.nextHb = now + w.hbMs
      }
      if (w.expiresAt !== undefined && w.expiresAt < min) min = w.expiresAt
      if (w.hbMs > 0 && w.nextHb < min) min = w.nextHb
      keep.push(w)
    }
    this.waiting = keep
    this.waitDeadlineLB = min
  }

  /** Ack wait (or NAK) ran out: queue for redelivery, or give up after `max_deliver`. */
  private expire(seq: number, p: Pending, out: ConsumerAction[]): void {
    if (this.maxDeliver > 0 && p.dc >= this.maxDeliver) {
      this.dropPending(seq)
      out.push({ type: "released", seqs: [seq] })
      out.push({ type: "advisory", kind: "max_deliveries", streamSeq: seq, deliveries: p.dc })
      return
    }
    p.due = true
    const q = this.redeliverQ
    let i = q.length
    while (i > 0 && q[i - 1] > seq) i--
    q.splice(i, 0, seq)
  }

  private pushHeartbeat(now: number, out: ConsumerAction[]): void {
    const headers: Record<string, string> = {
      "Nats-Last-Consumer": String(this.delivered.consumer_seq),
      "Nats-Last-Stream": String(this.delivered.stream_seq)
    }
    if (this.fcOutstanding) headers["Nats-Consumer-Stalled"] = this.fcOutstanding
    out.push({ type: "status", target: this.pushTarget(), code: 100, description: "Idle Heartbeat", headers })
    this.lastPushSend = now
  }

  private pushTarget(): DeliveryTarget {
    return { kind: "push", subject: this.config.deliver_subject! }
  }

  // ---------------------------------------------------------------- stream changes

  private exists(seq: number): StoredMsgMeta | undefined {
    const m = this.view.loadNextMatching(this.filters, seq)
    return m !== undefined && m.seq === seq ? m : undefined
  }

  private onPurge(): void {
    for (const seq of [...this.pending.keys()]) if (!this.exists(seq)) this.dropPending(seq)
    const first = this.view.firstSeq
    if (this.delivered.stream_seq < first - 1) {
      this.delivered = { ...this.delivered, stream_seq: first - 1 }
      this.dirty = true
    }
    if (this.cursor < first) this.cursor = first
    if (this.pending.size === 0) this.updateAckFloor()
  }

  // ---------------------------------------------------------------- delivery

  /** The next message to send, without committing to it; stale entries are dropped on the way. */
  private peek(): Candidate | undefined {
    while (this.redeliverQ.length > 0) {
      const seq = this.redeliverQ[0]
      const meta = this.exists(seq)
      if (meta) return { from: "redeliver", meta, entry: this.pending.get(seq)! }
      this.dropPending(seq)
    }
    if (!this.ackNone && this.maxAckPending > 0 && this.pending.size >= this.maxAckPending) return undefined
    while (this.lpsAt < this.lps.length) {
      const meta = this.exists(this.lps[this.lpsAt])
      if (meta) return { from: "lps", meta }
      this.lpsAt++
    }
    const meta = this.view.loadNextMatching(this.filters, this.cursor)
    if (meta) return { from: "new", meta }
    // Nothing up to the stream's end matches: later scans start after it.
    if (this.view.lastSeq >= this.cursor) this.cursor = this.view.lastSeq + 1
    return undefined
  }

  private numPending(): number {
    return this.lps.length - this.lpsAt + this.view.numPending(this.filters, this.cursor)
  }

  private commit(c: Candidate, target: DeliveryTarget, now: number, out: ConsumerAction[]): void {
    const seq = c.meta.seq
    const consumer_seq = this.delivered.consumer_seq + 1
    let dc = 1
    if (c.from === "redeliver") {
      this.redeliverQ.shift()
      const p = c.entry
      p.dc += 1
      p.ts = now
      p.due = false
      this.setDeadline(p, now + this.ackWaitFor(p.dc))
      dc = p.dc
    } else {
      if (c.from === "lps") {
        this.lpsAt++
        if (this.lpsAt === this.lps.length) this.lps = []
        if (this.lps.length === 0) this.lpsAt = 0
      } else {
        this.cursor = seq + 1
      }
      if (!this.ackNone) {
        const deadline = now + this.ackWaitFor(1)
        this.pending.set(seq, { cseq: consumer_seq, ts: now, dc: 1, deadline, due: false })
        if (deadline < this.ackDeadlineLB) this.ackDeadlineLB = deadline
      }
    }
    this.delivered = { consumer_seq, stream_seq: Math.max(this.delivered.stream_seq, seq), last_active: now }
    if (this.ackNone) this.ackFloor = { consumer_seq, stream_seq: this.delivered.stream_seq, last_active: now }
    this.dirty = true
    out.push({
      type: "deliver",
      seq,
      subject: c.meta.subject,
      timestampMs: c.meta.timestampMs,
      size: c.meta.size,
      deliveryCount: dc,
      consumerSeq: consumer_seq,
      target,
      pending: this.numPending()
    })
  }

  private pump(now: number, out: ConsumerAction[]): void {
    if (this.push) this.pumpPush(now, out)
    else this.pumpPull(now, out)
  }

  private pumpPull(now: number, out: ConsumerAction[]): void {
    while (this.waiting.length > 0) {
      const c = this.peek()
      if (!c) break
      const w = this.waiting.shift()!
      if (w.maxBytes > 0 && c.meta.size > w.maxBytes - w.bytes) {
        out.push(this.status(w, 409, "Message Size Exceeds MaxBytes"))
        continue
      }
      this.commit(c, { kind: "pull", reply: w.reply }, now, out)
      w.delivered++
      w.bytes += c.meta.size
      w.nextHb = now + w.hbMs
      // Round robin: an unfinished request goes behind the others.
      if (w.delivered < w.batch) this.waiting.push(w)
    }
    if (this.waiting.some((w) => w.noWait)) {
      const keep: Waiting[] = []
      for (const w of this.waiting) {
        if (!w.noWait) keep.push(w)
        else out.push(w.delivered === 0 ? this.status(w, 404, "No Messages") : this.status(w, 408, "Request Timeout"))
      }
      this.waiting = keep
    }
  }

  private pumpPush(now: number, out: ConsumerAction[]): void {
    if (!this.interest) return
    const fc = this.config.flow_control === true
    for (;;) {
      if (fc && this.fcOutstanding !== undefined && this.fcBytes >= this.fcWindow) return
      const c = this.peek()
      if (!c) return
      this.commit(c, this.pushTarget(), now, out)
      this.lastPushSend = now
      if (!fc) continue
      this.fcBytes += c.meta.size
      if (this.fcOutstanding === undefined && this.fcBytes >= this.fcWindow / 2) {
        this.fcOutstanding = `$JS.FC.${this.stream}.${this.name}.${(++this.fcCounter).toString(36)}`
        this.fcBytesAtRequest = this.fcBytes
        out.push({ type: "status", target: this.pushTarget(), code: 100, description: "FlowControl Request", headers: EMPTY, reply: this.fcOutstanding })
      }
    }
  }

  // ---------------------------------------------------------------- reporting

  info(): ConsumerState {
    let redelivered = 0
    for (const p of this.pending.values()) if (p.dc > 1) redelivered++
    return {
      delivered: { ...this.delivered },
      ack_floor: { ...this.ackFloor },
      num_ack_pending: this.pending.size,
      num_redelivered: redelivered,
      num_waiting: this.waiting.length,
      num_pending: this.numPending()
    }
  }

  /**
   * Interest retention: whether this consumer still holds message `seq` on `subject`,
   * i.e. its filters match and it has neither acknowledged the message nor passed it
   * by (delivered under ack policy none, terminated, out of deliveries, or before
   * where it started). The rule nats-server applies per consumer.
   */
  holds(seq: number, subject: string): boolean {
    if (this.deleted || seq <= this.ackFloor.stream_seq) return false
    if (this.filters.length > 0 && !this.filters.some((f) => subjectMatches(subject, f))) return false
    if (seq >= this.cursor || this.pending.has(seq)) return true
    for (let i = this.lpsAt; i < this.lps.length; i++) if (this.lps[i] === seq) return true
    return false
  }

  snapshot(): ConsumerSnapshot {
    const pending: Array<readonly [number, number, number, number]> = []
    for (const [sseq, p] of this.pending) pending.push([sseq, p.cseq, p.ts, p.dc])
    const seq = (s: SequenceInfo): SequenceInfo => ({ ...s })
    return {
      v: 1,
      delivered: seq(this.delivered),
      ack_floor: seq(this.ackFloor),
      cursor: this.cursor,
      lps: this.lps.slice(this.lpsAt),
      pending
    }
  }

  get isDeleted(): boolean {
    return this.deleted
  }
}
