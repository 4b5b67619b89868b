// Pull requests: batch, no_wait, expires, max_waiting, max_bytes and the request
// limits, with the 404/408/409/100 status replies clients switch on.
import { describe, expect, it } from "vitest"
import { delivers, machine, MemStream, NS, pull, SEC, seqs, statuses, tick } from "../helpers/consumer-machine.js"

const stream = (n: number, size = 10) => {
  const s = new MemStream()
  for (let i = 0; i < n; i++) s.add(`a.${i}`, i, size)
  return s
}

describe("pull requests", () => {
  it("a batch waits for new messages until filled", () => {
    const st = stream(1)
    const m = machine({ durable_name: "c", ack_policy: "explicit" }, st)
    expect(seqs(pull(m, 0, { batch: 3, expires: 10 * SEC * NS }, "r1"))).toEqual([1])
    expect(m.info().num_waiting).toBe(1)
    st.add("a.x")
    st.add("a.y")
    st.add("a.z")
    const out = m.step({ type: "newMessages" }, 5)
    expect(delivers(out).map((d) => [d.seq, d.target])).toEqual([
      [2, { kind: "pull", reply: "r1" }],
      [3, { kind: "pull", reply: "r1" }]
    ])
    expect(m.info()).toMatchObject({ num_waiting: 0, num_pending: 1 })
  })

  it("no_wait: 404 when nothing is there, 408 after a partial batch", () => {
    const m = machine({ durable_name: "c", ack_policy: "explicit" }, stream(2))
    const out = pull(m, 0, { batch: 5, no_wait: true })
    expect(seqs(out)).toEqual([1, 2])
    expect(statuses(out)).toMatchObject([{ code: 408, description: "Request Timeout", headers: { "Nats-Pending-Messages": "3" } }])
    const none = pull(m, 0, { batch: 5, no_wait: true }, "r2")
    expect(statuses(none)).toEqual([{ type: "status", target: { kind: "pull", reply: "r2" }, code: 404, description: "No Messages", headers: {} }])
    expect(m.info().num_waiting).toBe(0)
  })

  it("expires answers 408 Request Timeout with what is left", () => {
    const m = machine({ durable_name: "c" }, stream(1))
    pull(m, 0, { batch: 4, expires: 2 * SEC * NS, max_bytes: 100 })
    expect(m.nextDeadline()).toBe(2000)
    expect(statuses(tick(m, 1999))).toEqual([])
    expect(statuses(tick(m, 2000))).toMatchObject([{ code: 408, headers: { "Nats-Pending-Messages": "3", "Nats-Pending-Bytes": "90" } }])
    expect(m.info().num_waiting).toBe(0)
  })

  it("sends 100 Idle Heartbeat to a waiting request", () => {
    const m = machine({ durable_name: "c" }, stream(0))
    pull(m, 0, { batch: 1, expires: 30 * SEC * NS, idle_heartbeat: 5 * SEC * NS })
    expect(m.nextDeadline()).toBe(5000)
    expect(statuses(tick(m, 5000))).toMatchObject([{ code: 100, description: "Idle Heartbeat" }])
    expect(m.nextDeadline()).toBe(10_000)
  })

  it("max_waiting rejects with 409 Exceeded MaxWaiting", () => {
    const m = machine({ durable_name: "c", max_waiting: 2 }, stream(0))
    pull(m, 0, {}, "r1")
    pull(m, 0, {}, "r2")
    expect(statuses(pull(m, 0, {}, "r3"))).toMatchObject([{ code: 409, description: "Exceeded MaxWaiting", target: { reply: "r3" } }])
    expect(m.info().num_waiting).toBe(2)
  })

  it("max_bytes: 409 Message Size Exceeds MaxBytes when the next message does not fit", () => {
    const m = machine({ durable_name: "c", ack_policy: "explicit" }, stream(3, 40))
    const out = pull(m, 0, { batch: 10, max_bytes: 100, expires: 10 * SEC * NS })
    expect(seqs(out)).toEqual([1, 2])
    expect(statuses(out)).toMatchObject([{ code: 409, description: "Message Size Exceeds MaxBytes" }])
    expect(statuses(pull(m, 0, { batch: 1, max_bytes: 10 }))).toMatchObject([{ code: 409, description: "Message Size Exceeds MaxBytes" }])
  })

  it("request limits of the consumer config", () => {
    const m = machine({ durable_name: "c", max_batch: 5, max_expires: SEC * NS, max_bytes: 1000 }, stream(0))
    expect(statuses(pull(m, 0, { batch: 6 }))[0].description).toBe("Exceeded MaxRequestBatch of 5")
    expect(statuses(pull(m, 0, { batch: 1, expires: 2 * SEC * NS }))[0].description).toBe("Exceeded MaxRequestExpires of 1s")
    expect(statuses(pull(m, 0, { batch: 1, expires: SEC * NS, max_bytes: 2000 }))[0].description).toBe("Exceeded MaxRequestMaxBytes of 1000")
    const push = machine({ durable_name: "p", deliver_subject: "d" }, stream(0))
    expect(statuses(pull(push, 0, {}))).toMatchObject([{ code: 409, description: "Consumer is push based" }])
  })

  it("a filtered consumer does not rescan non-matching messages on every publish", () => {
    const st = stream(0)
    const scans: number[] = []
    const load = st.loadNextMatching.bind(st)
    st.loadNextMatching = (filters, from) => (scans.push(from), load(filters, from))
    const m = machine({ durable_name: "c", filter_subject: "x" }, st)
    pull(m, 0, { batch: 1, expires: 100 * SEC * NS })
    for (let i = 0; i < 5; i++) {
      st.add("a")
      m.step({ type: "newMessages" }, i)
    }
    expect(scans.slice(-3)).toEqual([3, 4, 5])
    st.add("x")
    expect(seqs(m.step({ type: "newMessages" }, 9))).toEqual([6])
  })

  it("waiting requests share messages round robin", () => {
    const st = stream(0)
    const m = machine({ durable_name: "c" }, st)
    pull(m, 0, { batch: 2 }, "r1")
    pull(m, 0, { batch: 2 }, "r2")
    for (let i = 0; i < 4; i++) st.add("a")
    const out = m.step({ type: "newMessages" }, 1)
    expect(delivers(out).map((d) => (d.target.kind === "pull" ? d.target.reply : ""))).toEqual(["r1", "r2", "r1", "r2"])
  })

  it("deleting the consumer answers waiting requests with 409 Consumer Deleted", () => {
    const m = machine({ durable_name: "c" }, stream(0))
    pull(m, 0, {}, "r1")
    expect(statuses(m.step({ type: "delete" }, 1))).toMatchObject([{ code: 409, description: "Consumer Deleted", target: { reply: "r1" } }])
    expect(m.isDeleted).toBe(true)
    expect(m.nextDeadline()).toBeUndefined()
  })
})
