import { connect, headers, type Msg, type NatsConnection } from "@nats-io/transport-node"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { writeLeafMsg, writeLeafSub, writeLeafUnsub } from "../../src/core/cluster/encode.js"
import {
  decodeLeafConnect,
  decodeLeafInfo,
  type HubInfoFields,
  hubConnectInfo,
  hubInfo,
  isLeafListenerInfo,
  isLoopDetectionSubject,
  type LeafConnectOp,
  type LeafInfoOp,
  loopDetectedError,
  loopDetectionSubject,
  WRONG_PORT
} from "../../src/core/cluster/handshake.js"
import { PeerParser } from "../../src/core/cluster/parser.js"
import { ALL_BYTES, type Msg as PeerMsgRec, outMsg, type PeerRec, peerRecorder, sub, unsub } from "../helpers/cluster-ops.js"
import { churnAnnounced, interestChurn, messagesFrom, interestOps, PeerDriver } from "../helpers/cluster-peer.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { type NatsServerProcess, spawnNatsServer } from "../helpers/nats-server.js"
import { eventually } from "../helpers/server.js"

// The leaf-node codec against a real nats-server (Debian 2.9.10): this test connects to its
// leafnodes port as a leaf node bound to an account, using nothing but src/core/cluster, and
// also lets a nats-server leaf connect to us as its hub. What nats.js clients on the other
// server receive is asserted as the library reports it. Observations: docs/cluster-protocol.md.

const infoAt = (peer: PeerDriver, n: number, what: string) =>
  peer.waitFor((op) => (op[0] === "info" && peer.infos().indexOf(op[1]) === n ? op[1] : undefined), what)

const msgs = (peer: PeerDriver, from = 0): Array<PeerMsgRec> =>
  peer.ops.slice(from).flatMap((op) => (op[0] === "msg" && !op[1].subject.startsWith("$SYS.") ? [op[1]] : []))

const ldsOf = (peer: PeerDriver, what: string, from = 0) =>
  peer.waitFor((op) => (op[0] === "sub" && isLoopDetectionSubject(op[1].subject) ? op[1].subject : undefined), what, from)

const HDRS = Buffer.from("NATS/1.0\r\nFoo: Bar\r\n\r\n")

/** One message of each form to `<p>.plain`, `<p>.reply`, `<p>.headers` and queue subject `<p>q`. */
const publishEachForm = (client: NatsConnection, p: string): void => {
  const h = headers()
  h.set("Foo", "Bar")
  client.publish(`${p}.plain`, ALL_BYTES)
  client.publish(`${p}.reply`, "r", { reply: "_INBOX.r" })
  client.publish(`${p}.headers`, "hb", { headers: h })
  client.publish(`${p}.headers`, "hb", { headers: h, reply: "_INBOX.h" })
  client.publish(`${p}q`, "q", { reply: "_INBOX.q" })
  client.publish(`${p}q`, "q2")
}

/** What a leaf connection carries of publishEachForm's messages, when the peer's interest in `<p>q` is in queue group W. */
const eachForm = (p: string) => {
  const hb = "NATS/1.0\r\nFoo: Bar\r\n\r\nhb"
  const rec = (subject: string, data: string, o: { reply?: string; queues?: Array<string>; hdrLen?: number } = {}) =>
    ({ account: "", subject, reply: o.reply ?? "", queues: o.queues ?? [], hdrLen: o.hdrLen ?? -1, data, origin: "" })
  return {
    records: [
      rec(`${p}.plain`, ALL_BYTES.toString("latin1")),
      rec(`${p}.reply`, "r", { reply: "_INBOX.r" }),
      rec(`${p}.headers`, hb, { hdrLen: 22 }),
      rec(`${p}.headers`, hb, { hdrLen: 22, reply: "_INBOX.h" }),
      rec(`${p}q`, "q", { reply: "_INBOX.q", queues: ["W"] }),
      rec(`${p}q`, "q2", { queues: ["W"] })
    ],
    wire: [
      `LMSG ${p}.reply _INBOX.r 1\r\nr\r\n`,
      `HMSG ${p}.headers 22 24\r\n${hb}\r\n`,
      `HMSG ${p}.headers _INBOX.h 22 24\r\n`,
      `LMSG ${p}q + _INBOX.q W 1\r\nq\r\n`,
      `LMSG ${p}q | W 2\r\nq2\r\n`
    ]
  }
}

