// MQTT 5.0 bad input, one case at a time (issue #19): each gets the answer the standard
// prescribes (the reason code, the connection closed where it must be, kept where a
// SUBACK or PUBACK says no), and a bystander client on the same server notices nothing.
// Packets no client library would send are written byte by byte; what the server sends is
// read by mqtt-packet's v5 parser (RawMqtt5).
import * as MqttPacket from "mqtt-packet"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectMqtt, mqttOptions, type MqttServer, startMqttServer, type TestMqttClient } from "../helpers/mqtt.js"
import { RawMqtt5 } from "../helpers/mqtt5-raw.js"
import { str as wireStr, varLength } from "../helpers/mqtt-wire.js"

let srv: MqttServer
let bystander: TestMqttClient

beforeAll(async () => {
  srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
  bystander = await connectMqtt(srv.mqttUrl, { clientId: "bystander", protocolVersion: 5 })
  await bystander.client.subscribeAsync("by/#", { qos: 1 })
})
afterAll(async () => {
  await bystander?.client.endAsync()
  await srv?.close()
})

const raw = async (clientId: string): Promise<RawMqtt5> => {
  const r = await RawMqtt5.open(srv.mqttPort)
  const connack = await r.connect({ clientId })
  expect(connack.reasonCode).toBe(0)
  return r
}

const vbi = (n: number): Array<number> => [...varLength(n)]
const str = (s: string): Array<number> => [...wireStr(s)]

/** A PUBLISH to `topic` with the property block `props` as given (its length included), written by hand. */
const publish = (topic: string, props: Array<number>, payload: Array<number>, qos = 0, messageId = 1): Buffer => {
  const body = [...str(topic), ...(qos > 0 ? [messageId >> 8, messageId & 0xff] : []), ...props, ...payload]
  return Buffer.from([0x30 | (qos << 1), ...vbi(body.length), ...body])
}
const block = (...props: Array<number>): Array<number> => [...vbi(props.length), ...props]

/** The bystander's session and routing are untouched: a message still reaches it. */
const bystanderStillServed = async (tag: string): Promise<void> => {
  const pub = await raw(`by-pub-${tag}`)
  pub.send({ cmd: "publish", topic: `by/${tag}`, payload: Buffer.from(tag), qos: 1, messageId: 9, retain: false, dup: false })
  expect((await pub.next("puback") as { reasonCode?: number }).reasonCode ?? 0).toBe(0)
  await bystander.waitFor((m) => m.topic === `by/${tag}` && m.payload === tag)
  pub.end()
}

/** The case `name` ends the connection with DISCONNECT `code` (and a Reason String), then the close. */
const closesWith = async (name: string, bytes: Buffer, code: number): Promise<void> => {
  const r = await raw(`bad-${name}`)
  r.sendBytes(bytes)
  const d = await r.next("disconnect", `DISCONNECT for ${name}`) as MqttPacket.IDisconnectPacket
  expect([name, d.reasonCode]).toEqual([name, code])
  expect(d.properties?.reasonString).toBeTruthy()
  await r.waitClosed()
  await bystanderStillServed(name)
}

describe("malformed and duplicate properties", () => {
  it("a Property Length past the end of the packet is 0x81 Malformed Packet (2.2.2.1)", async () => {
    await closesWith("prop-length", publish("a/b", [0x09, 0x01], []), 0x81)
  })

  it("a property identifier the standard does not define is 0x81 Malformed Packet (2.2.2.2)", async () => {
    await closesWith("prop-unknown", publish("a/b", block(0x7f, 0x00), [0x78]), 0x81)
  })

  it("a property the packet may not carry (Session Expiry Interval on PUBLISH) is 0x81 Malformed Packet (2.2.2.2)", async () => {
    await closesWith("prop-foreign", publish("a/b", block(0x11, 0, 0, 0, 5), [0x78]), 0x81)
  })

  it("a property value cut short inside its block is 0x81 Malformed Packet", async () => {
    await closesWith("prop-short", publish("a/b", block(0x03, 0x00, 0x05, 0x61), [0x78]), 0x81)
  })

  it("a property given twice that may appear once (Content Type) is 0x82 Protocol Error (2.2.2.2)", async () => {
    await closesWith("prop-twice", publish("a/b", block(0x03, ...str("a"), 0x03, ...str("b")), [0x78]), 0x82)
  })

  it("User Properties may repeat [MQTT-3.3.2-18]: the same name twice is not an error", async () => {
    const seen = new Promise<MqttPacket.IPublishPacket>((resolve) =>
      bystander.client.on("message", (topic, _payload, packet) => {
        if (topic === "by/user-twice") resolve(packet)
      }))
    const r = await raw("prop-user-twice")
    r.sendBytes(publish("by/user-twice", block(0x26, ...str("k"), ...str("1"), 0x26, ...str("k"), ...str("2")), [0x78], 1, 4))
    expect((await r.next("puback") as { reasonCode?: number }).reasonCode ?? 0).toBe(0)
    // mqtt.js reports a repeated User Property name as a list of its values, in order
    expect((await seen).properties?.userProperties).toEqual({ k: ["1", "2"] })
    r.end()
  })
})

