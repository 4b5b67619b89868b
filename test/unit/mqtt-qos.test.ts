import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { AckOrder, MAX_PACKET_ID, OutWindow, recordTakeover } from "../../src/core/mqtt/qos.js"
import { bytes, connected, ofType, pkt, sent } from "../helpers/mqtt-session.js"
import type { SessionAction } from "../../src/core/mqtt/types.js"

const noDeadline = (a: SessionAction[]) => a.filter((x) => x.type !== "deadline")

const subscribed = (qos: number, config = {}) => {
  const f = connected({ config })
  f.session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos }] }), 0)
  return f.session
}

const deliver = (subject: string, qos: number, ref?: number) =>
  ({ type: "deliver", subject, payload: bytes("m"), qos, ref }) as const

describe("QoS 0", () => {
  it("inbound QoS 0 is routed without acknowledgment", () => {
    const { session } = connected()
    const a = session.step(pkt({ cmd: "publish", topic: "a/b", payload: bytes("x"), qos: 0, retain: false, dup: false }), 0)
    expect(noDeadline(a)).toEqual([{ type: "publish", subject: "a.b", payload: bytes("x"), qos: 0, retain: false, confirm: undefined }])
  })

  it("outbound QoS 0 has no packet id and no redelivery", () => {
    const s = subscribed(0)
    expect(sent(s.step(deliver("t.x", 2), 0))).toEqual([
      { cmd: "publish", topic: "t/x", payload: bytes("m"), qos: 0, retain: false, dup: false }
    ])
    expect(s.nextDeadline()).toBeUndefined()
  })
})

describe("QoS 1 outbound", () => {
  it("[MQTT-2.3.1-1] packet ids start at 1; PUBACK frees the message and acks its ref", () => {
    const s = subscribed(1)
    expect(sent(s.step(deliver("t.x", 1, 42), 0))).toEqual([
      { cmd: "publish", topic: "t/x", payload: bytes("m"), qos: 1, retain: false, dup: false, messageId: 1 }
    ])
    expect(s.inflightCount).toBe(1)
    expect(noDeadline(s.step(pkt({ cmd: "puback", messageId: 1 }), 5))).toEqual([{ type: "ack", ref: 42 }])
    expect(s.inflightCount).toBe(0)
  })

  it("delivers at min(message QoS, granted QoS)", () => {
    const s = subscribed(1)
    expect(sent(s.step(deliver("t.x", 2), 0))[0]).toMatchObject({ qos: 1 })
    expect(sent(s.step(deliver("t.x", 0), 0))[0]).toMatchObject({ qos: 0 })
  })

  it("redelivers with DUP after ack_wait, then again after another ack_wait", () => {
    const s = subscribed(1, { ackWaitMs: 30_000 })
    s.step(deliver("t.x", 1), 1000)
    expect(s.nextDeadline()).toBe(31_000)
    expect(sent(s.step({ type: "tick" }, 30_999))).toEqual([])
    expect(sent(s.step({ type: "tick" }, 31_000))).toEqual([
      { cmd: "publish", topic: "t/x", payload: bytes("m"), qos: 1, retain: false, dup: true, messageId: 1 }
    ])
    expect(s.nextDeadline()).toBe(61_000)
    s.step(pkt({ cmd: "puback", messageId: 1 }), 40_000)
    expect(s.nextDeadline()).toBeUndefined()
  })

  it("at most max_ack_pending unacknowledged; the rest waits and goes out as PUBACKs free slots", () => {
    const s = subscribed(1, { maxAckPending: 2 })
    const ids = [1, 2, 3, 4].flatMap((i) => sent(s.step(deliver(`t.${i}`, 1), 0)))
    expect(ids.map((p) => (p as { topic: string }).topic)).toEqual(["t/1", "t/2"])
    expect(s.inflightCount).toBe(2)
    expect(sent(s.step(pkt({ cmd: "puback", messageId: 1 }), 0))).toEqual([
      { cmd: "publish", topic: "t/3", payload: bytes("m"), qos: 1, retain: false, dup: false, messageId: 3 }
    ])
  })

  it("when the window and the queue are full, the oldest waiting message gives way to the newest", () => {
    const s = subscribed(1, { maxAckPending: 1, maxQueued: 2 })
    s.step(deliver("t.1", 1, 1), 0) // in flight
    s.step(deliver("t.2", 1, 2), 0)
    s.step(deliver("t.3", 1, 3), 0)
    expect(noDeadline(s.step(deliver("t.4", 1, 4), 0))).toEqual([{ type: "drop", reason: "queue_full", ref: 2 }])
    expect(s.snapshot().queued.map((q) => q.ref)).toEqual([3, 4])
  })

  it("max_queued_bytes bounds the queue's payload bytes the same way", () => {
    const s = subscribed(1, { maxAckPending: 1, maxQueued: 100, maxQueuedBytes: 10 })
    const big = (ref: number) => ({ type: "deliver", subject: "t.x", payload: bytes("12345"), qos: 1, ref }) as const
    s.step(big(1), 0) // in flight
    s.step(big(2), 0)
    s.step(big(3), 0) // 10 bytes queued: at the bound, not over it
    expect(noDeadline(s.step(big(4), 0))).toEqual([{ type: "drop", reason: "queue_full", ref: 2 }])
  })

  it("unsolicited PUBACK / PUBCOMP / PUBREC are ignored", () => {
    const s = subscribed(1)
    expect(noDeadline(s.step(pkt({ cmd: "puback", messageId: 9 }), 0))).toEqual([])
    expect(noDeadline(s.step(pkt({ cmd: "pubcomp", messageId: 9 }), 0))).toEqual([])
    expect(noDeadline(s.step(pkt({ cmd: "pubrec", messageId: 9 }), 0))).toEqual([])
    expect(s.isClosed).toBe(false)
  })
})

