// MQTT over WebSocket (`websocket { no_tls: true }`): the real mqtt.js client at
// ws://…/mqtt exchanging every QoS with NATS and TCP MQTT clients; packets split
// across frames and frames holding several packets; text frames, will on a dropped
// socket, /connz and /varz; slow consumers cut off by the socket's backlog; and the
// HTTP refusals before any upgrade (404 for another path, 400 without `mqtt`).
import * as http from "node:http"
import * as net from "node:net"
import mqtt from "mqtt"
import * as MqttPacket from "mqtt-packet"
import { connect, type NatsConnection } from "nats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import WebSocket from "ws"
import { checkUnsupported } from "../../src/config/unsupported.js"
import { getJson, startMonitoredServer } from "../helpers/monitor.js"
import {
  connectMqtt,
  eventually,
  mqttOptions,
  type MqttServer,
  startMqttServer,
  websocketOptions,
  websocketPort,
  waitClosed
} from "../helpers/mqtt.js"
import { testOptions } from "../helpers/server.js"

let srv: MqttServer
let wsUrl: string
let nc: NatsConnection

beforeAll(async () => {
  srv = await startMqttServer({ websocket: websocketOptions(), maxPending: 256 * 1024 })
  wsUrl = `ws://127.0.0.1:${websocketPort(srv)}/mqtt`
  nc = await connect({ servers: srv.url })
})
afterAll(async () => {
  await nc.close()
  await srv.close()
})

const natsCollector = async (subject: string) => {
  const got: Array<string> = []
  nc.subscribe(subject, { callback: (_e, m) => got.push(`${m.subject}=${m.string()}`) })
  await nc.flush()
  return got
}

const gen = (p: MqttPacket.Packet): Buffer => MqttPacket.generate(p, { protocolVersion: 4 })

/** A hand-driven WebSocket MQTT client: what it sends, frame by frame, and the packets it gets. */
const rawClient = async (url = wsUrl) => {
  const packets: Array<MqttPacket.Packet> = []
  const parser = MqttPacket.parser({ protocolVersion: 4 })
  parser.on("packet", (p) => packets.push(p))
  const ws = new WebSocket(url, "mqtt")
  let closed = false
  ws.on("message", (d: Buffer) => parser.parse(d))
  ws.on("close", () => {
    closed = true
  })
  ws.on("error", () => {})
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve())
    ws.once("error", reject)
  })
  return {
    ws,
    packets,
    isClosed: () => closed,
    waitFor: (cmd: string) => eventually(() => packets.some((p) => p.cmd === cmd), `${cmd} (have ${packets.map((p) => p.cmd)})`)
  }
}

describe("MQTT over WebSocket with the mqtt.js client", () => {
  it("carries QoS 0, 1 and 2 to NATS and TCP MQTT subscribers", async () => {
    const got = await natsCollector("ws.up.*")
    const tcp = await connectMqtt(srv.mqttUrl, { clientId: "tcp-sub" })
    await tcp.client.subscribeAsync("ws/up/#", { qos: 2 })
    const w = await connectMqtt(wsUrl, { clientId: "ws-pub" })
    await w.client.publishAsync("ws/up/q0", "zero", { qos: 0 })
    await w.client.publishAsync("ws/up/q1", "one", { qos: 1 })
    await w.client.publishAsync("ws/up/q2", "two", { qos: 2 })
    await expect.poll(() => [...got].sort(), { timeout: 10_000 }).toEqual(["ws.up.q0=zero", "ws.up.q1=one", "ws.up.q2=two"])
    const r = await tcp.waitFor((m) => m.topic.startsWith("ws/up/"), 3)
    expect(r.map((m) => [m.topic, m.payload, m.qos]).sort()).toEqual([
      ["ws/up/q0", "zero", 0],
      ["ws/up/q1", "one", 1],
      ["ws/up/q2", "two", 2]
    ])
    await w.client.endAsync()
    await tcp.client.endAsync()
  })

  it("delivers NATS and TCP MQTT publishes to a WebSocket subscriber at the granted QoS", async () => {
    const w = await connectMqtt(wsUrl, { clientId: "ws-sub" })
    await w.client.subscribeAsync("ws/down/+", { qos: 2 })
    const tcp = await connectMqtt(srv.mqttUrl, { clientId: "tcp-pub" })
    nc.publish("ws.down.nats", "from nats")
    await tcp.client.publishAsync("ws/down/q1", "tcp one", { qos: 1 })
    await tcp.client.publishAsync("ws/down/q2", "tcp two", { qos: 2 })
    const r = await w.waitFor((m) => m.topic.startsWith("ws/down/"), 3)
    expect(r.map((m) => [m.topic, m.payload, m.qos]).sort()).toEqual([
      ["ws/down/nats", "from nats", 0],
      ["ws/down/q1", "tcp one", 1],
      ["ws/down/q2", "tcp two", 2]
    ])
    await tcp.client.endAsync()
    await w.client.endAsync()
  })

  it("lists WebSocket clients in /connz as MQTT connections and shows the listener in /varz", async () => {
    const w = await connectMqtt(wsUrl, { clientId: "ws-monitored" })
    const open = (await getJson(srv.base, "/connz?mqtt_client=ws-monitored")).json.connections
    expect(open).toHaveLength(1)
    expect(open[0]).toMatchObject({ type: "mqtt", mqtt_client: "ws-monitored", ip: "127.0.0.1" })
    const v = (await getJson(srv.base, "/varz")).json
    expect(v.websocket).toMatchObject({ host: "127.0.0.1", port: websocketPort(srv), no_tls: true })
    await w.client.endAsync()
    await eventually(() => srv.serving.mqtt!.connectedClient("ws-monitored") === undefined, "the client to go")
    const closed = (await getJson(srv.base, "/connz?state=closed&mqtt_client=ws-monitored")).json.connections
    expect(closed[0]).toMatchObject({ type: "mqtt", reason: "Client Closed" })
  })

  it("publishes the will when the WebSocket drops without DISCONNECT [MQTT-3.1.2-8]", async () => {
    const got = await natsCollector("ws.will")
    const w = await connectMqtt(wsUrl, {
      clientId: "ws-will",
      will: { topic: "ws/will", payload: Buffer.from("gone"), qos: 1, retain: false }
    })
    ;(w.client.stream as unknown as { destroy(): void }).destroy()
    await expect.poll(() => got, { timeout: 10_000 }).toEqual(["ws.will=gone"])
    w.client.end(true)
  })
})

