// Leaf nodes at run time, both ways round: Switchyard as the leaf of a real nats-server
// 2.9.10 hub (the edge deployment), and Switchyard as the hub of a real nats-server leaf.
// The hub binds the connection to account ACC (the account of the leaf's user), the leaf
// to its local account EDGE. nats.js clients on both sides (and nats.go) assert what they
// receive: pub/sub both ways, request/reply, no-responders, queue groups, account
// isolation, and a restart of either side after which interest is restored.
import { networkInterfaces } from "node:os"
import { join } from "node:path"
import { headers } from "@nats-io/transport-node"
import mqtt from "mqtt"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { buildDir, freePort, runCase } from "../clients/run.js"
import { buildNatsGo } from "../clients/go/build.js"
import { collect, interestReached } from "../helpers/cluster-nodes.js"
import { type Implementation, type LeafServer, leafsUp, leafz, startLeafPair, startLeafServer, stopLeafPair } from "../helpers/leaf-nodes.js"
import { eventually } from "../helpers/server.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { PeerDriver } from "../helpers/cluster-peer.js"
import { MAX_PEER_INTEREST } from "../../src/server/cluster/forward.js"
import { Either } from "effect"
import { decodeLeafInfo, type HubInfoFields, hubConnectInfo, hubInfo, isLeafListenerInfo, isLoopDetectionSubject, loopDetectedError } from "../../src/core/cluster/handshake.js"

const HUB_CONFIG = `
accounts {
  ACC { users: [ { user: leaf, password: pw }, { user: a, password: a }, { user: limited, password: lp, permissions: { publish: "up.>", subscribe: "down.>" } } ] }
  OTHER { users: [ { user: o, password: o } ] }
}
leafnodes { listen: 127.0.0.1:{leaf} }
`

const leafConfig = (hubLeafPort: number, password = "pw") => `
accounts {
  EDGE { users: [ { user: a, password: a } ] }
  EOTHER { users: [ { user: x, password: x } ] }
}
leafnodes { remotes: [ { url: "nats-leaf://leaf:${password}@127.0.0.1:${hubLeafPort}", account: EDGE } ] }
`

const A = { user: "a", pass: "a" }

const go = buildDir()
const goBin = join(go.dir, "nats-go")
beforeAll(() => buildNatsGo(goBin), 120_000)
afterAll(() => go.remove())

