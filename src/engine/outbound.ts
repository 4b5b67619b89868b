// The one flusher every connection's output goes through (NATS clients, MQTT
// connections, routes and leaf connections): a dirty list, one write per connection per
// event-loop turn, an early write for a burst, and the slow-consumer policy
// (max_pending, write_deadline). A connection whose output may have to wait (MQTT's,
// for the commit of this turn's writes) says so when the flush reaches it and keeps
// those bytes itself; the loop is the same for everyone.
import type { OutBuf } from "../core/outbuf.js"
import { Principal } from "./principal.js"

/** The socket side of a connection as the Outbound writes to it (a transport's Conn is one). */
export interface Sink {
  /** Queue bytes; `done` once the transport no longer reads them (in order of the writes). */
  write(buf: Buffer, done?: () => void): void
  writev(bufs: ReadonlyArray<Buffer>, done?: () => void): void
  /** Bytes handed to the sink and not yet sent. */
  writableLength(): number
}

/** Why a peer was cut off as a slow consumer: nats-server's /connz reasons. */
export const SlowConsumer = {
  PendingBytes: "Slow Consumer (Pending Bytes)",
  WriteDeadline: "Slow Consumer (Write Deadline)"
} as const
export type SlowConsumer = (typeof SlowConsumer)[keyof typeof SlowConsumer]

/** How a kind of connection is held to max_pending and write_deadline. */
export interface OutboundPolicy {
  /**
   * Where max_pending is judged: "queued" as each delivery is queued (its buffer plus what
   * the socket holds); "written" after each write, on what the socket holds, over the
   * peer's `pendingAllowance`.
   */
  readonly pendingCheck: "queued" | "written"
  /** A socket that takes nothing for write_deadline cuts the peer off. */
  readonly writeDeadline: boolean
}

/** NATS clients (and the connections that will speak the NATS protocol between servers). */
export const NATS_POLICY: OutboundPolicy = { pendingCheck: "queued", writeDeadline: true }

/** A principal with a socket: what it has queued for its peer and how far behind the peer is. */
export abstract class Peer extends Principal {
  abstract readonly out: OutBuf
  abstract readonly conn: Sink
  abstract readonly policy: OutboundPolicy
  /** On the dirty list: written at the end of this turn. */
  dirty = false
  /** Bytes the socket held after the last write (refreshed on drain). */
  transportPending = 0
  /** When the socket last held unsent bytes without progress; -1 when drained. */
  blockedSince = -1
  /** Bytes it may be over max_pending for a burst the server itself sent (a resumed session's resend), until it drains below. */
  pendingAllowance = 0

  /** Outbound bytes not yet on the wire: the buffer plus what the socket still holds. */
  get pendingBytes(): number {
    return this.out.length + this.transportPending
  }

  /** How log lines name it. */
  abstract logName(): string

  /** Cut off as a slow consumer (counted and logged already): what is queued will never be read in time. */
  abstract cutOff(reason: SlowConsumer): void

  /** This turn's output must wait: the flush takes it and hands it to `hold` instead of the socket. */
  holdsOutput(): boolean {
    return false
  }

  /** This turn's output, held back (see `holdsOutput`); the peer writes it later with `Outbound.writeBufs`. */
  hold(_bufs: Array<Buffer>): void {}

  /** Its output reached the socket, which now holds `queued` bytes. */
  written(_queued: number): void {}

  /** The socket took everything it held. */
  drained(): void {
    this.transportPending = 0
    this.blockedSince = -1
  }
}

/** What the Outbound reads from outside: the clock, the log, the flush scheduler and the timer. */
export interface OutboundEnv {
  readonly now: () => number
  readonly log: { readonly warn: (msg: string) => void }
  /** Run `flush` once, after the current batch of I/O callbacks (setImmediate in production). */
  readonly scheduleFlush: (flush: () => void) => void
  /** Ask the shell to run the timers no later than `at` (a blocked write's deadline). */
  readonly wakeAt?: (at: number) => void
}

export interface OutboundLimits {
  readonly maxPending: number
  readonly writeDeadlineMs: number
}

/** Outbound bytes past which a connection is written before the end of the event-loop turn. */
const EAGER_FLUSH_BYTES = 64 * 1024

const eagerFlushBytesFor = (maxPending: number): number => Math.max(1024, Math.min(EAGER_FLUSH_BYTES, maxPending >>> 2))

export class Outbound {
  /** Peers cut off as slow consumers since start (/varz). */
  slowConsumers = 0
  private dirty: Array<Peer> = []
  private spare: Array<Peer> = []
  private flushScheduled = false
  private readonly flushFn = () => this.flush()
  /** What runs at the end of the next flush, and the set that takes what is asked for during it. */
  private after = new Set<() => void>()
  private spareAfter = new Set<() => void>()
  private maxPending = 0
  private writeDeadlineMs = 0
  private eagerFlushBytes = 0

  constructor(
    private readonly env: OutboundEnv,
    limits: OutboundLimits
  ) {
    this.setLimits(limits)
  }

