// Stored messages that are not in memory (a session restored from the streams, or queued
// while its client was away) are fetched from the shell when the session needs them: the
// in-flight ones before the resumed session's resend, which keeps its order; the queued
// ones as the window makes room. Issue #15, items 8 and 9.
import { describe, expect, it } from "vitest"
import { bytes, connected, ofType, pkt, sent } from "../helpers/mqtt-session.js"
import type { SessionSnapshot } from "../../src/core/mqtt/types.js"

const persistent = { clientId: "dev", clean: false }

/** A stored session: two messages in flight on disk, a PUBREL owed, three queued on disk. */
const stored = (): SessionSnapshot => ({
  clientId: "dev",
  owner: "",
  subscriptions: [{ filter: "t/#", qos: 2 }],
  outbound: [
    { packetId: 1, qos: 1, topic: "t/1", payload: undefined, retain: false, phase: "publish", ref: 11 },
    { packetId: 2, qos: 2, topic: "", payload: new Uint8Array(0), retain: false, phase: "pubrel" },
    { packetId: 3, qos: 2, topic: "t/3", payload: undefined, retain: false, phase: "publish", ref: 13 }
  ],
  queued: [
    { qos: 2, topic: "t/4", payload: undefined, size: 4, retain: false, ref: 14 },
    { qos: 2, topic: "t/5", payload: undefined, size: 4, retain: false, ref: 15 },
    { qos: 1, topic: "t/6", payload: bytes("six"), size: 3, retain: false }
  ],
  inboundQos2: [],
  lastPacketId: 3
})

const publishes = (a: ReturnType<typeof sent>) => a.filter((p) => p.cmd === "publish" || p.cmd === "pubrel")

describe("a resumed session fetches what is on disk", () => {
  it("asks for its in-flight messages first and resends nothing until they are here, then everything in order [MQTT-4.4.0-1]", () => {
    const { session, readyActions } = connected({ connect: persistent, stored: stored(), config: { maxAckPending: 4 } })
    expect(sent(readyActions)).toEqual([{ cmd: "connack", returnCode: 0, sessionPresent: true }])
    expect(ofType(readyActions, "fetch")).toEqual([{ type: "fetch", refs: [11, 13] }])
    // The shell allows the resend over max_pending when it goes out: it has to know when that is.
    expect(session.resendPending).toBe(true)
    // A live message meanwhile waits behind them.
    expect(sent(session.step({ type: "deliver", subject: "t.live", payload: bytes("live"), qos: 1 }, 1))).toEqual([])
    const half = session.step({ type: "fetched", messages: [{ ref: 11, payload: bytes("one"), qos: 1 }] }, 2)
    expect(sent(half)).toEqual([])
    expect(session.resendPending).toBe(true)
    const rest = session.step({ type: "fetched", messages: [{ ref: 13, payload: bytes("three"), qos: 2 }] }, 3)
    expect(publishes(sent(rest))).toEqual([
      { cmd: "publish", topic: "t/1", payload: bytes("one"), qos: 1, retain: false, dup: true, messageId: 1 },
      { cmd: "pubrel", messageId: 2 },
      { cmd: "publish", topic: "t/3", payload: bytes("three"), qos: 2, retain: false, dup: true, messageId: 3 }
    ])
    expect(session.resendPending).toBe(false)
    // The window (4) has one slot: the next queued message is on disk, so it is fetched.
    expect(ofType(rest, "fetch")).toEqual([{ type: "fetch", refs: [14] }])
    const next = session.step({ type: "fetched", messages: [{ ref: 14, payload: bytes("four"), qos: 1 }] }, 4)
    // Published at QoS 1, so it goes at QoS 1 whatever the subscription's grant.
    expect(publishes(sent(next))).toEqual([{ cmd: "publish", topic: "t/4", payload: bytes("four"), qos: 1, retain: false, dup: false, messageId: 4 }])
  })

  it("a message no longer stored is let go, its packet id freed, and the rest goes on", () => {
    const { session } = connected({ connect: persistent, stored: stored(), config: { maxAckPending: 10 } })
    const a = session.step({ type: "fetched", messages: [{ ref: 11, payload: undefined }, { ref: 13, payload: bytes("three") }] }, 1)
    expect(ofType(a, "drop")).toEqual([{ type: "drop", reason: "gone", ref: 11 }])
    expect(publishes(sent(a)).map((p) => (p.cmd === "publish" ? p.topic : "pubrel"))).toEqual(["pubrel", "t/3"])
    expect(ofType(a, "fetch")).toEqual([{ type: "fetch", refs: [14, 15] }])
    const b = session.step({ type: "fetched", messages: [{ ref: 14, payload: undefined }, { ref: 15, payload: bytes("five") }] }, 2)
    expect(publishes(sent(b)).map((p) => (p.cmd === "publish" ? p.topic : "pubrel"))).toEqual(["t/5", "t/6"])
    expect(session.snapshot().outbound.map((o) => o.packetId)).toEqual([2, 3, 4, 5])
  })

  it("fetches no more than the window has room for, and each message once", () => {
    const { session, readyActions } = connected({
      connect: persistent,
      stored: { ...stored(), outbound: [] },
      config: { maxAckPending: 1 }
    })
    expect(ofType(readyActions, "fetch")).toEqual([{ type: "fetch", refs: [14] }])
    // Nothing was in flight: there is no resend to wait for, only queued messages to fetch.
    expect(session.resendPending).toBe(false)
    // Another look at the window before the answer asks for nothing again.
    expect(ofType(session.step({ type: "deliver", subject: "t.x", payload: bytes("x"), qos: 1 }, 1), "fetch")).toEqual([])
  })

  it("a snapshot of a session waiting for fetches still lists everything it owes", () => {
    const { session } = connected({ connect: persistent, stored: stored() })
    const snap = session.snapshot()
    expect(snap.outbound.map((o) => o.ref ?? o.phase)).toEqual([11, "pubrel", 13])
    expect(snap.queued.map((q) => q.ref ?? q.topic)).toEqual([14, 15, "t/6"])
  })
})