for (const [hubImpl, leafImpl] of [["nats-server", "switchyard"], ["switchyard", "nats-server"]] as const satisfies ReadonlyArray<readonly [Implementation, Implementation]>) {
  describe(`${leafImpl} as a leaf node of a ${hubImpl} hub`, () => {
    let hub: LeafServer
    let leaf: LeafServer
    const sy = () => (hubImpl === "switchyard" ? hub : leaf)

    beforeAll(async () => {
      ;({ hub, leaf } = await startLeafPair({ impl: hubImpl, config: HUB_CONFIG }, { impl: leafImpl, config: (port) => leafConfig(port) }))
    }, 60_000)
    afterAll(() => stopLeafPair({ hub, leaf }))

    it("connects, bound to ACC on the hub and EDGE on the leaf; /leafz and /varz say so", async () => {
      const [h, l] = [(await leafz(hub)).leafs[0], (await leafz(leaf)).leafs[0]]
      expect([h.account, l.account]).toEqual(["ACC", "EDGE"])
      expect([h.ip, l.port]).toEqual(["127.0.0.1", hub.leafPort])
      for (const x of [h, l]) for (const k of ["rtt", "in_msgs", "out_msgs", "in_bytes", "out_bytes", "subscriptions"]) expect(x).toHaveProperty(k)
      // Switchyard's own report: who the other side is and which side solicited.
      const mine = (await leafz(sy())).leafs[0]
      expect([mine.name, mine.is_spoke]).toEqual(hubImpl === "switchyard" ? ["EDGE", false] : ["HUB", true])
      const varz = await sy().monitor("/varz")
      expect(varz.leafnodes).toBe(1)
      if (hubImpl === "switchyard") expect(varz.leaf).toMatchObject({ host: "127.0.0.1", port: hub.leafPort, auth_timeout: 2 })
      else expect(varz.leaf).toMatchObject({ remotes: [{ local_account: "EDGE", urls: [`127.0.0.1:${hub.leafPort}`] }] })
      expect(hub.log()).not.toMatch(/\[ERR\]/)
      expect(leaf.log()).not.toMatch(/\[ERR\]/)
    })

    it("carries pub/sub both ways, once per subscription, headers intact", async () => {
      const [hc, lc] = [await hub.client(A), await leaf.client(A)]
      const onHub = collect(hc, "both.>")
      const onLeaf = collect(lc, "both.*")
      const onLeaf2 = collect(lc, "both.>")
      hc.subscribe("probe.hub", { callback: (_e, m) => void m.respond("ok") })
      lc.subscribe("probe.leaf", { callback: (_e, m) => void m.respond("ok") })
      await interestReached(lc, "probe.hub")
      await interestReached(hc, "probe.leaf")
      // The probes were subscribed after the collectors, on the same connections: their interest arrived first.
      const h = headers()
      h.set("X-Trace", "leaf")
      for (let i = 0; i < 10; i++) lc.publish("both.up", `up-${i}`, { headers: h })
      for (let i = 0; i < 10; i++) hc.publish("both.down", `down-${i}`)
      await Promise.all([lc.flush(), hc.flush()])
      await eventually(() => onHub.length >= 20 && onLeaf.length >= 20 && onLeaf2.length >= 20, "every message on every subscription")
      const ups = onHub.filter((m) => m.subject === "both.up")
      expect(ups.map((m) => m.string())).toEqual([...Array(10).keys()].map((i) => `up-${i}`))
      expect(ups.every((m) => m.headers?.get("X-Trace") === "leaf")).toBe(true)
      expect(onLeaf.filter((m) => m.subject === "both.down").map((m) => m.string())).toEqual([...Array(10).keys()].map((i) => `down-${i}`))
      await Promise.all([lc.flush(), hc.flush()])
      // Once each: nothing came twice (the publishers' own server delivered to them as well).
      expect([onHub.length, onLeaf.length, onLeaf2.length]).toEqual([20, 20, 20])
    })

    it("answers requests across the leaf connection both ways, and says 503 when nobody listens anywhere", async () => {
      const [hc, lc] = [await hub.client(A), await leaf.client(A)]
      hc.subscribe("svc.hub", { callback: (_e, m) => void m.respond(`hub:${m.string()}`, { headers: m.headers }) })
      lc.subscribe("svc.leaf", { callback: (_e, m) => void m.respond(`leaf:${m.string()}`) })
      await interestReached(lc, "svc.hub")
      await interestReached(hc, "svc.leaf")
      const h = headers()
      h.set("X-Seen", "yes")
      const r = await lc.request("svc.hub", "ping", { timeout: 5000, headers: h })
      expect([r.string(), r.headers?.get("X-Seen")]).toEqual(["hub:ping", "yes"])
      expect((await hc.request("svc.leaf", "pong", { timeout: 5000 })).string()).toBe("leaf:pong")
      for (const c of [hc, lc]) {
        await expect(c.request("nobody.anywhere", "x", { timeout: 5000 })).rejects.toMatchObject({ message: expect.stringMatching(/503|no responders/i) })
      }
    })

    it("delivers each message of a queue group once: to the other side's members, and to a local member first", async () => {
      const [hc, lc] = [await hub.client(A), await leaf.client(A)]
      const far = [collect(hc, "work", { queue: "W" }), collect(hc, "work", { queue: "W" })]
      hc.subscribe("probe.work", { callback: (_e, m) => void m.respond("ok") })
      await interestReached(lc, "probe.work")
      for (let i = 0; i < 30; i++) lc.publish("work", `w${i}`)
      await lc.flush()
      await eventually(() => far[0].length + far[1].length === 30, "30 messages to the far members")
      // Now a member on the publisher's side too: it takes every message.
      const near = collect(lc, "work", { queue: "W" })
      await lc.flush()
      far.forEach((g) => (g.length = 0))
      for (let i = 0; i < 30; i++) lc.publish("work", `n${i}`)
      await lc.flush()
      await eventually(() => near.length === 30, "30 messages to the local member")
      await hc.flush()
      expect(far[0].length + far[1].length).toBe(0)
    })

    it("keeps other accounts out: OTHER on the hub and EOTHER on the leaf hear nothing, and EOTHER's interest is not announced", async () => {
      const [hc, lc] = [await hub.client(A), await leaf.client(A)]
      const ho = await hub.client({ user: "o", pass: "o" })
      const lo = await leaf.client({ user: "x", pass: "x" })
      const onHo = collect(ho, "iso.>")
      const onLo = collect(lo, "iso.>")
      lo.subscribe("iso.eother.only", { callback: () => {} })
      const onHc = collect(hc, "iso.>")
      const onLc = collect(lc, "iso.>")
      hc.subscribe("iso.probe.hub", { callback: (_e, m) => void m.respond("ok") })
      lc.subscribe("iso.probe.leaf", { callback: (_e, m) => void m.respond("ok") })
      await interestReached(lc, "iso.probe.hub")
      await interestReached(hc, "iso.probe.leaf")
      lc.publish("iso.up", "u")
      hc.publish("iso.down", "d")
      // OTHER's and EOTHER's own messages stay on their server.
      ho.publish("iso.other", "o")
      lo.publish("iso.eother", "x")
      await Promise.all([lc.flush(), hc.flush(), ho.flush(), lo.flush()])
      await eventually(() => onHc.some((m) => m.subject === "iso.up") && onLc.some((m) => m.subject === "iso.down"), "the ACC/EDGE messages")
      await Promise.all([ho.flush(), lo.flush()])
      expect(onHo.map((m) => m.subject)).toEqual(["iso.other"])
      expect(onLo.map((m) => m.subject)).toEqual(["iso.eother"])
      expect(onHc.map((m) => m.subject)).not.toContain("iso.eother")
      expect(onLc.map((m) => m.subject)).not.toContain("iso.other")
      const list = ((await leafz(hub, "?subs=true")).leafs[0].subscriptions_list ?? []) as Array<string>
      expect(list).toContain("iso.>")
      expect(list).not.toContain("iso.eother.only")
    })

    it("serves nats.go 1.22.1 clients across the leaf connection, both ways", async () => {
      for (const [from, to] of [[leaf, hub], [hub, leaf]]) {
        const r = await runCase([goBin], "cluster", `nats://127.0.0.1:${from.clientPort}`, { other: `nats://127.0.0.1:${to.clientPort}`, user: "a", pass: "a" })
        expect(r.reply).toBe("HELLO CLUSTER")
        expect(r.trace).toBe("across")
        expect(r.msgs).toBe(20)
        expect(r.members.reduce((x: number, y: number) => x + y, 0)).toBe(30)
        expect(r.no_responders).toBe("ErrNoResponders")
      }
    }, 60_000)

    for (const which of ["leaf", "hub"] as const) {
      it(`connects again after the ${which} restarts, and the interest of both sides is restored`, async () => {
        await (which === "leaf" ? leaf : hub).restart()
        await leafsUp(hub, 1, "the leaf connection back on the hub")
        await leafsUp(leaf, 1, "the leaf connection back on the leaf")
        const [hc, lc] = [await hub.client(A), await leaf.client(A)]
        const onHub = collect(hc, `again.${which}`)
        const onLeaf = collect(lc, `again.${which}`)
        hc.subscribe(`probe.again.hub.${which}`, { callback: (_e, m) => void m.respond("ok") })
        lc.subscribe(`probe.again.leaf.${which}`, { callback: (_e, m) => void m.respond("ok") })
        await interestReached(lc, `probe.again.hub.${which}`)
        await interestReached(hc, `probe.again.leaf.${which}`)
        lc.publish(`again.${which}`, "from the leaf")
        hc.publish(`again.${which}`, "from the hub")
        await Promise.all([lc.flush(), hc.flush()])
        await eventually(() => onHub.length === 2 && onLeaf.length === 2, "both messages on both sides")
      }, 60_000)
    }
  })
}

