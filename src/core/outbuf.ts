// Per-connection outbound buffer: the router appends protocol text and payloads, the
// shell takes the pending bytes once per flush and hands them to the socket in one
// (vectored) write. Bytes are appended to a slab; a full slab is sealed into the
// segment list rather than copied into a bigger one, and large payloads are queued
// by reference (writeRef), so a 16 KiB message fanned out to N clients is copied
// zero times. Bytes handed out by take()/takeAll() are never written again.
//
// Busy connections write into 64 KiB slabs from a shared SlabPool, which come back
// once the transport says their write is done (`written`). A fresh ArrayBuffer per
// flush made V8 see hundreds of MB/s of external memory and run a full mark-compact
// every ~100 ms in a long-running server: throughput halved (1 KiB 1->1: 670 k ->
// 300 k msgs/s) once it began.

/** Slabs above this size are dropped after take(), so a burst does not pin memory. */
const MAX_RETAINED = 64 * 1024
/** A slab with less free space than this after take() is not worth keeping. */
const MIN_TAIL = 512
/** Below this, a byte loop beats the native copy/write call. */
const SMALL = 24

interface FastWrites {
  latin1Write(s: string, offset: number): number
  utf8Write(s: string, offset: number): number
}

// Raw writers for encoders that reserve once per message: each writes at b[p] and
// returns the position after what it wrote; the caller reserved enough room.

/** UTF-8 of s; reserve 3 bytes per UTF-16 code unit. */
export const putUtf8 = (b: Buffer, p: number, s: string): number => {
  const n = s.length
  if (n >= SMALL) return p + (b as unknown as FastWrites).utf8Write(s, p)
  const p0 = p
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0x80) return p0 + (b as unknown as FastWrites).utf8Write(s, p0)
    b[p++] = c
  }
  return p
}

/** A non-negative integer in decimal (at most 16 digits for safe integers), without a string. */
export const putInt = (b: Buffer, p: number, n: number): number => {
  let v = Math.floor(n)
  if (!(v >= 0)) v = 0
  if (v < 10) {
    b[p] = 48 + v
    return p + 1
  }
  let digits = 1
  for (let t = v; t >= 10; t = Math.floor(t / 10)) digits++
  let q = p + digits
  do {
    b[--q] = 48 + (v % 10)
    v = Math.floor(v / 10)
  } while (v > 0)
  return p + digits
}

/** src[start, end) */
export const putBytes = (b: Buffer, p: number, src: Buffer, start: number, end: number): number => {
  const n = end - start
  if (n < SMALL) {
    for (let i = start; i < end; i++) b[p++] = src[i]
    return p
  }
  src.copy(b, p, start, end)
  return p + n
}

/** Room an integer needs, at most. */
export const INT_ROOM = 16

/** Slabs of one size, reused: what a connection's flushes write into once it is busy. */
export class SlabPool {
  private readonly free: Array<Buffer> = []
  constructor(
    readonly slabSize = 64 * 1024,
    /** Free slabs kept at most (the rest are left to the GC). */
    readonly maxFree = 512
  ) {}

  acquire(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.slabSize)
  }

  release(b: Buffer): void {
    if (this.free.length < this.maxFree) this.free.push(b)
  }

  get freeCount(): number {
    return this.free.length
  }
}

/**
 * An owner of reusable memory that payloads written by reference may live in: `retain`
 * keeps a payload's memory from reuse until the matching `release`.
 */
export interface Pinner {
  retain(payload: Uint8Array): void
  release(payload: Uint8Array): void
}

/** Pinned references whose writes never report done are let go (never released: their memory is just not reused) past this many. */
const MAX_PINNED = 8192

/** Batches from this size on go into pooled slabs. */
const POOLED_FROM = 16 * 1024
/** Pooled slabs whose writes never report done (a transport that cannot tell) are not waited for past this many. */
const MAX_RETIRED = 64

