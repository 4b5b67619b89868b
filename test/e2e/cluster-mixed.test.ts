// A mixed cluster: a real nats-server 2.9.10 (the Debian package) as the seed, two
// Switchyard processes naming only it, so that the Switchyard pair must learn each other
// from nats-server's INFO gossip. nats.js clients on every node check pub/sub both ways,
// queue groups once cluster-wide, request/reply, no-responders and headers across the
// implementations, and that a Switchyard node that restarts is taken back.
import { headers, connect, type NatsConnection } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ClusterNode, collect, interestReached, routeUrl, startNode, useCluster } from "../helpers/cluster-nodes.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { type NatsServerProcess, spawnNatsServer } from "../helpers/nats-server.js"
import { eventually } from "../helpers/server.js"
import { freePort } from "../clients/run.js"

const cluster = useCluster({ seed: "nats-server", nodes: [{ name: "S1" }, { name: "S2" }] })
let ns: NatsServerProcess
let s1: ClusterNode
let s2: ClusterNode
const conns: Array<NatsConnection> = []
const nsClient = () => cluster.nsClient()
const nsRoutes = async () => (await ns.monitor<{ num_routes: number; routes: Array<Record<string, any>> }>("/routez")).routes

beforeAll(() => {
  ns = cluster.ns()
  ;[s1, s2] = ["S1", "S2"].map((n) => cluster.node(n))
})

afterAll(async () => {
  await Promise.all(conns.map((c) => c.close().catch(() => {})))
})