describe("packet ids", () => {
  it("[MQTT-2.3.1-1] wrap from 65535 to 1, never 0, skipping ids in use", () => {
    const w = new OutWindow(10, 10)
    w.setLastId(65534)
    w.add({ packetId: 1, qos: 1, topic: "a", payload: bytes(""), retain: false, phase: "publish", deadline: 0 })
    w.setLastId(65534)
    expect(w.nextPacketId()).toBe(65535)
    expect(w.nextPacketId()).toBe(2)
  })

  it("exhaustion: with all 65535 ids in flight the next message waits for a free id", () => {
    const s = subscribed(1, { maxAckPending: 70_000 })
    for (let i = 0; i < MAX_PACKET_ID; i++) s.step(deliver("t.x", 1), 0)
    expect(s.inflightCount).toBe(MAX_PACKET_ID)
    expect(sent(s.step(deliver("t.last", 1), 0))).toEqual([])
    const after = sent(s.step(pkt({ cmd: "puback", messageId: 777 }), 0))
    expect(after).toEqual([
      { cmd: "publish", topic: "t/last", payload: bytes("m"), qos: 1, retain: false, dup: false, messageId: 777 }
    ])
  })
})

describe("QoS 1 inbound", () => {
  it("routes with a confirm token and sends PUBACK only once the shell confirms durability", () => {
    const { session } = connected()
    const a = session.step(pkt({ cmd: "publish", topic: "a", payload: bytes("x"), qos: 1, retain: false, dup: false, messageId: 5 }), 0)
    expect(ofType(a, "publish")[0]).toMatchObject({ subject: "a", qos: 1, confirm: 5 })
    expect(sent(a)).toEqual([])
    expect(sent(session.step({ type: "published", packetId: 5 }, 0))).toEqual([{ cmd: "puback", messageId: 5 }])
  })

  it("[MQTT-2.3.1-1] QoS 1 PUBLISH with packet id 0 closes the connection", () => {
    const { session } = connected()
    const a = session.step(pkt({ cmd: "publish", topic: "a", payload: bytes("x"), qos: 1, retain: false, dup: false, messageId: 0 }), 0)
    expect(ofType(a, "close")).toHaveLength(1)
  })

  it("[MQTT-3.3.1-4] QoS 3 closes the connection", () => {
    const { session } = connected()
    const a = session.step(pkt({ cmd: "publish", topic: "a", payload: bytes("x"), qos: 3, retain: false, dup: false, messageId: 1 }), 0)
    expect(ofType(a, "close")).toHaveLength(1)
  })

  it("[MQTT-3.3.2-2] a wildcard in a PUBLISH topic closes the connection", () => {
    const { session } = connected()
    const a = session.step(pkt({ cmd: "publish", topic: "a/+", payload: bytes("x"), qos: 0, retain: false, dup: false }), 0)
    expect(ofType(a, "close")[0].reason).toMatch(/wildcards/)
  })

  it("a PUBLISH not permitted is acknowledged but not routed", () => {
    const { session } = connected({ deps: { canPublish: () => false } })
    const a = session.step(pkt({ cmd: "publish", topic: "a", payload: bytes("x"), qos: 1, retain: false, dup: false, messageId: 3 }), 0)
    expect(noDeadline(a)).toEqual([
      { type: "denied", op: "publish", topic: "a" },
      { type: "send", packet: { cmd: "puback", messageId: 3 } }
    ])
  })
})

