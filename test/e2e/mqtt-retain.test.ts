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

  it("a SUBSCRIBE matching 5,000 retained messages is answered over several turns: the client's PINGREQ behind it is not kept waiting", async () => {
    const n = 5000
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "many-pub" })
    for (let i = 0; i < n; i++) pub.client.publish(`many/${i}`, `v${i}`, { qos: 0, retain: true })
    await pub.client.publishAsync("many/last", "barrier", { qos: 1, retain: true })
    // A raw client, to see the order in which packets come back.
    const socket = tcpConnect(srv.mqttPort, "127.0.0.1")
    await new Promise((r) => socket.once("connect", r))
    let data = Buffer.alloc(0)
    socket.on("data", (d: Buffer) => {
      data = Buffer.concat([data, d])
    })
    socket.write(frame(0x10, Buffer.concat([str("MQTT"), Buffer.from([4, 0x02, 0, 0]), str("many-sub")])))
    await eventually(() => data.length >= 4, "CONNACK")
    data = data.subarray(4)
    // SUBSCRIBE and PINGREQ in one write: the server reads them in one chunk.
    socket.write(Buffer.concat([frame(0x82, Buffer.concat([u16(1), str("many/#"), Buffer.from([0])])), Buffer.from([0xc0, 0x00])]))
    const packets: Array<{ type: number; retain: boolean; topic: string }> = []
    let at = 0
    const parse = () => {
      while (data.length - at >= 2) {
        let len = 0
        let mul = 1
        let i = at + 1
        for (;;) {
          if (i >= data.length) return
          const b = data[i++]
          len += (b & 0x7f) * mul
          mul *= 128
          if ((b & 0x80) === 0) break
        }
        if (data.length - i < len) return
        const first = data[at]
        const topic = first >> 4 === 3 ? data.subarray(i + 2, i + 2 + data.readUInt16BE(i)).toString() : ""
        packets.push({ type: first >> 4, retain: (first & 1) === 1, topic })
        at = i + len
      }
    }
    await eventually(() => {
      parse()
      return packets.filter((p) => p.type === 3).length >= n + 1
    }, "every retained message")
    const publishes = packets.filter((p) => p.type === 3)
    expect(publishes.every((p) => p.retain)).toBe(true)
    expect(new Set(publishes.map((p) => p.topic)).size).toBe(n + 1)
    const pingresp = packets.findIndex((p) => p.type === 13)
    const lastPublish = packets.map((p) => p.type).lastIndexOf(3)
    expect(packets.some((p) => p.type === 9)).toBe(true)
    expect(pingresp).toBeGreaterThanOrEqual(0)
    expect(pingresp).toBeLessThan(lastPublish)
    socket.destroy()
    await pub.client.endAsync()
  })
})
