// MQTT 5.0 bridged onto NATS (issue #19 slice 3): User Properties <-> NATS headers (order
// and repeats kept), Content Type and Payload Format as well-known headers, Response
// Topic and Correlation Data <-> the reply subject, both ways. Real mqtt.js v5 clients
// and nats.js (`nats`), asserting what each library reports.
import mqtt from "mqtt"
import { connect, headers, type NatsConnection, type Msg } from "nats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { collect, connectMqtt, eventually, mqttOptions, type MqttServer, startMqttServer } from "../helpers/mqtt.js"

let srv: MqttServer
let nc: NatsConnection

beforeAll(async () => {
  srv = await startMqttServer({ mqtt: mqttOptions({ protocolVersions: [4, 5] }) })
  nc = await connect({ servers: srv.url, reconnect: false })
})
afterAll(async () => {
  await nc?.close()
  await srv?.close()
})

const v5 = (clientId: string) => connectMqtt(srv.mqttUrl, { clientId, protocolVersion: 5 })

/** Packets as mqtt.js hands them to "message" listeners, with their properties. */
const packets = (client: mqtt.MqttClient): Array<mqtt.IPublishPacket> => {
  const got: Array<mqtt.IPublishPacket> = []
  client.on("message", (_t, _p, packet) => got.push(packet))
  return got
}

describe("MQTT 5.0 -> NATS", () => {
  it("User Properties become headers in order with repeats; Content Type and Payload Format well-known ones", async () => {
    const sub = nc.subscribe("props.out", { max: 1 })
    const got = (async () => {
      for await (const m of sub) return m
      return undefined
    })()
    await nc.flush()
    const pub = await v5("props-pub")
    await pub.client.publishAsync("props/out", "{}", {
      qos: 1,
      properties: { userProperties: { site: "north", tag: ["a", "b"] }, contentType: "application/json", payloadFormatIndicator: true }
    })
    const m = (await got) as Msg
    expect(m.string()).toBe("{}")
    expect(m.headers?.get("site")).toBe("north")
    expect(m.headers?.values("tag")).toEqual(["a", "b"])
    expect(m.headers?.get("Content-Type")).toBe("application/json")
    expect(m.headers?.get("Mqtt-Payload-Format")).toBe("1")
    await pub.client.endAsync()
  })

  it("a request with a Response Topic and Correlation Data: a NATS service's respond reaches the requester with its Correlation Data", async () => {
    const service = nc.subscribe("svc.echo")
    ;(async () => {
      for await (const m of service) m.respond(`echo ${m.string()}`)
    })()
    await nc.flush()
    const requester = await v5("requester")
    const answers = packets(requester.client)
    await requester.client.subscribeAsync("resp/me", { qos: 0 })
    await requester.client.publishAsync("svc/echo", "hi", { qos: 0, properties: { responseTopic: "resp/me", correlationData: Buffer.from("c-17") } })
    await eventually(() => answers.length === 1, "the answer")
    expect(answers[0].topic).toBe("resp/me")
    expect(answers[0].payload.toString()).toBe("echo hi")
    expect(Buffer.from(answers[0].properties!.correlationData!).toString()).toBe("c-17")
    service.unsubscribe()
    await requester.client.endAsync()
  })
})

