// MQTT in the monitoring endpoints: /connz lists MQTT connections (type mqtt,
// mqtt_client, filterable by mqtt_client) and /varz shows the mqtt block.
import { connect } from "nats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { getJson } from "../helpers/monitor.js"
import { connectMqtt, type MqttServer, startMqttServer } from "../helpers/mqtt.js"

let srv: MqttServer

beforeAll(async () => {
  srv = await startMqttServer()
})
afterAll(async () => {
  await srv.close()
})

// getJson also validates each answer against its checked-in JSON Schema.
const json = async (path: string) => (await getJson(srv.base, path)).json

describe("MQTT in monitoring", () => {
  it("/connz lists MQTT connections with type mqtt and mqtt_client, and filters on it", async () => {
    const nc = await connect({ servers: srv.url })
    const a = await connectMqtt(srv.mqttUrl, { clientId: "mon-a" })
    const b = await connectMqtt(srv.mqttUrl, { clientId: "mon-b" })
    await a.client.subscribeAsync("mon/#", { qos: 1 })
    const all = (await json("/connz?subs=true")).connections as Array<Record<string, unknown>>
    expect(all.filter((c) => c.type === "mqtt").map((c) => c.mqtt_client).sort()).toEqual(["mon-a", "mon-b"])
    expect(all.filter((c) => c.type === "nats")).toHaveLength(1)
    const only = (await json("/connz?mqtt_client=mon-a&subs=true")).connections
    expect(only).toHaveLength(1)
    expect(only[0]).toMatchObject({ type: "mqtt", mqtt_client: "mon-a" })
    expect([...only[0].subscriptions_list].sort()).toEqual(["mon", "mon.>"])
    const cids = all.map((c) => c.cid)
    expect(new Set(cids).size).toBe(cids.length)
    await a.client.endAsync()
    await b.client.endAsync()
    await nc.close()
  })

  it("/varz shows the mqtt block with the bound port", async () => {
    const v = await json("/varz")
    expect(v.mqtt).toMatchObject({ host: "127.0.0.1", port: srv.mqttPort, ack_wait: expect.anything(), max_ack_pending: 1024 })
  })

  // Regression: MQTT clients were missing from /varz connections and total_connections.
  it("/varz counts MQTT connections with the NATS ones", async () => {
    const before = await json("/varz")
    const m = await connectMqtt(srv.mqttUrl, { clientId: "count-me" })
    const during = await json("/varz")
    expect(during.connections).toBe(before.connections + 1)
    expect(during.total_connections).toBe(before.total_connections + 1)
    await m.client.endAsync()
  })
})
