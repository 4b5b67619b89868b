// TLS on routes and leaf connections, against real nats-server 2.9.10 peers and with
// certificates made for the test: routes speak TLS from the first byte (a mixed mesh of
// nats-server and two Switchyard nodes, the Switchyard pair meeting by gossip), leaf
// connections send the hub's INFO in the clear and then upgrade (Switchyard as the leaf of
// a TLS nats-server hub, and as the TLS hub of a nats-server leaf), with `verify` on every
// accepting side. A plain-text peer, a certificate from another CA and a TLS remote of a
// plain hub are refused with a log line, and the clients of the refusing server are not
// disturbed.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Msg, NatsConnection } from "@nats-io/transport-node"
import { interestReached } from "../helpers/cluster-nodes.js"
import { makeTestCerts, type TestCerts } from "../helpers/certs.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { expectRefusedLeaf, type LeafServer, leafz, startLeafPair, startLeafServer, stopLeafPair } from "../helpers/leaf-nodes.js"
import { eventually } from "../helpers/server.js"

let certs: TestCerts
beforeAll(() => {
  certs = makeTestCerts()
})
afterAll(() => certs.remove())

/** A `tls` block with the test CA, this certificate (the CA's node certificate unless told), and `verify`. */
const tlsBlock = (o: { verify?: boolean; stranger?: boolean; noCert?: boolean; noCa?: boolean } = {}): string => {
  const cert = o.stranger === true ? certs.strangerNodeCert : certs.nodeCert
  const key = o.stranger === true ? certs.strangerNodeKey : certs.nodeKey
  return `tls { ${o.noCert === true ? "" : `cert_file: "${cert}", key_file: "${key}", `}${o.noCa === true ? "" : `ca_file: "${certs.caFile}", `}timeout: 2${o.verify === true ? ", verify: true" : ""} }`
}

const numRoutes = async (s: LeafServer): Promise<number> => (await s.monitor<{ num_routes: number }>("/routez")).num_routes

/** What a subscription receives; it answers requests too (interestReached probes with one). */
const answering = (nc: NatsConnection, subject: string): Array<Msg> => {
  const got: Array<Msg> = []
  nc.subscribe(subject, { callback: (_e, m) => {
    got.push(m)
    if (m.reply) m.respond("ok")
  } })
  return got
}

const roundTrip = async (from: LeafServer, to: LeafServer, subject: string): Promise<string> => {
  const sub = await to.client()
  const got = answering(sub, subject)
  await sub.flush()
  const pub = await from.client()
  await interestReached(pub, subject)
  pub.publish(subject, "over tls")
  await eventually(() => got.some((m) => m.string() === "over tls"), `${subject} from ${from.name} at ${to.name}`, 20_000)
  return got.find((m) => m.string() === "over tls")!.string()
}

