// Keys that end at a time, earliest first, one entry per key (src/core/expiry-queue.ts):
// checked against a plain list under seeded random sets, deletes and bounded takes.
import { describe, expect, it } from "vitest"
import { ExpiryQueue } from "../../src/core/expiry-queue.js"

describe("ExpiryQueue", () => {
  it("gives keys earliest first, ties in the order they were set; a key set again moves, a deleted one leaves", () => {
    const q = new ExpiryQueue<string>()
    q.set("a", 30)
    q.set("b", 10)
    q.set("c", 20)
    q.set("d", 10)
    q.set("a", 5)
    expect(q.delete("c")).toBe(true)
    expect(q.delete("c")).toBe(false)
    expect([q.size, q.next()]).toEqual([3, 5])
    const out: Array<string> = []
    expect(q.takeDue(9, 10, out)).toBe(true)
    expect(out).toEqual(["a"])
    expect(q.takeDue(10, 1, out)).toBe(false)
    expect(q.takeDue(10, 1, out)).toBe(true)
    expect(out).toEqual(["a", "b", "d"])
    expect([q.size, q.next()]).toEqual([0, undefined])
  })

  it("agrees with a plain list over 5,000 seeded operations", () => {
    let seed = 7
    const rnd = (n: number) => ((seed = (seed * 16807) % 2147483647) % n)
    const q = new ExpiryQueue<number>()
    const model = new Map<number, { at: number; seq: number }>()
    let seq = 0
    let now = 0
    for (let step = 0; step < 5_000; step++) {
      const op = rnd(10)
      const key = rnd(200)
      if (op < 6) {
        const at = now + rnd(1_000)
        q.set(key, at)
        model.set(key, { at, seq: seq++ })
      } else if (op < 8) {
        expect(q.delete(key)).toBe(model.delete(key))
      } else {
        now += rnd(300)
        const max = 1 + rnd(20)
        const out: Array<number> = []
        const all = q.takeDue(now, max, out)
        const due = [...model.entries()].filter(([, e]) => e.at <= now).sort(([, x], [, y]) => x.at - y.at || x.seq - y.seq).map(([k]) => k)
        expect(out).toEqual(due.slice(0, max))
        expect(all).toBe(due.length <= max)
        for (const k of out) model.delete(k)
      }
      expect(q.size).toBe(model.size)
      const first = Math.min(...[...model.values()].map((e) => e.at))
      expect(q.next()).toBe(model.size === 0 ? undefined : first)
    }
  })
})
