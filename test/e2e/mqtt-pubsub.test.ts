// MQTT <-> NATS <-> MQTT routing at QoS 0/1/2, and topic filters, with real clients.
import { connect, StringCodec } from "nats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectMqtt, type MqttServer, startMqttServer } from "../helpers/mqtt.js"

const sc = StringCodec()
let srv: MqttServer

beforeAll(async () => {
  srv = await startMqttServer()
})
afterAll(async () => {
  await srv.close()
})

describe("MQTT and NATS on the same subjects", () => {
  it("logs the MQTT listener", () => {
    expect(srv.lines.some((l) => l.includes(`Listening for MQTT clients on 127.0.0.1:${srv.mqttPort}`))).toBe(true)
  })

  for (const qos of [0, 1, 2] as const) {
    it(`MQTT PUBLISH QoS ${qos} reaches a NATS subscriber on the translated subject`, async () => {
      const nc = await connect({ servers: srv.url })
      const got: Array<[string, string]> = []
      const sub = nc.subscribe("m2n.a.b", { callback: (_e, m) => got.push([m.subject, sc.decode(m.data)]) })
      await nc.flush()
      const m = await connectMqtt(srv.mqttUrl, { clientId: `m2n-${qos}` })
      await m.client.publishAsync("m2n/a/b", `hello ${qos}`, { qos })
      await expect.poll(() => got, { timeout: 10_000 }).toEqual([["m2n.a.b", `hello ${qos}`]])
      sub.unsubscribe()
      await m.client.endAsync()
      await nc.close()
    })

    it(`a NATS PUBLISH reaches an MQTT subscriber at QoS ${qos}`, async () => {
      const m = await connectMqtt(srv.mqttUrl, { clientId: `n2m-${qos}` })
      const granted = await m.client.subscribeAsync(`n2m${qos}/x/+`, { qos })
      expect(granted[0]!.qos).toBe(qos)
      const nc = await connect({ servers: srv.url })
      nc.publish(`n2m${qos}.x.y`, sc.encode("from nats"))
      await nc.flush()
      // A NATS message carries no QoS: it is delivered at most once (QoS 0), as nats-server does.
      const [msg] = await m.waitFor((r) => r.topic === `n2m${qos}/x/y`)
      expect(msg).toMatchObject({ payload: "from nats", retain: false })
      await m.client.endAsync()
      await nc.close()
    })

    it(`MQTT to MQTT at QoS ${qos}: delivered at min(publish, granted) QoS`, async () => {
      const sub = await connectMqtt(srv.mqttUrl, { clientId: `m2m-sub-${qos}` })
      await sub.client.subscribeAsync(`m2m${qos}/#`, { qos: 2 })
      const pub = await connectMqtt(srv.mqttUrl, { clientId: `m2m-pub-${qos}` })
      await pub.client.publishAsync(`m2m${qos}/t`, "one", { qos })
      await pub.client.publishAsync(`m2m${qos}/t`, "two", { qos })
      const got = await sub.waitFor((r) => r.topic === `m2m${qos}/t`, 2)
      expect(got.map((r) => [r.payload, r.qos])).toEqual([["one", qos], ["two", qos]])
      // The subscriber's PUBACK / PUBREC-PUBREL-PUBCOMP completed every outbound flow.
      const session = srv.serving.mqtt!.connectedClient(`m2m-sub-${qos}`)!.session
      await expect.poll(() => session.inflightCount, { timeout: 10_000 }).toBe(0)
      await sub.client.endAsync()
      await pub.client.endAsync()
    })
  }

  it("'+' matches one level and '#' the parent and every level below [MQTT-4.7.1-2]", async () => {
    const s = await connectMqtt(srv.mqttUrl, { clientId: "filters" })
    await s.client.subscribeAsync({ "f/+/c": { qos: 0 }, "g/#": { qos: 0 } })
    const p = await connectMqtt(srv.mqttUrl, { clientId: "filters-pub" })
    for (const t of ["f/b/c", "f/b/d", "f/b/c/d", "g", "g/1", "g/1/2", "h/1"]) await p.client.publishAsync(t, t, { qos: 1 })
    await p.client.publishAsync("done/x", "end", { qos: 1 })
    await s.client.subscribeAsync("done/x", { qos: 0 })
    await p.client.publishAsync("done/x", "end", { qos: 1 })
    await s.waitFor((r) => r.topic === "done/x")
    expect(s.received.filter((r) => r.topic !== "done/x").map((r) => r.topic)).toEqual(["f/b/c", "g", "g/1", "g/1/2"])
    await s.client.endAsync()
    await p.client.endAsync()
  })

  it("overlapping subscriptions deliver a message once, at the highest granted QoS", async () => {
    const s = await connectMqtt(srv.mqttUrl, { clientId: "overlap" })
    await s.client.subscribeAsync({ "o/+": { qos: 0 }, "o/#": { qos: 1 }, "o/a": { qos: 0 } })
    const p = await connectMqtt(srv.mqttUrl, { clientId: "overlap-pub" })
    await p.client.publishAsync("o/a", "x", { qos: 1 })
    await p.client.publishAsync("o/end", "end", { qos: 1 })
    await s.waitFor((r) => r.topic === "o/end")
    expect(s.received.filter((r) => r.topic === "o/a")).toEqual([{ topic: "o/a", payload: "x", qos: 1, retain: false, dup: false }])
    await s.client.endAsync()
    await p.client.endAsync()
  })

  it("UNSUBSCRIBE stops delivery", async () => {
    const s = await connectMqtt(srv.mqttUrl, { clientId: "unsub" })
    await s.client.subscribeAsync(["u/a", "u/end"], { qos: 1 })
    await s.client.unsubscribeAsync("u/a")
    const p = await connectMqtt(srv.mqttUrl, { clientId: "unsub-pub" })
    await p.client.publishAsync("u/a", "gone", { qos: 1 })
    await p.client.publishAsync("u/end", "end", { qos: 1 })
    await s.waitFor((r) => r.topic === "u/end")
    expect(s.received.map((r) => r.topic)).toEqual(["u/end"])
    await s.client.endAsync()
    await p.client.endAsync()
  })
})
