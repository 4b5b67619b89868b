// A simulated network: in-memory connections between simulated clients and the server,
// driven by an explicit event queue and a seeded Rng. It models delays, partial reads
// (chunks split at random points), backpressure (a writable buffer that drains at a
// seeded rate, with onDrain), abrupt drops and peers that stop reading.
import { Effect, Layer } from "effect"
import type { Conn, ConnHandlers, TransportService } from "../services/transport.js"
import { Transport } from "../services/transport.js"
import type { Rng } from "./rng.js"

interface Event {
  readonly at: number
  readonly seq: number
  readonly run: () => void
}

/** A min-heap of events ordered by (time, insertion order): ties never depend on anything but the seed. */
export class EventQueue {
  private heap: Array<Event> = []
  private seq = 0
  now = 0

  schedule(at: number, run: () => void): void {
    const e = { at: Math.max(at, this.now), seq: this.seq++, run }
    const h = this.heap
    h.push(e)
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (less(h[p], e)) break
      h[i] = h[p]
      i = p
    }
    h[i] = e
  }

  get size(): number {
    return this.heap.length
  }

  /** When the next event is due; undefined when none is queued. */
  nextAt(): number | undefined {
    return this.heap[0]?.at
  }

  /** Run the next event if one is due by `until`; false when none is. */
  runNext(until: number): boolean {
    if (this.heap.length === 0 || this.heap[0].at > until) return false
    const e = this.pop()
    this.now = e.at
    e.run()
    return true
  }

  /** Run every event due up to `until`, then set the clock to `until`. */
  runUntil(until: number): void {
    const h = this.heap
    while (h.length > 0 && h[0].at <= until) {
      const e = this.pop()
      this.now = e.at
      e.run()
    }
    this.now = Math.max(this.now, until)
  }

  private pop(): Event {
    const h = this.heap
    const top = h[0]
    const last = h.pop()!
    if (h.length > 0) {
      let i = 0
      const n = h.length
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        let mv = last
        if (l < n && less(h[l], mv)) {
          m = l
          mv = h[l]
        }
        if (r < n && less(h[r], mv)) m = r
        if (m === i) break
        h[i] = h[m]
        i = m
      }
      h[i] = last
    }
    return top
  }
}

const less = (a: Event, b: Event): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq)

/** Up to `budget` bytes off the front of `queue` (which keeps the rest), as one buffer. */
export const takeBytes = (queue: Array<Buffer>, budget: number): Buffer => {
  const parts: Array<Buffer> = []
  while (budget > 0 && queue.length > 0) {
    const b = queue[0]
    if (b.length <= budget) {
      parts.push(b)
      queue.shift()
      budget -= b.length
    } else {
      parts.push(b.subarray(0, budget))
      queue[0] = b.subarray(budget)
      budget = 0
    }
  }
  return Buffer.concat(parts)
}

/** A chunk as the network delivers it: whole, or (with probability `chance`) cut at up to 4 random points. */
export const splitChunk = (rng: Rng, chance: number, buf: Buffer): Array<Buffer> => {
  if (buf.length < 2 || !rng.chance(chance)) return [buf]
  const n = rng.int(1, Math.min(4, buf.length - 1))
  const cuts = new Set<number>()
  for (let i = 0; i < n; i++) cuts.add(rng.int(1, buf.length - 1))
  const points = [...cuts].sort((a, b) => a - b)
  const out: Array<Buffer> = []
  let from = 0
  // Fresh copies: the server may keep references into chunks, so none is ever shared or reused.
  for (const p of points) {
    out.push(Buffer.from(buf.subarray(from, p)))
    from = p
  }
  out.push(Buffer.from(buf.subarray(from)))
  return out
}

/** What a simulated client sees of its connection. */
export interface ClientEnd {
  onData(chunk: Buffer): void
  onClose(): void
}

export interface LinkProfile {
  /** One-way latency range, ms. */
  readonly latency: readonly [number, number]
  /** Bytes the server→client direction moves per drain step. */
  readonly drainBytes: number
  /** Milliseconds between drain steps. */
  readonly drainEveryMs: number
  /** Probability of splitting a chunk into pieces. */
  readonly splitChance: number
}

/** Sees each client→server chunk right after the server handled it; `wasOpen`: the server had not closed the link before it, `closedDuring`: it closed the link while handling it. */
export type Observer = (link: SimLink, chunk: Buffer, wasOpen: boolean, closedDuring: boolean) => void

