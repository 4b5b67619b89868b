// MQTT retained messages cluster-wide among Switchyard nodes (src/server/mqtt/retained-sync.ts):
// a retained message kept or removed on one node is announced to the others on the route
// (`$MQTT.rmsg.put`, outside the router), a node that comes up catches up with its peers'
// retained sets, concurrent writes converge (last writer by (ts, server id)), no client can
// forge an announcement, and no client (nor a nats-server peer's) ever sees one. What each
// node holds is read the way a user would: mqtt.js subscribing on that node and reporting
// the retained messages it gets.
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream"
import type { NatsConnection } from "@nats-io/transport-node"
import type mqtt from "mqtt"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { useMqttClients } from "../helpers/cluster-mqtt.js"
import { type ClusterNode, collect, routeUrl, startNode, type TestServerNode, useCluster } from "../helpers/cluster-nodes.js"
import { type LeafServer, leafsUp, startLeafServer } from "../helpers/leaf-nodes.js"
import { freePort } from "../clients/run.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { eventually } from "../helpers/server.js"
import { encodeAnnouncement } from "../../src/core/mqtt/retained-sync.js"

const { config, connect } = useMqttClients()

const retain = async (n: TestServerNode, topic: string, payload: string): Promise<void> => {
  const c = await connect(n, `setter-${n.name}-${seq++}`)
  await c.publishAsync(topic, payload, { qos: 1, retain: true })
  await c.endAsync()
}

let seq = 0
/**
 * The retained message `n` holds for `topic` as mqtt.js reports it (undefined: none). A
 * second subscription, to the node's own marker (retained there before), follows: its
 * retained message comes after those of the first (they keep the order of the SUBSCRIBEs),
 * so once it is in, whatever the first had is in too.
 */
const retainedOn = async (n: TestServerNode, topic: string): Promise<string | undefined> => {
  const c = await connect(n, `probe-${n.name}-${seq++}`)
  const got: Array<[string, string]> = []
  c.on("message", (t, p, packet) => {
    if (packet.retain) got.push([t, p.toString()])
  })
  await c.subscribeAsync(topic, { qos: 1 })
  await c.subscribeAsync(`marker/${n.name}`, { qos: 1 })
  await eventually(() => got.some(([t]) => t === `marker/${n.name}`), `the marker of ${n.name}`)
  await c.endAsync()
  return got.find(([t]) => t === topic)?.[1]
}

const becomes = (n: TestServerNode, topic: string, want: string | undefined, timeoutMs = 20_000) =>
  eventuallyAsync(async () => (await retainedOn(n, topic)) === want, `${topic} on ${n.name} to be ${want ?? "gone"}`, timeoutMs)

/** What a nats.js client is told of its publish permission errors. */
const permissionErrors = (nc: NatsConnection): Array<string> => {
  const out: Array<string> = []
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error") out.push(String((s as { error: unknown }).error))
  })()
  return out
}

