// A simulated route connection between two servers: a pair of `Conn`s joined by two
// one-way pipes on the simulation's event queue. Each direction has its own seeded
// latency, drain rate (so a slow route pushes back: `writableLength` grows, `onDrain`
// fires when it empties) and chunk splitting; either end may be reset (the other sees
// the close after a delay, bytes in flight lost both ways), and a partition holds every
// byte in both directions until it heals (as TCP retransmits: nothing is lost unless the
// connection is closed meanwhile, by a ping or write deadline or a reset).
import type { Conn, ConnHandlers } from "../services/transport.js"
import { type EventQueue, splitChunk, takeBytes } from "./network.js"
import type { Rng } from "./rng.js"

export interface PipeProfile {
  /** One-way latency range, ms. */
  readonly latency: readonly [number, number]
  /** Bytes moved per drain step. */
  readonly drainBytes: number
  /** Milliseconds between drain steps. */
  readonly drainEveryMs: number
  /** Probability of splitting a chunk into pieces. */
  readonly splitChance: number
}

/** Runs a server's handler, recording what it threw (the "server never throws" invariant). */
export type CallServer = (what: string, f: () => void) => void

/** One end of a route connection: what its server writes goes to the other end. */
export class PipeEnd implements Conn {
  readonly tls = undefined
  handlers: ConnHandlers | undefined
  peer!: PipeEnd
  private queue: Array<Buffer> = []
  private queued = 0
  private draining = false
  /** Its server called end()/destroy(), or it was reset. */
  closed = false
  private ending = false
  /** Its server heard of the close (its onClose ran). */
  sawClose = false
  profile: PipeProfile

  constructor(
    readonly pipe: RoutePipe,
    /** Which server this end belongs to. */
    readonly node: number,
    readonly remoteAddress: string,
    readonly remotePort: number,
    private readonly rng: Rng,
    profile: PipeProfile
  ) {
    this.profile = profile
  }

  write(buf: Buffer): void {
    this.writev([buf])
  }

  writev(bufs: ReadonlyArray<Buffer>): void {
    if (this.closed || this.ending) return
    for (const b of bufs) {
      this.queue.push(b)
      this.queued += b.length
    }
    this.pipe.sent(this)
    this.scheduleDrain()
  }

  writableLength(): number {
    return this.pending
  }

  end(): void {
    if (this.closed || this.ending) return
    this.ending = true
    const q = this.pipe.q
    if (this.queued === 0) q.schedule(q.now, () => this.pipe.reset(this, "end"))
    else q.schedule(q.now + 5_000, () => this.pipe.reset(this, "end timeout"))
  }

  destroy(): void {
    if (this.closed) return
    this.pipe.reset(this, "destroy")
  }

  /** Bytes still to go toward the other end. */
  get pending(): number {
    return this.queued
  }

  dropQueue(): void {
    this.queue = []
    this.queued = 0
  }

  latency(): number {
    return this.rng.int(this.profile.latency[0], this.profile.latency[1])
  }

  scheduleDrain(): void {
    if (this.draining || this.closed || this.pipe.held || this.queued === 0) return
    this.draining = true
    const q = this.pipe.q
    q.schedule(q.now + this.latency(), () => this.drainStep())
  }

  private drainStep(): void {
    this.draining = false
    if (this.closed || this.pipe.held) return
    const data = takeBytes(this.queue, this.profile.drainBytes)
    this.queued -= data.length
    const to = this.peer
    for (const piece of splitChunk(this.rng, this.profile.splitChance, data)) {
      if (to.closed) break
      this.pipe.call(`route data to node ${to.node}`, () => to.handlers?.onData(piece))
    }
    if (this.closed) return
    if (this.queued === 0) {
      if (this.ending) {
        this.pipe.reset(this, "end")
        return
      }
      this.pipe.call(`route drain on node ${this.node}`, () => this.handlers?.onDrain())
    } else {
      this.draining = true
      this.pipe.q.schedule(this.pipe.q.now + this.profile.drainEveryMs, () => this.drainStep())
    }
  }

}

