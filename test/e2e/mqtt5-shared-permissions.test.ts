// NATS queue permissions (`subscribe` entries naming a queue group, `"jobs.> workers"`) hold
// for nats.js queue subscribers and for MQTT 5.0 Shared Subscriptions alike: `$share/G/f`
// is queue group G on f's subjects, allowed or refused (SUBACK 0x87) by the same entries,
// and the two kinds of member of an allowed group split the work. What nats.js and mqtt.js
// (`protocolVersion: 5`) report.
import mqtt from "mqtt"
import type * as MqttPacket from "mqtt-packet"
import { connect, type NatsConnection } from "nats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Permissions, UserEntry } from "../../src/config/options.js"
import { mqttOptions, type MqttServer, startMqttServer } from "../helpers/mqtt.js"
import { authorization, eventually } from "../helpers/server.js"

const sub = (allow: Array<string>, deny?: Array<string>): Permissions =>
  ({ publish: { allow: [">"], deny: undefined }, subscribe: { allow, deny }, allowResponses: undefined })
const user = (name: string, permissions?: Permissions): UserEntry => ({ user: name, password: `${name}-pw`, nkey: undefined, account: undefined, permissions })

let srv: MqttServer
const conns: Array<NatsConnection> = []
const clients: Array<mqtt.MqttClient> = []

beforeAll(async () => {
  srv = await startMqttServer({
    mqtt: mqttOptions({ protocolVersions: [4, 5] }),
    authorization: authorization({ users: [user("admin"), user("worker", sub(["jobs.> workers", "_INBOX.>"])), user("picky", sub([">"], ["jobs.> other"]))] })
  })
})
afterAll(async () => {
  await Promise.all(clients.map((c) => c.endAsync(true).catch(() => {})))
  await Promise.all(conns.map((c) => c.close().catch(() => {})))
  await srv?.close()
})

const nats = async (name: string) => {
  const nc = await connect({ servers: srv.url, user: name, pass: `${name}-pw`, reconnect: false })
  conns.push(nc)
  return nc
}
const mqtt5 = async (name: string, clientId: string) => {
  const c = await mqtt.connectAsync(srv.mqttUrl, { protocolVersion: 5, clientId, username: name, password: `${name}-pw`, reconnectPeriod: 0 })
  clients.push(c)
  return c
}
/** The reason code per filter of the SUBACK mqtt.js receives (its subscribe promise rejects on any failure). */
const subackCodes = (c: mqtt.MqttClient, filters: Array<string>): Promise<Array<number>> =>
  new Promise((resolve) => {
    const seen = (p: mqtt.Packet) => {
      if (p.cmd !== "suback") return
      c.off("packetreceive", seen)
      resolve([...(p as MqttPacket.ISubackPacket).granted] as Array<number>)
    }
    c.on("packetreceive", seen)
    c.subscribe(filters, { qos: 1 }, () => {})
  })

describe("queue permissions, NATS and MQTT 5.0 Shared Subscriptions alike", () => {
  it("nats.js: a queue subscription in the allowed group works; another group, or none, gets the permissions violation", async () => {
    const nc = await nats("worker")
    const errors: Array<string> = []
    const got: Array<string> = []
    nc.subscribe("jobs.a", { queue: "workers", callback: (e, m) => (e ? errors.push(e.message) : got.push(m.string())) })
    nc.subscribe("jobs.a", { queue: "idlers", callback: (e) => e && errors.push(e.message) })
    nc.subscribe("jobs.a", { callback: (e) => e && errors.push(e.message) })
    await nc.flush()
    await eventually(() => errors.length === 2, "two permission errors")
    // (nats.js hands each subscription the server's -ERR text, quotes included)
    expect(new Set(errors)).toEqual(new Set([`'Permissions Violation for Subscription to "jobs.a"'`, `'Permissions Violation for Subscription to "jobs.a" using queue "idlers"'`]))
    const admin = await nats("admin")
    admin.publish("jobs.a", "w1")
    await admin.flush()
    await eventually(() => got.length === 1, "the allowed queue subscriber's message")
    await nc.close()
  })

  it("mqtt.js v5: $share/<allowed group> granted, another group or a plain filter 0x87; a deny naming a group refuses only that group", async () => {
    const w = await mqtt5("worker", "share-worker")
    expect(await subackCodes(w, ["$share/workers/jobs/+", "$share/idlers/jobs/+", "jobs/+"])).toEqual([1, 0x87, 0x87])
    const p = await mqtt5("picky", "share-picky")
    expect(await subackCodes(p, ["$share/other/jobs/+", "$share/workers/jobs/+", "jobs/+"])).toEqual([0x87, 1, 1])
    await w.endAsync()
    await p.endAsync()
  })

  it("an MQTT 5.0 shared subscriber and a nats.js queue subscriber of the allowed group split the work, each message to exactly one", async () => {
    const nc = await nats("worker")
    const byNats: Array<string> = []
    nc.subscribe("jobs.*", { queue: "workers", callback: (_e, m) => void byNats.push(m.string()) })
    await nc.flush()
    const m = await mqtt5("worker", "share-split")
    const byMqtt: Array<string> = []
    m.on("message", (_t, payload) => byMqtt.push(payload.toString()))
    expect(await subackCodes(m, ["$share/workers/jobs/+"])).toEqual([1])
    const admin = await nats("admin")
    const sent = Array.from({ length: 40 }, (_, i) => `job-${i}`)
    for (const s of sent) admin.publish("jobs.x", s)
    await admin.flush()
    await eventually(() => byNats.length + byMqtt.length === 40, `every job taken (nats ${byNats.length}, mqtt ${byMqtt.length})`)
    expect([...byNats, ...byMqtt].sort()).toEqual([...sent].sort())
    expect(byNats.length).toBeGreaterThan(0)
    expect(byMqtt.length).toBeGreaterThan(0)
  })
})
