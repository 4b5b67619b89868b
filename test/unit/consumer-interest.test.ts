// What a consumer holds for interest retention (`holds(seq, subject)`): messages its
// filters match that it has neither acknowledged nor passed by — not yet delivered,
// or delivered and pending. Ack none lets go on delivery, ack all up to the acked
// sequence, +TERM and max_deliver let go and say so with a `released` action.
import { describe, expect, it } from "vitest"
import { ack, machine, MemStream, pull, SEC, tick } from "../helpers/consumer-machine.js"

const stream = (...subjects: string[]) => {
  const s = new MemStream()
  for (const subj of subjects) s.add(subj)
  return s
}

const held = (m: ReturnType<typeof machine>, s: MemStream) =>
  [...s.msgs.values()].filter((msg) => m.holds(msg.seq, msg.subject)).map((msg) => msg.seq)

describe("what a consumer holds", () => {
  it("only what its filters match, until it is acknowledged (explicit, out of order)", () => {
    const s = stream("a", "b", "a", "a") // 1..4
    const m = machine({ durable_name: "c", filter_subject: "a", ack_policy: "explicit" }, s)
    expect(held(m, s)).toEqual([1, 3, 4])
    pull(m, 0, { batch: 2 }) // delivers 1 and 3
    expect(held(m, s)).toEqual([1, 3, 4])
    ack(m, 3, 1)
    expect(held(m, s)).toEqual([1, 4])
    ack(m, 1, 1)
    expect(held(m, s)).toEqual([4])
    // Messages stored later are held too.
    s.add("a")
    s.add("b")
    expect(held(m, s)).toEqual([4, 5])
  })

  it("ack none: delivered is let go", () => {
    const s = stream("x", "x", "x")
    const m = machine({ durable_name: "c", ack_policy: "none" }, s)
    pull(m, 0, { batch: 2 })
    expect(held(m, s)).toEqual([3])
  })

  it("ack all: everything up to the acknowledged sequence", () => {
    const s = stream("x", "x", "x", "x")
    const m = machine({ durable_name: "c", ack_policy: "all" }, s)
    pull(m, 0, { batch: 3 })
    ack(m, 2, 1)
    expect(held(m, s)).toEqual([3, 4])
  })

  it("+TERM and max_deliver let go, with a released action", () => {
    const s = stream("x", "x")
    const m = machine({ durable_name: "c", ack_policy: "explicit", ack_wait: SEC * 1_000_000, max_deliver: 1 }, s)
    pull(m, 0, { batch: 2 })
    expect(ack(m, 1, 1, "+TERM")).toContainEqual({ type: "released", seqs: [1] })
    expect(held(m, s)).toEqual([2])
    expect(tick(m, 2 * SEC)).toContainEqual({ type: "released", seqs: [2] })
    expect(held(m, s)).toEqual([])
  })

  it("nothing before where it started, and nothing once deleted", () => {
    const s = stream("x", "x", "x")
    const late = machine({ durable_name: "c", deliver_policy: "by_start_sequence", opt_start_seq: 3, ack_policy: "explicit" }, s)
    expect(held(late, s)).toEqual([3])
    late.step({ type: "delete" }, 0)
    expect(held(late, s)).toEqual([])
  })
})