describe("retained messages across Switchyard routes", () => {
  const cluster = useCluster({
    seed: { name: "RA", extra: config("mqtt { port: -1, protocol_versions: [4, 5] }\n") },
    nodes: [{ name: "RB", extra: config('mqtt { port: -1, protocol_versions: [4, 5] }\njetstream { store_dir: "{dir}/js" }\n') }]
  })
  let a: ClusterNode
  let b: ClusterNode
  let seenOnB: ReturnType<typeof collect>

  beforeAll(async () => {
    a = cluster.node("RA")
    b = cluster.node("RB")
    // Every NATS message RB's clients could see, from the start: none is an announcement.
    seenOnB = collect(await b.client(), ">")
    await retain(a, "marker/RA", "A")
    await retain(b, "marker/RB", "B")
  })

  it("a retained message kept on one node is given to a later subscriber on the other", async () => {
    await retain(a, "home/kitchen/temp", "21.5")
    await becomes(b, "home/kitchen/temp", "21.5")
    // mqtt.js reports the message with its RETAIN flag and QoS.
    const c = await connect(b, "later-on-b")
    const got: Array<string> = []
    c.on("message", (t, p, packet) => got.push(`${t} ${p} retain=${packet.retain} q${packet.qos}`))
    await c.subscribeAsync("home/#", { qos: 1 })
    await eventually(() => got.length > 0, "the retained message on RB")
    expect(got).toEqual(["home/kitchen/temp 21.5 retain=true q1"])
  })

  it("an MQTT 5.0 retained message keeps its properties on the other node", async () => {
    const pub = await connect(a, "v5-pub", { protocolVersion: 5 })
    await pub.publishAsync("v5/state", "on", {
      qos: 1,
      retain: true,
      properties: { messageExpiryInterval: 3600, contentType: "text/plain", userProperties: { site: "north" }, responseTopic: "v5/answers", correlationData: Buffer.from("c1") }
    })
    await becomes(b, "v5/state", "on")
    const sub = await connect(b, "v5-sub", { protocolVersion: 5 })
    const got: Array<mqtt.IPublishPacket> = []
    sub.on("message", (_t, _p, packet) => got.push(packet))
    await sub.subscribeAsync("v5/state", { qos: 1 })
    await eventually(() => got.length > 0, "the retained message on RB")
    const p = got[0].properties ?? {}
    // What mqtt.js reports: the properties as published, the expiry counted down.
    expect(got[0].retain).toBe(true)
    expect(p.contentType).toBe("text/plain")
    expect(p.userProperties).toEqual({ site: "north" })
    expect(p.responseTopic).toBe("v5/answers")
    expect(Buffer.from(p.correlationData ?? []).toString()).toBe("c1")
    expect(p.messageExpiryInterval).toBeGreaterThan(3500)
    expect(p.messageExpiryInterval).toBeLessThanOrEqual(3600)
  })

  it("an empty retained payload on one node removes the message on the other", async () => {
    await retain(a, "home/hall/light", "on")
    await becomes(b, "home/hall/light", "on")
    await retain(a, "home/hall/light", "")
    await becomes(b, "home/hall/light", undefined)
    expect(await retainedOn(a, "home/hall/light")).toBeUndefined()
  })

  it("a will with retain published on one node is retained on the other", async () => {
    const w = await connect(a, "will-holder", { will: { topic: "status/device7", payload: Buffer.from("offline"), qos: 1, retain: true } })
    // Gone without DISCONNECT: the will is published.
    w.stream.destroy()
    await becomes(b, "status/device7", "offline")
  })

  it("two nodes setting one topic at once end with the same value on both", async () => {
    for (let round = 0; round < 3; round++) {
      const topic = `race/r${round}`
      const [pa, pb] = await Promise.all([connect(a, `race-a-${round}`), connect(b, `race-b-${round}`)])
      await Promise.all([pa.publishAsync(topic, `from-a-${round}`, { qos: 1, retain: true }), pb.publishAsync(topic, `from-b-${round}`, { qos: 1, retain: true })])
      await eventuallyAsync(async () => {
        const [va, vb] = await Promise.all([retainedOn(a, topic), retainedOn(b, topic)])
        return va !== undefined && va === vb
      }, `${topic} to converge`, 20_000)
    }
  })

  it("announcements cannot be forged by a NATS client, and no client sees one", async () => {
    await retain(a, "keep/x", "kept")
    await becomes(b, "keep/x", "kept")
    const forged = (topic: string, deleted: boolean) =>
      encodeAnnouncement({ version: { ts: Date.now() + 3_600_000, server: "NFORGED" }, topic, deleted, qos: 0, payload: Buffer.from("forged") })
    const [ncA, ncB] = [await a.client(), await b.client()]
    const [errA, errB] = [permissionErrors(ncA), permissionErrors(ncB)]
    for (const nc of [ncA, ncB]) {
      nc.publish("$MQTT.rmsg.put", forged("keep/x", true))
      nc.publish("$MQTT.rmsg.put", forged("forge/x", false))
      nc.publish("$MQTT.rmsg.sync", "")
      await nc.flush()
    }
    // An MQTT 5.0 client on `$MQTT/rmsg/put`: PUBACK 0x87, as mqtt.js reports it.
    const m5 = await connect(a, "forger", { protocolVersion: 5 })
    const refused = await m5.publishAsync("$MQTT/rmsg/put", forged("keep/x", true), { qos: 1 }).then(
      (p) => `ok ${(p as { reasonCode?: number } | undefined)?.reasonCode}`,
      (e: unknown) => String(e)
    )
    expect(refused).toMatch(/Not authorized|135/)
    // Nothing changed on either node: a retained message set after the fakes is seen first.
    await retain(a, "keep/after", "1")
    await becomes(b, "keep/after", "1")
    for (const n of [a, b]) {
      expect(await retainedOn(n, "keep/x")).toBe("kept")
      expect(await retainedOn(n, "forge/x")).toBeUndefined()
    }
    // nats.js reports each as a publish permission violation.
    await eventually(() => errA.length >= 3 && errB.length >= 3, "the permission errors")
    expect(errA[0]).toContain('Permissions Violation for Publish to "$MQTT.rmsg.put"')
    expect(seenOnB.filter((m) => m.subject.startsWith("$MQTT.rmsg")).map((m) => m.subject)).toEqual([])
  })

  it("a stream consumer delivering to $MQTT.rmsg.put forges nothing on another node", async () => {
    await retain(a, "keep/js", "kept")
    await becomes(b, "keep/js", "kept")
    // A subscriber of everything on RA draws whatever RB's clients publish over the route.
    const seenOnA = collect(await a.client(), ">")
    const natsB = await b.client()
    await eventuallyAsync(async () => {
      natsB.publish("probe.js", "p")
      await natsB.flush()
      return seenOnA.some((m) => m.subject === "probe.js")
    }, "RA's interest to reach RB", 20_000)
    const jsm = await jetstreamManager(natsB)
    await jsm.streams.add({ name: "FORGE", subjects: ["forge.>"] })
    const body = encodeAnnouncement({ version: { ts: Date.now() + 3_600_000, server: "NFORGED" }, topic: "keep/js", deleted: true, qos: 0, payload: Buffer.alloc(0) })
    await jetstream(natsB).publish("forge.1", body)
    // The stream's own consumer delivers the stored body to `$MQTT.rmsg.put` on RB.
    await jsm.consumers.add("FORGE", { durable_name: "F", deliver_subject: "$MQTT.rmsg.put", ack_policy: AckPolicy.None })
    await eventuallyAsync(async () => (await jsm.consumers.info("FORGE", "F")).delivered.stream_seq >= 1, "the consumer's delivery", 20_000)
    // It never crossed the route: RA neither saw it nor took it as RB's word.
    await retain(b, "keep/js-after", "1")
    await becomes(a, "keep/js-after", "1")
    expect(await retainedOn(a, "keep/js")).toBe("kept")
    expect(seenOnA.filter((m) => m.subject.startsWith("$MQTT.rmsg"))).toEqual([])
    await jsm.streams.delete("FORGE")
  })

  it("a node restarted catches up: what was kept and removed meanwhile, and keeps what it had", async () => {
    await retain(a, "plant/before", "b1")
    await retain(a, "plant/removed", "r1")
    await becomes(b, "plant/before", "b1")
    await becomes(b, "plant/removed", "r1")
    await b.kill()
    await retain(a, "plant/while-down", "w1")
    await retain(a, "plant/removed", "")
    await b.restart()
    await cluster.meshed()
    await becomes(b, "plant/while-down", "w1")
    await becomes(b, "plant/removed", undefined)
    expect(await retainedOn(b, "plant/before")).toBe("b1")
    // A stays as it was (RB's copies from before its restart did not bring the removed one back).
    expect(await retainedOn(a, "plant/removed")).toBeUndefined()
  })

  it("a node started later gets the cluster's retained messages, in batches past one", async () => {
    // More than one catch-up batch (256 messages).
    const many = await connect(a, "many")
    for (let i = 0; i < 300; i++) many.publish(`bulk/m${i}`, `v${i}`, { qos: 0, retain: true })
    await many.publishAsync("bulk/last", "end", { qos: 1, retain: true })
    const c = await startNode({ name: "RC", routes: [routeUrl(a.routePort)], extra: ["--mqtt_port", "-1"] })
    try {
      await retain(c, "marker/RC", "C")
      await becomes(c, "bulk/last", "end")
      expect(await retainedOn(c, "bulk/m299")).toBe("v299")
      expect(await retainedOn(c, "home/kitchen/temp")).toBe("21.5")
      const probe = await connect(c, "bulk-count")
      const got: Array<string> = []
      probe.on("message", (t) => got.push(t))
      await probe.subscribeAsync("bulk/#", { qos: 0 })
      await eventually(() => got.length >= 301, "every bulk message on RC")
      expect(new Set(got).size).toBe(301)
    } finally {
      await c.stop()
    }
  })
})

