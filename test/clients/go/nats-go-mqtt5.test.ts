// The MQTT 5.0 bridge rules (issue #19) with nats.go on the NATS side (test/clients/go/main.go,
// case "mqtt5") and mqtt.js v5 on the MQTT side: User Properties as headers (repeats kept),
// request/response both ways, and a Shared Subscription sharing queue group G with a Go
// queue subscriber. What each library reports is asserted.
import { join } from "node:path"
import mqtt from "mqtt"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectMqtt, mqttOptions, type MqttServer, startMqttServer, type TestMqttClient } from "../../helpers/mqtt.js"
import { buildDir, runCase } from "../run.js"
import { buildNatsGo } from "./build.js"

const out = buildDir()
const bin = join(out.dir, "nats-go")
let srv: MqttServer

beforeAll(async () => {
  buildNatsGo(bin)
  srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
}, 120_000)

afterAll(async () => {
  await srv?.close()
  out.remove()
})

describe("nats.go 1.22.1 and MQTT 5.0 clients through the bridge", () => {
  it("User Properties <-> headers, request/response both ways, $share/G with a Go queue subscriber of G", async () => {
    const v5 = (clientId: string) => connectMqtt(srv.mqttUrl, { clientId, protocolVersion: 5 })
    // the device serving m5/dev: it answers on the Response Topic, with the Correlation Data
    const device = await v5("go5-device")
    device.client.on("message", (_topic, payload, packet) => {
      const p = packet.properties
      if (p?.responseTopic === undefined) return
      device.client.publish(p.responseTopic, `pong:${payload.toString()}:${String(p.userProperties?.K)}`, {
        qos: 1,
        properties: { correlationData: p.correlationData, userProperties: { Answered: "mqtt.js" } }
      })
    })
    await device.client.subscribeAsync("m5/dev", { qos: 1 })
    const shared: TestMqttClient = await v5("go5-shared")
    await shared.client.subscribeAsync("$share/G/m5/q", { qos: 1 })
    const requester = await v5("go5-requester")
    await requester.client.subscribeAsync("m5/answers/#", { qos: 1 })
    const answers: Array<mqtt.IPublishPacket> = []
    requester.client.on("message", (_t, _p, packet) => answers.push(packet))

    const result = await runCase([bin], "mqtt5", srv.url, {}, {
      onEvent: (event) => {
        if (event !== "ready") return
        void requester.client.publishAsync("m5/hdr", "with headers", {
          qos: 1,
          properties: { userProperties: { a: "1", b: ["x", "y"] }, contentType: "text/plain" }
        })
        void requester.client.publishAsync("m5/svc", "question", {
          qos: 1,
          properties: { responseTopic: "m5/answers/1", correlationData: Buffer.from("corr-9") }
        })
      }
    })
    // nats.go reports the User Properties as headers, repeats in order, Content-Type well known
    expect(result.user_a).toEqual(["1"])
    expect(result.user_b).toEqual(["x", "y"])
    expect(result.content_type).toBe("text/plain")
    expect(result.payload).toBe("with headers")
    // the MQTT request reached the Go service with a reply subject that carries the Correlation Data
    expect(result.request_reply_subject).toMatch(/^\$MQTT\.rr\.b/)
    // the Go service's respond reached the MQTT requester on its Response Topic, with the Correlation Data
    await requester.waitFor((m) => m.topic === "m5/answers/1")
    expect(Buffer.from(answers[0]!.payload as Buffer).toString()).toBe("re:question")
    expect(Buffer.from(answers[0]!.properties!.correlationData!).toString()).toBe("corr-9")
    expect(answers[0]!.properties?.userProperties).toEqual({ "X-Served-By": "nats.go" })
    // the Go request was answered by the MQTT device: header in, User Property out
    expect(result.device_answer).toBe("pong:ping:v")
    expect(result.device_header).toBe("mqtt.js")
    // 40 messages on m5.q: each to exactly one member of G, and both kinds got some
    await shared.waitFor((m) => m.topic === "m5/q", 40 - (result.queue_mine as number))
    const mqttCount = shared.received.filter((m) => m.topic === "m5/q").length
    expect(mqttCount + (result.queue_mine as number)).toBe(40)
    expect(mqttCount).toBeGreaterThan(0)
    expect(result.queue_mine).toBeGreaterThan(0)
    for (const c of [device, shared, requester]) await c.client.endAsync()
  })
})
