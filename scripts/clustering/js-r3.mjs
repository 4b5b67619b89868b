// Measures option 1 of docs/clustering.md: streams (and MQTT state) kept in nats-server's
// own replicated JetStream, reached from a Switchyard node through a JetStream domain, next
// to Switchyard's single-node file store. Not a test and not part of `npm test`: figures on
// a shared machine, to be read as ratios (see docs/clustering.md for how they were taken).
//
//   npm run build && npx tsc -p bench/tsconfig.json && node scripts/clustering/js-r3.mjs [--reps 3] [--phase perf,wire,mqtt,failover] [--out FILE.json]
//   node scripts/clustering/js-r3.mjs --summarize FILE.json     # the tables again from a saved run
//
// What it starts, each on free loopback ports, in a temporary directory removed at the end,
// and stops by its own pid:
//   * three nats-server (the Debian nats-server on PATH, 2.9.10 here) forming a JetStream
//     cluster (domain HUB, file store, default sync), each with a leaf-node listener;
//   * a Switchyard node (dist/switchyard/main.js) that is a leaf of that cluster (its remote
//     lists the three leaf URLs), without JetStream of its own;
//   * for the baselines, a single Switchyard with JetStream (file store, sync_interval
//     always: a PubAck after the fsync) and a single nats-server with JetStream (R1).
//
// Phases (nats.js clients, the same code against every target):
//   perf     for 16 B and 1 KiB, against: the R3 stream through a client of nats-server n1
//            ("r3-direct"), the R3 stream through a client of the Switchyard leaf, with
//            jetstream(nc, { domain: "HUB" }) ("r3-via-switchyard"), Switchyard's own single
//            node ("switchyard-1") and nats-server's single node ("nats-1"):
//              sync   SYNC_N publishes one after the other: PubAck latency p50/p99 (µs)
//              async  ASYNC_N publishes with WINDOW outstanding: msgs/s
//              cycle  an MQTT QoS 1 delivery to a persistent session modelled on the stream:
//                     publish (the publisher's PUBACK waits for it), the consumer's next()
//                     (delivery) and ackAck (the subscriber's PUBACK recorded): p50/p99
//              pipe   the same pipelined: publishes WINDOW outstanding while a consumer
//                     takes and acknowledges; msgs/s until every ack is recorded
//   wire     the same four targets under the benchmark's JetStream load generator (the
//            js-pub job of `npm run bench`, dist/bench/loadgen: raw NATS wire, 1000 PUBs
//            outstanding, 2 s), which nats.js cannot keep up with: acknowledged msgs/s, and
//            the messages stored checked against those sent (the stream R3 on the cluster,
//            created through $JS.HUB.API via the leaf)
//   mqtt     real MQTT QoS 1 (mqtt.js): a publisher with MQTT_WINDOW in flight and a
//            persistent-session subscriber on the same server, against nats-server's own
//            MQTT on the 3-node cluster (its $MQTT_ streams replicated), nats-server single
//            and Switchyard single: msgs/s and the publisher's PUBACK latency one at a time
//   failover through the Switchyard leaf and directly (a client of a node that is not the
//            leader): a publisher publishes one message at a time (Nats-Msg-Id set, resent
//            on a timeout or error as a client would), the stream leader is sent SIGKILL
//            after 1 s; reported: the outage (from the kill to the first PubAck after
//            publishes began to fail; the longest wait for a PubAck if none failed), the
//            longest wait for a PubAck, failed publish attempts, and acknowledged messages
//            missing from the stream afterwards, read back from the surviving nodes (must be
//            0). The node is started again and the stream caught up before the next trial.
// Every figure is printed with the load average at the time (/proc/loadavg).
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { connect } from "@nats-io/transport-node"
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream"
import mqtt from "mqtt"
import { runJob } from "../../dist/bench/proc.js"