describe("a hub cluster: a nats-server leaf on a Switchyard node routed to a nats-server node", () => {
  let ns: LeafServer
  let s1: LeafServer
  let leaf: LeafServer
  beforeAll(async () => {
    const [nsRoute, s1Route] = [await freePort(), await freePort()]
    const cluster = (me: number, other: number) => `\ncluster { name: C1, listen: 127.0.0.1:${me}, routes: [ nats-route://127.0.0.1:${other} ] }\n`
    ;[ns, s1] = await Promise.all([
      startLeafServer("nats-server", "NS", HUB_CONFIG + cluster(nsRoute, s1Route)),
      startLeafServer("switchyard", "S1", HUB_CONFIG + cluster(s1Route, nsRoute))
    ])
    await eventuallyAsync(async () => (await s1.monitor("/routez")).num_routes === 1 && (await ns.monitor("/routez")).num_routes === 1, "the route", 30_000)
    leaf = await startLeafServer("nats-server", "NL", leafConfig(s1.leafPort))
    await leafsUp(s1, 1)
  }, 60_000)
  afterAll(async () => {
    await leaf?.stop()
    await Promise.all([s1?.stop(), ns?.stop()])
  })

  it("carries messages and requests between the leaf and the other node of the cluster, both ways", async () => {
    const [nc, lc] = [await ns.client(A), await leaf.client(A)]
    const onNs = collect(nc, "far.>")
    const onLeaf = collect(lc, "far.>")
    nc.subscribe("svc.ns", { callback: (_e, m) => void m.respond(`ns:${m.string()}`) })
    lc.subscribe("svc.leaf", { callback: (_e, m) => void m.respond(`leaf:${m.string()}`) })
    await interestReached(lc, "svc.ns")
    await interestReached(nc, "svc.leaf")
    expect((await lc.request("svc.ns", "a", { timeout: 5000 })).string()).toBe("ns:a")
    expect((await nc.request("svc.leaf", "b", { timeout: 5000 })).string()).toBe("leaf:b")
    for (let i = 0; i < 10; i++) lc.publish("far.up", `u${i}`)
    for (let i = 0; i < 10; i++) nc.publish("far.down", `d${i}`)
    await Promise.all([lc.flush(), nc.flush()])
    await eventually(() => onNs.length === 20 && onLeaf.length === 20, "every message on both sides, once")
    await Promise.all([lc.flush(), nc.flush()])
    expect([onNs.length, onLeaf.length]).toEqual([20, 20])
    for (const c of [nc, lc]) {
      await expect(c.request("nobody.anywhere", "x", { timeout: 5000 })).rejects.toMatchObject({ message: expect.stringMatching(/503|no responders/i) })
    }
  })

  it("serves a queue group on the leaf once per message published on the other node", async () => {
    const [nc, lc] = [await ns.client(A), await leaf.client(A)]
    const members = [collect(lc, "far.work", { queue: "W" }), collect(lc, "far.work", { queue: "W" })]
    lc.subscribe("probe.far.work", { callback: (_e, m) => void m.respond("ok") })
    await interestReached(nc, "probe.far.work")
    for (let i = 0; i < 30; i++) nc.publish("far.work", `w${i}`)
    await nc.flush()
    await eventually(() => members[0].length + members[1].length === 30, "30 messages to the leaf's members")
    await lc.flush()
    expect(members[0].length + members[1].length).toBe(30)
  })

  it("withdraws the leaf's interest from the cluster when the leaf goes", async () => {
    const lc = await leaf.client(A)
    lc.subscribe("gone.soon", { callback: (_e, m) => void m.respond("here") })
    const nc = await ns.client(A)
    await interestReached(nc, "gone.soon")
    await leaf.stop()
    await eventuallyAsync(async () => {
      try {
        await nc.request("gone.soon", "?", { timeout: 1000 })
        return false
      } catch (e) {
        return /503|no responders/i.test(String(e))
      }
    }, "no responders once the leaf is gone", 20_000)
  })
})

