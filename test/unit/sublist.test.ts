import { describe, expect, it } from "vitest"
import { Sublist, type SublistResult } from "../../src/core/subject/sublist.js"

interface Sub {
  readonly id: number
  readonly subject: string
  readonly queue: string | undefined
}

let nextId = 0
const sub = (subject: string, queue?: string): Sub => ({ id: nextId++, subject, queue })

const ids = (subs: ReadonlyArray<Sub>): number[] => subs.map((s) => s.id).sort((a, b) => a - b)
const groups = (r: SublistResult<Sub>): Record<string, number[]> =>
  Object.fromEntries(r.qsubs.map((g) => [g[0].queue!, ids(g)]))

describe("Sublist literal subjects", () => {
  it("matches exact subjects only", () => {
    const sl = new Sublist<Sub>()
    const a = sub("foo.bar")
    const b = sub("foo")
    const c = sub("foo.bar.baz")
    for (const s of [a, b, c]) sl.insert(s)
    expect(ids(sl.match("foo.bar").psubs)).toEqual([a.id])
    expect(ids(sl.match("foo").psubs)).toEqual([b.id])
    expect(ids(sl.match("foo.bar.baz").psubs)).toEqual([c.id])
    expect(sl.match("foo.baz").psubs).toEqual([])
    expect(sl.match("bar").psubs).toEqual([])
    expect(sl.count()).toBe(3)
  })

  it("delivers to every distinct subscription on the same subject", () => {
    const sl = new Sublist<Sub>()
    const a = sub("foo")
    const b = sub("foo")
    sl.insert(a)
    sl.insert(b)
    expect(ids(sl.match("foo").psubs)).toEqual([a.id, b.id])
    expect(sl.count()).toBe(2)
  })

  it("stores the same object once when inserted twice", () => {
    const sl = new Sublist<Sub>()
    const a = sub("foo")
    sl.insert(a)
    sl.insert(a)
    expect(sl.match("foo").psubs).toEqual([a])
    expect(sl.count()).toBe(1)
    expect(sl.stats().numInserts).toBe(1)
    expect(sl.remove(a)).toBe(true)
    expect(sl.match("foo").psubs).toEqual([])
  })
})

describe("Sublist wildcards", () => {
  it("`*` matches exactly one token", () => {
    const sl = new Sublist<Sub>()
    const a = sub("foo.*")
    const b = sub("*.bar")
    const c = sub("*")
    for (const s of [a, b, c]) sl.insert(s)
    expect(ids(sl.match("foo.bar").psubs)).toEqual([a.id, b.id])
    expect(ids(sl.match("foo.baz").psubs)).toEqual([a.id])
    expect(ids(sl.match("foo").psubs)).toEqual([c.id])
    expect(ids(sl.match("foo.bar.baz").psubs)).toEqual([])
  })

  it("`>` matches one or more trailing tokens", () => {
    const sl = new Sublist<Sub>()
    const a = sub("foo.>")
    const b = sub(">")
    const c = sub("foo.*.>")
    for (const s of [a, b, c]) sl.insert(s)
    expect(ids(sl.match("foo").psubs)).toEqual([b.id])
    expect(ids(sl.match("foo.bar").psubs)).toEqual([a.id, b.id])
    expect(ids(sl.match("foo.bar.baz").psubs)).toEqual([a.id, b.id, c.id])
    expect(ids(sl.match("x.y.z.w").psubs)).toEqual([b.id])
  })

  it("treats `*` and `>` inside a longer token as plain characters", () => {
    const sl = new Sublist<Sub>()
    const a = sub("foo.b*")
    const b = sub("foo.>x")
    sl.insert(a)
    sl.insert(b)
    expect(sl.match("foo.bar").psubs).toEqual([])
    expect(sl.match("foo.b*").psubs).toEqual([a])
    expect(sl.match("foo.>x").psubs).toEqual([b])
  })
})

