// Hostile inputs (issue #15), each measured on Switchyard and on the peer that serves
// the same protocol, started side by side on free loopback ports:
//
//   dribble   (vs mosquitto)   CLIENTS raw MQTT 3.1.1 clients each announce a QoS 0
//             PUBLISH of 1,000,000 bytes and send one payload byte per millisecond for
//             SECONDS; the server's RSS before and at the end. Target: growth < 20 MB.
//   retained  (vs mosquitto)   RETAINED retained messages on r/<i>/x, then ONE
//             SUBSCRIBE with FILTERS filters n/<i>/+ that match none of them; time to
//             its SUBACK and the longest gap between a bystander's PINGRESPs (a PINGREQ
//             every 10 ms). Targets: SUBACK < 1 s, gap < 100 ms.
//   subjects  (vs nats-server) $JS.API.STREAM.CREATE.BIG with SUBJECTS subjects s.<i>.>;
//             time to the API response and the longest gap between a bystander's
//             PONGs (a PING every 10 ms). Target: response < 1 s.
//
// Run after `npm run build`:
//
//   node scripts/measure-hostile.mjs [dribble|retained|subjects|all]   # default all
//   SECONDS=10 node scripts/measure-hostile.mjs dribble
//   ENTRY=other/bin/switchyard.js node scripts/measure-hostile.mjs
//   MOSQUITTO=/usr/sbin/mosquitto NATS_SERVER=/usr/sbin/nats-server (the defaults)
//
// Not a test: the figures depend on the machine and its load; run it several times.
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import net from "node:net"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import mqtt from "mqtt"
import { connect as natsConnect } from "nats"

const entry = process.env.ENTRY ?? fileURLToPath(new URL("../bin/switchyard.js", import.meta.url))
const MOSQUITTO = process.env.MOSQUITTO ?? "/usr/sbin/mosquitto"
const NATS_SERVER = process.env.NATS_SERVER ?? "/usr/sbin/nats-server"
const SECONDS = Number(process.env.SECONDS ?? 30)
const CLIENTS = Number(process.env.CLIENTS ?? 20)
const ANNOUNCED = 1_000_000
const RETAINED = Number(process.env.RETAINED ?? 20_000)
const FILTERS = Number(process.env.FILTERS ?? 2_000)
const SUBJECTS = Number(process.env.SUBJECTS ?? 20_000)

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const now = () => performance.now()
const mib = (bytes) => (bytes / 2 ** 20).toFixed(1)
const ms = (t) => `${t.toFixed(0)} ms`

/** Rejects with `what` when `promise` has not settled within `limit` ms. */
const within = (promise, limit, what) => {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${limit / 1000} s`)), limit)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** Polls `ready` every 5 ms; throws with `what` after `limit` ms. */
async function until(ready, limit, what) {
  const deadline = Date.now() + limit
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`${what}: nothing within ${limit / 1000} s`)
    await sleep(5)
  }
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = net.createServer()
    s.on("error", reject)
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })

const canConnect = (port) =>
  new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1")
    s.on("connect", () => (s.destroy(), resolve(true)))
    s.on("error", () => resolve(false))
  })

// ---------------------------------------------------------------------------------
// Servers: each in a temp dir of its own, stopped by its pid, the dir removed after.

const live = new Set()
for (const signal of ["SIGINT", "SIGTERM"])
  process.once(signal, async () => {
    console.error(`\n${signal}: stopping ${[...live].map((s) => s.name).join(", ") || "nothing"}`)
    await Promise.all([...live].map((s) => s.stop()))
    process.exit(130)
  })

/** Starts `cmd` and waits for `marker` in its output (if any) and for `ports` to accept. */
async function startServer(name, dir, cmd, args, ports, marker) {
  const proc = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] })
  let log = ""
  const keep = (d) => (log = (log + d).slice(-64 * 1024))
  proc.stdout.on("data", keep)
  proc.stderr.on("data", keep)
  proc.on("error", (e) => keep(`spawn failed: ${e.message}\n`))
  const server = {
    name,
    proc,
    ports,
    log: () => log,
    rss: () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proc.pid}/status`, "utf8"))[1]) * 1024,
    stop: async () => {
      live.delete(server)
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once("exit", r))
        proc.kill("SIGTERM")
        const t = setTimeout(() => proc.kill("SIGKILL"), 5000)
        await exited
        clearTimeout(t)
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
  live.add(server)
  try {
    const t0 = Date.now()
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${name} exited:\n${log}`)
      if (Date.now() - t0 > 30_000) throw new Error(`${name} not ready within 30 s:\n${log}`)
      if (!marker || log.includes(marker)) {
        const open = await Promise.all(Object.values(ports).map(canConnect))
        if (open.every(Boolean)) break
      }
      await sleep(50)
    }
  } catch (e) {
    await server.stop()
    throw e
  }
  return server
}

async function switchyard() {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-hostile-"))
  const [nats, mqttPort] = [await freePort(), await freePort()]
  const args = [entry, "-a", "127.0.0.1", "-p", nats, "--mqtt_port", mqttPort, "-js", "-sd", join(dir, "data")]
  return startServer("Switchyard", dir, process.execPath, args.map(String), { nats, mqtt: mqttPort }, "Server is ready")
}

async function mosquitto() {
  const dir = mkdtempSync(join(tmpdir(), "mosquitto-hostile-"))
  const port = await freePort()
  const conf = join(dir, "mosquitto.conf")
  writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n`)
  return startServer("mosquitto", dir, MOSQUITTO, ["-c", conf], { mqtt: port })
}

