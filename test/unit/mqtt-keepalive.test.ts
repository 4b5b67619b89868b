import { describe, expect, it } from "vitest"
import { bytes, connected, ofType, pkt, sent } from "../helpers/mqtt-session.js"

const will = { topic: "dev/status", payload: bytes("offline"), qos: 1, retain: false }

describe("keepalive", () => {
  it("[MQTT-3.1.2-24] closes after 1.5 x keepalive of silence and publishes the will", () => {
    const { session, connectActions } = connected({ now: 1000, connect: { keepalive: 10, will } })
    expect(session.nextDeadline()).toBe(16_000)
    expect(ofType(connectActions, "deadline")).toEqual([{ type: "deadline", at: 16_000 }])
    expect(session.step({ type: "tick" }, 15_999).filter((a) => a.type !== "deadline")).toEqual([])
    const actions = session.step({ type: "tick" }, 16_000)
    expect(ofType(actions, "close")[0].reason).toBe("Keepalive Timeout")
    expect(ofType(actions, "publish")).toEqual([
      { type: "publish", subject: "dev.status", payload: will.payload, qos: 1, retain: false }
    ])
    expect(session.nextDeadline()).toBeUndefined()
  })

  it("any packet from the client pushes the deadline out", () => {
    const { session } = connected({ connect: { keepalive: 10 } })
    const a = session.step(pkt({ cmd: "pingreq" }), 12_000)
    expect(sent(a)).toEqual([{ cmd: "pingresp" }])
    expect(ofType(a, "deadline")).toEqual([{ type: "deadline", at: 27_000 }])
    expect(session.step({ type: "tick" }, 26_999).some((x) => x.type === "close")).toBe(false)
    expect(session.step({ type: "tick" }, 27_000).some((x) => x.type === "close")).toBe(true)
  })

  it("keepalive 0 turns the mechanism off", () => {
    const { session } = connected({ connect: { keepalive: 0 } })
    expect(session.nextDeadline()).toBeUndefined()
    expect(session.step({ type: "tick" }, 1e12).some((x) => x.type === "close")).toBe(false)
  })

  it("after close nothing is timed and inputs are ignored", () => {
    const { session } = connected({ connect: { keepalive: 1 } })
    session.step({ type: "tick" }, 1500)
    expect(session.isClosed).toBe(true)
    expect(session.step(pkt({ cmd: "pingreq" }), 1600)).toEqual([])
  })
})
