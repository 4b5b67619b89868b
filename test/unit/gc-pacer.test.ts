// The scavenge pacing: one young-generation GC per PACE_BYTES read, whatever the chunk sizes.
import { describe, expect, it } from "vitest"
import { GcPacer, nodeMinorGc, PACE_BYTES } from "../../src/server/gc-pacer.js"

describe("GcPacer", () => {
  it("asks for a scavenge once per PACE_BYTES read from sockets", () => {
    let gcs = 0
    const pacer = new GcPacer(() => gcs++)
    for (let i = 0; i < 1000; i++) pacer.add(65536)
    expect(gcs).toBe(Math.floor((1000 * 65536) / PACE_BYTES))
    const small = new GcPacer(() => gcs++, 100)
    gcs = 0
    for (let i = 0; i < 10; i++) small.add(30)
    expect(gcs).toBe(2)
  })

  it("finds V8's scavenge in this runtime", () => {
    const gc = nodeMinorGc()
    expect(gc).toBeTypeOf("function")
    gc!()
  })
})