describe("acknowledgements keep the order of the PUBLISHes [MQTT-4.6.0-2, -3]", () => {
  const publish = (messageId: number, qos: 1 | 2, topic = "a") =>
    pkt({ cmd: "publish", topic, payload: bytes("x"), qos, retain: false, dup: false, messageId })

  it("a confirmation that comes early waits for the earlier PUBLISH's, then both go, in order", () => {
    const { session } = connected()
    session.step(publish(1, 1), 0)
    session.step(publish(2, 2), 0)
    session.step(publish(3, 1), 0)
    // the shell confirms 3 and 2 first (nothing to store for them), 1 after its commit
    expect(sent(session.step({ type: "published", packetId: 3 }, 0))).toEqual([])
    expect(sent(session.step({ type: "published", packetId: 2 }, 0))).toEqual([])
    expect(sent(session.step({ type: "published", packetId: 1 }, 0))).toEqual([
      { cmd: "puback", messageId: 1 },
      { cmd: "pubrec", messageId: 2 },
      { cmd: "puback", messageId: 3 }
    ])
  })

  it("a duplicate QoS 2 PUBLISH or a refused one is answered behind a waiting acknowledgement", () => {
    const { session } = connected({ deps: { canPublish: (topic: string) => topic !== "denied" } })
    session.step(publish(1, 2), 0)
    session.step({ type: "published", packetId: 1 }, 0)
    session.step(publish(2, 1), 0) // waits for the shell
    expect(sent(session.step(publish(1, 2), 0))).toEqual([]) // duplicate of 1: PUBREC again, but behind 2
    expect(sent(session.step(publish(3, 1, "denied"), 0))).toEqual([])
    expect(sent(session.step({ type: "published", packetId: 2 }, 0))).toEqual([
      { cmd: "puback", messageId: 2 },
      { cmd: "pubrec", messageId: 1 },
      { cmd: "puback", messageId: 3 }
    ])
    // nothing waiting: answered at once
    expect(sent(session.step(publish(1, 2), 0))).toEqual([{ cmd: "pubrec", messageId: 1 }])
  })
})

describe("AckOrder", () => {
  it("packs ids and kinds without losing either", () => {
    const o = new AckOrder()
    o.expect(65535)
    o.expect(1)
    o.confirm(1, "pubrec")
    expect(o.next()).toBe(-1)
    o.confirm(65535, "puback")
    const out: Array<[number, string]> = []
    for (let e = o.next(); e >= 0; e = o.next()) out.push([AckOrder.packetId(e), AckOrder.ack(e)])
    expect(out).toEqual([[65535, "puback"], [1, "pubrec"]])
  })
})