describe("retained messages in a mixed cluster (nats-server 2.9.10 seed, two Switchyard nodes)", () => {
  const cluster = useCluster({ seed: "nats-server", nodes: [{ name: "MS1", extra: ["--mqtt_port", "-1"] }, { name: "MS2", extra: ["--mqtt_port", "-1"] }] })

  it("cross between the Switchyard nodes; nats-server and its clients see no announcement", async () => {
    const [s1, s2] = [cluster.node("MS1"), cluster.node("MS2")]
    const ns = await cluster.nsClient()
    const seenOnNs = collect(ns, ">")
    await ns.flush()
    await retain(s1, "marker/MS1", "1")
    await retain(s2, "marker/MS2", "2")
    await retain(s1, "mixed/r", "hello")
    await becomes(s2, "mixed/r", "hello")
    await retain(s2, "mixed/r", "")
    await becomes(s1, "mixed/r", undefined)
    // The live messages crossed nats-server's routes as usual; no announcement did.
    await eventually(() => seenOnNs.some((m) => m.subject === "mixed.r"), "the live message on nats-server")
    expect(seenOnNs.filter((m) => m.subject.startsWith("$MQTT.rmsg"))).toEqual([])
    // nats-server logged nothing about them.
    expect(cluster.ns().log()).not.toMatch(/rmsg/)
  })
})

