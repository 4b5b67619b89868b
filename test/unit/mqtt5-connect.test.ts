// The server's side of a v5 CONNECT (what it refuses, the CONNACK that accepts), and
// what the client asked to be told: problem information, response information, the
// payload format it promised.
import { describe, expect, it } from "vitest"
import {
  acceptConnect,
  type Connect,
  connectRefusal,
  decodePacket,
  encode,
  type Packet,
  payloadMatchesFormat,
  withProblemInformation
} from "../../src/core/mqtt/v5/index.js"
import { unframe } from "../helpers/mqtt5.js"

const connect = (c: Partial<Connect> = {}): Connect => ({
  cmd: "connect", protocolId: "MQTT", protocolVersion: 5, clean: false, keepalive: 30, clientId: "dev-1", properties: {}, ...c
})

describe("CONNECT refused before a session exists", () => {
  it("[MQTT-4.12.0-1] enhanced authentication it does not implement: 0x8C Bad authentication method", () => {
    expect(connectRefusal(connect({ properties: { authenticationMethod: "SCRAM-SHA-256" } }))).toMatchObject({ code: 0x8c })
  })

  it("[MQTT-3.2.2-12] a will above the server's Maximum QoS: 0x9B", () => {
    const will = { topic: "w", payload: Buffer.alloc(0), qos: 2, retain: false, properties: {} }
    expect(connectRefusal(connect({ will }), { maximumQoS: 1 })).toMatchObject({ code: 0x9b, ruleId: "MQTT-3.2.2-12" })
    expect(connectRefusal(connect({ will }))).toBeUndefined()
  })

  it("[MQTT-3.2.2-13] a retained will without retained messages: 0x9A", () => {
    const will = { topic: "w", payload: Buffer.alloc(0), qos: 0, retain: true, properties: {} }
    expect(connectRefusal(connect({ will }), { retainAvailable: false })).toMatchObject({ code: 0x9a })
  })
})