describe("the leaf's origin across a route (a fake route and fake leaf nodes on a Switchyard hub in a cluster)", () => {
  let hub: LeafServer
  let route: PeerDriver
  const leafs: Array<PeerDriver> = []
  beforeAll(async () => {
    const routePort = await freePort()
    hub = await startLeafServer("switchyard", "OHUB", `${HUB_CONFIG}\ncluster { name: C1, listen: 127.0.0.1:${routePort} }\n`)
    route = await PeerDriver.connect("route", routePort)
    const info = JSON.parse(await route.waitFor((op) => (op[0] === "info" ? op[1] : undefined), "the hub's route INFO"))
    expect(info.lnoc).toBe(true)
    route.sendConnect({ echo: true, verbose: false, pedantic: false, tls_required: false, headers: true, name: "NFAKEROUTE", cluster: "C1", lnoc: true })
    route.sendInfo({ server_id: "NFAKEROUTE", server_name: "fake-route", version: "2.9.10", proto: 2, host: "127.0.0.1", port: 1, headers: true, max_payload: 1048576, cluster: "C1", lnoc: true })
    await eventuallyAsync(async () => (await hub.monitor("/routez")).num_routes === 1, "the route")
  }, 60_000)
  afterAll(async () => {
    route?.close()
    leafs.forEach((l) => l.close())
    await hub?.stop()
  })

  const leafOfCluster = async (cluster: string): Promise<PeerDriver> => {
    const p = await PeerDriver.connect("leaf", hub.leafPort)
    leafs.push(p)
    await p.waitFor((op) => (op[0] === "info" ? true : undefined), "the hub's INFO")
    p.sendConnect({ version: "2.9.10", user: "leaf", pass: "pw", server_id: `N${cluster}${leafs.length}`, name: `${cluster}-${leafs.length}`, cluster, headers: true })
    await p.waitFor((op) => (op[0] === "info" && op[1].includes("connect_info") ? true : undefined), "the hub's second INFO")
    return p
  }

  it("sends a leaf's message on a route as LMSG naming its cluster, and never sends a route's LMSG back into that leaf cluster", async () => {
    const [lc1, other] = [await leafOfCluster("LC"), await leafOfCluster("OTHER")]
    lc1.send("LS+ o.x\r\n")
    other.send("LS+ o.x\r\n")
    await Promise.all([lc1.roundTrip(), other.roundTrip()])
    // The route hears of the leaves' interest (as the hub's own), the leaves of the route's.
    await route.waitFor((op) => (op[0] === "sub" && op[1].subject === "o.x" ? true : undefined), "RS+ o.x on the route")
    route.send("RS+ ACC o.up\r\n")
    await lc1.waitFor((op) => (op[0] === "sub" && op[1].subject === "o.up" ? true : undefined), "LS+ o.up on the leaf")
    // A message from the leaf of cluster LC goes on the route as LMSG LC …
    lc1.send("LMSG o.up 2\r\nhi\r\n")
    const up = await route.waitFor((op) => (op[0] === "msg" && op[1].subject === "o.up" ? op[1] : undefined), "the leaf's message on the route")
    expect([up.origin, up.account, up.data.toString()]).toEqual(["LC", "ACC", "hi"])
    // … and a route's LMSG from cluster LC reaches the other leaf cluster only; an RMSG reaches both.
    route.send("LMSG LC ACC o.x 0 4\r\nfrom\r\nRMSG ACC o.x 5\r\nplain\r\n")
    const datas = (p: PeerDriver) => p.ops.flatMap((op) => (op[0] === "msg" && op[1].subject === "o.x" ? [op[1].data.toString()] : []))
    await eventually(() => datas(other).includes("plain") && datas(lc1).includes("plain"), "the RMSG on both leaves")
    expect(datas(other)).toEqual(["from", "plain"])
    expect(datas(lc1)).toEqual(["plain"])
  })
})