const args = process.argv.slice(2)
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? args[i + 1] : dflt
}
const REPS = Number(opt("reps", "3"))
const PHASES = opt("phase", "perf,wire,mqtt,failover").split(",")
const OUT = opt("out", undefined)
const SIZES = (opt("sizes", "16,1024")).split(",").map(Number)
const SYNC_N = Number(process.env.SYNC_N ?? 1000)
const ASYNC_N = Number(process.env.ASYNC_N ?? 20000)
const WINDOW = Number(process.env.WINDOW ?? 256)
const CYCLE_N = Number(process.env.CYCLE_N ?? 500)
const PIPE_N = Number(process.env.PIPE_N ?? 10000)
const MQTT_N = Number(process.env.MQTT_N ?? 5000)
const MQTT_WINDOW = Number(process.env.MQTT_WINDOW ?? 64)
const ENTRY = process.env.ENTRY ?? fileURLToPath(new URL("../../dist/switchyard/main.js", import.meta.url))

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")
// Ports below the kernel's ephemeral range, so that no outgoing connection (a route, a
// leaf connection) takes one between the probe and the server's bind.
const taken = new Set()
const freePort = async () => {
  for (;;) {
    const p = 20000 + Math.floor(Math.random() * 12000)
    if (taken.has(p)) continue
    const ok = await new Promise((resolve) => {
      const s = net.createServer()
      s.once("error", () => resolve(false))
      s.listen(p, "127.0.0.1", () => s.close(() => resolve(true)))
    })
    if (ok) {
      taken.add(p)
      return p
    }
  }
}
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const now = () => performance.now()
const payload = (size) => new Uint8Array(size).fill(120)

const root = mkdtempSync(join(tmpdir(), "cldoc-js-"))
const procs = new Set()

/** A server process: its log, a wait for a line, stop by pid. */
const start = (name, cmd, argv, readyRe) => {
  const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", "pipe"] })
  const p = { name, child, log: "", argv, cmd, readyRe }
  child.stdout.on("data", (d) => (p.log += d))
  child.stderr.on("data", (d) => (p.log += d))
  procs.add(p)
  child.on("exit", () => procs.delete(p))
  return p
}
const ready = async (p, what = p.readyRe, ms = 30000) => {
  const until = now() + ms
  while (!what.test(p.log)) {
    if (p.child.exitCode !== null) throw new Error(`${p.name} exited:\n${p.log.slice(-2000)}`)
    if (now() > until) throw new Error(`${p.name} not ready:\n${p.log.slice(-2000)}`)
    await sleep(50)
  }
}
const stop = async (p, signal = "SIGTERM") => {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return
  const gone = new Promise((r) => p.child.once("exit", r))
  p.child.kill(signal)
  await Promise.race([gone, sleep(5000).then(() => p.child.kill("SIGKILL"))])
  await gone
}
const cleanup = async () => {
  for (const p of [...procs]) await stop(p)
  rmSync(root, { recursive: true, force: true })
}
process.on("SIGINT", () => cleanup().then(() => process.exit(130)))

// ------------------------------------------------------------------ the servers

/** A directory of its own under the run's, with a configuration file of these lines. */
const confIn = (name, lines) => {
  const dir = join(root, name)
  mkdirSync(dir, { recursive: true })
  const file = join(dir, "server.conf")
  writeFileSync(file, lines(dir).join("\n") + "\n")
  return file
}