  /** New max_pending / write_deadline (a configuration reload): every peer at once. */
  setLimits(limits: OutboundLimits): void {
    this.maxPending = limits.maxPending
    this.writeDeadlineMs = limits.writeDeadlineMs
    this.eagerFlushBytes = eagerFlushBytesFor(limits.maxPending)
  }

  /**
   * `f` runs once at the end of the next flush, after every peer was written or held
   * (MQTT: the commit its held output waits for); asked again before then, still once.
   */
  afterFlush(f: () => void): void {
    this.after.add(f)
    this.requestFlush()
  }

  /** `p` has output: it is written at the end of this turn. */
  markDirty(p: Peer): void {
    if (p.dirty) return
    p.dirty = true
    this.dirty.push(p)
    this.requestFlush()
  }

  /** A flush this turn even when no peer has output (what runs after it has work). */
  requestFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    this.env.scheduleFlush(this.flushFn)
  }

  /**
   * A delivery was queued for `p` (a peer whose max_pending is judged as deliveries are
   * queued): written at the end of the turn, at once when a lot waits, and cut off past
   * max_pending.
   */
  queued(p: Peer): void {
    if (!p.dirty) this.markDirty(p)
    // A burst can bring many chunks in one event-loop turn: past a threshold the bytes go
    // to the socket now, so max_pending judges what the peer has not read, not what we
    // have not yet flushed.
    if (p.out.length >= this.eagerFlushBytes) this.writeOut(p)
    if (p.out.length + p.transportPending > this.maxPending) this.slowConsumer(p, SlowConsumer.PendingBytes, p.pendingBytes)
  }

  /** One write per dirty peer; output that must wait is handed back to its peer. */
  flush(): void {
    this.flushScheduled = false
    const list = this.dirty
    this.dirty = this.spare
    this.spare = list
    // What is asked for while this flush runs belongs to the next one.
    const after = this.after
    this.after = this.spareAfter
    this.spareAfter = after
    for (let i = 0; i < list.length; i++) {
      const p = list[i]
      p.dirty = false
      if (p.closed) continue
      if (p.holdsOutput()) {
        const bufs = p.out.takeAll()
        if (bufs !== undefined) p.hold(bufs)
        continue
      }
      this.writeOut(p)
    }
    list.length = 0
    if (after.size > 0) {
      for (const f of after) f()
      after.clear()
    }
  }

  /** Everything pending for `p` to its socket now. */
  writeOut(p: Peer): void {
    const bufs = p.out.takeAll()
    if (bufs !== undefined) this.writeBufs(p, bufs)
  }

  /** Bytes taken from `p.out` to the socket, and whether the socket keeps up: the write deadline, max_pending. */
  writeBufs(p: Peer, bufs: ReadonlyArray<Buffer>): void {
    sendBufs(p, bufs)
    const queued = p.conn.writableLength()
    const policy = p.policy
    if (policy.writeDeadline) {
      if (queued > 0) {
        // The write deadline runs from the last time the socket made progress.
        if (p.blockedSince < 0) {
          p.blockedSince = this.env.now()
          this.env.wakeAt?.(p.blockedSince + this.writeDeadlineMs)
        } else if (queued < p.transportPending) p.blockedSince = this.env.now()
      } else {
        p.blockedSince = -1
      }
    }
    p.transportPending = queued
    if (policy.pendingCheck === "written") {
      if (p.pendingAllowance > 0 && queued <= this.maxPending) p.pendingAllowance = 0
      if (!p.closed && queued > this.maxPending + p.pendingAllowance) return this.slowConsumer(p, SlowConsumer.PendingBytes, queued)
    }
    p.written(queued)
  }

  /** The last words before a close: everything pending to the socket, without bookkeeping. */
  flushNow(p: Peer): void {
    const bufs = p.out.takeAll()
    if (bufs !== undefined) sendBufs(p, bufs)
  }

  /** `p`'s write deadline (peers held to one): cut off once passed; returns when it is due (Infinity: not blocked). */
  writeDeadline(p: Peer, now: number): number {
    if (p.blockedSince < 0) return Infinity
    const at = p.blockedSince + this.writeDeadlineMs
    if (now < at) return at
    this.slowConsumer(p, SlowConsumer.WriteDeadline, p.pendingBytes)
    return Infinity
  }

  private slowConsumer(p: Peer, reason: SlowConsumer, pending: number): void {
    this.slowConsumers++
    p.account.slowConsumers++
    const why = reason === SlowConsumer.PendingBytes
      ? `pending ${pending} bytes over max_pending ${this.maxPending}`
      : `write blocked for more than ${this.writeDeadlineMs}ms`
    this.env.log.warn(`${p.logName()} - Slow Consumer Detected: ${why}`)
    p.cutOff(reason)
  }
}

/** One write (vectored when there are several buffers); the buffer learns when the socket is done with them. */
const sendBufs = (p: Peer, bufs: ReadonlyArray<Buffer>): void => {
  if (bufs.length === 1) p.conn.write(bufs[0], p.out.written)
  else p.conn.writev(bufs, p.out.written)
}
