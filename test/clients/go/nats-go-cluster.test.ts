// nats.go across a mixed cluster: a real nats-server 2.9.10 and a Switchyard node joined by
// a route. The Go program (test/clients/go/main.go, case "cluster") subscribes, serves a
// request and joins a queue group on one server and publishes on the other; the test
// checks what nats.go itself reported, in both directions.
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ClusterNode, useCluster } from "../../helpers/cluster-nodes.js"
import type { NatsServerProcess } from "../../helpers/nats-server.js"
import { buildDir, runCase } from "../run.js"
import { buildNatsGo } from "./build.js"

const out = buildDir()
const bin = join(out.dir, "nats-go")
let ns: NatsServerProcess
let sy: ClusterNode

const cluster = useCluster({ seed: "nats-server", nodes: [{ name: "SY" }] })

beforeAll(() => {
  buildNatsGo(bin)
  ns = cluster.ns()
  sy = cluster.node("SY")
}, 120_000)

afterAll(() => out.remove())

describe("nats.go 1.22.1 across a mixed cluster", () => {
  for (const [from, to] of [["Switchyard", "nats-server"], ["nats-server", "Switchyard"]] as const) {
    it(`publishes on ${from}, subscribes and answers on ${to}`, async () => {
      const url = (s: string) => `nats://127.0.0.1:${s === "Switchyard" ? sy.clientPort : ns.clientPort}`
      const r = await runCase([bin], "cluster", url(from), { other: url(to) })
      expect(r.reply).toBe("HELLO CLUSTER")
      expect(r.trace).toBe("across")
      expect(r.msgs).toBe(20)
      expect(r.members.reduce((a: number, b: number) => a + b, 0)).toBe(30)
      expect(r.no_responders).toBe("ErrNoResponders")
    })
  }
})
