// Where a consumer starts (deliver policies), what it delivers (filters), and how
// acks, naks, progress, term, ack wait, backoff, max_deliver and max_ack_pending
// shape redelivery. Time is a number the tests advance.
import { describe, expect, it } from "vitest"
import { ack, delivers, machine, MemStream, NS, pull, SEC, seqs, tick } from "../helpers/consumer-machine.js"

const stream = (...subjects: string[]) => {
  const s = new MemStream()
  for (const subj of subjects) s.add(subj)
  return s
}

const all = (m: ReturnType<typeof machine>, now = 0) => seqs(pull(m, now, { batch: 100, no_wait: true }))

describe("deliver policies", () => {
  const s = () => stream("a.1", "b.1", "a.2", "a.1", "b.2") // 1..5

  it("all starts at the first message", () => {
    expect(all(machine({ durable_name: "c" }, s()))).toEqual([1, 2, 3, 4, 5])
  })

  it("last starts at the last message, or the last matching the filter", () => {
    expect(all(machine({ durable_name: "c", deliver_policy: "last" }, s()))).toEqual([5])
    expect(all(machine({ durable_name: "c", deliver_policy: "last", filter_subject: "a.*" }, s()))).toEqual([4])
  })

  it("new waits for messages stored after creation", () => {
    const st = s()
    const m = machine({ durable_name: "c", deliver_policy: "new" }, st)
    expect(all(m)).toEqual([])
    st.add("a.9")
    expect(all(m)).toEqual([6])
  })

  it("by_start_sequence and by_start_time", () => {
    expect(all(machine({ durable_name: "c", deliver_policy: "by_start_sequence", opt_start_seq: 3 }, s()))).toEqual([3, 4, 5])
    // MemStream stamps seq n at (n-1) s
    const t = new Date(2500).toISOString()
    expect(all(machine({ durable_name: "c", deliver_policy: "by_start_time", opt_start_time: t }, s()))).toEqual([4, 5])
  })

  it("last_per_subject delivers the last of each subject, then new messages", () => {
    const st = s()
    const m = machine({ durable_name: "c", deliver_policy: "last_per_subject", filter_subject: "a.*" }, st)
    expect(m.info().num_pending).toBe(2)
    expect(all(m)).toEqual([3, 4])
    st.add("b.3")
    st.add("a.3")
    expect(all(m)).toEqual([7])
    expect(all(machine({ durable_name: "d", deliver_policy: "last_per_subject" }, s()))).toEqual([2, 3, 4, 5])
  })

  it("filter_subjects deliver the union, in stream order", () => {
    const st = stream("a.1", "b.1", "c.1", "b.2", "a.2")
    expect(all(machine({ durable_name: "c", filter_subjects: ["a.*", "c.>"] }, st))).toEqual([1, 3, 5])
    const m = machine({ durable_name: "c", filter_subject: "b.*" }, st)
    expect(m.info().num_pending).toBe(2)
    const out = pull(m, 0, { batch: 1 })
    expect(delivers(out)[0]).toMatchObject({ seq: 2, subject: "b.1", consumerSeq: 1, deliveryCount: 1, pending: 1 })
  })
})

describe("ack policies", () => {
  it("explicit: each ack removes one message and moves the ack floor over contiguous acks", () => {
    const m = machine({ durable_name: "c", ack_policy: "explicit" }, stream("a", "a", "a"))
    all(m)
    expect(m.info()).toMatchObject({ num_ack_pending: 3, delivered: { consumer_seq: 3, stream_seq: 3 }, ack_floor: { stream_seq: 0 } })
    ack(m, 2, 1)
    expect(m.info()).toMatchObject({ num_ack_pending: 2, ack_floor: { consumer_seq: 0, stream_seq: 0 } })
    ack(m, 1, 1)
    expect(m.info()).toMatchObject({ num_ack_pending: 1, ack_floor: { consumer_seq: 2, stream_seq: 2 } })
    const out = ack(m, 3, 1, "+ACK", "_INBOX.ackack")
    expect(out).toContainEqual({ type: "acked", seqs: [3] })
    expect(out).toContainEqual({ type: "ackAck", reply: "_INBOX.ackack" })
    expect(out).toContainEqual({ type: "persist" })
    expect(m.info()).toMatchObject({ num_ack_pending: 0, ack_floor: { consumer_seq: 3, stream_seq: 3 } })
  })

  it("all: an ack covers every earlier delivery", () => {
    const m = machine({ durable_name: "c", ack_policy: "all" }, stream("a", "a", "a", "a"))
    all(m)
    expect(ack(m, 3, 1)).toContainEqual({ type: "acked", seqs: [1, 2, 3] })
    expect(m.info()).toMatchObject({ num_ack_pending: 1, ack_floor: { stream_seq: 3 } })
    expect(ack(m, 2, 1).some((a) => a.type === "acked")).toBe(false)
  })

  it("none: nothing is pending and the floor follows delivery", () => {
    const m = machine({ durable_name: "c", ack_policy: "none" }, stream("a", "a"))
    all(m)
    expect(m.info()).toMatchObject({ num_ack_pending: 0, ack_floor: { consumer_seq: 2, stream_seq: 2 } })
    expect(m.nextDeadline()).toBeUndefined()
  })
})

