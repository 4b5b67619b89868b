// JetStream across servers, without a home-made consensus. A node's `$JS.API` is its own:
// it is not announced to other servers and does not answer their clients' requests (even
// when a wildcard subscriber draws them to it), so two nodes with JetStream never both
// answer one request. `jetstream { domain: X }` makes a node's streams reachable from the
// other servers of the cluster and across leaf connections as `$JS.X.API.>`, which the
// node reads as its `$JS.API.>` (nats-server's mapping), and announces its streams'
// subjects and consumers' ack subjects. A consumer's deliveries cross a route or a leaf
// connection as nats-server sends them: routed by the inbox, the message's own subject
// after an `@` in the reply. Checked with nats.js on Switchyard and nats-server 2.9.10
// nodes, and both ways across a leaf connection.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node"
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ClusterNode, collect, routez, useCluster } from "../helpers/cluster-nodes.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { type LeafServer, leafsUp, startLeafServer } from "../helpers/leaf-nodes.js"
import { eventually } from "../helpers/server.js"

const dirs: Array<string> = []
const tmp = (prefix: string) => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  dirs.push(d)
  return d
}
/** A configuration file for a Switchyard node with JetStream (and a domain). */
const jsConfig = (domain?: string): Array<string> => {
  const dir = tmp("cluster-js-")
  const file = path.join(dir, "server.conf")
  fs.writeFileSync(file, `jetstream { store_dir: "${path.join(dir, "js")}"${domain === undefined ? "" : `, domain: ${domain}`} }\n`)
  return ["-c", file]
}
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
})

/** Every answer to one request (a fresh inbox), gathered until `done` says so. */
const answers = async (nc: NatsConnection, subject: string, body = ""): Promise<Array<Msg>> => {
  const inbox = createInbox()
  const got = collect(nc, inbox)
  await nc.flush()
  nc.publish(subject, body, { reply: inbox })
  await eventually(() => got.length > 0, `an answer to ${subject}`)
  return got
}

/** A stream created, written and read through `domain` by clients of other servers. */
const roundTrip = async (admin: NatsConnection, publishers: ReadonlyArray<NatsConnection>, domain: string, stream: string) => {
  const jsm = await jetstreamManager(admin, { domain })
  const info = await jsm.getAccountInfo()
  expect(info.domain).toBe(domain)
  await jsm.streams.add({ name: stream, subjects: [`${stream.toLowerCase()}.>`] })
  const acks = []
  for (const [i, nc] of publishers.entries()) {
    const js = jetstream(nc, { domain })
    acks.push(await js.publish(`${stream.toLowerCase()}.${i}`, `m${i}`))
  }
  // What nats.js reports: each PubAck names the stream and the domain, in order.
  expect(acks.map((a) => [a.stream, a.domain, a.seq])).toEqual(publishers.map((_, i) => [stream, domain, i + 1]))
  await jsm.consumers.add(stream, { durable_name: "D", ack_policy: AckPolicy.Explicit })
  const c = await jetstream(admin, { domain }).consumers.get(stream, "D")
  const got: Array<string> = []
  for (let i = 0; i < publishers.length; i++) {
    const m = await c.next({ expires: 5000 })
    expect(m).not.toBeNull()
    got.push(`${m!.subject} ${m!.string()} ${m!.info.streamSequence}`)
    expect(await m!.ackAck()).toBe(true)
  }
  // The message's own subject, not the inbox it was routed by.
  expect(got).toEqual(publishers.map((_, i) => `${stream.toLowerCase()}.${i} m${i} ${i + 1}`))
  const ci = await jsm.consumers.info(stream, "D")
  expect([ci.num_ack_pending, ci.ack_floor.stream_seq, ci.num_pending]).toEqual([0, publishers.length, 0])
}

