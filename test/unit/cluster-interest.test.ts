import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type InterestChange, RemoteInterest, type RemoteSub } from "../../src/core/cluster/interest.js"
import type { SublistResult } from "../../src/core/subject/sublist.js"
import { refMatch } from "../../src/sim/reference.js"

// Remote interest against a brute-force model: a list of every entry, scanned on each query.

const plain = (account: string, subject: string, fromLeaf = false, origin = "") => ({ account, subject, queue: "", weight: 1, fromLeaf, origin })
const queue = (account: string, subject: string, q: string, weight: number, fromLeaf = false) => ({ account, subject, queue: q, weight, fromLeaf, origin: "" })

describe("RemoteInterest", () => {
  it("answers which remotes want a subject, per account", () => {
    const t = new RemoteInterest<string>()
    expect(t.add("r1", plain("$G", "foo.*"))).toBe("added")
    expect(t.add("r2", plain("$G", "foo.bar"))).toBe("added")
    expect(t.add("r3", plain("ACC", "foo.bar"))).toBe("added")
    expect(t.remotes("$G", "foo.bar").sort()).toEqual(["r1", "r2"])
    expect(t.remotes("ACC", "foo.bar")).toEqual(["r3"])
    expect(t.remotes("$G", "foo")).toEqual([])
    expect(t.hasInterest("$G", "foo.baz")).toBe(true)
    expect(t.hasInterest("OTHER", "foo.bar")).toBe(false)
  })

  it("a repeated plain RS+ changes nothing and one RS- removes it (as nats-server)", () => {
    const t = new RemoteInterest<string>()
    expect(t.add("r", plain("$G", "foo"))).toBe("added")
    expect(t.add("r", plain("$G", "foo"))).toBe("unchanged")
    expect(t.count("r")).toBe(1)
    expect(t.remove("r", plain("$G", "foo"))).toBe(true)
    expect(t.hasInterest("$G", "foo")).toBe(false)
    expect(t.remove("r", plain("$G", "foo"))).toBe(false)
  })

  it("a queue RS+ sets the group's weight behind the remote, seen by cached matches at once", () => {
    const t = new RemoteInterest<string>()
    t.add("r1", queue("$G", "work.*", "W", 1))
    t.add("r2", queue("$G", "work.>", "W", 3))
    const before = t.match("$G", "work.a")
    expect(before.qsubs).toHaveLength(1)
    expect(before.qsubs[0].map((s) => [s.remote, s.weight]).sort()).toEqual([["r1", 1], ["r2", 3]])
    expect(t.add("r1", queue("$G", "work.*", "W", 2))).toBe("weight")
    expect(t.add("r1", queue("$G", "work.*", "W", 2))).toBe("unchanged")
    expect(t.match("$G", "work.a").qsubs[0].find((s) => s.remote === "r1")!.weight).toBe(2)
    expect(t.remove("r1", queue("$G", "work.*", "W", 0))).toBe(true)
    expect(t.match("$G", "work.a").qsubs[0].map((s) => s.remote)).toEqual(["r2"])
  })

  it("keeps a route's leaf interest (LS+) apart from its own (RS+) on the same subject", () => {
    const t = new RemoteInterest<string>()
    t.add("r", plain("$G", "foo"))
    expect(t.add("r", plain("$G", "foo", true, "LEAF1"))).toBe("added")
    expect(t.match("$G", "foo").psubs.map((s) => [s.fromLeaf, s.origin]).sort()).toEqual([[false, ""], [true, "LEAF1"]])
    // LS- names no origin: it removes the leaf entry, RS- the other
    expect(t.remove("r", plain("$G", "foo", true))).toBe(true)
    expect(t.match("$G", "foo").psubs.map((s) => s.fromLeaf)).toEqual([false])
  })

  it("refuses invalid subjects, queue names and weights (nats-server answers -ERR 'Invalid Subscription')", () => {
    const t = new RemoteInterest<string>()
    expect(t.add("r", plain("$G", "foo..bar"))).toBe("invalid")
    expect(t.add("r", plain("$G", "foo.>.bar"))).toBe("invalid")
    expect(t.add("r", queue("$G", "foo", "bad queue", 1))).toBe("invalid")
    expect(t.add("r", queue("$G", "foo", "q", 0))).toBe("invalid")
    expect(t.count()).toBe(0)
  })

  it("bounds the entries one remote may hold", () => {
    const t = new RemoteInterest<string>({ maxPerRemote: 2 })
    expect(t.add("r", plain("$G", "a"))).toBe("added")
    expect(t.add("r", plain("$G", "b"))).toBe("added")
    expect(t.add("r", plain("$G", "c"))).toBe("limit")
    expect(t.add("r", plain("$G", "a"))).toBe("unchanged")
    expect(t.add("other", plain("$G", "c"))).toBe("added")
    t.remove("r", plain("$G", "a"))
    expect(t.add("r", plain("$G", "c"))).toBe("added")
  })

  it("drops everything a remote said when its connection closes", () => {
    const t = new RemoteInterest<string>()
    t.add("r1", plain("$G", "a"))
    t.add("r1", queue("ACC", "b", "q", 2))
    t.add("r2", plain("$G", "a"))
    expect(t.entries("r1").map((s) => s.subject)).toEqual(["a", "b"])
    expect(t.dropRemote("r1")).toBe(2)
    expect(t.dropRemote("r1")).toBe(0)
    expect(t.remotes("$G", "a")).toEqual(["r2"])
    expect(t.hasInterest("ACC", "b")).toBe(false)
    expect(t.count()).toBe(1)
  })
})

