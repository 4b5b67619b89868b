// Retained messages, in memory: the last per topic goes to new subscribers with the
// retain flag [MQTT-3.3.1-5, -6, -8]; an empty retained payload deletes it [MQTT-3.3.1-10].
import { connect as tcpConnect } from "node:net"
import * as MqttPacket from "mqtt-packet"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectMqtt, eventually, type MqttServer, startMqttServer } from "../helpers/mqtt.js"
import { frame, str, u16 } from "../helpers/mqtt-wire.js"

let srv: MqttServer

beforeAll(async () => {
  srv = await startMqttServer()
})
afterAll(async () => {
  await srv.close()
})

describe("MQTT retained messages", () => {
  it("delivers the last retained value of each matching topic on subscribe, with retain set", async () => {
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "ret-pub" })
    await pub.client.publishAsync("ret/a", "old", { qos: 1, retain: true })
    await pub.client.publishAsync("ret/a", "new", { qos: 1, retain: true })
    await pub.client.publishAsync("ret/b", "bee", { qos: 0, retain: true })
    await pub.client.publishAsync("ret/c", "not retained", { qos: 1 })
    // Round trip so the QoS 0 publish has been processed before subscribing.
    await pub.client.subscribeAsync("ret/sync", { qos: 1 })
    const sub = await connectMqtt(srv.mqttUrl, { clientId: "ret-sub" })
    await sub.client.subscribeAsync("ret/+", { qos: 1 })
    const got = await sub.waitFor((r) => r.topic.startsWith("ret/"), 2)
    expect(got.map((r) => [r.topic, r.payload, r.retain]).sort()).toEqual([["ret/a", "new", true], ["ret/b", "bee", true]])
    // Forwarded to an existing subscription: retain 0 [MQTT-3.3.1-9].
    await pub.client.publishAsync("ret/a", "live", { qos: 1, retain: true })
    const [live] = await sub.waitFor((r) => r.payload === "live")
    expect(live!.retain).toBe(false)
    await sub.client.endAsync()
    await pub.client.endAsync()
  })

  it("an empty retained payload deletes the retained message [MQTT-3.3.1-10]", async () => {
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "del-pub" })
    await pub.client.publishAsync("del/a", "value", { qos: 1, retain: true })
    await pub.client.publishAsync("del/a", "", { qos: 1, retain: true })
    await pub.client.publishAsync("del/b", "kept", { qos: 1, retain: true })
    const sub = await connectMqtt(srv.mqttUrl, { clientId: "del-sub" })
    await sub.client.subscribeAsync("del/#", { qos: 1 })
    await sub.waitFor((r) => r.topic === "del/b")
    await sub.client.publishAsync("del/end", "end", { qos: 1 })
    await sub.waitFor((r) => r.topic === "del/end")
    expect(sub.received.map((r) => r.topic)).toEqual(["del/b", "del/end"])
    await sub.client.endAsync()
    await pub.client.endAsync()
  })

  it("the SUBACK comes before the retained messages its subscription brings (raw bytes)", async () => {
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "order-pub" })
    await pub.client.publishAsync("order/a", "kept", { qos: 1, retain: true })
    await pub.client.endAsync()
    const sock = tcpConnect(srv.mqttPort, "127.0.0.1")
    const packets: Array<MqttPacket.Packet> = []
    const parser = MqttPacket.parser({ protocolVersion: 4 })
    parser.on("packet", (p) => packets.push(p))
    sock.on("data", (d) => parser.parse(d))
    // CONNECT (clean, keepalive 0) and SUBSCRIBE id 7 to order/# at QoS 1, in one write.
    const connect = frame(0x10, Buffer.concat([str("MQTT"), Buffer.from([4, 0x02]), u16(0), str("order-raw")]))
    const subscribe = frame(0x82, Buffer.concat([u16(7), str("order/#"), Buffer.from([1])]))
    sock.write(Buffer.concat([connect, subscribe]))
    await eventually(() => packets.length >= 3, `three packets (have ${JSON.stringify(packets.map((p) => p.cmd))})`)
    expect(packets.map((p) => p.cmd)).toEqual(["connack", "suback", "publish"])
    expect(packets[1]).toMatchObject({ messageId: 7, granted: [1] })
    expect(packets[2]).toMatchObject({ topic: "order/a", retain: true, qos: 1 })
    sock.destroy()
  })

  it("mqtt.js sees the SUBACK before the retained PUBLISH", async () => {
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "order-pub-2" })
    await pub.client.publishAsync("order2/a", "kept", { qos: 0, retain: true })
    await pub.client.endAsync()
    const sub = await connectMqtt(srv.mqttUrl, { clientId: "order-sub-2" })
    const seen: Array<string> = []
    sub.client.on("packetreceive", (p) => seen.push(p.cmd))
    await sub.client.subscribeAsync("order2/+", { qos: 0 })
    await sub.waitFor((r) => r.topic === "order2/a")
    expect(seen).toEqual(["suback", "publish"])
    await sub.client.endAsync()
  })
})
