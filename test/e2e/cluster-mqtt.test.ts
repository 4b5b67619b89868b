// MQTT clients on two Switchyard nodes of a cluster: their subscriptions are announced on
// the route like any other, so messages published on the other node, by NATS or MQTT
// clients, reach them. An MQTT publication's QoS travels with it in the `Nmqtt-Pub`
// header (as nats-server marks messages that arrived over MQTT), so a QoS 1 message
// reaches MQTT subscribers of the other node at QoS 1. Sessions stay on the node the
// client connects to (takeovers across nodes and stored copies of messages from other
// nodes: cluster-mqtt-sessions.test.ts).
import mqtt from "mqtt"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ClusterNode, useCluster } from "../helpers/cluster-nodes.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { loggedPort } from "../helpers/process.js"
import { eventually } from "../helpers/server.js"

let a: ClusterNode
let b: ClusterNode
const mqttPort = (n: ClusterNode) => loggedPort({ log: () => n.log() } as any, /Listening for MQTT clients on [^\s]+:(\d+)/)
const clients: Array<mqtt.MqttClient> = []

const mqttClient = async (n: ClusterNode, id: string): Promise<mqtt.MqttClient> => {
  const c = await mqtt.connectAsync(`mqtt://127.0.0.1:${mqttPort(n)}`, { clientId: id, reconnectPeriod: 0 })
  clients.push(c)
  return c
}

const cluster = useCluster({ seed: { name: "MA", extra: ["--mqtt_port", "-1"] }, nodes: [{ name: "MB", extra: ["--mqtt_port", "-1"] }] })

beforeAll(() => {
  a = cluster.node("MA")
  b = cluster.node("MB")
})

afterAll(async () => {
  await Promise.all(clients.map((c) => c.endAsync().catch(() => {})))
})

describe("MQTT across a route", () => {
  it("delivers NATS and MQTT publications of one node to MQTT subscribers of the other, each at its QoS", async () => {
    const sub = await mqttClient(b, "sub-on-b")
    const got: Array<string> = []
    sub.on("message", (topic, payload, packet) => got.push(`${topic} ${payload.toString()} q${packet.qos}`))
    await sub.subscribeAsync("sensors/+/temp", { qos: 1 })
    const nats = await a.client()
    // The MQTT subscription has reached A once a probe published there arrives.
    await eventuallyAsync(async () => {
      nats.publish("sensors.k0.temp", "probe")
      await nats.flush()
      return got.length > 0
    }, "the MQTT subscription's interest to reach A", 20_000)
    nats.publish("sensors.k1.temp", "21.5")
    const pub = await mqttClient(a, "pub-on-a")
    await pub.publishAsync("sensors/k2/temp", "22.0", { qos: 1 })
    await pub.publishAsync("sensors/k3/temp", "23.0", { qos: 0 })
    await nats.flush()
    const real = () => got.filter((g) => !g.includes(" probe "))
    await eventually(() => real().length >= 3, "three messages on B's MQTT subscriber")
    // What mqtt.js itself reports: NATS is QoS 0, the MQTT publications keep theirs.
    expect(real().sort()).toEqual(["sensors/k1/temp 21.5 q0", "sensors/k2/temp 22.0 q1", "sensors/k3/temp 23.0 q0"])
  })

  it("tells NATS subscribers of the other node the QoS in Nmqtt-Pub, as nats-server does", async () => {
    const natsB = await b.client()
    const got: Array<string> = []
    const sub = natsB.subscribe("meters.>", {
      callback: (_e, m) => void got.push(`${m.subject} ${m.string()} ${m.headers?.get("Nmqtt-Pub") ?? "-"}`)
    })
    await natsB.flush()
    const pub = await mqttClient(a, "meter-pub-on-a")
    await eventuallyAsync(async () => {
      await pub.publishAsync("meters/probe", "p", { qos: 0 })
      return got.length > 0
    }, "B's NATS subscription to reach A", 20_000)
    await pub.publishAsync("meters/m1", "one", { qos: 1 })
    await pub.publishAsync("meters/m2", "two", { qos: 2 })
    await eventually(() => got.filter((g) => !g.startsWith("meters.probe")).length >= 2, "two metered messages on B")
    sub.unsubscribe()
    expect(got.filter((g) => !g.startsWith("meters.probe"))).toEqual(["meters.m1 one 1", "meters.m2 two 2"])
    // QoS 0 crosses without a header block.
    expect(got.find((g) => g.startsWith("meters.probe"))).toBe("meters.probe p -")
  })
})