describe("redelivery", () => {
  const waiting = (m: ReturnType<typeof machine>, now: number) => pull(m, now, { batch: 10, expires: 3600 * SEC * NS })

  it("redelivers after ack_wait with increasing delivery counts and new consumer sequences", () => {
    const m = machine({ durable_name: "c", ack_policy: "explicit", ack_wait: 2 * SEC * NS }, stream("a"))
    expect(delivers(waiting(m, 0))[0]).toMatchObject({ seq: 1, deliveryCount: 1, consumerSeq: 1 })
    expect(m.nextDeadline()).toBe(2 * SEC)
    expect(seqs(tick(m, 1999))).toEqual([])
    const r1 = delivers(tick(m, 2000))
    expect(r1[0]).toMatchObject({ seq: 1, deliveryCount: 2, consumerSeq: 2 })
    expect(m.info().num_redelivered).toBe(1)
    const r2 = delivers(tick(m, 4000))
    expect(r2[0]).toMatchObject({ seq: 1, deliveryCount: 3, consumerSeq: 3 })
    ack(m, 1, 4500)
    expect(seqs(tick(m, 10_000))).toEqual([])
    expect(m.info()).toMatchObject({ num_redelivered: 0, num_ack_pending: 0 })
  })

  it("follows the backoff schedule, repeating its last step", () => {
    const m = machine({ durable_name: "c", ack_policy: "explicit", backoff: [1e9, 3e9, 5e9] }, stream("a"))
    waiting(m, 0)
    const times: number[] = []
    let now = 0
    for (let i = 0; i < 4; i++) {
      now = m.nextDeadline()!
      times.push(now)
      tick(m, now)
      waiting(m, now)
    }
    expect(times).toEqual([1000, 4000, 9000, 14_000])
  })

  it("max_deliver stops redelivery and reports the advisory", () => {
    const m = machine({ durable_name: "c", ack_policy: "explicit", ack_wait: SEC * NS, max_deliver: 2 }, stream("a"))
    waiting(m, 0)
    expect(seqs(tick(m, 1000))).toEqual([1])
    const out = tick(m, 2000)
    expect(seqs(out)).toEqual([])
    expect(out).toContainEqual({ type: "advisory", kind: "max_deliveries", streamSeq: 1, deliveries: 2 })
    expect(m.info().num_ack_pending).toBe(0)
    expect(seqs(tick(m, 10_000))).toEqual([])
  })

  it("max_ack_pending blocks new deliveries until acks, but not redeliveries", () => {
    const m = machine({ durable_name: "c", ack_policy: "explicit", ack_wait: SEC * NS, max_ack_pending: 2 }, stream("a", "a", "a", "a"))
    expect(seqs(waiting(m, 0))).toEqual([1, 2])
    expect(m.info().num_pending).toBe(2)
    expect(seqs(tick(m, 1000))).toEqual([1, 2])
    expect(seqs(ack(m, 1, 1100))).toEqual([3])
    expect(seqs(ack(m, 2, 1100))).toEqual([4])
    expect(m.info()).toMatchObject({ num_ack_pending: 2, num_pending: 0 })
  })

  it("-NAK redelivers now; -NAK with delay waits; +WPI extends; +TERM ends", () => {
    const m = machine({ durable_name: "c", ack_policy: "explicit", ack_wait: 10 * SEC * NS }, stream("a", "a", "a"))
    waiting(m, 0)
    expect(delivers(ack(m, 1, 100, "-NAK"))[0]).toMatchObject({ seq: 1, deliveryCount: 2 })
    ack(m, 1, 200)
    ack(m, 2, 200, '-NAK {"delay": 3000000000}')
    expect(m.nextDeadline()).toBe(3200)
    expect(seqs(tick(m, 3199))).toEqual([])
    expect(seqs(tick(m, 3200))).toEqual([2])
    ack(m, 2, 3300)
    ack(m, 3, 9000, "+WPI")
    expect(seqs(tick(m, 10_000))).toEqual([]) // the old deadline passes without a redelivery
    expect(m.nextDeadline()).toBe(19_000)
    expect(seqs(tick(m, 18_999))).toEqual([])
    expect(seqs(tick(m, 19_000))).toEqual([3])
    const out = ack(m, 3, 19_100, "+TERM done")
    expect(out).toContainEqual({ type: "advisory", kind: "terminated", streamSeq: 3, deliveries: 2, reason: "done" })
    expect(m.info()).toMatchObject({ num_ack_pending: 0, ack_floor: { stream_seq: 3 } })
  })

  it("+NXT acks and asks for the next message on the ack's reply", () => {
    const m = machine({ durable_name: "c", ack_policy: "explicit" }, stream("a", "a", "a"))
    pull(m, 0, { batch: 1 })
    const out = ack(m, 1, 10, "+NXT", "_INBOX.next")
    expect(delivers(out)).toMatchObject([{ seq: 2, target: { kind: "pull", reply: "_INBOX.next" } }])
    expect(m.info().num_ack_pending).toBe(1)
  })
})