describe("Sublist queue groups", () => {
  it("groups queue subscribers by queue name across matching filters", () => {
    const sl = new Sublist<Sub>()
    const q1a = sub("foo.bar", "q1")
    const q1b = sub("foo.*", "q1")
    const q2a = sub("foo.>", "q2")
    const plain = sub("foo.bar")
    const q1other = sub("foo.baz", "q1")
    for (const s of [q1a, q1b, q2a, plain, q1other]) sl.insert(s)
    const r = sl.match("foo.bar")
    expect(ids(r.psubs)).toEqual([plain.id])
    expect(groups(r)).toEqual({ q1: [q1a.id, q1b.id], q2: [q2a.id] })
    expect(r.qsubs).toHaveLength(2)
  })

  it("drops a group from results once its last member leaves", () => {
    const sl = new Sublist<Sub>()
    const a = sub("foo", "q")
    const b = sub("foo", "q")
    sl.insert(a)
    sl.insert(b)
    expect(groups(sl.match("foo"))).toEqual({ q: [a.id, b.id] })
    sl.remove(a)
    expect(groups(sl.match("foo"))).toEqual({ q: [b.id] })
    sl.remove(b)
    expect(sl.match("foo").qsubs).toEqual([])
    expect(sl.hasInterest("foo")).toBe(false)
  })
})

describe("Sublist remove", () => {
  it("removes by identity, not by subject", () => {
    const sl = new Sublist<Sub>()
    const a = sub("foo")
    const b = sub("foo")
    sl.insert(a)
    sl.insert(b)
    expect(sl.remove(sub("foo"))).toBe(false)
    expect(sl.remove(a)).toBe(true)
    expect(sl.remove(a)).toBe(false)
    expect(sl.match("foo").psubs).toEqual([b])
    expect(sl.count()).toBe(1)
    expect(sl.stats().numRemoves).toBe(1)
  })

  it("prunes empty nodes so churn leaves no trie behind", () => {
    const sl = new Sublist<Sub>()
    const subs = ["a.b.c", "a.*.c", "a.>", ">", "*", "a.b.c.d.e", "x.y"].flatMap((s) => [sub(s), sub(s, "q")])
    for (let round = 0; round < 3; round++) {
      for (const s of subs) sl.insert(s)
      sl.match("a.b.c")
      for (const s of subs) expect(sl.remove(s)).toBe(true)
      const root = (sl as unknown as { root: { nodes: Map<string, unknown>; pwc: unknown; fwc: unknown } }).root
      expect(root.nodes.size).toBe(0)
      expect(root.pwc).toBeUndefined()
      expect(root.fwc).toBeUndefined()
    }
    expect(sl.count()).toBe(0)
  })

  it("keeps siblings when pruning a branch", () => {
    const sl = new Sublist<Sub>()
    const a = sub("a.b.c")
    const b = sub("a.b")
    const c = sub("a.b.d")
    for (const s of [a, b, c]) sl.insert(s)
    sl.remove(a)
    expect(sl.match("a.b").psubs).toEqual([b])
    expect(sl.match("a.b.d").psubs).toEqual([c])
    sl.remove(b)
    expect(sl.match("a.b.d").psubs).toEqual([c])
  })
})