async function natsServer() {
  const dir = mkdtempSync(join(tmpdir(), "nats-hostile-"))
  const port = await freePort()
  const conf = join(dir, "nats.conf")
  writeFileSync(conf, `listen: "127.0.0.1:${port}"\njetstream { store_dir: "${join(dir, "js")}" }\n`)
  return startServer("nats-server", dir, NATS_SERVER, ["-c", conf], { nats: port }, "Server is ready")
}

/** Runs `measure` against each server in turn; every server is stopped whatever happens. */
async function against(starters, measure) {
  const rows = []
  for (const start of starters) {
    let server
    try {
      server = await start()
    } catch (e) {
      rows.push({ system: { switchyard: "Switchyard", natsServer: "nats-server" }[start.name] ?? start.name, error: e.message.replace(/\s+/g, " ").slice(0, 300) })
      continue
    }
    try {
      await sleep(2000) // past start-up and Switchyard's one memory-reducing collection after it
      rows.push({ system: server.name, ...(await measure(server)) })
    } catch (e) {
      rows.push({ system: server.name, error: e.message.split("\n")[0] })
    } finally {
      await server.stop()
    }
  }
  return rows
}

function table(title, columns, rows) {
  console.log(`\n${title}\n`)
  console.log(`| system | ${columns.map(([h]) => h).join(" | ")} |`)
  console.log(`|---|${columns.map(() => "---").join("|")}|`)
  for (const row of rows) {
    const cells = row.error ? [`failed: ${row.error}`, ...columns.slice(1).map(() => "")] : columns.map(([, f]) => f(row))
    console.log(`| ${row.system} | ${cells.join(" | ")} |`)
  }
}

// ---------------------------------------------------------------------------------
// Raw MQTT 3.1.1 over node:net: packets written by hand, read by a small splitter.

const varint = (n) => {
  const out = []
  do {
    let b = n % 128
    n = Math.floor(n / 128)
    if (n > 0) b |= 128
    out.push(b)
  } while (n > 0)
  return Buffer.from(out)
}
const str = (s) => {
  const b = Buffer.from(s)
  return Buffer.concat([Buffer.from([b.length >> 8, b.length & 255]), b])
}
const packet = (first, body) => Buffer.concat([Buffer.from([first]), varint(body.length), body])
const PINGREQ = Buffer.from([0xc0, 0x00])
const T = { CONNACK: 2, SUBACK: 9, PINGRESP: 13 }