describe("a mixed cluster: nats-server 2.9.10 and two Switchyard nodes", () => {
  it("meshes: nats-server lists both Switchyard nodes, and they found each other through its INFO", async () => {
    // nats-server 2.9's /routez names a route by its server id only.
    const ids = await Promise.all([s1, s2].map(async (n) => (await n.monitor("/varz")).server_id as string))
    expect((await nsRoutes()).map((r) => r.remote_id).sort()).toEqual([...ids].sort())
    const r1 = (await s1.monitor("/routez")).routes
    expect(r1.map((r: any) => r.remote_name).sort()).toEqual(["NS", "S2"])
    expect(r1.find((r: any) => r.remote_name === "S2").is_configured).toBe(false)
    expect(ns.log()).not.toMatch(/\[ERR\]/)
  })

  it("carries pub/sub both ways, once per subscription", async () => {
    const onNs = collect(await nsClient(), "mixed.>")
    const c1 = await s1.client()
    const onS1 = collect(c1, "mixed.*")
    const c2 = await s2.client()
    const onS2 = collect(c2, "mixed.>")
    const nsc = await nsClient()
    nsc.subscribe("probe.ns", { callback: (_e, m) => void m.respond("ok") })
    c1.subscribe("probe.s1", { callback: (_e, m) => void m.respond("ok") })
    c2.subscribe("probe.s2", { callback: (_e, m) => void m.respond("ok") })
    await interestReached(c1, "probe.ns")
    await interestReached(c1, "probe.s2")
    await interestReached(nsc, "probe.s1")
    await interestReached(nsc, "probe.s2")
    for (let i = 0; i < 20; i++) c1.publish("mixed.a", `from-s1-${i}`)
    for (let i = 0; i < 20; i++) nsc.publish("mixed.b", `from-ns-${i}`)
    await c1.flush()
    await nsc.flush()
    await eventually(() => onNs.length >= 40 && onS1.length >= 40 && onS2.length >= 40, "40 messages on each node")
    await c1.flush()
    await c2.flush()
    for (const got of [onNs, onS1, onS2]) {
      const texts = got.map((m) => m.string())
      expect(texts.filter((t) => t.startsWith("from-s1-"))).toEqual(Array.from({ length: 20 }, (_, i) => `from-s1-${i}`))
      expect(texts.filter((t) => t.startsWith("from-ns-"))).toEqual(Array.from({ length: 20 }, (_, i) => `from-ns-${i}`))
      expect(texts.length).toBe(40)
    }
  })

  it("serves a queue group with members on every implementation exactly once", async () => {
    const nsc = await nsClient()
    const c1 = await s1.client()
    const c2 = await s2.client()
    const members = [collect(nsc, "mwork", { queue: "Q" }), collect(c2, "mwork", { queue: "Q" })]
    nsc.subscribe("probe.q.ns", { callback: (_e, m) => void m.respond("ok") })
    c2.subscribe("probe.q.s2", { callback: (_e, m) => void m.respond("ok") })
    await interestReached(c1, "probe.q.ns")
    await interestReached(c1, "probe.q.s2")
    // Published on S1, which has no member: one of the two remote servers each time.
    for (let i = 0; i < 200; i++) c1.publish("mwork", `q${i}`)
    await c1.flush()
    const all = () => members.flatMap((m) => m.map((x) => x.string()))
    await eventually(() => all().length >= 200, "200 queue messages")
    await nsc.flush()
    await c2.flush()
    expect(all().sort()).toEqual(Array.from({ length: 200 }, (_, i) => `q${i}`).sort())
    expect(members[0].length).toBeGreaterThan(0)
    expect(members[1].length).toBeGreaterThan(0)
    // Published on nats-server, which has a member: still once each (nats-server 2.9.10 was
    // seen sending some to the remote member too; it does not keep a group local).
    for (let i = 0; i < 30; i++) nsc.publish("mwork", `n${i}`)
    await nsc.flush()
    await eventually(() => all().length >= 230, "30 more")
    await nsc.flush()
    await c2.flush()
    expect(all().filter((t) => t.startsWith("n")).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `n${i}`).sort())
    // Published on S2, which has a member: Switchyard keeps the group local.
    for (let i = 0; i < 30; i++) c2.publish("mwork", `s${i}`)
    await c2.flush()
    await eventually(() => all().length >= 260, "30 more from S2")
    await nsc.flush()
    expect(members[0].filter((m) => m.string().startsWith("s"))).toEqual([])
    expect(members[1].filter((m) => m.string().startsWith("s")).length).toBe(30)
  })

  it("answers requests across implementations, with headers, and no-responders when nobody listens", async () => {
    const nsc = await nsClient()
    const c2 = await s2.client()
    nsc.subscribe("svc.ns", {
      callback: (_e, m) => {
        const h = headers()
        h.set("X-Seen", m.headers?.get("X-Trace") ?? "none")
        m.respond(`ns:${m.string()}`, { headers: h })
      }
    })
    c2.subscribe("svc.s2", { callback: (_e, m) => void m.respond(`s2:${m.string()}`) })
    const c1 = await s1.client()
    await interestReached(c1, "svc.ns")
    await interestReached(nsc, "svc.s2")
    const h = headers()
    h.set("X-Trace", "abc")
    const r = await c1.request("svc.ns", "ping", { timeout: 5000, headers: h })
    expect([r.string(), r.headers?.get("X-Seen")]).toEqual(["ns:ping", "abc"])
    expect((await nsc.request("svc.s2", "pong", { timeout: 5000 })).string()).toBe("s2:pong")
    await expect(c1.request("nobody.anywhere", "x", { timeout: 5000 })).rejects.toMatchObject({ message: expect.stringMatching(/503|no responders/i) })
    await expect(nsc.request("nobody.anywhere", "x", { timeout: 5000 })).rejects.toMatchObject({ message: expect.stringMatching(/503|no responders/i) })
  })

  it("counts the interest the other servers announced in /subsz, as nats-server does, and forgets it when withdrawn", async () => {
    const subsz = async (n: ClusterNode) => (await n.monitor<{ num_subscriptions: number }>("/subsz")).num_subscriptions
    const nsSubsz = async () => (await ns.monitor<{ num_subscriptions: number }>("/subsz")).num_subscriptions
    const before = { s1: await subsz(s1), ns: await nsSubsz() }
    // Three subjects and a queue group on nats-server: four entries announced to S1.
    const nc = await nsClient()
    const subs = ["count.a", "count.b.*", "count.c.>"].map((subject) => nc.subscribe(subject))
    subs.push(nc.subscribe("count.q", { queue: "workers" }))
    await nc.flush()
    await eventuallyAsync(async () => (await subsz(s1)) === before.s1 + 4, "S1's /subsz to count nats-server's four entries", 20_000)
    // One subscription on S1 is one more on nats-server's /subsz, the same way.
    const c1 = await s1.client()
    conns.push(c1)
    const mine = c1.subscribe("count.from.s1")
    await c1.flush()
    await eventuallyAsync(async () => (await nsSubsz()) === before.ns + 4 + 1, "nats-server's /subsz to count S1's entry", 20_000)
    expect(await subsz(s1)).toBe(before.s1 + 4 + 1)
    for (const s of subs) s.unsubscribe()
    mine.unsubscribe()
    await nc.flush()
    await c1.flush()
    await eventuallyAsync(async () => (await subsz(s1)) === before.s1, "S1's /subsz back to what it was", 20_000)
  })

  it("takes a restarted Switchyard node back: it calls nats-server again and hears its clients", async () => {
    await s2.restart()
    await eventuallyAsync(async () => (await nsRoutes()).length === 2 && (await s2.monitor("/routez")).num_routes === 2, "S2 back in the mesh", 30_000)
    const c2 = await s2.client()
    const onS2 = collect(c2, "back.again")
    c2.subscribe("probe.back", { callback: (_e, m) => void m.respond("ok") })
    const nsc = await nsClient()
    await interestReached(nsc, "probe.back")
    nsc.publish("back.again", "welcome")
    await nsc.flush()
    await eventually(() => onS2.length === 1, "nats-server's message on the restarted node")
    expect(onS2[0].string()).toBe("welcome")
  }, 60_000)
})