const hub = []
const startHub = async () => {
  const ports = []
  for (let i = 0; i < 3; i++) ports.push({ client: await freePort(), route: await freePort(), leaf: await freePort(), mqtt: await freePort() })
  for (let i = 0; i < 3; i++) {
    const conf = confIn(`n${i + 1}`, (dir) => [
      `server_name: n${i + 1}`,
      `listen: 127.0.0.1:${ports[i].client}`,
      `jetstream { store_dir: "${join(dir, "js")}", domain: HUB }`,
      `cluster { name: JSC, listen: 127.0.0.1:${ports[i].route}, routes: [${ports.map((p) => `nats-route://127.0.0.1:${p.route}`).join(", ")}] }`,
      `leafnodes { listen: 127.0.0.1:${ports[i].leaf} }`,
      `mqtt { listen: 127.0.0.1:${ports[i].mqtt} }`
    ])
    hub.push({ name: `n${i + 1}`, conf, ports: ports[i], proc: undefined })
  }
  for (const n of hub) n.proc = start(n.name, "nats-server", ["-c", n.conf], /Server is ready/)
  for (const n of hub) await ready(n.proc)
  // JetStream is usable once the meta group has a leader
  const nc = await connect({ port: hub[0].ports.client })
  await withRetry(() => jetstreamManager(nc), "the hub's JetStream", 300)
  await nc.close()
}
const restartHubNode = async (n) => {
  n.proc = start(n.name, "nats-server", ["-c", n.conf], /Server is ready/)
  await ready(n.proc)
}

let leaf
const startLeaf = async () => {
  const port = await freePort()
  const http = await freePort()
  const conf = confIn("leaf", () => [
    `server_name: edge`,
    `listen: 127.0.0.1:${port}`,
    `http: 127.0.0.1:${http}`,
    `leafnodes { remotes: [ { urls: [${hub.map((n) => `"nats-leaf://127.0.0.1:${n.ports.leaf}"`).join(", ")}] } ] }`
  ])
  leaf = { port, http, proc: start("switchyard-leaf", process.execPath, [ENTRY, "-c", conf], /Server is ready/) }
  await ready(leaf.proc)
}
/** The hub node the leaf is connected to (by its leaf port in /leafz), or undefined. */
const leafHub = async () => {
  const r = await fetch(`http://127.0.0.1:${leaf.http}/leafz`).then((x) => x.json())
  const port = r.leafs?.[0]?.port
  return hub.find((n) => n.ports.leaf === port)?.name
}

const single = {}
const startSingles = async () => {
  for (const kind of ["switchyard-1", "nats-1"]) {
    const port = await freePort()
    const mport = await freePort()
    const conf = confIn(kind, (dir) => [`server_name: ${kind}`, `listen: 127.0.0.1:${port}`, `jetstream { store_dir: "${join(dir, "js")}" }`, `mqtt { listen: 127.0.0.1:${mport} }`])
    const proc = kind === "nats-1" ? start(kind, "nats-server", ["-c", conf], /Server is ready/) : start(kind, process.execPath, [ENTRY, "-c", conf], /Server is ready/)
    await ready(proc)
    single[kind] = { port, mport, proc }
  }
}

// ------------------------------------------------------------------ measurements

/** A target: how to connect, with which JetStream options, and the stream's replicas. */
const targets = () => [
  { name: "r3-direct", port: hub[0].ports.client, js: {}, replicas: 3 },
  { name: "r3-via-switchyard", port: leaf.port, js: { domain: "HUB" }, replicas: 3 },
  { name: "switchyard-1", port: single["switchyard-1"].port, js: {}, replicas: 1 },
  { name: "nats-1", port: single["nats-1"].port, js: {}, replicas: 1 }
]

const withRetry = async (fn, what, tries = 100) => {
  for (let i = 0; ; i++) {
    try {
      return await fn()
    } catch (e) {
      if (i >= tries) throw new Error(`${what}: ${e.message}`)
      await sleep(100)
    }
  }
}

const windowed = async (total, window, fn) => {
  let next = 0
  await Promise.all(
    Array.from({ length: window }, async () => {
      while (next < total) await fn(next++)
    })
  )
}

