import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { bytes, connected, ofType, pkt, sent } from "../helpers/mqtt-session.js"
import type { SessionSnapshot } from "../../src/core/mqtt/types.js"

const persistent = { clientId: "dev", clean: false }

/** A persistent session with subscriptions and QoS 1/2 messages in every state. */
const busy = () => {
  const { session } = connected({ connect: persistent })
  session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 2 }, { topic: "u", qos: 1 }] }), 0)
  session.step({ type: "deliver", subject: "t.1", payload: bytes("one"), qos: 1, ref: 101 }, 0) // id 1: awaiting PUBACK
  session.step({ type: "deliver", subject: "t.2", payload: bytes("two"), qos: 2, ref: 102 }, 0) // id 2: awaiting PUBREC
  session.step({ type: "deliver", subject: "t.3", payload: bytes("three"), qos: 2, ref: 103 }, 0) // id 3: -> PUBREL
  session.step(pkt({ cmd: "pubrec", messageId: 3 }), 0)
  session.step(pkt({ cmd: "publish", topic: "in", payload: bytes("x"), qos: 2, retain: false, dup: false, messageId: 50 }), 0)
  session.step({ type: "published", packetId: 50 }, 0)
  return session
}

describe("persistent sessions", () => {
  it("snapshot -> restore -> snapshot is the identity", () => {
    const snap = busy().snapshot()
    expect(snap.subscriptions).toEqual([{ filter: "t/#", qos: 2 }, { filter: "u", qos: 1 }])
    expect(snap.outbound.map((o) => [o.packetId, o.qos, o.phase, o.ref])).toEqual([
      [1, 1, "publish", 101],
      [2, 2, "publish", 102],
      [3, 2, "pubrel", 103]
    ])
    expect(snap.inboundQos2).toEqual([50])
    const again = connected({ connect: persistent, stored: snap, now: 10 })
    expect(again.session.snapshot()).toEqual(snap)
  })

  it("[MQTT-4.4.0-1] on reconnect: CONNACK session present, subscriptions re-established, unacknowledged PUBLISH resent with DUP and PUBREL resent, in order", () => {
    const snap = busy().snapshot()
    const { readyActions } = connected({ connect: persistent, stored: snap, now: 10 })
    expect(sent(readyActions)).toEqual([
      { cmd: "connack", returnCode: 0, sessionPresent: true },
      { cmd: "publish", topic: "t/1", payload: bytes("one"), qos: 1, retain: false, dup: true, messageId: 1 },
      { cmd: "publish", topic: "t/2", payload: bytes("two"), qos: 2, retain: false, dup: true, messageId: 2 },
      { cmd: "pubrel", messageId: 3 }
    ])
    expect(ofType(readyActions, "subscribe").map((s) => [s.filter, s.restored])).toEqual([
      ["t/#", true],
      ["u", true]
    ])
  })

  it("[MQTT-4.3.3-2] an inbound QoS 2 duplicate is still suppressed after reconnect", () => {
    const { session } = connected({ connect: persistent, stored: busy().snapshot() })
    const a = session.step(pkt({ cmd: "publish", topic: "in", payload: bytes("x"), qos: 2, retain: false, dup: true, messageId: 50 }), 0)
    expect(ofType(a, "publish")).toEqual([])
    expect(sent(a)).toEqual([{ cmd: "pubrec", messageId: 50 }])
  })

  it("packet ids continue after restore, skipping the restored ones", () => {
    const { session } = connected({ connect: persistent, stored: busy().snapshot() })
    expect(sent(session.step({ type: "deliver", subject: "u", payload: bytes("n"), qos: 1 }, 0))[0]).toMatchObject({ messageId: 4 })
  })

  it("subscription changes of a persistent session are persisted one filter at a time", () => {
    const { session } = connected({ connect: persistent })
    const a = session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "a", qos: 1 }, { topic: "b/#", qos: 2 }] }), 0)
    expect(ofType(a, "persistSubscription")).toEqual([
      { type: "persistSubscription", filter: "a", qos: 1 },
      { type: "persistSubscription", filter: "b/#", qos: 2 }
    ])
    // The thousandth SUBSCRIBE writes its own filter only, whatever the session already holds.
    for (let i = 0; i < 1000; i++) session.step(pkt({ cmd: "subscribe", messageId: 2, subscriptions: [{ topic: `many/${i}`, qos: 1 }] }), 0)
    const last = session.step(pkt({ cmd: "subscribe", messageId: 3, subscriptions: [{ topic: "z", qos: 0 }] }), 0)
    expect(ofType(last, "persistSubscription")).toEqual([{ type: "persistSubscription", filter: "z", qos: 0 }])
    expect(ofType(last, "persist")).toEqual([])
    const u = session.step(pkt({ cmd: "unsubscribe", messageId: 4, unsubscriptions: ["a", "never"] }), 0)
    expect(ofType(u, "persistSubscription")).toEqual([{ type: "persistSubscription", filter: "a", qos: undefined }])
  })

  it("[MQTT-3.1.2-6] a clean session ignores stored state: session present 0, nothing persisted", () => {
    const stored = busy().snapshot()
    const { session, readyActions } = connected({ connect: { clientId: "dev", clean: true }, stored })
    expect(sent(readyActions)).toEqual([{ cmd: "connack", returnCode: 0, sessionPresent: false }])
    const a = session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "a", qos: 1 }] }), 0)
    expect(ofType(a, "persist")).toEqual([])
  })

  it("[MQTT-3.2.2-3] a persistent session with nothing stored: session present 0", () => {
    expect(sent(connected({ connect: persistent }).readyActions)[0]).toMatchObject({ sessionPresent: false })
  })

  it("a stored session of another client id (hash collision) is never resumed: CONNACK 2", () => {
    const stored: SessionSnapshot = { ...busy().snapshot(), clientId: "other" }
    const { session, readyActions } = connected({ connect: persistent, stored })
    expect(sent(readyActions)).toEqual([{ cmd: "connack", returnCode: 2, sessionPresent: false }])
    expect(session.isClosed).toBe(true)
  })

  it("snapshot round-trips arbitrary subscription sets", () => {
    const filter = fc.constantFrom("a", "a/+", "a/#", "#", "+/b", "/x", "x/")
    fc.assert(
      fc.property(fc.array(fc.tuple(filter, fc.constantFrom(0, 1, 2)), { minLength: 1, maxLength: 6 }), (list) => {
        const { session } = connected({ connect: persistent })
        session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: list.map(([topic, qos]) => ({ topic, qos })) }), 0)
        const snap = session.snapshot()
        expect(connected({ connect: persistent, stored: snap }).session.snapshot()).toEqual(snap)
      })
    )
  })
})

describe("takeover", () => {
  it("the replaced session closes with 'Duplicate Client ID' and keeps its state for the newcomer", () => {
    const session = busy()
    const a = session.step({ type: "takenOver" }, 0)
    expect(ofType(a, "close")).toEqual([{ type: "close", reason: "Duplicate Client ID" }])
    expect(session.closeReason).toBe("Duplicate Client ID")
    const { readyActions } = connected({ connect: persistent, stored: session.snapshot() })
    expect(sent(readyActions)[0]).toMatchObject({ sessionPresent: true })
  })
})