describe("MQTT packets and WebSocket frames", () => {
  it("parses a packet split across frames and several packets in one frame", async () => {
    const c = await rawClient()
    const connectPacket = gen({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, clientId: "frames", keepalive: 0 })
    c.ws.send(connectPacket.subarray(0, 5))
    c.ws.send(connectPacket.subarray(5))
    await c.waitFor("connack")
    c.ws.send(Buffer.concat([
      gen({ cmd: "subscribe", messageId: 7, subscriptions: [{ topic: "frames/x", qos: 1 }] }),
      gen({ cmd: "pingreq" })
    ]))
    await c.waitFor("pingresp")
    expect(c.packets.map((p) => p.cmd)).toEqual(["connack", "suback", "pingresp"])
    nc.publish("frames.x", "hi")
    await c.waitFor("publish")
    const p = c.packets.find((x) => x.cmd === "publish") as MqttPacket.IPublishPacket
    // NATS publishes arrive at QoS 0.
    expect([p.topic, p.payload.toString(), p.qos]).toEqual(["frames/x", "hi", 0])
    c.ws.close()
  })

  it("closes a connection that sends a text frame [MQTT-6.0.0-1]", async () => {
    const c = await rawClient()
    c.ws.send(gen({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, clientId: "texty", keepalive: 0 }))
    await c.waitFor("connack")
    c.ws.send("PINGREQ as text")
    await eventually(() => c.isClosed(), "the server to close the WebSocket")
    expect(c.packets.map((p) => p.cmd)).toEqual(["connack"])
  })

  it("cuts off a WebSocket subscriber that stops reading once max_pending is exceeded", async () => {
    const c = await rawClient()
    c.ws.send(gen({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, clientId: "ws-slow", keepalive: 0 }))
    c.ws.send(gen({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "ws/slow", qos: 0 }] }))
    await c.waitFor("suback")
    const cid = srv.serving.mqtt!.connectedClient("ws-slow")!.cid
    c.ws.pause()
    const chunk = Buffer.alloc(64 * 1024, 120)
    // Bounded: the kernel's socket buffers absorb a few MB before max_pending counts.
    for (let i = 0; i < 2000 && srv.serving.mqtt!.connectedClient("ws-slow") !== undefined; i++) {
      nc.publish("ws.slow", chunk)
      if (i % 16 === 15) await nc.flush()
    }
    expect(srv.serving.mqtt!.connectedClient("ws-slow")).toBeUndefined()
    const closed = (await getJson(srv.base, `/connz?state=closed&cid=${cid}`)).json.connections
    expect(closed[0]).toMatchObject({ type: "mqtt", mqtt_client: "ws-slow", reason: "Slow Consumer (Pending Bytes)" })
    c.ws.terminate()
  })
})

interface HttpAnswer {
  readonly status: number
  readonly body: string
  readonly upgraded: boolean
  /** The subprotocol the server chose (101 answers). */
  readonly protocol?: string | undefined
}

const httpGet = (path: string, headers: http.OutgoingHttpHeaders): Promise<HttpAnswer> =>
  new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port: websocketPort(srv), path, headers })
    req.on("response", (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (d: string) => (body += d))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, upgraded: false }))
    })
    req.on("upgrade", (res, socket) => {
      socket.destroy()
      const protocol = res.headers["sec-websocket-protocol"]
      resolve({ status: res.statusCode ?? 0, body: "", upgraded: true, protocol })
    })
    req.on("error", reject)
  })

const upgradeHeaders = (protocol?: string): http.OutgoingHttpHeaders => ({
  Connection: "Upgrade",
  Upgrade: "websocket",
  "Sec-WebSocket-Version": "13",
  "Sec-WebSocket-Key": Buffer.from("0123456789abcdef").toString("base64"),
  ...(protocol === undefined ? {} : { "Sec-WebSocket-Protocol": protocol })
})

