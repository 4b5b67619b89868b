// The leaf-interest book: what each leaf connection of an account is told (LS+/LS-) as
// local subscriptions and other leaf connections' interest come and go.
import { describe, expect, it } from "vitest"
import { LeafInterestBook, type LeafInterestSink } from "../../src/core/cluster/leaf-interest.js"

const recorder = () => {
  const ops: Array<string> = []
  const sink: LeafInterestSink<string> = {
    sub: (l, s, q, w) => void ops.push(`${l} LS+ ${s}${q === "" ? "" : ` ${q} ${w}`}`),
    unsub: (l, s, q) => void ops.push(`${l} LS- ${s}${q === "" ? "" : ` ${q}`}`)
  }
  return { ops, sink, take: () => ops.splice(0) }
}

describe("LeafInterestBook", () => {
  it("announces a plain subject once to each leaf, however many local subscriptions, and withdraws it with the last", () => {
    const b = new LeafInterestBook<string>()
    const r = recorder()
    b.attach("A", "L1", r.sink)
    b.local("A", "foo", "", 1, r.sink)
    b.local("A", "foo", "", 1, r.sink)
    expect(r.take()).toEqual(["L1 LS+ foo"])
    b.local("A", "foo", "", -1, r.sink)
    expect(r.take()).toEqual([])
    b.local("A", "foo", "", -1, r.sink)
    expect(r.take()).toEqual(["L1 LS- foo"])
    expect(b.size("A")).toBe(0)
  })

  it("tells a leaf that attaches late everything the account wants, queue groups with their weight", () => {
    const b = new LeafInterestBook<string>()
    const r = recorder()
    b.local("A", "foo", "", 1, r.sink)
    b.local("A", "work", "W", 1, r.sink)
    b.local("A", "work", "W", 1, r.sink)
    b.local("B", "other", "", 1, r.sink)
    expect(r.take()).toEqual([])
    b.attach("A", "L1", r.sink)
    expect(r.take()).toEqual(["L1 LS+ foo", "L1 LS+ work W 2"])
  })

  it("re-sends a queue group's absolute weight on each change, and LS- when the last member leaves", () => {
    const b = new LeafInterestBook<string>()
    const r = recorder()
    b.attach("A", "L1", r.sink)
    b.local("A", "work", "W", 1, r.sink)
    b.local("A", "work", "W", 1, r.sink)
    b.local("A", "work", "W", -1, r.sink)
    b.local("A", "work", "W", -1, r.sink)
    expect(r.take()).toEqual(["L1 LS+ work W 1", "L1 LS+ work W 2", "L1 LS+ work W 1", "L1 LS- work W"])
  })

  it("passes one leaf's interest on to the other leafs of the account, never back to it, and withdraws it when that leaf goes", () => {
    const b = new LeafInterestBook<string>()
    const r = recorder()
    for (const l of ["L1", "L2", "L3"]) b.attach("A", l, r.sink)
    b.attach("B", "LB", r.sink)
    b.remote("A", "L1", "x", "", 1, r.sink)
    expect(r.take()).toEqual(["L2 LS+ x", "L3 LS+ x"])
    // A local subscriber on the same subject: L1 now hears of it; the others knew already.
    b.local("A", "x", "", 1, r.sink)
    expect(r.take()).toEqual(["L1 LS+ x"])
    b.local("A", "x", "", -1, r.sink)
    expect(r.take()).toEqual(["L1 LS- x"])
    b.detach("A", "L1", r.sink)
    expect(r.take()).toEqual(["L2 LS- x", "L3 LS- x"])
    expect(b.viewOf("A", "L2", "x")).toBe(0)
  })

  it("adds leafs' queue weights to local members for the others, each leaf not counting its own", () => {
    const b = new LeafInterestBook<string>()
    const r = recorder()
    b.attach("A", "L1", r.sink)
    b.attach("A", "L2", r.sink)
    b.local("A", "q", "G", 1, r.sink)
    r.take()
    b.remote("A", "L1", "q", "G", 3, r.sink)
    expect(r.take()).toEqual(["L2 LS+ q G 4"])
    expect([b.viewOf("A", "L1", "q", "G"), b.viewOf("A", "L2", "q", "G")]).toEqual([1, 4])
    b.remote("A", "L1", "q", "G", 0, r.sink)
    expect(r.take()).toEqual(["L2 LS+ q G 1"])
  })

  it("ignores interest from a leaf that is not attached, and a withdrawal of what was never announced", () => {
    const b = new LeafInterestBook<string>()
    const r = recorder()
    b.attach("A", "L1", r.sink)
    b.remote("A", "stranger", "x", "", 1, r.sink)
    b.remote("A", "L1", "never", "", 0, r.sink)
    b.local("A", "never", "", -1, r.sink)
    expect(r.take()).toEqual([])
    expect(b.size("A")).toBe(0)
  })
})

describe("LeafInterestBook: sources that are told nothing (the other servers, behind a route)", () => {
  it("adds a route's interest to what every leaf of the account hears, and withdraws it all when the route goes", () => {
    const b = new LeafInterestBook<string>()
    const r = recorder()
    b.attach("A", "L1", r.sink)
    b.source("A", "R1", "x", "", 1, r.sink)
    b.source("A", "R1", "q", "G", 2, r.sink)
    b.source("B", "R1", "y", "", 1, r.sink)
    expect(r.take()).toEqual(["L1 LS+ x", "L1 LS+ q G 2"])
    expect(b.weightOf("A", "R1", "q", "G")).toBe(2)
    b.local("A", "q", "G", 1, r.sink)
    expect(r.take()).toEqual(["L1 LS+ q G 3"])
    b.dropSource("R1", r.sink)
    expect(r.take()).toEqual(["L1 LS- x", "L1 LS+ q G 1"])
    expect([b.size("A"), b.size("B")]).toEqual([1, 0])
  })

  it("tells a hub connection (attached without routes) local and other leaves' interest, never the routes'", () => {
    const b = new LeafInterestBook<string>()
    const r = recorder()
    b.attach("A", "HUB", r.sink, false)
    b.attach("A", "DOWN", r.sink)
    // a route's interest: the accepted leaf hears it, the hub does not
    b.source("A", "R1", "x", "", 1, r.sink)
    b.source("A", "R1", "work", "W", 2, r.sink)
    expect(r.take()).toEqual(["DOWN LS+ x", "DOWN LS+ work W 2"])
    // a local member and a downstream leaf's: the hub hears those, counted without the route's
    b.local("A", "work", "W", 1, r.sink)
    b.remote("A", "DOWN", "work", "W", 1, r.sink)
    expect(r.take()).toEqual(["HUB LS+ work W 1", "DOWN LS+ work W 3", "HUB LS+ work W 2"])
    expect(b.viewOf("A", "HUB", "work", "W")).toBe(2)
    expect(b.viewOf("A", "HUB", "x")).toBe(0)
    // the route goes: nothing changes for the hub
    b.dropSource("R1", r.sink)
    expect(r.take()).toEqual(["DOWN LS- x", "DOWN LS+ work W 1"])
    // a hub that attaches late is told no route's interest either
    b.source("A", "R2", "late", "", 1, r.sink)
    b.attach("A", "HUB2", r.sink, false)
    expect(r.take()).toEqual(["DOWN LS+ late", "HUB2 LS+ work W 2"])
  })
})