export class OutBuf {
  /** Sealed bytes waiting before the slab's pending bytes: slab slices and referenced payloads. */
  private segs: Array<Buffer> = []
  private segBytes = 0
  private buf: Buffer | undefined = undefined
  /** Pending bytes are buf[start, pos); buf[0, start) was handed out by take(). */
  private start = 0
  private pos = 0
  /** Size of the next fresh slab: follows the size of the last take(), within bounds. */
  private hint: number
  /** `buf` came from the pool. */
  private pooled = false
  /** takeAll() calls that handed out bytes, and how many of those writes are done. */
  private takes = 0
  private writes = 0
  /** Pooled slabs no longer written to, each with the take whose write frees it (in order). */
  private readonly retired: Array<Buffer> = []
  private readonly retiredTake: Array<number> = []
  /** Payloads queued by reference from a Pinner's memory, each with the take whose write lets it go. */
  private pinned: Array<Buffer> = []
  private pinnedTake: Array<number> = []
  private pinnedHead = 0
  private pinner: Pinner | undefined = undefined

  constructor(
    private readonly initialSize: number = 4096,
    private readonly pool: SlabPool | undefined = undefined
  ) {
    this.hint = initialSize
  }

  /**
   * The transport is done with the bytes of the oldest take not yet reported (writes
   * complete in order): pass it as the write's completion callback. Slabs whose every
   * byte went out go back to the pool.
   */
  readonly written = (): void => {
    this.writes++
    while (this.retired.length > 0 && this.retiredTake[0] <= this.writes) {
      this.pool!.release(this.retired.shift()!)
      this.retiredTake.shift()
    }
    if (this.pinnedHead < this.pinned.length) this.unpin(this.writes)
  }

  /** Releases the pinned payloads of takes up to `take`. */
  private unpin(take: number): void {
    const pinner = this.pinner!
    let h = this.pinnedHead
    while (h < this.pinned.length && this.pinnedTake[h] <= take) pinner.release(this.pinned[h++])
    if (h === this.pinned.length) {
      this.pinned = []
      this.pinnedTake = []
      h = 0
    }
    this.pinnedHead = h
  }

  private retire(slab: Buffer, take: number): void {
    if (this.retired.length >= MAX_RETIRED) {
      this.retired.shift()
      this.retiredTake.shift()
    }
    this.retired.push(slab)
    this.retiredTake.push(take)
  }

  /** Where the next byte goes in the buffer `reserve` returned. */
  get cursor(): number {
    return this.pos
  }

  /** Marks the bytes up to `end` (from a put* function) as written. */
  commit(end: number): void {
    this.pos = end
  }

  /** Bytes pending. */
  get length(): number {
    return this.segBytes + this.pos - this.start
  }

  /**
   * Queues src[start, end) by reference, without copying. The caller promises that
   * those bytes are never written again (socket chunks and parser payload buffers
   * are fresh allocations, so payloads qualify).
   */
  writeRef(src: Buffer, start: number, end: number): void {
    if (end <= start) return
    this.seal()
    this.segs.push(src.subarray(start, end))
    this.segBytes += end - start
  }

  /**
   * `writeRef` of a payload in memory that `pinner` reuses once released: it is retained
   * until the write that carries it is done (`written`), or released at once if the
   * pending bytes are dropped (`clear`).
   */
  writeRefPinned(src: Buffer, start: number, end: number, pinner: Pinner): void {
    if (end <= start) return
    // One owner per connection in practice; another one's payload is copied, not pinned.
    if (this.pinner !== undefined && this.pinner !== pinner) return this.writeBytes(src, start, end)
    this.writeRef(src, start, end)
    this.pinner = pinner
    if (this.pinned.length - this.pinnedHead >= MAX_PINNED) {
      // The transport does not report writes done: stop tracking the older half (never
      // released, so their memory is never reused: safe).
      const from = this.pinnedHead + MAX_PINNED / 2
      this.pinned = this.pinned.slice(from)
      this.pinnedTake = this.pinnedTake.slice(from)
      this.pinnedHead = 0
    }
    pinner.retain(src)
    this.pinned.push(src)
    this.pinnedTake.push(this.takes + 1)
  }

  /** Moves the slab's pending bytes to the segment list (no copy). */
  private seal(): void {
    if (this.pos > this.start) {
      this.segs.push((this.buf as Buffer).subarray(this.start, this.pos))
      this.segBytes += this.pos - this.start
      this.start = this.pos
    }
  }

  writeByte(b: number): void {
    const buf = this.reserve(1)
    buf[this.pos++] = b
  }

  /** `\r\n` */
  writeCrlf(): void {
    const buf = this.reserve(2)
    buf[this.pos] = 13
    buf[this.pos + 1] = 10
    this.pos += 2
  }