describe("nats-server and Switchyard configured to call each other", () => {
  it("end with one route, the same connection at both ends, and carry messages over it", async () => {
    const [nsRoute, syRoute] = [await freePort(), await freePort()]
    // Switchyard first: nats-server is not up yet, so it keeps calling (the backoff).
    const sy = await startNode({ name: "SYM", routePort: syRoute, routes: [routeUrl(nsRoute)] })
    const nsm = await spawnNatsServer(
      `listen: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\nserver_name: NSM\ncluster { name: C1, listen: 127.0.0.1:${nsRoute}, routes: [ ${routeUrl(syRoute)} ] }\n`
    )
    try {
      const routes = async () => ({
        ns: (await nsm.monitor<{ routes: Array<Record<string, any>> }>("/routez")).routes,
        sy: (await sy.monitor("/routez")).routes as Array<Record<string, any>>
      })
      await eventuallyAsync(async () => {
        const r = await routes()
        return r.ns.length === 1 && r.sy.length === 1
      }, "one route at each end", 30_000)
      // The route each end kept is one connection: one end sees the other's route
      // listener, the other an ephemeral port (two kept connections would each show the
      // other's listener).
      const r = await routes()
      const nsEnd = r.ns[0]
      const syEnd = r.sy[0]
      expect([nsEnd.port === syRoute, syEnd.port === nsRoute].filter(Boolean).length).toBe(1)
      const c = await sy.client()
      const got = collect(c, "both.ways")
      c.subscribe("probe.both", { callback: (_e, m) => void m.respond("ok") })
      const n = await connect({ servers: `127.0.0.1:${nsm.clientPort}` })
      conns.push(n)
      await interestReached(n, "probe.both")
      n.publish("both.ways", "over the one route")
      await n.flush()
      await eventually(() => got.length === 1, "the message")
      // Still the same route after the traffic: nothing was closed as a duplicate since.
      const after = await routes()
      expect([after.ns.length, after.sy.length, after.sy[0].rid, after.ns[0].rid]).toEqual([1, 1, syEnd.rid, nsEnd.rid])
    } finally {
      await sy.stop()
      await nsm.stop()
    }
  }, 90_000)
})
