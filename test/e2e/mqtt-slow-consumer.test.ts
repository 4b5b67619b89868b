// An MQTT subscriber that stops reading is cut off at max_pending, like a NATS client,
// and the publisher carries on undisturbed.
import * as net from "node:net"
import * as MqttPacket from "mqtt-packet"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { getJson } from "../helpers/monitor.js"
import { connectMqtt, eventually, type MqttServer, startMqttServer } from "../helpers/mqtt.js"

let srv: MqttServer

beforeAll(async () => {
  srv = await startMqttServer({ maxPending: 256 * 1024 })
})
afterAll(async () => {
  await srv.close()
})

describe("MQTT slow consumer", () => {
  it("closes a subscriber that does not read once max_pending is exceeded", async () => {
    const packets: Array<string> = []
    const parser = MqttPacket.parser({ protocolVersion: 4 })
    parser.on("packet", (p) => packets.push(p.cmd))
    const socket = await new Promise<net.Socket>((resolve) => {
      const s = net.connect({ host: "127.0.0.1", port: srv.mqttPort }, () => resolve(s))
      s.on("data", (d) => parser.parse(d))
      s.on("error", () => {})
    })
    const gen = (p: MqttPacket.Packet) => MqttPacket.generate(p, { protocolVersion: 4 })
    socket.write(gen({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, clientId: "slow", keepalive: 0 }))
    socket.write(gen({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "slow/x", qos: 0 }] }))
    await eventually(() => packets.includes("suback"), "SUBACK")
    socket.pause()
    const cid = srv.serving.mqtt!.connectedClient("slow")!.cid

    const pub = await connectMqtt(srv.mqttUrl, { clientId: "fast-pub" })
    const chunk = Buffer.alloc(64 * 1024, 120)
    // Bounded: the kernel's socket buffers absorb a few MB before max_pending counts.
    for (let i = 0; i < 2000 && srv.serving.mqtt!.connectedClient("slow") !== undefined; i++) {
      await pub.client.publishAsync("slow/x", chunk, { qos: 0 })
    }
    expect(srv.serving.mqtt!.connectedClient("slow")).toBeUndefined()
    const closed = (await getJson(srv.base, `/connz?state=closed&cid=${cid}`)).json.connections
    expect(closed[0]).toMatchObject({ type: "mqtt", mqtt_client: "slow", reason: "Slow Consumer (Pending Bytes)" })
    // The publisher is unaffected.
    await pub.client.subscribeAsync("slow/ok", { qos: 1 })
    await pub.client.publishAsync("slow/ok", "fine", { qos: 1 })
    await pub.waitFor((r) => r.topic === "slow/ok")
    await pub.client.endAsync()
    socket.destroy()
  })
})
