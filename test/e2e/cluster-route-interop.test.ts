import * as net from "node:net"
import { connect, headers, type Msg, type NatsConnection } from "@nats-io/transport-node"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { writeRouteMsg, writeRouteSub, writeRouteUnsub } from "../../src/core/cluster/encode.js"
import { decodeRouteConnect, decodeRouteInfo, type RouteInfoOp } from "../../src/core/cluster/handshake.js"
import { RemoteInterest } from "../../src/core/cluster/interest.js"
import { PeerParser, type PeerMsg } from "../../src/core/cluster/parser.js"
import { ALL_BYTES, type Msg as PeerMsgRec, outMsg, type PeerRec, peerRecorder } from "../helpers/cluster-ops.js"
import { churnAnnounced, interestChurn, messagesFrom, PeerDriver } from "../helpers/cluster-peer.js"
import { type NatsServerProcess, natsServerVersion, spawnNatsServer } from "../helpers/nats-server.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { eventually } from "../helpers/server.js"

// The route codec against a real nats-server (Debian 2.9.10): this test joins its cluster
// over raw TCP as a route peer, using nothing but src/core/cluster, and checks what the
// server and its clients see. What was observed is written up in docs/cluster-protocol.md.

let ns: NatsServerProcess
let nc: NatsConnection
let peers = 0

beforeAll(async () => {
  ns = await spawnNatsServer(
    "listen: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\nserver_name: NS1\ncluster { name: C1, listen: 127.0.0.1:-1 }\n"
  )
  nc = await connect({ servers: `127.0.0.1:${ns.clientPort}` })
})

afterAll(async () => {
  await nc?.close()
  await ns?.stop()
})

interface Joined {
  readonly peer: PeerDriver
  readonly id: string
  readonly info: RouteInfoOp
}

/** Connects to nats-server's route port as a new cluster member and completes the handshake. */
const join = async (o: { cluster?: string; connectUrls?: ReadonlyArray<string> } = {}): Promise<Joined> => {
  const id = `NSWITCHYARDTEST${++peers}`
  const peer = await PeerDriver.connect("route", ns.routePort!)
  const json = await peer.waitFor((op) => (op[0] === "info" ? op[1] : undefined), "nats-server's INFO")
  const info = Either.getOrThrow(decodeRouteInfo(json))
  const cluster = o.cluster ?? "C1"
  // What a soliciting nats-server sends: CONNECT, then its own INFO.
  peer.sendConnect({ echo: true, verbose: false, pedantic: false, tls_required: false, headers: true, name: id, cluster, lnoc: true })
  peer.sendInfo({
    server_id: id,
    server_name: `switchyard-${peers}`,
    version: "0.1.0",
    proto: 2,
    host: "127.0.0.1",
    port: 1,
    headers: true,
    max_payload: 1048576,
    cluster,
    connect_urls: o.connectUrls ?? [],
    lnoc: true
  })
  return { peer, id, info }
}

interface RouteInfoRow {
  readonly remote_id: string
  readonly did_solicit: boolean
  readonly subscriptions: number
  readonly subscriptions_list?: ReadonlyArray<string>
}
const routez = async (id: string): Promise<RouteInfoRow | undefined> =>
  (await ns.monitor<{ routes: ReadonlyArray<RouteInfoRow> }>("/routez?subs=1")).routes.find((r) => r.remote_id === id)


const payloadOf = (m: Msg): Buffer => Buffer.from(m.data)
const m = (o: Partial<PeerMsg> & { readonly subject: string; readonly data: Buffer }): PeerMsg => outMsg({ account: "$G", ...o })

const msgs = (peer: PeerDriver, from = 0): Array<PeerMsgRec> =>
  peer.ops.slice(from).flatMap((op) => (op[0] === "msg" && op[1].account !== "$SYS" ? [op[1]] : []))