/** A raw MQTT connection, CONNECT sent and CONNACK 0 received; `on[type]` sees each packet. */
async function rawMqtt(port, clientId, keepalive = 60) {
  const sock = net.connect(port, "127.0.0.1")
  sock.setNoDelay(true)
  const conn = { sock, on: {}, closedAt: null, error: null }
  let buf = Buffer.alloc(0)
  sock.on("data", (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk
    for (;;) {
      let len = 0
      let mul = 1
      let i = 1
      for (;; i++) {
        if (i >= buf.length) return
        len += (buf[i] & 127) * mul
        mul *= 128
        if (!(buf[i] & 128)) break
      }
      const end = i + 1 + len
      if (buf.length < end) return
      const type = buf[0] >> 4
      const body = buf.subarray(i + 1, end)
      buf = buf.subarray(end)
      conn.on[type]?.(body)
    }
  })
  sock.on("error", (e) => (conn.error = e.message))
  sock.on("close", () => (conn.closedAt = now()))
  const connack = new Promise((resolve, reject) => {
    conn.on[T.CONNACK] = (body) => (body[1] === 0 ? resolve() : reject(new Error(`CONNACK code ${body[1]}`)))
    sock.once("close", () => reject(new Error(`${clientId}: closed before CONNACK (${conn.error ?? "no error"})`)))
  })
  const flags = 0x02 // clean session
  const body = Buffer.concat([str("MQTT"), Buffer.from([4, flags, keepalive >> 8, keepalive & 255]), str(clientId)])
  sock.write(packet(0x10, body))
  try {
    await within(connack, 10_000, `${clientId}: CONNACK`)
  } catch (e) {
    sock.destroy()
    throw e
  }
  return conn
}

/**
 * The longest time between two consecutive answers in `times` whose interval overlaps
 * (from, to) (a stall that began before `to` counts in full, as long as it lasted),
 * or, with `inside`, lies wholly within [from, to] (the quiet baseline before).
 */
function longestGap(times, from, to, inside = false) {
  let worst = 0
  for (let i = 1; i < times.length; i++) {
    const [a, b] = [times[i - 1], times[i]]
    if (inside ? a >= from && b <= to : b > from && a < to) worst = Math.max(worst, b - a)
  }
  return worst
}

/** PINGREQ every 10 ms; `gap(from, to)` is the longest time between two PINGRESPs around [from, to]. */
function pinger(conn) {
  const times = []
  conn.on[T.PINGRESP] = () => times.push(now())
  const timer = setInterval(() => conn.sock.write(PINGREQ), 10)
  const gap = (from, to, inside) => longestGap(times, from, to, inside)
  const answeredAfter = (t) => until(() => times.at(-1) > t, 30_000, "bystander: PINGRESP")
  return { gap, answeredAfter, stop: () => clearInterval(timer) }
}

// ---------------------------------------------------------------------------------
// 1. dribble

async function dribble(server) {
  const before = server.rss()
  const keepalive = Math.min(65535, Math.max(60, SECONDS + 30))
  const conns = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => rawMqtt(server.ports.mqtt, `dribble-${i}`, keepalive)))
  const payloadBytes = []
  for (const [i, c] of conns.entries()) {
    const topic = str(`d/${i}`)
    c.sock.write(Buffer.concat([Buffer.from([0x30]), varint(ANNOUNCED), topic]))
    payloadBytes.push(ANNOUNCED - topic.length)
    c.written = 0
    c.flushed = 0
  }
  let peak = before
  const t0 = now()
  const end = t0 + SECONDS * 1000
  // One byte per millisecond per client: each tick makes up what the timer fell behind by.
  await new Promise((resolve) => {
    const tick = setInterval(() => {
      const t = now()
      const due = Math.min(Math.floor(t - t0), SECONDS * 1000)
      for (const [i, c] of conns.entries()) {
        const n = Math.min(due, payloadBytes[i]) - c.written
        if (n <= 0 || c.closedAt !== null) continue
        c.written += n
        c.sock.write(Buffer.alloc(n, 0x61), (err) => !err && (c.flushed += n))
      }
      if (t >= end) clearInterval(tick), resolve()
    }, 1)
    const sample = setInterval(() => {
      try {
        peak = Math.max(peak, server.rss())
      } catch {} // gone: the exit shows in the RSS read at the end
    }, 500)
    setTimeout(() => clearInterval(sample), SECONDS * 1000)
  })
  await until(() => conns.every((c) => c.flushed === c.written || c.closedAt !== null), 5000, "dribble: last writes")
  const after = server.rss()
  peak = Math.max(peak, after)
  const cut = conns.filter((c) => c.closedAt !== null)
  for (const c of conns) c.sock.destroy()
  return {
    before,
    after,
    peak,
    growth: after - before,
    sent: conns.reduce((s, c) => s + c.flushed, 0),
    cut: cut.length ? `${cut.length} (first after ${((Math.min(...cut.map((c) => c.closedAt)) - t0) / 1000).toFixed(1)} s)` : "0"
  }
}

// ---------------------------------------------------------------------------------
// 2. retained