describe("JetStream in a mixed cluster (nats-server seed; Switchyard JA with domain D1, JB without, JC without JetStream)", () => {
  const cluster = useCluster({
    seed: "nats-server",
    nodes: [
      { name: "JA", extra: jsConfig("D1") },
      { name: "JB", extra: jsConfig() },
      { name: "JC" }
    ]
  })
  let ja: ClusterNode
  let jb: ClusterNode
  let jc: ClusterNode
  beforeAll(() => {
    ja = cluster.node("JA")
    jb = cluster.node("JB")
    jc = cluster.node("JC")
  })

  it("answers $JS.API on the client's node only, once, even when a wildcard subscriber draws requests to the others", async () => {
    const [a, b, c] = [await ja.client(), await jb.client(), await jc.client()]
    const ns = await cluster.nsClient()
    // Subscribers of everything on each node: every request published anywhere reaches every node.
    const wild = [a, b, c, ns].map((nc) => nc.subscribe(">", { callback: () => {} }))
    for (const [to, froms] of [[a, [b, c, ns]], [b, [a, c]]] as const) {
      const probes = collect(to, "probe.>")
      await to.flush()
      await eventuallyAsync(async () => {
        for (const [i, f] of froms.entries()) {
          f.publish(`probe.${i}`, "x")
          await f.flush()
        }
        await to.flush()
        return new Set(probes.map((m) => m.subject)).size === froms.length
      }, "the wildcard interest to reach every node", 30_000)
    }

    const fromA = await answers(a, "$JS.API.INFO")
    const infoA = JSON.parse(fromA[0].string())
    expect(infoA.domain).toBe("D1")
    // JB's own client next: JB's API counter (requests answered before this one) says it
    // did not answer A's request; A's says it answered its first.
    const fromB = await answers(b, "$JS.API.INFO")
    const infoB = JSON.parse(fromB[0].string())
    expect(infoB.domain).toBeUndefined()
    expect(infoB.api.total).toBe(0)
    const again = await answers(a, "$JS.API.INFO")
    expect(JSON.parse(again[0].string()).api.total).toBe(1)
    // And no second answer came on any inbox meanwhile.
    await b.flush()
    await a.flush()
    expect([fromA.length, fromB.length, again.length]).toEqual([1, 1, 1])
    // A node without JetStream (JC, and nats-server): its client's plain $JS.API request is
    // drawn to JA and JB by their wildcard subscribers, and neither JetStream answers it.
    await expect(c.request("$JS.API.INFO", "", { timeout: 1500 })).rejects.toThrow(/timeout/)
    await expect(ns.request("$JS.API.INFO", "", { timeout: 1500 })).rejects.toThrow(/timeout/)
    // The wildcard subscribers go (the next tests need interest to mean what they make).
    for (const s of wild) s.unsubscribe()
    for (const nc of [a, b, c, ns]) await nc.flush()
    await eventuallyAsync(async () => (await routez(ja, "?subs=1")).routes.every((r) => !(r.subscriptions_list ?? []).includes(">")), "the wildcard interest to be withdrawn", 20_000)
  })

  it("serves JA's streams as $JS.D1.API to clients of nats-server and of JB: create, publish, pull, ack", async () => {
    await roundTrip(await jb.client(), [await cluster.nsClient(), await jb.client(), await ja.client()], "D1", "ORDERS")
    // JA's own clients see the same stream on the plain $JS.API.
    const local = await jetstreamManager(await ja.client())
    const si = await local.streams.info("ORDERS")
    expect(si.state.messages).toBe(3)
    // JB's JetStream has no such stream: it was never asked.
    await expect((await jetstreamManager(await jb.client())).streams.info("ORDERS")).rejects.toThrow(/stream not found/)
  })

  it("pushes a push consumer's messages to its deliver subject's subscriber on another node, which acknowledges them", async () => {
    const b = await jb.client()
    const jsm = await jetstreamManager(b, { domain: "D1" })
    await jsm.streams.add({ name: "PUSHED", subjects: ["pushed.in.>"] })
    const js = jetstream(b, { domain: "D1" })
    for (let i = 0; i < 3; i++) await js.publish(`pushed.in.${i}`, `p${i}`)
    await jsm.consumers.add("PUSHED", { durable_name: "P", deliver_subject: "pushed.deliver", ack_policy: AckPolicy.Explicit })
    // The subscriber comes after the consumer: JA hears of it from the route.
    const got = collect(b, "pushed.deliver")
    await b.flush()
    await eventually(() => got.length >= 3, "three pushed messages on JB")
    // Each shows its own subject, with its ack reply, and the acks reach the consumer on JA.
    expect(got.map((m) => `${m.subject} ${m.string()} ${m.reply?.startsWith("$JS.ACK.PUSHED.P.") === true}`)).toEqual(["pushed.in.0 p0 true", "pushed.in.1 p1 true", "pushed.in.2 p2 true"])
    for (const m of got) m.respond("+ACK")
    await eventuallyAsync(async () => (await jsm.consumers.info("PUSHED", "P")).ack_floor.stream_seq === 3, "the acks to reach the consumer on JA")
  })

  it("carries a reply subject with an @ across routes as it is (only a $JS.ACK reply carries a subject)", async () => {
    const b = await jb.client()
    const got = collect(b, "at.>")
    await b.flush()
    const [a, ns] = [await ja.client(), await cluster.nsClient()]
    // Probes until both publishers' servers know JB's interest.
    await eventuallyAsync(async () => {
      a.publish("at.probe.a", "p")
      ns.publish("at.probe.ns", "p")
      await a.flush()
      await ns.flush()
      await b.flush()
      return new Set(got.map((m) => m.subject)).size === 2
    }, "JB's interest to reach JA and nats-server", 20_000)
    a.publish("at.a", "x", { reply: "user@example.com" })
    ns.publish("at.ns", "y", { reply: "_INBOX.team@site" })
    const real = () => got.filter((m) => !m.subject.startsWith("at.probe."))
    await eventually(() => real().length >= 2, "both messages on JB")
    expect(real().map((m) => `${m.subject} ${m.reply}`).sort()).toEqual(["at.a user@example.com", "at.ns _INBOX.team@site"])
  })

  it("reports the domain in /jsz and /varz, and the log says it", async () => {
    const jsz = await ja.monitor("/jsz")
    expect(jsz.config.domain).toBe("D1")
    expect((await ja.monitor("/varz")).jetstream.config.domain).toBe("D1")
    expect((await jb.monitor("/jsz")).config.domain).toBeUndefined()
    expect(ja.log()).toContain('JetStream domain "D1"')
  })
})

