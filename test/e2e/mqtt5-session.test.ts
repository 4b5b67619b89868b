// MQTT 5.0 Session Expiry Interval (issue #19 slice 2): a session is kept for its interval
// after its connection closes, across restarts too, and discarded after [MQTT-3.1.2-23],
// [MQTT-4.1.0-2]; a DISCONNECT may change the interval. Real mqtt.js clients
// (`protocolVersion: 5`), the streams store for restarts.
import mqtt from "mqtt"
import { afterEach, describe, expect, it } from "vitest"
import { type JsTestServer, startJsServer } from "../helpers/jetstream.js"
import { collect, eventually, mqttOptions, type MqttServer, startMqttServer, type TestMqttClient } from "../helpers/mqtt.js"
import { RawMqtt5 } from "../helpers/mqtt5-raw.js"

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

describe("MQTT 5.0 Will Delay Interval", () => {
  const will = (topic: string, delay: number) => ({ topic, payload: Buffer.from("gone"), qos: 1 as const, retain: false, properties: { willDelayInterval: delay } })

  it("a will waits for its delay; a session that ends with its connection sends it at once", async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const watcher = await session(srv.mqttUrl, "wd-watch", 0, true)
    await watcher.client.subscribeAsync("wd/#", { qos: 1 })
    const r1 = await RawMqtt5.open(srv.mqttPort)
    await r1.connect({ clientId: "wd-delayed", clean: false, properties: { sessionExpiryInterval: 60 }, will: will("wd/delayed", 2) })
    const r2 = await RawMqtt5.open(srv.mqttPort)
    await r2.connect({ clientId: "wd-ends", clean: true, will: will("wd/ends", 2) })
    r1.end()
    r2.end()
    await watcher.waitFor((m) => m.topic === "wd/ends")
    expect(srv.serving.mqtt!.delayedWillCount).toBe(1)
    expect(watcher.received.map((m) => m.topic)).toEqual(["wd/ends"])
    await watcher.waitFor((m) => m.topic === "wd/delayed")
    expect(srv.serving.mqtt!.delayedWillCount).toBe(0)
    await watcher.client.endAsync()
  })

  it("a new connection to the session before the delay cancels the will [MQTT-3.1.3-9]; Clean Start sends it", async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const watcher = await session(srv.mqttUrl, "wc-watch", 0, true)
    await watcher.client.subscribeAsync("wc/#", { qos: 1 })
    for (const id of ["wc-resumed", "wc-fresh"]) {
      const r = await RawMqtt5.open(srv.mqttPort)
      await r.connect({ clientId: id, clean: false, properties: { sessionExpiryInterval: 600 }, will: will(`wc/${id}`, 600) })
      r.end()
    }
    await eventually(() => srv!.serving.mqtt!.delayedWillCount === 2, "both wills waiting")
    const resumed = await session(srv.mqttUrl, "wc-resumed", 600)
    expect(resumed.present).toBe(true)
    const fresh = await session(srv.mqttUrl, "wc-fresh", 600, true)
    await watcher.waitFor((m) => m.topic === "wc/wc-fresh")
    expect(srv.serving.mqtt!.delayedWillCount).toBe(0)
    await watcher.client.publishAsync("wc/marker", "m", { qos: 1 })
    await watcher.waitFor((m) => m.topic === "wc/marker")
    expect(watcher.received.map((m) => m.topic)).toEqual(["wc/wc-fresh", "wc/marker"])
    await resumed.client.endAsync()
    await fresh.client.endAsync()
    await watcher.client.endAsync()
  })
})
