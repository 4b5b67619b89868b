// The cluster runtime in one process: Servers joined by routes over an in-memory network
// (test/helpers/cluster-harness.ts), every byte through the real route codec. Time is the
// harness clock: reconnects and their backoff are driven by advancing it, never by sleeps.
import { describe, expect, it } from "vitest"
import { reconnectDelay, ROUTE_RECONNECT_MAX_MS, ROUTE_RECONNECT_MS } from "../../src/server/cluster/cluster.js"
import { MemNet } from "../helpers/cluster-harness.js"

const route = (port: number) => `nats-route://127.0.0.1:${port}`

/** A seed and two servers that name only it, meshed. */
const threeNodes = () => {
  const net = new MemNet()
  const a = net.node("A")
  const b = net.node("B", { routes: [route(a.routePort)] })
  const c = net.node("C", { routes: [route(a.routePort)] })
  net.advance(0)
  net.advance(0)
  return { net, a, b, c }
}

describe("the mesh", () => {
  it("keeps one route between two servers that both call each other, the same connection at both ends", () => {
    const net = new MemNet()
    const a = net.node("A", { routes: [route(40_001)] })
    const b = net.node("B", { routes: [route(40_000)] })
    net.advance(0)
    net.advance(0)
    expect(net.mesh()).toEqual({ A: ["B"], B: ["A"] })
    const ra = [...a.cluster.byId.values()][0]
    const rb = [...b.cluster.byId.values()][0]
    expect((ra.conn as any).pair).toBe((rb.conn as any).pair)
    // The connection solicited by the smaller server id is the one kept, at both ends.
    expect(ra.didSolicit).toBe(a.server.serverId < b.server.serverId)
    // Nobody calls again while the route is up.
    const dials = net.dials.length
    net.advance(60_000)
    expect(net.dials.length).toBe(dials)
  })

  it("completes the mesh with routes learned from the seed's INFO", () => {
    const { net } = threeNodes()
    expect(net.mesh()).toEqual({ A: ["B", "C"], B: ["A", "C"], C: ["A", "B"] })
    const c = net.nodes[2]
    expect([...c.cluster.byId.values()].map((r) => [r.remoteName, r.solicit?.configured ?? "accepted"]).sort()).toEqual(
      [["A", true], ["B", expect.anything()]]
    )
  })

  it("ignores a route to itself and never calls it again", () => {
    const net = new MemNet()
    const a = net.node("A", { routes: [route(40_000)] })
    net.advance(0)
    expect(net.mesh()).toEqual({ A: [] })
    expect(a.cluster.solicits[0].self).toBe(true)
    const dials = net.dials.length
    net.advance(60_000)
    expect(net.dials.length).toBe(dials)
  })
})

