// MQTT 5.0 acknowledgements that say more than Success, and what the CONNACK offers
// (issue #19): PUBACK 0x10 No matching subscribers, PUBACK/PUBREC 0x97 Quota exceeded
// when a storage limit refuses a message, Server Keep Alive (`max_keepalive`) and
// Response Information (`response_information`). What mqtt.js (`protocolVersion: 5`)
// reports, and raw packets where it hides them.
import mqtt from "mqtt"
import { connect, type NatsConnection } from "nats"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type JsTestServer, startJsServer } from "../helpers/jetstream.js"
import { collect, connectMqtt, mqttOptions, type MqttServer, startMqttServer, type TestMqttClient, waitClosed } from "../helpers/mqtt.js"
import { RawMqtt5 } from "../helpers/mqtt5-raw.js"

let srv: MqttServer
let nc: NatsConnection

beforeAll(async () => {
  srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5], maxKeepAlive: 30 }) })
  nc = await connect({ servers: srv.url, reconnect: false })
})
afterAll(async () => {
  await nc?.close()
  await srv?.close()
})

/** A v5 client collecting from its first packet, and its CONNACK as mqtt.js reports it. */
const connack5 = (url: string, over: mqtt.IClientOptions): Promise<{ client: mqtt.MqttClient; connack: mqtt.IConnackPacket; c: TestMqttClient }> =>
  new Promise((resolve, reject) => {
    const client = mqtt.connect(url, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 10_000, ...over })
    const c = collect(client)
    client.once("connect", (connack) => resolve({ client, connack, c }))
    client.once("error", reject)
  })

/** The PUBACK/PUBREC reason codes mqtt.js receives ("packetreceive"; its publish promise resolves with the PUBLISH itself). */
const ackCodes = (client: mqtt.MqttClient): Array<number | undefined> => {
  const got: Array<number | undefined> = []
  client.on("packetreceive", (p) => {
    if (p.cmd === "puback" || p.cmd === "pubrec") got.push(p.reasonCode)
  })
  return got
}

describe("PUBACK 0x10 No matching subscribers", () => {
  it("a QoS 1 PUBLISH nobody receives is acknowledged with 0x10 (mqtt.js: a success); with a receiver, Success", async () => {
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "nomatch-pub", protocolVersion: 5 })
    const codes = ackCodes(pub.client)
    await pub.client.publishAsync("nomatch/t", "x", { qos: 1 })
    // a NATS subscriber is a receiver too
    const sub = nc.subscribe("nomatch.t")
    await nc.flush()
    await pub.client.publishAsync("nomatch/t", "y", { qos: 1 })
    expect(codes).toEqual([0x10, 0])
    sub.unsubscribe()
    await nc.flush()
    await pub.client.endAsync()
  })

  it("[MQTT-3.5.2.2] a QoS 2 PUBLISH nobody receives gets PUBREC 0x10 and completes (mqtt.js: a success); with a receiver, Success", async () => {
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "nomatch-q2", protocolVersion: 5 })
    const codes = ackCodes(pub.client)
    const pubcomps: Array<number | undefined> = []
    pub.client.on("packetreceive", (p) => {
      if (p.cmd === "pubcomp") pubcomps.push(p.reasonCode)
    })
    await pub.client.publishAsync("nomatch/q2", "x", { qos: 2 })
    const sub = nc.subscribe("nomatch.q2")
    await nc.flush()
    await pub.client.publishAsync("nomatch/q2", "y", { qos: 2 })
    sub.unsubscribe()
    await nc.flush()
    // an MQTT 5.0 subscriber of its own: Success, and it gets the message
    const c = collect(pub.client)
    await pub.client.subscribeAsync("nomatch/q2", { qos: 2 })
    await pub.client.publishAsync("nomatch/q2", "z", { qos: 2 })
    await c.waitFor((m) => m.payload === "z")
    expect(codes).toEqual([0x10, 0, 0])
    expect(pubcomps).toEqual([0, 0, 0])
    await pub.client.endAsync()
  })

  it("raw bytes: the PUBREC 0x10 goes without a Reason String, a resend before PUBREL gets it again", async () => {
    const rec = await RawMqtt5.open(srv.mqttPort)
    await rec.connect({ clientId: "nomatch-raw" })
    rec.send({ cmd: "publish", topic: "nomatch/raw", payload: Buffer.from("z"), qos: 2, messageId: 3, retain: false, dup: false })
    const first = await rec.next("pubrec")
    expect(first).toMatchObject({ messageId: 3, reasonCode: 0x10 })
    expect((first as { properties?: { reasonString?: string } }).properties?.reasonString).toBeUndefined()
    rec.send({ cmd: "publish", topic: "nomatch/raw", payload: Buffer.from("z"), qos: 2, messageId: 3, retain: false, dup: true })
    expect(await rec.next("pubrec")).toMatchObject({ messageId: 3, reasonCode: 0x10 })
    rec.send({ cmd: "pubrel", messageId: 3 })
    expect((await rec.next("pubcomp") as { reasonCode?: number }).reasonCode ?? 0).toBe(0)
    rec.end()
  })

  it("3.1.1 clients get their plain PUBACK", async () => {
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "nomatch-v4" })
    const codes = ackCodes(pub.client)
    await pub.client.publishAsync("nomatch/v4", "x", { qos: 1 })
    expect(codes).toEqual([undefined])
    await pub.client.endAsync()
  })
})