describe("Sublist cache", () => {
  it("returns the identical cached object when nothing changed", () => {
    const sl = new Sublist<Sub>()
    sl.insert(sub("foo.*"))
    sl.insert(sub("foo.bar", "q"))
    const r1 = sl.match("foo.bar")
    const r2 = sl.match("foo.bar")
    expect(r2).toBe(r1)
    expect(sl.stats()).toMatchObject({ numMatches: 2, cacheHitRate: 0.5 })
    expect(sl.match("nothing.here")).toEqual({ psubs: [], qsubs: [] })
    expect(sl.stats()).toMatchObject({ numMatches: 3, numCache: 2 })
  })

  it("shows an insert in the next match of a cached subject", () => {
    const sl = new Sublist<Sub>()
    const a = sub("foo.bar")
    sl.insert(a)
    const before = sl.match("foo.bar")
    expect(sl.match("foo.baz").psubs).toEqual([])
    const b = sub("foo.*")
    const c = sub("foo.bar", "q")
    const d = sub("foo.bar")
    sl.insert(b)
    sl.insert(c)
    sl.insert(d)
    const after = sl.match("foo.bar")
    expect(ids(after.psubs)).toEqual([a.id, b.id, d.id])
    expect(groups(after)).toEqual({ q: [c.id] })
    expect(sl.match("foo.baz").psubs).toEqual([b])
    // a result handed out earlier is a snapshot: it never changes under the caller
    expect(before.psubs).toEqual([a])
    expect(before.qsubs).toEqual([])
  })

  it("shows a remove in the next match of a cached subject", () => {
    const sl = new Sublist<Sub>()
    const a = sub("foo.bar")
    const b = sub("foo.>")
    const c = sub("foo.bar", "q")
    for (const s of [a, b, c]) sl.insert(s)
    expect(sl.match("foo.bar").psubs).toHaveLength(2)
    expect(sl.match("foo.x.y").psubs).toEqual([b])
    sl.remove(b)
    expect(sl.match("foo.bar").psubs).toEqual([a])
    expect(sl.match("foo.x.y").psubs).toEqual([])
    sl.remove(c)
    expect(sl.match("foo.bar").qsubs).toEqual([])
    sl.remove(a)
    expect(sl.match("foo.bar").psubs).toEqual([])
  })

  it("a wildcard subscription under a busy prefix drops the cached results it would walk, other prefixes kept; matches stay exact", () => {
    const sl = new Sublist<Sub>()
    const all = sub("dev.>")
    sl.insert(all)
    for (let i = 0; i < 500; i++) sl.match(`dev.${i}.t`)
    const kept = sl.match("other.x")
    expect(sl.stats().numCache).toBe(501)
    // 2,000 wildcard subscriptions under `dev`: one pass over its entries, not 2,000.
    const plus = Array.from({ length: 2000 }, (_, j) => sub(`dev.*.f${j}`))
    for (const p of plus) sl.insert(p)
    expect(sl.stats().numCache).toBe(1)
    expect(sl.match("other.x")).toBe(kept)
    expect(ids(sl.match("dev.7.t").psubs)).toEqual([all.id])
    expect(ids(sl.match("dev.7.f3").psubs)).toEqual(ids([all, plus[3]]))
    for (const p of plus) sl.remove(p)
    expect(ids(sl.match("dev.7.f3").psubs)).toEqual([all.id])
  })

  it("leaves unrelated cached results alone", () => {
    const sl = new Sublist<Sub>()
    sl.insert(sub("a"))
    const r = sl.match("a")
    const other = sub("b.*")
    sl.insert(other)
    sl.remove(other)
    expect(sl.match("a")).toBe(r)
  })

  it("is bounded and evicts the oldest entry first", () => {
    const sl = new Sublist<Sub>({ cacheSize: 3 })
    sl.insert(sub(">"))
    const r1 = sl.match("s1")
    sl.match("s2")
    sl.match("s3")
    expect(sl.stats().numCache).toBe(3)
    sl.match("s4")
    expect(sl.stats().numCache).toBe(3)
    const r1again = sl.match("s1") // s1 was evicted: recomputed, equal but new
    expect(r1again).not.toBe(r1)
    expect(r1again).toEqual(r1)
    const r4 = sl.match("s4")
    expect(sl.match("s4")).toBe(r4)
  })

  it("evicts by age of insertion, skipping entries already invalidated", () => {
    const sl = new Sublist<Sub>({ cacheSize: 3 })
    sl.insert(sub(">")) // every result non-empty, so each is its own object
    const x = sub("s2")
    sl.insert(x)
    const r1 = sl.match("s1")
    sl.match("s2")
    const r3 = sl.match("s3")
    sl.remove(x) // drops cached s2
    expect(sl.stats().numCache).toBe(2)
    const r4 = sl.match("s4") // room left: nothing evicted
    expect(sl.match("s1")).toBe(r1)
    sl.match("s5") // full: s1 is the oldest
    expect(sl.match("s3")).toBe(r3)
    expect(sl.match("s4")).toBe(r4)
    expect(sl.match("s1")).not.toBe(r1)
  })

  it("keeps eviction order after the newest entry is invalidated", () => {
    const sl = new Sublist<Sub>({ cacheSize: 3 })
    sl.insert(sub(">"))
    const x = sub("s3")
    sl.insert(x)
    sl.match("s1")
    const r2 = sl.match("s2")
    sl.match("s3")
    sl.remove(x) // drops s3, the newest entry
    const r4 = sl.match("s4")
    const r5 = sl.match("s5") // evicts s1
    expect(sl.stats().numCache).toBe(3)
    expect(sl.match("s2")).toBe(r2)
    expect(sl.match("s4")).toBe(r4)
    expect(sl.match("s5")).toBe(r5)
  })

  it("can be disabled", () => {
    const sl = new Sublist<Sub>({ cacheSize: 0 })
    const a = sub("foo")
    sl.insert(a)
    expect(sl.match("foo").psubs).toEqual([a])
    expect(sl.match("foo").psubs).toEqual([a])
    expect(sl.stats()).toMatchObject({ numCache: 0, numMatches: 2, cacheHitRate: 0 })
  })
})

