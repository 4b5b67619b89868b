// Young-generation GCs paced by the bytes read from client sockets. Node allocates an
// ArrayBuffer for every socket read, and V8 counts ArrayBuffers against the old
// generation until a GC frees them. A server reading hundreds of MB/s while allocating
// little JavaScript (small messages, publish-only) fills that allowance before its
// young generation fills, so V8 runs a full mark-compact of the whole heap every ~100 ms
// instead of scavenges, and stays in that mode (measured: 1 KiB 1->1 dropped from 670 k
// to 300 k msgs/s after a minute of 16-byte traffic). A scavenge every few MB read frees
// those buffers while they are young, for about a millisecond each.
import * as v8 from "node:v8"
import * as vm from "node:vm"

/** Bytes read between two paced scavenges: well under what makes V8 start marking (~24 MB). */
export const PACE_BYTES = 8 * 1024 * 1024

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

/**
 * V8's scavenge, as a function (`--expose-gc`, set at run time, reaches only contexts
 * created afterwards: this one); undefined where the runtime refuses.
 */
export const nodeMinorGc = (): (() => void) | undefined => {
  try {
    v8.setFlagsFromString("--expose-gc")
    const gc = vm.runInNewContext("gc") as unknown
    if (typeof gc !== "function") return undefined
    return () => (gc as (o: { type: string }) => void)({ type: "minor" })
  } catch {
    return undefined
  }
}