describe("Server Keep Alive (max_keepalive)", () => {
  it("a client asking for more than max_keepalive, or for none, is given it in CONNACK and mqtt.js keeps to it [MQTT-3.2.2-21]", async () => {
    for (const [keepalive, expected] of [[60, 30], [0, 30], [10, undefined]] as const) {
      const { client, connack } = await connack5(srv.mqttUrl, { clientId: `ska-${keepalive}`, keepalive })
      expect([keepalive, connack.properties?.serverKeepAlive]).toEqual([keepalive, expected])
      if (keepalive > 0) expect(client.keepalive).toBe(expected ?? keepalive)
      await client.endAsync()
    }
  })
})

describe("Response Information (response_information)", () => {
  it("given only to a client that asks [MQTT-3.1.2-28]: the prefix and a level of its own; a NATS service answers under it", async () => {
    const plain = await connack5(srv.mqttUrl, { clientId: "ri-none" })
    expect(plain.connack.properties?.responseInformation).toBeUndefined()
    await plain.client.endAsync()
    const odd = await connack5(srv.mqttUrl, { clientId: "ri/odd id", properties: { requestResponseInformation: true } })
    expect(odd.connack.properties?.responseInformation).toMatch(/^_INBOX\/mqtt\/[0-9a-f]{32}$/)
    await odd.client.endAsync()

    const { client, connack } = await connack5(srv.mqttUrl, { clientId: "ri-dev", properties: { requestResponseInformation: true } })
    const info = connack.properties?.responseInformation
    expect(info).toBe("_INBOX/mqtt/ri-dev")
    // the device uses it as its Response Topic; a NATS service answers there
    const svc = nc.subscribe("ri.svc")
    void (async () => {
      for await (const m of svc) m.respond(new TextEncoder().encode(`re:${m.string()}`))
    })()
    await nc.flush()
    const c = collect(client)
    await client.subscribeAsync(`${info}/#`, { qos: 1 })
    await client.publishAsync("ri/svc", "ping", { qos: 1, properties: { responseTopic: `${info}/1` } })
    const [m] = await c.waitFor((x) => x.topic === `${info}/1`)
    expect(m!.payload).toBe("re:ping")
    svc.unsubscribe()
    await client.endAsync()
  })

  it("response_information: false offers none", async () => {
    const off = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [5], responseInformation: "" }) })
    try {
      const { client, connack } = await connack5(off.mqttUrl, { clientId: "ri-off", properties: { requestResponseInformation: true } })
      expect(connack.properties?.responseInformation).toBeUndefined()
      await client.endAsync()
    } finally {
      await off.close()
    }
  })
})