/** The domain's API is answered from `nc`'s server (its interest came across). */
const domainReached = (nc: NatsConnection, domain: string) =>
  eventuallyAsync(async () => {
    try {
      await nc.request(`$JS.${domain}.API.INFO`, "", { timeout: 1000 })
      return true
    } catch {
      return false
    }
  }, `the interest in $JS.${domain}.API to cross the leaf connection`, 20_000)

describe("JetStream domains across a leaf connection", () => {
  const started: Array<LeafServer> = []
  afterAll(async () => {
    for (const x of started.reverse()) await x.stop()
  })

  const cases = [
    { title: "a Switchyard hub's domain serves a nats-server leaf's clients", hub: "switchyard", leaf: "nats-server", domain: "HUB", stream: "EDGEHUB" },
    { title: "a nats-server hub's domain passes through a Switchyard leaf to its clients", hub: "nats-server", leaf: "switchyard", domain: "NHUB", stream: "PASS" }
  ] as const
  for (const k of cases) {
    it(k.title, async () => {
      const hub = await startLeafServer(k.hub, k.domain, `jetstream { store_dir: "${tmp("hub-js-")}", domain: ${k.domain} }\nleafnodes { listen: 127.0.0.1:{leaf} }\n`)
      started.push(hub)
      const leaf = await startLeafServer(k.leaf, "EDGE", `leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${hub.leafPort}" } ] }\n`)
      started.push(leaf)
      await leafsUp(hub, 1)
      await leafsUp(leaf, 1)
      const nc = await leaf.client()
      await domainReached(nc, k.domain)
      await roundTrip(nc, [nc, await hub.client()], k.domain, k.stream)
    })
  }
})
