// Three Switchyard processes joined by routes, with nats.js clients on each: A is the seed,
// B and C name only A and find each other through A's INFO (implicit routes). Asserted
// with what the clients receive and what /routez and /varz say: a full mesh, messages
// once to each node with interest (never twice, never back), queue groups once
// cluster-wide and locally first, request/reply and no-responders across nodes, echo and
// headers, client URLs, and a restarted seed that the others call again.
import * as net from "node:net"
import { headers } from "@nats-io/transport-node"
import { beforeAll, describe, expect, it } from "vitest"
import { type ClusterNode, collect, interestReached, routeUrl, routez, startNode, useCluster } from "../helpers/cluster-nodes.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { eventually } from "../helpers/server.js"

const cluster = useCluster({ seed: { name: "A" }, nodes: [{ name: "B" }, { name: "C" }] })
let a: ClusterNode
let b: ClusterNode
let c: ClusterNode

beforeAll(() => {
  ;[a, b, c] = ["A", "B", "C"].map((n) => cluster.node(n))
})

describe("a three-node Switchyard mesh", () => {
  it("forms a full mesh, B and C through the routes A told them about; /routez and /varz show it", async () => {
    const ra = await routez(a)
    expect(ra.routes.map((r) => r.remote_name).sort()).toEqual(["B", "C"])
    // A solicited nobody; B and C solicited A (configured); B-C is a learned route.
    expect(ra.routes.every((r) => r.did_solicit === false && r.is_configured === false)).toBe(true)
    const rb = await routez(b)
    const toA = rb.routes.find((r) => r.remote_name === "A")!
    expect([toA.did_solicit, toA.is_configured, toA.port]).toEqual([true, true, a.routePort])
    expect(rb.routes.find((r) => r.remote_name === "C")!.is_configured).toBe(false)
    for (const r of [...ra.routes, ...rb.routes]) {
      expect(r.remote_id).toMatch(/^N[A-Z2-7]{55}$/)
      expect(typeof r.rtt).toBe("string")
      for (const k of ["rid", "ip", "start", "last_activity", "uptime", "idle", "in_msgs", "out_msgs", "in_bytes", "out_bytes", "subscriptions"]) {
        expect(r).toHaveProperty(k)
      }
    }
    const varz = await b.monitor("/varz")
    expect(varz.routes).toBe(2)
    expect(varz.remotes).toBe(1)
    expect(varz.cluster).toMatchObject({ name: "C1", addr: "127.0.0.1", cluster_port: b.routePort, urls: [`127.0.0.1:${a.routePort}`] })
  })

  it("delivers a message once to every subscription on every node, and once per node over its route", async () => {
    const pa = await a.client()
    const sb = await b.client()
    const sc = await c.client()
    const onB = collect(sb, "mesh.>")
    const onCstar = collect(sc, "mesh.*")
    const onCgt = collect(sc, "mesh.>")
    sb.subscribe("probe.mesh.b", { callback: (_e, m) => void m.respond("ok") })
    sc.subscribe("probe.mesh.c", { callback: (_e, m) => void m.respond("ok") })
    await interestReached(pa, "probe.mesh.b")
    await interestReached(pa, "probe.mesh.c")
    const toC = async () => (await routez(a)).routes.find((r) => r.remote_name === "C")!.out_msgs as number
    const before = await toC()
    for (let i = 0; i < 50; i++) pa.publish("mesh.x", `m${i}`)
    await pa.flush()
    await eventually(() => onB.length >= 50 && onCstar.length >= 50 && onCgt.length >= 50, "50 messages on every subscription")
    // Nothing more arrives (no echo back through another node, no second copy).
    await sb.flush()
    await sc.flush()
    for (const got of [onB, onCstar, onCgt]) {
      expect(got.map((m) => m.string())).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`))
    }
    // Two subscriptions on C matched, one copy crossed the route.
    expect((await toC()) - before).toBe(50)
  })

  it("serves a queue group exactly once cluster-wide, spread over remote members, and a local member first", async () => {
    const pa = await a.client()
    const sb = await b.client()
    const sc = await c.client()
    const members = [collect(sb, "work", { queue: "W" }), collect(sb, "work", { queue: "W" }), collect(sc, "work", { queue: "W" }), collect(sc, "work", { queue: "W" })]
    sb.subscribe("probe.work.b", { callback: (_e, m) => void m.respond("ok") })
    sc.subscribe("probe.work.c", { callback: (_e, m) => void m.respond("ok") })
    await interestReached(pa, "probe.work.b")
    await interestReached(pa, "probe.work.c")
    for (let i = 0; i < 200; i++) pa.publish("work", `w${i}`)
    await pa.flush()
    const all = () => members.flatMap((m) => m.map((x) => x.string()))
    await eventually(() => all().length >= 200, "200 queue messages")
    await sb.flush()
    await sc.flush()
    expect(all().sort()).toEqual(Array.from({ length: 200 }, (_, i) => `w${i}`).sort())
    expect(members[0].length + members[1].length).toBeGreaterThan(0)
    expect(members[2].length + members[3].length).toBeGreaterThan(0)
    // Published on B: B's members take everything.
    const pb = await b.client()
    for (let i = 0; i < 50; i++) pb.publish("work", `l${i}`)
    await pb.flush()
    await eventually(() => all().length >= 250, "50 more")
    await sc.flush()
    const local = members.flatMap((m, i) => m.filter((x) => x.string().startsWith("l")).map(() => i))
    expect(local.length).toBe(50)
    expect(local.every((i) => i < 2)).toBe(true)
  })

  it("answers a request from another node, and says no responders only when no node has interest", async () => {
    const pa = await a.client()
    const sc = await c.client()
    const sub = sc.subscribe("svc.echo", { callback: (_e, m) => void m.respond(`echo ${m.string()}`) })
    await interestReached(pa, "svc.echo")
    const r = await pa.request("svc.echo", "hi", { timeout: 5000 })
    expect(r.string()).toBe("echo hi")
    await expect(pa.request("nobody.home", "anyone?", { timeout: 5000 })).rejects.toMatchObject({ message: expect.stringMatching(/503|no responders/i) })
    sub.unsubscribe()
    await sc.flush()
    await eventuallyAsync(async () => {
      try {
        await pa.request("svc.echo", "again", { timeout: 2000 })
        return false
      } catch (e) {
        return /503|no responders/i.test(String((e as Error).message))
      }
    }, "the withdrawn interest to make the request a no-responders")
  })

  it("honours echo:false across nodes and carries headers byte for byte", async () => {
    const pa = await a.client({ noEcho: true })
    const sb = await b.client()
    const own = collect(pa, "echo.t")
    const there = collect(sb, "echo.t")
    sb.subscribe("probe.echo", { callback: (_e, m) => void m.respond("ok") })
    await interestReached(pa, "probe.echo")
    await pa.flush()
    const h = headers()
    h.set("X-Trace", "t-42")
    pa.publish("echo.t", "with headers", { headers: h })
    await pa.flush()
    await eventually(() => there.length === 1, "the message on B")
    await pa.flush()
    expect(own).toEqual([])
    expect(there[0].headers?.get("X-Trace")).toBe("t-42")
    expect(there[0].string()).toBe("with headers")
  })

  it("tells clients every node's client URL in INFO connect_urls", async () => {
    const info = await firstInfo(a.clientPort)
    expect([...(info.connect_urls as Array<string>)].sort()).toEqual(
      [a.clientPort, b.clientPort, c.clientPort].map((p) => `127.0.0.1:${p}`).sort()
    )
  })

  it("sends connected clients an INFO with the new connect_urls when a node joins and when it leaves", async () => {
    const raw = net.connect(a.clientPort, "127.0.0.1")
    let text = ""
    raw.on("data", (d) => (text += d.toString()))
    raw.write('CONNECT {"protocol":1,"verbose":false}\r\nPING\r\n')
    await eventually(() => text.includes("PONG"), "the handshake")
    const infos = () => text.split("\r\n").filter((l) => l.startsWith("INFO ")).map((l) => JSON.parse(l.slice(5)).connect_urls as Array<string>)
    const d = await startNode({ name: "D", routes: [routeUrl(a.routePort)] })
    try {
      await eventually(() => infos().length >= 2 && infos().at(-1)!.includes(`127.0.0.1:${d.clientPort}`), "an INFO naming D")
      await d.kill()
      await eventually(() => !infos().at(-1)!.includes(`127.0.0.1:${d.clientPort}`), "an INFO without D", 20_000)
      expect(infos().at(-1)!.sort()).toEqual([a.clientPort, b.clientPort, c.clientPort].map((p) => `127.0.0.1:${p}`).sort())
    } finally {
      raw.destroy()
      await d.stop()
      await cluster.meshed()
    }
  }, 60_000)

  it("lists each route's interest in /routez?subs=1 and subs=detail", async () => {
    const sb = await b.client()
    sb.subscribe("listed.subject", { queue: "LQ" })
    await sb.flush()
    await eventuallyAsync(async () => {
      const r = (await routez(a, "?subs=1")).routes.find((x) => x.remote_name === "B")!
      return (r.subscriptions_list ?? []).includes("listed.subject")
    }, "B's interest listed on A")
    const d = (await routez(a, "?subs=detail")).routes.find((x) => x.remote_name === "B")!
    expect(d.subscriptions_list_detail).toContainEqual(expect.objectContaining({ account: "$G", subject: "listed.subject", qgroup: "LQ" }))
    expect(d.subscriptions).toBe(d.subscriptions_list_detail.length)
  })

  it("calls a restarted seed again, which learns the others' interest anew", async () => {
    const sb = await b.client()
    const onB = collect(sb, "after.restart")
    sb.subscribe("probe.restart", { callback: (_e, m) => void m.respond("ok") })
    await sb.flush()
    await a.restart()
    await cluster.meshed()
    const pa = await a.client()
    await interestReached(pa, "probe.restart")
    pa.publish("after.restart", "back")
    await pa.flush()
    await eventually(() => onB.length === 1, "the message from the restarted node")
    // And the other way: a subscriber on the restarted node hears C.
    const sa = await a.client()
    const onA = collect(sa, "to.a")
    sa.subscribe("probe.to.a", { callback: (_e, m) => void m.respond("ok") })
    const pc = await c.client()
    await interestReached(pc, "probe.to.a")
    pc.publish("to.a", "hello a")
    await pc.flush()
    await eventually(() => onA.length === 1, "C's message on A")
    expect(b.log()).toMatch(/Route connection created/)
  }, 60_000)
})

/** The INFO a raw client gets on connecting. */
const firstInfo = (port: number): Promise<Record<string, unknown>> =>
  new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1")
    let buf = ""
    s.on("data", (d) => {
      buf += d.toString()
      const end = buf.indexOf("\r\n")
      if (end < 0) return
      s.destroy()
      resolve(JSON.parse(buf.slice(5, end)))
    })
    s.on("error", reject)
  })