describe("Topic Aliases", () => {
  it("[MQTT-3.3.2-8] a Topic Alias of 0 is 0x94 Topic Alias invalid", async () => {
    await closesWith("alias-0", publish("a/b", block(0x23, 0x00, 0x00), [0x78]), 0x94)
  })

  it("[MQTT-3.3.2-9] a Topic Alias above the Topic Alias Maximum the server sent is 0x94 Topic Alias invalid", async () => {
    const r = await RawMqtt5.open(srv.mqttPort)
    const connack = await r.connect({ clientId: "alias-max-read" })
    const max = connack.properties!.topicAliasMaximum!
    r.end()
    await closesWith("alias-over", publish("a/b", block(0x23, (max + 1) >> 8, (max + 1) & 0xff), [0x78]), 0x94)
  })

  it("the highest alias the server allows is taken, and names the topic afterwards", async () => {
    const r = await raw("alias-top")
    r.sendBytes(publish("by/alias", block(0x23, 0x00, 10), [0x31], 1, 1))
    r.sendBytes(publish("", block(0x23, 0x00, 10), [0x32], 1, 2))
    expect([await r.next("puback"), await r.next("puback")].map((a) => (a as { reasonCode?: number }).reasonCode ?? 0)).toEqual([0, 0])
    await bystander.waitFor((m) => m.topic === "by/alias" && m.payload === "2")
    r.end()
  })
})

describe("Subscription Identifiers", () => {
  it("a Subscription Identifier of 0 is 0x82 Protocol Error (3.8.2.1.2)", async () => {
    // SUBSCRIBE, packet id 1, properties: Subscription Identifier 0, filter "a" with QoS 0
    const body = [0x00, 0x01, ...block(0x0b, 0x00), ...str("a"), 0x00]
    await closesWith("subid-0", Buffer.from([0x82, ...vbi(body.length), ...body]), 0x82)
  })

  it("two Subscription Identifiers in one SUBSCRIBE are 0x82 Protocol Error (3.8.2.1.2)", async () => {
    const body = [0x00, 0x01, ...block(0x0b, 0x01, 0x0b, 0x02), ...str("a"), 0x00]
    await closesWith("subid-twice", Buffer.from([0x82, ...vbi(body.length), ...body]), 0x82)
  })
})

describe("Shared Subscriptions", () => {
  it("[MQTT-4.8.2-1] [MQTT-4.8.2-2] an empty ShareName, a wildcard in it, or no filter after it: SUBACK 0x8F for that filter alone, the connection kept", async () => {
    const r = await raw("share-bad")
    r.send({
      cmd: "subscribe",
      messageId: 5,
      subscriptions: [
        { topic: "$share//a", qos: 1 },
        { topic: "$share/g+/a", qos: 1 },
        { topic: "$share/g#/a", qos: 1 },
        { topic: "$share/+/a", qos: 1 },
        { topic: "$share/g", qos: 1 },
        { topic: "$share/g/", qos: 1 },
        { topic: "$share/ok/by/share", qos: 1 }
      ]
    })
    const suback = await r.next("suback") as MqttPacket.ISubackPacket
    expect(suback.granted).toEqual([0x8f, 0x8f, 0x8f, 0x8f, 0x8f, 0x8f, 1])
    // still connected, and the good shared subscription works
    r.send({ cmd: "pingreq" })
    await r.next("pingresp")
    const pub = await raw("share-bad-pub")
    pub.send({ cmd: "publish", topic: "by/share", payload: Buffer.from("s"), qos: 1, messageId: 1, retain: false, dup: false })
    const m = await r.next("publish") as MqttPacket.IPublishPacket
    expect(m.topic).toBe("by/share")
    expect(r.closed).toBe(false)
    pub.end()
    r.end()
    await bystanderStillServed("share")
  })

  it("[MQTT-3.8.3-4] No Local on a Shared Subscription is 0x82 Protocol Error", async () => {
    const body = [0x00, 0x01, 0x00, ...str("$share/g/a"), 0x04]
    await closesWith("share-nl", Buffer.from([0x82, ...vbi(body.length), ...body]), 0x82)
  })
})

describe("Payload Format Indicator", () => {
  const notUtf8 = [0x68, 0x69, 0xc3, 0x28] // "hi" and a broken two-byte sequence

  it("[MQTT-3.3.2-4] 1 with a payload that is not UTF-8: PUBACK / PUBREC 0x99, not routed, the connection kept", async () => {
    const watcher = await raw("pf-watch")
    watcher.send({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "pf/#", qos: 1 }] })
    await watcher.next("suback")
    const r = await raw("pf-bad")
    r.sendBytes(publish("pf/1", block(0x01, 0x01), notUtf8, 1, 7))
    const ack = await r.next("puback") as MqttPacket.IPubackPacket
    expect(ack.reasonCode).toBe(0x99)
    expect(ack.properties?.reasonString).toMatch(/UTF-8/)
    r.sendBytes(publish("pf/2", block(0x01, 0x01), notUtf8, 2, 8))
    const rec = await r.next("pubrec") as MqttPacket.IPubrecPacket
    expect(rec.reasonCode).toBe(0x99)
    // UTF-8 with the indicator, and any bytes without it, go through
    r.sendBytes(publish("pf/3", block(0x01, 0x01), [...Buffer.from("héllo")], 1, 9))
    r.sendBytes(publish("pf/4", block(0x01, 0x00), notUtf8, 1, 10))
    expect([await r.next("puback"), await r.next("puback")].map((a) => (a as { reasonCode?: number }).reasonCode ?? 0)).toEqual([0, 0])
    const got = [await watcher.next("publish"), await watcher.next("publish")] as Array<MqttPacket.IPublishPacket>
    expect(got.map((m) => m.topic)).toEqual(["pf/3", "pf/4"])
    expect(got[0]!.properties?.payloadFormatIndicator).toBe(true)
    expect(Buffer.from(got[1]!.payload as Buffer)).toEqual(Buffer.from(notUtf8))
    expect(r.closed).toBe(false)
    r.end()
    watcher.end()
  })

  it("[MQTT-3.3.2-4] 1 with a payload that is not UTF-8 at QoS 0: DISCONNECT 0x99", async () => {
    await closesWith("pf-qos0", publish("pf/0", block(0x01, 0x01), [0xff, 0xfe]), 0x99)
  })
})