describe(`route protocol against nats-server`, () => {
  it("is nats-server 2.9.10 (the Debian package the docs were written against)", () => {
    expect(natsServerVersion()).toBe("2.9.10")
  })

  it("handshake: its INFO decodes, our CONNECT and INFO make it register the route (log, /routez, client connect_urls)", async () => {
    const { peer, id, info } = await join({ connectUrls: ["127.0.0.1:4999"] })
    expect(info).toMatchObject({ server_name: "NS1", version: "2.9.10", proto: 2, cluster: "C1", headers: true, lnoc: true, max_payload: 1048576 })
    expect(info.connect_urls).toEqual([`127.0.0.1:${ns.clientPort}`])
    await eventually(() => /rid:\d+ - Route connection created/.test(ns.log()), "the route to be logged")
    await eventuallyAsync(async () => (await routez(id)) !== undefined, "its /routez to list the route")
    expect(await routez(id)).toMatchObject({ remote_id: id, did_solicit: false })
    // It sends its interest right away: the system account's subjects, parsed without an error.
    await peer.waitFor((op) => (op[0] === "sub" && op[1].account === "$SYS" ? true : undefined), "RS+ $SYS ...")
    expect(peer.ops.filter((op) => op[0] === "error")).toEqual([])
    // and pings; the driver's PONG keeps the route up
    await peer.waitFor((op) => (op[0] === "ping" ? true : undefined), "its PING")
    // Our INFO's client URL is now in what it tells its clients.
    const raw = net.connect(ns.clientPort, "127.0.0.1")
    let text = ""
    raw.on("data", (d) => (text += d.toString()))
    await eventually(() => text.includes("\r\n"), "a client INFO")
    raw.destroy()
    expect(JSON.parse(/^INFO (.*)\r\n/.exec(text)![1]).connect_urls).toContain("127.0.0.1:4999")
    peer.close()
  })

  it("a route from another cluster is refused with nats-server's error", async () => {
    const { peer } = await join({ cluster: "OTHER" })
    await peer.waitClosed()
    expect(peer.errors()).toEqual(['Rejecting connection, cluster name "OTHER" does not match "C1"'])
    await eventually(() => ns.log().includes("Router connection closed: Cluster Name Conflict"), "the refusal to be logged")
  })

  it("its clients' subscriptions arrive as RS+/RS- (queue weights absolute, updated)", async () => {
    const { peer } = await join()
    await peer.roundTrip()
    expect(await interestChurn(nc, peer, "interop")).toEqual(churnAnnounced("$G", "interop"))
    peer.close()
  })

  it("RMSG and HMSG we encode reach its client byte for byte: binary payload, reply, headers, 100 KiB", async () => {
    const { peer } = await join()
    const got: Array<Msg> = []
    const s = nc.subscribe("deliver.>", { callback: (_, msg) => void got.push(msg) })
    await nc.flush()
    const hdrs = Buffer.from("NATS/1.0\r\nFoo: Bar\r\nX-Bin: \u00e9\r\n\r\n", "latin1")
    const big = Buffer.alloc(100 * 1024, 7)
    peer.write((out) => {
      writeRouteMsg(out, m({ subject: "deliver.plain", data: ALL_BYTES }))
      writeRouteMsg(out, m({ subject: "deliver.reply", reply: "_INBOX.back", data: Buffer.from("ask") }))
      writeRouteMsg(out, m({ subject: "deliver.headers", hdrLen: hdrs.length, data: Buffer.concat([hdrs, Buffer.from("body")]) }))
      writeRouteMsg(out, m({ subject: "deliver.big", data: big }))
      writeRouteMsg(out, m({ subject: "deliver.empty", data: Buffer.alloc(0) }))
    })
    await eventually(() => got.length === 5, "5 messages")
    expect(got.map((g) => g.subject)).toEqual(["deliver.plain", "deliver.reply", "deliver.headers", "deliver.big", "deliver.empty"])
    expect(payloadOf(got[0]).equals(ALL_BYTES)).toBe(true)
    expect(got[1].reply).toBe("_INBOX.back")
    expect(got[1].string()).toBe("ask")
    expect(got[2].headers?.get("Foo")).toBe("Bar")
    expect(got[2].string()).toBe("body")
    expect(payloadOf(got[3]).equals(big)).toBe(true)
    expect(got[4].data.length).toBe(0)
    s.unsubscribe()
    peer.close()
  })

  it("an HMSG's header block reaches a raw client unchanged (the exact wire bytes)", async () => {
    const { peer } = await join()
    const raw = net.connect(ns.clientPort, "127.0.0.1")
    let text = ""
    raw.on("data", (d) => (text += d.toString("latin1")))
    raw.write('CONNECT {"verbose":false,"headers":true}\r\nSUB wire.check 9\r\nPING\r\n')
    await eventually(() => text.includes("PONG\r\n"), "the raw client's PONG")
    const block = "NATS/1.0\r\nA: 1\r\nB:  two  words\r\n\r\n"
    peer.write((out) => writeRouteMsg(out, m({ subject: "wire.check", reply: "r.1", hdrLen: block.length, data: Buffer.from(`${block}pay\r\nload`, "latin1") })))
    await eventually(() => text.includes("load\r\n"), "the HMSG")
    expect(text.slice(text.indexOf("HMSG"))).toBe(`HMSG wire.check 9 r.1 ${block.length} ${block.length + 9}\r\n${block}pay\r\nload\r\n`)
    raw.destroy()
    peer.close()
  })

  it("queue groups: `| W` reaches one member of W; a message naming no queue reaches plain subscribers only", async () => {
    const { peer } = await join()
    const plain: Array<string> = []
    const members: Array<string> = []
    const subs = [
      nc.subscribe("qdeliver", { callback: (_, msg) => void plain.push(msg.string()) }),
      nc.subscribe("qdeliver", { queue: "W", callback: (_, msg) => void members.push(`a:${msg.string()}`) }),
      nc.subscribe("qdeliver", { queue: "W", callback: (_, msg) => void members.push(`b:${msg.string()}`) })
    ]
    await nc.flush()
    peer.write((out) => {
      writeRouteMsg(out, m({ subject: "qdeliver", data: Buffer.from("none") }))
      writeRouteMsg(out, m({ subject: "qdeliver", queues: ["W"], data: Buffer.from("w") }))
      writeRouteMsg(out, m({ subject: "qdeliver", reply: "rr", queues: ["W", "OTHER"], data: Buffer.from("w+") }))
      writeRouteMsg(out, m({ subject: "qdeliver", queues: ["OTHER"], data: Buffer.from("other") }))
    })
    await eventually(() => plain.length === 4, "4 plain deliveries")
    await nc.flush()
    expect(plain).toEqual(["none", "w", "w+", "other"])
    expect(members.map((x) => x.slice(2)).sort()).toEqual(["w", "w+"])
    for (const s of subs) s.unsubscribe()
    peer.close()
  })

  it("messages its clients publish arrive as RMSG/HMSG in every form, once we announce interest", async () => {
    const { peer, id } = await join()
    peer.write((out) => {
      writeRouteSub(out, "$G", "up.>")
      writeRouteSub(out, "$G", "upq", "W", 2)
    })
    await peer.roundTrip()
    expect((await routez(id))?.subscriptions).toBe(2)
    const from = peer.ops.length
    const h = headers()
    h.set("Foo", "Bar")
    nc.publish("up.plain", ALL_BYTES)
    nc.publish("up.reply", "r", { reply: "_INBOX.me" })
    nc.publish("up.headers", "hb", { headers: h, reply: "_INBOX.h" })
    nc.publish("upq", "q", { reply: "_INBOX.q" })
    nc.publish("upq", "q2")
    nc.publish("not.ours", "x")
    await nc.flush()
    await eventually(() => msgs(peer, from).length >= 5, "5 RMSGs")
    await peer.roundTrip()
    const got = msgs(peer, from)
    expect(got.map((x) => ({ ...x, data: x.data.toString("latin1") }))).toEqual([
      { account: "$G", subject: "up.plain", reply: "", queues: [], hdrLen: -1, data: ALL_BYTES.toString("latin1"), origin: "" },
      { account: "$G", subject: "up.reply", reply: "_INBOX.me", queues: [], hdrLen: -1, data: "r", origin: "" },
      { account: "$G", subject: "up.headers", reply: "_INBOX.h", queues: [], hdrLen: 22, data: "NATS/1.0\r\nFoo: Bar\r\n\r\nhb", origin: "" },
      { account: "$G", subject: "upq", reply: "_INBOX.q", queues: ["W"], hdrLen: -1, data: "q", origin: "" },
      { account: "$G", subject: "upq", reply: "", queues: ["W"], hdrLen: -1, data: "q2", origin: "" }
    ])
    // the wire forms, as nats-server wrote them
    expect(peer.raw).toContain("RMSG $G upq + _INBOX.q W 1\r\nq\r\n")
    expect(peer.raw).toContain("RMSG $G upq | W 2\r\nq2\r\n")
    peer.write((out) => writeRouteUnsub(out, "$G", "up.>"))
    const gone = await messagesFrom(peer, async () => {
      nc.publish("up.plain", "gone")
      await nc.flush()
    })
    expect(gone).toEqual([])
    peer.close()
  })

  it("interest and messages of a leaf behind us: LS+ <origin> and LMSG <origin> with two sizes", async () => {
    const { peer, id } = await join()
    peer.write((out) => writeRouteSub(out, "$G", "leafside.>", "", 1, "EDGE1"))
    await peer.roundTrip()
    expect((await routez(id))?.subscriptions_list).toContain("leafside.>")
    const from = peer.ops.length
    nc.publish("leafside.a", "to-leaf")
    await nc.flush()
    await eventually(() => msgs(peer, from).length === 1, "the message for the leaf interest")
    expect(msgs(peer, from)[0]).toMatchObject({ subject: "leafside.a", origin: "" })
    // a message that entered the cluster through a leaf (LMSG <origin> ...) reaches its client
    const got: Array<Msg> = []
    const s = nc.subscribe("fromleaf.>", { callback: (_, msg) => void got.push(msg) })
    await nc.flush()
    peer.write((out) => {
      writeRouteMsg(out, m({ subject: "fromleaf.plain", origin: "EDGE1", reply: "_INBOX.l", data: Buffer.from("lp") }))
      writeRouteMsg(out, m({ subject: "fromleaf.hdr", origin: "EDGE1", hdrLen: 22, data: Buffer.from("NATS/1.0\r\nFoo: Bar\r\n\r\nlh") }))
    })
    await eventually(() => got.length === 2, "2 messages from the leaf side")
    expect([got[0].subject, got[0].reply, got[0].string()]).toEqual(["fromleaf.plain", "_INBOX.l", "lp"])
    expect([got[1].headers?.get("Foo"), got[1].string()]).toEqual(["Bar", "lh"])
    // LS- (without the origin, as 2.9.10 wants it) withdraws the leaf interest
    peer.write((out) => writeRouteUnsub(out, "$G", "leafside.>", "", true))
    await peer.roundTrip()
    expect((await routez(id))?.subscriptions_list ?? []).not.toContain("leafside.>")
    s.unsubscribe()
    peer.close()
  })

  it("an invalid subject in RS+ is answered with -ERR 'Invalid Subscription' and the route stays up; the interest table refuses it too", async () => {
    const { peer } = await join()
    peer.write((out) => writeRouteSub(out, "$G", "bad..subject"))
    await peer.roundTrip()
    expect(peer.errors()).toEqual(["Invalid Subscription"])
    expect(peer.closed).toBe(false)
    expect(new RemoteInterest<string>().add("r", { account: "$G", subject: "bad..subject", queue: "", weight: 1, origin: "", fromLeaf: false })).toBe("invalid")
    peer.close()
  })

  describe("a malformed op closes the route with nats-server's reason, and our parser refuses the same bytes", () => {
    it.each([
      ["RS+ without a subject", "RS+ $G\r\n", /processRemoteSub Parse Error: '\$G'/, "BadArgs"],
      ["RS- without a subject", "RS- $G\r\n", /processRemoteUnsub parse error: '\$G'/, "BadArgs"],
      ["RMSG with a bad size", "RMSG $G foo x\r\n", /processRoutedMsgArgs Bad or Missing Size: '\[\$G foo x\]'/, "BadArgs"],
      ["HMSG with more header than message", "HMSG $G foo 5 3\r\nabc\r\n", /Header Size larger then TotalSize: '\$G foo 5 3'/, "BadHeaderSize"],
      ["LMSG with one size", "LMSG X $G foo 3\r\nabc\r\n", /processRoutedOriginClusterMsgArgs Parse Error: '\[X \$G foo 3\]'/, "BadArgs"],
      ["LS- naming an origin", "LS- EDGE $G foo q\r\n", /processRemoteUnsub parse error: 'EDGE \$G foo q'/, "BadArgs"],
      ["a payload longer than its size", "RMSG $G foo 3\r\nabcd\r\n", /Router parser ERROR/, "UnknownOp"],
      ["an unknown op", "XYZ\r\n", /Router parser ERROR, state=0, i=0: proto='"XYZ\\r"\.\.\.'/, "UnknownOp"]
    ])("%s", async (_, bad, logged, kind) => {
      const { peer, id } = await join()
      await peer.roundTrip()
      const logFrom = ns.log().length
      peer.send(bad)
      await peer.waitClosed()
      await eventually(() => ns.log().slice(logFrom).includes("Router connection closed: Protocol Violation"), "the close to be logged")
      const logged$ = ns.log().slice(logFrom)
      expect(logged$).toMatch(logged)
      expect(await routez(id)).toBeUndefined()
      if (kind === "UnknownOp") expect(peer.errors()).toEqual(["Unknown Protocol Operation"])
      // the same bytes through our parser: refused, with the kind the wiring maps to the close
      const ops: Array<PeerRec> = []
      new PeerParser("route", peerRecorder(ops), { maxControlLine: 4096, maxPayload: 1 << 20 }).feed(Buffer.from(bad))
      expect(ops.map((op) => (op[0] === "error" ? op[1].kind : op[0]))).toEqual([kind])
    })
  })

  it("a nats-server that solicits a route to us sends CONNECT then INFO, which decode (did_solicit on its side)", async () => {
    const listener = await PeerDriver.listen("route")
    const solicitor = await spawnNatsServer(
      `listen: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\nserver_name: NS2\ncluster { name: C1, listen: 127.0.0.1:-1, routes: ["nats-route://127.0.0.1:${listener.port}"] }\n`
    )
    try {
      const peer = await listener.accepted
      peer.sendInfo({ server_id: "NSWITCHYARDACCEPT", server_name: "switchyard-accept", version: "0.1.0", proto: 2, host: "127.0.0.1", port: listener.port, headers: true, max_payload: 1048576, cluster: "C1", connect_urls: [], lnoc: true })
      const connectJson = await peer.waitFor((op) => (op[0] === "connect" ? op[1] : undefined), "its CONNECT")
      const connect = Either.getOrThrow(decodeRouteConnect(connectJson))
      expect(connect).toMatchObject({ echo: true, verbose: false, pedantic: false, tls_required: false, headers: true, cluster: "C1", lnoc: true })
      const infoJson = await peer.waitFor((op) => (op[0] === "info" ? op[1] : undefined), "its INFO")
      expect(Either.getOrThrow(decodeRouteInfo(infoJson))).toMatchObject({ server_id: connect.name, server_name: "NS2", cluster: "C1" })
      expect(peer.ops.slice(0, 2).map((op) => op[0])).toEqual(["connect", "info"])
      await eventuallyAsync(async () => {
        const r = (await solicitor.monitor<{ routes: ReadonlyArray<RouteInfoRow> }>("/routez")).routes
        return r.some((x) => x.remote_id === "NSWITCHYARDACCEPT" && x.did_solicit)
      }, "its /routez to list the route it solicited")
      // messages flow our way too
      const nc2 = await connect2(solicitor.clientPort)
      peer.write((out) => writeRouteSub(out, "$G", "toaccept"))
      await eventuallyAsync(async () => {
        nc2.publish("toaccept", "hi")
        await nc2.flush()
        return msgs(peer).some((x) => x.subject === "toaccept")
      }, "a message on the route it solicited")
      await nc2.close()
      peer.close()
    } finally {
      listener.close()
      await solicitor.stop()
    }
  })
})

const connect2 = (port: number) => connect({ servers: `127.0.0.1:${port}` })