/** Messages the peer received from index `from` on, payloads as latin1 text. */
const received = (peer: PeerDriver, from: number) => msgs(peer, from).map((x) => ({ ...x, data: x.data.toString("latin1") }))

/** What our hub would say about itself (the INFOs come from the codec's hubInfo/hubConnectInfo). */
const hubFields = (port: number): HubInfoFields => ({
  server_id: "NSWITCHYARDHUB",
  server_name: "switchyard-hub",
  version: "0.1.0",
  host: "127.0.0.1",
  port,
  headers: true,
  auth_required: true,
  max_payload: 1048576,
  client_id: 1,
  leafnode_urls: [`127.0.0.1:${port}`]
})

describe("leaf-node protocol against nats-server (we are the leaf)", () => {
  let hub: NatsServerProcess
  let nc: NatsConnection
  /** a client of the hub in another account than the leaf user's */
  let other: NatsConnection
  let leaves = 0

  beforeAll(async () => {
    hub = await spawnNatsServer(
      "listen: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\nserver_name: HUB\n" +
        "cluster { name: HUBC, listen: 127.0.0.1:-1 }\n" +
        "accounts { ACC { users: [ { user: app, password: app } ] }, OTHER { users: [ { user: other, password: other } ] } }\n" +
        "leafnodes { listen: 127.0.0.1:-1, authorization { users: [ { user: leaf, password: secret, account: ACC } ] } }\n"
    )
    nc = await connect({ servers: `127.0.0.1:${hub.clientPort}`, user: "app", pass: "app" })
    other = await connect({ servers: `127.0.0.1:${hub.clientPort}`, user: "other", pass: "other" })
  })

  afterAll(async () => {
    await other?.close()
    await nc?.close()
    await hub?.stop()
  })

  interface Attached {
    readonly peer: PeerDriver
    readonly name: string
    /** The hub's INFO asking for CONNECT, and the one answering it. */
    readonly first: LeafInfoOp
    readonly bound: LeafInfoOp
  }

  /** Connects to the hub's leafnodes port as a leaf node and completes the handshake. */
  const attach = async (pass = "secret"): Promise<Attached> => {
    const name = `switchyard-edge-${++leaves}`
    const peer = await PeerDriver.connect("leaf", hub.leafPort!)
    const first = Either.getOrThrow(decodeLeafInfo(await infoAt(peer, 0, "the hub's INFO")))
    // What a soliciting nats-server leaf sends (with credentials for the hub's leaf user).
    peer.sendConnect({ version: "0.1.0", user: "leaf", pass, tls_required: false, server_id: `NSWITCHYARDLEAF${leaves}`, name, cluster: "EDGE", headers: true })
    if (pass !== "secret") return { peer, name, first, bound: first }
    const bound = Either.getOrThrow(decodeLeafInfo(await infoAt(peer, 1, "the hub's INFO answering CONNECT")))
    return { peer, name, first, bound }
  }

  interface LeafRow {
    readonly name?: string
    readonly account: string
    readonly subscriptions: number
    readonly subscriptions_list?: ReadonlyArray<string>
  }
  const leafz = async (): Promise<ReadonlyArray<LeafRow>> => (await hub.monitor<{ leafs: ReadonlyArray<LeafRow> }>("/leafz?subs=1")).leafs

  /** The first INFO of one of the hub's listeners, decoded as a leaf would. */
  const firstInfoAt = async (port: number): Promise<LeafInfoOp> => {
    const peer = await PeerDriver.connect("leaf", port)
    try {
      return Either.getOrThrow(decodeLeafInfo(await infoAt(peer, 0, "an INFO")))
    } finally {
      peer.close()
    }
  }

  it("handshake: INFO asks for CONNECT with a nonce; our CONNECT with the leaf user binds account ACC (second INFO, log, /leafz)", async () => {
    const { peer, first, bound } = await attach()
    expect(first).toMatchObject({ server_name: "HUB", version: "2.9.10", proto: 1, headers: true, auth_required: true, info_on_connect: true, max_payload: 1048576 })
    expect(first.nonce).toMatch(/.+/)
    expect(first.client_id).toBeGreaterThan(0)
    expect(first.leafnode_urls).toEqual([`127.0.0.1:${hub.leafPort}`])
    expect(bound).toMatchObject({ connect_info: true, remote_account: "ACC", client_id: first.client_id })
    expect(bound.nonce).toBeUndefined()
    await eventually(() => /lid:\d+ - Leafnode connection created/.test(hub.log()), "the leaf connection to be logged")
    await eventuallyAsync(async () => (await leafz()).some((l) => l.account === "ACC"), "its /leafz to list the leaf in ACC")
    // its interest comes as LS+, among it its loop-detection subject for the account
    const lds = await peer.waitFor((op) => (op[0] === "sub" && isLoopDetectionSubject(op[1].subject) ? op[1] : undefined), "LS+ $LDS.<id>")
    expect(lds).toEqual({ account: "", subject: lds.subject, queue: "", weight: 1, origin: "", fromLeaf: false })
    expect(peer.ops.filter((op) => op[0] === "error")).toEqual([])
    // our CONNECT said nothing of JetStream: its API stays on its side
    await eventually(() => hub.log().includes('JetStream Not Extended, adding deny [$JS.API.> $KV.> $OBJ.>] for account "ACC"'), "the JetStream deny to be logged")
    peer.close()
  })

  it(`only its leafnode listener's INFO passes the check a leaf makes before CONNECT (else: ${WRONG_PORT})`, async () => {
    expect(isLeafListenerInfo(await firstInfoAt(hub.leafPort!))).toBe(true)
    const client = await firstInfoAt(hub.clientPort)
    expect([client.client_id !== undefined, client.leafnode_urls]).toEqual([true, undefined])
    expect(isLeafListenerInfo(client)).toBe(false)
    const route = await firstInfoAt(hub.routePort!)
    expect([route.client_id, route.leafnode_urls !== undefined]).toEqual([undefined, true])
    expect(isLeafListenerInfo(route)).toBe(false)
  })

  it("a wrong password is refused with -ERR 'Authorization Violation'", async () => {
    const { peer } = await attach("wrong")
    await peer.waitClosed()
    expect(peer.errors()).toEqual(["Authorization Violation"])
  })

  it("its clients' subscriptions in the bound account arrive as LS+/LS- with no account on the wire, queue weights absolute", async () => {
    const { peer } = await attach()
    await peer.roundTrip()
    expect(await interestChurn(nc, peer, "edge")).toEqual(churnAnnounced("", "edge"))
    expect(peer.raw).toContain("LS+ edge.work W 2\r\n")
    expect(peer.raw).toContain("LS- edge.work W\r\n")
    peer.close()
  })

  it("two subscribers of one subject are one LS+; the LS- comes with the last", async () => {
    const { peer } = await attach()
    await peer.roundTrip()
    const from = peer.ops.length
    const a = nc.subscribe("twice")
    const b = nc.subscribe("twice")
    await nc.flush()
    a.unsubscribe()
    await nc.flush()
    await peer.roundTrip()
    expect(interestOps(peer, from)).toEqual([sub("", "twice")])
    b.unsubscribe()
    await nc.flush()
    await peer.waitFor((op) => (op[0] === "unsub" && op[1].subject === "twice" ? true : undefined), "LS- twice", from)
    expect(interestOps(peer, from)).toEqual([sub("", "twice"), unsub("", "twice")])
    peer.close()
  })

  it("queue groups: its own member is served first, whatever weight a leaf announces", async () => {
    const { peer } = await attach()
    const local: Array<string> = []
    const member = nc.subscribe("pref", { queue: "W", callback: (_, msg) => void local.push(msg.string()) })
    await nc.flush()
    peer.write((out) => writeLeafSub(out, "pref", "W", 5))
    await peer.roundTrip()
    await eventuallyAsync(async () => (await leafz()).some((l) => l.subscriptions_list?.includes("pref") === true), "its /leafz to list our member")
    const sent = Array.from({ length: 20 }, (_, i) => String(i))
    const reached = await messagesFrom(peer, async () => {
      for (const x of sent) nc.publish("pref", x)
      await nc.flush()
    })
    expect(reached).toEqual([])
    expect(local).toEqual(sent)
    member.unsubscribe()
    await nc.flush()
    peer.close()
  })

  it("LMSG and HMSG we encode reach its client in ACC byte for byte; `| W` and `+ reply W` reach one member", async () => {
    const { peer } = await attach()
    const got: Array<Msg> = []
    const members: Array<string> = []
    const subs = [
      nc.subscribe("down.>", { callback: (_, msg) => void got.push(msg) }),
      nc.subscribe("down.q", { queue: "W", callback: (_, msg) => void members.push(`a:${msg.string()}:${msg.reply ?? ""}`) }),
      nc.subscribe("down.q", { queue: "W", callback: (_, msg) => void members.push(`b:${msg.string()}:${msg.reply ?? ""}`) })
    ]
    await nc.flush()
    const big = Buffer.alloc(64 * 1024, 9)
    peer.write((out) => {
      writeLeafMsg(out, outMsg({ subject: "down.plain", data: ALL_BYTES }))
      writeLeafMsg(out, outMsg({ subject: "down.reply", reply: "_INBOX.edge", data: Buffer.from("ask") }))
      writeLeafMsg(out, outMsg({ subject: "down.headers", reply: "_INBOX.h", hdrLen: HDRS.length, data: Buffer.concat([HDRS, Buffer.from("hb")]) }))
      writeLeafMsg(out, outMsg({ subject: "down.big", data: big }))
      writeLeafMsg(out, outMsg({ subject: "down.q", queues: ["W"], data: Buffer.from("w") }))
      writeLeafMsg(out, outMsg({ subject: "down.q", reply: "rr", queues: ["W"], data: Buffer.from("w+") }))
    })
    await eventually(() => got.length === 6 && members.length === 2, "6 plain and 2 queue deliveries")
    expect(got.map((g) => g.subject)).toEqual(["down.plain", "down.reply", "down.headers", "down.big", "down.q", "down.q"])
    expect(Buffer.from(got[0].data).equals(ALL_BYTES)).toBe(true)
    expect([got[1].reply, got[1].string()]).toEqual(["_INBOX.edge", "ask"])
    expect([got[2].reply, got[2].headers?.get("Foo"), got[2].string()]).toEqual(["_INBOX.h", "Bar", "hb"])
    expect(Buffer.from(got[3].data).equals(big)).toBe(true)
    expect(got[5].reply).toBe("rr")
    expect(members.map((x) => x.slice(2)).sort()).toEqual(["w+:rr", "w:"])
    for (const s of subs) s.unsubscribe()
    await nc.flush()
    peer.close()
  })

  it("messages its clients publish arrive as LMSG/HMSG once we send LS+, and stop after LS-", async () => {
    const { peer } = await attach()
    peer.write((out) => {
      writeLeafSub(out, "up.>")
      writeLeafSub(out, "upq", "W", 3)
    })
    await peer.roundTrip()
    await eventuallyAsync(async () => (await leafz()).some((l) => l.subscriptions_list?.includes("upq") === true), "its /leafz to list our interest")
    const from = peer.ops.length
    publishEachForm(nc, "up")
    await nc.flush()
    await eventually(() => msgs(peer, from).length >= 6, "6 messages")
    const expected = eachForm("up")
    expect(received(peer, from)).toEqual(expected.records)
    for (const w of expected.wire) expect(peer.raw).toContain(w)
    peer.write((out) => writeLeafUnsub(out, "up.>"))
    const gone = await messagesFrom(peer, async () => {
      nc.publish("up.plain", "gone")
      await nc.flush()
    })
    expect(gone).toEqual([])
    peer.close()
  })

  it("account binding: nothing of another account crosses, in either direction", async () => {
    const { peer } = await attach()
    peer.write((out) => writeLeafSub(out, "bound.>"))
    await peer.roundTrip()
    await eventuallyAsync(async () => (await leafz()).some((l) => l.subscriptions_list?.includes("bound.>") === true), "its /leafz to list our interest")
    const from = peer.ops.length
    const theirs: Array<string> = []
    const ours: Array<string> = []
    other.subscribe("bound.>", { callback: (_, msg) => void theirs.push(msg.string()) })
    const mine = nc.subscribe("bound.>", { callback: (_, msg) => void ours.push(msg.string()) })
    await other.flush()
    await nc.flush()
    other.publish("bound.x", "from OTHER")
    nc.publish("bound.x", "from ACC")
    await other.flush()
    await nc.flush()
    peer.write((out) => writeLeafMsg(out, outMsg({ subject: "bound.y", data: Buffer.from("from the leaf") })))
    await eventually(() => ours.includes("from the leaf") && msgs(peer, from).length > 0, "the leaf's message in ACC and ACC's at the leaf")
    await peer.roundTrip()
    // OTHER's client got only what was published in OTHER; the leaf only ACC's message and interest
    expect(theirs).toEqual(["from OTHER"])
    expect(msgs(peer, from).map((x) => x.data.toString())).toEqual(["from ACC"])
    expect(interestOps(peer, from)).toEqual([sub("", "bound.>")])
    mine.unsubscribe()
    await nc.flush()
    peer.close()
  })

  it("loop detection: the hub passes one leaf's $LDS subject on to its other leaf connections in the account", async () => {
    const a = await attach()
    const b = await attach()
    await b.peer.roundTrip()
    const from = b.peer.ops.length
    const ours = loopDetectionSubject(`SWITCHYARD${leaves}`)
    a.peer.write((out) => writeLeafSub(out, ours))
    await b.peer.waitFor((op) => (op[0] === "sub" && op[1].subject === ours ? true : undefined), `LS+ ${ours} at the other leaf`, from)
    a.peer.close()
    await b.peer.waitFor((op) => (op[0] === "unsub" && op[1].subject === ours ? true : undefined), `LS- ${ours} once the first leaf is gone`, from)
    b.peer.close()
  })

  it("loop detection: sending the hub's own $LDS subject back closes the connection with nats-server's error", async () => {
    const { peer } = await attach()
    const lds = await ldsOf(peer, "LS+ $LDS.<id>")
    peer.write((out) => writeLeafSub(out, lds))
    await peer.waitClosed()
    expect(peer.errors()).toEqual([loopDetectedError("ACC")])
    await eventually(() => hub.log().includes(loopDetectedError("ACC")), "the loop to be logged")
  })

  describe("a malformed op closes the leaf connection with nats-server's reason, and our parser refuses the same bytes", () => {
    it.each([
      ["LS+ with a queue and no weight", "LS+ foo bar\r\n", /processLeafSub Parse Error: 'foo bar'/, "BadArgs"],
      ["LMSG with a bad size", "LMSG foo x\r\nab\r\n", /processLeafMsgArgs Bad or Missing Size: '\[foo x\]'/, "BadArgs"],
      ["LMSG whose second field is no reply marker", "LMSG a b c d 3\r\nabc\r\n", /processLeafMsgArgs Bad or Missing Reply Indicator: 'b'/, "BadArgs"],
      ["HMSG with more header than message", "HMSG foo 5 3\r\nabc\r\n", /processLeafHeaderMsgArgs Header Size larger then TotalSize: 'foo 5 3'/, "BadHeaderSize"],
      ["a route op", "RS+ $G foo\r\n", /processLeafSub Parse Error: '\$G foo'/, "UnknownOp"],
      ["a payload longer than its size", "LMSG foo 3\r\nabcd\r\n", /Leafnode connection closed: Protocol Violation/, "UnknownOp"]
    ])("%s", async (_, bad, logged, kind) => {
      const { peer } = await attach()
      await peer.roundTrip()
      const logFrom = hub.log().length
      peer.send(bad)
      await peer.waitClosed()
      await eventually(() => hub.log().slice(logFrom).includes("Leafnode connection closed: Protocol Violation"), "the close to be logged")
      expect(hub.log().slice(logFrom)).toMatch(logged)
      const ops: Array<PeerRec> = []
      new PeerParser("leaf", peerRecorder(ops), { maxControlLine: 4096, maxPayload: 1 << 20 }).feed(Buffer.from(bad))
      expect(ops.map((op) => (op[0] === "error" ? op[1].kind : op[0]))).toEqual([kind])
    })
  })
})

