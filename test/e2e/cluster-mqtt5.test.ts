// MQTT 5.0 facts that cross between Switchyard servers (issue #19): the RETAIN flag of a
// live publication (`Nmqtt-Retain: 1` beside `Nmqtt-Pub`) for subscribers with Retain As
// Published on another node of a route or leaf connection, and PUBACK/PUBREC 0x10 judged
// by the whole cluster's interest. Two (or three) real Switchyard processes; mqtt.js v5
// reports what each client gets, nats.js what a NATS client of the other node sees.
import type mqtt from "mqtt"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { useMqttClients } from "../helpers/cluster-mqtt.js"
import { type ClusterNode, collect, type TestServerNode, useCluster } from "../helpers/cluster-nodes.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { type LeafServer, leafsUp, startLeafServer } from "../helpers/leaf-nodes.js"
import { eventually } from "../helpers/server.js"

const { config, connect } = useMqttClients()
const V5 = "mqtt { port: -1, protocol_versions: [4, 5] }\n"

/** The PUBACK/PUBREC reason codes a client receives. */
const ackCodes = (client: mqtt.MqttClient): Array<number> => {
  const got: Array<number> = []
  client.on("packetreceive", (p) => {
    if (p.cmd === "puback" || p.cmd === "pubrec") got.push(p.reasonCode ?? 0)
  })
  return got
}

/** What a client receives, as `<topic> <payload> retain=<flag>`. */
const received = (c: mqtt.MqttClient): Array<string> => {
  const got: Array<string> = []
  c.on("message", (t, p, packet) => got.push(`${t} ${p} retain=${packet.retain}`))
  return got
}

/**
 * Subscribers on `to` (one with Retain As Published, one without) get what a publisher on
 * `from` sends: a live retained publication at QoS 0 and 1 and a plain one; the RETAIN flag
 * each reports.
 */
const retainAcross = async (from: TestServerNode, to: TestServerNode, tag: string) => {
  const rap = await connect(to, `rap-${tag}`, { protocolVersion: 5 })
  const plain = await connect(to, `norap-${tag}`, { protocolVersion: 5 })
  const [gotRap, gotPlain] = [received(rap), received(plain)]
  await rap.subscribeAsync(`rap/${tag}/#`, { qos: 1, rap: true })
  await plain.subscribeAsync(`rap/${tag}/#`, { qos: 1 })
  const pub = await connect(from, `rap-pub-${tag}`, { protocolVersion: 5 })
  // The subscriptions' interest has reached the publisher's node once a probe gets through.
  await eventuallyAsync(async () => {
    await pub.publishAsync(`rap/${tag}/probe`, "p", { qos: 1 })
    return gotRap.some((m) => m.startsWith(`rap/${tag}/probe`)) && gotPlain.some((m) => m.startsWith(`rap/${tag}/probe`))
  }, `interest of ${to.name} to reach ${from.name}`, 20_000)
  await pub.publishAsync(`rap/${tag}/q0`, "r0", { qos: 0, retain: true })
  await pub.publishAsync(`rap/${tag}/q1`, "r1", { qos: 1, retain: true })
  await pub.publishAsync(`rap/${tag}/live`, "l", { qos: 1 })
  // (probes sent while the interest was on its way may still come in: left out)
  const of = (got: Array<string>) => got.filter((m) => !m.startsWith(`rap/${tag}/probe`)).sort()
  await eventually(() => of(gotRap).length >= 3 && of(gotPlain).length >= 3, `the three messages on ${to.name}`)
  return { gotRap: of(gotRap), gotPlain: of(gotPlain) }
}

describe("MQTT 5.0 across Switchyard routes", () => {
  const cluster = useCluster({
    seed: { name: "V5A", extra: config(V5) },
    nodes: [{ name: "V5B", extra: config(V5) }]
  })
  let a: ClusterNode
  let b: ClusterNode

  beforeAll(() => {
    a = cluster.node("V5A")
    b = cluster.node("V5B")
  })

  it("PUBACK and PUBREC 0x10 only when no server of the cluster has a receiver [MQTT-3.4.2.1] [MQTT-3.5.2.2]", async () => {
    const pub = await connect(a, "nomatch-across", { protocolVersion: 5 })
    const codes = ackCodes(pub)
    await pub.publishAsync("across/none", "x", { qos: 1 })
    await pub.publishAsync("across/none", "x", { qos: 2 })
    expect(codes).toEqual([0x10, 0x10])
    // a NATS subscriber on the other node only
    const seen = collect(await b.client(), "across.there")
    await eventuallyAsync(async () => {
      await pub.publishAsync("across/there", "probe", { qos: 1 })
      return seen.length > 0
    }, "V5B's interest to reach V5A", 20_000)
    codes.length = 0
    await pub.publishAsync("across/there", "y", { qos: 1 })
    await pub.publishAsync("across/there", "y", { qos: 2 })
    expect(codes).toEqual([0, 0])
  })

  it("a live retained publication reaches a Retain As Published subscriber on the other node with RETAIN=1; others get 0", async () => {
    const { gotRap, gotPlain } = await retainAcross(a, b, "route")
    expect(gotRap).toEqual(["rap/route/live l retain=false", "rap/route/q0 r0 retain=true", "rap/route/q1 r1 retain=true"])
    expect(gotPlain).toEqual(["rap/route/live l retain=false", "rap/route/q0 r0 retain=false", "rap/route/q1 r1 retain=false"])
  })

  it("a NATS client of the other node sees the mark as a header (Nmqtt-Retain: 1, beside Nmqtt-Pub), the payload unchanged", async () => {
    const seen = collect(await b.client(), "mark.>")
    const pub = await connect(a, "mark-pub", { protocolVersion: 5 })
    await eventuallyAsync(async () => {
      await pub.publishAsync("mark/probe", "p", { qos: 1 })
      return seen.length > 0
    }, "V5B's interest to reach V5A", 20_000)
    await pub.publishAsync("mark/kept", "on", { qos: 1, retain: true })
    await pub.publishAsync("mark/plain", "off", { qos: 0 })
    await eventually(() => seen.some((m) => m.subject === "mark.plain"), "the plain message on V5B")
    const kept = seen.find((m) => m.subject === "mark.kept")!
    expect(kept.string()).toBe("on")
    expect(kept.headers?.get("Nmqtt-Retain")).toBe("1")
    expect(kept.headers?.get("Nmqtt-Pub")).toBe("1")
    const plain = seen.find((m) => m.subject === "mark.plain")!
    expect(plain.headers).toBeUndefined()
  })
})

describe("MQTT 5.0 Retain As Published across a leaf connection", () => {
  const servers: Array<LeafServer> = []
  afterAll(async () => {
    for (const s of servers.reverse()) await s.stop()
  })

  it("RETAIN=1 from leaf to hub and from hub to leaf", async () => {
    const hub = await startLeafServer("switchyard", "RAPHUB", `leafnodes { listen: 127.0.0.1:{leaf} }\n${V5}`)
    servers.push(hub)
    const edge = await startLeafServer("switchyard", "RAPEDGE", `leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${hub.leafPort}" } ] }\n${V5}`)
    servers.push(edge)
    await leafsUp(hub, 1)
    await leafsUp(edge, 1)
    for (const [from, to, tag] of [[edge, hub, "up"], [hub, edge, "down"]] as const) {
      const { gotRap } = await retainAcross(from, to, tag)
      expect(gotRap).toEqual([`rap/${tag}/live l retain=false`, `rap/${tag}/q0 r0 retain=true`, `rap/${tag}/q1 r1 retain=true`])
    }
  })
})
