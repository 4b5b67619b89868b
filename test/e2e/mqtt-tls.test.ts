// TLS on the MQTT listener (`mqtt { tls {} }`, mqtts://) and on the WebSocket one
// (wss://), TLS from the first byte: the real mqtt.js client with certificates made for
// the test; `verify` demanding a client certificate signed by the CA; failed and
// timed-out handshakes closed as 'TLS Handshake Failure', counted, and the listener
// unharmed; the TLS fields of /connz.
import { readFileSync } from "node:fs"
import * as net from "node:net"
import mqtt from "mqtt"
import * as MqttPacket from "mqtt-packet"
import { connect } from "nats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TlsOptions } from "../../src/config/options.js"
import { makeTestCerts, serverTls, type TestCerts } from "../helpers/certs.js"
import { getJson } from "../helpers/monitor.js"
import { connectMqtt, eventually, mqttOptions, type MqttServer, startMqttServer, websocketOptions, websocketPort } from "../helpers/mqtt.js"

let certs: TestCerts
beforeAll(() => {
  certs = makeTestCerts()
})
afterAll(() => certs.remove())

const tlsBlock = (over: Partial<TlsOptions> = {}): TlsOptions => serverTls(certs, over)

const mqttsUrl = (srv: MqttServer) => `mqtts://127.0.0.1:${srv.mqttPort}`
const ca = () => readFileSync(certs.caFile)
const clientCert = () => ({ cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) })
const strangerCert = () => ({ cert: readFileSync(certs.strangerCert), key: readFileSync(certs.strangerKey) })

/** Connect once and report whether the server said CONNACK 0 or the connection ended first. */
const attempt = (url: string, opts: mqtt.IClientOptions): Promise<"connected" | "refused"> =>
  new Promise((resolve) => {
    const c = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 10_000, ...opts })
    c.on("error", () => {})
    c.once("connect", () => {
      c.end(true)
      resolve("connected")
    })
    c.once("close", () => {
      c.end(true)
      resolve("refused")
    })
  })

const closedTlsFailures = async (srv: MqttServer) =>
  ((await getJson(srv.base, "/connz?state=closed")).json.connections as Array<{ type: string; reason: string }>)
    .filter((c) => c.reason === "TLS Handshake Failure")

describe("mqtts:// on the MQTT listener", () => {
  let srv: MqttServer
  beforeAll(async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ tls: tlsBlock() }) })
  })
  afterAll(async () => {
    await srv.close()
  })

  it("serves the mqtt.js client over TLS, both ways with NATS, and shows TLS in /connz", async () => {
    const nc = await connect({ servers: srv.url })
    const got: Array<string> = []
    nc.subscribe("secure.up", { callback: (_e, m) => got.push(m.string()) })
    await nc.flush()
    const m = await connectMqtt(mqttsUrl(srv), { clientId: "tls-client", ca: ca() })
    await m.client.subscribeAsync("secure/down", { qos: 1 })
    await m.client.publishAsync("secure/up", "over tls", { qos: 1 })
    await expect.poll(() => got, { timeout: 10_000 }).toEqual(["over tls"])
    nc.publish("secure.down", "back over tls")
    await m.waitFor((r) => r.topic === "secure/down" && r.payload === "back over tls")
    const conns = (await getJson(srv.base, "/connz?mqtt_client=tls-client")).json.connections
    expect(conns[0].tls_version).toMatch(/^1\.[23]$/)
    expect(conns[0].tls_cipher_suite).toMatch(/^TLS_/)
    await m.client.endAsync()
    await nc.close()
  })

  it("closes a plain-text MQTT client as 'TLS Handshake Failure', counts it, and keeps serving", async () => {
    const before = srv.serving.server.tlsHandshakeFailures
    expect(await attempt(`mqtt://127.0.0.1:${srv.mqttPort}`, { clientId: "plain" })).toBe("refused")
    await eventually(() => srv.serving.server.tlsHandshakeFailures === before + 1, "the failure to be counted")
    const failures = await closedTlsFailures(srv)
    expect(failures.length).toBeGreaterThanOrEqual(1)
    expect(failures[0]).toMatchObject({ type: "mqtt" })
    expect(srv.lines.some((l) => l.includes("TLS handshake error"))).toBe(true)
    const m = await connectMqtt(mqttsUrl(srv), { clientId: "after-failure", ca: ca() })
    await m.client.endAsync()
  })

  it("refuses a client that does not trust the server's certificate, without harm to the listener", async () => {
    expect(await attempt(mqttsUrl(srv), { clientId: "untrusting", ca: readFileSync(certs.strangerCert) })).toBe("refused")
    const m = await connectMqtt(mqttsUrl(srv), { clientId: "trusting", ca: ca() })
    await m.client.endAsync()
  })
})

