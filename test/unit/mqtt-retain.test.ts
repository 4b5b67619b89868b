import { describe, expect, it } from "vitest"
import { bytes, connected, ofType, pkt, sent } from "../helpers/mqtt-session.js"

const publish = (topic: string, payload: string, retain: boolean, qos = 0) =>
  pkt({ cmd: "publish", topic, payload: bytes(payload), qos, retain, dup: false, messageId: qos > 0 ? 1 : undefined })

describe("retained messages", () => {
  it("[MQTT-3.3.1-6] the retained lookup of new subscriptions is asked for after their SUBACK, never for a refused filter", () => {
    const { session } = connected({ deps: { canSubscribe: (f) => f !== "no/#" } })
    const a = session.step(pkt({ cmd: "subscribe", messageId: 4, subscriptions: [{ topic: "a/+", qos: 1 }, { topic: "no/#", qos: 0 }, { topic: "b", qos: 0 }] }), 0)
    const order = a.filter((x) => x.type === "send" || x.type === "wantRetained").map((x) => (x.type === "send" ? x.packet.cmd : `${x.type} ${x.filter}`))
    expect(order).toEqual(["suback", "wantRetained a/+", "wantRetained b"])
  })

  it("[MQTT-3.3.1-5] a retained PUBLISH stores the message (and is routed as usual)", () => {
    const { session } = connected()
    const a = session.step(publish("a/b", "v1", true, 1), 0)
    expect(ofType(a, "storeRetained")).toEqual([{ type: "storeRetained", topic: "a/b", subject: "a.b", payload: bytes("v1"), qos: 1 }])
    expect(ofType(a, "publish")[0]).toMatchObject({ subject: "a.b", retain: true })
  })

  it("[MQTT-3.3.1-10][MQTT-3.3.1-11] an empty retained payload deletes the retained message and is still routed", () => {
    const { session } = connected()
    const a = session.step(publish("a/b", "", true), 0)
    expect(ofType(a, "deleteRetained")).toEqual([{ type: "deleteRetained", topic: "a/b", subject: "a.b" }])
    expect(ofType(a, "storeRetained")).toEqual([])
    expect(ofType(a, "publish")).toHaveLength(1)
  })

  it("[MQTT-3.3.1-12] a PUBLISH without retain neither stores nor deletes", () => {
    const { session } = connected()
    const a = session.step(publish("a/b", "x", false), 0)
    expect(ofType(a, "storeRetained")).toEqual([])
    expect(ofType(a, "deleteRetained")).toEqual([])
  })

  it("[MQTT-3.3.1-6][MQTT-3.3.1-8] retained messages for a new subscription go out with retain 1, at min(QoS)", () => {
    const { session } = connected()
    session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "a/+", qos: 1 }] }), 0)
    const a = session.step(
      {
        type: "retained",
        filter: "a/+",
        messages: [
          { topic: "a/x", payload: bytes("1"), qos: 2 },
          { topic: "a/y", payload: bytes("2"), qos: 0 },
          { topic: "b/z", payload: bytes("not matching"), qos: 0 }
        ]
      },
      0
    )
    expect(sent(a)).toEqual([
      { cmd: "publish", topic: "a/x", payload: bytes("1"), qos: 1, retain: true, dup: false, messageId: 1 },
      { cmd: "publish", topic: "a/y", payload: bytes("2"), qos: 0, retain: true, dup: false }
    ])
  })

  it("[MQTT-3.3.1-9] messages to an established subscription carry retain 0", () => {
    const { session } = connected()
    session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "a", qos: 0 }] }), 0)
    expect(sent(session.step({ type: "deliver", subject: "a", payload: bytes("x"), qos: 0 }, 0))[0]).toMatchObject({ retain: false })
  })

  it("[MQTT-4.7.2-1] retained $-topics are not sent for a wildcard-first filter", () => {
    const { session } = connected()
    session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "#", qos: 0 }] }), 0)
    const a = session.step({ type: "retained", filter: "#", messages: [{ topic: "$SYS/x", payload: bytes("1"), qos: 0 }] }, 0)
    expect(sent(a)).toEqual([])
  })
})