describe("retained messages across leaf connections between Switchyard servers", () => {
  const servers: Array<LeafServer> = []
  afterAll(async () => {
    for (const s of servers.reverse()) await s.stop()
  })
  const edge = (name: string, hubPort: number) =>
    startLeafServer("switchyard", name, `leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${hubPort}" } ] }\nmqtt { port: -1 }\n`)

  it("cross hub and leaf both ways, from one leaf to another through the hub, and reach a leaf that connects later", async () => {
    const hub = await startLeafServer("switchyard", "LHUB", "leafnodes { listen: 127.0.0.1:{leaf} }\nmqtt { port: -1 }\n")
    servers.push(hub)
    const e1 = await edge("LEDGE1", hub.leafPort)
    servers.push(e1)
    await leafsUp(hub, 1)
    await leafsUp(e1, 1)
    for (const s of [hub, e1]) await retain(s, `marker/${s.name}`, s.name)
    await retain(e1, "edge/one", "from-edge")
    await becomes(hub, "edge/one", "from-edge")
    await retain(hub, "hub/one", "from-hub")
    await becomes(e1, "hub/one", "from-hub")
    // A second leaf, connected later: caught up with the hub's set, then hears the first leaf through the hub.
    const e2 = await edge("LEDGE2", hub.leafPort)
    servers.push(e2)
    await leafsUp(hub, 2)
    await retain(e2, "marker/LEDGE2", "LEDGE2")
    await becomes(e2, "edge/one", "from-edge")
    await becomes(e2, "hub/one", "from-hub")
    await retain(e1, "edge/one", "")
    await becomes(e2, "edge/one", undefined)
    await retain(e2, "edge/two", "from-edge2")
    await becomes(e1, "edge/two", "from-edge2")
  })
})

describe("retained messages in a leaf cluster (two Switchyard spokes, each with its remote to a Switchyard hub)", () => {
  const servers: Array<LeafServer> = []
  afterAll(async () => {
    for (const s of servers.reverse()) await s.stop()
  })

  it("reach every server from the hub and from either spoke", async () => {
    const hub = await startLeafServer("switchyard", "SHUB", "leafnodes { listen: 127.0.0.1:{leaf} }\nmqtt { port: -1 }\n")
    servers.push(hub)
    const [r1, r2] = [await freePort(), await freePort()]
    const spoke = (name: string, me: number, other: number) =>
      startLeafServer(
        "switchyard",
        name,
        `cluster { name: SPOKES, listen: 127.0.0.1:${me}, routes: ["nats-route://127.0.0.1:${other}"] }\nleafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${hub.leafPort}" } ] }\nmqtt { port: -1 }\n`
      )
    const s1 = await spoke("SP1", r1, r2)
    servers.push(s1)
    const s2 = await spoke("SP2", r2, r1)
    servers.push(s2)
    await leafsUp(hub, 2)
    await eventually(() => /Route connection created/.test(s2.log()) && /Route connection created/.test(s1.log()), "the route between the spokes", 30_000)
    for (const s of [hub, s1, s2]) await retain(s, `marker/${s.name}`, s.name)
    await retain(hub, "from/hub", "h")
    await retain(s1, "from/sp1", "1")
    for (const s of [hub, s1, s2]) {
      await becomes(s, "from/hub", "h")
      await becomes(s, "from/sp1", "1")
    }
    await retain(s2, "from/hub", "")
    for (const s of [hub, s1, s2]) await becomes(s, "from/hub", undefined)
  })
})