describe("WebSocket upgrade refusals", () => {
  it("upgrades /mqtt when mqtt is offered, and answers with it", async () => {
    const a = await httpGet("/mqtt", upgradeHeaders("mqttv3.1, mqtt"))
    expect(a).toMatchObject({ status: 101, upgraded: true, protocol: "mqtt" })
  })

  it("answers 404 for any other path", async () => {
    for (const path of ["/", "/nats", "/mqtt/x"]) {
      const a = await httpGet(path, upgradeHeaders("mqtt"))
      expect(a.status).toBe(404)
      expect(a.body).toContain("/mqtt")
    }
  })

  it("answers 400 when the upgrade does not offer the mqtt subprotocol", async () => {
    for (const protocol of [undefined, "mqttv3.1", "chat"]) {
      const a = await httpGet("/mqtt", upgradeHeaders(protocol))
      expect(a.status).toBe(400)
      expect(a.body).toContain('Sec-WebSocket-Protocol header must offer "mqtt"')
    }
  })

  it("answers 400 to a plain HTTP request for /mqtt", async () => {
    const a = await httpGet("/mqtt", {})
    expect(a.status).toBe(400)
    expect(a.body).toContain("WebSocket upgrade")
  })

  it("refuses an mqtt.js client that connects to another path, and keeps serving", async () => {
    const lost = mqtt.connect(`ws://127.0.0.1:${websocketPort(srv)}/elsewhere`, { clientId: "lost", reconnectPeriod: 0 })
    await new Promise<void>((resolve) => lost.once("close", () => resolve()))
    expect(lost.connected).toBe(false)
    lost.end(true)
    const w = await connectMqtt(wsUrl, { clientId: "after-refusal" })
    expect(w.client.connected).toBe(true)
    await w.client.endAsync()
    await waitClosed(w.client)
  })
})

describe("websocket { handshake_timeout }", () => {
  it("drops a connection that never completes its upgrade, and keeps serving", async () => {
    const s = await startMqttServer({ websocket: websocketOptions({ handshakeTimeoutMs: 200 }) })
    try {
      const socket = net.connect({ host: "127.0.0.1", port: websocketPort(s) })
      socket.on("error", () => {})
      let closed = false
      socket.on("close", () => {
        closed = true
      })
      socket.write("GET /mqtt HTTP/1.1\r\nHost: x\r\n") // and never the end of the headers
      await eventually(() => closed, "the stalled connection to be dropped")
      expect(s.serving.mqtt!.totalConnections).toBe(0)
      const w = await connectMqtt(`ws://127.0.0.1:${websocketPort(s)}/mqtt`, { clientId: "after-stall" })
      expect((await getJson(s.base, "/varz")).json.websocket).toMatchObject({ handshake_timeout: 200_000_000 })
      await w.client.endAsync()
    } finally {
      await s.close()
    }
  })
})

describe("websocket { compression: true }", () => {
  it("negotiates permessage-deflate and carries compressed MQTT both ways", async () => {
    const s = await startMqttServer({ websocket: websocketOptions({ compression: true }) })
    try {
      const url = `ws://127.0.0.1:${websocketPort(s)}/mqtt`
      const c = await rawClient(url)
      expect(c.ws.extensions).toContain("permessage-deflate")
      c.ws.terminate()
      const w = await connectMqtt(url, { clientId: "deflated" })
      await w.client.subscribeAsync("big/x", { qos: 1 })
      const payload = "compressible ".repeat(10_000)
      await w.client.publishAsync("big/x", payload, { qos: 1 })
      const [r] = await w.waitFor((m) => m.topic === "big/x")
      expect(r.payload).toBe(payload)
      await w.client.endAsync()
    } finally {
      await s.close()
    }
  })
})

describe("WebSocket listener shutdown", () => {
  it("ends open WebSocket clients when the server stops, and the stop completes", async () => {
    const s = await startMqttServer({ websocket: websocketOptions() })
    const w = await connectMqtt(`ws://127.0.0.1:${websocketPort(s)}/mqtt`, { clientId: "at-shutdown" })
    await s.close()
    await waitClosed(w.client)
    w.client.end(true)
  })
})

describe("websocket block checks", () => {
  it("refuses a WebSocket listener without TLS unless no_tls is set", () => {
    expect(checkUnsupported(testOptions({ mqtt: mqttOptions(), websocket: websocketOptions({ noTls: false }) })).errors)
      .toEqual(["websocket: tls is required unless no_tls is true"])
  })

  it("leaves the WebSocket listener off, with a warning, when MQTT is disabled and no leaf connections are accepted", async () => {
    const s = await startMonitoredServer({ mqtt: undefined, websocket: websocketOptions() })
    try {
      expect(s.serving.websocket).toBeUndefined()
      expect(s.lines.some((l) => l.includes("[WRN] websocket: MQTT is disabled and leafnodes has no listen, so the WebSocket listener"))).toBe(true)
      expect((await getJson(s.base, "/varz")).json.websocket).toEqual({})
    } finally {
      await s.close()
    }
  })
})
