// The engine's Outbound on its own: one write per dirty peer per turn, the early write of
// a burst, max_pending judged where each kind's policy says, the write deadline, and the
// gate a peer whose output waits for a commit plugs in.
import { describe, expect, it } from "vitest"
import { OutBuf } from "../../src/core/outbuf.js"
import { NATS_POLICY, Outbound, type OutboundPolicy, Peer, type Sink, SlowConsumer } from "../../src/engine/outbound.js"
import { Account, type Delivery, type Subscription } from "../../src/engine/principal.js"

/** A socket that takes writes and holds `stuck` bytes of them unsent. */
class FakeSink implements Sink {
  readonly writes: Array<string> = []
  stuck = 0
  write(buf: Buffer, done?: () => void): void {
    this.writes.push(buf.toString("latin1"))
    done?.()
  }
  writev(bufs: ReadonlyArray<Buffer>, done?: () => void): void {
    this.writes.push(bufs.map((b) => b.toString("latin1")).join(""))
    done?.()
  }
  writableLength(): number {
    return this.stuck
  }
}

class TestPeer extends Peer {
  readonly out = new OutBuf(64)
  readonly conn = new FakeSink()
  cut: SlowConsumer | undefined
  waits = false
  readonly held: Array<string> = []
  readonly wrote: Array<number> = []

  constructor(
    readonly policy: OutboundPolicy,
    readonly name: string
  ) {
    super(new Account("A"))
  }

  deliver(_s: Subscription, _d: Delivery): boolean {
    return false
  }
  logName(): string {
    return this.name
  }
  cutOff(reason: SlowConsumer): void {
    this.cut = reason
    this.closed = true
  }
  override holdsOutput(): boolean {
    return this.waits
  }
  override hold(bufs: Array<Buffer>): void {
    this.held.push(bufs.map((b) => b.toString("latin1")).join(""))
  }
  override written(queued: number): void {
    this.wrote.push(queued)
  }
}

const WRITTEN: OutboundPolicy = { pendingCheck: "written", writeDeadline: false }

const setup = (limits = { maxPending: 1000, writeDeadlineMs: 500 }) => {
  let now = 0
  const scheduled: Array<() => void> = []
  const warnings: Array<string> = []
  const wakes: Array<number> = []
  const ob = new Outbound(
    { now: () => now, log: { warn: (m) => warnings.push(m) }, scheduleFlush: (f) => scheduled.push(f), wakeAt: (at) => wakes.push(at) },
    limits
  )
  const turn = () => {
    const fs = scheduled.splice(0)
    for (const f of fs) f()
    return fs.length
  }
  return { ob, turn, warnings, wakes, scheduled, at: (t: number) => (now = t) }
}

