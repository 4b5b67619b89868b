// Lame duck mode in a cluster: the server going away tells the other servers with an INFO
// carrying `ldm: true` (as nats-server does), and they stop giving their clients its URL
// (an INFO update without it in connect_urls), so reconnecting clients go elsewhere.
// Checked with a Switchyard peer and a nats-server 2.9.10 peer: what nats.js reports
// on each (its "update" status naming the URL it dropped).
import type { NatsConnection } from "@nats-io/transport-node"
import { describe, expect, it } from "vitest"
import { useCluster } from "../helpers/cluster-nodes.js"
import { eventually } from "../helpers/server.js"

const cluster = useCluster({ seed: "nats-server", nodes: [{ name: "LA" }, { name: "LB" }] })

/** The URLs nats.js says it dropped from its server list (status "update"). */
const dropped = (nc: NatsConnection): Array<string> => {
  const out: Array<string> = []
  void (async () => {
    for await (const s of nc.status()) if (s.type === "update") out.push(...(s.deleted ?? []))
  })()
  return out
}

describe("lame duck mode across routes", () => {
  it("makes the other servers, Switchyard and nats-server, drop its URL from their clients' connect_urls", async () => {
    const la = cluster.node("LA")
    const onB = await cluster.node("LB").client()
    const onNs = await cluster.nsClient()
    const url = `127.0.0.1:${la.clientPort}`
    // Both clients were told of LA (connect_urls) before it goes into lame duck mode.
    expect(onB.info?.connect_urls).toContain(url)
    expect(onNs.info?.connect_urls).toContain(url)
    const fromB = dropped(onB)
    const fromNs = dropped(onNs)
    const ownClient = await la.client()
    const ldm: Array<string> = []
    void (async () => {
      for await (const s of ownClient.status()) if (s.type === "ldm") ldm.push(s.server)
    })()
    la.signal("SIGUSR2")
    await eventually(() => ldm.length > 0, "LA's own client to hear lame duck mode")
    await eventually(() => fromB.some((u) => u.endsWith(`:${la.clientPort}`)), "LB's client to drop LA's URL", 20_000)
    await eventually(() => fromNs.some((u) => u.endsWith(`:${la.clientPort}`)), "the nats-server peer's client to drop LA's URL", 20_000)
    // ... while LA still serves its clients (its routes up): not because it went away.
    expect(la.log()).toContain("Entering lame duck mode")
    expect(la.log()).not.toContain("Closing 1 existing clients")
    expect(ownClient.isClosed()).toBe(false)
    expect((await la.monitor("/routez")).num_routes).toBe(2)
  })
})