  /** For protocol text known to be ASCII (other code units are truncated to a byte). */
  writeAscii(s: string): void {
    const n = s.length
    const buf = this.reserve(n)
    let p = this.pos
    if (n < SMALL) {
      for (let i = 0; i < n; i++) buf[p++] = s.charCodeAt(i)
    } else {
      p += (buf as unknown as FastWrites).latin1Write(s, p)
    }
    this.pos = p
  }

  /** For subjects, sids and other text that may be UTF-8. */
  writeUtf8(s: string): void {
    const buf = this.reserve(s.length * 3)
    this.pos = putUtf8(buf, this.pos, s)
  }

  writeBytes(src: Buffer, start: number, end: number): void {
    if (end <= start) return
    const buf = this.reserve(end - start)
    this.pos = putBytes(buf, this.pos, src, start, end)
  }

  /** A non-negative integer in decimal, written digit by digit (no string). */
  writeInt(n: number): void {
    const buf = this.reserve(INT_ROOM)
    this.pos = putInt(buf, this.pos, n)
  }

  /**
   * Hands every pending byte to the caller, in order, as one or more buffers (for one
   * vectored write), and starts fresh; undefined when nothing is pending. The returned
   * memory is never written again.
   */
  takeAll(): Array<Buffer> | undefined {
    this.seal()
    const n = this.segBytes
    if (n === 0) return undefined
    const out = this.segs
    this.segs = []
    this.segBytes = 0
    this.takes++
    this.hint = Math.min(Math.max(n, this.initialSize), MAX_RETAINED)
    const buf = this.buf
    // A pooled slab serves one take (its bytes are free again once that write is done);
    // an idle connection holds none.
    if (buf !== undefined && this.pooled) this.retire(buf, this.takes)
    if (buf !== undefined && (this.pooled || buf.length > MAX_RETAINED || buf.length - this.pos < MIN_TAIL)) {
      this.buf = undefined
      this.pooled = false
      this.start = this.pos = 0
    }
    return out
  }

  /** Like takeAll, as a single buffer (joined when there are several). */
  take(): Buffer | undefined {
    const all = this.takeAll()
    if (all === undefined) return undefined
    return all.length === 1 ? all[0] : Buffer.concat(all)
  }

  /** Drops the pending bytes. */
  clear(): void {
    this.segs = []
    this.segBytes = 0
    // pinned payloads of the dropped batch are not written: let them go now
    if (this.pinnedHead < this.pinned.length) this.dropPending()
    if (this.buf !== undefined && this.pooled) {
      // none of its bytes was handed out (a pooled slab serves one take): free at once
      this.pool!.release(this.buf)
      this.buf = undefined
      this.pooled = false
      this.start = 0
    } else if (this.buf !== undefined && this.buf.length > MAX_RETAINED) {
      this.buf = undefined
      this.start = 0
    }
    this.pos = this.start
  }

  private dropPending(): void {
    const next = this.takes + 1
    let n = this.pinned.length
    while (n > this.pinnedHead && this.pinnedTake[n - 1] === next) this.pinner!.release(this.pinned[--n])
    this.pinned.length = n
    this.pinnedTake.length = n
  }

  /**
   * For encoders that write a whole message at once: the buffer, with room for n more
   * bytes at `cursor`; write there with the put* functions, then `commit` the end.
   */
  reserve(n: number): Buffer {
    const buf = this.buf
    if (buf !== undefined && this.pos + n <= buf.length) return buf
    return this.grow(n)
  }

  private grow(n: number): Buffer {
    // What is pending stays where it is (sealed); the new slab grows geometrically while
    // a batch accumulates, up to MAX_RETAINED, and a fresh batch starts at the hint.
    const batching = this.segBytes > 0 || this.pos > this.start
    this.seal()
    const prev = this.buf === undefined ? 0 : this.buf.length
    // its bytes (all of this batch) go out with the next take
    if (this.buf !== undefined && this.pooled) this.retire(this.buf, this.takes + 1)
    const size = Math.max(n, batching ? Math.min(Math.max(2 * prev, this.hint), MAX_RETAINED) : this.hint)
    const pool = this.pool
    this.pooled = pool !== undefined && size >= POOLED_FROM && n <= pool.slabSize
    const grown = this.pooled ? pool!.acquire() : Buffer.allocUnsafe(size)
    this.buf = grown
    this.start = 0
    this.pos = 0
    return grown
  }
}
