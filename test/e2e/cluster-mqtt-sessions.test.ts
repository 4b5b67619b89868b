// MQTT sessions in a cluster of Switchyard nodes. A session lives on the node its client
// connects to. A QoS 1/2 message from another node for a persistent session of
// this node is stored like one published here, so it survives a restart of the node.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import mqtt from "mqtt"
import { afterAll, describe, expect, it } from "vitest"
import { type ClusterNode, collect, useCluster } from "../helpers/cluster-nodes.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { loggedPort } from "../helpers/process.js"
import { eventually } from "../helpers/server.js"

const dirs: Array<string> = []
const config = (text: string): Array<string> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cluster-mqtt-"))
  dirs.push(dir)
  const file = path.join(dir, "server.conf")
  fs.writeFileSync(file, text.replaceAll("{dir}", dir))
  return ["-c", file]
}
const clients: Array<mqtt.MqttClient> = []
afterAll(async () => {
  await Promise.all(clients.map((c) => c.endAsync(true).catch(() => {})))
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
})

const mqttUrl = (n: ClusterNode) => `mqtt://127.0.0.1:${loggedPort({ log: () => n.log() } as any, /Listening for MQTT clients on [^\s]+:(\d+)/)}`

const connect = async (n: ClusterNode, clientId: string, opts: mqtt.IClientOptions = {}): Promise<mqtt.MqttClient> => {
  const c = await mqtt.connectAsync(mqttUrl(n), { clientId, reconnectPeriod: 0, ...opts })
  clients.push(c)
  return c
}

describe("a persistent session's QoS 1/2 messages from another node", () => {
  const cluster = useCluster({
    seed: { name: "PA", extra: ["--mqtt_port", "-1"] },
    nodes: [{ name: "PB", extra: config('mqtt { port: -1 }\njetstream { store_dir: "{dir}/js" }\n') }]
  })

  it("are stored like local ones: they reach the client after a restart of its node", async () => {
    const [pa, pb] = [cluster.node("PA"), cluster.node("PB")]
    // The session on PB, subscribed and away.
    const keeper = await connect(pb, "keeper", { clean: false })
    await keeper.subscribeAsync("stock/#", { qos: 1 })
    await keeper.endAsync()
    // A NATS subscriber on PB sees what reaches PB, so the session has it too.
    const natsB = await pb.client()
    const seen = collect(natsB, "stock.>")
    await natsB.flush()
    const pub = await connect(pa, "stock-pub")
    await eventuallyAsync(async () => {
      await pub.publishAsync("stock/probe", "p", { qos: 0 })
      return seen.length > 0
    }, "PB's interest to reach PA", 20_000)
    await pub.publishAsync("stock/s1", "one", { qos: 1 })
    await pub.publishAsync("stock/s2", "two", { qos: 2 })
    await eventually(() => seen.some((m) => m.subject === "stock.s2"), "both messages on PB")
    // A QoS 1 message published on PB for the same session is acknowledged once it is
    // stored and committed, and the commit covers every write before it: then PB is killed.
    const local = await connect(pb, "stock-local")
    await local.publishAsync("stock/s3", "three", { qos: 1 })
    await local.endAsync()
    await pb.restart()
    const got: Array<string> = []
    const back = mqtt.connect(mqttUrl(pb), { clientId: "keeper", clean: false, reconnectPeriod: 0 })
    clients.push(back)
    back.on("message", (t, p, packet) => got.push(`${t} ${p} q${packet.qos}`))
    await eventually(() => got.length >= 3, "the three messages after the restart", 20_000)
    expect(got).toEqual(["stock/s1 one q1", "stock/s2 two q1", "stock/s3 three q1"])
  })
})
