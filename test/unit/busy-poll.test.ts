// Busy polling: when the event loop keeps polling after client I/O and when it goes back
// to sleep, driven by a fake loop (a clock in milliseconds and a queue of "after this turn").
import { describe, expect, it } from "@effect/vitest"
import { BusyPoll, SMALL_CHUNK } from "../../src/server/busy-poll.js"

/** A loop whose clock only moves when the test says; `turn` runs what was scheduled. */
class FakeLoop {
  t = 0
  queue: Array<() => void> = []
  turns = 0
  readonly now = (): number => this.t
  readonly schedule = (f: () => void): void => {
    this.queue.push(f)
  }
  turn(): void {
    const q = this.queue
    this.queue = []
    this.turns++
    for (const f of q) f()
  }
  /** Let `ms` pass turn by turn (0.005 ms a turn, as a polling loop would), or at once if nothing is scheduled. */
  pass(ms: number): void {
    const until = this.t + ms
    while (this.t < until) {
      if (this.queue.length === 0) {
        this.t = until
        return
      }
      this.t = Math.min(until, this.t + 0.005)
      this.turn()
    }
  }
}

const WINDOW = 0.2 // 200 µs

/** Request and reply: 40-byte chunks every 50 µs, `rounds` times. */
const converse = (loop: FakeLoop, poll: BusyPoll, rounds = 40): void => {
  for (let i = 0; i < rounds; i++) {
    poll.activity(40)
    loop.pass(0.05)
  }
}

const setup = () => {
  const loop = new FakeLoop()
  return { loop, poll: new BusyPoll(WINDOW, loop) }
}

describe("busy polling", () => {
  it("spins once small chunks keep arriving within the window (request and reply)", () => {
    const { loop, poll } = setup()
    converse(loop, poll)
    expect(poll.isSpinning).toBe(true)
  })

  it("stops polling one window after the last chunk, and then sleeps", () => {
    const { loop, poll } = setup()
    converse(loop, poll)
    loop.pass(WINDOW + 0.01)
    expect(poll.isSpinning).toBe(false)
    expect(loop.queue).toHaveLength(0)
    const turns = loop.turns
    loop.pass(1000)
    expect(loop.turns).toBe(turns)
  })

  it("never spins for sparse traffic: gaps longer than the window", () => {
    const { loop, poll } = setup()
    for (let i = 0; i < 1000; i++) {
      poll.activity(40)
      expect(poll.isSpinning).toBe(false)
      loop.pass(1)
    }
    expect(loop.turns).toBe(0)
  })

  it("does not spin when only some gaps are short (mixed traffic below the threshold)", () => {
    const { loop, poll } = setup()
    for (let i = 0; i < 1000; i++) {
      poll.activity(40)
      // three short gaps in four: 75 %, under the 85 % it takes
      loop.pass(i % 4 === 3 ? 1 : 0.05)
    }
    expect(loop.turns).toBe(0)
  })

  it("does not spin for bulk transfer: full reads are a stream the loop is busy with anyway", () => {
    const { loop, poll } = setup()
    for (let i = 0; i < 1000; i++) {
      poll.activity(SMALL_CHUNK)
      loop.pass(0.01)
    }
    expect(loop.turns).toBe(0)
  })

  it("keeps spinning through one late reply, and stops after a run of them", () => {
    const { loop, poll } = setup()
    converse(loop, poll)
    poll.activity(40)
    loop.pass(1) // one hiccup: the window ran out
    poll.activity(40)
    expect(poll.isSpinning).toBe(true)
    for (let i = 0; i < 3; i++) {
      loop.pass(1)
      poll.activity(40)
    }
    loop.pass(1)
    poll.activity(40)
    expect(poll.isSpinning).toBe(false)
  })
})
