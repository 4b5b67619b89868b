// A stream's subjects are checked against each other and against other streams'
// through a Sublist, never pair by pair (20,000 subjects took 10.7 s, stalling every
// client), and a long list can be checked a slice at a time.
import { beforeEach, describe, expect, it, vi } from "vitest"

const calls = vi.hoisted(() => ({ collide: 0 }))
vi.mock("../../src/core/subject/subject.js", async (importOriginal) => {
  const orig = await importOriginal<typeof import("../../src/core/subject/subject.js")>()
  return {
    ...orig,
    subjectsCollide: (a: string, b: string) => {
      calls.collide++
      return orig.subjectsCollide(a, b)
    }
  }
})

const { normalizeStreamConfig, overlaps, SubjectsCheck } = await import("../../src/core/jetstream/stream-config.js")

const subjects = (n: number, prefix = "orders") => Array.from({ length: n }, (_, i) => `${prefix}.region${i % 50}.item${i}`)

describe("stream subjects", () => {
  beforeEach(() => {
    calls.collide = 0
  })

  it("checks 5,000 subjects against each other without comparing pairs (regression: quadratic)", () => {
    const r = normalizeStreamConfig({ subjects: subjects(5000) }, "BIG", true)
    expect(r._tag).toBe("Right")
    // One comparison each with the JetStream API's subjects; 12.5 million pairs before.
    expect(calls.collide).toBeLessThanOrEqual(5000)
  })

  it("finds a duplicate at the end of 20,000 subjects, wildcards included", () => {
    const dup = normalizeStreamConfig({ subjects: [...subjects(20_000), "orders.region7.*"] }, "BIG", true)
    expect(dup._tag === "Left" && dup.left.description).toBe("duplicate subjects detected")
    const same = normalizeStreamConfig({ subjects: ["a.b", ...subjects(20_000), "a.b"] }, "BIG", true)
    expect(same._tag === "Left" && same.left.description).toBe("duplicate subjects detected")
    const fine = normalizeStreamConfig({ subjects: [...subjects(20_000), "orders.region7"] }, "BIG", true)
    expect(fine._tag).toBe("Right")
  })

  it("finds overlaps with other streams' subjects without comparing pairs", () => {
    expect(overlaps(subjects(3000, "new"), subjects(3000))).toBe(false)
    expect(overlaps([...subjects(3000, "new"), "orders.*.item2999"], subjects(3000))).toBe(true)
    expect(overlaps(["orders.>"], subjects(3000))).toBe(true)
    expect(calls.collide).toBe(0)
  })

  it("can be checked a slice at a time, with the same verdict", () => {
    const list = [...subjects(10_000), "orders.region3.item3"]
    const check = new SubjectsCheck(list)
    let slices = 0
    let r: ReturnType<InstanceType<typeof SubjectsCheck>["step"]>
    while ((r = check.step(1000)) === undefined) slices++
    expect(slices).toBe(10)
    expect(r !== "done" && r.description).toBe("duplicate subjects detected")
    expect(new SubjectsCheck(subjects(2500)).step(1000)).toBeUndefined()
    expect(new SubjectsCheck(["ok", "not ok"]).step(10)).toMatchObject({ description: "invalid subject 'not ok'" })
    expect(new SubjectsCheck(["$JS.API.>"]).step(10)).toMatchObject({ err_code: 10052 })
  })
})
