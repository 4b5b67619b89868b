// PacketIdSet (src/core/mqtt/v5/flow.ts), the Receive Maximum's record of inbound packet
// ids in flight: the same answers as a Set for any sequence of operations.
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { PacketIdSet } from "../../src/core/mqtt/v5/flow.js"

type Op = { readonly op: "add" | "delete" | "has"; readonly id: number }

const ids = (max: number) => fc.integer({ min: 1, max })
const ops = (max: number) => fc.array(fc.record({ op: fc.constantFrom<Op["op"]>("add", "delete", "has"), id: ids(max) }), { maxLength: 400 })

/** Every operation against a Set, and every id's membership at the end. */
const agrees = (list: ReadonlyArray<Op>, max: number): void => {
  const s = new PacketIdSet()
  const model = new Set<number>()
  for (const { op, id } of list) {
    if (op === "add") expect(s.add(id)).toBe(!model.has(id) && (model.add(id), true))
    else if (op === "delete") expect(s.delete(id)).toBe(model.delete(id))
    else expect(s.has(id)).toBe(model.has(id))
    expect(s.size).toBe(model.size)
  }
  for (let id = 1; id <= Math.min(max, 70_000); id++) if (s.has(id) !== model.has(id)) expect([id, s.has(id)]).toEqual([id, model.has(id)])
}

describe("PacketIdSet", () => {
  it("answers as a Set over few ids (long probe runs, many deletions in them)", () => {
    fc.assert(fc.property(ops(40), (list) => agrees(list, 40)), { numRuns: 500 })
  })

  it("answers as a Set over the whole packet id range", () => {
    fc.assert(fc.property(ops(65_535), (list) => agrees(list, 65_535)), { numRuns: 300 })
  })

  it("holds a whole window of consecutive ids going round the range, as a publisher uses them", () => {
    const s = new PacketIdSet()
    const model = new Set<number>()
    let next = 1
    let oldest = 1
    const inc = (id: number) => (id === 65_535 ? 1 : id + 1)
    for (let step = 0; step < 300_000; step++) {
      if (model.size < 1000 && (step % 7 !== 0 || model.size === 0)) {
        expect(s.add(next)).toBe(true)
        model.add(next)
        next = inc(next)
      } else {
        expect(s.delete(oldest)).toBe(true)
        model.delete(oldest)
        oldest = inc(oldest)
      }
    }
    expect(s.size).toBe(model.size)
    for (const id of model) expect(s.has(id)).toBe(true)
  })

  it("takes every packet id at once", () => {
    const s = new PacketIdSet()
    for (let id = 1; id <= 65_535; id++) expect(s.add(id)).toBe(true)
    expect(s.size).toBe(65_535)
    for (let id = 65_535; id >= 1; id -= 2) expect(s.delete(id)).toBe(true)
    for (let id = 1; id <= 65_535; id++) expect(s.has(id)).toBe(id % 2 === 0)
  })
})