describe("NATS -> MQTT 5.0", () => {
  it("headers become User Properties and Content Type; a reply subject the Response Topic; 3.1.1 clients get the payload alone", async () => {
    const dev5 = await v5("hdr-5")
    const got5 = packets(dev5.client)
    await dev5.client.subscribeAsync("hdr/in", { qos: 1 })
    const dev4 = await connectMqtt(srv.mqttUrl, { clientId: "hdr-4" })
    await dev4.client.subscribeAsync("hdr/in", { qos: 0 })
    const h = headers()
    h.append("zone", "7")
    h.append("x", "1")
    h.append("x", "2")
    h.set("Content-Type", "text/plain")
    nc.publish("hdr.in", "payload", { headers: h, reply: "_INBOX.abc" })
    await eventually(() => got5.length === 1, "the v5 delivery")
    const p = got5[0].properties!
    expect(p.contentType).toBe("text/plain")
    expect(p.responseTopic).toBe("_INBOX/abc")
    expect(p.userProperties).toEqual({ zone: "7", x: ["1", "2"] })
    expect(got5[0].payload.toString()).toBe("payload")
    await dev4.waitFor((m) => m.topic === "hdr/in")
    expect(dev4.received[0].payload).toBe("payload")
    await dev5.client.endAsync()
    await dev4.client.endAsync()
  })

  it("a NATS request to a subject MQTT 5.0 devices serve: the device answers on the Response Topic and the requester gets it", async () => {
    const device = await v5("responder")
    device.client.on("message", (_topic, payload, packet) => {
      const to = packet.properties?.responseTopic
      if (to !== undefined) device.client.publish(to, `pong ${payload.toString()}`, { qos: 0 })
    })
    await device.client.subscribeAsync("dev/ping", { qos: 0 })
    const answer = await nc.request("dev.ping", "1", { timeout: 10_000 })
    expect(answer.string()).toBe("pong 1")
    await device.client.endAsync()
  })

  it("a QoS 1 delivery carries the properties too", async () => {
    const dev = collect(mqtt.connect(srv.mqttUrl, { clientId: "hdr-q1", protocolVersion: 5, reconnectPeriod: 0 }))
    const got = packets(dev.client)
    await eventually(() => dev.client.connected, "connected")
    await dev.client.subscribeAsync("hdr/q1", { qos: 1 })
    const pub = await v5("hdr-q1-pub")
    await pub.client.publishAsync("hdr/q1", "q", { qos: 1, properties: { userProperties: { k: "v" } } })
    await eventually(() => got.length === 1, "the QoS 1 delivery")
    expect([got[0].qos, got[0].properties?.userProperties]).toEqual([1, { k: "v" }])
    await dev.client.endAsync()
    await pub.client.endAsync()
  })
})

describe("Shared Subscriptions <-> NATS queue groups", () => {
  it("MQTT 5.0 `$share/G/filter` subscribers and NATS queue subscribers of G split the work, each message to exactly one", async () => {
    const a = await v5("share-a")
    const b = await v5("share-b")
    await a.client.subscribeAsync("$share/workers/jobs/#", { qos: 0 })
    await b.client.subscribeAsync("$share/workers/jobs/#", { qos: 0 })
    const natsGot: Array<string> = []
    const q = nc.subscribe("jobs.>", { queue: "workers", callback: (_e, m) => natsGot.push(m.string()) })
    // a plain subscriber sees everything
    const all = await v5("share-all")
    await all.client.subscribeAsync("jobs/#", { qos: 0 })
    await nc.flush()
    const n = 90
    for (let i = 0; i < n; i++) nc.publish(`jobs.j${i % 3}`, `job ${i}`)
    await nc.flush()
    await all.waitFor(() => true, n, "every job at the plain subscriber")
    const mqttGot = [...a.received, ...b.received].map((m) => m.payload)
    await eventually(() => mqttGot.length + natsGot.length >= n || a.received.length + b.received.length + natsGot.length >= n, "every job taken once")
    const taken = [...a.received, ...b.received].map((m) => m.payload).concat(natsGot)
    expect(taken.length).toBe(n)
    expect(new Set(taken).size).toBe(n)
    // each member took some: the chance that one of three takes none of 90 at random is about 1e-15
    expect([a.received.length > 0, b.received.length > 0, natsGot.length > 0]).toEqual([true, true, true])
    q.unsubscribe()
    for (const c of [a, b, all]) await c.client.endAsync()
  })
})