describe("reconnecting", () => {
  it("waits one second, doubling, at most 8 s, less up to a quarter at random", () => {
    const full = [1000, 2000, 4000, 8000, 8000, 8000]
    full.forEach((f, n) => {
      expect(reconnectDelay(n, () => 0)).toBe(f)
      expect(reconnectDelay(n, () => 0.999999)).toBe(Math.round(f * (1 - 0.25 * 0.999999)))
    })
    expect(ROUTE_RECONNECT_MS).toBe(1000)
    expect(ROUTE_RECONNECT_MAX_MS).toBe(8000)
  })

  it("calls a configured route again with the backoff while it is down, and again at once when it is back", () => {
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B", { routes: [route(a.routePort)] })
    net.advance(0)
    expect(net.mesh()).toEqual({ A: ["B"], B: ["A"] })
    net.down(a)
    net.pump()
    expect(net.mesh()).toEqual({ A: [], B: [] })
    const lost = net.now
    // Step through 40 s of a dead seed in 100 ms steps: B's attempts spread out, bounded.
    for (let t = 0; t < 40_000; t += 100) net.advance(100)
    const attempts = net.dials.filter((d) => d.port === a.routePort && d.at > lost).map((d) => d.at)
    const gaps = attempts.map((at, i) => at - (i === 0 ? lost : attempts[i - 1]))
    expect(attempts.length).toBeGreaterThanOrEqual(5)
    expect(gaps[0]).toBeLessThanOrEqual(1000 + 100)
    for (const g of gaps) expect(g).toBeLessThanOrEqual(ROUTE_RECONNECT_MAX_MS + 100)
    expect(gaps.slice(-2).every((g) => g >= ROUTE_RECONNECT_MAX_MS * 0.75 - 100)).toBe(true)
    expect(b.cluster.solicits[0].attempts).toBe(attempts.length)
    // Back: the next attempt connects, the count starts over.
    net.up(a)
    for (let t = 0; t < ROUTE_RECONNECT_MAX_MS + 200; t += 100) net.advance(100)
    expect(net.mesh()).toEqual({ A: ["B"], B: ["A"] })
    expect(b.cluster.solicits[0].attempts).toBe(0)
  })

  it("gives up on a learned route after connect_retries failed attempts", () => {
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B", { routes: [route(a.routePort)], connectRetries: 2 })
    const c = net.node("C", { routes: [route(a.routePort)] })
    net.advance(0)
    net.advance(0)
    expect(net.mesh().B).toEqual(["A", "C"])
    // C goes away; its route from B was learned, not configured.
    net.down(c)
    net.pump()
    for (let t = 0; t < 30_000; t += 100) net.advance(100)
    const toC = net.dials.filter((d) => d.port === c.routePort && !d.ok)
    expect(b.cluster.solicits.map((s) => s.port)).toEqual([a.routePort])
    // B learned C from A: after the route broke, three failed calls (the first and two
    // retries), then no more. A had accepted C's route and has nothing to call.
    expect(toC.length).toBe(3)
  })

  it("counts a learned route's attempts anew when told of it again while it is calling (the mesh forms once the partition heals)", () => {
    // Found by the cluster simulation (seed 1164187127): two servers calling each other
    // across a partition were told of each other again while their calls were in flight,
    // ignored it (already calling), and gave up when the calls timed out: the mesh never
    // formed again after the partition healed.
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B", { routes: [route(a.routePort)] })
    const c = net.node("C", { routes: [route(a.routePort)] })
    net.advance(0)
    net.advance(0)
    expect(net.mesh().B).toEqual(["A", "C"])
    // B and C lose each other (connect_retries 0: one call each, which hangs until its timeout).
    net.cut(b, c)
    net.pump()
    for (let t = 0; t < 1_000 && net.dialsInFlight === 0; t += 50) net.advance(50)
    expect(net.dialsInFlight).toBeGreaterThan(0)
    // C's route to A breaks and comes back: A tells B of C again, while B's call is still out.
    for (const r of [...c.cluster.routes.values()]) if (r.remoteName === "A") net.down(c)
    net.up(c)
    for (let t = 0; t < 1_200 && net.mesh().C.length === 0; t += 50) net.advance(50)
    expect(net.mesh().C).toEqual(["A"])
    expect(net.dialsInFlight).toBeGreaterThan(0)
    net.heal(b, c)
    for (let t = 0; t < 30_000; t += 100) net.advance(100)
    expect(net.mesh()).toEqual({ A: ["B", "C"], B: ["A", "C"], C: ["A", "B"] })
  })
})

