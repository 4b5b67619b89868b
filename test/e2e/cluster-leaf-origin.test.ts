import type { NatsConnection } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../clients/run.js"
import type { PeerRec } from "../helpers/cluster-ops.js"
import { interestOps, PeerDriver } from "../helpers/cluster-peer.js"
import { type Implementation, leafsUp, type LeafServer, startLeafServer } from "../helpers/leaf-nodes.js"

// A hub that is also in a cluster passes its leaf nodes' interest on to its routes. nats-server
// 2.9.10 sends a change made by a leaf's interest as `LS+ <leaf cluster> <account> ...` (LS-
// for the last one withdrawn), a change made by its own clients as RS+/RS-, with one count
// per subject (and queue group) for both. The same script runs against a nats-server hub and
// a Switchyard hub, with a raw route peer (src/core/cluster only) in the hub's cluster and a
// real nats-server leaf of cluster EDGE: both hubs must send the peer the same ops.

interface Setup {
  readonly hub: LeafServer
  readonly leaf: LeafServer
  readonly routePort: number
  readonly peer: PeerDriver
  readonly hubClient: NatsConnection
  readonly leafClient: NatsConnection
}

const setUp = async (impl: Implementation): Promise<Setup> => {
  const routePort = await freePort()
  const hub = await startLeafServer(impl, "HUB", `cluster { name: C1, listen: 127.0.0.1:${routePort} }\nleafnodes { listen: 127.0.0.1:{leaf} }\n`)
  const leaf = await startLeafServer("nats-server", "EDGEN", `cluster { name: EDGE, listen: 127.0.0.1:${await freePort()} }\nleafnodes { remotes: [ { url: "nats://127.0.0.1:${hub.leafPort}" } ] }\n`)
  await leafsUp(hub, 1)
  await leafsUp(leaf, 1)
  const peer = await PeerDriver.connect("route", routePort)
  await peer.waitFor((op) => (op[0] === "info" ? true : undefined), "the hub's INFO")
  // What a soliciting nats-server sends: CONNECT, then its own INFO; lnoc: it understands LS+ <origin>.
  peer.sendConnect({ echo: true, verbose: false, pedantic: false, tls_required: false, headers: true, name: "NORIGINPEER", cluster: "C1", lnoc: true })
  peer.sendInfo({ server_id: "NORIGINPEER", server_name: "origin-peer", version: "2.9.10", proto: 1, host: "127.0.0.1", port: 1, headers: true, max_payload: 1048576, cluster: "C1", connect_urls: [], lnoc: true })
  await peer.roundTrip()
  return { hub, leaf, routePort, peer, hubClient: await hub.client(), leafClient: await leaf.client() }
}

/** The interest ops the peer got, as wire-like text (LS- as nats-server means it: no origin), without the step markers. */
const seen = (peer: PeerDriver): Array<string> =>
  interestOps(peer).flatMap((op: PeerRec) => {
    if (op[0] !== "sub" && op[0] !== "unsub") return []
    const i = op[1]
    if (i.subject.startsWith("mark.")) return []
    const verb = `${i.fromLeaf ? "LS" : "RS"}${op[0] === "sub" ? "+" : "-"}`
    const origin = i.origin === "" ? "" : ` ${i.origin}`
    const queue = i.queue === "" ? "" : op[0] === "sub" ? ` ${i.queue} ${i.weight}` : ` ${i.queue}`
    return [`${verb}${origin} ${i.account} ${i.subject}${queue}`]
  })

