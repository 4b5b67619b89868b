// Payloads that MQTT sessions hold until the client acknowledges them (QoS 1/2 in
// flight), copied into reusable slabs instead of kept as views of the socket chunks
// they arrived in.
//
// Why: a view keeps its whole read chunk (an ArrayBuffer of up to 64 KiB) alive for a
// round trip to the subscriber. Living through two scavenges, the chunks are promoted
// to the old generation, and only a mark-compact frees them: at 16 KiB QoS 1 the server
// ran one every ~85 ms (46 in 5 s) and spent 34 µs per message; with the payloads in
// slabs that are reused, 2 in 5 s and 20 µs per message.
//
// A slab is reused once every payload in it was released, so a release must come
// exactly once per `hold` and only when nothing reads the payload any more: the session
// releases when an acknowledgement removes the message from its window (PUBACK,
// PUBCOMP). A held payload written by reference is retained by the output buffer until
// the socket write that carries it is done (OutBuf.writeRefPinned), so a write still
// queued on a slow socket never reads a reused slab. A payload that is never released
// (its session closed, or it moved to a stored session) only keeps its slab from reuse:
// the slab is garbage once no payload in it is reachable.

import type { Pinner } from "../../core/outbuf.js"

/** Bytes per slab: the size of a socket read, so a held payload pins no more than its chunk did. */
export const HELD_SLAB = 64 * 1024
/** Payloads larger than this are kept as they are (a view of their chunk, or their own buffer). */
export const HELD_MAX = 16 * 1024 + 1024
/** Empty slabs kept for reuse, at most (4 MB). */
export const HELD_FREE = 64

interface Slab {
  readonly buf: Buffer
  /** Payloads held in it and not yet released. */
  live: number
}

export class HeldPayloads implements Pinner {
  private current: Slab | undefined
  private at = 0
  private readonly slabs = new WeakMap<ArrayBufferLike, Slab>()
  private readonly free: Array<Buffer> = []
  // The last payload held, so the subscribers of one message share one copy.
  private lastSrc: Buffer | undefined
  private lastStart = -1
  private lastView: Buffer | undefined

  constructor(
    readonly slabSize: number = HELD_SLAB,
    readonly maxPayload: number = HELD_MAX,
    readonly maxFree: number = HELD_FREE
  ) {}

  /**
   * `src[start, end)` for a session to hold until `release`: a copy in a slab, or for a
   * large payload a view of `src`. Holding the same bytes again (another subscriber of
   * the message being routed) gives the same copy; each `hold` needs its `release`.
   */
  hold(src: Buffer, start: number, end: number): Buffer {
    const n = end - start
    if (n > this.maxPayload) return src.subarray(start, end)
    if (src === this.lastSrc && start === this.lastStart && this.lastView !== undefined && this.lastView.length === n) {
      this.slabs.get(this.lastView.buffer)!.live++
      return this.lastView
    }
    let slab = this.current
    if (slab === undefined || this.at + n > this.slabSize) slab = this.next()
    src.copy(slab.buf, this.at, start, end)
    const view = slab.buf.subarray(this.at, this.at + n)
    this.at += n
    slab.live++
    this.lastSrc = src
    this.lastStart = start
    this.lastView = view
    return view
  }

  /** Another reader of a held payload (a socket write queued by reference): its slab waits for the matching `release`. */
  retain(payload: Uint8Array): void {
    const slab = this.slabs.get(payload.buffer)
    if (slab !== undefined && slab.live > 0) slab.live++
  }

  /** A payload `hold` (or `retain`) returned is no longer read by whoever held it. */
  release(payload: Uint8Array): void {
    const slab = this.slabs.get(payload.buffer)
    if (slab === undefined || slab.live <= 0) return
    if (--slab.live > 0) return
    if (slab === this.current) {
      // Empty: fill it again from the start (no payload of it is read any more).
      this.at = 0
      this.lastView = undefined
    } else if (this.free.length < this.maxFree) {
      this.free.push(slab.buf)
    } else this.slabs.delete(slab.buf.buffer)
  }

  /** Slabs waiting for reuse (for tests and diagnostics). */
  get freeSlabs(): number {
    return this.free.length
  }

  private next(): Slab {
    const buf = this.free.pop() ?? Buffer.allocUnsafeSlow(this.slabSize)
    let slab = this.slabs.get(buf.buffer)
    if (slab === undefined) {
      slab = { buf, live: 0 }
      this.slabs.set(buf.buffer, slab)
    }
    this.current = slab
    this.at = 0
    this.lastView = undefined
    return slab
  }
}
