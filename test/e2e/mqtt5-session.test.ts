// MQTT 5.0 Session Expiry Interval (issue #19 slice 2): a session is kept for its interval
// after its connection closes, across restarts too, and discarded after [MQTT-3.1.2-23],
// [MQTT-4.1.0-2]; a DISCONNECT may change the interval. Real mqtt.js clients
// (`protocolVersion: 5`), the streams store for restarts.
import mqtt from "mqtt"
import { afterEach, describe, expect, it } from "vitest"
import { type JsTestServer, startJsServer } from "../helpers/jetstream.js"
import { collect, connectMqtt, eventually, mqttOptions, type MqttServer, startMqttServer, type TestMqttClient } from "../helpers/mqtt.js"
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

// Message properties on copies the server keeps: a retained message and one queued for an
// away session keep the properties they were published with, their Message Expiry Interval
// counted down while they wait (in memory, and in the `$MQTT_*` streams across a restart);
// Retain As Published.
/** Packets as mqtt.js hands them to "message" listeners, from the first one (CONNACK and resends included). */
const client5 = (url: string, clientId: string, over: mqtt.IClientOptions = {}): Promise<{ client: mqtt.MqttClient; got: Array<mqtt.IPublishPacket>; present: boolean }> =>
  new Promise((resolve, reject) => {
    const client = mqtt.connect(url, { clientId, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 10_000, ...over })
    const got: Array<mqtt.IPublishPacket> = []
    client.on("message", (_t, _p, packet) => got.push(packet))
    client.once("connect", (ack) => resolve({ client, got, present: ack.sessionPresent }))
    client.once("error", reject)
  })

const properties = {
  userProperties: { site: "north", tag: ["a", "b"] },
  contentType: "application/json",
  payloadFormatIndicator: true,
  responseTopic: "replies/dev-1",
  correlationData: Buffer.from("c-17"),
  messageExpiryInterval: 3600
}

/** What must come back of `properties` (the interval only counts down). */
const expectKept = (p: mqtt.IPublishPacket["properties"]) => {
  expect(p?.userProperties).toEqual(properties.userProperties)
  expect(p?.contentType).toBe(properties.contentType)
  expect(p?.payloadFormatIndicator).toBe(true)
  expect(p?.responseTopic).toBe(properties.responseTopic)
  expect(Buffer.from(p?.correlationData ?? []).toString()).toBe("c-17")
  expect(p?.messageExpiryInterval).toBeGreaterThan(3500)
  expect(p?.messageExpiryInterval).toBeLessThanOrEqual(3600)
}

describe("Retain As Published", () => {
  it("[MQTT-3.3.1-12] [MQTT-3.3.1-13] a subscription with it gets RETAIN as published, one without 0; at QoS 0 and 1", async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const rap = await client5(srv.mqttUrl, "rap-on")
    await rap.client.subscribeAsync("rap/#", { qos: 1, rap: true })
    const plain = await client5(srv.mqttUrl, "rap-off")
    await plain.client.subscribeAsync("rap/#", { qos: 1 })
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "rap-pub", protocolVersion: 5 })
    await pub.client.publishAsync("rap/q0", "r0", { qos: 0, retain: true })
    await pub.client.publishAsync("rap/q1", "r1", { qos: 1, retain: true })
    await pub.client.publishAsync("rap/live", "l", { qos: 1 })
    await eventually(() => rap.got.length === 3 && plain.got.length === 3, "three messages each")
    expect(rap.got.map((p) => [p.topic, p.retain])).toEqual([["rap/q0", true], ["rap/q1", true], ["rap/live", false]])
    expect(plain.got.map((p) => [p.topic, p.retain])).toEqual([["rap/q0", false], ["rap/q1", false], ["rap/live", false]])
    // a 3.1.1 publisher's RETAIN counts the same
    const old = await connectMqtt(srv.mqttUrl, { clientId: "rap-v4" })
    await old.client.publishAsync("rap/v4", "o", { qos: 1, retain: true })
    await eventually(() => rap.got.length === 4 && plain.got.length === 4, "the 3.1.1 one")
    expect([rap.got[3]!.retain, plain.got[3]!.retain]).toEqual([true, false])
    for (const c of [rap.client, plain.client, pub.client, old.client]) await c.endAsync()
  })
})

