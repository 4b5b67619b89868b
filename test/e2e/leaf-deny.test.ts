// deny_imports and deny_exports on a Switchyard leaf's remote, against a real nats-server
// 2.9.10 hub: subjects the leaf does not take from the hub and does not send to it, with
// wildcard interest on both sides (so the refusal happens on each message, not only on
// the interest announced). nats.js clients on both sides say what crossed.
import type { Msg, NatsConnection } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { interestReached } from "../helpers/cluster-nodes.js"
import { type LeafServer, leafz, startLeafPair, stopLeafPair } from "../helpers/leaf-nodes.js"
import { eventually } from "../helpers/server.js"

const A = { user: "a", pass: "a" }

describe("deny_imports / deny_exports on a Switchyard leaf's remote (nats-server hub)", () => {
  let hub: LeafServer
  let leaf: LeafServer

  beforeAll(async () => {
    ;({ hub, leaf } = await startLeafPair(
      { impl: "nats-server", config: "accounts { ACC { users: [ { user: leaf, password: pw }, { user: a, password: a } ] } }\nleafnodes { listen: 127.0.0.1:{leaf} }\n" },
      {
        impl: "switchyard",
        config: (port) => `accounts { EDGE { users: [ { user: a, password: a } ] } }
leafnodes { remotes: [ {
  url: "nats-leaf://leaf:pw@127.0.0.1:${port}", account: EDGE
  deny_imports: [ "down.secret", "down.private.>" ]
  deny_exports: "up.secret"
} ] }\n`
      }
    ))
  }, 60_000)
  afterAll(() => stopLeafPair({ hub, leaf }))

  const record = (nc: NatsConnection, subject: string, into: Array<Msg>) =>
    nc.subscribe(subject, { callback: (_e, m) => {
      into.push(m)
      if (m.reply) m.respond("ok")
    } })

  it("takes nothing denied from the hub and sends nothing denied to it; the rest crosses", async () => {
    const hc = await hub.client(A)
    const lc = await leaf.client(A)
    const atHub: Array<Msg> = []
    const atLeaf: Array<Msg> = []
    record(hc, "up.>", atHub)
    record(lc, "down.>", atLeaf)
    // An exact subscription on an imported-denied subject: its interest is not even announced.
    const exact: Array<Msg> = []
    record(lc, "down.secret", exact)
    await Promise.all([hc.flush(), lc.flush()])
    await interestReached(lc, "up.probe")
    await interestReached(hc, "down.probe")
    for (const s of ["down.public", "down.secret", "down.private.x"]) hc.publish(s, s)
    for (const s of ["up.public", "up.secret"]) lc.publish(s, s)
    // A last message each way, after the others: once it is in, the denied ones would be too.
    hc.publish("down.last", "last")
    lc.publish("up.last", "last")
    await eventually(() => atLeaf.some((m) => m.subject === "down.last") && atHub.some((m) => m.subject === "up.last"), "the last messages", 20_000)
    const names = (ms: Array<Msg>) => ms.map((m) => m.subject).filter((s) => !s.endsWith(".probe"))
    expect(names(atLeaf)).toEqual(["down.public", "down.last"])
    expect(names(atHub)).toEqual(["up.public", "up.last"])
    expect(exact).toEqual([])
    // The hub was told of down.> but never of down.secret (the leaf's own exact subscription).
    const told = (await leafz(hub, "?subs=1")).leafs[0].subscriptions_list as Array<string>
    expect(told).toContain("down.>")
    expect(told).not.toContain("down.secret")
  })
})
