// MQTT 5.0 Session Expiry Interval (issue #19 slice 2): a session is kept for its interval
// after its connection closes, across restarts too, and discarded after [MQTT-3.1.2-23],
// [MQTT-4.1.0-2]; a DISCONNECT may change the interval. Real mqtt.js clients
// (`protocolVersion: 5`), the streams store for restarts.
import mqtt from "mqtt"
import { afterEach, describe, expect, it } from "vitest"
import { type JsTestServer, startJsServer } from "../helpers/jetstream.js"
import { collect, eventually, mqttOptions, type MqttServer, startMqttServer, type TestMqttClient } from "../helpers/mqtt.js"

let srv: MqttServer | undefined
let js: JsTestServer | undefined
afterEach(async () => {
  await srv?.close()
  await js?.close()
  srv = undefined
  js = undefined
})

/** A v5 client (collecting from its first packet) and the CONNACK's session present flag. */
const session = (url: string, clientId: string, expiry: number, clean = false): Promise<TestMqttClient & { present: boolean }> =>
  new Promise((resolve, reject) => {
    const client = mqtt.connect(url, { clientId, clean, protocolVersion: 5, reconnectPeriod: 0, properties: { sessionExpiryInterval: expiry } })
    const c = collect(client)
    client.once("connect", (ack) => resolve({ ...c, present: ack.sessionPresent }))
    client.once("error", reject)
  })

describe("MQTT 5.0 Session Expiry Interval", () => {
  it("keeps an away session for its interval, queuing for it, then discards it", async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const bridge = srv.serving.mqtt!
    const a = await session(srv.mqttUrl, "exp-2s", 2)
    await a.client.subscribeAsync("exp/t", { qos: 1 })
    await a.client.endAsync()
    await eventually(() => bridge.awayQueue("exp-2s") !== undefined, "the session kept while away")
    const pub = await session(srv.mqttUrl, "exp-pub", 0, true)
    await pub.client.publishAsync("exp/t", "queued", { qos: 1 })
    expect(bridge.awayQueue("exp-2s")?.messages).toBe(1)
    // its interval runs out: discarded, the message with it
    await eventually(() => bridge.awayQueue("exp-2s") === undefined, "the session to expire")
    const back = await session(srv.mqttUrl, "exp-2s", 2)
    expect(back.present).toBe(false)
    await back.client.endAsync()
    await pub.client.endAsync()
  })

  it("a session resumed in time is not discarded, and counts its interval again from its next close", async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const a = await session(srv.mqttUrl, "exp-resume", 600)
    await a.client.subscribeAsync("exp/r", { qos: 1 })
    await a.client.endAsync()
    const b = await session(srv.mqttUrl, "exp-resume", 600)
    expect(b.present).toBe(true)
    await b.client.endAsync()
    await eventually(() => srv!.serving.mqtt!.awayQueue("exp-resume") !== undefined, "kept again")
  })

  it("a DISCONNECT setting the interval to 0 ends the session with the connection [MQTT-3.14.2-2 allows from non-zero]", async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const a = await session(srv.mqttUrl, "exp-end", 600)
    await a.client.subscribeAsync("exp/e", { qos: 1 })
    await new Promise<void>((resolve) => a.client.end(false, { reasonCode: 0, properties: { sessionExpiryInterval: 0 } }, () => resolve()))
    await eventually(() => srv!.serving.mqtt!.connectedClient("exp-end") === undefined, "closed")
    expect(srv.serving.mqtt!.awayQueue("exp-end")).toBeUndefined()
    const b = await session(srv.mqttUrl, "exp-end", 600)
    expect(b.present).toBe(false)
    await b.client.endAsync()
  })

  it("across a restart: a long interval keeps the session and its queued message, a short one runs out while down", async () => {
    js = await startJsServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const url = () => `mqtt://127.0.0.1:${js!.srv.serving.mqtt!.port}`
    for (const [id, expiry] of [["exp-long", 3600], ["exp-short", 1]] as const) {
      const c = await session(url(), id, expiry)
      await c.client.subscribeAsync(`exp/${id}`, { qos: 1 })
      await c.client.endAsync()
    }
    const pub = await session(url(), "exp-pub2", 0, true)
    await pub.client.publishAsync("exp/exp-long", "kept across", { qos: 1 })
    await pub.client.endAsync()
    await js.restart()
    const bridge = js.srv.serving.mqtt!
    expect(bridge.awayQueue("exp-long")?.messages).toBe(1)
    await eventually(() => bridge.awayQueue("exp-short") === undefined, "the short session to expire after the restart")
    const long = await session(url(), "exp-long", 3600)
    expect(long.present).toBe(true)
    await long.waitFor((m) => m.payload === "kept across")
    await long.client.endAsync()
    // discarded in the store too: not back after another restart
    await js.restart()
    expect(js.srv.serving.mqtt!.awayQueue("exp-short")).toBeUndefined()
    const short = await session(url(), "exp-short", 1)
    expect(short.present).toBe(false)
    await short.client.endAsync()
  })
})