const perfOnce = async (t, size, stream) => {
  const nc = await connect({ port: t.port, maxReconnectAttempts: 0 })
  const jsm = await jetstreamManager(nc, t.js)
  const js = jetstream(nc, t.js)
  const subj = `${stream.toLowerCase()}.x`
  await withRetry(async () => {
    try {
      await jsm.streams.delete(stream)
    } catch {}
    await jsm.streams.add({ name: stream, subjects: [`${stream.toLowerCase()}.>`], num_replicas: t.replicas, storage: "file" })
  }, `create ${stream} on ${t.name}`)
  const data = payload(size)
  for (let i = 0; i < 100; i++) await js.publish(subj, data) // warm-up
  const lat = []
  for (let i = 0; i < SYNC_N; i++) {
    const t0 = now()
    await js.publish(subj, data)
    lat.push((now() - t0) * 1000)
  }
  const t1 = now()
  await windowed(ASYNC_N, WINDOW, () => js.publish(subj, data))
  const asyncRate = ASYNC_N / ((now() - t1) / 1000)

  // the MQTT QoS 1 model: publish, deliver, ack (recorded), one at a time
  await jsm.streams.purge(stream)
  await jsm.consumers.add(stream, { durable_name: "Q", ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, max_ack_pending: 20000 })
  const c = await js.consumers.get(stream, "Q")
  const cyc = []
  for (let i = 0; i < CYCLE_N; i++) {
    const t0 = now()
    await js.publish(subj, data)
    const m = await c.next({ expires: 5000 })
    if (m === null) throw new Error("cycle: no message")
    await m.ackAck()
    cyc.push((now() - t0) * 1000)
  }
  // pipelined: publishes WINDOW outstanding, a consumer taking and acknowledging
  const t2 = now()
  let got = 0
  const msgs = await c.consume({ max_messages: 1000 })
  const consumed = (async () => {
    for await (const m of msgs) {
      m.ack()
      if (++got >= PIPE_N) break
    }
  })()
  await windowed(PIPE_N, WINDOW, () => js.publish(subj, data))
  await consumed
  for (;;) {
    const ci = await jsm.consumers.info(stream, "Q")
    if (ci.num_ack_pending === 0 && ci.num_pending === 0) break
    await sleep(5)
  }
  const pipeRate = PIPE_N / ((now() - t2) / 1000)
  await jsm.streams.delete(stream)
  await nc.close()
  return { syncP50: pct(lat, 50), syncP99: pct(lat, 99), asyncRate, cycleP50: pct(cyc, 50), cycleP99: pct(cyc, 99), pipeRate }
}

const mqttOnce = async (port, size, tag) => {
  const url = `mqtt://127.0.0.1:${port}`
  const topic = `bench/${tag}`
  const sub = await mqtt.connectAsync(url, { clientId: `sub-${tag}`, clean: false, reconnectPeriod: 0 })
  await sub.subscribeAsync(topic, { qos: 1 })
  const pub = await mqtt.connectAsync(url, { clientId: `pub-${tag}`, clean: true, reconnectPeriod: 0 })
  const data = Buffer.from(payload(size))
  let got = 0
  let done
  const all = new Promise((r) => (done = r))
  sub.on("message", () => {
    if (++got === MQTT_N + 300) done()
  })
  for (let i = 0; i < 100; i++) await pub.publishAsync(topic, data, { qos: 1 }) // warm-up
  const lat = []
  for (let i = 0; i < 200; i++) {
    const t0 = now()
    await pub.publishAsync(topic, data, { qos: 1 })
    lat.push((now() - t0) * 1000)
  }
  const t1 = now()
  await windowed(MQTT_N, MQTT_WINDOW, () => pub.publishAsync(topic, data, { qos: 1 }))
  await Promise.race([all, sleep(60000).then(() => Promise.reject(new Error(`mqtt: ${got} of ${MQTT_N + 300} received`)))])
  const rate = MQTT_N / ((now() - t1) / 1000)
  await pub.endAsync()
  // a clean session to drop the persistent one
  await sub.endAsync()
  const clean = await mqtt.connectAsync(url, { clientId: `sub-${tag}`, clean: true, reconnectPeriod: 0 })
  await clean.endAsync()
  return { pubackP50: pct(lat, 50), pubackP99: pct(lat, 99), rate }
}