describe("Outbound", () => {
  it("writes each dirty peer once per turn, in one write, and schedules one flush for all of them", () => {
    const { ob, turn, scheduled } = setup()
    const a = new TestPeer(NATS_POLICY, "a")
    const b = new TestPeer(NATS_POLICY, "b")
    a.out.writeAscii("one ")
    ob.markDirty(a)
    a.out.writeAscii("two")
    ob.markDirty(a)
    b.out.writeAscii("x")
    ob.queued(b)
    expect(scheduled).toHaveLength(1)
    expect(turn()).toBe(1)
    expect(a.conn.writes).toEqual(["one two"])
    expect(b.conn.writes).toEqual(["x"])
    expect(a.dirty).toBe(false)
    // a closed peer is not written
    a.out.writeAscii("late")
    ob.markDirty(a)
    a.closed = true
    turn()
    expect(a.conn.writes).toEqual(["one two"])
  })

  it("writes a burst before the end of the turn, and cuts a peer off past max_pending as deliveries are queued", () => {
    const { ob, warnings } = setup({ maxPending: 8192, writeDeadlineMs: 500 })
    const p = new TestPeer(NATS_POLICY, "p")
    // the early write starts at a quarter of max_pending
    p.out.writeBytes(Buffer.alloc(2048, 1), 0, 2048)
    ob.queued(p)
    expect(p.conn.writes).toHaveLength(1)
    // the socket stops taking bytes: what it holds counts with what is queued
    p.conn.stuck = 8100
    p.out.writeBytes(Buffer.alloc(2048, 1), 0, 2048)
    ob.queued(p)
    expect(p.conn.writes).toHaveLength(2)
    expect(p.cut).toBeUndefined()
    p.out.writeBytes(Buffer.alloc(100, 1), 0, 100)
    ob.queued(p)
    expect(p.cut).toBe(SlowConsumer.PendingBytes)
    expect(ob.slowConsumers).toBe(1)
    expect(p.account.slowConsumers).toBe(1)
    expect(warnings[0]).toMatch(/^p - Slow Consumer Detected: pending \d+ bytes over max_pending 8192$/)
  })

  it("judges a peer with the written policy after each write, over its allowance, and tells it what the socket holds", () => {
    const { ob, turn } = setup()
    const p = new TestPeer(WRITTEN, "m")
    p.pendingAllowance = 500
    p.conn.stuck = 1200
    p.out.writeAscii("resend burst")
    ob.markDirty(p)
    turn()
    expect(p.cut).toBeUndefined()
    expect(p.wrote).toEqual([1200])
    // drained below max_pending: the allowance is spent
    p.conn.stuck = 900
    p.out.writeAscii("a")
    ob.markDirty(p)
    turn()
    expect(p.pendingAllowance).toBe(0)
    p.conn.stuck = 1001
    p.out.writeAscii("b")
    ob.markDirty(p)
    turn()
    expect(p.cut).toBe(SlowConsumer.PendingBytes)
    expect(p.wrote).toEqual([1200, 900])
  })

  it("cuts off a peer whose socket took nothing for write_deadline, and only peers held to one", () => {
    const { ob, turn, wakes, at } = setup()
    const p = new TestPeer(NATS_POLICY, "p")
    const m = new TestPeer(WRITTEN, "m")
    for (const x of [p, m]) {
      x.conn.stuck = 10
      x.out.writeAscii("x")
      ob.markDirty(x)
    }
    at(100)
    turn()
    expect(p.blockedSince).toBe(100)
    expect(m.blockedSince).toBe(-1)
    expect(wakes).toEqual([600])
    expect(ob.writeDeadline(p, 599)).toBe(600)
    expect(p.cut).toBeUndefined()
    expect(ob.writeDeadline(p, 600)).toBe(Infinity)
    expect(p.cut).toBe(SlowConsumer.WriteDeadline)
    expect(ob.writeDeadline(m, 10_000)).toBe(Infinity)
    expect(m.cut).toBeUndefined()
  })

  it("hands output that must wait to its peer instead of the socket, and runs what was asked after the flush once", () => {
    const { ob, turn } = setup()
    const p = new TestPeer(WRITTEN, "gated")
    const order: Array<string> = []
    const commit = () => order.push(`commit (held ${p.held.length})`)
    p.waits = true
    p.out.writeAscii("PUBREC")
    ob.markDirty(p)
    ob.afterFlush(commit)
    ob.afterFlush(commit)
    turn()
    expect(p.conn.writes).toEqual([])
    expect(p.held).toEqual(["PUBREC"])
    expect(order).toEqual(["commit (held 1)"])
    // what a flush asks for while it runs belongs to the next one
    ob.afterFlush(() => ob.afterFlush(() => order.push("next turn")))
    turn()
    expect(order).toEqual(["commit (held 1)"])
    turn()
    expect(order).toEqual(["commit (held 1)", "next turn"])
    // held bytes are written when the peer says so, through the same bookkeeping
    ob.writeBufs(p, [Buffer.from(p.held[0])])
    expect(p.conn.writes).toEqual(["PUBREC"])
  })
})
