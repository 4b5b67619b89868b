import { describe, expect, it } from "vitest"
import { bytes, connected, ofType, pkt } from "../helpers/mqtt-session.js"
import type { SessionInput } from "../../src/core/mqtt/types.js"

const will = { topic: "dev/1/status", payload: bytes("offline"), qos: 1, retain: true }

describe("will message", () => {
  it.each<[string, SessionInput]>([
    ["network drop", { type: "connectionLost" }],
    ["protocol error from the codec", { type: "protocolError", reason: "malformed remaining length" }],
    ["takeover by the same client id", { type: "takenOver" }],
    ["a protocol violation", pkt({ cmd: "connack" })]
  ])("[MQTT-3.1.2-8] published on unexpected disconnect: %s", (_name, input) => {
    const { session } = connected({ connect: { will } })
    const a = session.step(input, 5)
    expect(ofType(a, "publish")).toEqual([{ type: "publish", subject: "dev.1.status", payload: will.payload, qos: 1, retain: true }])
    expect(ofType(a, "storeRetained")).toEqual([
      { type: "storeRetained", topic: "dev/1/status", subject: "dev.1.status", payload: will.payload, qos: 1 }
    ])
    expect(ofType(a, "close")).toHaveLength(1)
  })

  it("[MQTT-3.1.2-8] published on keepalive expiry", () => {
    const { session } = connected({ connect: { will, keepalive: 2 } })
    expect(ofType(session.step({ type: "tick" }, 3000), "publish")).toHaveLength(1)
  })

  it("[MQTT-3.1.2-10] never published after DISCONNECT", () => {
    const { session } = connected({ connect: { will } })
    const a = session.step(pkt({ cmd: "disconnect" }), 0)
    expect(ofType(a, "publish")).toEqual([])
    expect(ofType(a, "close")).toEqual([{ type: "close", reason: "Client Closed" }])
    expect(session.step({ type: "connectionLost" }, 1)).toEqual([])
  })

  it("published only once", () => {
    const { session } = connected({ connect: { will } })
    session.step({ type: "connectionLost" }, 0)
    expect(session.step({ type: "takenOver" }, 1)).toEqual([])
  })

  it("no will registered: nothing published", () => {
    const { session } = connected()
    expect(ofType(session.step({ type: "connectionLost" }, 0), "publish")).toEqual([])
  })

  it("a refused CONNECT never publishes its will", () => {
    const { session, connectActions } = connected({ connect: { will, protocolVersion: 5 } })
    expect(session.isClosed).toBe(true)
    expect(ofType(connectActions, "publish")).toEqual([])
  })

  it("a will with an empty retained payload deletes the retained message", () => {
    const { session } = connected({ connect: { will: { ...will, payload: bytes("") } } })
    expect(ofType(session.step({ type: "connectionLost" }, 0), "deleteRetained")).toHaveLength(1)
  })
})