/** Runs the script; each step ends once the hub has passed on everything before it (a marker subscription by the same client reaches the peer). */
const script = async (s: Setup): Promise<Array<string>> => {
  let n = 0
  const step = async (nc: NatsConnection, act: () => void): Promise<void> => {
    act()
    const mark = `mark.${++n}`
    nc.subscribe(mark)
    await nc.flush()
    await s.peer.waitFor((op) => (op[0] === "sub" && op[1].subject === mark ? true : undefined), `marker ${mark}`)
  }
  const { hubClient: hc, leafClient: lc } = s
  // a plain subject: the leaf first, then a client of the hub; withdrawn in the same order
  const l1 = lc.subscribe("x.a")
  await step(lc, () => {})
  const h1 = hc.subscribe("x.a")
  await step(hc, () => {})
  await step(lc, () => l1.unsubscribe())
  await step(hc, () => h1.unsubscribe())
  // a queue group with members on both sides: one absolute weight, sent by whoever changed it
  const q1 = lc.subscribe("q.a", { queue: "W" })
  await step(lc, () => {})
  const q2 = lc.subscribe("q.a", { queue: "W" })
  await step(lc, () => {})
  const q3 = hc.subscribe("q.a", { queue: "W" })
  await step(hc, () => {})
  await step(lc, () => q1.unsubscribe())
  await step(hc, () => q3.unsubscribe())
  await step(lc, () => q2.unsubscribe())
  // the hub's client first, the leaf's last: the leaf's withdrawal is the LS-
  const h2 = hc.subscribe("y.b")
  await step(hc, () => {})
  const l2 = lc.subscribe("y.b")
  await step(lc, () => {})
  await step(hc, () => h2.unsubscribe())
  await step(lc, () => l2.unsubscribe())
  return seen(s.peer)
}

const EXPECTED = [
  "LS+ EDGE $G x.a",
  "RS- $G x.a",
  "LS+ EDGE $G q.a W 1",
  "LS+ EDGE $G q.a W 2",
  "RS+ $G q.a W 3",
  "LS+ EDGE $G q.a W 2",
  "RS+ $G q.a W 1",
  "LS- $G q.a W",
  "RS+ $G y.b",
  "LS- $G y.b"
]

describe.each<Implementation>(["nats-server", "switchyard"])("a %s hub passes its leaf's interest on to a route", (impl) => {
  let s: Setup | undefined

  beforeAll(async () => {
    s = await setUp(impl)
  }, 60_000)

  afterAll(async () => {
    s?.peer.close()
    await s?.leaf.stop()
    await s?.hub.stop()
  })

  it("as LS+ <leaf cluster> / LS- when the leaf's interest changed it, RS+ / RS- when a client of the hub did", async () => {
    expect(await script(s!)).toEqual(EXPECTED)
  }, 60_000)

  it("a route that joins later hears the leaf's interest as RS+", async () => {
    const { leafClient: lc } = s!
    const sub = lc.subscribe("late.>")
    const q = lc.subscribe("late.q", { queue: "Q" })
    await lc.flush()
    await s!.peer.waitFor((op) => (op[0] === "sub" && op[1].subject === "late.q" ? true : undefined), "the leaf's late.q")
    expect(seen(s!.peer).slice(EXPECTED.length)).toEqual(["LS+ EDGE $G late.>", "LS+ EDGE $G late.q Q 1"])
    const peer2 = await PeerDriver.connect("route", s!.routePort)
    await peer2.waitFor((op) => (op[0] === "info" ? true : undefined), "the hub's INFO")
    peer2.sendConnect({ echo: true, verbose: false, pedantic: false, tls_required: false, headers: true, name: "NORIGINPEER2", cluster: "C1", lnoc: true })
    peer2.sendInfo({ server_id: "NORIGINPEER2", server_name: "origin-peer-2", version: "2.9.10", proto: 1, host: "127.0.0.1", port: 1, headers: true, max_payload: 1048576, cluster: "C1", connect_urls: [], lnoc: true })
    await peer2.waitFor((op) => (op[0] === "sub" && op[1].subject === "late.q" ? true : undefined), "late.q on the new route")
    expect(seen(peer2)).toEqual(expect.arrayContaining(["RS+ $G late.>", "RS+ $G late.q Q 1"]))
    expect(seen(peer2).filter((x) => x.startsWith("LS"))).toEqual([])
    peer2.close()
    sub.unsubscribe()
    q.unsubscribe()
  }, 60_000)
})
