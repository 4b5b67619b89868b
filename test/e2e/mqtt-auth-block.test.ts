// The MQTT-only authorization of the `mqtt {}` block, as nats-server has it: a single
// user/password or a token that MQTT clients (TCP and WebSocket) must present instead
// of the server's users, and `mqtt.no_auth_user` binding clients that send no
// credentials to one of the server's users. CONNACK 5 for wrong credentials, 4 for an empty
// user name, 5 for none (MQTT 3.1.1 section 3.2.2.3).
import * as net from "node:net"
import mqtt from "mqtt"
import * as MqttPacket from "mqtt-packet"
import { connect } from "nats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkUnsupported } from "../../src/config/unsupported.js"
import { getJson } from "../helpers/monitor.js"
import {
  connectMqtt,
  eventually,
  mqttOptions,
  type MqttServer,
  startMqttServer,
  websocketOptions,
  websocketPort
} from "../helpers/mqtt.js"
import { account, authorization, testOptions, userEntry } from "../helpers/server.js"

const attempt = (url: string, opts: mqtt.IClientOptions) =>
  mqtt.connectAsync(url, { reconnectPeriod: 0, connectTimeout: 10_000, ...opts })

/** The CONNACK return code for a CONNECT sent by hand (for credentials mqtt.js will not send). */
const rawConnack = async (port: number, connect: Partial<MqttPacket.IConnectPacket>): Promise<number | undefined> => {
  const parser = MqttPacket.parser({ protocolVersion: 4 })
  let code: number | undefined
  parser.on("packet", (p) => {
    if (p.cmd === "connack") code = p.returnCode
  })
  const socket = net.connect({ host: "127.0.0.1", port })
  socket.on("data", (d) => parser.parse(d))
  socket.on("error", () => {})
  socket.write(MqttPacket.generate({
    cmd: "connect",
    protocolId: "MQTT",
    protocolVersion: 4,
    clean: true,
    clientId: "raw",
    keepalive: 0,
    ...connect
  } as MqttPacket.IConnectPacket))
  await eventually(() => code !== undefined, "CONNACK")
  socket.destroy()
  return code
}

describe("mqtt { authorization { user, password } } overrides the server's users for MQTT", () => {
  let srv: MqttServer
  beforeAll(async () => {
    srv = await startMqttServer({
      accounts: [account("A", [userEntry("alice", "secret-a")])],
      mqtt: mqttOptions({ authorization: authorization({ user: "device", password: "dev-pass" }) }),
      websocket: websocketOptions()
    })
  })
  afterAll(async () => {
    await srv.close()
  })

  it("accepts the MQTT user, in the global account", async () => {
    const nc = await connect({ servers: srv.url, user: "alice", pass: "secret-a" })
    await nc.close()
    const m = await connectMqtt(srv.mqttUrl, { clientId: "dev-1", username: "device", password: "dev-pass" })
    const conn = (await getJson(srv.base, "/connz?mqtt_client=dev-1&auth=true")).json.connections[0]
    expect(conn).toMatchObject({ authorized_user: "device", account: "$G" })
    await m.client.subscribeAsync("dev/x", { qos: 1 })
    await m.client.publishAsync("dev/x", "hello", { qos: 1 })
    await m.waitFor((r) => r.topic === "dev/x")
    await m.client.endAsync()
  })

  it("refuses the server's own users and a wrong password with CONNACK 5", async () => {
    await expect(attempt(srv.mqttUrl, { clientId: "alice-mqtt", username: "alice", password: "secret-a" }))
      .rejects.toThrow(/Not authorized/)
    await expect(attempt(srv.mqttUrl, { clientId: "dev-bad", username: "device", password: "nope" }))
      .rejects.toThrow(/Not authorized/)
  })

  it("refuses a client without credentials with CONNACK 5", async () => {
    await expect(attempt(srv.mqttUrl, { clientId: "anon" })).rejects.toThrow(/Not authorized/)
  })

  it("refuses an empty user name as malformed with CONNACK 4", async () => {
    expect(await rawConnack(srv.mqttPort, { username: "", password: Buffer.from("dev-pass") })).toBe(4)
  })

  it("applies to MQTT over WebSocket too", async () => {
    const url = `ws://127.0.0.1:${websocketPort(srv)}/mqtt`
    await expect(attempt(url, { clientId: "ws-anon" })).rejects.toThrow(/Not authorized/)
    const m = await connectMqtt(url, { clientId: "ws-dev", username: "device", password: "dev-pass" })
    await m.client.endAsync()
  })
})