async function retained(server) {
  const url = `mqtt://127.0.0.1:${server.ports.mqtt}`
  const pub = await within(mqtt.connectAsync(url, { clientId: "ret-pub", reconnectPeriod: 0 }), 10_000, "publisher: CONNECT")
  const t0 = now()
  try {
    for (let i = 0; i < RETAINED; i++) pub.publish(`r/${i}/x`, `retained ${i}`, { qos: 0, retain: true })
    // Packets of one connection are handled in order: once the publisher's own SUBSCRIBE
    // brings back r/done, everything it published before is held.
    const done = new Promise((resolve) => pub.on("message", (topic) => topic === "r/done" && resolve()))
    pub.publish("r/done", "done", { qos: 0, retain: true })
    await within(pub.subscribeAsync("r/done", { qos: 0 }), 60_000, "publisher: SUBACK for r/done")
    await within(done, 60_000, `${RETAINED} retained messages: r/done`)
  } finally {
    pub.end(true)
  }
  const loaded = now() - t0

  const bystander = await rawMqtt(server.ports.mqtt, "ret-bystander")
  const pings = pinger(bystander)
  let subscriber
  let result
  try {
    subscriber = await rawMqtt(server.ports.mqtt, "ret-subscriber")
    await sleep(1000)
    const filters = Array.from({ length: FILTERS }, (_, i) => Buffer.concat([str(`n/${i}/+`), Buffer.from([0])]))
    const subscribe = packet(0x82, Buffer.concat([Buffer.from([0, 1]), ...filters]))
    const suback = new Promise((resolve, reject) => {
      subscriber.on[T.SUBACK] = (body) => resolve({ at: now(), codes: body.subarray(2) })
      subscriber.sock.once("close", () => reject(new Error(`SUBSCRIBE of ${subscribe.length} B: connection closed (${subscriber.error ?? "by the server"})`)))
    })
    const sent = now()
    subscriber.sock.write(subscribe)
    const { at, codes } = await within(suback, 60_000, `SUBACK to ${FILTERS} filters`)
    await pings.answeredAfter(at)
    const granted = codes.filter((c) => c === 0).length
    result = {
      loaded,
      size: subscribe.length,
      suback: at - sent,
      codes: granted === FILTERS ? `${FILTERS} granted` : `${granted} granted, ${codes.length - granted} refused`,
      baseline: pings.gap(sent - 1000, sent, true),
      gap: pings.gap(sent, at)
    }
  } finally {
    pings.stop()
    bystander.sock.destroy()
    subscriber?.sock.destroy()
  }
  result.held = await countRetained(url)
  return result
}

/** How many retained messages r/+/x brings back: that the server really held them all. */
async function countRetained(url) {
  const client = await within(mqtt.connectAsync(url, { clientId: "ret-count", reconnectPeriod: 0 }), 10_000, "counter: CONNECT")
  try {
    let held = 0
    let last = Date.now()
    client.on("message", (_topic, _payload, p) => (p.retain && held++, (last = Date.now())))
    await within(client.subscribeAsync("r/+/x", { qos: 0 }), 60_000, "counter: SUBACK")
    const deadline = Date.now() + 60_000
    while (held < RETAINED && Date.now() - last < 2000 && Date.now() < deadline) await sleep(50)
    return held
  } finally {
    client.end(true)
  }
}

// ---------------------------------------------------------------------------------
// 3. subjects

/** A raw NATS connection sending PING every 10 ms, answering the server's PINGs. */
async function natsPinger(port) {
  const sock = net.connect(port, "127.0.0.1")
  sock.setNoDelay(true)
  const times = []
  let rest = ""
  sock.on("data", (d) => {
    const lines = (rest + d).split("\r\n")
    rest = lines.pop()
    for (const line of lines) {
      if (line === "PONG") times.push(now())
      else if (line === "PING") sock.write("PONG\r\n")
    }
  })
  sock.on("error", () => {})
  sock.write(`CONNECT {"verbose":false,"pedantic":false,"protocol":1,"name":"bystander"}\r\nPING\r\n`)
  try {
    await until(() => times.length > 0, 10_000, "bystander: first PONG")
  } catch (e) {
    sock.destroy()
    throw e
  }
  const timer = setInterval(() => sock.write("PING\r\n"), 10)
  return {
    gap: (from, to, inside) => longestGap(times, from, to, inside),
    answeredAfter: (t) => until(() => times.at(-1) > t, 30_000, "bystander: PONG"),
    stop: () => (clearInterval(timer), sock.destroy())
  }
}

