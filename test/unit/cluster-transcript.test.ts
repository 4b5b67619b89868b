import { readFileSync } from "node:fs"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { encodeConnect, encodeInfo, PING, PONG, writeLeafMsg, writeLeafSub, writeLeafUnsub, writeRouteMsg, writeRouteSub, writeRouteUnsub } from "../../src/core/cluster/encode.js"
import { decodeLeafConnect, decodeLeafInfo, decodeRouteConnect, decodeRouteInfo } from "../../src/core/cluster/handshake.js"
import { type PeerKind, PeerParser } from "../../src/core/cluster/parser.js"
import { OutBuf } from "../../src/core/outbuf.js"
import { msg, type PeerRec, peerRecorder, sub, unsub } from "../helpers/cluster-ops.js"

// A transcript of what nats-server 2.9.10 sent on a route (server B soliciting server A of
// cluster C1) and on a leaf connection (server L of cluster LEAF1 soliciting hub A), with
// clients on all three subscribing and publishing: recorded by
// scripts/capture-cluster-transcript.mjs through a proxy, each entry one socket read.

interface Direction {
  readonly toAccepting: ReadonlyArray<string>
  readonly toSoliciting: ReadonlyArray<string>
}
const transcript = JSON.parse(readFileSync(new URL("../fixtures/cluster/nats-server-2.9.10.json", import.meta.url), "utf8")) as {
  readonly "nats-server": string
  readonly route: Direction
  readonly leaf: Direction
}

const parseReads = (kind: PeerKind, reads: ReadonlyArray<string>): Array<PeerRec> => {
  const ops: Array<PeerRec> = []
  const p = new PeerParser(kind, peerRecorder(ops), { maxControlLine: 4096, maxPayload: 1 << 20 })
  for (const r of reads) p.feed(Buffer.from(r, "latin1"))
  return ops
}

/** Our encoders' bytes for parsed ops, in order. */
const reencode = (kind: PeerKind, ops: ReadonlyArray<PeerRec>): string => {
  const out = new OutBuf(256)
  const put = (b: Buffer) => out.writeBytes(b, 0, b.length)
  for (const op of ops) {
    switch (op[0]) {
      case "info":
        put(encodeInfo(JSON.parse(op[1]) as object))
        break
      case "connect":
        put(encodeConnect(JSON.parse(op[1]) as object))
        break
      case "ping":
        put(PING)
        break
      case "pong":
        put(PONG)
        break
      case "sub": {
        const i = op[1]
        if (kind === "route") writeRouteSub(out, i.account, i.subject, i.queue, i.weight, i.origin)
        else writeLeafSub(out, i.subject, i.queue, i.weight)
        break
      }
      case "unsub": {
        const i = op[1]
        if (kind === "route") writeRouteUnsub(out, i.account, i.subject, i.queue, i.fromLeaf)
        else writeLeafUnsub(out, i.subject, i.queue)
        break
      }
      case "msg": {
        const m = { ...op[1], buf: op[1].data, start: 0, end: op[1].data.length }
        if (kind === "route") writeRouteMsg(out, m)
        else writeLeafMsg(out, m)
        break
      }
      default:
        throw new Error(`unexpected ${op[0]}`)
    }
  }
  return (out.take() ?? Buffer.alloc(0)).toString("latin1")
}

const kinds = (ops: ReadonlyArray<PeerRec>, ...names: ReadonlyArray<string>) => ops.filter((o) => names.includes(o[0]))
const without$SYS = (ops: ReadonlyArray<PeerRec>) =>
  ops.filter((o) => !((o[0] === "sub" || o[0] === "unsub" || o[0] === "msg") && o[1].account === "$SYS"))

