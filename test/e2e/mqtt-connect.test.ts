// CONNECT/CONNACK, PINGREQ, DISCONNECT and takeover with the real mqtt client and raw bytes.
import * as net from "node:net"
import mqtt from "mqtt"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { getJson } from "../helpers/monitor.js"
import { connectMqtt, eventually, type MqttServer, startMqttServer, waitClosed } from "../helpers/mqtt.js"

let srv: MqttServer

beforeAll(async () => {
  srv = await startMqttServer()
})
afterAll(async () => {
  await srv.close()
})

/** Send raw bytes; resolve with everything received once the server closes the socket. */
const rawExchange = (port: number, bytes: Buffer): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    const s = net.connect({ host: "127.0.0.1", port }, () => s.write(bytes))
    s.on("data", (d) => chunks.push(d))
    s.on("close", () => resolve(Buffer.concat(chunks)))
    s.on("error", reject)
  })

describe("MQTT connect", () => {
  it("accepts a 3.1.1 client: CONNACK 0, PINGREQ answered, DISCONNECT closes", async () => {
    const c = await connectMqtt(srv.mqttUrl, { clientId: "hello", keepalive: 30 })
    expect(srv.serving.mqtt!.connectedClient("hello")).toBeDefined()
    await c.client.endAsync()
    await eventually(() => srv.serving.mqtt!.connectedClient("hello") === undefined, "the session to end")
  })

  it("refuses protocol level 5 with CONNACK return code 1 [MQTT-3.1.2-2]", async () => {
    // CONNECT, protocol "MQTT" level 5, clean session, keepalive 60, no properties, client id "v5".
    const body = Buffer.from([0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x05, 0x02, 0x00, 0x3c, 0x00, 0x00, 0x02, 0x76, 0x35])
    const got = await rawExchange(srv.mqttPort, Buffer.concat([Buffer.from([0x10, body.length]), body]))
    expect([...got]).toEqual([0x20, 0x02, 0x00, 0x01])
  })

  it("refuses an mqtt.js client speaking MQTT 5", async () => {
    await expect(
      mqtt.connectAsync(srv.mqttUrl, { clientId: "v5-client", protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 10_000 })
    ).rejects.toThrow(/Unacceptable protocol version/)
  })

  it("refuses an empty client id with clean session 0 (return code 2) [MQTT-3.1.3-8]", async () => {
    const body = Buffer.from([0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x00, 0x00, 0x3c, 0x00, 0x00])
    const got = await rawExchange(srv.mqttPort, Buffer.concat([Buffer.from([0x10, body.length]), body]))
    expect([...got]).toEqual([0x20, 0x02, 0x00, 0x02])
  })

  it("assigns an id to an empty client id with clean session 1 [MQTT-3.1.3-6]", async () => {
    const c = await connectMqtt(srv.mqttUrl, { clientId: "", clean: true })
    await c.client.subscribeAsync("assigned/x", { qos: 1 })
    await c.client.publishAsync("assigned/x", "me", { qos: 1 })
    await c.waitFor((r) => r.topic === "assigned/x")
    await c.client.endAsync()
  })

  it("closes a connection whose first packet is not CONNECT [MQTT-3.1.0-1]", async () => {
    const got = await rawExchange(srv.mqttPort, Buffer.from([0xc0, 0x00])) // PINGREQ
    expect(got.length).toBe(0)
  })

  it("cuts off a client announcing a packet over max_payload before buffering it", async () => {
    const connectBody = Buffer.from([0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3c, 0x00, 0x03, 0x62, 0x69, 0x67])
    // PUBLISH with remaining length 200 MB (0x80 0x80 0x80 0x64), then only a few bytes of it.
    const huge = Buffer.from([0x30, 0x80, 0x80, 0x80, 0x64, 0x00, 0x01, 0x61])
    const got = await rawExchange(srv.mqttPort, Buffer.concat([Buffer.from([0x10, connectBody.length]), connectBody, huge]))
    expect([...got]).toEqual([0x20, 0x02, 0x00, 0x00]) // CONNACK accepted, then closed
  })

  it("closes a connection that sends malformed bytes", async () => {
    const got = await rawExchange(srv.mqttPort, Buffer.from([0x00, 0x00])) // packet type 0 is reserved
    expect(got.length).toBe(0)
  })

  it("a second connection with the same client id takes over; the older one is closed [MQTT-3.1.4-2]", async () => {
    const first = await connectMqtt(srv.mqttUrl, { clientId: "same-id" })
    const firstCid = [...srv.serving.mqtt!.connections.values()].find((c) => c.session.clientId === "same-id")!.cid
    const second = await connectMqtt(srv.mqttUrl, { clientId: "same-id" })
    await waitClosed(first.client)
    await second.client.subscribeAsync("takeover/x", { qos: 1 })
    await second.client.publishAsync("takeover/x", "still here", { qos: 1 })
    await second.waitFor((r) => r.topic === "takeover/x")
    const closed = (await getJson(srv.base, `/connz?state=closed&cid=${firstCid}`)).json.connections
    expect(closed).toHaveLength(1)
    expect(closed[0]).toMatchObject({ cid: firstCid, type: "mqtt", mqtt_client: "same-id", reason: "Duplicate Client ID" })
    first.client.end(true)
    await second.client.endAsync()
  })

  it("flapping protection: past three takeovers of one id in ten seconds the newcomer gets CONNACK 3 and the connected one stays", async () => {
    const clients: Array<mqtt.MqttClient> = []
    try {
      for (let i = 0; i < 4; i++) clients.push((await connectMqtt(srv.mqttUrl, { clientId: "flapper" })).client)
      for (let i = 0; i < 3; i++) await waitClosed(clients[i])
      const refused = await mqtt.connectAsync(srv.mqttUrl, { clientId: "flapper", reconnectPeriod: 0 }).then(
        () => undefined,
        (e: { code?: number }) => e.code
      )
      expect(refused).toBe(3)
      expect(clients[3].connected).toBe(true)
      expect(srv.serving.mqtt!.connectedClient("flapper")).toBeDefined()
    } finally {
      for (const c of clients) c.end(true)
    }
  })

  it("a persistent session keeps its subscriptions across reconnects (in memory) [MQTT-3.2.2-2]", async () => {
    const a = await connectMqtt(srv.mqttUrl, { clientId: "persist", clean: false })
    await a.client.subscribeAsync("persist/x", { qos: 1 })
    await a.client.endAsync()
    await eventually(() => srv.serving.mqtt!.connectedClient("persist") === undefined, "the session to end")
    const client = await mqtt.connectAsync(srv.mqttUrl, { clientId: "persist", clean: false, reconnectPeriod: 0 })
    const received: Array<string> = []
    client.on("message", (t, p) => received.push(`${t}:${p.toString()}`))
    const pub = await connectMqtt(srv.mqttUrl, { clientId: "persist-pub" })
    await pub.client.publishAsync("persist/x", "back", { qos: 1 })
    await eventually(() => received.includes("persist/x:back"), "the restored subscription to deliver")
    await client.endAsync()
    await pub.client.endAsync()
  })
})