describe("Subscription options", () => {
  it("No Local: a subscription with it does not get what its own connection published [MQTT-3.8.3-3]; one without does", async () => {
    const a = await v5("nl-a")
    const b = await v5("nl-b")
    await a.client.subscribeAsync("nl/t", { qos: 1, nl: true })
    await a.client.publishAsync("nl/t", "own", { qos: 0 })
    await a.client.publishAsync("nl/t", "own q1", { qos: 1 })
    await b.client.publishAsync("nl/t", "other", { qos: 1 })
    await a.waitFor((m) => m.payload === "other")
    expect(a.received.map((m) => m.payload)).toEqual(["other"])
    await a.client.subscribeAsync("nl/#", { qos: 0 })
    await a.client.publishAsync("nl/t", "own again", { qos: 0 })
    await a.waitFor((m) => m.payload === "own again")
    expect(a.received.map((m) => m.payload)).toEqual(["other", "own again"])
    await a.client.endAsync()
    await b.client.endAsync()
  })
})

describe("Message Expiry Interval", () => {
  it("is passed on: to NATS as Mqtt-Message-Expiry, to MQTT 5.0 subscribers as the interval left", async () => {
    const sub = await v5("exp-sub")
    const got = packets(sub.client)
    await sub.client.subscribeAsync("mexp/#", { qos: 1 })
    const n = nc.subscribe("mexp.t", { max: 1 })
    const natsMsg = (async () => {
      for await (const m of n) return m
      return undefined
    })()
    await nc.flush()
    const pub = await v5("exp-pub")
    await pub.client.publishAsync("mexp/t", "q0", { qos: 0, properties: { messageExpiryInterval: 60 } })
    await pub.client.publishAsync("mexp/u", "q1", { qos: 1, properties: { messageExpiryInterval: 30 } })
    await eventually(() => got.length === 2, "both deliveries")
    expect(got.map((p) => [p.payload.toString(), p.properties?.messageExpiryInterval])).toEqual([["q0", 60], ["q1", 30]])
    expect((await natsMsg)?.headers?.get("Mqtt-Message-Expiry")).toBe("60")
    await sub.client.endAsync()
    await pub.client.endAsync()
  })
})

describe("Subscription Identifiers", () => {
  it("a delivery carries the identifiers of every subscription it matched [MQTT-3.3.4-3], at QoS 0 and 1, and with retained messages", async () => {
    const pub = await v5("sid-pub")
    await pub.client.publishAsync("sid/kept", "retained", { qos: 1, retain: true })
    const sub = await v5("sid-sub")
    const got = packets(sub.client)
    await sub.client.subscribeAsync("sid/#", { qos: 1, properties: { subscriptionIdentifier: 7 } })
    await eventually(() => got.length === 1, "the retained message")
    await sub.client.subscribeAsync("sid/a", { qos: 0, properties: { subscriptionIdentifier: 9 } })
    await pub.client.publishAsync("sid/a", "both q0", { qos: 0 })
    await pub.client.publishAsync("sid/b", "one q1", { qos: 1 })
    await eventually(() => got.length === 3, "the deliveries")
    const ids = (p: mqtt.IPublishPacket) => {
      const v = p.properties?.subscriptionIdentifier
      return v === undefined ? [] : Array.isArray(v) ? v : [v]
    }
    expect(got.map((p) => [p.payload.toString(), ids(p)])).toEqual([["retained", [7]], ["both q0", [7, 9]], ["one q1", [7]]])
    await pub.client.publishAsync("sid/kept", "", { qos: 1, retain: true })
    await sub.client.endAsync()
    await pub.client.endAsync()
  })
})

describe("Will Properties", () => {
  it("a v5 will reaches NATS with its User Properties and Content Type as headers", async () => {
    const sub = nc.subscribe("will5.out", { max: 1 })
    const got = (async () => {
      for await (const m of sub) return m
      return undefined
    })()
    await nc.flush()
    const dev = mqtt.connect(srv.mqttUrl, {
      clientId: "will5-dev",
      protocolVersion: 5,
      reconnectPeriod: 0,
      will: { topic: "will5/out", payload: Buffer.from("gone"), qos: 0, retain: false, properties: { contentType: "text/plain", userProperties: { reason: "power" } } }
    })
    await eventually(() => dev.connected, "connected")
    dev.end(true) // no DISCONNECT: the socket just closes
    const m = (await got) as Msg
    expect(m.string()).toBe("gone")
    expect(m.headers?.get("reason")).toBe("power")
    expect(m.headers?.get("Content-Type")).toBe("text/plain")
  })
})