describe("TLS on routes: a mixed mesh", () => {
  let ns: LeafServer
  let s1: LeafServer
  let s2: LeafServer
  const routeTo = (s: LeafServer) => `nats-route://127.0.0.1:${s.leafPort}`

  beforeAll(async () => {
    // `{leaf}` is just a free port here: the route listener.
    ns = await startLeafServer("nats-server", "NS", `cluster { name: C1, listen: 127.0.0.1:{leaf}, ${tlsBlock({ verify: true })} }\n`)
    ;[s1, s2] = await Promise.all(["S1", "S2"].map((name) =>
      startLeafServer("switchyard", name, `cluster { name: C1, listen: 127.0.0.1:{leaf}, routes: ["${routeTo(ns)}"], ${tlsBlock({ verify: true })} }\n`)))
    // S1 and S2 name only NS: they find each other from its INFO and meet over TLS too.
    await eventuallyAsync(async () => (await numRoutes(ns)) === 2 && (await numRoutes(s1)) === 2 && (await numRoutes(s2)) === 2, "a full TLS mesh", 30_000)
  }, 60_000)

  afterAll(async () => {
    await Promise.all([s1?.stop(), s2?.stop()])
    await ns?.stop()
  })

  it("carries messages between every pair, and nats-server reports TLS on its routes", async () => {
    expect(await roundTrip(ns, s1, "tls.ns.s1")).toBe("over tls")
    expect(await roundTrip(s1, ns, "tls.s1.ns")).toBe("over tls")
    expect(await roundTrip(s1, s2, "tls.s1.s2")).toBe("over tls")
    expect(await roundTrip(s2, ns, "tls.s2.ns")).toBe("over tls")
    // nats-server checked our certificates (verify) and logged each handshake.
    expect(ns.log()).not.toContain("TLS route handshake error")
    const routez = await ns.monitor<{ routes: Array<{ remote_id: string }> }>("/routez")
    expect(routez.routes).toHaveLength(2)
    const varz = await s1.monitor<{ cluster: { tls_required?: boolean } }>("/varz")
    expect(varz.cluster.tls_required).toBe(true)
  })

  it("refuses a plain-text route and a certificate from another CA with a log line, and keeps serving", async () => {
    const before = s1.log().length
    // A nats-server without TLS calling S1, then one with a certificate S1's CA did not sign.
    const plain = await startLeafServer("nats-server", "PLAIN", `cluster { name: C1, listen: 127.0.0.1:{leaf}, routes: ["${routeTo(s1)}"] }\n`)
    const stranger = await startLeafServer("nats-server", "STRANGER",
      `cluster { name: C1, listen: 127.0.0.1:{leaf}, routes: ["${routeTo(s1)}"], ${tlsBlock({ stranger: true })} }\n`)
    try {
      // Each peer retries, so one kind may be logged twice before the other once: wait for both kinds.
      const plainRefused = /TLS route handshake error: .*(https proxy request|wrong version number|http request|unknown protocol|packet length too long)/i
      const strangerRefused = /TLS route handshake error: .*(certificate|unknown ca|verify)/i
      await eventually(() => {
        const logged = s1.log().slice(before)
        return plainRefused.test(logged) && strangerRefused.test(logged) && logged.includes("Router connection closed: TLS Handshake Failure")
      }, "both refusals logged by S1", 20_000)
      // Neither is a route of S1, whose clients still talk to the mesh.
      expect(await numRoutes(s1)).toBe(2)
      expect(await roundTrip(s1, ns, "tls.after.refusal")).toBe("over tls")
    } finally {
      await Promise.all([plain.stop(), stranger.stop()])
    }
  }, 60_000)

  it("a Switchyard node without TLS is refused by the TLS nats-server, which says why", async () => {
    const plain = await startLeafServer("switchyard", "S3", `cluster { name: C1, listen: 127.0.0.1:{leaf}, routes: ["${routeTo(ns)}"] }\n`)
    try {
      await eventually(() => /TLS route handshake error/.test(ns.log()) && /No INFO from the route at .* is TLS configured on both sides\?/.test(plain.log()), "the refusal on both ends", 20_000)
      expect(await numRoutes(plain)).toBe(0)
      expect(await numRoutes(ns)).toBe(2)
    } finally {
      await plain.stop()
    }
  }, 60_000)
})

const HUB_ACCOUNTS = `
accounts {
  ACC { users: [ { user: leaf, password: pw }, { user: a, password: a } ] }
}
`
const LEAF_ACCOUNTS = `
accounts {
  EDGE { users: [ { user: a, password: a } ] }
}
`
const A = { user: "a", pass: "a" }

/** A leaf's configuration: one TLS remote to the hub's leaf port, with this `tls` block. */
const tlsRemote = (hubLeafPort: number, tls: string): string =>
  `${LEAF_ACCOUNTS}leafnodes { remotes: [ { url: "tls://leaf:pw@127.0.0.1:${hubLeafPort}", account: EDGE, ${tls} } ] }\n`

