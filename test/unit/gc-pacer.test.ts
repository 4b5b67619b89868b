// The scavenge pacing: one young-generation GC per PACE_BYTES read, whatever the chunk sizes.
import { describe, expect, it } from "vitest"
import { GcPacer, IdleTrim, nodeMinorGc, nodeTrimGc, PACE_BYTES, QUIET_MS, TRIM_AFTER_BYTES, TRIM_EVERY_MS } from "../../src/server/gc-pacer.js"

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

/** A hand-run timer: what IdleTrim asked for, fired when the test says. */
const manualTimer = () => {
  const due: Array<{ ms: number; f: () => void }> = []
  const t = {
    clock: 0,
    after: (ms: number, f: () => void) => void due.push({ ms, f }),
    due,
    /** The next timer fires, its time having passed. */
    fire: () => {
      const d = due.shift()!
      t.clock += d.ms
      d.f()
    }
  }
  return t
}

describe("IdleTrim", () => {
  it("gives memory back once, after a quiet spell that follows enough traffic", () => {
    let trims = 0
    const t = manualTimer()
    const idle = new IdleTrim(() => trims++, t.after, () => t.clock)
    idle.add(TRIM_AFTER_BYTES)
    expect(t.due).toEqual([{ ms: QUIET_MS, f: expect.any(Function) }])
    t.fire() // reads happened in the last period: not quiet yet
    expect(trims).toBe(0)
    expect(t.due.length).toBe(1)
    t.fire() // a whole period without reads
    expect(trims).toBe(1)
    expect(t.due.length).toBe(0) // idle: no timer at all
  })

  it("waits while reads go on, one timer at a time", () => {
    let trims = 0
    const t = manualTimer()
    const idle = new IdleTrim(() => trims++, t.after, () => t.clock)
    for (let period = 0; period < 5; period++) {
      for (let i = 0; i < 100; i++) idle.add(TRIM_AFTER_BYTES)
      expect(t.due.length).toBe(1)
      t.fire()
      expect(trims).toBe(0)
    }
    t.fire()
    expect(trims).toBe(1)
  })

  it("does nothing after a little traffic, and counts again from each trim", () => {
    let trims = 0
    const t = manualTimer()
    const idle = new IdleTrim(() => trims++, t.after, () => t.clock)
    idle.add(TRIM_AFTER_BYTES - 1)
    t.fire()
    t.fire()
    expect(trims).toBe(0)
    expect(t.due.length).toBe(0)
    idle.add(1) // the bytes before count too
    t.fire()
    t.fire()
    expect(trims).toBe(1)
    idle.add(100)
    t.fire()
    t.fire()
    expect(trims).toBe(1)
  })
})

describe("IdleTrim after light traffic", () => {
  it("trims after a quiet spell when the last trim is TRIM_EVERY_MS old, not more often", () => {
    let trims = 0
    const t = manualTimer()
    const idle = new IdleTrim(() => trims++, t.after, () => t.clock)
    idle.add(100)
    t.fire()
    t.fire()
    expect(trims).toBe(0) // 2 s after the start: too soon
    t.clock = TRIM_EVERY_MS
    idle.add(100)
    t.fire()
    t.fire()
    expect(trims).toBe(1)
    idle.add(100)
    t.fire()
    t.fire()
    expect(trims).toBe(1)
    expect(t.due.length).toBe(0)
  })
})

describe("IdleTrim at the end of start-up", () => {
  it("trims at once, arming no timer, and counts the start as its last trim", () => {
    let trims = 0
    const t = manualTimer()
    const idle = new IdleTrim(() => trims++, t.after, () => t.clock)
    idle.started()
    expect(trims).toBe(1)
    expect(t.due.length).toBe(0)
    // a little traffic soon after is not worth another (TRIM_EVERY_MS since the start)
    idle.add(1000)
    while (t.due.length > 0) t.fire()
    expect(trims).toBe(1)
    expect(t.due.length).toBe(0)
  })
})

describe("nodeTrimGc", () => {
  it("is there from V8 12 (Node 22) on, and not before, where gc() has no memory-reducing flavor", () => {
    expect(nodeTrimGc("11.3.244.8-node.33")).toBeUndefined()
    const trim = nodeTrimGc("12.4.254.21-node.33")
    expect(trim).toBeTypeOf("function")
    trim!()
  })
})