describe("the queue's bounds, with stored messages", () => {
  it("the oldest waiting message gives way even when it is on disk", () => {
    const { session } = connected({ connect: persistent, stored: { ...stored(), outbound: [] }, config: { maxAckPending: 1, maxQueued: 3 } })
    const a = session.step({ type: "deliver", subject: "t.new", payload: bytes("new"), qos: 1, ref: 20 }, 1)
    // t/4 was being fetched: it goes all the same, and its late answer is ignored.
    expect(ofType(a, "drop")).toEqual([{ type: "drop", reason: "queue_full", ref: 14 }])
    expect(session.snapshot().queued.map((q) => q.topic)).toEqual(["t/5", "t/6", "t/new"])
    expect(sent(session.step({ type: "fetched", messages: [{ ref: 14, payload: bytes("four") }] }, 2))).toEqual([])
  })
})

describe("packets", () => {
  it("a PUBACK for a resumed in-flight message not fetched yet is taken", () => {
    const { session } = connected({ connect: persistent, stored: stored() })
    session.step(pkt({ cmd: "puback", messageId: 1 }), 1)
    const a = session.step({ type: "fetched", messages: [{ ref: 11, payload: bytes("one") }, { ref: 13, payload: bytes("three") }] }, 2)
    // Message 1 was acknowledged meanwhile: it is not sent again.
    expect(publishes(sent(a)).map((p) => (p.cmd === "publish" ? p.topic : "pubrel"))).toEqual(["pubrel", "t/3"])
  })
})

describe("a large stored message in flight is not kept in memory (issue #15, item 8)", () => {
  const subscribed = (config: Record<string, number>) => {
    const f = connected({ connect: persistent, config: { ackWaitMs: 1000, ...config } })
    f.session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 2 }] }), 0)
    return f
  }

  it("lets go of a stored payload over keepSentPayloadMax once sent, and reads it back for the ack_wait resend", () => {
    const { session } = subscribed({ keepSentPayloadMax: 4 })
    const a = session.step({ type: "deliver", subject: "t.big", payload: bytes("large payload"), qos: 1, ref: 21 }, 0)
    expect(publishes(sent(a))).toEqual([{ cmd: "publish", topic: "t/big", payload: bytes("large payload"), qos: 1, retain: false, dup: false, messageId: 1 }])
    expect(session.snapshot().outbound[0].payload).toBeUndefined()
    // Small ones, and ones the store does not have (no numeric ref), stay.
    session.step({ type: "deliver", subject: "t.small", payload: bytes("tiny"), qos: 1, ref: 22 }, 0)
    session.step({ type: "deliver", subject: "t.mem", payload: bytes("not stored"), qos: 1 }, 0)
    expect(session.snapshot().outbound.map((o) => o.payload)).toEqual([undefined, bytes("tiny"), bytes("not stored")])
    // ack_wait passes: what is in memory goes again at once, the large one is fetched first.
    const due = session.step({ type: "tick" }, 1000)
    expect(publishes(sent(due)).map((p) => (p.cmd === "publish" ? [p.topic, p.dup] : p.cmd))).toEqual([["t/small", true], ["t/mem", true]])
    expect(ofType(due, "fetch")).toEqual([{ type: "fetch", refs: [21] }])
    // Asked once, however many ticks pass before the answer.
    expect(ofType(session.step({ type: "tick" }, 1500), "fetch")).toEqual([])
    const back = session.step({ type: "fetched", messages: [{ ref: 21, payload: bytes("large payload"), qos: 1 }] }, 1600)
    expect(publishes(sent(back))).toEqual([{ cmd: "publish", topic: "t/big", payload: bytes("large payload"), qos: 1, retain: false, dup: true, messageId: 1 }])
    expect(session.snapshot().outbound[0].payload).toBeUndefined()
    // The PUBACK completes it as usual.
    expect(ofType(session.step(pkt({ cmd: "puback", messageId: 1 }), 1700), "ack")).toEqual([{ type: "ack", ref: 21 }])
  })

  it("keeps every payload until acknowledged without keepSentPayloadMax", () => {
    const { session } = subscribed({})
    session.step({ type: "deliver", subject: "t.big", payload: bytes("large payload"), qos: 1, ref: 21 }, 0)
    expect(session.snapshot().outbound[0].payload).toEqual(bytes("large payload"))
  })

  it("lets go of a QoS 2 payload at PUBREC: only the PUBREL is resent from then on [MQTT-4.3.3]", () => {
    const released: Uint8Array[] = []
    const { session } = connected({ connect: persistent, config: { ackWaitMs: 1000 }, deps: { released: (p: Uint8Array) => released.push(p) } })
    session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 2 }] }), 0)
    session.step({ type: "deliver", subject: "t.two", payload: bytes("two"), qos: 2, ref: 31 }, 0)
    session.step(pkt({ cmd: "pubrec", messageId: 1 }), 10)
    expect(released).toEqual([bytes("two")])
    expect(session.snapshot().outbound[0]).toMatchObject({ phase: "pubrel", payload: undefined })
    expect(publishes(sent(session.step({ type: "tick" }, 1010)))).toEqual([{ cmd: "pubrel", messageId: 1 }])
    // Released once: PUBCOMP does not release it again.
    session.step(pkt({ cmd: "pubcomp", messageId: 1 }), 1020)
    expect(released).toHaveLength(1)
  })
})