describe("Sublist hasInterest", () => {
  it("answers from the trie and from the cache without counting a match", () => {
    const sl = new Sublist<Sub>()
    sl.insert(sub("foo.*.baz"))
    sl.insert(sub("bar.>", "q"))
    expect(sl.hasInterest("foo.x.baz")).toBe(true)
    expect(sl.hasInterest("foo.x")).toBe(false)
    expect(sl.hasInterest("bar.x.y")).toBe(true)
    expect(sl.hasInterest("bar")).toBe(false)
    sl.match("foo.x.baz")
    sl.match("foo.x")
    expect(sl.hasInterest("foo.x.baz")).toBe(true)
    expect(sl.hasInterest("foo.x")).toBe(false)
    expect(sl.stats().numMatches).toBe(2)
  })

  it("ignores interior nodes that only lead to deeper subscriptions", () => {
    const sl = new Sublist<Sub>()
    sl.insert(sub("a.b.c"))
    sl.insert(sub("*.b.c"))
    expect(sl.hasInterest("a.b")).toBe(false)
    expect(sl.hasInterest("a")).toBe(false)
    expect(sl.hasInterest("z.b.c")).toBe(true)
  })
})

describe("Sublist stats and listing", () => {
  it("counts inserts, removes, matches, hit rate and fanout over cached results", () => {
    const sl = new Sublist<Sub>()
    const s1 = sub("foo")
    const s2 = sub("foo.*")
    const s3 = sub("foo.bar", "q")
    const s4 = sub("foo.bar", "q")
    const s5 = sub("foo.bar", "r")
    for (const s of [s1, s2, s3, s4, s5]) sl.insert(s)
    expect(sl.stats()).toEqual({
      numSubs: 5,
      numCache: 0,
      numInserts: 5,
      numRemoves: 0,
      numMatches: 0,
      cacheHitRate: 0,
      maxFanout: 0,
      avgFanout: 0
    })
    sl.match("foo.bar") // miss: fanout 1 psub + 2 queue groups = 3
    sl.match("foo.bar") // hit
    sl.match("foo") // miss: fanout 1
    sl.match("zzz") // miss: fanout 0
    sl.remove(s1) // drops the cached "foo"
    expect(sl.stats()).toEqual({
      numSubs: 4,
      numCache: 2,
      numInserts: 5,
      numRemoves: 1,
      numMatches: 4,
      cacheHitRate: 0.25,
      maxFanout: 3,
      avgFanout: 1.5
    })
  })

  it("lists every subscription in insertion order", () => {
    const sl = new Sublist<Sub>()
    const subs = [sub("b"), sub("a.>"), sub("a", "q"), sub("*")]
    for (const s of subs) sl.insert(s)
    expect(sl.all()).toEqual(subs)
    sl.remove(subs[1])
    sl.insert(subs[1])
    expect(sl.all()).toEqual([subs[0], subs[2], subs[3], subs[1]])
  })
})
