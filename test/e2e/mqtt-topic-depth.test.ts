// Topic depth: a topic name or filter deeper than `mqtt.max_topic_levels` (default 200,
// as mosquitto) closes the connection before anything is built from it, so a client
// cannot make the server hold a 32,768-token subject or Sublist branch.
import * as net from "node:net"
import mqtt from "mqtt"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { getJson } from "../helpers/monitor.js"
import { connectMqtt, mqttOptions, type MqttServer, startMqttServer, waitClosed } from "../helpers/mqtt.js"
import { frame, str, u16 } from "../helpers/mqtt-wire.js"
import { eventually } from "../helpers/server.js"

const CONNECT = frame(0x10, Buffer.concat([str("MQTT"), Buffer.from([4, 0x02, 0, 30]), str("deep")]))
const levels = (n: number) => Array.from({ length: n }, (_, i) => `l${i}`).join("/")

/** Send `bytes` by hand; resolves with everything received once the server closes the connection. */
const untilClosed = async (port: number, bytes: Buffer): Promise<Buffer> => {
  const socket = net.connect({ host: "127.0.0.1", port })
  const got: Array<Buffer> = []
  let closed = false
  socket.on("data", (d) => got.push(d))
  socket.on("close", () => (closed = true))
  socket.on("error", () => {})
  socket.write(bytes)
  await eventually(() => closed, "the server to close the connection")
  return Buffer.concat(got)
}

/** CONNECT, then `packet`. */
const sendRaw = (port: number, packet: Buffer) => untilClosed(port, Buffer.concat([CONNECT, packet]))

const closedReasons = async (srv: MqttServer): Promise<Array<string>> =>
  ((await getJson(srv.base, "/connz?state=closed")).json.connections as Array<{ reason: string }>).map((c) => c.reason)

describe("MQTT topic depth, default max_topic_levels (200)", () => {
  let srv: MqttServer
  beforeAll(async () => {
    srv = await startMqttServer()
  })
  afterAll(async () => {
    await srv.close()
  })

  it("closes a connection that publishes to a 32,768-level topic, without routing it", async () => {
    const topic = "/".repeat(32767) // 65,534 bytes: the deepest topic a PUBLISH can carry
    const got = await sendRaw(srv.mqttPort, frame(0x30, Buffer.concat([str(topic), Buffer.from("x")])))
    // CONNACK 0 (the CONNECT was fine), then nothing: the connection is closed.
    expect(got).toEqual(Buffer.from([0x20, 0x02, 0x00, 0x00]))
    expect((await closedReasons(srv)).at(-1)).toMatch(/Protocol Violation: topic name has 32768 levels, more than max_topic_levels \(200\)/)
    expect(srv.serving.server.inMsgs).toBe(0)
  })

  it("closes a connection that subscribes to a 201-level filter, before any Sublist entry", async () => {
    const before = (await getJson(srv.base, "/subsz")).json.num_subscriptions
    const got = await sendRaw(srv.mqttPort, frame(0x82, Buffer.concat([u16(1), str(`${levels(200)}/#`), Buffer.from([1])])))
    expect(got).toEqual(Buffer.from([0x20, 0x02, 0x00, 0x00])) // no SUBACK
    expect((await closedReasons(srv)).at(-1)).toMatch(/topic filter has 201 levels/)
    expect((await getJson(srv.base, "/subsz")).json.num_subscriptions).toBe(before)
  })

  it("serves 200 levels with a real client (mqtt.js), and is closed by the server at 201", async () => {
    const m = await connectMqtt(srv.mqttUrl, { clientId: "deep-ok" })
    await m.client.subscribeAsync(levels(200), { qos: 0 })
    await m.client.publishAsync(levels(200), "at the limit", { qos: 0 })
    await m.waitFor((r) => r.payload === "at the limit")
    m.client.publish(levels(201), "too deep", { qos: 0 })
    await waitClosed(m.client)
    m.client.end(true)
  })
})

describe("MQTT topic depth, max_topic_levels: 3", () => {
  let srv: MqttServer
  beforeAll(async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ maxTopicLevels: 3 }) })
  })
  afterAll(async () => {
    await srv.close()
  })

  it("takes the configured limit for names, filters and the will topic", async () => {
    const m = await connectMqtt(srv.mqttUrl, { clientId: "three" })
    await m.client.subscribeAsync("a/b/+", { qos: 0 })
    await m.client.publishAsync("a/b/c", "ok", { qos: 0 })
    await m.waitFor((r) => r.topic === "a/b/c")
    await m.client.endAsync()
    const deepSub = await mqtt.connectAsync(srv.mqttUrl, { clientId: "four", reconnectPeriod: 0 })
    deepSub.subscribe("a/b/c/d")
    await waitClosed(deepSub)
    deepSub.end(true)
    const willConnect = frame(0x10, Buffer.concat([str("MQTT"), Buffer.from([4, 0x06, 0, 30]), str("willer"), str("w/x/y/z"), str("bye")]))
    expect(await untilClosed(srv.mqttPort, willConnect)).toEqual(Buffer.alloc(0)) // closed without CONNACK
    expect((await closedReasons(srv)).at(-1)).toMatch(/will topic has 4 levels, more than max_topic_levels \(3\)/)
  })
})
