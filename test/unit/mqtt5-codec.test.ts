// The MQTT 5.0 codec against the standard's rules, one rule a test, fed raw bytes no
// client library would send: what is malformed (0x81), what is a protocol error (0x82),
// the other reason codes the decoder ends a connection with, the short forms, and what
// the encoder refuses to write.
import { describe, expect, it } from "vitest"
import { OutBuf, type Pinner } from "../../src/core/outbuf.js"
import {
  connectProtocolLevel,
  type Connect,
  Decoder,
  decodePacket,
  encode,
  encodedSize,
  encodeInto,
  fitToMaximumPacketSize,
  headerViolation,
  lengthViolation,
  NO_PROPERTIES,
  type Packet,
  PacketError,
  reasonAllowed,
  reasonName,
  type Sender
} from "../../src/core/mqtt/v5/index.js"
import { bin, frame, str, u16, varLength } from "../helpers/mqtt-wire.js"
import { unframe } from "../helpers/mqtt5.js"

/** A property block: Property Length, then the properties' bytes. */
const props = (...parts: ReadonlyArray<Buffer | ReadonlyArray<number>>): Buffer => {
  const body = Buffer.concat(parts.map((p) => Buffer.from(p)))
  return Buffer.concat([varLength(body.length), body])
}
const NONE = Buffer.from([0])
const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}
/** One property: identifier and value bytes. */
const prop = (id: number, ...value: ReadonlyArray<Buffer | ReadonlyArray<number>>): Buffer => Buffer.concat([Buffer.from([id]), ...value.map((v) => Buffer.from(v))])

const decode = (bytes: Buffer, from: Sender = "client", maximumPacketSize?: number): Packet => {
  const { first, body } = unframe(bytes)
  return decodePacket(first, body, { from, maximumPacketSize })
}

/** The PacketError decoding `bytes` throws. */
const refusal = (bytes: Buffer, from: Sender = "client", maximumPacketSize?: number): PacketError => {
  try {
    decode(bytes, from, maximumPacketSize)
  } catch (e) {
    expect(e).toBeInstanceOf(PacketError)
    return e as PacketError
  }
  throw new Error(`decoded ${bytes.toString("hex")}`)
}

const connectBody = (flags: number, properties: Buffer, ...payload: ReadonlyArray<Buffer>): Buffer =>
  Buffer.concat([str("MQTT"), Buffer.from([5, flags]), u16(30), properties, ...payload])

const publish = (qos: number, topic: string, properties: Buffer, payload = "hi", id = 7): Buffer =>
  frame(0x30 | (qos << 1), Buffer.concat([str(topic), qos > 0 ? u16(id) : Buffer.alloc(0), properties, Buffer.from(payload)]))

describe("data representation (section 1.5)", () => {
  it("[MQTT-1.5.4-1] a string that is not well-formed UTF-8 (an encoded surrogate) is malformed", () => {
    const e = refusal(frame(0x30, Buffer.concat([bin(Buffer.from([0x61, 0xed, 0xa0, 0x80])), NONE])))
    expect(e.code).toBe(0x81)
    expect(e.ruleId).toBe("MQTT-1.5.4-1")
  })

  it("[MQTT-1.5.4-2] a string containing U+0000 is malformed", () => {
    const e = refusal(frame(0x10, connectBody(0x02, NONE, str("dev\u0000ice"))))
    expect([e.code, e.ruleId]).toEqual([0x81, "MQTT-1.5.4-2"])
  })

  it("[MQTT-1.5.4-3] a BOM is kept, not stripped", () => {
    const p = decode(publish(0, "\ufeffa/b", NONE))
    expect(p).toMatchObject({ cmd: "publish", topic: "\ufeffa/b" })
  })

  it("[MQTT-1.5.5-1] a Variable Byte Integer in more bytes than it needs is malformed", () => {
    const e = refusal(frame(0x30, Buffer.concat([str("a"), Buffer.from([0x80, 0x00])])))
    expect([e.code, e.ruleId]).toEqual([0x81, "MQTT-1.5.5-1"])
    expect(refusal(frame(0x30, Buffer.concat([str("a"), Buffer.from([0x80, 0x80, 0x80, 0x80, 0x01])]))).code).toBe(0x81)
    // the same value in its fewest bytes is fine
    expect(decode(publish(0, "a", props(prop(0x0b, [0x80, 0x01])), "x"), "server")).toMatchObject({ properties: { subscriptionIdentifiers: [128] } })
  })

  it("[MQTT-1.5.7-1] both strings of a User Property follow the string rules", () => {
    const bad = props(prop(0x26, str("k"), bin(Buffer.from([0xff]))))
    expect(refusal(publish(0, "a", bad))).toMatchObject({ code: 0x81, ruleId: "MQTT-1.5.4-1" })
  })
})