/** A route connection: `a` is the dialing server's end, `b` the accepting server's. */
export class RoutePipe {
  readonly a: PipeEnd
  readonly b: PipeEnd
  /** Held both ways by a partition (until healed). */
  partitioned = false
  /** Closed (both ends): by either server, or reset by the network. */
  closed = false
  /**
   * The end whose server crashed without a word (its host gone): what the other end sends
   * is held, unacknowledged, until the host is back and answers it with a reset.
   */
  deadEnd: PipeEnd | undefined = undefined
  private hostBack = false

  constructor(
    readonly id: number,
    readonly q: EventQueue,
    readonly call: CallServer,
    private readonly trace: (line: string) => void,
    from: { readonly node: number; readonly address: string; readonly port: number },
    to: { readonly node: number; readonly address: string; readonly port: number },
    rng: Rng,
    profile: PipeProfile
  ) {
    this.a = new PipeEnd(this, from.node, to.address, to.port, rng.fork(), profile)
    this.b = new PipeEnd(this, to.node, from.address, from.port, rng.fork(), profile)
    this.a.peer = this.b
    this.b.peer = this.a
  }

  /** Either end goes (`by` closed it, or the network reset it: `by` undefined): bytes in flight are lost both ways. */
  reset(by: PipeEnd | undefined, why: string): void {
    if (this.closed) return
    this.closed = true
    this.trace(`route pipe ${this.id} (node ${this.a.node} -> node ${this.b.node}) closed (${by === undefined ? "" : `node ${by.node} `}${why})`)
    for (const e of [this.a, this.b]) {
      e.closed = true
      e.dropQueue()
    }
    // Each server hears of it: at once the one that closed it, after the network's delay the other.
    for (const e of [this.a, this.b]) {
      const at = e === by ? this.q.now : this.q.now + e.latency()
      this.q.schedule(at, () => {
        if (e.sawClose) return
        e.sawClose = true
        this.call(`route close on node ${e.node}`, () => e.handlers?.onClose(undefined))
      })
    }
  }

  /** Only one end's server is gone (it died): the other end sees the reset; the dead one hears nothing. */
  kill(dead: PipeEnd): void {
    dead.sawClose = true
    this.reset(undefined, `node ${dead.node} died`)
  }

  /** Nothing moves: a partition, or a peer whose host is gone. */
  get held(): boolean {
    return this.partitioned || this.deadEnd !== undefined
  }

  /** One end's host vanished (a crash with no reset sent): the other end's server hears nothing until it writes to the host once it is back, or gives up on its own (pings, write deadline). */
  halfOpen(dead: PipeEnd): void {
    if (this.closed) return
    dead.sawClose = true
    dead.closed = true
    dead.dropQueue()
    this.deadEnd = dead
    this.trace(`route pipe ${this.id}: node ${dead.node}'s host is gone, node ${dead.peer.node} is not told`)
  }

  /** The vanished host is back: bytes the other end sent (or sends next) are answered with a reset. */
  hostRebooted(): void {
    if (this.closed || this.deadEnd === undefined) return
    this.hostBack = true
    this.sent(this.deadEnd.peer)
  }

  /** `end` wrote: a rebooted host answers with a reset. */
  sent(end: PipeEnd): void {
    if (!this.hostBack || end === this.deadEnd || end.pending === 0) return
    this.q.schedule(this.q.now + end.latency(), () => this.reset(undefined, `reset by node ${this.deadEnd!.node}'s rebooted host`))
  }

  partition(on: boolean): void {
    this.partitioned = on
    if (!on) {
      this.a.scheduleDrain()
      this.b.scheduleDrain()
    }
  }

  slow(profile: PipeProfile): void {
    this.a.profile = profile
    this.b.profile = profile
  }

  get pending(): number {
    return this.a.pending + this.b.pending
  }
}
