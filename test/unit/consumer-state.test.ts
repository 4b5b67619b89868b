// Consumer state across restarts (snapshot/restore), stream purges and deletes,
// and the inactivity of ephemeral pull consumers.
import { describe, expect, it } from "vitest"
import { ConsumerMachine } from "../../src/core/consumer/machine.js"
import { ack, delivers, machine, MemStream, NS, pull, SEC, seqs, tick } from "../helpers/consumer-machine.js"

const stream = (n: number) => {
  const s = new MemStream()
  for (let i = 0; i < n; i++) s.add(i % 2 ? "b" : "a")
  return s
}

describe("snapshot and restore", () => {
  it("round trips through JSON: delivered, ack floor, pending and redelivery counts", () => {
    const st = stream(6)
    const cfg = { durable_name: "c", ack_policy: "explicit" as const, ack_wait: 10 * SEC * NS, filter_subject: "a" }
    const m = machine(cfg, st)
    expect(seqs(pull(m, 0, { batch: 2, expires: 100 * SEC * NS }))).toEqual([1, 3])
    ack(m, 1, 100)
    expect(seqs(tick(m, 10_000))).toEqual([])
    pull(m, 10_000, { batch: 1, expires: 100 * SEC * NS })
    expect(delivers(tick(m, 10_000))).toEqual([])
    const before = m.info()
    expect(before).toMatchObject({ num_ack_pending: 1, num_redelivered: 1, num_pending: 1, delivered: { consumer_seq: 3, stream_seq: 3 } })
    const snap = JSON.parse(JSON.stringify(m.snapshot()))
    const r = ConsumerMachine.restore({ stream: "S", name: "c", config: cfg, view: st }, snap, 12_000)
    expect({ ...r.info(), num_waiting: 0 }).toEqual({ ...before, num_waiting: 0 })
    expect(r.nextDeadline()).toBe(20_000)
    // after restart: the pending message comes back with its delivery count, then new ones
    expect(delivers(pull(r, 20_000, { batch: 2, no_wait: true })).map((d) => [d.seq, d.deliveryCount, d.consumerSeq])).toEqual([
      [3, 3, 4],
      [5, 1, 5]
    ])
  })

  it("a state saved past the end of its stream resumes at the stream's end (power cut), and delivers the messages that reuse those sequences", () => {
    const saved = stream(6)
    const cfg = { durable_name: "c", ack_policy: "explicit" as const, ack_wait: 10 * SEC * NS }
    const m = machine(cfg, saved)
    expect(seqs(pull(m, 0, { batch: 6, no_wait: true }))).toEqual([1, 2, 3, 4, 5, 6])
    ack(m, 1, 1)
    const snap = m.snapshot()
    // The power cut took back messages 5 and 6 (never fsynced, never acknowledged).
    const after = stream(4)
    const r = ConsumerMachine.restore({ stream: "S", name: "c", config: cfg, view: after }, snap, 2)
    expect(r.info().delivered.stream_seq).toBe(4)
    after.add("a")
    after.add("b")
    expect(seqs(pull(r, 20_000, { batch: 10, no_wait: true }))).toEqual([2, 3, 4, 5, 6])
  })

  it("keeps the rest of a last_per_subject start set", () => {
    const st = stream(4)
    const cfg = { durable_name: "c", deliver_policy: "last_per_subject" as const }
    const m = machine(cfg, st)
    expect(seqs(pull(m, 0, { batch: 1 }))).toEqual([3])
    const r = ConsumerMachine.restore({ stream: "S", name: "c", config: cfg, view: st }, m.snapshot(), 1)
    st.add("c")
    expect(seqs(pull(r, 1, { batch: 5, no_wait: true }))).toEqual([4, 5])
  })
})

describe("stream changes", () => {
  it("a purge drops pending messages and moves delivered up to the new first sequence", () => {
    const st = stream(5)
    const m = machine({ durable_name: "c", ack_policy: "explicit", ack_wait: SEC * NS }, st)
    pull(m, 0, { batch: 2 })
    st.purge()
    const out = m.step({ type: "streamPurged" }, 10)
    expect(out).toContainEqual({ type: "persist" })
    expect(m.info()).toMatchObject({ num_ack_pending: 0, num_pending: 0, delivered: { stream_seq: 5 }, ack_floor: { stream_seq: 5 } })
    expect(seqs(tick(m, 5000))).toEqual([])
    st.add("a")
    expect(seqs(pull(m, 5000, { batch: 5, no_wait: true }))).toEqual([6])
  })

  it("deleted messages are not redelivered", () => {
    const st = stream(3)
    const m = machine({ durable_name: "c", ack_policy: "explicit", ack_wait: SEC * NS }, st)
    pull(m, 0, { batch: 3 })
    st.remove(2)
    m.step({ type: "msgDeleted", seq: 2 }, 1)
    st.remove(3) // removed without telling the consumer: found stale at redelivery
    pull(m, 1, { batch: 5, expires: 100 * SEC * NS })
    expect(seqs(tick(m, 1000))).toEqual([1])
    expect(m.info().num_ack_pending).toBe(1)
  })
})

describe("inactivity", () => {
  it("an ephemeral pull consumer goes away after inactive_threshold without requests", () => {
    const m = machine({ name: "e", inactive_threshold: 3 * SEC * NS }, stream(0))
    pull(m, 0, { batch: 1, expires: SEC * NS })
    expect(m.nextDeadline()).toBe(1000)
    tick(m, 1000) // request expires: inactive from here
    expect(m.nextDeadline()).toBe(4000)
    pull(m, 2000, { batch: 1, expires: SEC * NS })
    tick(m, 3000)
    expect(tick(m, 5999)).toEqual([])
    expect(tick(m, 6000)).toEqual([{ type: "terminate", reason: "inactive" }])
    expect(m.step({ type: "tick" }, 7000)).toEqual([])
  })

  it("durables without inactive_threshold never go away", () => {
    const m = machine({ durable_name: "d" }, stream(0))
    expect(m.nextDeadline()).toBeUndefined()
    expect(tick(m, 1e12)).toEqual([])
  })
})