describe("QoS 2 inbound", () => {
  const pub = (dup = false) =>
    pkt({ cmd: "publish", topic: "q", payload: bytes("once"), qos: 2, retain: false, dup, messageId: 9 })

  it("[MQTT-4.3.3-2] PUBREC after durability (the shell keeps the record with the message), duplicates suppressed until PUBREL, then PUBCOMP", () => {
    const { session } = connected({ connect: { clientId: "dev" } })
    const first = session.step(pub(), 0)
    expect(ofType(first, "publish")).toMatchObject([{ qos: 2, confirm: 9 }])
    expect(sent(first)).toEqual([])
    const dupEarly = session.step(pub(true), 0)
    expect(ofType(dupEarly, "publish")).toHaveLength(0)
    const conf = session.step({ type: "published", packetId: 9 }, 0)
    expect(ofType(conf, "persist")).toEqual([])
    expect(sent(conf)).toEqual([{ cmd: "pubrec", messageId: 9 }])
    const dup = session.step(pub(true), 0)
    expect(ofType(dup, "publish")).toHaveLength(0)
    expect(sent(dup)).toEqual([{ cmd: "pubrec", messageId: 9 }])
    const rel = session.step(pkt({ cmd: "pubrel", messageId: 9 }), 0)
    expect(ofType(rel, "persist")).toEqual([{ type: "persist", stream: "$MQTT_qos2in", key: "dev/9", record: undefined }])
    expect(sent(rel)).toEqual([{ cmd: "pubcomp", messageId: 9 }])
    // After PUBREL the id is free: the same id is a new message.
    expect(ofType(session.step(pub(), 0), "publish")).toHaveLength(1)
  })

  it("PUBREL before its PUBREC was sent is a protocol violation (it would free the id under a message not yet acknowledged)", () => {
    const { session } = connected()
    session.step(pub(), 0)
    const a = session.step(pkt({ cmd: "pubrel", messageId: 9 }), 0)
    expect(sent(a)).toEqual([])
    expect(session.closeReason).toBe("Protocol Violation: PUBREL before PUBREC")
  })

  it("PUBREL for an unknown id still gets PUBCOMP", () => {
    const { session } = connected()
    expect(sent(session.step(pkt({ cmd: "pubrel", messageId: 77 }), 0))).toEqual([{ cmd: "pubcomp", messageId: 77 }])
  })
})

describe("QoS 2 outbound", () => {
  it("PUBLISH -> PUBREC -> PUBREL (persisted in $MQTT_out) -> PUBCOMP", () => {
    const f = connected({ connect: { clientId: "sub" } })
    const s = f.session
    s.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 2 }] }), 0)
    expect(sent(s.step(deliver("t.x", 2, 11), 0))).toEqual([
      { cmd: "publish", topic: "t/x", payload: bytes("m"), qos: 2, retain: false, dup: false, messageId: 1 }
    ])
    const rec = noDeadline(s.step(pkt({ cmd: "pubrec", messageId: 1 }), 10))
    expect(rec).toEqual([
      { type: "ack", ref: 11 },
      { type: "persist", stream: "$MQTT_out", key: "sub/1", record: { packetId: 1 } },
      { type: "send", packet: { cmd: "pubrel", messageId: 1 } }
    ])
    expect(s.inflightCount).toBe(1)
    const comp = noDeadline(s.step(pkt({ cmd: "pubcomp", messageId: 1 }), 20))
    expect(comp).toEqual([{ type: "persist", stream: "$MQTT_out", key: "sub/1", record: undefined }])
    expect(s.inflightCount).toBe(0)
  })

  it("redelivers PUBLISH with DUP before PUBREC and PUBREL after it, on ack_wait", () => {
    const s = subscribed(2, { ackWaitMs: 1000 })
    s.step(deliver("t.x", 2), 0)
    expect(sent(s.step({ type: "tick" }, 1000))[0]).toMatchObject({ cmd: "publish", dup: true, messageId: 1 })
    s.step(pkt({ cmd: "pubrec", messageId: 1 }), 1500)
    expect(sent(s.step({ type: "tick" }, 2500))).toEqual([{ cmd: "pubrel", messageId: 1 }])
  })

  it("a repeated PUBREC re-sends PUBREL without persisting again", () => {
    const s = subscribed(2)
    s.step(deliver("t.x", 2), 0)
    s.step(pkt({ cmd: "pubrec", messageId: 1 }), 0)
    const again = noDeadline(s.step(pkt({ cmd: "pubrec", messageId: 1 }), 0))
    expect(again).toEqual([{ type: "send", packet: { cmd: "pubrel", messageId: 1 } }])
  })

  it("a PUBACK for a QoS 2 message is ignored", () => {
    const s = subscribed(2)
    s.step(deliver("t.x", 2), 0)
    s.step(pkt({ cmd: "puback", messageId: 1 }), 0)
    expect(s.inflightCount).toBe(1)
  })
})