describe("properties on kept copies", () => {
  it("a retained message keeps its properties [MQTT-3.3.1-5], its Message Expiry Interval counted down", async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "ret-pub", protocolVersion: 5 })
    await pub.client.publishAsync("ret/t", "{}", { qos: 1, retain: true, properties })
    const sub = await client5(srv.mqttUrl, "ret-sub")
    await sub.client.subscribeAsync("ret/#", { qos: 1 })
    await eventually(() => sub.got.length === 1, "the retained message")
    expect(sub.got[0]!.retain).toBe(true)
    expectKept(sub.got[0]!.properties)
    // a 3.1.1 subscriber gets it as before, payload alone
    const old = collect(await mqtt.connectAsync(srv.mqttUrl, { clientId: "ret-v4", reconnectPeriod: 0 }))
    await old.client.subscribeAsync("ret/#", { qos: 1 })
    await old.waitFor((m) => m.topic === "ret/t" && m.payload === "{}" && m.retain)
    for (const c of [pub.client, sub.client, old.client]) await c.endAsync()
  })

  it("a message queued for an away session keeps its properties and Subscription Identifier, its interval counted down", async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const away = await client5(srv.mqttUrl, "away-1", { clean: false, properties: { sessionExpiryInterval: 600 } })
    await away.client.subscribeAsync("away/#", { qos: 1, properties: { subscriptionIdentifier: 7 } })
    await away.client.endAsync()
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "away-pub", protocolVersion: 5 })
    await pub.client.publishAsync("away/t", "{}", { qos: 1, properties })
    await pub.client.endAsync()
    const back = await client5(srv.mqttUrl, "away-1", { clean: false, properties: { sessionExpiryInterval: 600 } })
    expect(back.present).toBe(true)
    await eventually(() => back.got.length === 1, "the queued message")
    expectKept(back.got[0]!.properties)
    expect(back.got[0]!.properties?.subscriptionIdentifier).toBe(7)
    await back.client.endAsync()
  })

  it("across a restart (streams): retained and stored copies come back with their properties", async () => {
    js = await startJsServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const url = () => `mqtt://127.0.0.1:${js!.srv.serving.mqtt!.port}`
    const away = await client5(url(), "stored-1", { clean: false, properties: { sessionExpiryInterval: 3600 } })
    await away.client.subscribeAsync("stored/#", { qos: 1 })
    await away.client.endAsync()
    const pub = await connectMqtt(url(), { clientId: "stored-pub", protocolVersion: 5 })
    await pub.client.publishAsync("stored/q", "{}", { qos: 1, properties })
    await pub.client.publishAsync("kept/r", "{}", { qos: 1, retain: true, properties })
    await pub.client.endAsync()
    await js.restart()
    const back = await client5(url(), "stored-1", { clean: false, properties: { sessionExpiryInterval: 3600 } })
    expect(back.present).toBe(true)
    await eventually(() => back.got.length === 1, "the stored message")
    expect(back.got[0]!.topic).toBe("stored/q")
    expectKept(back.got[0]!.properties)
    await back.client.subscribeAsync("kept/#", { qos: 1 })
    await eventually(() => back.got.length === 2, "the retained message")
    expect(back.got[1]!.retain).toBe(true)
    expectKept(back.got[1]!.properties)
    await back.client.endAsync()
  })
})

