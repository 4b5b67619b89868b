// The will: published on unexpected loss of the connection, never after DISCONNECT [MQTT-3.1.2-8, -10].
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectMqtt, eventually, type MqttServer, startMqttServer } from "../helpers/mqtt.js"

let srv: MqttServer

beforeAll(async () => {
  srv = await startMqttServer()
})
afterAll(async () => {
  await srv.close()
})

describe("MQTT will", () => {
  it("is published when the socket drops [MQTT-3.1.2-8]", async () => {
    const watcher = await connectMqtt(srv.mqttUrl, { clientId: "will-watch-1" })
    await watcher.client.subscribeAsync("will/drop", { qos: 1 })
    const dying = await connectMqtt(srv.mqttUrl, {
      clientId: "will-drop",
      will: { topic: "will/drop", payload: Buffer.from("gone"), qos: 1, retain: false }
    })
    dying.client.stream.destroy()
    const [w] = await watcher.waitFor((r) => r.topic === "will/drop")
    expect(w).toMatchObject({ payload: "gone", qos: 1 })
    dying.client.end(true)
    await watcher.client.endAsync()
  })

  it("is not published after DISCONNECT [MQTT-3.1.2-10]", async () => {
    const watcher = await connectMqtt(srv.mqttUrl, { clientId: "will-watch-2" })
    await watcher.client.subscribeAsync(["will/clean", "will/marker"], { qos: 1 })
    const leaving = await connectMqtt(srv.mqttUrl, {
      clientId: "will-clean",
      will: { topic: "will/clean", payload: Buffer.from("should not"), qos: 0, retain: false }
    })
    await leaving.client.endAsync()
    await eventually(() => srv.serving.mqtt!.connectedClient("will-clean") === undefined, "the session to end")
    await watcher.client.publishAsync("will/marker", "after", { qos: 1 })
    await watcher.waitFor((r) => r.topic === "will/marker")
    expect(watcher.received.map((r) => r.topic)).toEqual(["will/marker"])
    await watcher.client.endAsync()
  })

  it("is published to NATS subscribers too, and when taken over", async () => {
    const { connect } = await import("nats")
    const nc = await connect({ servers: srv.url })
    const got: Array<string> = []
    nc.subscribe("will.takeover", { callback: (_e, m) => got.push(m.string()) })
    await nc.flush()
    const first = await connectMqtt(srv.mqttUrl, {
      clientId: "will-takeover",
      will: { topic: "will/takeover", payload: Buffer.from("replaced"), qos: 0, retain: false }
    })
    const second = await connectMqtt(srv.mqttUrl, { clientId: "will-takeover" })
    await expect.poll(() => got, { timeout: 10_000 }).toEqual(["replaced"])
    first.client.end(true)
    await second.client.endAsync()
    await nc.close()
  })
})