/** The replicas nats-server gave its MQTT message stream (by its JetStream API). */
const mqttReplicas = async (port) => {
  const nc = await connect({ port })
  const jsm = await jetstreamManager(nc)
  try {
    const si = await jsm.streams.info("$MQTT_msgs")
    return si.config.num_replicas
  } catch (e) {
    return `? (${e.message})`
  } finally {
    await nc.close()
  }
}

const failoverOnce = async (via, trial) => {
  const stream = `FO${via === "switchyard" ? "S" : "D"}${trial}`
  const subj = `${stream.toLowerCase()}.x`
  const admin = await connect({ maxReconnectAttempts: -1, reconnectTimeWait: 250, servers: hub.map((n) => `127.0.0.1:${n.ports.client}`) })
  const ajsm = await jetstreamManager(admin)
  await withRetry(() => ajsm.streams.add({ name: stream, subjects: [`${stream.toLowerCase()}.>`], num_replicas: 3, storage: "file", duplicate_window: 120e9 }), `create ${stream}`)
  let info = await withRetry(() => ajsm.streams.info(stream), "stream info")
  const leaderName = info.cluster.leader
  const victim = hub.find((n) => n.name === leaderName)
  // the direct client sits on a node that is not the leader (as most clients of a 3-node cluster do)
  const other = hub.find((n) => n !== victim)
  const port = via === "switchyard" ? leaf.port : other.ports.client
  const nc = await connect({ port, maxReconnectAttempts: -1, reconnectTimeWait: 250 })
  const js = jetstream(nc, via === "switchyard" ? { domain: "HUB" } : {})
  const attached = via === "switchyard" ? await leafHub() : other.name
  await js.publish(subj, "warm", { msgID: "warm" })
  const acked = []
  let errors = 0
  let killedAt = 0
  let firstErrorAt = 0
  let firstAfter = 0
  let stopAt = Infinity
  let maxGap = 0
  let lastAck = now()
  const killer = sleep(1000).then(async () => {
    killedAt = now()
    victim.proc.child.kill("SIGKILL")
  })
  const deadline = now() + 60000
  // no publish failed within 5 s of the kill: the outage was the longest wait for an ack
  setTimeout(() => {
    if (firstErrorAt === 0) stopAt = now()
  }, 6000)
  for (let id = 0; now() < stopAt && now() < deadline; id++) {
    for (;;) {
      try {
        await js.publish(subj, String(id), { msgID: `m${id}`, timeout: 1000 })
        const t = now()
        maxGap = Math.max(maxGap, t - lastAck)
        lastAck = t
        acked.push(id)
        if (firstErrorAt > 0 && firstAfter === 0) {
          firstAfter = t
          stopAt = t + 2000
        }
        break
      } catch {
        errors++
        if (killedAt > 0 && firstErrorAt === 0) firstErrorAt = now()
        if (now() > deadline) break
        await sleep(10)
      }
    }
  }
  await killer
  console.error(`  failover ${via} #${trial}: killed ${leaderName}, ${acked.length} acked, ${errors} errors; verifying`)
  // every acknowledged id must be in the stream: read it back from a surviving node
  const rjsm = ajsm
  // (the meta group may be electing a leader too, if the victim led it)
  await withRetry(() => rjsm.consumers.add(stream, { durable_name: "V", ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All }), "verifying consumer", 300)
  const v = await jetstream(admin).consumers.get(stream, "V")
  info = await withRetry(() => rjsm.streams.info(stream), "stream info after")
  const stored = new Map()
  let left = info.state.messages
  while (left > 0) {
    const batch = await v.fetch({ max_messages: Math.min(left, 1000), expires: 5000 })
    let n = 0
    for await (const m of batch) {
      const k = m.string()
      stored.set(k, (stored.get(k) ?? 0) + 1)
      n++
    }
    if (n === 0) break
    left -= n
  }
  const lost = acked.filter((id) => !stored.has(String(id))).length
  const dups = [...stored.values()].filter((c) => c > 1).length
  await nc.close()
  // the killed node back, and the stream caught up, before the next trial
  await restartHubNode(victim)
  await withRetry(async () => {
    const si = await rjsm.streams.info(stream)
    if (si.cluster?.leader === undefined || (si.cluster.replicas ?? []).length !== 2 || !si.cluster.replicas.every((r) => r.current)) throw new Error("not caught up")
  }, "stream caught up after the restart", 300)
  await rjsm.streams.delete(stream)
  await admin.close()
  return {
    via,
    leader: leaderName,
    clientOn: attached,
    clientOnKilledNode: attached === leaderName,
    // from the kill to the first PubAck after publishes began to fail (else the longest wait)
    recoveryMs: firstAfter > 0 ? firstAfter - killedAt : maxGap,
    maxAckGapMs: maxGap,
    acked: acked.length,
    errors,
    lost,
    duplicates: dups,
    load: load()
  }
}