describe("the edge deployment: MQTT clients of a Switchyard leaf and NATS clients of a nats-server hub", () => {
  let hub: LeafServer
  let edge: LeafServer
  const mqttClients: Array<mqtt.MqttClient> = []
  beforeAll(async () => {
    hub = await startLeafServer("nats-server", "HUB", HUB_CONFIG)
    // The edge has no leaf listener: its {leaf} port serves MQTT.
    edge = await startLeafServer("switchyard", "EDGE", `${leafConfig(hub.leafPort)}\nmqtt { listen: 127.0.0.1:{leaf} }\n`)
    await leafsUp(hub, 1)
  }, 60_000)
  afterAll(async () => {
    await Promise.all(mqttClients.map((c) => c.endAsync().catch(() => {})))
    await edge?.stop()
    await hub?.stop()
  })

  it("delivers the hub's NATS messages to MQTT subscribers on the edge, and MQTT publications to the hub's subscribers", async () => {
    const m = await mqtt.connectAsync(`mqtt://127.0.0.1:${edge.leafPort}`, { clientId: "edge-sensor", username: "a", password: "a", reconnectPeriod: 0 })
    mqttClients.push(m)
    const got: Array<string> = []
    m.on("message", (topic, payload) => got.push(`${topic} ${payload.toString()}`))
    await m.subscribeAsync("cmd/+/set", { qos: 0 })
    const hc = await hub.client(A)
    const up = collect(hc, "sensors.>")
    hc.subscribe("probe.edge.mqtt", { callback: (_e, msg) => void msg.respond("ok") })
    // The MQTT subscription's interest reached the hub once a request through it is answered by an edge responder subscribed after it.
    const ec = await edge.client(A)
    ec.subscribe("probe.hub.mqtt", { callback: (_e, msg) => void msg.respond("ok") })
    await interestReached(hc, "probe.hub.mqtt")
    await interestReached(ec, "probe.edge.mqtt")
    hc.publish("cmd.k1.set", "on")
    await hc.flush()
    await eventually(() => got.includes("cmd/k1/set on"), "the hub's command on the MQTT client")
    await m.publishAsync("sensors/k1/temp", "21.5", { qos: 1 })
    await eventually(() => up.some((x) => x.subject === "sensors.k1.temp" && x.string() === "21.5"), "the MQTT reading on the hub")
    // Its QoS crossed the leaf connection in nats-server's own header, which the hub passed on.
    expect(up.find((x) => x.subject === "sensors.k1.temp")!.headers?.get("Nmqtt-Pub")).toBe("1")
  })
})

