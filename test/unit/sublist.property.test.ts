import { describe, expect, it } from "vitest"
import fc from "fast-check"
import { SubjectSet } from "../../src/core/subject/subject-set.js"
import { Sublist, type SublistResult } from "../../src/core/subject/sublist.js"
import { subjectsCollide } from "../../src/core/subject/subject.js"
import { refMatch } from "../../src/sim/reference.js"

// Sublist against a naive model that scans every live subscription, over random
// insert/remove/match sequences on a small token alphabet so that subjects collide
// often, with cache sizes that force eviction as well as a disabled cache.

interface Sub {
  readonly id: number
  readonly subject: string
  readonly queue: string | undefined
}


const literal = fc.array(fc.constantFrom("a", "b", "c"), { minLength: 1, maxLength: 4 }).map((t) => t.join("."))
const filter = fc
  .tuple(fc.array(fc.constantFrom("a", "b", "c", "*"), { minLength: 0, maxLength: 4 }), fc.boolean())
  .filter(([t, fwc]) => t.length > 0 || fwc)
  .map(([t, fwc]) => (fwc ? [...t, ">"] : t).join("."))

type Op =
  | { readonly kind: "insert"; readonly subject: string; readonly queue: string | undefined }
  | { readonly kind: "remove"; readonly index: number }
  | { readonly kind: "match"; readonly subject: string }
  | { readonly kind: "interest"; readonly subject: string }
  | { readonly kind: "collides"; readonly pattern: string }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("insert" as const), subject: filter, queue: fc.constantFrom(undefined, undefined, "q1", "q2") }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("remove" as const), index: fc.nat() }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("match" as const), subject: literal }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("interest" as const), subject: literal }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("collides" as const), pattern: filter }) }
)

const sortedIds = (subs: ReadonlyArray<Sub>): number[] => subs.map((s) => s.id).sort((a, b) => a - b)

/** A result in a canonical form: sorted psub ids, and queue name -> sorted member ids. */
const canonical = (r: SublistResult<Sub>) => {
  const groups: Record<string, number[]> = {}
  for (const g of r.qsubs) {
    expect(g.length).toBeGreaterThan(0)
    const queue = g[0].queue!
    expect(g.every((s) => s.queue === queue)).toBe(true)
    expect(groups[queue]).toBeUndefined() // one group per queue name
    groups[queue] = sortedIds(g)
  }
  expect(r.psubs.every((s) => s.queue === undefined)).toBe(true)
  return { psubs: sortedIds(r.psubs), groups }
}

const naive = (live: ReadonlyArray<Sub>, subject: string) => {
  const matching = live.filter((s) => refMatch(subject, s.subject))
  const groups: Record<string, number[]> = {}
  for (const s of matching) if (s.queue !== undefined) (groups[s.queue] ??= []).push(s.id)
  for (const q of Object.keys(groups)) groups[q].sort((a, b) => a - b)
  return { psubs: sortedIds(matching.filter((s) => s.queue === undefined)), groups }
}

describe("Sublist matches like a scan of every subscription", () => {
  it("over random insert/remove/match sequences", () => {
    fc.assert(
      fc.property(fc.constantFrom(0, 1, 3, 1024), fc.array(op, { maxLength: 80 }), (cacheSize, ops) => {
        const sl = new Sublist<Sub>({ cacheSize })
        const created: Sub[] = []
        let live: Sub[] = []
        let inserts = 0
        let removes = 0
        let matches = 0
        for (const o of ops) {
          switch (o.kind) {
            case "insert": {
              const s: Sub = { id: created.length, subject: o.subject, queue: o.queue }
              created.push(s)
              live.push(s)
              sl.insert(s)
              inserts++
              break
            }
            case "remove": {
              if (created.length === 0) break
              const s = created[o.index % created.length]
              const wasLive = live.includes(s)
              expect(sl.remove(s)).toBe(wasLive)
              if (wasLive) {
                live = live.filter((x) => x !== s)
                removes++
              }
              break
            }
            case "match": {
              const expected = naive(live, o.subject)
              const r = sl.match(o.subject)
              expect(canonical(r)).toEqual(expected)
              const again = sl.match(o.subject)
              if (cacheSize > 0) expect(again).toBe(r)
              expect(canonical(again)).toEqual(expected)
              matches += 2
              break
            }
            case "interest": {
              const expected = live.some((s) => refMatch(o.subject, s.subject))
              expect(sl.hasInterest(o.subject)).toBe(expected)
              break
            }
            case "collides": {
              expect(sl.collides(o.pattern)).toBe(live.some((s) => subjectsCollide(s.subject, o.pattern)))
              break
            }
          }
          expect(sl.count()).toBe(live.length)
        }
        expect(sl.all()).toEqual(live)
        const st = sl.stats()
        expect(st.numSubs).toBe(live.length)
        expect(st.numInserts).toBe(inserts)
        expect(st.numRemoves).toBe(removes)
        expect(st.numMatches).toBe(matches)
        expect(st.numCache).toBeLessThanOrEqual(cacheSize)
        let chained = 0
        type Link = { next: Link | undefined }
        for (let e = (sl as unknown as { oldest: Link | undefined }).oldest; e !== undefined; e = e.next) chained++
        expect(chained).toBe(st.numCache)
        expect(st.cacheHitRate).toBeGreaterThanOrEqual(cacheSize > 0 && matches > 0 ? 0.5 : 0)
        expect(st.cacheHitRate).toBeLessThanOrEqual(1)
        // Every match result, cached or fresh, still agrees with the model at the end.
        for (const subject of ["a", "a.b", "a.b.c", "c.c.c.c", "b.a"]) {
          expect(canonical(sl.match(subject))).toEqual(naive(live, subject))
        }
        // Removing everything empties the trie.
        for (const s of live) sl.remove(s)
        const root = (sl as unknown as { root: { nodes: Map<string, unknown>; pwc: unknown; fwc: unknown } }).root
        expect(root.nodes.size).toBe(0)
        expect(root.pwc).toBeUndefined()
        expect(root.fwc).toBeUndefined()
      }),
      { numRuns: 1000 }
    )
  })
})

describe("SubjectSet answers collisions like a scan of every member", () => {
  it("over random add/collides sequences, literals and wildcards mixed", () => {
    const anySubject = fc.oneof(literal, filter)
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), anySubject), { maxLength: 60 }), (ops) => {
        const set = new SubjectSet()
        const members: string[] = []
        for (const [add, subject] of ops) {
          expect(set.collides(subject)).toBe(members.some((m) => subjectsCollide(m, subject)))
          if (add) {
            set.add(subject)
            members.push(subject)
          }
        }
      }),
      { numRuns: 1000 }
    )
  })
})