describe("fixed header (section 2.1)", () => {
  it("[MQTT-2.1.3-1] reserved flags other than the listed value are malformed", () => {
    expect(refusal(frame(0x41, u16(1)))).toMatchObject({ code: 0x81, ruleId: "MQTT-2.1.3-1" })
    expect(refusal(frame(0xc1))).toMatchObject({ code: 0x81 })
  })

  it("[MQTT-3.6.1-1] [MQTT-3.8.1-1] [MQTT-3.10.1-1] PUBREL, SUBSCRIBE and UNSUBSCRIBE need flags 0010", () => {
    expect(refusal(frame(0x60, u16(1)))).toMatchObject({ code: 0x81, ruleId: "MQTT-3.6.1-1" })
    expect(refusal(frame(0x80, Buffer.concat([u16(1), NONE, str("a"), Buffer.from([0])])))).toMatchObject({ ruleId: "MQTT-3.8.1-1" })
    expect(refusal(frame(0xa0, Buffer.concat([u16(1), NONE, str("a")])))).toMatchObject({ ruleId: "MQTT-3.10.1-1" })
  })

  it("[MQTT-3.14.1-1] [MQTT-3.15.1-1] DISCONNECT and AUTH need flags 0000", () => {
    expect(refusal(frame(0xe2))).toMatchObject({ code: 0x81, ruleId: "MQTT-3.14.1-1" })
    expect(refusal(frame(0xf1))).toMatchObject({ code: 0x81, ruleId: "MQTT-3.15.1-1" })
  })

  it("[MQTT-3.3.1-4] QoS 3 and [MQTT-3.3.1-2] DUP on QoS 0 are malformed", () => {
    expect(headerViolation(0x36)).toMatchObject({ code: 0x81, ruleId: "MQTT-3.3.1-4" })
    expect(headerViolation(0x38)).toMatchObject({ code: 0x81, ruleId: "MQTT-3.3.1-2" })
    expect(headerViolation(0x3d)).toBeUndefined()
  })

  it("a packet its sender may not send is a protocol error; type 0 is malformed", () => {
    expect(headerViolation(0x20, "client")).toMatchObject({ code: 0x82 })
    expect(headerViolation(0x90, "client")).toMatchObject({ code: 0x82 })
    expect(headerViolation(0x10, "server")).toMatchObject({ code: 0x82 })
    expect(headerViolation(0xc0, "server")).toMatchObject({ code: 0x82 })
    expect(headerViolation(0x00)).toMatchObject({ code: 0x81 })
    expect(headerViolation(0xf0, "client")).toBeUndefined() // AUTH is a v5 packet
  })

  it("[MQTT-3.2.2-15] a packet larger than the receiver's Maximum Packet Size is 0x95, before its body is read", () => {
    const p = publish(0, "a/b", NONE, "x".repeat(100))
    expect(refusal(p, "client", p.length - 1)).toMatchObject({ code: 0x95, ruleId: "MQTT-3.2.2-15" })
    expect(decode(p, "client", p.length)).toMatchObject({ cmd: "publish" })
    expect(lengthViolation(0x30, 200, 203)).toBeUndefined() // 1 + 2 + 200 = 203
    expect(lengthViolation(0x30, 200, 202)).toMatchObject({ code: 0x95 })
  })

  it("lengths a type fixes are checked from the remaining length alone", () => {
    expect(lengthViolation(0xc0, 1)).toMatchObject({ code: 0x81 })
    expect(lengthViolation(0x40, 1)).toMatchObject({ code: 0x81 })
    expect(lengthViolation(0x40, 2)).toBeUndefined()
    expect(lengthViolation(0xe0, 0)).toBeUndefined()
  })
})