describe("interest and messages", () => {
  it("forwards a message once to each server with interest, to every matching subscription there", () => {
    const { net, a, b, c } = threeNodes()
    const star = b.sub("foo.*")
    const gt = b.sub("foo.>")
    const onC = c.sub("foo.bar")
    const none = c.sub("other")
    net.pump()
    // B announced two subjects, C two.
    expect(a.cluster.interest.count()).toBe(4)
    expect(a.pub("foo.bar", "hi")).toBe(2)
    net.pump()
    expect([star.got, gt.got, onC.got, none.got]).toEqual([["foo.bar hi"], ["foo.bar hi"], ["foo.bar hi"], []])
    const toB = [...a.cluster.byId.values()].find((r) => r.remoteName === "B")!
    expect(toB.outMsgs).toBe(1)
    // Nothing came back to A or went on from B to C.
    const fromB = [...c.cluster.byId.values()].find((r) => r.remoteName === "B")!
    expect(fromB.inMsgs).toBe(0)
  })

  it("announces a subject once however many subscribe, withdraws it with the last, and counts queue members", () => {
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B", { routes: [route(a.routePort)] })
    net.advance(0)
    const fromB = () => a.cluster.interest.entries([...a.cluster.byId.values()][0]).map((e) => `${e.subject} ${e.queue ?? "-"} ${e.weight}`)
    const s1 = b.sub("x")
    const s2 = b.sub("x")
    const q1 = b.sub("work", "W")
    const q2 = b.sub("work", "W")
    net.pump()
    expect(fromB()).toEqual(["x - 1", "work W 2"])
    s1.unsubscribe()
    q1.unsubscribe()
    net.pump()
    expect(fromB()).toEqual(["x - 1", "work W 1"])
    s2.unsubscribe()
    q2.unsubscribe()
    net.pump()
    expect(fromB()).toEqual([])
  })

  it("sends a new route everything already subscribed", () => {
    const net = new MemNet()
    const a = net.node("A")
    const early = a.sub("early.bird")
    const b = net.node("B", { routes: [route(a.routePort)] })
    net.advance(0)
    expect(b.pub("early.bird", "worm")).toBe(1)
    net.pump()
    expect(early.got).toEqual(["early.bird worm"])
  })

  it("serves a queue group once cluster-wide: a local member first, else one remote server by its members", () => {
    const { net, a, b, c } = threeNodes()
    const onB = [b.sub("job", "W"), b.sub("job", "W"), b.sub("job", "W")]
    const onC = [c.sub("job", "W")]
    const plainC = c.sub("job")
    net.pump()
    for (let i = 0; i < 400; i++) a.pub("job", `${i}`)
    net.pump()
    const nB = onB.reduce((n, s) => n + s.got.length, 0)
    const nC = onC[0].got.length
    expect(nB + nC).toBe(400)
    // Three members behind B, one behind C: B is picked about three times as often.
    expect(nB).toBeGreaterThan(nC * 2)
    expect(plainC.got.length).toBe(400)
    // From B, which has members: they take it all.
    for (let i = 0; i < 50; i++) b.pub("job", `b${i}`)
    net.pump()
    expect(onC[0].got.filter((g) => g.includes(" b"))).toEqual([])
    expect(onB.reduce((n, s) => n + s.got.filter((g) => g.includes(" b")).length, 0)).toBe(50)
  })

  it("answers no responders only when no server has interest", () => {
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B", { routes: [route(a.routePort)] })
    net.advance(0)
    expect(a.pub("svc", "req", "_INBOX.1")).toBe(0)
    const s = b.sub("svc")
    net.pump()
    expect(a.pub("svc", "req", "_INBOX.2")).toBe(1)
    s.unsubscribe()
    net.pump()
    expect(a.pub("svc", "req", "_INBOX.3")).toBe(0)
  })

  it("keeps accounts apart on the wire", () => {
    const net = new MemNet()
    const accounts = [{ name: "X", users: [], exports: [], imports: [], jetstream: false }, { name: "Y", users: [], exports: [], imports: [], jetstream: false }]
    const a = net.node("A", {}, { accounts })
    const b = net.node("B", { routes: [route(a.routePort)] }, { accounts })
    net.advance(0)
    const gotY: Array<string> = []
    const yb = b.server.router.internal("Y", "y")
    b.server.router.subscribe(yb, "shared", undefined, (d) => gotY.push(d.subject))
    net.pump()
    const xa = a.server.router.internal("X", "x")
    expect(a.server.router.publish(xa, "shared", "", undefined, Buffer.from("x"))).toBe(0)
    const ya = a.server.router.internal("Y", "y")
    expect(a.server.router.publish(ya, "shared", "", undefined, Buffer.from("y"))).toBe(1)
    net.pump()
    expect(gotY).toEqual(["shared"])
  })

  it("does not send a message larger than the peer's max_payload", () => {
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B", { routes: [route(a.routePort)] }, { maxPayload: 16 })
    net.advance(0)
    const s = b.sub("big")
    net.pump()
    expect(a.pub("big", "x".repeat(17))).toBe(0)
    expect(a.pub("big", "x".repeat(16))).toBe(1)
    net.pump()
    expect(s.got).toEqual([`big ${"x".repeat(16)}`])
  })
})

