import { describe, expect, it } from "vitest"
import { MqttSession, assignClientId, defaultSessionConfig } from "../../src/core/mqtt/session.js"
import { bytes, connectPacket, connected, ofType, pkt, seededBytes, sent } from "../helpers/mqtt-session.js"
import type { ConnectPacket } from "../../src/core/mqtt/types.js"

const fresh = (deps: Partial<ConstructorParameters<typeof MqttSession>[1]> = {}) =>
  new MqttSession(0, { randomBytes: seededBytes(7), ...deps }, defaultSessionConfig)

const connectWith = (over: Partial<ConnectPacket>, deps = {}) => {
  const s = fresh(deps)
  return { s, actions: s.step(pkt(connectPacket(over)), 0) }
}

describe("CONNECT / CONNACK", () => {
  it("accepts a valid CONNECT: accept action, then CONNACK 0 once the session is ready", () => {
    const { s, actions } = connectWith({ clientId: "dev1" })
    expect(ofType(actions, "accept")).toEqual([{ type: "accept", clientId: "dev1", cleanSession: true, persistent: false, assignedId: false }])
    expect(sent(actions)).toEqual([])
    const ready = s.step({ type: "sessionReady" }, 0)
    expect(sent(ready)).toEqual([{ cmd: "connack", returnCode: 0, sessionPresent: false }])
  })

  it.each([3, 5, 0, 255])("[MQTT-3.1.2-2] protocol level %i -> CONNACK 1 and close", (level) => {
    const { s, actions } = connectWith({ protocolVersion: level })
    expect(sent(actions)).toEqual([{ cmd: "connack", returnCode: 1, sessionPresent: false }])
    expect(ofType(actions, "close")).toHaveLength(1)
    expect(s.isClosed).toBe(true)
  })

  it("MQTT 3.1 (MQIsdp, level 3) is refused with CONNACK 1", () => {
    const { actions } = connectWith({ protocolId: "MQIsdp", protocolVersion: 3 })
    expect(sent(actions)).toEqual([{ cmd: "connack", returnCode: 1, sessionPresent: false }])
  })

  it("[MQTT-3.1.2-1] a wrong protocol name closes without CONNACK", () => {
    const { actions } = connectWith({ protocolId: "HTTP" })
    expect(sent(actions)).toEqual([])
    expect(ofType(actions, "close")).toHaveLength(1)
  })

  it("[MQTT-3.1.3-8] empty client id with clean session 0 -> CONNACK 2 and close", () => {
    const { s, actions } = connectWith({ clientId: "", clean: false })
    expect(sent(actions)).toEqual([{ cmd: "connack", returnCode: 2, sessionPresent: false }])
    expect(s.isClosed).toBe(true)
  })

  it("[MQTT-3.1.3-6] empty client id with clean session 1 gets a server-assigned id from the injected random source", () => {
    const { s, actions } = connectWith({ clientId: "", clean: true })
    const accept = ofType(actions, "accept")[0]
    expect(accept.assignedId).toBe(true)
    expect(accept.clientId).toMatch(/^[0-9A-Za-z]{22}$/)
    expect(accept.clientId).toBe(assignClientId(seededBytes(7)))
    expect(s.clientId).toBe(accept.clientId)
  })

  it("an assigned id takes one unbiased byte per character: bytes of 248 and over are drawn again", () => {
    // 248 = 4 x 62: below it `byte % 62` is uniform over the alphabet.
    const first = [248, 62, 255, 65, 250, 247, ...Array.from({ length: 26 }, (_, i) => i)]
    const draws: Array<number> = []
    const source = (n: number): Uint8Array => {
      draws.push(n)
      return Uint8Array.from(first.slice(0, n))
    }
    // 62 -> "0", 65 -> "3", 247 -> 247 % 62 = 61 -> "z", then 0..18.
    expect(assignClientId(source)).toBe("03z0123456789ABCDEFGHI")
    expect(draws).toEqual([32])
    // A source that gives only bytes to throw away for a while is drawn again until 22 are taken.
    let calls = 0
    const stingy = (n: number): Uint8Array => new Uint8Array(n).fill(++calls < 3 ? 250 : 1)
    expect(assignClientId(stingy)).toBe("1".repeat(22))
    expect(calls).toBe(3)
  })

  it.each([
    [4, "bad user name or password"],
    [5, "not authorized"]
  ] as const)("CONNACK %i from the authenticator (%s), then close", (code, _what) => {
    const { s, actions } = connectWith({ username: "u", password: bytes("p") }, { authenticate: () => code })
    expect(sent(actions)).toEqual([{ cmd: "connack", returnCode: code, sessionPresent: false }])
    expect(s.isClosed).toBe(true)
  })

  it("[MQTT-3.2.2-4] a refused CONNACK never says session present", () => {
    const { actions } = connectWith({ clean: false, clientId: "x" }, { authenticate: () => 5 })
    expect(sent(actions)[0]).toMatchObject({ sessionPresent: false })
  })

  const flags = { reserved: false, will: false, willQos: 0, willRetain: false, username: false, password: false }
  it.each([
    ["[MQTT-3.1.2-3] reserved flag set", { ...flags, reserved: true }],
    ["[MQTT-3.1.2-13] will QoS without will flag", { ...flags, willQos: 1 }],
    ["[MQTT-3.1.2-15] will retain without will flag", { ...flags, willRetain: true }],
    ["[MQTT-3.1.2-14] will QoS 3", { ...flags, will: true, willQos: 3 }],
    ["[MQTT-3.1.2-22] password without user name", { ...flags, password: true }]
  ])("%s: close without CONNACK", (_name, f) => {
    const { s, actions } = connectWith({ flags: f })
    expect(sent(actions)).toEqual([])
    expect(ofType(actions, "close")[0].reason).toMatch(/Protocol Violation/)
    expect(s.isClosed).toBe(true)
  })

  it("[MQTT-3.1.2-14] a will object with QoS 3 or a wildcard topic closes the connection", () => {
    expect(connectWith({ will: { topic: "a", payload: bytes("x"), qos: 3, retain: false } }).s.isClosed).toBe(true)
    expect(connectWith({ will: { topic: "a/#", payload: bytes("x"), qos: 0, retain: false } }).s.isClosed).toBe(true)
  })

  it("[MQTT-3.1.0-1] a packet before CONNECT closes the connection without CONNACK", () => {
    const s = fresh()
    const actions = s.step(pkt({ cmd: "pingreq" }), 0)
    expect(sent(actions)).toEqual([])
    expect(ofType(actions, "close")).toHaveLength(1)
  })

  it("[MQTT-3.1.0-2] a second CONNECT is a protocol violation and closes (will published)", () => {
    const will = { topic: "w", payload: bytes("gone"), qos: 0, retain: false }
    const { session } = connected({ connect: { will } })
    const actions = session.step(pkt(connectPacket()), 1)
    expect(ofType(actions, "close")[0].reason).toMatch(/second CONNECT/)
    expect(ofType(actions, "publish")).toHaveLength(1)
  })

  it("[MQTT-3.1.0-2] a second CONNECT before the session is ready also closes", () => {
    const s = fresh()
    s.step(pkt(connectPacket()), 0)
    expect(ofType(s.step(pkt(connectPacket()), 0), "close")).toHaveLength(1)
  })

  it("packets sent before CONNACK are processed once the session is ready", () => {
    const s = fresh()
    s.step(pkt(connectPacket()), 0)
    expect(s.step(pkt({ cmd: "pingreq" }), 0)).toEqual([])
    expect(sent(s.step({ type: "sessionReady" }, 0))).toEqual([
      { cmd: "connack", returnCode: 0, sessionPresent: false },
      { cmd: "pingresp" }
    ])
  })

  it.each(["connack", "suback", "unsuback", "pingresp"] as const)("a client sending %s is closed", (cmd) => {
    const { session } = connected()
    expect(ofType(session.step(pkt({ cmd }), 0), "close")).toHaveLength(1)
  })

  it("connect timeout: no CONNECT within the limit closes", () => {
    const s = new MqttSession(100, { randomBytes: seededBytes(1) }, { ...defaultSessionConfig, connectTimeoutMs: 2000 })
    expect(s.nextDeadline()).toBe(2100)
    expect(s.step({ type: "tick" }, 2099)).toEqual([{ type: "deadline", at: 2100 }])
    expect(ofType(s.step({ type: "tick" }, 2100), "close")[0].reason).toBe("Connect Timeout")
  })
})