describe("with streams on: PUBREC 0x10 after the commit, PUBACK/PUBREC 0x97 Quota exceeded", () => {
  let js: JsTestServer | undefined
  afterEach(async () => {
    await js?.close()
    js = undefined
  })

  it("with streams on, a QoS 2 PUBREC (after the commit) is 0x10 unless an away session or a stream took the message", async () => {
    js = await startJsServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const url = `mqtt://127.0.0.1:${js.srv.serving.mqtt!.port}`
    const pub = await connectMqtt(url, { clientId: "q2js-pub", protocolVersion: 5, clean: false, properties: { sessionExpiryInterval: 60 } })
    const codes = ackCodes(pub.client)
    await pub.client.publishAsync("q2js/a", "1", { qos: 2 })
    // an away persistent session subscribed to it: stored for it, so matched
    const holder = await connack5(url, { clientId: "q2js-holder", clean: false, properties: { sessionExpiryInterval: 3600 } })
    await holder.client.subscribeAsync("q2js/a", { qos: 2 })
    await holder.client.endAsync()
    await pub.client.publishAsync("q2js/a", "2", { qos: 2 })
    // a stream capturing the subject is a receiver too
    const { jsm } = await js.client()
    await jsm.streams.add({ name: "Q2JS", subjects: ["q2js.b"] })
    await pub.client.publishAsync("q2js/b", "3", { qos: 2 })
    await pub.client.publishAsync("q2js/c", "4", { qos: 2 })
    expect(codes).toEqual([0x10, 0, 0, 0x10])
    expect((await jsm.streams.info("Q2JS")).state.messages).toBe(1)
    await pub.client.endAsync()
  })

  it("a message a storage limit refuses is not routed, the publisher told 0x97 and kept; 3.1.1 is cut off as before", async () => {
    js = await startJsServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
    const url = `mqtt://127.0.0.1:${js.srv.serving.mqtt!.port}`
    // an away session holds QoS 1 messages on quota/#: they are stored in $MQTT_msgs
    const holder = await connack5(url, { clientId: "quota-holder", clean: false, properties: { sessionExpiryInterval: 3600 } })
    await holder.client.subscribeAsync("quota/#", { qos: 1 })
    await holder.client.endAsync()
    const { jsm } = await js.client()
    const info = await jsm.streams.info("$MQTT_msgs")
    await jsm.streams.update("$MQTT_msgs", { ...info.config, max_msgs: 1, discard: "new" as never })

    const pub = await connectMqtt(url, { clientId: "quota-pub", protocolVersion: 5 })
    const codes = ackCodes(pub.client)
    await pub.client.publishAsync("quota/a", "1", { qos: 1 })
    // mqtt.js reports a PUBACK/PUBREC failure code as an error carrying it
    await expect(pub.client.publishAsync("quota/a", "2", { qos: 1 })).rejects.toMatchObject({ code: 0x97 })
    await expect(pub.client.publishAsync("quota/a", "3", { qos: 2 })).rejects.toMatchObject({ code: 0x97 })
    // still connected: a message nobody stores goes through
    expect(pub.client.connected).toBe(true)
    await pub.client.publishAsync("other/t", "ok", { qos: 1 })
    expect(codes).toEqual([0, 0x97, 0x97, 0x10])
    await pub.client.endAsync()
    // 3.1.1 has no way to say so: the publisher is cut off unacknowledged, and retries later
    const old = await connectMqtt(url, { clientId: "quota-v4" })
    old.client.publish("quota/a", "4", { qos: 1 })
    await waitClosed(old.client)
    old.client.end(true)
    // the refused ones never reach the session
    const back = await connack5(url, { clientId: "quota-holder", clean: false, properties: { sessionExpiryInterval: 3600 } })
    const c = back.c
    await c.waitFor((m) => m.payload === "1")
    await back.client.publishAsync("other/flush", "", { qos: 1 })
    expect(c.received.map((m) => m.payload)).toEqual(["1"])
    await back.client.endAsync()
  })
})