describe("accounts' imports across servers", () => {
  const accounts = [
    {
      name: "EXP",
      users: [],
      exports: [{ stream: "feed.>", service: undefined, accounts: undefined }, { stream: undefined, service: "svc.time", accounts: undefined }],
      imports: [],
      jetstream: false
    },
    {
      name: "IMP",
      users: [],
      exports: [],
      imports: [
        { stream: { account: "EXP", subject: "feed.>" }, service: undefined, prefix: undefined, to: undefined },
        { stream: undefined, service: { account: "EXP", subject: "svc.time" }, prefix: undefined, to: undefined }
      ],
      jetstream: false
    }
  ]

  it("delivers a stream import once, on the subscriber's server, whichever server the exporter published on", () => {
    const net = new MemNet()
    const a = net.node("A", {}, { accounts })
    const b = net.node("B", { routes: [route(a.routePort)] }, { accounts })
    net.advance(0)
    const got: Array<string> = []
    const sub = b.server.router.internal("IMP", "subscriber")
    b.server.router.subscribe(sub, "feed.>", undefined, (d) => got.push(`${d.subject} ${d.buf.toString("utf8", d.payloadStart, d.end)}`))
    net.pump()
    const pubA = a.server.router.internal("EXP", "publisher")
    a.server.router.publish(pubA, "feed.x", "", undefined, Buffer.from("from A"))
    const pubB = b.server.router.internal("EXP", "publisher")
    b.server.router.publish(pubB, "feed.y", "", undefined, Buffer.from("from B"))
    net.pump()
    expect(got.sort()).toEqual(["feed.x from A", "feed.y from B"])
  })

  it("answers a service import from a responder on another server, once", () => {
    const net = new MemNet()
    const a = net.node("A", {}, { accounts })
    const b = net.node("B", { routes: [route(a.routePort)] }, { accounts })
    net.advance(0)
    const responder = a.server.router.internal("EXP", "responder")
    let asked = 0
    a.server.router.subscribe(responder, "svc.time", undefined, (d) => {
      asked++
      a.server.router.publish(responder, d.reply, "", undefined, Buffer.from("noon"))
    })
    const requester = b.server.router.internal("IMP", "requester")
    const answers: Array<string> = []
    b.server.router.subscribe(requester, "_INBOX.me", undefined, (d) => answers.push(d.buf.toString("utf8", d.payloadStart, d.end)))
    net.pump()
    expect(b.server.router.publish(requester, "svc.time", "_INBOX.me", undefined, Buffer.from("?"))).toBe(1)
    net.pump()
    expect([asked, answers]).toEqual([1, ["noon"]])
  })
})

describe("what is advertised", () => {
  it("tells clients every server's client URL, and nothing with no_advertise", () => {
    const net = new MemNet()
    const a = net.node("A", {}, { host: "127.0.0.1", port: 4001 })
    const b = net.node("B", { routes: [route(a.routePort)] }, { host: "127.0.0.1", port: 4002 })
    const c = net.node("C", { routes: [route(a.routePort)], noAdvertise: true }, { host: "127.0.0.1", port: 4003 })
    net.advance(0)
    net.advance(0)
    expect(a.cluster.connectUrls()).toEqual(["127.0.0.1:4001", "127.0.0.1:4002"])
    expect(b.cluster.connectUrls()).toEqual(["127.0.0.1:4001", "127.0.0.1:4002"])
    expect(c.cluster.connectUrls()).toEqual([])
  })

  it("sends a server that does not take headers the payload alone", () => {
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B", { routes: [route(a.routePort)] }, { noHeaderSupport: true })
    net.advance(0)
    const s = b.sub("h")
    net.pump()
    const d = a.server.router.compose(a.server.router.internal("$G", "p"), "h", "", Buffer.from("NATS/1.0\r\nA: b\r\n\r\n"), Buffer.from("body"))
    expect(a.server.router.route(d)).toBe(1)
    net.pump()
    expect(s.got).toEqual(["h body"])
    const toB = [...a.cluster.byId.values()][0]
    expect(toB.outBytes).toBe(4)
  })
})

