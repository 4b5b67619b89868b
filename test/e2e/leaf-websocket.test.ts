// A Switchyard leaf node connecting to a real nats-server 2.9.10 hub through the hub's
// websocket listener (`ws://`, and `wss://` with certificates made for the test): the
// leaf protocol inside binary WebSocket messages, on the /leafnode path nats-server
// serves leaf connections on. nats.js clients on both sides exchange messages; a wss
// remote that cannot check the hub's certificate is refused with a log line.
import type { Msg, NatsConnection } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeTestCerts, type TestCerts } from "../helpers/certs.js"
import { interestReached } from "../helpers/cluster-nodes.js"
import { type LeafServer, leafsUp, leafz, startLeafServer, stopLeafPair } from "../helpers/leaf-nodes.js"
import { eventually } from "../helpers/server.js"

let certs: TestCerts
beforeAll(() => {
  certs = makeTestCerts()
})
afterAll(() => certs.remove())

const HUB = (ws: string) => `
accounts { ACC { users: [ { user: leaf, password: pw }, { user: a, password: a } ] } }
leafnodes { listen: 127.0.0.1:{leaf} }
websocket { ${ws} }
`
const leafConfig = (url: string, tls = "") => `
accounts { EDGE { users: [ { user: a, password: a } ] } }
leafnodes { remotes: [ { url: "${url}", account: EDGE${tls} } ] }
`
const A = { user: "a", pass: "a" }

/** The websocket port of a nats-server hub, from its log. */
const wsPort = (hub: LeafServer): number => Number(/Listening for websocket clients on wss?:\/\/[^\s]+:(\d+)/.exec(hub.log())![1])

const bothWays = async (hub: LeafServer, leaf: LeafServer): Promise<void> => {
  const hc: NatsConnection = await hub.client(A)
  const lc = await leaf.client(A)
  const got: Array<Msg> = []
  for (const [nc, subject] of [[hc, "up.>"], [lc, "down.>"]] as const) {
    nc.subscribe(subject, { callback: (_e, m) => {
      got.push(m)
      if (m.reply) m.respond("ok")
    } })
  }
  await Promise.all([hc.flush(), lc.flush()])
  await interestReached(lc, "up.probe")
  await interestReached(hc, "down.probe")
  lc.publish("up.x", "over websocket")
  hc.publish("down.x", "over websocket")
  await eventually(() => got.some((m) => m.subject === "up.x") && got.some((m) => m.subject === "down.x"), "both directions", 20_000)
  expect(got.filter((m) => m.subject.endsWith(".x")).map((m) => m.string())).toEqual(["over websocket", "over websocket"])
}

describe.each(["ws", "wss"] as const)("a Switchyard leaf of a nats-server hub over %s://", (scheme) => {
  let hub: LeafServer
  let leaf: LeafServer

  beforeAll(async () => {
    const ws = scheme === "wss"
      ? `listen: "127.0.0.1:-1", tls { cert_file: "${certs.serverCert}", key_file: "${certs.serverKey}" }`
      : `listen: "127.0.0.1:-1", no_tls: true`
    hub = await startLeafServer("nats-server", "HUB", HUB(ws))
    const tls = scheme === "wss" ? `, tls { ca_file: "${certs.caFile}" }` : ""
    leaf = await startLeafServer("switchyard", "EDGE", leafConfig(`${scheme}://leaf:pw@127.0.0.1:${wsPort(hub)}`, tls))
    await leafsUp(hub, 1)
    await leafsUp(leaf, 1)
  }, 60_000)
  afterAll(() => stopLeafPair({ hub, leaf }))

  it("connects through the websocket listener, bound to ACC, and carries messages both ways", async () => {
    // nats-server names a websocket leaf connection lid_ws.
    expect(hub.log()).toMatch(/lid_ws:\d+ - Leafnode connection created/)
    expect((await leafz(hub)).leafs[0].account).toBe("ACC")
    await bothWays(hub, leaf)
  })

  if (scheme === "wss") {
    it("refuses a hub whose certificate it cannot check, with a log line", async () => {
      // No ca_file: the system's CAs do not know the test CA.
      const bad = await startLeafServer("switchyard", "BAD", leafConfig(`wss://leaf:pw@127.0.0.1:${wsPort(hub)}`))
      try {
        await eventually(() => /TLS leafnode handshake error: .*(certificate|issuer)/i.test(bad.log()), "the refusal", 20_000)
        expect((await leafz(bad)).leafnodes).toBe(0)
        expect((await leafz(hub)).leafnodes).toBe(1)
      } finally {
        await bad.stop()
      }
    }, 60_000)
  }
})
