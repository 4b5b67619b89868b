// The slabs that hold QoS 1/2 payloads until acknowledged: a held payload keeps its
// bytes whatever is held or released after it, and slabs are reused once empty.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { HeldPayloads } from "../../src/server/mqtt/held.js"

const chunk = (text: string) => Buffer.from(`xx${text}yy`)

describe("HeldPayloads", () => {
  it("copies: the payload does not change when the read chunk is reused", () => {
    const held = new HeldPayloads(1024, 256, 4)
    const src = chunk("hello")
    const p = held.hold(src, 2, 7)
    src.fill(0)
    expect(p.toString()).toBe("hello")
    expect(p.buffer).not.toBe(src.buffer)
  })

  it("keeps a payload larger than its limit as a view of its source", () => {
    const held = new HeldPayloads(1024, 8, 4)
    const src = chunk("0123456789")
    const p = held.hold(src, 2, 12)
    expect(p.buffer).toBe(src.buffer)
    held.release(p) // not from a slab: ignored
    expect(held.freeSlabs).toBe(0)
  })

  it("gives the subscribers of one message one copy, released once per hold", () => {
    const held = new HeldPayloads(16, 8, 4)
    const src = chunk("abcd")
    const a = held.hold(src, 2, 6)
    const b = held.hold(src, 2, 6)
    expect(b).toBe(a)
    // fill the slab so the next hold starts another one
    held.hold(chunk("efghijkl"), 2, 10)
    held.hold(chunk("mnopqrst"), 2, 10)
    held.release(a)
    expect(a.toString()).toBe("abcd")
    expect(held.freeSlabs).toBe(0)
  })

  it("reuses a slab once every payload in it was released", () => {
    const held = new HeldPayloads(16, 8, 4)
    const first = [held.hold(chunk("aaaaaaaa"), 2, 10), held.hold(chunk("bbbbbbbb"), 2, 10)]
    const later = held.hold(chunk("cccccccc"), 2, 10) // a second slab
    for (const p of first) held.release(p)
    expect(held.freeSlabs).toBe(1)
    const again = held.hold(chunk("dddddddd"), 2, 10)
    held.hold(chunk("eeeeeeee"), 2, 10) // the second slab is full: the freed one comes back
    const reused = held.hold(chunk("ffffffff"), 2, 10)
    expect(reused.buffer).toBe(first[0].buffer)
    expect(later.toString()).toBe("cccccccc")
    expect(again.toString()).toBe("dddddddd")
  })

  it("never changes a payload that is still held or retained, under any order of holds, retains and releases", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant("hold" as const), len: fc.integer({ min: 0, max: 40 }), twice: fc.boolean() }),
            fc.record({ op: fc.constant("release" as const), pick: fc.nat() }),
            // a socket write queued by reference: one more reader until released
            fc.record({ op: fc.constant("retain" as const), pick: fc.nat() })
          ),
          { maxLength: 400 }
        ),
        (ops) => {
          const held = new HeldPayloads(64, 32, 2)
          const live: Array<{ view: Buffer; expect: string }> = []
          let n = 0
          for (const o of ops) {
            if (o.op === "hold") {
              const text = String(n++ % 10).repeat(o.len)
              const src = chunk(text)
              live.push({ view: held.hold(src, 2, 2 + o.len), expect: text })
              if (o.twice) live.push({ view: held.hold(src, 2, 2 + o.len), expect: text })
              // a copy must not depend on its source (larger ones are views by design)
              if (o.len <= 32) src.fill(0x2a)
            } else if (o.op === "retain" && live.length > 0) {
              const l = live[o.pick % live.length]!
              held.retain(l.view)
              live.push({ ...l })
            } else if (o.op === "release" && live.length > 0) {
              const [gone] = live.splice(o.pick % live.length, 1)
              held.release(gone!.view)
            }
            for (const l of live) expect(l.view.toString()).toBe(l.expect)
          }
        }
      ),
      { numRuns: 300 }
    )
  })
})