/** One in-memory connection. The server side is a `Conn`; the client side is `send`/`close`. */
export class SimLink implements Conn {
  readonly remoteAddress: string
  readonly tls = undefined
  handlers: ConnHandlers | undefined
  /** Server→client bytes the "socket" still holds. */
  private queue: Array<Buffer> = []
  private queued = 0
  /** The largest writableLength ever seen (the bound invariants check). */
  maxQueued = 0
  private draining = false
  private upAt = 0
  stalled = false
  closed = false
  /** When bytes last moved toward the client, or the queue was last empty (ms). */
  lastProgressAt = 0
  /** `lastProgressAt` as it was when the server closed the link. */
  progressAtServerClose = -1
  /** The server has been told the connection is gone (its onClose ran). */
  serverSawClose = false
  /** The client reset the connection. */
  clientDropped = false
  /** The server called end()/destroy(). */
  serverClosed = false
  private ending = false
  bytesToClient = 0
  /** Server→client bytes ever accepted by `write` (the client's stream offset of the next byte written). */
  written = 0
  /** Client→server bytes sent and not yet handed to the server. */
  upInFlight = 0
  /** `upInFlight` when the server closed the link: what the client sent that the server never read. */
  upInFlightAtServerClose = -1

  constructor(
    readonly id: number,
    readonly remotePort: number,
    private readonly net: SimNetwork,
    private readonly rng: Rng,
    public profile: LinkProfile,
    readonly client: ClientEnd
  ) {
    this.remoteAddress = net.remoteAddress
  }

  /** The server no longer routes to this connection: it closed it, or it heard it close. */
  get goneForServer(): boolean {
    return this.serverClosed || this.serverSawClose
  }

  // ---- Conn: the server side ----

  write(buf: Buffer): void {
    if (this.closed || this.ending) return
    if (this.queued === 0) this.lastProgressAt = this.net.q.now
    this.written += buf.length
    this.queue.push(buf)
    this.queued += buf.length
    if (this.queued > this.maxQueued) this.maxQueued = this.queued
    this.scheduleDrain()
  }

  writev(bufs: ReadonlyArray<Buffer>): void {
    for (const b of bufs) this.write(b)
  }

  writableLength(): number {
    return this.queued
  }

  end(): void {
    if (this.closed || this.ending) return
    this.ending = true
    this.serverClosed = true
    this.progressAtServerClose = this.lastProgressAt
    this.upInFlightAtServerClose = this.upInFlight
    if (this.queued === 0) this.net.q.schedule(this.net.q.now, () => this.close("server end"))
    // A peer that never reads gets the connection destroyed, as a socket's end timeout would.
    else this.net.q.schedule(this.net.q.now + 5_000, () => this.close("server end timeout"))
  }

  destroy(): void {
    if (this.closed) return
    this.serverClosed = true
    this.progressAtServerClose = this.lastProgressAt
    this.upInFlightAtServerClose = this.upInFlight
    this.dropQueue()
    this.net.q.schedule(this.net.q.now, () => this.close("server destroy"))
  }

  // ---- the client side ----

  /** Client→server bytes: split at random points, delivered in order after a seeded delay. */
  send(buf: Buffer): void {
    if (this.closed) return
    const q = this.net.q
    for (const piece of this.split(buf)) {
      const at = Math.max(this.upAt, q.now + this.latency())
      this.upAt = at
      this.upInFlight += piece.length
      q.schedule(at, () => {
        this.upInFlight -= piece.length
        if (this.closed || this.handlers === undefined) return
        this.net.toServer(this, piece)
      })
    }
  }

  /** The client drops the connection abruptly (reset): unsent bytes are lost both ways. */
  drop(): void {
    if (this.closed) return
    this.clientDropped = true
    this.dropQueue()
    this.close("client drop")
  }

  /** The server process died: the client sees a reset, and no dead server hears of it. */
  kill(): void {
    if (this.closed) return
    this.closed = true
    this.serverClosed = true
    this.dropQueue()
    this.net.trace(`link ${this.id} reset (server died)`)
    this.client.onClose()
  }

  /** The network heals: this link drains fast from now on. */
  heal(): void {
    this.profile = { ...this.profile, drainBytes: Math.max(this.profile.drainBytes, 1 << 20), drainEveryMs: 1 }
    this.stall(false)
  }

  stall(on: boolean): void {
    this.stalled = on
    if (!on) this.scheduleDrain()
  }

  // ---- internals ----

  private latency(): number {
    return this.rng.int(this.profile.latency[0], this.profile.latency[1])
  }