describe("refusals and loops", () => {
  let nsHub: LeafServer
  let syHub: LeafServer
  const others: Array<LeafServer> = []
  beforeAll(async () => {
    ;[nsHub, syHub] = await Promise.all([startLeafServer("nats-server", "NSHUB", HUB_CONFIG), startLeafServer("switchyard", "SYHUB", HUB_CONFIG)])
  }, 60_000)
  afterAll(async () => {
    await Promise.all(others.map((s) => s.stop()))
    await Promise.all([nsHub?.stop(), syHub?.stop()])
  })

  it("a Switchyard leaf with a wrong password logs the hub's Authorization Violation and keeps trying; nothing connects", async () => {
    const edge = await startLeafServer("switchyard", "BADEDGE", leafConfig(nsHub.leafPort, "wrong"))
    others.push(edge)
    await eventually(() => (edge.log().match(/Leafnode Error 'Authorization Violation'/g) ?? []).length >= 2, "two refused attempts in the leaf's log", 20_000)
    expect((await leafz(edge)).leafnodes).toBe(0)
    expect((await leafz(nsHub)).leafnodes).toBe(0)
  }, 30_000)

  it("a Switchyard leaf pointed at a client port says it reached the wrong port, and keeps trying", async () => {
    const edge = await startLeafServer("switchyard", "WRONGPORT", `leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${nsHub.clientPort}" } ] }`)
    others.push(edge)
    await eventually(() => (edge.log().match(/attempted to connect to wrong port/g) ?? []).length >= 2, "two attempts, each refused", 20_000)
    expect((await leafz(edge)).leafnodes).toBe(0)
  }, 30_000)

  it("a Switchyard hub closes a leaf connection that never sends CONNECT, with Authentication Timeout", async () => {
    const silent = await PeerDriver.connect("leaf", syHub.leafPort)
    try {
      await silent.waitClosed(15_000)
      expect(silent.errors()).toEqual(["Authentication Timeout"])
      expect(syHub.log()).toMatch(/Leafnode handshake not complete within 2000ms/)
    } finally {
      silent.close()
    }
  }, 30_000)

  it("a Switchyard hub refuses a nats-server leaf with a wrong password: it logs the failure, the leaf logs Authorization Violation", async () => {
    const edge = await startLeafServer("nats-server", "BADNS", leafConfig(syHub.leafPort, "wrong"))
    others.push(edge)
    await eventually(() => /Leafnode authentication failed for user "leaf"/.test(syHub.log()), "the hub's log line", 20_000)
    await eventually(() => /Authorization Violation/.test(edge.log()), "the leaf's log line", 20_000)
    expect((await leafz(syHub)).leafnodes).toBe(0)
  }, 30_000)

  it("holds a leaf to its user's permissions: it may send only what the user may publish, and ask only for what it may subscribe to", async () => {
    const leaf = await PeerDriver.connect("leaf", syHub.leafPort)
    await leaf.waitFor((op) => (op[0] === "info" ? true : undefined), "the hub's INFO")
    leaf.sendConnect({ version: "2.9.10", user: "limited", pass: "lp", server_id: "NLIMITED", name: "LIMITED", cluster: "LIMITED", headers: true })
    try {
      await leaf.waitFor((op) => (op[0] === "info" && op[1].includes("connect_info") ? true : undefined), "the second INFO")
      const c = await syHub.client(A)
      const onHub = collect(c, ">")
      c.subscribe("probe.perm", { callback: (_e, m) => void m.respond("ok") })
      await c.flush()
      leaf.send("LS+ down.a\r\nLS+ secret.b\r\n")
      await leaf.roundTrip()
      const list = ((await leafz(syHub, "?subs=true")).leafs.find((l) => l.name === "LIMITED")!.subscriptions_list ?? []) as Array<string>
      expect(list).toEqual(["down.a"])
      c.publish("down.a", "allowed")
      c.publish("secret.b", "denied")
      await c.flush()
      await leaf.waitFor((op) => (op[0] === "msg" && op[1].subject === "down.a" ? true : undefined), "down.a on the leaf")
      leaf.send("LMSG up.x 2\r\nUP\r\nLMSG nope.x 2\r\nNO\r\n")
      await leaf.roundTrip()
      await eventually(() => onHub.some((m) => m.subject === "up.x"), "up.x on the hub")
      await c.flush()
      const subjects = onHub.map((m) => m.subject)
      expect(subjects).not.toContain("nope.x")
      expect(leaf.ops.filter((op) => op[0] === "msg").map((op) => (op[1] as { subject: string }).subject)).toEqual(["down.a"])
    } finally {
      leaf.close()
    }
  })

  it("a Switchyard leaf whose own loop-detection subject comes back from its hub says so with nats-server's -ERR, closes, and waits 30 s", async () => {
    const fakeHub = await PeerDriver.listen("leaf")
    try {
      const edge = await startLeafServer("switchyard", "LOOPEDGE", `
accounts { EDGE { users: [ { user: a, password: a } ] } }
leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${fakeHub.port}", account: EDGE } ] }
`)
      others.push(edge)
      const hubSide = await fakeHub.accepted
      const fields: HubInfoFields = {
        server_id: "NFAKEHUB", server_name: "FAKE", version: "2.9.10", host: "127.0.0.1", port: fakeHub.port,
        headers: true, auth_required: false, max_payload: 1 << 20, client_id: 7, leafnode_urls: []
      }
      hubSide.sendInfo(hubInfo(fields, "nonce"))
      await hubSide.waitFor((op) => (op[0] === "connect" ? true : undefined), "the leaf's CONNECT")
      hubSide.sendInfo(hubConnectInfo(fields, "ACC"))
      const lds = await hubSide.waitFor((op) => (op[0] === "sub" && isLoopDetectionSubject(op[1].subject) ? op[1].subject : undefined), "the leaf's $LDS")
      hubSide.send(`LS+ ${lds}\r\n`)
      await hubSide.waitClosed()
      expect(hubSide.errors()).toEqual([loopDetectedError("EDGE")])
      expect(edge.log()).toMatch(/Loop detected for leafnode account="EDGE"/)
      await eventually(() => /connecting again in 30s/.test(edge.log()), "the 30 s delay")
    } finally {
      fakeHub.close()
    }
  }, 30_000)

  it("a Switchyard leaf also tries the other leaf listeners its hub told it of (leafnode_urls) when the connection is lost", async () => {
    const [hubA, hubB] = [await PeerDriver.listen("leaf"), await PeerDriver.listen("leaf")]
    try {
      const edge = await startLeafServer("switchyard", "FAILOVER", `leafnodes { remotes: [ { url: "nats-leaf://u:p@127.0.0.1:${hubA.port}" } ] }`)
      others.push(edge)
      const a = await hubA.accepted
      const fields = (port: number, id: number): HubInfoFields => ({
        server_id: `NHUB${id}`, server_name: `hub-${id}`, version: "2.9.10", host: "127.0.0.1", port,
        headers: true, auth_required: true, max_payload: 1 << 20, client_id: id, leafnode_urls: [`127.0.0.1:${hubA.port}`, `127.0.0.1:${hubB.port}`]
      })
      a.sendInfo(hubInfo(fields(hubA.port, 1), "n1"))
      await a.waitFor((op) => (op[0] === "connect" ? true : undefined), "the CONNECT to hub A")
      a.close()
      hubA.close()
      // Hub A is gone for good; the leaf finds hub B from A's INFO, with the same credentials.
      const b = await hubB.accepted
      b.sendInfo(hubInfo(fields(hubB.port, 2), "n2"))
      const connect = await b.waitFor((op) => (op[0] === "connect" ? JSON.parse(op[1]) : undefined), "the CONNECT to hub B")
      expect([connect.user, connect.pass]).toEqual(["u", "p"])
      b.sendInfo(hubConnectInfo(fields(hubB.port, 2), "ACC"))
      await leafsUp(edge, 1, "the connection to hub B")
      expect((await leafz(edge)).leafs[0]).toMatchObject({ name: "hub-2", port: hubB.port })
    } finally {
      hubA.close()
      hubB.close()
    }
  }, 30_000)

  it("a Switchyard hub closes a leaf that sends the hub's own loop-detection subject back, with nats-server's -ERR", async () => {
    const fakeLeaf = await PeerDriver.connect("leaf", syHub.leafPort)
    try {
      await fakeLeaf.waitFor((op) => (op[0] === "info" ? true : undefined), "the hub's INFO")
      fakeLeaf.sendConnect({ version: "2.9.10", user: "leaf", pass: "pw", server_id: "NFAKELEAF", name: "FAKE", cluster: "FAKE", headers: true })
      const lds = await fakeLeaf.waitFor((op) => (op[0] === "sub" && isLoopDetectionSubject(op[1].subject) ? op[1].subject : undefined), "the hub's $LDS")
      fakeLeaf.send(`LS+ ${lds}\r\n`)
      await fakeLeaf.waitClosed()
      expect(fakeLeaf.errors()).toEqual([loopDetectedError("ACC")])
    } finally {
      fakeLeaf.close()
    }
  })

  it(`a Switchyard hub closes a leaf that announces more than ${MAX_PEER_INTEREST} subscriptions, and keeps serving the others`, async () => {
    const fakeLeaf = await PeerDriver.connect("leaf", syHub.leafPort)
    try {
      await fakeLeaf.waitFor((op) => (op[0] === "info" ? true : undefined), "the hub's INFO")
      fakeLeaf.sendConnect({ version: "2.9.10", user: "leaf", pass: "pw", server_id: "NGREEDY", name: "GREEDY", cluster: "GREEDY", headers: true })
      await fakeLeaf.waitFor((op) => (op[0] === "info" && op[1].includes("connect_info") ? true : undefined), "the hub's second INFO")
      const lines: Array<string> = []
      for (let i = 0; i <= MAX_PEER_INTEREST; i++) lines.push(`LS+ greedy.${i}\r\n`)
      fakeLeaf.send(lines.join(""))
      await fakeLeaf.waitClosed(30_000)
      expect(fakeLeaf.errors()).toEqual(["Maximum Subscriptions Exceeded"])
      expect(syHub.log()).toMatch(new RegExp(`Leafnode announced more than ${MAX_PEER_INTEREST} subscriptions: closing the connection`))
      expect(syHub.log()).toMatch(/Leafnode connection closed: Interest Limit Exceeded/)
      // The server is unharmed: its clients still talk.
      const c = await syHub.client(A)
      c.subscribe("still.here", { callback: (_e, m) => void m.respond("yes") })
      expect((await c.request("still.here", "?", { timeout: 5000 })).string()).toBe("yes")
    } finally {
      fakeLeaf.close()
    }
  }, 60_000)

  it("a Switchyard hub closes a second connection that brings a loop-detection subject it already has from another", async () => {
    const connectAs = async (id: string) => {
      const p = await PeerDriver.connect("leaf", syHub.leafPort)
      await p.waitFor((op) => (op[0] === "info" ? true : undefined), "the hub's INFO")
      p.sendConnect({ version: "2.9.10", user: "leaf", pass: "pw", server_id: id, name: id, cluster: id, headers: true })
      await p.waitFor((op) => (op[0] === "info" && op[1].includes("connect_info") ? true : undefined), "the hub's second INFO")
      return p
    }
    const [first, second] = [await connectAs("NFIRST"), await connectAs("NSECOND")]
    try {
      first.send("LS+ $LDS.sameSubjectFromBothSides\r\n")
      // The hub passes it on to the other connection of the account, as nats-server does.
      await second.waitFor((op) => (op[0] === "sub" && op[1].subject === "$LDS.sameSubjectFromBothSides" ? true : undefined), "the first one's $LDS")
      second.send("LS+ $LDS.sameSubjectFromBothSides\r\n")
      await second.waitClosed()
      expect(second.errors()).toEqual([loopDetectedError("ACC")])
      expect(first.closed).toBe(false)
      expect(syHub.log()).toMatch(/Loop detected for leafnode account="ACC": \$LDS.sameSubjectFromBothSides came over another connection too/)
    } finally {
      first.close()
      second.close()
    }
  })

  it("a nats-server leaf connected twice to a Switchyard hub account is caught in its loop: one connection stays", async () => {
    const twice = `
accounts { EDGE { users: [ { user: a, password: a } ] } }
leafnodes { remotes: [
  { url: "nats-leaf://leaf:pw@127.0.0.1:${syHub.leafPort}", account: EDGE }
  { url: "nats-leaf://leaf:pw@127.0.0.1:${syHub.leafPort}", account: EDGE }
] }
`
    const edge = await startLeafServer("nats-server", "LOOPNS", twice)
    others.push(edge)
    // Whichever side sees it first (the hub: the same $LDS over two connections; the leaf: its own back) closes one.
    await eventually(() => /Loop detected/.test(edge.log() + syHub.log()), "the loop detected", 20_000)
    await eventually(() => /Loop detected for leafnode account=\\?"(EDGE|ACC)\\?"/.test(edge.log() + syHub.log()), "the loop's account named")
    await leafsUp(edge, 1, "one connection left (the other waits 30 s)")
  }, 30_000)
})

