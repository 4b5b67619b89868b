// Push consumers: delivery only with interest on deliver_subject, idle heartbeats
// carrying the last sequences, flow control, and the ordered consumer shape.
import { describe, expect, it } from "vitest"
import { ConsumerMachine } from "../../src/core/consumer/machine.js"
import { delivers, machine, MemStream, NS, pull, SEC, seqs, statuses, tick } from "../helpers/consumer-machine.js"

const stream = (n: number, size = 10) => {
  const s = new MemStream()
  for (let i = 0; i < n; i++) s.add(`a.${i}`, i, size)
  return s
}
const interest = (m: ConsumerMachine, now: number, active = true) => m.step({ type: "interest", active }, now)

describe("push consumers", () => {
  it("deliver to deliver_subject only while someone listens", () => {
    const st = stream(2)
    const m = machine({ durable_name: "c", deliver_subject: "in.c", ack_policy: "explicit" }, st)
    expect(seqs(m.step({ type: "newMessages" }, 0))).toEqual([])
    const out = interest(m, 1)
    expect(delivers(out).map((d) => [d.seq, d.target])).toEqual([
      [1, { kind: "push", subject: "in.c" }],
      [2, { kind: "push", subject: "in.c" }]
    ])
    interest(m, 2, false)
    st.add("a")
    expect(seqs(m.step({ type: "newMessages" }, 3))).toEqual([])
  })

  it("idle heartbeats carry the last consumer and stream sequence", () => {
    const m = machine({ durable_name: "c", deliver_subject: "in.c", idle_heartbeat: 5 * SEC * NS }, stream(3))
    interest(m, 0)
    expect(m.nextDeadline()).toBe(5000)
    expect(statuses(tick(m, 5000))).toEqual([
      { type: "status", target: { kind: "push", subject: "in.c" }, code: 100, description: "Idle Heartbeat", headers: { "Nats-Last-Consumer": "3", "Nats-Last-Stream": "3" } }
    ])
  })

  it("flow control asks for a reply and stalls at the window until it comes", () => {
    const st = stream(10, 100)
    const m = machine({ name: "o", deliver_subject: "in.o", flow_control: true, idle_heartbeat: SEC * NS }, st, 0, { flowControlWindowBytes: 400 })
    const out = interest(m, 0)
    expect(seqs(out)).toEqual([1, 2, 3, 4])
    const fc = statuses(out)
    expect(fc).toMatchObject([{ code: 100, description: "FlowControl Request", target: { subject: "in.o" } }])
    const reply = fc[0].reply!
    expect(reply.startsWith("$JS.FC.S.o.")).toBe(true)
    expect(statuses(tick(m, 1000))[0].headers["Nats-Consumer-Stalled"]).toBe(reply)
    // The reply confirms what was sent before the request; 200 bytes are still in flight.
    const more = m.step({ type: "flowControlReply", subject: reply }, 1100)
    expect(seqs(more)).toEqual([5, 6])
    const next = statuses(more)[0].reply!
    expect(next).not.toBe(reply)
    expect(seqs(m.step({ type: "flowControlReply", subject: "$JS.FC.S.o.stale" }, 1200))).toEqual([])
    expect(seqs(m.step({ type: "flowControlReply", subject: next }, 1300))).toEqual([7, 8, 9])
  })

  it("ordered consumers (ephemeral, ack none, max_deliver 1, fc + heartbeat, memory) run through the same machine", () => {
    const st = stream(3)
    const m = machine(
      { deliver_subject: "_INBOX.ord", ack_policy: "none", max_deliver: 1, flow_control: true, idle_heartbeat: 5 * SEC * NS, mem_storage: true, num_replicas: 1, deliver_policy: "by_start_sequence", opt_start_seq: 2 },
      st
    )
    expect(delivers(interest(m, 0)).map((d) => [d.seq, d.consumerSeq, d.pending])).toEqual([
      [2, 1, 1],
      [3, 2, 0]
    ])
    expect(m.info()).toMatchObject({ num_ack_pending: 0, ack_floor: { consumer_seq: 2, stream_seq: 3 } })
    // pull flavour (@nats-io/jetstream ordered consumer)
    const p = machine({ name: "op", ack_policy: "none", max_deliver: 1, mem_storage: true, num_replicas: 1, inactive_threshold: 5 * SEC * NS }, st)
    expect(seqs(pull(p, 0, { batch: 10, expires: 30 * SEC * NS, idle_heartbeat: 15 * SEC * NS }))).toEqual([1, 2, 3])
  })

  it("an ephemeral push consumer without interest is terminated after inactive_threshold", () => {
    const m = machine({ deliver_subject: "in.e", inactive_threshold: 2 * SEC * NS }, stream(0))
    interest(m, 0)
    interest(m, 1000, false)
    expect(m.nextDeadline()).toBe(3000)
    expect(tick(m, 2999)).toEqual([])
    expect(tick(m, 3000)).toEqual([{ type: "terminate", reason: "inactive" }])
  })
})