describe.each([
  ["nats-server", "switchyard"],
  ["switchyard", "nats-server"]
] as const)("TLS on leaf connections: a %s hub, a %s leaf", (hubImpl, leafImpl) => {
  let hub: LeafServer
  let leaf: LeafServer

  beforeAll(async () => {
    ;({ hub, leaf } = await startLeafPair(
      { impl: hubImpl, config: `${HUB_ACCOUNTS}leafnodes { listen: 127.0.0.1:{leaf}, ${tlsBlock({ verify: true })} }\n` },
      { impl: leafImpl, config: (port) => tlsRemote(port, tlsBlock()) }
    ))
  }, 60_000)
  afterAll(() => stopLeafPair({ hub, leaf }))

  it("carries messages both ways over TLS", async () => {
    const hc = await hub.client(A)
    const lc = await leaf.client(A)
    const atLeaf = answering(lc, "down.>")
    const atHub = answering(hc, "up.>")
    await Promise.all([lc.flush(), hc.flush()])
    await interestReached(hc, "down.x")
    await interestReached(lc, "up.x")
    hc.publish("down.x", "to the leaf")
    lc.publish("up.x", "to the hub")
    await eventually(() => atLeaf.some((m) => m.string() === "to the leaf") && atHub.some((m) => m.string() === "to the hub"), "both directions", 20_000)
    // The hub takes nothing but TLS on its leaf port (a plain-text leaf is refused: below).
    expect(hub.log()).not.toMatch(/TLS leafnode handshake error/)
  })

  it("refuses a leaf without a certificate the hub's CA signed, with a log line", async () => {
    await expectRefusedLeaf(hub, leafImpl, tlsRemote(hub.leafPort, tlsBlock({ stranger: true })),
      (_leafLog, hubLog) => /TLS leafnode handshake error: .*certificate/i.test(hubLog), "the hub's refusal")
  }, 60_000)
})

describe("leaf TLS refusals", () => {
  it("a Switchyard remote that asks for TLS refuses a plain hub instead of sending its password in the clear", async () => {
    const hub = await startLeafServer("nats-server", "PLAINHUB", `${HUB_ACCOUNTS}leafnodes { listen: 127.0.0.1:{leaf} }\n`)
    const leaf = await startLeafServer("switchyard", "EDGE", tlsRemote(hub.leafPort, tlsBlock()))
    try {
      await eventually(() => /requires TLS, but the hub does not offer it/.test(leaf.log()) && leaf.log().includes("Leafnode connection closed: TLS Required"), "the refusal", 20_000)
      expect(hub.log()).not.toContain("Authorization Violation")
      expect((await leafz(hub)).leafnodes).toBe(0)
    } finally {
      await leaf.stop()
      await hub.stop()
    }
  }, 60_000)

  it("a plain-text nats-server leaf is refused by a TLS Switchyard hub, which logs it", async () => {
    const hub = await startLeafServer("switchyard", "HUB", `${HUB_ACCOUNTS}leafnodes { listen: 127.0.0.1:{leaf}, ${tlsBlock({ verify: true })} }\n`)
    // No CA: it cannot check the hub's certificate (and has none to show).
    const leaf = await startLeafServer("nats-server", "EDGE",
      `${LEAF_ACCOUNTS}leafnodes { remotes: [ { url: "nats-leaf://leaf:pw@127.0.0.1:${hub.leafPort}", account: EDGE } ] }\n`)
    try {
      // Two lines, written one after the other: wait for both (under load the second comes later).
      await eventually(
        () => /TLS leafnode handshake error/.test(hub.log()) && hub.log().includes("Leafnode connection closed: TLS Handshake Failure"),
        "the hub's log lines",
        20_000
      )
      expect((await leafz(hub)).leafnodes).toBe(0)
      // The hub's clients are fine.
      const nc = await hub.client(A)
      await nc.flush()
    } finally {
      await leaf.stop()
      await hub.stop()
    }
  }, 60_000)
})