describe("a Switchyard hub listening on every address", () => {
  it("tells leaf nodes the machine's addresses to reconnect to, never a loopback one (nothing with no_advertise)", async () => {
    for (const noAdvertise of [false, true]) {
      const hub = await startLeafServer("switchyard", "ANYHUB", `leafnodes { listen: 0.0.0.0:{leaf}, no_advertise: ${noAdvertise} }`)
      try {
        const p = await PeerDriver.connect("leaf", hub.leafPort)
        const info = JSON.parse(await p.waitFor((op) => (op[0] === "info" ? op[1] : undefined), "the hub's INFO"))
        p.close()
        const urls = info.leafnode_urls as Array<string>
        if (noAdvertise) expect(urls).toEqual([])
        else {
          const mine = Object.values(networkInterfaces()).flat().filter((a) => a !== undefined && a.family === "IPv4" && !a.address.startsWith("127."))
          expect([...urls].sort()).toEqual(mine.map((a) => `${a!.address}:${hub.leafPort}`).sort())
        }
      } finally {
        await hub.stop()
      }
    }
  }, 60_000)
})

describe("a Switchyard hub's authorization of leaf nodes", () => {
  let hub: LeafServer
  beforeAll(async () => {
    hub = await startLeafServer("switchyard", "AUTHHUB", `
accounts { ACC { users: [ { user: a, password: a } ] } }
leafnodes {
  listen: 127.0.0.1:{leaf}
  authorization { users: [ { user: bound, password: bp, account: ACC } ] }
}
`)
  }, 60_000)
  afterAll(async () => {
    await hub?.stop()
  })

  const fakeLeaf = async (user: string, pass: string): Promise<PeerDriver> => {
    const p = await PeerDriver.connect("leaf", hub.leafPort)
    await p.waitFor((op) => (op[0] === "info" ? true : undefined), "the hub's INFO")
    p.sendConnect({ version: "2.9.10", user, pass, server_id: `N${user.toUpperCase()}`, name: user, cluster: user, headers: true })
    return p
  }

  it("binds a leafnodes.authorization user to its account, and refuses a wrong password or an unknown user with Authorization Violation", async () => {
    const ok = await fakeLeaf("bound", "bp")
    try {
      // The first INFO is a leaf listener's (what a nats-server leaf checks), naming where to reconnect.
      const first = decodeLeafInfo(ok.infos()[0])
      expect(Either.isRight(first) && isLeafListenerInfo(first.right)).toBe(true)
      expect(JSON.parse(ok.infos()[0]).leafnode_urls).toEqual([`127.0.0.1:${hub.leafPort}`])
      const second = await ok.waitFor((op) => (op[0] === "info" && op[1].includes("connect_info") ? JSON.parse(op[1]) : undefined), "the second INFO")
      expect(second.remote_account).toBe("ACC")
      await leafsUp(hub, 1)
      expect((await leafz(hub)).leafs[0]).toMatchObject({ account: "ACC", name: "bound", is_spoke: false })
    } finally {
      ok.close()
    }
    // A user of the server's accounts is not a leaf user once leafnodes.authorization lists users.
    for (const [user, pass] of [["bound", "nope"], ["a", "a"]]) {
      const bad = await fakeLeaf(user, pass)
      await bad.waitClosed()
      expect(bad.errors()).toEqual(["Authorization Violation"])
    }
  })

})
