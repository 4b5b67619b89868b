// MQTT sessions in a cluster of Switchyard nodes. A session lives on the node its client
// connects to; a connection with the same client id on another node takes over: the node
// holding the older connection hears it on `$MQTT.owner.<hash>` and closes it (MQTT 5.0:
// DISCONNECT 0x8E, Session taken over; 3.1.1: the connection is closed), as it does for a
// takeover on one node. A QoS 1/2 message from another node for a persistent session of
// this node is stored like one published here, so it survives a restart of the node.
import mqtt from "mqtt"
import { describe, expect, it } from "vitest"
import { mqttUrl, useMqttClients } from "../helpers/cluster-mqtt.js"
import { type ClusterNode, collect, routez, useCluster } from "../helpers/cluster-nodes.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { killProcess, loggedPort, startServerProcess } from "../helpers/process.js"
import { connect as natsConnect } from "@nats-io/transport-node"
import { eventually } from "../helpers/server.js"

const { config, connect, track } = useMqttClients()

/** `to` has heard of `from`'s interest in client id announcements (a route's `$MQTT.owner.*`). */
const ownersHeard = (from: ClusterNode, to: ClusterNode) =>
  eventuallyAsync(async () => {
    const r = (await routez(to, "?subs=1")).routes.find((x) => x.remote_name === from.name)
    return (r?.subscriptions_list ?? []).includes("$MQTT.owner.*")
  }, `${to.name} to hear of ${from.name}'s client ids`, 20_000)

describe("a client id taken on another node", () => {
  const cluster = useCluster({
    seed: { name: "TA", extra: config("mqtt { port: -1, protocol_versions: [4, 5] }\n") },
    nodes: [{ name: "TB", extra: config("mqtt { port: -1, protocol_versions: [4, 5] }\n") }]
  })

  for (const version of [5, 4] as const) {
    it(`closes the older connection there (MQTT ${version === 5 ? "5.0: DISCONNECT 0x8E" : "3.1.1: closed"}), and the newer one stays`, async () => {
      const [ta, tb] = [cluster.node("TA"), cluster.node("TB")]
      const id = `roamer-v${version}`
      const older = await connect(ta, id, { protocolVersion: version, clean: false })
      await ownersHeard(ta, tb)
      const disconnects: Array<number | undefined> = []
      older.on("disconnect", (p) => disconnects.push(p.reasonCode))
      let closed = false
      older.on("close", () => (closed = true))
      const newer = await connect(tb, id, { protocolVersion: version, clean: false })
      await eventually(() => closed, "the older connection on TA to be closed")
      if (version === 5) expect(disconnects).toEqual([0x8e])
      else expect(disconnects).toEqual([])
      expect(ta.log()).toMatch(new RegExp(`"${id}".*The same client id connected to server "TB" \\(N[A-Z0-9]+\\): closing this connection`))
      const gone = (await ta.monitor("/connz?state=closed")).connections.filter((c: any) => c.mqtt_client === id)
      expect(gone.map((c: any) => c.reason)).toEqual(["Duplicate Client ID"])
      // The newer connection works: it publishes and hears itself through its subscription.
      const got: Array<string> = []
      newer.on("message", (t, p) => got.push(`${t} ${p}`))
      await newer.subscribeAsync(`${id}/echo`, { qos: 1 })
      await newer.publishAsync(`${id}/echo`, "still here", { qos: 1 })
      await eventually(() => got.length === 1, "the newer connection's own message")
      expect([newer.connected, got]).toEqual([true, [`${id}/echo still here`]])
    })
  }

  it("leaves a connection alone when a NATS client publishes a fake announcement on its node", async () => {
    const [ta, tb] = [cluster.node("TA"), cluster.node("TB")]
    const c = await connect(ta, "steady")
    await ownersHeard(ta, tb)
    const nats = await ta.client()
    const { ownerSubject } = await import("../../src/server/mqtt/owners.js")
    const body = JSON.stringify({ server_id: "NFAKE", server_name: "FAKE", client_id: "steady", since: Date.now() + 60_000 })
    nats.publish(ownerSubject("steady"), body)
    await nats.flush()
    // A round trip through the MQTT connection after the fake: it was not closed.
    const closed = new Promise<string>((res) => c.once("close", () => res("closed")))
    expect(await Promise.race([c.publishAsync("steady/x", "y", { qos: 1 }).then(() => "acknowledged"), closed])).toBe("acknowledged")
    expect(c.connected).toBe(true)
  })
})

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
    track(back)
    back.on("message", (t, p, packet) => got.push(`${t} ${p} q${packet.qos}`))
    await eventually(() => got.length >= 3, "the three messages after the restart", 20_000)
    expect(got).toEqual(["stock/s1 one q1", "stock/s2 two q1", "stock/s3 three q1"])
  })
})

describe("a server without routes or leaf connections", () => {
  it("announces no client ids (nobody to tell): a NATS subscriber of everything sees none", async () => {
    const p = await startServerProcess(["-a", "127.0.0.1", "-p", "-1", "--mqtt_port", "-1"])
    try {
      const nc = await natsConnect({ servers: `127.0.0.1:${loggedPort(p, /Listening for client connections on [^\s]+:(\d+)/)}` })
      const seen = collect(nc, ">")
      await nc.flush()
      const c = await mqtt.connectAsync(`mqtt://127.0.0.1:${loggedPort(p, /Listening for MQTT clients on [^\s]+:(\d+)/)}`, { clientId: "alone", reconnectPeriod: 0 })
      track(c)
      await c.publishAsync("alone/done", "x", { qos: 1 })
      await eventually(() => seen.some((m) => m.subject === "alone.done"), "the marker")
      expect(seen.map((m) => m.subject)).toEqual(["alone.done"])
      await nc.close()
    } finally {
      await killProcess(p)
    }
  })
})
