// MQTT clients authenticate like NATS clients (user name and password of CONNECT) and
// land in their user's account: CONNACK 4 for wrong credentials, 5 for none [MQTT-3.2.2].
import mqtt from "mqtt"
import { connect } from "nats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { account, userEntry } from "../helpers/server.js"
import { connectMqtt, type MqttServer, startMqttServer } from "../helpers/mqtt.js"

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

describe("MQTT authentication", () => {
  it("refuses a wrong password with CONNACK 4", async () => {
    await expect(attempt({ clientId: "bad", username: "alice", password: "nope" })).rejects.toThrow(/Bad username or password/)
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
