import type { Msg, NatsConnection } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../clients/run.js"
import { interestReached } from "../helpers/cluster-nodes.js"
import { leafsUp, type LeafServer, startLeafServer } from "../helpers/leaf-nodes.js"
import { eventually } from "../helpers/server.js"

// A leaf cluster (EDGE) of a Switchyard and a nats-server 2.9.10 server, routed to each
// other, each with its own remote to a nats-server hub: what every server of a leaf cluster
// is meant to have. A nats-server spoke keeps its hub connection and its routes apart (no
// interest, no messages either way: docs/cluster-protocol.md); a Switchyard spoke that
// passed them on delivered twice to the clients of the other spoke and of the hub.

let hub: LeafServer
let sy: LeafServer
let ns: LeafServer

beforeAll(async () => {
  hub = await startLeafServer("nats-server", "HUB", "leafnodes { listen: 127.0.0.1:{leaf} }\n")
  const [r1, r2] = [await freePort(), await freePort()]
  const edge = (me: number, other: number) =>
    `cluster { name: EDGE, listen: 127.0.0.1:${me}, routes: ["nats-route://127.0.0.1:${other}"] }\nleafnodes { remotes: [ { url: "nats://127.0.0.1:${hub.leafPort}" } ] }\n`
  sy = await startLeafServer("switchyard", "SY", edge(r1, r2))
  ns = await startLeafServer("nats-server", "NS", edge(r2, r1))
  await leafsUp(hub, 2)
  await eventually(() => /Route connection created/.test(ns.log()), "the route between the two spokes", 30_000)
}, 90_000)

afterAll(async () => {
  await ns?.stop()
  await sy?.stop()
  await hub?.stop()
})

/** `n` messages then an end marker from `from` on `subject`; what `got` holds once the marker came. */
const sendAndCount = async (from: NatsConnection, subject: string, got: Array<Msg>, n = 10): Promise<Array<string>> => {
  for (let i = 0; i < n; i++) from.publish(subject, `m${i}`)
  from.publish(subject, "end")
  await from.flush()
  await eventually(() => got.some((m) => m.string() === "end"), `the end marker on ${subject}`, 20_000)
  return got.map((m) => m.string()).filter((s) => s !== "end" && s !== "probe")
}

const subscriber = (nc: NatsConnection, subject: string): Array<Msg> => {
  const got: Array<Msg> = []
  nc.subscribe(subject, { callback: (_e, m) => {
    got.push(m)
    if (m.reply) m.respond("ok")
  } })
  return got
}

const TEN = Array.from({ length: 10 }, (_, i) => `m${i}`)

describe("a leaf cluster of a Switchyard and a nats-server spoke, each with its remote to one hub", () => {
  it.each(["SY", "NS"] as const)("a client of the %s spoke gets each hub message once", async (which) => {
    const spoke = which === "SY" ? sy : ns
    const c = await spoke.client()
    const got = subscriber(c, `down.${which}`)
    await c.flush()
    const h = await hub.client()
    await interestReached(h, `down.${which}`)
    got.length = 0
    expect(await sendAndCount(h, `down.${which}`, got)).toEqual(TEN)
  })

  it.each(["SY", "NS"] as const)("a hub client gets each message of a client of the %s spoke once", async (which) => {
    const h = await hub.client()
    const got = subscriber(h, `up.${which}`)
    await h.flush()
    const c = await (which === "SY" ? sy : ns).client()
    await interestReached(c, `up.${which}`)
    got.length = 0
    expect(await sendAndCount(c, `up.${which}`, got)).toEqual(TEN)
  })

  it("the two spokes still carry their own clients' messages between them over the route", async () => {
    const a = await sy.client()
    const b = await ns.client()
    const got = subscriber(b, "side.x")
    await b.flush()
    await interestReached(a, "side.x")
    got.length = 0
    expect(await sendAndCount(a, "side.x", got)).toEqual(TEN)
  })
})