describe("who may join, and what they may ask for", () => {
  it("refuses a server of another cluster, by name", () => {
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B", { name: "OTHER", routes: [route(a.routePort)] })
    net.advance(0)
    expect(net.mesh()).toEqual({ A: [], B: [] })
    expect(a.log.join("\n")).toMatch(/Rejecting connection, cluster name "OTHER" does not match "C1"/)
    expect(a.log.join("\n")).toMatch(/Router connection closed: Cluster Name Conflict/)
    expect(b.log.join("\n")).toMatch(/Rejecting connection, cluster name "C1" does not match "OTHER"/)
  })

  it("a server without a cluster name takes its peer's", () => {
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B", { name: "", routes: [route(a.routePort)] })
    expect(b.cluster.dynamicName).toBe(true)
    net.advance(0)
    expect(net.mesh()).toEqual({ A: ["B"], B: ["A"] })
    expect(b.cluster.name).toBe("C1")
  })

  it("checks route credentials: from the URL, else the cluster's own", () => {
    const net = new MemNet()
    const auth = { user: "ruser", password: "rpass", timeoutMs: undefined, import: undefined, export: undefined }
    const a = net.node("A", { authorization: auth })
    const good = net.node("B", { routes: [`nats-route://ruser:rpass@127.0.0.1:${a.routePort}`] })
    const own = net.node("C", { routes: [route(a.routePort)], authorization: auth })
    const bad = net.node("D", { routes: [`nats-route://ruser:wrong@127.0.0.1:${a.routePort}`] })
    net.advance(0)
    net.advance(0)
    expect(net.mesh().A).toEqual(["B", "C"])
    expect(net.mesh().D).toEqual([])
    expect(a.log.join("\n")).toMatch(/Router authentication failed for user "ruser"/)
    expect(bad.log.join("\n")).toMatch(/Router sent -ERR 'Authorization Violation'/)
    void good
    void own
  })

  it("enforces the cluster permissions: import limits what other servers may send, export what they may ask for", () => {
    const net = new MemNet()
    const a = net.node("A", {
      authorization: { user: undefined, password: undefined, timeoutMs: undefined, import: { allow: ["in.>"], deny: undefined }, export: { allow: undefined, deny: ["secret.>"] } }
    })
    const b = net.node("B", { routes: [route(a.routePort)] })
    net.advance(0)
    const inA = a.sub("in.x")
    const outA = a.sub("out.x")
    b.sub("secret.plans")
    b.sub("public.news")
    net.pump()
    // B's interest in secret.> is not taken: A never sends it.
    expect(a.pub("secret.plans", "no")).toBe(0)
    expect(a.pub("public.news", "yes")).toBe(1)
    expect(b.pub("in.x", "ok")).toBe(1)
    expect(b.pub("out.x", "dropped")).toBe(1)
    net.pump()
    expect([inA.got, outA.got]).toEqual([["in.x ok"], []])
  })
})