// ------------------------------------------------------------------ summary

/** min–max of each figure over the repetitions, per target and size, with the loads seen. */
const summarize = (r) => {
  const lines = []
  const range = (xs, f) => `${f(Math.min(...xs))}–${f(Math.max(...xs))}`
  const us = (x) => `${Math.round(x)}`
  const k = (x) => `${(x / 1000).toFixed(1)}k`
  const loads = (rows) => range(rows.map((x) => Number(x.load.split(" ")[0])), (x) => x.toFixed(1))
  const group = (rows, cols) => {
    const keys = [...new Set(rows.map((x) => `${x.target}|${x.size}`))]
    for (const key of keys) {
      const [target, size] = key.split("|")
      const g = rows.filter((x) => x.target === target && String(x.size) === size)
      lines.push(`| ${target} | ${size} B | ${cols.map(([f, fmt]) => range(g.map((x) => x[f]), fmt)).join(" | ")} | ${loads(g)} |`)
    }
  }
  if (r.perf.length > 0) {
    lines.push("| target | size | sync p50 µs | sync p99 µs | async msgs/s | cycle p50 µs | cycle p99 µs | pipelined msgs/s | load (1 min) |", "|---|---|---|---|---|---|---|---|---|")
    group(r.perf, [["syncP50", us], ["syncP99", us], ["asyncRate", k], ["cycleP50", us], ["cycleP99", us], ["pipeRate", k]])
  }
  if ((r.wire ?? []).length > 0) {
    lines.push("", "| target | size | acknowledged msgs/s (wire load generator) | lost | load (1 min) |", "|---|---|---|---|---|")
    const keys = [...new Set(r.wire.map((x) => `${x.target}|${x.size}`))]
    for (const key of keys) {
      const [target, size] = key.split("|")
      const g = r.wire.filter((x) => x.target === target && String(x.size) === size)
      const ok = g.filter((x) => x.ok)
      lines.push(`| ${target} | ${size} B | ${ok.length > 0 ? range(ok.map((x) => x.rate), k) : "failed"}${ok.length < g.length ? ` (${g.length - ok.length} failed: ${g.find((x) => !x.ok).error})` : ""} | ${g.reduce((a, x) => a + x.loss, 0)} | ${loads(g)} |`)
    }
  }
  if (r.mqtt.length > 0) {
    lines.push("", "| target | size | PUBACK p50 µs | PUBACK p99 µs | QoS 1 msgs/s | load (1 min) |", "|---|---|---|---|---|---|")
    group(r.mqtt, [["pubackP50", us], ["pubackP99", us], ["rate", k]])
  }
  if (r.failover.length > 0) {
    lines.push("", "| via | leader killed | client's node | outage ms | longest wait for a PubAck ms | failed attempts | acked | lost | load (1 min) |", "|---|---|---|---|---|---|---|---|---|")
    for (const f of r.failover) {
      lines.push(`| ${f.via} | ${f.leader} | ${f.clientOn}${f.clientOnKilledNode ? " (killed)" : ""} | ${Math.round(f.recoveryMs)} | ${Math.round(f.maxAckGapMs)} | ${f.errors} | ${f.acked} | ${f.lost} | ${f.load.split(" ")[0]} |`)
    }
  }
  return lines.join("\n")
}

