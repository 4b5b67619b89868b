// A Switchyard leaf node connecting to a real nats-server 2.9.10 hub through the hub's
// websocket listener (`ws://`, and `wss://` with certificates made for the test): the
// leaf protocol inside binary WebSocket messages, on the /leafnode path nats-server
// serves leaf connections on. nats.js clients on both sides exchange messages; a wss
// remote that cannot check the hub's certificate is refused with a log line.
import type { Msg, NatsConnection } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import WebSocket from "ws"
import { freePort } from "../clients/run.js"
import { makeTestCerts, type TestCerts } from "../helpers/certs.js"
import { interestReached } from "../helpers/cluster-nodes.js"
import { type LeafServer, leafsUp, leafz, startLeafServer, stopLeafPair } from "../helpers/leaf-nodes.js"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { connectMqtt } from "../helpers/mqtt.js"
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

// The other way round: a Switchyard hub's websocket listener takes leaf connections on
// /leafnode (every path starting with it, as nats-server 2.9.10), beside MQTT at /mqtt.
// A nats-server leaf dials `ws://host:port` at /leafnode (observed: it sends no
// subprotocol, and binary messages).

const SY_HUB = (wsPort: number, ws: string, more = "") => `
accounts { ACC { users: [ { user: a, password: a } ] } }
leafnodes { listen: 127.0.0.1:{leaf}, authorization { users: [ { user: leaf, password: pw, account: ACC } ] } }
websocket { listen: "127.0.0.1:${wsPort}", ${ws} }
${more}
`

describe.each([
  ["ws", "nats-server"],
  ["wss", "nats-server"],
  ["ws", "switchyard"],
  ["wss", "switchyard"]
] as const)("a Switchyard hub's websocket listener over %s:// takes a %s leaf", (scheme, leafImpl) => {
  let hub: LeafServer
  let leaf: LeafServer
  let port: number

  beforeAll(async () => {
    port = await freePort()
    const ws = scheme === "wss" ? `tls { cert_file: "${certs.serverCert}", key_file: "${certs.serverKey}" }` : "no_tls: true"
    // MQTT on for one of them: /mqtt and /leafnode on the same listener.
    const mqttOn = scheme === "ws" && leafImpl === "nats-server"
    hub = await startLeafServer("switchyard", "HUB", SY_HUB(port, ws, mqttOn ? `mqtt { listen: "127.0.0.1:${await freePort()}" }` : ""))
    const tls = scheme === "wss" ? `, tls { ca_file: "${certs.caFile}" }` : ""
    leaf = await startLeafServer(leafImpl, "EDGE", leafConfig(`${scheme}://leaf:pw@127.0.0.1:${port}`, tls))
    await leafsUp(hub, 1)
    await leafsUp(leaf, 1)
  }, 60_000)
  afterAll(() => stopLeafPair({ hub, leaf }))

  it("binds it to its user's account and carries messages both ways", async () => {
    const row = (await leafz(hub)).leafs[0]
    expect(row.account).toBe("ACC")
    expect(row.name).toBe("EDGE")
    await bothWays(hub, leaf)
  })

  if (scheme === "ws" && leafImpl === "nats-server") {
    it("serves MQTT at /mqtt on the same listener, and an MQTT subscriber gets what the leaf's client publishes", async () => {
      const m = await connectMqtt(`ws://127.0.0.1:${port}/mqtt`, { clientId: "beside-leaf", username: "a", password: "a" })
      try {
        await m.client.subscribeAsync("fromleaf/#", { qos: 0 })
        const lc = await leaf.client(A)
        // Published until the subscriber's interest has crossed to the leaf (MQTT does not answer a probe request).
        await eventuallyAsync(async () => {
          lc.publish("fromleaf.x", "to mqtt")
          await lc.flush()
          return m.received.some((r) => r.topic === "fromleaf/x")
        }, "the MQTT subscriber to get it", 20_000)
        expect(m.received.find((r) => r.topic === "fromleaf/x")!.payload.toString()).toBe("to mqtt")
      } finally {
        m.client.end(true)
      }
    })

    it("refuses a leaf with wrong credentials, and keeps the other", async () => {
      const before = hub.log().length
      const bad = await startLeafServer("nats-server", "BAD", leafConfig(`ws://leaf:wrong@127.0.0.1:${port}`))
      try {
        await eventually(() => /Leafnode authentication failed for user "leaf"/.test(hub.log().slice(before)), "the hub's log line", 20_000)
        await eventually(() => /Authorization Violation/.test(bad.log()), "the leaf's log line", 20_000)
        expect((await leafz(bad)).leafnodes).toBe(0)
        expect((await leafz(hub)).leafnodes).toBe(1)
      } finally {
        await bad.stop()
      }
    }, 60_000)

    it("a peer sending bad input on a /leafnode… path is closed as a protocol violation; the other leaf stays", async () => {
      const before = hub.log().length
      const ws = new WebSocket(`ws://127.0.0.1:${port}/leafnode/anything`)
      const got: Array<string> = []
      ws.on("message", (d) => got.push(d.toString()))
      ws.on("error", () => {})
      const closed = new Promise<void>((r) => ws.on("close", () => r()))
      await new Promise<void>((r) => ws.on("open", () => r()))
      await eventually(() => got.some((x) => x.startsWith("INFO ")), "the hub's leaf INFO")
      const info = JSON.parse(got[0].slice(5))
      expect(info.client_id).toBeGreaterThan(0)
      expect(info.leafnode_urls).toBeDefined()
      expect(info.tls_required).toBeUndefined()
      ws.send(Buffer.from(`CONNECT {"user":"leaf","pass":"pw","name":"RAW","headers":true}\r\nLS+ foo bar\r\n`))
      await closed
      // nats-server closes a leaf for this (`processLeafSub Parse Error: 'foo bar'`) with the same reason.
      await eventually(() => /Leafnode connection closed: Protocol Violation/.test(hub.log().slice(before)), "the close to be logged")
      expect(got.join("")).toContain("-ERR 'Unknown Protocol Operation'")
      expect((await leafz(hub)).leafnodes).toBe(1)
      await bothWays(hub, leaf)
    })

    it("answers 404 for a path that is neither /mqtt nor /leafnode…", async () => {
      const res = await fetch(`http://127.0.0.1:${port}/nats`)
      expect(res.status).toBe(404)
      expect(await res.text()).toBe("Not Found: WebSocket clients connect to /mqtt or /leafnode\n")
    })
  }
})

describe("a websocket listener on a server that accepts no leaf connections", () => {
  it("answers 404 on /leafnode, and says where MQTT is", async () => {
    const port = await freePort()
    const s = await startLeafServer("switchyard", "NOLEAF", `websocket { listen: "127.0.0.1:${port}", no_tls: true }\nmqtt { listen: "127.0.0.1:${await freePort()}" }\nleafnodes { remotes: [ { url: "nats://127.0.0.1:1" } ] }\n`)
    try {
      const res = await fetch(`http://127.0.0.1:${port}/leafnode`)
      expect(res.status).toBe(404)
      expect(await res.text()).toBe("Not Found: WebSocket clients connect to /mqtt\n")
    } finally {
      await s.stop()
    }
  })
})