async function subjects(server) {
  const nc = await within(natsConnect({ servers: `127.0.0.1:${server.ports.nats}`, reconnect: false }), 10_000, "NATS connect")
  let pings
  try {
    pings = await natsPinger(server.ports.nats)
    await sleep(1000)
    const config = { name: "BIG", subjects: Array.from({ length: SUBJECTS }, (_, i) => `s.${i}.>`) }
    const body = new TextEncoder().encode(JSON.stringify(config))
    const sent = now()
    const msg = await nc.request("$JS.API.STREAM.CREATE.BIG", body, { timeout: 120_000 })
    const at = now()
    await pings.answeredAfter(at)
    const reply = JSON.parse(new TextDecoder().decode(msg.data))
    return {
      size: body.length,
      took: at - sent,
      answer: reply.error
        ? `error ${reply.error.code}/${reply.error.err_code}: ${reply.error.description}`
        : `created, ${reply.config?.subjects?.length} subjects`,
      ok: !reply.error,
      baseline: pings.gap(sent - 1000, sent, true),
      gap: pings.gap(sent, at)
    }
  } finally {
    pings?.stop()
    await nc.close()
  }
}

// ---------------------------------------------------------------------------------

const yes = (ok) => (ok ? "met" : "NOT met")
const runs = {
  dribble: async () =>
    table(
      `dribble: ${CLIENTS} clients, each a QoS 0 PUBLISH announcing ${ANNOUNCED.toLocaleString("en")} B, then 1 byte/ms for ${SECONDS} s; RSS in MiB`,
      [
        ["RSS before", (r) => mib(r.before)],
        ["RSS at the end", (r) => mib(r.after)],
        ["growth", (r) => mib(r.growth)],
        ["peak", (r) => mib(r.peak)],
        ["payload bytes sent", (r) => r.sent.toLocaleString("en")],
        ["connections closed by the server", (r) => r.cut],
        ["target: growth < 20 MB", (r) => (r.system === "Switchyard" ? yes(r.growth < 20e6) : "")]
      ],
      await against([switchyard, mosquitto], dribble)
    ),
  retained: async () =>
    table(
      `retained: ${RETAINED.toLocaleString("en")} retained messages, then one SUBSCRIBE with ${FILTERS.toLocaleString("en")} filters matching none; bystander PINGREQ every 10 ms`,
      [
        ["retained loaded in", (r) => ms(r.loaded)],
        ["retained held (counted after)", (r) => r.held.toLocaleString("en")],
        ["SUBSCRIBE size", (r) => `${r.size.toLocaleString("en")} B`],
        ["SUBACK after", (r) => ms(r.suback)],
        ["return codes", (r) => r.codes],
        ["longest PINGRESP gap (1 s before)", (r) => ms(r.baseline)],
        ["longest PINGRESP gap (during)", (r) => ms(r.gap)],
        ["targets: SUBACK < 1 s, gap < 100 ms", (r) => (r.system === "Switchyard" ? yes(r.suback < 1000 && r.gap < 100) : "")]
      ],
      await against([switchyard, mosquitto], retained)
    ),
  subjects: async () =>
    table(
      `subjects: $JS.API.STREAM.CREATE.BIG with ${SUBJECTS.toLocaleString("en")} subjects s.<i>.>; bystander PING every 10 ms`,
      [
        ["request size", (r) => `${r.size.toLocaleString("en")} B`],
        ["response after", (r) => ms(r.took)],
        ["response", (r) => r.answer],
        ["longest PONG gap (1 s before)", (r) => ms(r.baseline)],
        ["longest PONG gap (during)", (r) => ms(r.gap)],
        ["target: response < 1 s", (r) => (r.system === "Switchyard" ? yes(r.ok && r.took < 1000) : "")]
      ],
      await against([switchyard, natsServer], subjects)
    )
}

const which = process.argv[2] ?? "all"
if (which !== "all" && !(which in runs)) {
  console.error(`usage: node scripts/measure-hostile.mjs [${Object.keys(runs).join("|")}|all]`)
  process.exit(2)
}
console.log(`Switchyard ${entry} on Node ${process.version}; load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`)
for (const [name, run] of Object.entries(runs)) if (which === "all" || which === name) await run()
