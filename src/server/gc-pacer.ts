// Young-generation GCs paced by the bytes read from client sockets. Node allocates an
// ArrayBuffer for every socket read, and V8 counts ArrayBuffers against the old
// generation until a GC frees them. A server reading hundreds of MB/s while allocating
// little JavaScript (small messages, publish-only) fills that allowance before its
// young generation fills, so V8 runs a full mark-compact of the whole heap every ~100 ms
// instead of scavenges, and stays in that mode (measured: 1 KiB 1->1 dropped from 670 k
// to 300 k msgs/s after a minute of 16-byte traffic). A scavenge every few MB read frees
// those buffers while they are young, for about a millisecond each.
//
// Every 2 MiB, not 8: with the young generation's floor (malloc-tuning.ts) its 8 MiB
// semi-spaces no longer fill between two paced scavenges when the messages are large,
// and the read buffers left waiting for one set V8's marking going (request-reply at
// 16 KiB: p99.9 5 -> 10-15 ms with the floor at 8 MiB pacing; 3.7 ms at 2 MiB, and
// publish-only 1 KiB and 16 KiB 1.4x and 2.5x the messages a second, same runs).
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { trimsMemory } from "../v8-runtime.js"

/** Bytes read between two paced scavenges: well under what makes V8 start marking (~24 MB). */
export const PACE_BYTES = 2 * 1024 * 1024

export class GcPacer {
  private read = 0

  constructor(
    private readonly minorGc: () => void,
    readonly everyBytes: number = PACE_BYTES
  ) {}

  /** `bytes` were read from a client socket. */
  add(bytes: number): void {
    this.read += bytes
    if (this.read >= this.everyBytes) {
      this.read = 0
      this.minorGc()
    }
  }
}

/** Bytes read since the last trim that make the next quiet spell worth one. */
export const TRIM_AFTER_BYTES = 4 * 1024 * 1024

/** How long reads must have stopped before memory is given back. */
export const QUIET_MS = 1000

/** After less traffic than TRIM_AFTER_BYTES, a quiet spell trims when the last trim is this old. */
export const TRIM_EVERY_MS = 30_000

/** A heap this large is left to V8's own pace: its full collections would pause too long. */
export const TRIM_MAX_HEAP = 128 * 1024 * 1024

/** One timer at a time, not keeping the process alive. */
export type After = (ms: number, f: () => void) => void

/**
 * Memory given back once traffic stops. A burst grows V8's young generation to 12-16 MiB
 * and leaves freed pages pooled; V8 keeps both until its memory reducer runs, 8-30 s
 * later or not at all (measured: RSS 88 MiB after a burst, 52 MiB after the collection
 * below). So after a quiet second that follows at least TRIM_AFTER_BYTES read (or any
 * reads, when the last trim is TRIM_EVERY_MS old), one memory-reducing collection. A
 * timer runs only while reads go on (one per QUIET_MS), none when the server is idle.
 */
export class IdleTrim {
  private sinceTrim = 0
  private recent = 0
  private armed = false

  private lastTrim: number

  constructor(
    private readonly trim: () => void,
    private readonly after: After,
    private readonly now: () => number
  ) {
    this.lastTrim = now()
  }

  /** `bytes` were read from a socket. */
  add(bytes: number): void {
    this.sinceTrim += bytes
    this.recent += bytes
    if (!this.armed) {
      this.armed = true
      this.after(QUIET_MS, this.check)
    }
  }

  /**
   * Start-up allocated a great deal (compiling the server): trimmed now, before the server
   * says it is ready, so that an idle server does no collecting of its own afterwards (run
   * a second later, V8's memory reducer followed it 8 s on with collections of its own:
   * 0.65-0.80% of a core over the first 20 idle seconds, 0.30-0.35% trimmed here).
   */
  started(): void {
    this.sinceTrim = 0
    this.lastTrim = this.now()
    this.trim()
  }

  private readonly check = (): void => {
    if (this.recent > 0) {
      this.recent = 0
      this.after(QUIET_MS, this.check)
      return
    }
    this.armed = false
    const now = this.now()
    if (this.sinceTrim >= TRIM_AFTER_BYTES || (this.sinceTrim > 0 && now - this.lastTrim >= TRIM_EVERY_MS)) {
      this.sinceTrim = 0
      this.lastTrim = now
      this.trim()
    }
  }
}

type GcFunction = (o: { type: string; flavor?: string }) => void
let exposed: GcFunction | null | undefined

/**
 * V8's `gc` function (`--expose-gc`, set at run time, reaches only contexts created
 * afterwards: the one made here, once, as each costs memory); undefined where the
 * runtime refuses.
 */
const exposedGc = (): GcFunction | undefined => {
  if (exposed === undefined) exposed = findGc() ?? null
  return exposed ?? undefined
}

const findGc = (): GcFunction | undefined => {
  try {
    v8.setFlagsFromString("--expose-gc")
    const gc = vm.runInNewContext("gc") as unknown
    return typeof gc === "function" ? (gc as GcFunction) : undefined
  } catch {
    return undefined
  }
}

/** V8's scavenge, as a function; undefined where the runtime refuses. */
export const nodeMinorGc = (): (() => void) | undefined => {
  const gc = exposedGc()
  return gc === undefined ? undefined : () => gc({ type: "minor" })
}

/**
 * V8's memory-reducing full collection (the one it runs under memory pressure: the young
 * generation shrunk, pooled pages returned), skipped while the heap is over TRIM_MAX_HEAP;
 * undefined before V8 12 (Node 22), whose `gc` does not take the `last-resort` flavor and
 * would run a plain full collection that returns nothing.
 */
export const nodeTrimGc = (v8Version: string = process.versions.v8): (() => void) | undefined => {
  if (!trimsMemory(v8Version)) return undefined
  const gc = exposedGc()
  if (gc === undefined) return undefined
  return () => {
    if (v8.getHeapStatistics().used_heap_size <= TRIM_MAX_HEAP) gc({ type: "major", flavor: "last-resort" })
  }
}