describe("packet identifiers and properties (section 2.2)", () => {
  it("[MQTT-2.2.1-3] a client's packet identifier of 0 is a protocol error", () => {
    expect(refusal(publish(1, "a", NONE, "x", 0))).toMatchObject({ code: 0x82, ruleId: "MQTT-2.2.1-3" })
    expect(refusal(frame(0x82, Buffer.concat([u16(0), NONE, str("a"), Buffer.from([1])])))).toMatchObject({ code: 0x82 })
  })

  it("[MQTT-2.2.1-4] a server's packet identifier of 0 is a protocol error", () => {
    expect(refusal(publish(2, "a", NONE, "x", 0), "server")).toMatchObject({ code: 0x82, ruleId: "MQTT-2.2.1-4" })
  })

  it("[MQTT-2.2.2-1] the Property Length is there even when there are no properties", () => {
    expect(refusal(frame(0x10, Buffer.concat([str("MQTT"), Buffer.from([5, 2]), u16(30)])))).toMatchObject({ code: 0x81 })
    expect(refusal(frame(0x30, str("a")))).toMatchObject({ code: 0x81 })
  })

  it("a property the packet may not carry is malformed (2.2.2.2)", () => {
    // Topic Alias in a CONNECT, Session Expiry Interval in a PUBLISH, Will Delay outside the will, Reason String in a SUBSCRIBE
    expect(refusal(frame(0x10, connectBody(0x02, props(prop(0x23, u16(1))), str("c"))))).toMatchObject({ code: 0x81 })
    expect(refusal(publish(0, "a", props(prop(0x11, u32(10)))))).toMatchObject({ code: 0x81 })
    expect(refusal(frame(0x10, connectBody(0x02, props(prop(0x18, u32(10))), str("c"))))).toMatchObject({ code: 0x81 })
    expect(refusal(frame(0x82, Buffer.concat([u16(1), props(prop(0x1f, str("why"))), str("a"), Buffer.from([0])])))).toMatchObject({ code: 0x81 })
    expect(refusal(frame(0xa2, Buffer.concat([u16(1), props(prop(0x0b, [1])), str("a")])))).toMatchObject({ code: 0x81 })
  })

  it("an unknown property identifier is malformed", () => {
    expect(refusal(publish(0, "a", props(prop(0x04, [0]))))).toMatchObject({ code: 0x81 })
    expect(refusal(publish(0, "a", props(prop(0x81, [0]))))).toMatchObject({ code: 0x81 })
  })

  it("a property repeated where only one is allowed is a protocol error", () => {
    expect(refusal(publish(0, "a", props(prop(0x03, str("a")), prop(0x03, str("b")))))).toMatchObject({ code: 0x82 })
    expect(refusal(frame(0x10, connectBody(0x02, props(prop(0x21, u16(5)), prop(0x21, u16(5))), str("c"))))).toMatchObject({ code: 0x82 })
  })

  it("[MQTT-3.3.2-18] User Properties keep their order, repeats included", () => {
    const p = decode(publish(0, "a", props(prop(0x26, str("k"), str("1")), prop(0x26, str("j"), str("2")), prop(0x26, str("k"), str("3")))))
    expect(p).toMatchObject({ properties: { userProperties: [["k", "1"], ["j", "2"], ["k", "3"]] } })
  })

  it("a value past the Property Length, or a Property Length past the packet, is malformed", () => {
    // Property Length 3 around a Content Type of 5 bytes
    const inner = Buffer.concat([Buffer.from([3, 0x03]), str("abcde")])
    expect(refusal(frame(0x30, Buffer.concat([str("a"), inner])))).toMatchObject({ code: 0x81 })
    expect(refusal(frame(0x30, Buffer.concat([str("a"), Buffer.from([9, 0x01, 1])])))).toMatchObject({ code: 0x81 })
  })

  it("values the standard forbids are protocol errors", () => {
    const connectWith = (...ps: ReadonlyArray<Buffer>): Buffer => frame(0x10, connectBody(0x02, props(...ps), str("c")))
    expect(refusal(connectWith(prop(0x21, u16(0))))).toMatchObject({ code: 0x82, reason: "Receive Maximum of 0" })
    expect(refusal(connectWith(prop(0x27, u32(0))))).toMatchObject({ code: 0x82, reason: "Maximum Packet Size of 0" })
    expect(refusal(connectWith(prop(0x17, [2])))).toMatchObject({ code: 0x82 })
    expect(refusal(connectWith(prop(0x19, [2])))).toMatchObject({ code: 0x82 })
    expect(refusal(connectWith(prop(0x16, bin(Buffer.from("x")))))).toMatchObject({ code: 0x82, reason: "Authentication Data without an Authentication Method" })
    expect(refusal(publish(0, "a", props(prop(0x01, [2]))))).toMatchObject({ code: 0x82 })
    expect(refusal(frame(0x20, Buffer.concat([Buffer.from([0, 0]), props(prop(0x24, [2]))])), "server")).toMatchObject({ code: 0x82 })
  })

  it("[MQTT-3.3.2-8] a Topic Alias of 0 is 0x94 Topic Alias invalid", () => {
    expect(refusal(publish(0, "a", props(prop(0x23, u16(0)))))).toMatchObject({ code: 0x94, ruleId: "MQTT-3.3.2-8" })
  })

  it("[MQTT-3.3.2-14] a Response Topic with a wildcard is a protocol error", () => {
    expect(refusal(publish(0, "a", props(prop(0x08, str("reply/#")))))).toMatchObject({ code: 0x82, ruleId: "MQTT-3.3.2-14" })
    expect(decode(publish(0, "a", props(prop(0x08, str("reply/1")))))).toMatchObject({ properties: { responseTopic: "reply/1" } })
  })

  it("[MQTT-3.3.4-6] a client's PUBLISH with a Subscription Identifier is a protocol error; a server's may carry several", () => {
    const ids = props(prop(0x0b, [1]), prop(0x0b, [2]))
    expect(refusal(publish(0, "a", ids))).toMatchObject({ code: 0x82, ruleId: "MQTT-3.3.4-6" })
    expect(decode(publish(0, "a", ids), "server")).toMatchObject({ properties: { subscriptionIdentifiers: [1, 2] } })
  })

  it("a Subscription Identifier of 0, or two in one SUBSCRIBE, is a protocol error", () => {
    const sub = (p: Buffer): Buffer => frame(0x82, Buffer.concat([u16(1), p, str("a"), Buffer.from([0])]))
    expect(refusal(sub(props(prop(0x0b, [0]))))).toMatchObject({ code: 0x82 })
    expect(refusal(sub(props(prop(0x0b, [1]), prop(0x0b, [2]))))).toMatchObject({ code: 0x82 })
    expect(decode(sub(props(prop(0x0b, [0xff, 0xff, 0xff, 0x7f]))))).toMatchObject({ properties: { subscriptionIdentifiers: [268_435_455] } })
  })

  it("[MQTT-3.14.2-2] a server's DISCONNECT with a Session Expiry Interval is a protocol error; a client's may carry one", () => {
    const d = frame(0xe0, Buffer.concat([Buffer.from([0]), props(prop(0x11, u32(60)))]))
    expect(refusal(d, "server")).toMatchObject({ code: 0x82, ruleId: "MQTT-3.14.2-2" })
    expect(decode(d, "client")).toEqual({ cmd: "disconnect", reasonCode: 0, properties: { sessionExpiryInterval: 60 } })
  })
})