describe("flapping protection", () => {
  it("counts takeovers within the window", () => {
    let r = recordTakeover(undefined, 0, 1000, 2)
    expect(r.flapping).toBe(false)
    r = recordTakeover(r.record, 100, 1000, 2)
    expect(r.flapping).toBe(false)
    r = recordTakeover(r.record, 200, 1000, 2)
    expect(r.flapping).toBe(true)
    r = recordTakeover(r.record, 1150, 1000, 2) // 0 and 100 fell out of the window
    expect(r.record.times).toEqual([200, 1150])
    expect(r.flapping).toBe(false)
  })
})

describe("the outbound window's deadline order", () => {
  // A model: live entries in order of last send; the next deadline is the first one's,
  // the due ones a prefix. Acks come in any order, resends move an entry to the end.
  it("nextDeadline and due agree with a model under sends, out-of-order acks and resends, and stay bounded", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant("send" as const), n: fc.integer({ min: 1, max: 40 }) }),
            fc.record({ op: fc.constant("ack" as const), pick: fc.nat() }),
            fc.record({ op: fc.constant("resend" as const), pick: fc.nat() }),
            fc.record({ op: fc.constant("tick" as const), dt: fc.integer({ min: 0, max: 50 }) })
          ),
          { maxLength: 300 }
        ),
        (ops) => {
          const ACK_WAIT = 100
          const w = new OutWindow(100_000, 0)
          let model: Array<number> = [] // packet ids in order of last send
          let now = 0
          for (const o of ops) {
            if (o.op === "send") {
              for (let i = 0; i < o.n; i++) {
                const id = w.nextPacketId()!
                w.addSent({ qos: 1, topic: "t", payload: bytes(""), size: 0, retain: false }, id, now + ACK_WAIT)
                model.push(id)
              }
            } else if (o.op === "ack" && model.length > 0) {
              const id = model[o.pick % model.length]
              w.inflight.delete(id)
              model = model.filter((x) => x !== id)
            } else if (o.op === "resend" && model.length > 0) {
              const id = model[o.pick % model.length]
              w.touch(w.inflight.get(id)!, now + ACK_WAIT)
              model = [...model.filter((x) => x !== id), id]
            } else if (o.op === "tick") {
              now += o.dt
            }
            const first = model[0]
            expect(w.nextDeadline()).toBe(first === undefined ? undefined : w.inflight.get(first)!.deadline)
            const due = model.filter((id) => w.inflight.get(id)!.deadline <= now)
            expect(w.due(now).map((e) => e.packetId)).toEqual(due)
            expect((w as unknown as { order: Array<unknown> }).order.length).toBeLessThanOrEqual(2 * model.length + 1024 + 40)
          }
        }
      ),
      { numRuns: 300 }
    )
  })
})
