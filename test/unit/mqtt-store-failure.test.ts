// The bridge over a durable MQTT store whose commits fail on demand (test/helpers/mqtt-bridge.ts).
import type * as MqttPacket from "mqtt-packet"
import { describe, expect, it } from "vitest"
import { bridgeWorld as world } from "../helpers/mqtt-bridge.js"

describe("a persistent session the client never heard of is not kept", () => {
  const presence = (packets: ReadonlyArray<MqttPacket.Packet>) => packets.map((p) => p.cmd === "connack" && p.sessionPresent)

  // Found by the simulator (seeds 1619657144, 8, 72158729): a new session's CONNACK waited
  // for the commit of its record, the commit failed and the client was cut off unanswered.
  // The session stayed, so the next CONNECT heard "session present" and the client, which
  // had lost its session in an earlier restart, never subscribed again.
  it("a new session whose CONNACK was lost to a failed commit: the next CONNECT hears session present 0 [MQTT-3.2.2-2]", async () => {
    const w = world()
    const first = w.connect("dev")
    await w.turn()
    expect(first.packets).toEqual([]) // the CONNACK waits for the commit of the session's record
    await w.turn(false)
    expect(first.closed).toBe(true)
    expect(first.packets).toEqual([])
    expect(w.account.sessions.has("dev")).toBe(false)
    w.tick(10)
    const second = w.connect("dev")
    await w.turn(true)
    expect(presence(second.packets)).toEqual([false])
    expect(w.account.sessions.has("dev")).toBe(true)
  })

  it("once its CONNACK went out, the session stays for the next connection (session present 1)", async () => {
    const w = world()
    const first = w.connect("dev")
    await w.turn(true)
    expect(presence(first.packets)).toEqual([false])
    first.send({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 1 }] })
    await w.turn(false) // the SUBACK's commit fails: cut off, but the session was announced
    expect(first.closed).toBe(true)
    w.tick(10)
    const second = w.connect("dev")
    await w.turn(true)
    expect(presence(second.packets)).toEqual([true])
  })

  it("a client gone before its new session's CONNACK was written leaves no session behind", async () => {
    const w = world()
    const first = w.connect("dev")
    await w.turn()
    first.drop()
    await w.turn(true)
    expect(w.account.sessions.has("dev")).toBe(false)
    const second = w.connect("dev")
    await w.turn(true)
    expect(presence(second.packets)).toEqual([false])
  })

  // A client that registers a persistent subscription and leaves at once (CONNECT,
  // SUBSCRIBE, DISCONNECT in one write) did not wait for the CONNACK: its session stays.
  const subscribeAndLeave = [
    { cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 1 }] },
    { cmd: "disconnect" }
  ]

  it("a client that ends with DISCONNECT before its CONNACK was written keeps its session (durable store: the CONNACK was held)", async () => {
    const w = world()
    w.connect("dev", false, subscribeAndLeave)
    await w.turn(true)
    expect(w.account.sessions.has("dev")).toBe(true)
    const second = w.connect("dev")
    await w.turn(true)
    expect(presence(second.packets)).toEqual([true])
  })

  it("the same without a durable store: CONNACK and SUBACK are written as it closes, and the session stays", async () => {
    const w = world({ durable: false })
    const first = w.connect("dev", false, subscribeAndLeave)
    await w.turn()
    expect(first.packets.map((p) => p.cmd)).toEqual(["connack", "suback"])
    const second = w.connect("dev")
    await w.turn()
    expect(presence(second.packets)).toEqual([true])
  })
})