describe("mqtt { authorization { token } }", () => {
  let srv: MqttServer
  beforeAll(async () => {
    srv = await startMqttServer({ mqtt: mqttOptions({ authorization: authorization({ token: "mqtt-token" }) }) })
  })
  afterAll(async () => {
    await srv.close()
  })

  // MQTT 3.1.1 carries a password only with a user name [MQTT-3.1.2-22]: the name is not checked.
  it("accepts the token as the CONNECT password, whatever the user name", async () => {
    const a = await connectMqtt(srv.mqttUrl, { clientId: "tok-1", username: "token", password: "mqtt-token" })
    const b = await connectMqtt(srv.mqttUrl, { clientId: "tok-2", username: "anyone", password: "mqtt-token" })
    await a.client.endAsync()
    await b.client.endAsync()
  })

  it("refuses a wrong token and none with CONNACK 5", async () => {
    await expect(attempt(srv.mqttUrl, { clientId: "tok-bad", username: "anyone", password: "wrong" }))
      .rejects.toThrow(/Not authorized/)
    await expect(attempt(srv.mqttUrl, { clientId: "tok-none" })).rejects.toThrow(/Not authorized/)
  })

  it("leaves NATS clients unauthenticated: the override is for MQTT only", async () => {
    const nc = await connect({ servers: srv.url })
    await nc.flush()
    await nc.close()
  })
})

describe("mqtt { no_auth_user }", () => {
  let srv: MqttServer
  beforeAll(async () => {
    srv = await startMqttServer({
      accounts: [account("A", [userEntry("alice", "secret-a")]), account("B", [userEntry("bob", "secret-b")])],
      mqtt: mqttOptions({ noAuthUser: "bob" })
    })
  })
  afterAll(async () => {
    await srv.close()
  })

  it("binds an MQTT client without credentials to that user and its account", async () => {
    const ncB = await connect({ servers: srv.url, user: "bob", pass: "secret-b" })
    const got: Array<string> = []
    ncB.subscribe("anon.x", { callback: (_e, m) => got.push(m.string()) })
    await ncB.flush()
    const m = await connectMqtt(srv.mqttUrl, { clientId: "anon-device" })
    await m.client.publishAsync("anon/x", "as bob", { qos: 1 })
    await expect.poll(() => got, { timeout: 10_000 }).toEqual(["as bob"])
    const conn = (await getJson(srv.base, "/connz?mqtt_client=anon-device&auth=true")).json.connections[0]
    expect(conn).toMatchObject({ authorized_user: "bob", account: "B" })
    await m.client.endAsync()
    await ncB.close()
  })

  it("still checks clients that do send credentials", async () => {
    const m = await connectMqtt(srv.mqttUrl, { clientId: "alice-device", username: "alice", password: "secret-a" })
    await m.client.endAsync()
    await expect(attempt(srv.mqttUrl, { clientId: "alice-bad", username: "alice", password: "nope" }))
      .rejects.toThrow(/Not authorized/)
  })

  it("does not apply to NATS clients", async () => {
    await expect(connect({ servers: srv.url, reconnect: false })).rejects.toThrow(/Authorization Violation/)
  })
})

describe("what the mqtt authorization block may hold", () => {
  it("refuses users and permissions there, which only the top-level blocks can carry", () => {
    const o = testOptions({
      mqtt: mqttOptions({ authorization: authorization({ users: [userEntry("x", "y")] }) })
    })
    expect(checkUnsupported(o).errors).toEqual([
      "mqtt.authorization: only user, password, token and timeout are allowed here (users and permissions belong in the top-level authorization or accounts)"
    ])
    expect(checkUnsupported(testOptions({ mqtt: mqttOptions({ authorization: authorization({ token: "t" }) }) })).errors).toEqual([])
  })
})

describe("the connect timeout", () => {
  it("closes an MQTT connection that sends no CONNECT within mqtt.authorization.timeout (reason Connect Timeout)", async () => {
    const s = await startMqttServer({ mqtt: mqttOptions({ authorization: authorization({ token: "t", timeoutMs: 300 }) }) })
    try {
      const sock = net.connect({ host: "127.0.0.1", port: s.mqttPort })
      sock.on("error", () => {})
      await new Promise((r) => sock.once("close", r))
      const closed = (await getJson(s.base, "/connz?state=closed")).json.connections as Array<{ type?: string; reason: string }>
      expect(closed.filter((c) => c.type === "mqtt").map((c) => c.reason)).toEqual(["Connect Timeout"])
    } finally {
      await s.close()
    }
  })
})