describe("CONNECT (section 3.1)", () => {
  const will = Buffer.concat([props(prop(0x18, u32(30)), prop(0x01, [1]), prop(0x02, u32(600)), prop(0x26, str("a"), str("b"))), str("will/t"), bin(Buffer.from("bye"))])

  it("[MQTT-3.1.3-1] decodes every field, in order: client id, will properties, will topic, will payload, user name, password", () => {
    const body = connectBody(0xee, props(prop(0x11, u32(3600)), prop(0x21, u16(20)), prop(0x27, u32(1 << 20)), prop(0x22, u16(10)), prop(0x17, [0]), prop(0x19, [1])),
      str("dev-1"), will, str("user"), bin(Buffer.from("pw")))
    const p = decode(frame(0x10, body)) as Connect
    expect(p).toEqual({
      cmd: "connect", protocolId: "MQTT", protocolVersion: 5, clean: true, keepalive: 30, clientId: "dev-1",
      properties: { sessionExpiryInterval: 3600, receiveMaximum: 20, maximumPacketSize: 1 << 20, topicAliasMaximum: 10, requestProblemInformation: false, requestResponseInformation: true },
      will: { topic: "will/t", payload: Buffer.from("bye"), qos: 1, retain: true, properties: { willDelayInterval: 30, payloadFormatIndicator: true, messageExpiryInterval: 600, userProperties: [["a", "b"]] } },
      username: "user", password: Buffer.from("pw")
    })
  })

  it("a password without a user name is allowed in v5 (3.1.2.9)", () => {
    expect(decode(frame(0x10, connectBody(0x42, NONE, str("c"), bin(Buffer.from("pw")))))).toMatchObject({ username: undefined, password: Buffer.from("pw") })
  })

  it("[MQTT-3.1.2-3] the reserved Connect Flag is malformed", () => {
    expect(refusal(frame(0x10, connectBody(0x03, NONE, str("c"))))).toMatchObject({ code: 0x81, ruleId: "MQTT-3.1.2-3" })
  })

  it("[MQTT-3.1.2-11] [MQTT-3.1.2-13] Will QoS or Will Retain without the Will Flag is malformed", () => {
    expect(refusal(frame(0x10, connectBody(0x0a, NONE, str("c"))))).toMatchObject({ code: 0x81, ruleId: "MQTT-3.1.2-11" })
    expect(refusal(frame(0x10, connectBody(0x22, NONE, str("c"))))).toMatchObject({ code: 0x81, ruleId: "MQTT-3.1.2-13" })
  })

  it("[MQTT-3.1.2-12] Will QoS 3 is malformed", () => {
    expect(refusal(frame(0x10, connectBody(0x1e, NONE, str("c"), will)))).toMatchObject({ code: 0x81, ruleId: "MQTT-3.1.2-12" })
  })

  it("[MQTT-3.1.2-2] another protocol version or name is 0x84 Unsupported Protocol Version", () => {
    const v4 = Buffer.concat([str("MQTT"), Buffer.from([4, 2]), u16(30), str("c")])
    expect(refusal(frame(0x10, v4))).toMatchObject({ code: 0x84 })
    expect(refusal(frame(0x10, Buffer.concat([str("MQIsdp"), Buffer.from([5, 2]), u16(30), NONE, str("c")])))).toMatchObject({ code: 0x84 })
    expect(connectProtocolLevel(v4)).toBe(4)
    expect(connectProtocolLevel(connectBody(2, NONE, str("c")))).toBe(5)
    expect(connectProtocolLevel(Buffer.from([0, 4, 0x4d]))).toBeUndefined()
  })

  it("bytes after the last field are malformed", () => {
    expect(refusal(frame(0x10, connectBody(0x02, NONE, str("c"), Buffer.from([0]))))).toMatchObject({ code: 0x81 })
  })
})