describe("mqtt { tls { verify: true } }", () => {
  let srv: MqttServer
  beforeAll(async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ tls: tlsBlock({ verify: true }) }) })
  })
  afterAll(async () => {
    await srv.close()
  })

  it("accepts a client certificate signed by the CA", async () => {
    const m = await connectMqtt(mqttsUrl(srv), { clientId: "with-cert", ca: ca(), ...clientCert() })
    await m.client.subscribeAsync("verified/x", { qos: 1 })
    await m.client.publishAsync("verified/x", "hello", { qos: 1 })
    await m.waitFor((r) => r.topic === "verified/x")
    await m.client.endAsync()
  })

  it("refuses a client without a certificate and one signed by another CA, and counts both", async () => {
    const before = srv.serving.server.tlsHandshakeFailures
    expect(await attempt(mqttsUrl(srv), { clientId: "no-cert", ca: ca() })).toBe("refused")
    expect(await attempt(mqttsUrl(srv), { clientId: "stranger", ca: ca(), ...strangerCert() })).toBe("refused")
    await eventually(() => srv.serving.server.tlsHandshakeFailures === before + 2, "both failures to be counted")
    expect(srv.serving.mqtt!.connectedClient("no-cert")).toBeUndefined()
    expect(srv.serving.mqtt!.connectedClient("stranger")).toBeUndefined()
    const m = await connectMqtt(mqttsUrl(srv), { clientId: "still-serving", ca: ca(), ...clientCert() })
    await m.client.endAsync()
  })
})

describe("mqtt { tls { timeout } }", () => {
  it("closes a connection that never starts its handshake", async () => {
    const srv = await startMqttServer({ mqtt: mqttOptions({ tls: tlsBlock({ timeoutMs: 250 }) }) })
    try {
      const socket = net.connect({ host: "127.0.0.1", port: srv.mqttPort })
      socket.on("error", () => {})
      let closed = false
      socket.on("close", () => {
        closed = true
      })
      await eventually(() => closed, "the silent connection to be closed")
      await eventually(() => srv.serving.server.tlsHandshakeFailures === 1, "the failure to be counted")
      // The MQTT bridge never saw it.
      expect(srv.serving.mqtt!.totalConnections).toBe(0)
    } finally {
      await srv.close()
    }
  })

  it("never hands a half-open TLS connection to the MQTT parser", async () => {
    const srv = await startMqttServer({ mqtt: mqttOptions({ tls: tlsBlock() }) })
    try {
      // A clear-text CONNECT on the TLS port is a broken handshake, not an MQTT packet.
      const socket = net.connect({ host: "127.0.0.1", port: srv.mqttPort })
      socket.on("error", () => {})
      let closed = false
      socket.on("close", () => {
        closed = true
      })
      socket.write(MqttPacket.generate({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, clientId: "raw", keepalive: 0 }))
      await eventually(() => closed, "the connection to be closed")
      expect(srv.serving.mqtt!.totalConnections).toBe(0)
    } finally {
      await srv.close()
    }
  })
})

describe("wss:// on the WebSocket listener", () => {
  let srv: MqttServer
  let url: string
  beforeAll(async () => {
    srv = await startMqttServer({ websocket: websocketOptions({ noTls: false, tls: tlsBlock({ verify: true }) }) })
    url = `wss://127.0.0.1:${websocketPort(srv)}/mqtt`
  })
  afterAll(async () => {
    await srv.close()
  })

  it("serves the mqtt.js client with a client certificate over wss", async () => {
    const m = await connectMqtt(url, { clientId: "wss-client", ca: ca(), ...clientCert() })
    await m.client.subscribeAsync("wss/x", { qos: 2 })
    await m.client.publishAsync("wss/x", "over wss", { qos: 2 })
    const [r] = await m.waitFor((x) => x.topic === "wss/x")
    expect(r).toMatchObject({ payload: "over wss", qos: 2 })
    const conns = (await getJson(srv.base, "/connz?mqtt_client=wss-client")).json.connections
    expect(conns[0].tls_version).toMatch(/^1\.[23]$/)
    expect((await getJson(srv.base, "/varz")).json.websocket).toMatchObject({ port: websocketPort(srv) })
    await m.client.endAsync()
  })

  it("refuses a wss client without a certificate and counts the failed handshake", async () => {
    const before = srv.serving.server.tlsHandshakeFailures
    expect(await attempt(url, { clientId: "wss-no-cert", ca: ca() })).toBe("refused")
    await eventually(() => srv.serving.server.tlsHandshakeFailures === before + 1, "the failure to be counted")
    const failures = await closedTlsFailures(srv)
    expect(failures.length).toBeGreaterThanOrEqual(1)
  })
})