  private split(buf: Buffer): Array<Buffer> {
    return splitChunk(this.rng, this.profile.splitChance, buf)
  }

  private dropQueue(): void {
    this.queue = []
    this.queued = 0
  }

  private scheduleDrain(): void {
    if (this.draining || this.closed || this.stalled || this.queued === 0) return
    this.draining = true
    this.net.q.schedule(this.net.q.now + this.latency(), () => this.drainStep())
  }

  private drainStep(): void {
    this.draining = false
    if (this.closed || this.stalled) return
    const data = takeBytes(this.queue, this.profile.drainBytes)
    this.queued -= data.length
    this.bytesToClient += data.length
    if (data.length > 0) this.lastProgressAt = this.net.q.now
    for (const piece of this.split(data)) this.client.onData(piece)
    if (this.closed) return
    if (this.queued === 0) {
      if (this.ending) {
        this.close("server end")
        return
      }
      this.net.callServer(`drain on link ${this.id}`, () => this.handlers?.onDrain())
    } else {
      this.draining = true
      this.net.q.schedule(this.net.q.now + this.profile.drainEveryMs, () => this.drainStep())
    }
  }

  private close(why: string): void {
    if (this.closed) return
    this.closed = true
    this.dropQueue()
    this.net.trace(`link ${this.id} closed (${why})`)
    this.client.onClose()
    // The server learns of it after the network's delay, as a socket's 'close' event.
    this.net.q.schedule(this.net.q.now + this.latency(), () => {
      this.serverSawClose = true
      this.net.callServer(`close on link ${this.id}`, () => this.handlers?.onClose(undefined))
    })
  }
}

/** The simulated network: owns the event queue and every link. */
export class SimNetwork {
  readonly q: EventQueue
  readonly links: Array<SimLink> = []
  private accept: ((conn: Conn) => ConnHandlers) | undefined
  private nextPort: number
  /** Exceptions the server threw from a handler (the "server never throws" invariant). */
  readonly serverThrew: Array<string> = []
  observers: Array<Observer> = []

  constructor(
    private readonly rng: Rng,
    readonly trace: (line: string) => void,
    /** Shared with other networks (one per server of a simulated cluster); a new one by default. */
    q?: EventQueue,
    /** Where this network's connections seem to come from, and its first client port. */
    readonly remoteAddress = "10.0.0.1",
    firstPort = 40000
  ) {
    this.q = q ?? new EventQueue()
    this.nextPort = firstPort
  }

  readonly listen = (accept: (conn: Conn) => ConnHandlers): void => {
    this.accept = accept
  }

  /** A new client connection; the server accepts it after a network delay. */
  connect(client: ClientEnd, profile: LinkProfile): SimLink {
    const link = new SimLink(this.links.length + 1, this.nextPort++, this, this.rng.fork(), profile, client)
    this.links.push(link)
    this.q.schedule(this.q.now + profile.latency[0], () => {
      if (link.closed) return
      const accept = this.accept
      if (accept === undefined) {
        link.drop()
        return
      }
      this.callServer(`accept on link ${link.id}`, () => {
        link.handlers = accept(link)
      })
    })
    return link
  }

  /** The server process dies: every open connection is reset and nothing is accepted until `listen` again. */
  serverDied(): void {
    this.accept = undefined
    for (const l of this.links) l.kill()
  }

  toServer(link: SimLink, chunk: Buffer): void {
    const wasOpen = !link.serverClosed
    this.callServer(`data on link ${link.id}`, () => link.handlers?.onData(chunk))
    for (const o of this.observers) o(link, chunk, wasOpen, wasOpen && link.serverClosed)
  }

  callServer(what: string, f: () => void): void {
    try {
      f()
    } catch (e) {
      this.serverThrew.push(`${what}: ${e instanceof Error ? e.stack ?? e.message : String(e)}`)
    }
  }
}

/**
 * The Transport port over a simulated network, for running `startNatsServer` itself under
 * TestClock. (The runner drives `Server` directly so that flushes are events in the same
 * queue rather than `setImmediate`s.)
 */
export const layerSim = (net: SimNetwork): Layer.Layer<Transport> =>
  Layer.succeed(Transport, {
    listen: (host, port, accept) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          net.listen(accept)
          return { host, port: port === 0 ? 4222 : port }
        }),
        () => Effect.sync(() => net.listen(() => ({ onData: () => {}, onDrain: () => {}, onClose: () => {} })))
      )
  } satisfies TransportService)