describe("CONNACK (section 3.2)", () => {
  it("[MQTT-3.2.2-1] reserved Connect Acknowledge Flags are malformed", () => {
    expect(refusal(frame(0x20, Buffer.from([2, 0, 0])), "server")).toMatchObject({ code: 0x81, ruleId: "MQTT-3.2.2-1" })
  })

  it("[MQTT-3.2.2-6] Session Present with a failure code is a protocol error", () => {
    expect(refusal(frame(0x20, Buffer.from([1, 0x87, 0])), "server")).toMatchObject({ code: 0x82, ruleId: "MQTT-3.2.2-6" })
  })

  it("a reason code CONNACK does not allow is a protocol error", () => {
    expect(refusal(frame(0x20, Buffer.from([0, 0x04, 0])), "server")).toMatchObject({ code: 0x82 })
  })

  it("decodes the server's properties", () => {
    const body = Buffer.concat([Buffer.from([0, 0]), props(prop(0x12, str("auto-1")), prop(0x13, u16(60)), prop(0x24, [1]), prop(0x25, [0]), prop(0x28, [1]), prop(0x29, [0]), prop(0x2a, [1]))])
    expect(decode(frame(0x20, body), "server")).toEqual({
      cmd: "connack", sessionPresent: false, reasonCode: 0,
      properties: { assignedClientIdentifier: "auto-1", serverKeepAlive: 60, maximumQoS: 1, retainAvailable: false, wildcardSubscriptionAvailable: true, subscriptionIdentifiersAvailable: false, sharedSubscriptionAvailable: true }
    })
  })
})

describe("PUBLISH (section 3.3)", () => {
  it("an empty Topic Name needs a Topic Alias (3.3.2.3.4)", () => {
    expect(refusal(publish(0, "", NONE))).toMatchObject({ code: 0x82 })
    expect(decode(publish(0, "", props(prop(0x23, u16(3)))))).toMatchObject({ topic: "", properties: { topicAlias: 3 } })
  })

  it("[MQTT-3.3.2-1] decodes topic, packet id, properties and a payload that is a view of the packet", () => {
    const body = Buffer.concat([str("a/b"), u16(9), props(prop(0x02, u32(60)), prop(0x03, str("text/plain")), prop(0x09, bin(Buffer.from([1, 2])))), Buffer.from("payload")])
    const p = decodePacket(0x35, body)
    expect(p).toEqual({
      cmd: "publish", topic: "a/b", qos: 2, retain: true, dup: false, messageId: 9, payload: Buffer.from("payload"),
      properties: { messageExpiryInterval: 60, contentType: "text/plain", correlationData: Buffer.from([1, 2]) }
    })
    expect((p as { payload: Buffer }).payload.buffer).toBe(body.buffer)
  })

  it("a decoder returns the same topic string for the same topic bytes", () => {
    const d = new Decoder()
    const { first, body } = unframe(publish(0, "sensors/t1", NONE))
    const a = d.decode(first, body) as { topic: string }
    const b = d.decode(first, Buffer.from(body)) as { topic: string }
    expect(b.topic).toBe(a.topic)
    expect(a.topic).toBe("sensors/t1")
  })

  it("topic names and filters deeper than max_topic_levels are 0x90 and 0x8F", () => {
    const deep = Array.from({ length: 6 }, () => "a").join("/")
    const d = new Decoder({ maxTopicLevels: 5 })
    const { first, body } = unframe(publish(0, deep, NONE))
    expect(() => d.decode(first, body)).toThrow(expect.objectContaining({ code: 0x90 }))
    const sub = unframe(frame(0x82, Buffer.concat([u16(1), NONE, str(deep), Buffer.from([0])])))
    expect(() => d.decode(sub.first, sub.body)).toThrow(expect.objectContaining({ code: 0x8f }))
  })
})

