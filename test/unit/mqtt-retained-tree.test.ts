// The retained-message tree against a brute-force reference (every retained topic
// checked with topicMatchesFilter), what a lookup costs, and lookups that pause and
// resume while messages change.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { RetainedTree, topicMatchesFilter, validateTopicFilter, validateTopicName } from "../../src/core/mqtt/index.js"

interface Msg {
  readonly topic: string
  readonly v: number
}

// Few level names, so topics and filters meet often; "" is an empty level, "$s" a system topic.
const LEVELS = ["a", "b", "", "$s", "c.d"]
const topic = fc
  .array(fc.constantFrom(...LEVELS), { minLength: 1, maxLength: 4 })
  .map((l) => l.join("/"))
  .filter((t) => validateTopicName(t).ok)
const filter = fc
  .tuple(fc.array(fc.constantFrom(...LEVELS, "+", "+"), { minLength: 0, maxLength: 4 }), fc.boolean())
  .filter(([l, hash]) => l.length > 0 || hash)
  .map(([l, hash]) => (hash ? [...l, "#"] : l).join("/"))
  .filter((f) => validateTopicFilter(f).ok)

type Op =
  | { readonly kind: "set"; readonly topic: string }
  | { readonly kind: "delete"; readonly topic: string }
  | { readonly kind: "match"; readonly filter: string; readonly batch: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("set" as const), topic }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("delete" as const), topic }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("match" as const), filter, batch: fc.integer({ min: 1, max: 4 }) }) }
)

const takeAll = (tree: RetainedTree<Msg>, f: string, batch: number): Array<Msg> => {
  const cursor = tree.match(f)
  const out: Array<Msg> = []
  // Small batches and step budgets: the lookup must resume exactly where it stopped.
  while (!cursor.take(out, batch, batch + 1)) {
    /* resume */
  }
  return out
}

describe("RetainedTree", () => {
  it("matches exactly what a brute-force scan with topicMatchesFilter matches", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const tree = new RetainedTree<Msg>()
        const ref = new Map<string, Msg>()
        let v = 0
        for (const o of ops) {
          if (o.kind === "set") {
            const m = { topic: o.topic, v: v++ }
            tree.set(o.topic, m)
            ref.set(o.topic, m)
          } else if (o.kind === "delete") {
            expect(tree.delete(o.topic)).toBe(ref.delete(o.topic))
          } else {
            const got = takeAll(tree, o.filter, o.batch).map((m) => m.topic).sort()
            const want = [...ref.keys()].filter((t) => topicMatchesFilter(t, o.filter)).sort()
            expect(got).toEqual(want)
          }
          expect(tree.size).toBe(ref.size)
        }
        for (const [t, m] of ref) expect(tree.get(t)).toBe(m)
        expect(tree.values().map((m) => m.topic).sort()).toEqual([...ref.keys()].sort())
      }),
      { numRuns: 500, seed: 15 }
    )
  })

  it("costs in proportion to what a filter matches, not to what is retained", () => {
    const tree = new RetainedTree<Msg>()
    for (let i = 0; i < 20_000; i++) tree.set(`dev/${i}/temp`, { topic: `dev/${i}/temp`, v: i })
    const cost = (f: string) => {
      const c = tree.match(f)
      const out: Array<Msg> = []
      c.take(out, Infinity, Infinity)
      return { matched: out.length, steps: c.steps }
    }
    expect(cost("nothing/here")).toEqual({ matched: 0, steps: 1 })
    expect(cost("dev/7/humidity")).toEqual({ matched: 0, steps: 3 })
    expect(cost("dev/7/temp")).toEqual({ matched: 1, steps: 4 })
    expect(cost("other/#")).toEqual({ matched: 0, steps: 1 })
    // `dev/+/temp` has to look at every device level: its 20,000 matches.
    const plus = cost("dev/+/temp")
    expect(plus.matched).toBe(20_000)
    expect(plus.steps).toBeLessThanOrEqual(3 * 20_000 + 3)
  })

  it("bounds each take by matches and by nodes visited", () => {
    const tree = new RetainedTree<Msg>()
    for (let i = 0; i < 5000; i++) tree.set(`x/${i}`, { topic: `x/${i}`, v: i })
    const c = tree.match("x/+/never")
    const out: Array<Msg> = []
    let takes = 0
    while (!c.take(out, 100, 500)) takes++
    expect(out).toEqual([])
    expect(takes).toBeGreaterThanOrEqual(Math.floor(5000 / 500) - 1)
    const all = tree.match("#")
    const first: Array<Msg> = []
    expect(all.take(first, 100, Infinity)).toBe(false)
    expect(first).toHaveLength(100)
  })

  it("keeps a paused lookup valid while messages are stored and removed, yielding only what was retained before it", () => {
    const tree = new RetainedTree<Msg>()
    for (let i = 0; i < 200; i++) tree.set(`s/${i}`, { topic: `s/${i}`, v: i })
    const c = tree.match("s/#")
    const out: Array<Msg> = []
    const removed = new Set<string>()
    let i = 0
    while (!c.take(out, 1, Infinity)) {
      const last = out[out.length - 1]
      // Whatever it yields is retained at that moment, and was before the lookup began.
      expect(tree.get(last.topic)).toBe(last)
      expect(last.v).toBeLessThan(200)
      const gone = `s/${(i * 7) % 200}`
      if (tree.delete(gone)) removed.add(gone)
      tree.set(`s/new/${i}`, { topic: `s/new/${i}`, v: 1000 + i })
      tree.set(`s/${(i * 13) % 200}`, { topic: `s/${(i * 13) % 200}`, v: 2000 + i })
      i++
    }
    expect(new Set(out.map((m) => m.topic)).size).toBe(out.length)
    for (const m of out) expect(m.v).toBeLessThan(200)
    expect(out.length).toBeLessThanOrEqual(200)
  })

  it("handles a topic of 30,000 levels without deep recursion, and prunes it away", () => {
    const tree = new RetainedTree<Msg>()
    const deep = Array.from({ length: 30_000 }, () => "l").join("/")
    tree.set(deep, { topic: deep, v: 1 })
    expect(takeAll(tree, "#", 1000).map((m) => m.v)).toEqual([1])
    expect(takeAll(tree, deep, 1000).map((m) => m.v)).toEqual([1])
    expect(tree.delete(deep)).toBe(true)
    expect(tree.size).toBe(0)
    expect(takeAll(tree, "#", 1000)).toEqual([])
    expect(tree.values()).toEqual([])
  })

  it("[MQTT-4.7.2-1] wildcards at the first level skip $ topics; a filter naming $ reaches them", () => {
    const tree = new RetainedTree<Msg>()
    for (const t of ["$SYS/x", "$SYS", "a/$b", "a"]) tree.set(t, { topic: t, v: 0 })
    const topics = (f: string) => takeAll(tree, f, 10).map((m) => m.topic).sort()
    expect(topics("#")).toEqual(["a", "a/$b"])
    expect(topics("+")).toEqual(["a"])
    expect(topics("+/+")).toEqual(["a/$b"])
    expect(topics("$SYS/#")).toEqual(["$SYS", "$SYS/x"])
    expect(topics("a/#")).toEqual(["a", "a/$b"])
  })
})