describe("the CONNACK that accepts a CONNECT", () => {
  it("announces only what differs from the standard's defaults", () => {
    expect(acceptConnect(connect(), {}, false).connack).toEqual({ cmd: "connack", sessionPresent: false, reasonCode: 0, properties: {} })
    const limits = { receiveMaximum: 100, maximumPacketSize: 1 << 20, topicAliasMaximum: 10, maximumQoS: 1 as const, retainAvailable: false, sharedSubscriptionAvailable: false }
    expect(acceptConnect(connect(), limits, false).connack.properties).toEqual({
      receiveMaximum: 100, maximumPacketSize: 1 << 20, topicAliasMaximum: 10, maximumQoS: 1, retainAvailable: false, sharedSubscriptionAvailable: false
    })
  })

  it("[MQTT-3.2.2-16] assigns a Client Identifier to a client that sent an empty one", () => {
    const n = acceptConnect(connect({ clientId: "" }), {}, false, "auto-1f3a")
    expect(n.connack.properties.assignedClientIdentifier).toBe("auto-1f3a")
    expect(() => acceptConnect(connect({ clientId: "" }), {}, false)).toThrow(/MQTT-3.2.2-16/)
  })

  it("[MQTT-3.2.2-2] Session Present is 0 after Clean Start, [MQTT-3.2.2-3] 1 for a resumed session", () => {
    expect(acceptConnect(connect({ clean: true }), {}, true).connack.sessionPresent).toBe(false)
    expect(acceptConnect(connect({ clean: false }), {}, true).connack.sessionPresent).toBe(true)
  })

  it("[MQTT-3.2.2-21] [MQTT-3.2.2-22] the client's Keep Alive, unless the server assigns its own", () => {
    expect(acceptConnect(connect({ keepalive: 30 }), {}, false)).toMatchObject({ keepAlive: 30 })
    expect(acceptConnect(connect({ keepalive: 30 }), { maximumKeepAlive: 60 }, false)).toMatchObject({ keepAlive: 30 })
    const long = acceptConnect(connect({ keepalive: 600 }), { maximumKeepAlive: 60 }, false)
    expect(long.keepAlive).toBe(60)
    expect(long.connack.properties.serverKeepAlive).toBe(60)
    expect(acceptConnect(connect({ keepalive: 0 }), { maximumKeepAlive: 60 }, false).keepAlive).toBe(60)
  })

  it("caps the Session Expiry Interval and says so", () => {
    const n = acceptConnect(connect({ properties: { sessionExpiryInterval: 0xffff_ffff } }), { maximumSessionExpiry: 3600 }, false)
    expect(n.sessionExpiryInterval).toBe(3600)
    expect(n.connack.properties.sessionExpiryInterval).toBe(3600)
  })

  it("[MQTT-3.1.2-28] sends Response Information only to a client that asked for it", () => {
    expect(acceptConnect(connect(), { responseInformation: "resp/dev-1" }, false).connack.properties.responseInformation).toBeUndefined()
    const asked = connect({ properties: { requestResponseInformation: true } })
    expect(acceptConnect(asked, { responseInformation: "resp/dev-1" }, false).connack.properties.responseInformation).toBe("resp/dev-1")
  })

  it("keeps the client's limits on what the server sends", () => {
    const n = acceptConnect(connect({ properties: { receiveMaximum: 5, maximumPacketSize: 2048, topicAliasMaximum: 8, requestProblemInformation: false } }), {}, false)
    expect(n).toMatchObject({ clientReceiveMaximum: 5, clientMaximumPacketSize: 2048, clientTopicAliasMaximum: 8, requestProblemInformation: false })
    expect(acceptConnect(connect(), {}, false)).toMatchObject({ clientReceiveMaximum: 65_535, clientMaximumPacketSize: Infinity, clientTopicAliasMaximum: 0, requestProblemInformation: true })
  })

  it("is a CONNACK the encoder writes and the decoder reads back", () => {
    const { connack } = acceptConnect(connect({ clientId: "" }), { receiveMaximum: 10, topicAliasMaximum: 4, maximumQoS: 1 }, false, "auto-1")
    const { first, body } = unframe(encode(connack))
    expect(decodePacket(first, body, { from: "server" })).toEqual(connack)
  })
})

describe("Request Problem Information", () => {
  const puback: Packet = { cmd: "puback", messageId: 1, reasonCode: 0x87, properties: { reasonString: "not allowed", userProperties: [["a", "b"]] } }

  it("[MQTT-3.1.2-29] with 0, no Reason String or User Properties but on PUBLISH, CONNACK and DISCONNECT", () => {
    expect(withProblemInformation(puback, false)).toEqual({ ...puback, properties: {} })
    const disconnect: Packet = { cmd: "disconnect", reasonCode: 0x8e, properties: { reasonString: "taken over" } }
    expect(withProblemInformation(disconnect, false)).toBe(disconnect)
    const publish: Packet = { cmd: "publish", topic: "t", payload: Buffer.alloc(0), qos: 0, retain: false, dup: false, properties: { userProperties: [["k", "v"]] } }
    expect(withProblemInformation(publish, false)).toBe(publish)
  })

  it("with 1 or absent, everything the packet may carry", () => {
    expect(withProblemInformation(puback, true)).toBe(puback)
    expect(withProblemInformation(puback, undefined)).toBe(puback)
  })
})

describe("Payload Format Indicator", () => {
  it("[MQTT-3.3.2-4] 1 promises well-formed UTF-8; absent or 0 promises nothing", () => {
    expect(payloadMatchesFormat(true, Buffer.from("héllo"))).toBe(true)
    expect(payloadMatchesFormat(true, Buffer.from([0xc3, 0x28]))).toBe(false)
    expect(payloadMatchesFormat(true, Buffer.from([0xed, 0xa0, 0x80]))).toBe(false)
    expect(payloadMatchesFormat(false, Buffer.from([0xff]))).toBe(true)
    expect(payloadMatchesFormat(undefined, Buffer.from([0xff]))).toBe(true)
  })
})