describe("acknowledgements (sections 3.4-3.7)", () => {
  it("[MQTT-3.4.2-1] Remaining Length 2 is Success without properties; 3 a reason code without them", () => {
    expect(decode(frame(0x40, u16(5)), "server")).toEqual({ cmd: "puback", messageId: 5, reasonCode: 0, properties: NO_PROPERTIES })
    expect(decode(frame(0x50, Buffer.concat([u16(5), Buffer.from([0x10])])))).toEqual({ cmd: "pubrec", messageId: 5, reasonCode: 0x10, properties: {} })
    expect(decode(frame(0x40, Buffer.concat([u16(5), Buffer.from([0x97]), props(prop(0x1f, str("full")))])))).toEqual({
      cmd: "puback", messageId: 5, reasonCode: 0x97, properties: { reasonString: "full" }
    })
  })

  it("[MQTT-3.4.2-1] [MQTT-3.5.2-1] [MQTT-3.6.2-1] [MQTT-3.7.2-1] a reason code the packet does not allow is a protocol error", () => {
    expect(refusal(frame(0x40, Buffer.concat([u16(5), Buffer.from([0x92])])))).toMatchObject({ code: 0x82 })
    expect(refusal(frame(0x50, Buffer.concat([u16(5), Buffer.from([0x01])])))).toMatchObject({ code: 0x82 })
    expect(refusal(frame(0x62, Buffer.concat([u16(5), Buffer.from([0x10])])))).toMatchObject({ code: 0x82 })
    expect(decode(frame(0x70, Buffer.concat([u16(5), Buffer.from([0x92])])))).toMatchObject({ cmd: "pubcomp", reasonCode: 0x92 })
  })

  it("[MQTT-3.4.2-1] encodes Success without properties in its short form, and a failure code with a zero Property Length", () => {
    expect(encode({ cmd: "puback", messageId: 7, reasonCode: 0, properties: {} }).toString("hex")).toBe("40020007")
    expect(encode({ cmd: "puback", messageId: 7, reasonCode: 0x10, properties: {} }).toString("hex")).toBe("4004000710" + "00")
    expect(encode({ cmd: "pubrel", messageId: 7, reasonCode: 0, properties: {} }).toString("hex")).toBe("62020007")
  })
})

describe("SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK (sections 3.8-3.11)", () => {
  const sub = (...entries: ReadonlyArray<[string, number]>): Buffer =>
    frame(0x82, Buffer.concat([u16(3), NONE, ...entries.flatMap(([t, o]) => [str(t), Buffer.from([o])])]))

  it("[MQTT-3.8.3-1] decodes each filter's Subscription Options: QoS, No Local, Retain As Published, Retain Handling", () => {
    expect(decode(sub(["a/+", 0x01], ["b/#", 0x2e], ["c", 0x10]))).toEqual({
      cmd: "subscribe", messageId: 3, properties: {},
      subscriptions: [
        { topic: "a/+", qos: 1, nl: false, rap: false, rh: 0 },
        { topic: "b/#", qos: 2, nl: true, rap: true, rh: 2 },
        { topic: "c", qos: 0, nl: false, rap: false, rh: 1 }
      ]
    })
  })

  it("[MQTT-3.8.3-5] reserved Subscription Options bits are malformed", () => {
    expect(refusal(sub(["a", 0x40]))).toMatchObject({ code: 0x81, ruleId: "MQTT-3.8.3-5" })
    expect(refusal(sub(["a", 0x80]))).toMatchObject({ code: 0x81 })
  })

  it("QoS 3 and Retain Handling 3 are protocol errors (3.8.3.1)", () => {
    expect(refusal(sub(["a", 0x03]))).toMatchObject({ code: 0x82 })
    expect(refusal(sub(["a", 0x30]))).toMatchObject({ code: 0x82 })
  })

  it("[MQTT-3.8.3-4] No Local on a Shared Subscription is a protocol error", () => {
    expect(refusal(sub(["$share/g/a", 0x04]))).toMatchObject({ code: 0x82, ruleId: "MQTT-3.8.3-4" })
    expect(decode(sub(["$share/g/a", 0x00]))).toMatchObject({ subscriptions: [{ topic: "$share/g/a" }] })
  })

  it("[MQTT-3.8.3-2] [MQTT-3.10.3-2] a SUBSCRIBE or UNSUBSCRIBE without a filter is a protocol error", () => {
    expect(refusal(frame(0x82, Buffer.concat([u16(1), NONE])))).toMatchObject({ code: 0x82, ruleId: "MQTT-3.8.3-2" })
    expect(refusal(frame(0xa2, Buffer.concat([u16(1), NONE])))).toMatchObject({ code: 0x82, ruleId: "MQTT-3.10.3-2" })
  })

  it("[MQTT-3.9.3-2] [MQTT-3.11.3-2] SUBACK and UNSUBACK carry only their own reason codes, at least one", () => {
    expect(refusal(frame(0x90, Buffer.concat([u16(1), NONE, Buffer.from([0x11])])), "server")).toMatchObject({ code: 0x82 })
    expect(refusal(frame(0xb0, Buffer.concat([u16(1), NONE, Buffer.from([0x01])])), "server")).toMatchObject({ code: 0x82 })
    expect(refusal(frame(0x90, Buffer.concat([u16(1), NONE])), "server")).toMatchObject({ code: 0x82 })
    expect(decode(frame(0x90, Buffer.concat([u16(1), NONE, Buffer.from([0x02, 0x9e, 0xa2])])), "server")).toMatchObject({ reasonCodes: [2, 0x9e, 0xa2] })
  })
})