describe(`nats-server ${transcript["nats-server"]} transcript`, () => {
  it("was recorded from nats-server 2.9.10", () => {
    expect(transcript["nats-server"]).toBe("2.9.10")
  })

  describe.each([
    ["route", "toSoliciting", transcript.route.toSoliciting],
    ["route", "toAccepting", transcript.route.toAccepting],
    ["leaf", "toSoliciting", transcript.leaf.toSoliciting],
    ["leaf", "toAccepting", transcript.leaf.toAccepting]
  ] as const)("%s, %s", (kind, _, reads) => {
    const ops = parseReads(kind, reads)

    it("parses without an error, every op", () => {
      expect(kinds(ops, "error")).toEqual([])
      expect(ops.length).toBeGreaterThan(5)
    })

    it("our encoders write what nats-server wrote, byte for byte (INFO's trailing blank and LS-'s double space aside)", () => {
      const original = reads.join("").replace(/^(INFO .*) \r\n/gm, "$1\r\n").replace(/^LS- {2}/gm, "LS- ")
      expect(reencode(kind, ops)).toBe(original)
    })
  })

  it("route INFO and CONNECT decode with the handshake schemas", () => {
    const accepting = parseReads("route", transcript.route.toSoliciting)
    const soliciting = parseReads("route", transcript.route.toAccepting)
    const infoA = decodeRouteInfo((kinds(accepting, "info")[0] as readonly [string, string])[1])
    expect(Either.getOrThrow(infoA)).toMatchObject({ server_name: "A", version: "2.9.10", proto: 2, cluster: "C1", headers: true, lnoc: true, max_payload: 1048576 })
    expect(Either.getOrThrow(infoA).leafnode_urls).toHaveLength(1)
    const connectB = Either.getOrThrow(decodeRouteConnect((soliciting[0] as readonly [string, string])[1]))
    expect(connectB).toEqual({ echo: true, verbose: false, pedantic: false, tls_required: false, headers: true, name: connectB.name, cluster: "C1", lnoc: true })
    // the soliciting server sends CONNECT, then its own INFO
    expect(soliciting.slice(0, 2).map((o) => o[0])).toEqual(["connect", "info"])
    expect(Either.getOrThrow(decodeRouteInfo((soliciting[1] as readonly [string, string])[1]))).toMatchObject({ server_name: "B", server_id: connectB.name })
  })

  it("leaf INFO (twice: asking for CONNECT, then binding the account) and CONNECT decode", () => {
    const hub = parseReads("leaf", transcript.leaf.toSoliciting)
    const leaf = parseReads("leaf", transcript.leaf.toAccepting)
    const [first, second] = kinds(hub, "info").map((o) => Either.getOrThrow(decodeLeafInfo((o as readonly [string, string])[1])))
    expect(first).toMatchObject({ server_name: "A", proto: 1, auth_required: true, info_on_connect: true, cluster: "C1" })
    expect(first.nonce).toBeDefined()
    expect(second).toMatchObject({ connect_info: true, remote_account: "$G" })
    expect(Either.getOrThrow(decodeLeafConnect((leaf[0] as readonly [string, string])[1]))).toMatchObject({
      version: "2.9.10",
      name: "L",
      cluster: "LEAF1",
      headers: true
    })
  })

  it("the route carried the clients' interest and messages in nats-server's forms", () => {
    const fromA = without$SYS(parseReads("route", transcript.route.toSoliciting))
    expect(fromA).toEqual(
      expect.arrayContaining([
        sub("$G", "hub.>"),
        sub("$G", "work.*", "W", 1),
        sub("$G", "work.*", "W", 2),
        sub("$G", "leafy.>", "", 1, "LEAF1"),
        sub("$G", "lq", "LQ", 1, "LEAF1"),
        msg("$G", "routed.x", "down", { reply: "back" }),
        msg("$G", "routed.z", "from-leaf", { reply: "r3", origin: "LEAF1" }),
        unsub("$G", "leafy.>", "", true),
        unsub("$G", "work.*", "W")
      ])
    )
    // a leaf's loop-detection subject travels the route as leaf interest
    expect(fromA.some((o) => o[0] === "sub" && o[1].subject.startsWith("$LDS.") && o[1].origin === "LEAF1")).toBe(true)
    const fromB = without$SYS(parseReads("route", transcript.route.toAccepting))
    expect(fromB).toEqual(
      expect.arrayContaining([
        msg("$G", "work.a", "job", { queues: ["W"] }),
        msg("$G", "work.b", "job2", { reply: "rr", queues: ["W"] }),
        msg("$G", "lq", "q", { reply: "r2", queues: ["LQ"] })
      ])
    )
  })

  it("the leaf connection carried no account, and HMSG for headers", () => {
    const fromHub = parseReads("leaf", transcript.leaf.toSoliciting)
    expect(fromHub).toEqual(
      expect.arrayContaining([
        sub("", "hub.>"),
        sub("", "work.*", "W", 2),
        sub("", "rq", "RQ", 1),
        msg("", "lq", "q", { reply: "r2", queues: ["LQ"] }),
        msg("", "leafy.2", "NATS/1.0\r\nFoo: Bar\r\n\r\nxh", { hdrLen: 22 })
      ])
    )
    const fromLeaf = parseReads("leaf", transcript.leaf.toAccepting)
    expect(fromLeaf).toEqual(
      expect.arrayContaining([
        sub("", "leafy.>"),
        msg("", "routed.z", "from-leaf", { reply: "r3" }),
        msg("", "rq", "NATS/1.0\r\nFoo: Bar\r\n\r\nq", { reply: "rr", queues: ["RQ"], hdrLen: 22 }),
        unsub("", "lq", "LQ")
      ])
    )
  })
})
