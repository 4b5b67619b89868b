// Records what nats-server sends on a route and on a leaf-node connection, for the parser
// fixture test/fixtures/cluster/nats-server-<version>.json (test/unit/cluster-transcript.test.ts).
// Three nats-server processes on loopback: A (cluster C1, leaf listener), B routing to A and
// L (cluster LEAF1) a leaf of A, each connection through a recording proxy; nats.js clients
// on all three subscribe (plain and queue groups), publish (replies, headers) and unsubscribe.
// Each recorded entry is one socket read, as latin1 text.
//   node scripts/capture-cluster-transcript.mjs test/fixtures/cluster/nats-server-2.9.10.json
import net from "node:net"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { tmpdir } from "node:os"
import { connect, headers } from "@nats-io/transport-node"

const target = process.argv[2]
if (!target) throw new Error("usage: capture-cluster-transcript.mjs <output.json>")
const dir = mkdtempSync(join(tmpdir(), "cluster-capture-"))
const wait = (ms) => new Promise((r) => setTimeout(r, ms))

const start = async (name, conf, ready) => {
  writeFileSync(join(dir, `${name}.conf`), conf)
  const p = spawn("nats-server", ["-c", join(dir, `${name}.conf`)], { stdio: ["ignore", "pipe", "pipe"] })
  let log = ""
  p.stderr.on("data", (d) => (log += d))
  p.stdout.on("data", (d) => (log += d))
  for (let i = 0; !ready.every((r) => r.test(log)); i++) {
    if (i > 500 || p.exitCode !== null) throw new Error(`nats-server ${name} did not start:\n${log}`)
    await wait(20)
  }
  return { p, port: (re) => Number(re.exec(log)[1]), log: () => log }
}

const proxy = (port) =>
  new Promise((res) => {
    const rec = { toAccepting: [], toSoliciting: [] }
    const srv = net
      .createServer((c) => {
        const u = net.connect(port, "127.0.0.1")
        c.on("data", (d) => { rec.toAccepting.push(d.toString("latin1")); u.write(d) })
        u.on("data", (d) => { rec.toSoliciting.push(d.toString("latin1")); c.write(d) })
        c.on("close", () => u.destroy())
        u.on("close", () => c.destroy())
        c.on("error", () => {})
        u.on("error", () => {})
      })
      .listen(0, "127.0.0.1", () => res({ port: srv.address().port, rec, srv }))
  })

const A = await start("a", "listen: 127.0.0.1:-1\nserver_name: A\ncluster { name: C1, listen: 127.0.0.1:-1 }\nleafnodes { listen: 127.0.0.1:-1 }\n",
  [/Listening for route connections on 127.0.0.1:(\d+)/, /Listening for leafnode connections on 127.0.0.1:(\d+)/, /Server is ready/])
const routeProxy = await proxy(A.port(/route connections on 127.0.0.1:(\d+)/))
const leafProxy = await proxy(A.port(/leafnode connections on 127.0.0.1:(\d+)/))
const B = await start("b", `listen: 127.0.0.1:-1\nserver_name: B\ncluster { name: C1, listen: 127.0.0.1:-1, routes: ["nats-route://127.0.0.1:${routeProxy.port}"] }\n`, [/Server is ready/])
const L = await start("l", `listen: 127.0.0.1:-1\nserver_name: L\ncluster { name: LEAF1, listen: 127.0.0.1:-1 }\nleafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${leafProxy.port}" } ] }\n`, [/Server is ready/])
await wait(1500)

const clientPort = (s) => s.port(/client connections on 127.0.0.1:(\d+)/)
const a = await connect({ servers: `127.0.0.1:${clientPort(A)}` })
const b = await connect({ servers: `127.0.0.1:${clientPort(B)}` })
const l = await connect({ servers: `127.0.0.1:${clientPort(L)}` })
const delivered = []
const record = (who) => (_, m) => delivered.push([who, m.subject])
const h = headers()
h.set("Foo", "Bar")
const subs = [
  a.subscribe("hub.>", { callback: record("a") }),
  a.subscribe("work.*", { queue: "W", callback: record("a W") }),
  a.subscribe("work.*", { queue: "W", callback: record("a W") }),
  b.subscribe("routed.>", { callback: record("b") }),
  b.subscribe("rq", { queue: "RQ", callback: record("b RQ") }),
  l.subscribe("leafy.>", { callback: record("l") }),
  l.subscribe("lq", { queue: "LQ", callback: record("l LQ") })
]
const flushAll = async () => { for (const c of [a, b, l]) await c.flush() }
await flushAll()
await wait(700)
b.publish("hub.one", "hello")
b.publish("hub.two", "hi", { reply: "reply.to", headers: h })
b.publish("work.a", "job")
b.publish("work.b", "job2", { reply: "rr" })
a.publish("routed.x", "down", { reply: "back" })
a.publish("routed.y", "downh", { headers: h })
l.publish("hub.three", "from-leaf")
l.publish("routed.z", "from-leaf", { reply: "r3" })
l.publish("routed.h", "from-leaf-h", { headers: h })
l.publish("rq", "q", { reply: "rr", headers: h })
b.publish("leafy.1", "x", { reply: "r1" })
b.publish("lq", "q", { reply: "r2" })
a.publish("leafy.2", "xh", { headers: h })
await flushAll()
await wait(700)
subs[2].unsubscribe()
await a.flush()
await wait(300)
for (const s of subs) if (!s.isClosed()) s.unsubscribe()
await flushAll()
await wait(700)
for (const c of [a, b, l]) await c.close()
for (const s of [A, B, L]) s.p.kill()
rmSync(dir, { recursive: true, force: true })

const version = /Version:\s+(\S+)/.exec(A.log())[1]
writeFileSync(target, JSON.stringify({ "nats-server": version, route: routeProxy.rec, leaf: leafProxy.rec, delivered: delivered.sort() }, null, 1) + "\n")
process.exit(0)