// ------------------------------------------------------------------ main

if (opt("summarize", undefined) !== undefined) {
  console.log(summarize(JSON.parse(readFileSync(opt("summarize"), "utf8"))))
  process.exit(0)
}

const results = { when: new Date().toISOString(), cpus: (await import("node:os")).cpus().length, perf: [], wire: [], mqtt: [], failover: [] }
const show = (o) => console.log(JSON.stringify(o))
try {
  await startHub()
  await startLeaf()
  await startSingles()
  // the leaf connection up and the hub's JetStream reachable through it
  {
    const nc = await connect({ port: leaf.port })
    await withRetry(() => jetstreamManager(nc, { domain: "HUB" }), "HUB through the leaf", 300)
    await nc.close()
  }
  console.log(`started: 3-node nats-server JetStream cluster (domain HUB), a Switchyard leaf of it, single Switchyard and nats-server; load ${load()}`)
  if (PHASES.includes("perf")) {
    for (let rep = 0; rep < REPS; rep++) {
      for (const size of SIZES) {
        for (const t of targets()) {
          const l0 = load()
          const r = await perfOnce(t, size, `P${rep}${size}`)
          const row = { target: t.name, size, rep, ...r, load: l0 }
          results.perf.push(row)
          show(row)
        }
      }
    }
  }
  if (PHASES.includes("wire")) {
    for (let rep = 0; rep < REPS; rep++) {
      for (const size of SIZES) {
        for (const t of targets()) {
          process.env.BENCH_JS_API = t.js.domain === undefined ? "$JS.API" : `$JS.${t.js.domain}.API`
          process.env.BENCH_JS_REPLICAS = String(t.replicas)
          const pid = t.name.startsWith("r3") ? hub[0].proc.child.pid : single[t.name].proc.child.pid
          const l0 = load()
          const r = await runJob({ kind: "js-pub", port: t.port, serverPid: pid, size, count: 100_000_000, durationMs: 2000 }, 120_000)
          const row = { target: t.name, size, rep, ok: r.ok, rate: r.metrics.rate, loss: r.loss, excess: r.excess, error: r.error ?? r.errors.join("; "), load: l0 }
          results.wire.push(row)
          show(row)
        }
      }
    }
  }
  if (PHASES.includes("mqtt")) {
    const rep3 = await mqttReplicas(hub[0].ports.client).catch(() => "?")
    for (let rep = 0; rep < REPS; rep++) {
      for (const size of SIZES) {
        for (const [name, port] of [
          ["nats-r3-mqtt", hub[0].ports.mqtt],
          ["nats-1-mqtt", single["nats-1"].mport],
          ["switchyard-1-mqtt", single["switchyard-1"].mport]
        ]) {
          const l0 = load()
          const r = await mqttOnce(port, size, `${name}-${rep}-${size}`)
          const row = { target: name, size, rep, ...r, load: l0 }
          results.mqtt.push(row)
          show(row)
        }
      }
    }
    results.mqttReplicas = await mqttReplicas(hub[0].ports.client)
    console.log(`nats-server's $MQTT_msgs replicas on the 3-node cluster: ${results.mqttReplicas} (before the runs: ${rep3})`)
  }
  if (PHASES.includes("failover")) {
    for (let trial = 0; trial < REPS; trial++) {
      for (const via of ["switchyard", "direct"]) {
        const r = await failoverOnce(via, trial)
        results.failover.push(r)
        show(r)
      }
    }
  }
  console.log("\n" + summarize(results))
} finally {
  if (OUT !== undefined) writeFileSync(OUT, JSON.stringify(results, null, 2) + "\n")
  await cleanup()
}
