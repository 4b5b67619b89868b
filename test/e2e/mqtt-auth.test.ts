// MQTT clients authenticate like NATS clients (user name and password of CONNECT) and
// land in their user's account. Wrong credentials and none alike get CONNACK 5 (not
// authorized), as nats-server and mosquitto answer; 4 only for a malformed (empty) user
// name [MQTT-3.2.2]. Each refusal is logged at [WRN], as on the NATS side.
import * as net from "node:net"
import mqtt from "mqtt"
import { connect } from "nats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { account, eventually, userEntry } from "../helpers/server.js"
import { connectMqtt, type MqttServer, startMqttServer } from "../helpers/mqtt.js"
import { frame, str } from "../helpers/mqtt-wire.js"

let srv: MqttServer

beforeAll(async () => {
  srv = await startMqttServer({
    accounts: [account("A", [userEntry("alice", "secret-a")]), account("B", [userEntry("bob", "secret-b")])]
  })
})
afterAll(async () => {
  await srv.close()
})

const attempt = (opts: mqtt.IClientOptions) =>
  mqtt.connectAsync(srv.mqttUrl, { reconnectPeriod: 0, connectTimeout: 10_000, ...opts })

/** Everything the server sends in answer to a hand-made CONNECT, once it closes the connection. */
const rawConnect = async (clientId: string, username?: string, password?: string): Promise<Buffer> => {
  const flags = 0x02 | (username !== undefined ? 0x80 : 0) | (password !== undefined ? 0x40 : 0)
  const body = Buffer.concat([
    str("MQTT"), Buffer.from([4, flags, 0, 30]), str(clientId),
    ...(username !== undefined ? [str(username)] : []),
    ...(password !== undefined ? [str(password)] : [])
  ])
  const socket = net.connect({ host: "127.0.0.1", port: srv.mqttPort })
  const got: Array<Buffer> = []
  let closed = false
  socket.on("data", (d) => got.push(d))
  socket.on("close", () => (closed = true))
  socket.on("error", () => {})
  socket.write(frame(0x10, body))
  await eventually(() => closed, "the server to close the refused connection")
  return Buffer.concat(got)
}

const refusalLogged = (clientId: string, who: string, code: number) =>
  eventually(
    () => srv.lines.some((l) => l.includes("[WRN]") && l.includes(`"${clientId}" - ${who} authentication failed (CONNACK ${code})`)),
    `the [WRN] line for ${clientId}`
  )

describe("MQTT authentication", () => {
  it("refuses a wrong password with CONNACK 5, as nats-server and mosquitto do", async () => {
    await expect(attempt({ clientId: "bad", username: "alice", password: "nope" })).rejects.toThrow(/Not authorized/)
    await refusalLogged("bad", 'User "alice"', 5)
  })

  it("answers a wrong password, an unknown user and no credentials with exactly CONNACK 5, then closes", async () => {
    const connack5 = Buffer.from([0x20, 0x02, 0x00, 0x05])
    expect(await rawConnect("raw-wrong", "alice", "nope")).toEqual(connack5)
    expect(await rawConnect("raw-unknown", "mallory", "secret-a")).toEqual(connack5)
    expect(await rawConnect("raw-user-only", "alice")).toEqual(connack5)
    expect(await rawConnect("raw-anon")).toEqual(connack5)
    await refusalLogged("raw-unknown", 'User "mallory"', 5)
    await refusalLogged("raw-anon", "Client", 5)
    // The password itself is never logged.
    expect(srv.lines.some((l) => l.includes("nope"))).toBe(false)
  })

  it("answers an empty user name (malformed) with exactly CONNACK 4", async () => {
    expect(await rawConnect("raw-empty", "", "secret-a")).toEqual(Buffer.from([0x20, 0x02, 0x00, 0x04]))
    await refusalLogged("raw-empty", 'User ""', 4)
  })

  it("closes a CONNECT with a password but no user name without CONNACK [MQTT-3.1.2-22]", async () => {
    expect(await rawConnect("raw-pw-only", undefined, "secret-a")).toEqual(Buffer.alloc(0))
  })

  it("refuses a client without credentials with CONNACK 5", async () => {
    await expect(attempt({ clientId: "anon" })).rejects.toThrow(/Not authorized/)
  })

  it("binds an authenticated client to its user's account", async () => {
    const ncA = await connect({ servers: srv.url, user: "alice", pass: "secret-a" })
    const ncB = await connect({ servers: srv.url, user: "bob", pass: "secret-b" })
    const gotA: Array<string> = []
    const gotB: Array<string> = []
    ncA.subscribe("acct.x", { callback: (_e, m) => gotA.push(m.string()) })
    ncB.subscribe("acct.x", { callback: (_e, m) => gotB.push(m.string()) })
    await ncA.flush()
    await ncB.flush()
    const m = await connectMqtt(srv.mqttUrl, { clientId: "alice-device", username: "alice", password: "secret-a" })
    await m.client.publishAsync("acct/x", "for A", { qos: 1 })
    await expect.poll(() => gotA, { timeout: 10_000 }).toEqual(["for A"])
    // Bob's account is isolated; a round trip on B shows nothing arrived there.
    await ncB.flush()
    expect(gotB).toEqual([])
    await m.client.endAsync()
    await ncA.close()
    await ncB.close()
  })

  it("keeps retained messages and client ids per account", async () => {
    const a1 = await connectMqtt(srv.mqttUrl, { clientId: "shared-id", username: "alice", password: "secret-a" })
    await a1.client.publishAsync("ret/acct", "A's value", { qos: 1, retain: true })
    // The same client id in another account is a different session: no takeover.
    const b1 = await connectMqtt(srv.mqttUrl, { clientId: "shared-id", username: "bob", password: "secret-b" })
    await b1.client.subscribeAsync(["ret/acct", "ret/end"], { qos: 1 })
    await b1.client.publishAsync("ret/end", "end", { qos: 1 })
    await b1.waitFor((r) => r.topic === "ret/end")
    expect(b1.received.map((r) => r.topic)).toEqual(["ret/end"])
    expect(a1.client.connected).toBe(true)
    const a2 = await connectMqtt(srv.mqttUrl, { clientId: "alice-2", username: "alice", password: "secret-a" })
    await a2.client.subscribeAsync("ret/acct", { qos: 1 })
    const [r] = await a2.waitFor((m) => m.topic === "ret/acct")
    expect(r).toMatchObject({ payload: "A's value", retain: true })
    await a1.client.endAsync()
    await a2.client.endAsync()
    await b1.client.endAsync()
  })
})