// ---- against a brute-force model ----

interface ModelEntry {
  readonly remote: string
  readonly account: string
  readonly subject: string
  readonly queue: string
  readonly fromLeaf: boolean
  weight: number
}

const remote = fc.constantFrom("r1", "r2", "r3")
const account = fc.constantFrom("$G", "ACC")
const literal = fc.array(fc.constantFrom("a", "b", "c"), { minLength: 1, maxLength: 3 }).map((t) => t.join("."))
const filter = fc
  .tuple(fc.array(fc.constantFrom("a", "b", "*"), { minLength: 0, maxLength: 3 }), fc.boolean())
  .filter(([t, fwc]) => t.length > 0 || fwc)
  .map(([t, fwc]) => (fwc ? [...t, ">"] : t).join("."))
const key = fc.record({ remote, account, subject: filter, queue: fc.constantFrom("", "", "q1", "q2"), fromLeaf: fc.boolean() })

interface Key {
  readonly remote: string
  readonly account: string
  readonly subject: string
  readonly queue: string
  readonly fromLeaf: boolean
}

// Keys come from a small pool drawn per run, so updates and removals often hit held entries.
type Op =
  | { readonly kind: "add"; readonly k: number; readonly weight: number }
  | { readonly kind: "remove"; readonly k: number }
  | { readonly kind: "drop"; readonly remote: string }
  | { readonly kind: "match"; readonly account: string; readonly subject: string }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("add" as const), k: fc.nat(), weight: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("remove" as const), k: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("drop" as const), remote }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("match" as const), account, subject: literal }) }
)

const same = (a: Key, b: Key) =>
  a.remote === b.remote && a.account === b.account && a.subject === b.subject && a.queue === b.queue && a.fromLeaf === b.fromLeaf

const describeSub = (s: { remote: string; subject: string; fromLeaf: boolean; weight: number }) => `${s.remote} ${s.subject} ${s.fromLeaf} ${s.weight}`

/** A result as sorted strings: plain entries, and queue name -> its entries. */
const canonical = (r: SublistResult<RemoteSub<string>>) => {
  const groups: Record<string, Array<string>> = {}
  for (const g of r.qsubs) {
    const name = g[0].queue!
    expect(groups[name]).toBeUndefined()
    groups[name] = g.map(describeSub).sort()
  }
  return { plain: r.psubs.map(describeSub).sort(), groups }
}

const naive = (model: ReadonlyArray<ModelEntry>, acc: string, subject: string) => {
  const hits = model.filter((e) => e.account === acc && refMatch(subject, e.subject))
  const groups: Record<string, Array<string>> = {}
  for (const e of hits) if (e.queue !== "") (groups[e.queue] ??= []).push(describeSub(e))
  for (const q of Object.keys(groups)) groups[q].sort()
  return { plain: hits.filter((e) => e.queue === "").map(describeSub).sort(), groups }
}

describe("RemoteInterest matches like a scan of every entry", () => {
  it("over random RS+/RS-/LS+/LS-, drops and queries, with and without a match cache", () => {
    fc.assert(
      fc.property(fc.array(key, { minLength: 1, maxLength: 8 }), fc.array(op, { maxLength: 80 }), fc.constantFrom(0, 4, 1024), (pool, ops, cacheSize) => {
        const t = new RemoteInterest<string>({ cacheSize })
        let model: Array<ModelEntry> = []
        for (const o of ops) {
          if (o.kind === "add") {
            const k = pool[o.k % pool.length]
            const u = { ...k, weight: k.queue === "" ? 1 : o.weight, origin: "" }
            const held = model.find((e) => same(e, k))
            const expected: InterestChange = held === undefined ? "added" : k.queue !== "" && held.weight !== u.weight ? "weight" : "unchanged"
            expect(t.add(k.remote, u)).toBe(expected)
            if (held === undefined) model.push({ ...k, weight: u.weight })
            else held.weight = u.weight
          } else if (o.kind === "remove") {
            const k = pool[o.k % pool.length]
            const held = model.some((e) => same(e, k))
            expect(t.remove(k.remote, k)).toBe(held)
            model = model.filter((e) => !same(e, k))
          } else if (o.kind === "drop") {
            expect(t.dropRemote(o.remote)).toBe(model.filter((e) => e.remote === o.remote).length)
            model = model.filter((e) => e.remote !== o.remote)
          } else {
            const want = naive(model, o.account, o.subject)
            expect(canonical(t.match(o.account, o.subject))).toEqual(want)
            expect(t.hasInterest(o.account, o.subject)).toBe(want.plain.length > 0 || Object.keys(want.groups).length > 0)
            const remotes = new Set(model.filter((e) => e.account === o.account && refMatch(o.subject, e.subject)).map((e) => e.remote))
            expect(t.remotes(o.account, o.subject).sort()).toEqual([...remotes].sort())
          }
          expect(t.count()).toBe(model.length)
        }
      }),
      { numRuns: 300 }
    )
  })
})