describe("a misbehaving peer", () => {
  const joined = () => {
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B", { routes: [route(a.routePort)] })
    net.advance(0)
    const onA = [...a.cluster.byId.values()][0]
    return { net, a, b, onA }
  }

  it("is told an invalid subscription is invalid, and stays", () => {
    const { net, a, onA } = joined()
    onA.receive(Buffer.from("RS+ $G foo..bar\r\n"), net.now)
    net.pump()
    expect(a.cluster.byId.size).toBe(1)
    expect(a.log.join("\n")).toMatch(/invalid subscription/)
  })

  it("is closed past the interest one route may announce, which bounds what it costs (a new weight is no new entry)", () => {
    const net = new MemNet()
    const a = net.node("A", {}, {}, { maxPeerInterest: 3 })
    net.node("B", { routes: [route(a.routePort)] })
    net.advance(0)
    const onA = [...a.cluster.byId.values()][0]
    onA.receive(Buffer.from("RS+ $G a\r\nRS+ $G b\r\nRS+ $G q Q 1\r\nRS+ $G q Q 5\r\nRS+ $G a\r\n"), net.now)
    net.pump()
    expect([a.cluster.byId.size, a.cluster.interest.count(onA)]).toEqual([1, 3])
    onA.receive(Buffer.from("RS+ $G d\r\n"), net.now)
    net.pump()
    expect(a.cluster.byId.size).toBe(0)
    expect(a.cluster.interest.count()).toBe(0)
    expect(a.log.join("\n")).toMatch(/Route announced more than 3 subscriptions: closing the route/)
    expect(a.log.join("\n")).toMatch(/Router connection closed: Interest Limit Exceeded/)
  })

  it("is closed for a message over max_payload or a garbled op, with the reason logged", () => {
    for (const bad of [`RMSG $G foo ${2 * 1024 * 1024}\r\n`, "RMSG $G foo x\r\n", "BOGUS\r\n"]) {
      const { net, a, onA } = joined()
      onA.receive(Buffer.from(bad), net.now)
      net.pump()
      expect(a.cluster.byId.size).toBe(0)
      expect(a.log.join("\n")).toMatch(/Router parser ERROR/)
    }
  })

  it("is told of a max_payload lowered by a reload, and held to it", () => {
    const { net, a, b, onA } = joined()
    const s = a.sub("big")
    net.pump()
    a.server.reconfigure({ ...a.server.options, maxPayload: 8 })
    net.pump()
    // B heard the new limit: it no longer sends what A would refuse.
    expect(b.pub("big", "x".repeat(100))).toBe(0)
    expect(b.pub("big", "x".repeat(8))).toBe(1)
    net.pump()
    expect(s.got).toEqual([`big ${"x".repeat(8)}`])
    // A peer that sends more anyway is closed.
    onA.receive(Buffer.from(`RMSG $G big 9\r\n${"y".repeat(9)}\r\n`), net.now)
    net.pump()
    expect(a.cluster.byId.size).toBe(0)
    expect(a.log.join("\n")).toMatch(/Router parser ERROR MaxPayload/)
  })

  it("is cut off when it stops reading: write deadline, counted as a route slow consumer", () => {
    const { net, a, b, onA } = joined()
    b.sub("flood")
    net.pump()
    ;(onA.conn as any).stalled = 1024
    expect(a.pub("flood", "x")).toBe(1)
    net.pump()
    const deadline = a.server.options.writeDeadlineMs
    net.advance(deadline - 1)
    expect(a.cluster.byId.size).toBe(1)
    net.advance(2)
    expect(a.cluster.byId.size).toBe(0)
    expect(a.cluster.slowConsumers).toBe(1)
    expect(a.log.join("\n")).toMatch(/rid:\d+ - Slow Consumer Detected: write blocked/)
  })

  it("is closed when it sends messages before its handshake", () => {
    const net = new MemNet()
    const a = net.node("A")
    const b = net.node("B")
    void b
    // A raw connection to A that skips CONNECT.
    const conns: Array<any> = []
    ;(net as any).dial(a.routePort, (c: any) => {
      conns.push(c)
      return { onData: () => {}, onDrain: () => {}, onClose: () => {} }
    }, () => {})
    const r = [...a.cluster.routes.values()][0]
    r.receive(Buffer.from("RMSG $G foo 2\r\nhi\r\n"), net.now)
    net.pump()
    expect(r.closed).toBe(true)
    expect(a.cluster.routes.size).toBe(0)
  })

  it("is closed when it does not finish its handshake in time", () => {
    const net = new MemNet()
    const a = net.node("A")
    ;(net as any).dial(a.routePort, () => ({ onData: () => {}, onDrain: () => {}, onClose: () => {} }), () => {})
    expect(a.cluster.routes.size).toBe(1)
    net.advance(a.cluster.handshakeTimeoutMs - 1)
    expect(a.cluster.routes.size).toBe(1)
    net.advance(2)
    expect(a.cluster.routes.size).toBe(0)
  })
})