describe("leaf-node protocol against nats-server (we are the hub)", () => {
  let listener: Awaited<ReturnType<typeof PeerDriver.listen>>
  let leaf: NatsServerProcess
  let peer: PeerDriver
  let connectOp: LeafConnectOp
  /** What it had sent when its CONNECT was in and it had answered a PING, before our INFO answering CONNECT. */
  let beforeBound: ReadonlyArray<string>
  let boundAt = 0
  /** Its clients: in the account its remote binds (EDGEACC), and in another one. */
  let edge: NatsConnection
  let local: NatsConnection

  beforeAll(async () => {
    listener = await PeerDriver.listen("leaf")
    leaf = await spawnNatsServer(
      "listen: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\nserver_name: EDGE\n" +
        "accounts { EDGEACC { users: [ { user: e, password: e } ] }, LOCAL { users: [ { user: l, password: l } ] } }\n" +
        `leafnodes { remotes: [ { url: "nats-leaf://u:p@127.0.0.1:${listener.port}", account: EDGEACC } ] }\n`
    )
    peer = await listener.accepted
    peer.sendInfo(hubInfo(hubFields(listener.port), "abcdefghijklmno"))
    connectOp = Either.getOrThrow(decodeLeafConnect(await peer.waitFor((op) => (op[0] === "connect" ? op[1] : undefined), "its CONNECT")))
    await peer.roundTrip()
    beforeBound = peer.ops.map((op) => op[0])
    boundAt = peer.ops.length
    peer.sendInfo(hubConnectInfo(hubFields(listener.port), "ACC"))
    edge = await connect({ servers: `127.0.0.1:${leaf.clientPort}`, user: "e", pass: "e" })
    local = await connect({ servers: `127.0.0.1:${leaf.clientPort}`, user: "l", pass: "l" })
  })

  afterAll(async () => {
    await edge?.close()
    await local?.close()
    peer?.close()
    listener?.close()
    await leaf?.stop()
  })

  it("its CONNECT decodes; it holds its interest back until our INFO answering CONNECT, then sends it with its $LDS subject", async () => {
    expect(connectOp).toMatchObject({ version: "2.9.10", user: "u", pass: "p", tls_required: false, name: "EDGE", cluster: "EDGE", headers: true })
    expect(connectOp.server_id).toMatch(/^N/)
    // (its own PINGs aside, which it sends on a timer)
    expect(beforeBound.filter((op) => op !== "ping")).toEqual(["connect", "pong"])
    await ldsOf(peer, "its LS+ $LDS.<id>", boundAt)
    await eventuallyAsync(
      async () => (await leaf.monitor<{ leafs: ReadonlyArray<{ account: string }> }>("/leafz")).leafs.some((l) => l.account === "EDGEACC"),
      "its /leafz to list the connection in EDGEACC"
    )
    expect(peer.ops.filter((op) => op[0] === "error" || op[0] === "err")).toEqual([])
  })

  it("its clients' interest in the bound account comes as LS+/LS- with absolute queue weights; another account's stays home", async () => {
    await peer.roundTrip()
    const from = peer.ops.length
    local.subscribe("e.>")
    local.subscribe("e.work", { queue: "W" })
    await local.flush()
    expect(await interestChurn(edge, peer, "e", from)).toEqual(churnAnnounced("", "e"))
  })

  it("LMSG and HMSG we encode reach its client in the bound account: binary, reply, headers, `| Q` and `+ reply Q` to one member", async () => {
    const got: Array<Msg> = []
    const members: Array<string> = []
    const strays: Array<string> = []
    const subs = [
      edge.subscribe("hubward.>", { callback: (_, msg) => void got.push(msg) }),
      edge.subscribe("hubward.q", { queue: "Q", callback: (_, msg) => void members.push(`a:${msg.string()}:${msg.reply ?? ""}`) }),
      edge.subscribe("hubward.q", { queue: "Q", callback: (_, msg) => void members.push(`b:${msg.string()}:${msg.reply ?? ""}`) }),
      local.subscribe("hubward.>", { callback: (_, msg) => void strays.push(msg.subject) })
    ]
    await edge.flush()
    await local.flush()
    await peer.waitFor((op) => (op[0] === "sub" && op[1].subject === "hubward.q" ? true : undefined), "its LS+ hubward.q")
    peer.write((out) => {
      writeLeafMsg(out, outMsg({ subject: "hubward.x", reply: "_INBOX.hub", data: ALL_BYTES }))
      writeLeafMsg(out, outMsg({ subject: "hubward.h", hdrLen: HDRS.length, data: Buffer.concat([HDRS, Buffer.from("hb")]) }))
      writeLeafMsg(out, outMsg({ subject: "hubward.q", queues: ["Q"], data: Buffer.from("q") }))
      writeLeafMsg(out, outMsg({ subject: "hubward.q", reply: "rr", queues: ["Q"], data: Buffer.from("q+") }))
    })
    await eventually(() => got.length === 4 && members.length === 2, "4 plain and 2 queue deliveries")
    expect(got.map((g) => [g.subject, g.reply ?? ""])).toEqual([["hubward.x", "_INBOX.hub"], ["hubward.h", ""], ["hubward.q", ""], ["hubward.q", "rr"]])
    expect(Buffer.from(got[0].data).equals(ALL_BYTES)).toBe(true)
    expect([got[1].headers?.get("Foo"), got[1].string()]).toEqual(["Bar", "hb"])
    expect(members.map((x) => x.slice(2)).sort()).toEqual(["q+:rr", "q:"])
    await peer.roundTrip()
    await local.flush()
    expect(strays).toEqual([])
    for (const s of subs) s.unsubscribe()
  })

  it("its clients' messages come as LMSG/HMSG with reply, headers and the queue group they were picked for; another account's stay home", async () => {
    peer.write((out) => {
      writeLeafSub(out, "edgeward.>")
      writeLeafSub(out, "edgewardq", "W", 1)
    })
    await peer.roundTrip()
    await eventuallyAsync(async () => {
      const leafs = (await leaf.monitor<{ leafs: ReadonlyArray<{ subscriptions_list?: ReadonlyArray<string> }> }>("/leafz?subs=1")).leafs
      return leafs.some((l) => l.subscriptions_list?.includes("edgewardq") === true)
    }, "its /leafz to list our interest")
    const from = peer.ops.length
    local.publish("edgeward.local", "stays")
    await local.flush()
    publishEachForm(edge, "edgeward")
    await edge.flush()
    await eventually(() => msgs(peer, from).length >= 6, "6 messages")
    await peer.roundTrip()
    const expected = eachForm("edgeward")
    expect(received(peer, from)).toEqual(expected.records)
    for (const w of expected.wire) expect(peer.raw).toContain(w)
  })

  it("loop detection: another server's $LDS subject passes; its own sent back closes the connection with its error", async () => {
    const lds = await ldsOf(peer, "its LS+ $LDS.<id>", boundAt)
    peer.write((out) => writeLeafSub(out, loopDetectionSubject("SOMEONEELSE")))
    await peer.roundTrip()
    expect(peer.closed).toBe(false)
    peer.write((out) => writeLeafSub(out, lds))
    await peer.waitClosed()
    expect(peer.errors()).toEqual([loopDetectedError("EDGEACC")])
    await eventually(() => leaf.log().includes(loopDetectedError("EDGEACC")), "the loop to be logged")
  })
})

describe("leaf-node protocol against nats-server (a hub's INFO it refuses)", () => {
  it(`a first INFO without client_id is no hub's: ${WRONG_PORT}, and no CONNECT`, async () => {
    const listener = await PeerDriver.listen("leaf")
    const leaf = await spawnNatsServer(
      `listen: 127.0.0.1:-1\nserver_name: EDGE2\nleafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${listener.port}" } ] }\n`
    )
    try {
      const peer = await listener.accepted
      const { client_id: _, ...noClientId } = hubInfo(hubFields(listener.port), "abcdefghijklmno")
      peer.sendInfo(noClientId)
      await peer.waitClosed()
      await eventually(() => leaf.log().includes(WRONG_PORT), "the wrong port to be logged")
      expect(peer.ops.filter((op) => op[0] === "connect")).toEqual([])
    } finally {
      listener.close()
      await leaf.stop()
    }
  })
})