describe("subscription options and delayed wills across a restart", () => {
  it("No Local, Subscription Identifiers and Retain As Published are kept with the stored subscription", async () => {
    js = await startJsServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const url = () => `mqtt://127.0.0.1:${js!.srv.serving.mqtt!.port}`
    const opts = { clean: false, properties: { sessionExpiryInterval: 3600 } }
    const a = await client5(url(), "opts-1", opts)
    await a.client.subscribeAsync("o/#", { qos: 1, nl: true, rap: true, properties: { subscriptionIdentifier: 9 } })
    await a.client.endAsync()
    await js.restart()
    const back = await client5(url(), "opts-1", opts)
    expect(back.present).toBe(true)
    // its own message is not for its No Local subscription
    await back.client.publishAsync("o/self", "s", { qos: 1 })
    const other = await connectMqtt(url(), { clientId: "opts-pub", protocolVersion: 5 })
    await other.client.publishAsync("o/other", "x", { qos: 1, retain: true })
    await eventually(() => back.got.length === 1, "the other client's message")
    expect(back.got.map((p) => [p.topic, p.retain, p.properties?.subscriptionIdentifier])).toEqual([["o/other", true, 9]])
    await other.client.endAsync()
    await back.client.endAsync()
  })

  it("a delayed will waits across a restart, goes out when due, and only once", async () => {
    js = await startJsServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const url = () => `mqtt://127.0.0.1:${js!.srv.serving.mqtt!.port}`
    const r = await RawMqtt5.open(js.srv.serving.mqtt!.port)
    const will = { topic: "dwr/gone", payload: Buffer.from("bye"), qos: 1, retain: true, properties: { willDelayInterval: 3, contentType: "text/plain" } }
    await r.connect({ clientId: "dwr-1", clean: false, properties: { sessionExpiryInterval: 3600 }, will })
    r.end()
    await eventually(() => js!.srv.serving.mqtt!.delayedWillCount === 1, "the will waiting")
    await js.restart()
    expect(js.srv.serving.mqtt!.delayedWillCount).toBe(1)
    const watcher = await client5(url(), "dwr-watch")
    await watcher.client.subscribeAsync("dwr/#", { qos: 1 })
    await eventually(() => watcher.got.length === 1, "the will after the restart")
    expect(watcher.got[0]!.topic).toBe("dwr/gone")
    expect(watcher.got[0]!.properties?.contentType).toBe("text/plain")
    expect(js.srv.serving.mqtt!.delayedWillCount).toBe(0)
    await watcher.client.endAsync()
    await js.restart()
    expect(js.srv.serving.mqtt!.delayedWillCount).toBe(0)
    // the retained copy it left, with its properties
    const late = await client5(url(), "dwr-late")
    await late.client.subscribeAsync("dwr/#", { qos: 1 })
    await eventually(() => late.got.length === 1, "the retained will")
    expect([late.got[0]!.retain, late.got[0]!.properties?.contentType]).toEqual([true, "text/plain"])
    await late.client.endAsync()
  })
})

describe("a 3.1.1 session's `$share/…` filter", () => {
  it("stays a literal filter when the session resumes, in memory and after a restart (not a shared subscription)", async () => {
    js = await startJsServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const url = () => `mqtt://127.0.0.1:${js!.srv.serving.mqtt!.port}`
    const v4 = (clean: boolean): Promise<TestMqttClient> =>
      new Promise((resolve, reject) => {
        const client = mqtt.connect(url(), { clientId: "lit-1", clean, reconnectPeriod: 0 })
        const c = collect(client) // from the first packet: the queued message follows the CONNACK at once
        client.once("connect", () => resolve(c))
        client.once("error", reject)
      })
    const first = await v4(true)
    await first.client.endAsync()
    const a = await v4(false)
    await a.client.subscribeAsync("$share/g/t", { qos: 1 })
    await a.client.endAsync()
    const pub = async (topic: string, text: string) => {
      const p = await connectMqtt(url(), { clientId: "lit-pub" })
      await p.client.publishAsync(topic, text, { qos: 1 })
      await p.client.endAsync()
    }
    // away: only the literal topic queues for it
    await pub("t", "plain-away")
    await pub("$share/g/t", "literal-away")
    const back = await v4(false)
    await back.waitFor((m) => m.payload === "literal-away")
    await pub("t", "plain-live")
    await pub("$share/g/t", "literal-live")
    await back.waitFor((m) => m.payload === "literal-live")
    await back.client.endAsync()
    await js.restart()
    const again = await v4(false)
    await pub("t", "plain-restart")
    await pub("$share/g/t", "literal-restart")
    await again.waitFor((m) => m.payload === "literal-restart")
    expect([...back.received, ...again.received].map((m) => m.payload)).toEqual(["literal-away", "literal-live", "literal-restart"])
    await again.client.endAsync()
  })
})