describe("DISCONNECT and AUTH (sections 3.14, 3.15)", () => {
  it("[MQTT-3.14.2-1] Remaining Length 0 is a normal disconnection; 1 a reason code alone", () => {
    expect(decode(frame(0xe0))).toEqual({ cmd: "disconnect", reasonCode: 0, properties: {} })
    expect(decode(frame(0xe0, Buffer.from([0x04])))).toEqual({ cmd: "disconnect", reasonCode: 4, properties: {} })
  })

  it("[MQTT-3.14.2-1] each side sends only its own DISCONNECT reason codes", () => {
    expect(refusal(frame(0xe0, Buffer.from([0x8e])), "client")).toMatchObject({ code: 0x82 })
    expect(decode(frame(0xe0, Buffer.from([0x8e])), "server")).toMatchObject({ reasonCode: 0x8e })
    expect(refusal(frame(0xe0, Buffer.from([0x04])), "server")).toMatchObject({ code: 0x82 })
    expect(refusal(frame(0xe0, Buffer.from([0x05])))).toMatchObject({ code: 0x82 })
  })

  it("[MQTT-3.15.2-1] AUTH: Remaining Length 0 is Success; otherwise reason code and properties, from the AUTH codes", () => {
    expect(decode(frame(0xf0))).toEqual({ cmd: "auth", reasonCode: 0, properties: {} })
    expect(decode(frame(0xf0, Buffer.concat([Buffer.from([0x18]), props(prop(0x15, str("SCRAM-SHA-1")), prop(0x16, bin(Buffer.from("x"))))])))).toEqual({
      cmd: "auth", reasonCode: 0x18, properties: { authenticationMethod: "SCRAM-SHA-1", authenticationData: Buffer.from("x") }
    })
    expect(refusal(frame(0xf0, Buffer.from([0x18])))).toMatchObject({ code: 0x81 })
    expect(refusal(frame(0xf0, Buffer.from([0x01, 0])))).toMatchObject({ code: 0x82 })
  })

  it("writes DISCONNECT and AUTH with reason code and Property Length, as mqtt-packet does", () => {
    expect(encode({ cmd: "disconnect", reasonCode: 0x8e, properties: {} }).toString("hex")).toBe("e0028e00")
    expect(encode({ cmd: "auth", reasonCode: 0, properties: {} }).toString("hex")).toBe("f0020000")
  })
})

