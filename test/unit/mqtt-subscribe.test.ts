import { describe, expect, it } from "vitest"
import { bytes, connected, ofType, pkt, sent } from "../helpers/mqtt-session.js"

const sub = (messageId: number, ...subscriptions: Array<{ topic: string; qos: number }>) =>
  pkt({ cmd: "subscribe", messageId, subscriptions })
const deliver = (subject: string, qos: number) => ({ type: "deliver", subject, payload: bytes("m"), qos }) as const

describe("SUBSCRIBE / SUBACK", () => {
  it("[MQTT-3.8.4-1][MQTT-3.9.3-1] SUBACK grants min(requested, 2) per filter in order; 0x80 for invalid filters", () => {
    const { session } = connected()
    const a = session.step(sub(7, { topic: "a/+", qos: 2 }, { topic: "a/#/b", qos: 1 }, { topic: "b/#", qos: 0 }), 0)
    expect(sent(a)).toEqual([{ cmd: "suback", messageId: 7, granted: [2, 0x80, 0] }])
    expect(ofType(a, "subscribe")).toEqual([
      { type: "subscribe", filter: "a/+", subjects: ["a.*"], qos: 2, restored: false },
      { type: "subscribe", filter: "b/#", subjects: ["b", "b.>"], qos: 0, restored: false }
    ])
  })

  it("0x80 for filters denied by the permission check and for internal $MQTT subjects", () => {
    const { session } = connected({ deps: { canSubscribe: (f) => !f.startsWith("secret") } })
    const a = session.step(sub(1, { topic: "secret/x", qos: 1 }, { topic: "$MQTT/sess/#", qos: 1 }, { topic: "ok", qos: 1 }), 0)
    expect(sent(a)).toEqual([{ cmd: "suback", messageId: 1, granted: [0x80, 0x80, 1] }])
  })

  it("[MQTT-3.8.3-3] SUBSCRIBE without filters closes; [MQTT-3.8.3-4] requested QoS 3 closes", () => {
    expect(ofType(connected().session.step(sub(1), 0), "close")).toHaveLength(1)
    expect(ofType(connected().session.step(sub(1, { topic: "a", qos: 3 }), 0), "close")).toHaveLength(1)
  })

  it("[MQTT-3.8.4-3] an identical filter replaces the subscription's QoS", () => {
    const { session } = connected()
    session.step(sub(1, { topic: "a", qos: 2 }), 0)
    session.step(sub(2, { topic: "a", qos: 0 }), 0)
    expect(sent(session.step(deliver("a", 2), 0))[0]).toMatchObject({ qos: 0 })
    expect(session.snapshot().subscriptions).toEqual([{ filter: "a", qos: 0 }])
  })

  it("overlapping subscriptions: a message matching several filters is delivered once at the max granted QoS", () => {
    const { session } = connected()
    session.step(sub(1, { topic: "a/#", qos: 0 }, { topic: "a/+", qos: 1 }, { topic: "+/b", qos: 0 }), 0)
    const out = sent(session.step(deliver("a.b", 2), 0))
    expect(out).toEqual([{ cmd: "publish", topic: "a/b", payload: bytes("m"), qos: 1, retain: false, dup: false, messageId: 1 }])
  })

  it("a message matching none of the filters is not delivered", () => {
    const { session } = connected()
    session.step(sub(1, { topic: "a/+", qos: 1 }), 0)
    expect(sent(session.step(deliver("b.c", 1), 0))).toEqual([])
  })

  it("[MQTT-4.7.2-1] a $-subject reaching a wildcard-first filter is not delivered", () => {
    const { session } = connected()
    session.step(sub(1, { topic: "#", qos: 0 }, { topic: "+/x", qos: 0 }), 0)
    expect(sent(session.step(deliver("$SYS.x", 0), 0))).toEqual([])
    session.step(sub(2, { topic: "$SYS/#", qos: 0 }), 0)
    expect(sent(session.step(deliver("$SYS.x", 0), 0))).toHaveLength(1)
  })

  it("NATS subjects come out as MQTT topics ('//' -> '.', '/' token -> empty level)", () => {
    const { session } = connected()
    session.step(sub(1, { topic: "#", qos: 0 }), 0)
    expect(sent(session.step(deliver("/.a//b./", 0), 0))[0]).toMatchObject({ topic: "/a.b/" })
  })
})

describe("UNSUBSCRIBE", () => {
  it("[MQTT-3.10.4-5] UNSUBACK even when nothing matched; unsubscribe action for removed filters", () => {
    const { session } = connected()
    session.step(sub(1, { topic: "a/#", qos: 1 }), 0)
    const a = session.step(pkt({ cmd: "unsubscribe", messageId: 4, unsubscriptions: ["a/#", "nope"] }), 0)
    expect(ofType(a, "unsubscribe")).toEqual([{ type: "unsubscribe", filter: "a/#", subjects: ["a", "a.>"] }])
    expect(sent(a)).toEqual([{ cmd: "unsuback", messageId: 4 }])
    expect(sent(session.step(deliver("a.b", 1), 0))).toEqual([])
  })

  it("[MQTT-3.10.3-2] UNSUBSCRIBE without filters closes", () => {
    const { session } = connected()
    expect(ofType(session.step(pkt({ cmd: "unsubscribe", messageId: 1, unsubscriptions: [] }), 0), "close")).toHaveLength(1)
  })
})