describe("the encoder refuses what the decoder would refuse", () => {
  const refusedEncode = (p: Packet, from?: Sender): PacketError => {
    const out = new OutBuf(64)
    try {
      encodeInto(out, p, from)
    } catch (e) {
      expect(e).toBeInstanceOf(PacketError)
      expect(out.length).toBe(0) // nothing written
      return e as PacketError
    }
    throw new Error("encoded")
  }

  it("a property the packet may not carry, or a value out of its type's range", () => {
    expect(refusedEncode({ cmd: "connack", sessionPresent: false, reasonCode: 0, properties: { topicAlias: 1 } }).code).toBe(0x81)
    expect(refusedEncode({ cmd: "connack", sessionPresent: false, reasonCode: 0, properties: { serverKeepAlive: 70_000 } }).code).toBe(0x81)
  })

  it("a reason code the packet may not carry, [MQTT-3.14.2-2] a server's Session Expiry on DISCONNECT, [MQTT-3.3.2-8] Topic Alias 0", () => {
    expect(refusedEncode({ cmd: "puback", messageId: 1, reasonCode: 0x92, properties: {} }).code).toBe(0x82)
    expect(refusedEncode({ cmd: "disconnect", reasonCode: 0, properties: { sessionExpiryInterval: 5 } }, "server").ruleId).toBe("MQTT-3.14.2-2")
    expect(refusedEncode({ cmd: "publish", topic: "a", payload: Buffer.alloc(0), qos: 0, retain: false, dup: false, properties: { topicAlias: 0 } }).code).toBe(0x94)
  })

  it("[MQTT-3.3.4-6] a client's PUBLISH with a Subscription Identifier", () => {
    const p: Packet = { cmd: "publish", topic: "a", payload: Buffer.alloc(0), qos: 0, retain: false, dup: false, properties: { subscriptionIdentifiers: [1] } }
    expect(refusedEncode(p, "client").ruleId).toBe("MQTT-3.3.4-6")
    expect(encode(p, "server").length).toBeGreaterThan(0)
  })

  it("[MQTT-1.5.4-1] [MQTT-1.5.4-2] strings that are not well-formed, hold U+0000, or pass 65,535 bytes", () => {
    const withReason = (reasonString: string): Packet => ({ cmd: "puback", messageId: 1, reasonCode: 0x80, properties: { reasonString } })
    expect(refusedEncode(withReason("a\ud800b"))).toMatchObject({ code: 0x81, ruleId: "MQTT-1.5.4-1" })
    expect(refusedEncode(withReason("a\u0000b"))).toMatchObject({ code: 0x81, ruleId: "MQTT-1.5.4-2" })
    expect(refusedEncode(withReason("x".repeat(65_536))).code).toBe(0x81)
  })

  it("a PUBLISH payload from 4 KiB is queued by reference and pinned by its owner", () => {
    const payload = Buffer.alloc(5000, 1)
    const pinned: Array<Uint8Array> = []
    const pin: Pinner = { retain: (b) => pinned.push(b), release: () => {} }
    const out = new OutBuf(64)
    const n = encodeInto(out, { cmd: "publish", topic: "big", payload, qos: 1, retain: false, dup: false, messageId: 1, properties: {} }, "server", pin)
    const parts = out.takeAll()!
    expect(parts.some((b) => b.buffer === payload.buffer)).toBe(true)
    expect(pinned).toEqual([payload])
    expect(n).toBe(Buffer.concat(parts).length)
    // without its owner's pin a QoS 1 payload is copied: its memory may be reused once acknowledged
    const copy = new OutBuf(64)
    encodeInto(copy, { cmd: "publish", topic: "big", payload, qos: 1, retain: false, dup: false, messageId: 1, properties: {} }, "server")
    expect(copy.takeAll()!.some((b) => b.buffer === payload.buffer)).toBe(false)
  })
})

describe("Maximum Packet Size on what the server sends", () => {
  const ack: Packet = { cmd: "puback", messageId: 1, reasonCode: 0x97, properties: { reasonString: "quota of account A exceeded", userProperties: [["limit", "1000"]] } }

  it("[MQTT-3.4.2-2] [MQTT-3.4.2-3] drops the Reason String first, then the User Properties", () => {
    const full = encodedSize(ack)
    expect(fitToMaximumPacketSize(ack, full)).toBe(ack)
    const noReason = fitToMaximumPacketSize(ack, full - 1)
    expect(noReason).toEqual({ ...ack, properties: { userProperties: [["limit", "1000"]] } })
    expect(fitToMaximumPacketSize(ack, encodedSize(noReason!) - 1)).toEqual({ ...ack, properties: {} })
  })

  it("[MQTT-3.2.2-19] [MQTT-3.2.2-20] a CONNACK too large even without them does not fit", () => {
    const connack: Packet = { cmd: "connack", sessionPresent: false, reasonCode: 0, properties: { assignedClientIdentifier: "x".repeat(40), reasonString: "r" } }
    expect(fitToMaximumPacketSize(connack, 20)).toBeUndefined()
  })
})

describe("reason codes (section 2.4)", () => {
  it("names each code as the standard does", () => {
    expect(reasonName(0x00)).toBe("Success")
    expect(reasonName(0x00, "disconnect")).toBe("Normal disconnection")
    expect(reasonName(0x00, "suback")).toBe("Granted QoS 0")
    expect(reasonName(0x8e)).toBe("Session taken over")
    expect(reasonName(0xa2)).toBe("Wildcard Subscriptions not supported")
    expect(reasonName(0x03)).toBe("reason code 0x03")
  })

  it("knows which packet and which sender may carry a code", () => {
    expect(reasonAllowed("puback", 0x10, "server")).toBe(true)
    expect(reasonAllowed("pubrel", 0x10, "server")).toBe(false)
    expect(reasonAllowed("disconnect", 0x93, "client")).toBe(true)
    expect(reasonAllowed("disconnect", 0x8d, "client")).toBe(false)
    expect(reasonAllowed("disconnect", 0x8d, "server")).toBe(true)
    expect(reasonAllowed("connack", 0x8c, "server")).toBe(true)
    expect(reasonAllowed("disconnect", 0x8c, "server")).toBe(false)
  })
})
