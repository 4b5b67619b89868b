// The server's memory with a large MQTT backlog (issue #15, item 8): a persistent
// session subscribes at QoS 1 and goes away, a publisher queues N messages of SIZE
// bytes for it (default 2,000 x 500 KB = 977 MiB), the RSS is read then, 3 s and 30 s
// later, and the session comes back and drains the backlog while the peak RSS is
// watched. Run after `npm run build`:
//
//   node scripts/measure-backlog.mjs            # N=2000 SIZE=512000
//   ENTRY=other/bin/switchyard.js node scripts/measure-backlog.mjs
//
// Not a test: memory depends on the machine and on when the garbage collector runs;
// report the figures of several runs.
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import mqtt from "mqtt"

const entry = process.env.ENTRY ?? fileURLToPath(new URL("../bin/switchyard.js", import.meta.url))
const N = Number(process.env.N ?? 2000)
const SIZE = Number(process.env.SIZE ?? 500 * 1024)
const dir = mkdtempSync(join(tmpdir(), "switchyard-backlog-"))
const [port, mport, http] = [24222, 21883, 28222]
writeFileSync(join(dir, "s.conf"), `port: ${port}\nhttp: ${http}\njetstream { store_dir: "${dir}/data" }\nmqtt { port: ${mport} }\n`)
const srv = spawn(process.execPath, [entry, "-c", join(dir, "s.conf")], { stdio: ["ignore", "pipe", "pipe"] })
let log = ""
srv.stdout.on("data", (d) => (log += d))
srv.stderr.on("data", (d) => (log += d))
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${srv.pid}/status`, "utf8"))[1]) / 1024
const mib = (n) => `${n.toFixed(1)} MiB`
try {
  for (let i = 0; !log.includes("Server is ready"); i++) {
    if (srv.exitCode !== null || i > 600) throw new Error(`server did not start:\n${log}`)
    await sleep(50)
  }
  const url = `mqtt://127.0.0.1:${mport}`
  const sub = await mqtt.connectAsync(url, { clientId: "away", clean: false, reconnectPeriod: 0 })
  await sub.subscribeAsync("backlog/t", { qos: 1 })
  await sub.endAsync()
  console.log(`session away, nothing queued: RSS ${mib(rss())}`)
  const pub = await mqtt.connectAsync(url, { clientId: "pub", reconnectPeriod: 0 })
  const body = Buffer.alloc(SIZE, 7)
  for (let i = 0; i < N; i++) await pub.publishAsync("backlog/t", body, { qos: 1 })
  await pub.endAsync()
  await sleep(500)
  console.log(`${N} x ${SIZE} B (${mib((N * SIZE) / 2 ** 20)}) queued: RSS ${mib(rss())} (0.5 s after the last publish)`)
  await sleep(2500)
  console.log(`3 s later: RSS ${mib(rss())}`)
  await sleep(27_000)
  console.log(`30 s later: RSS ${mib(rss())}`)
  let got = 0
  let peak = 0
  let closed = false
  const back = mqtt.connect(url, { clientId: "away", clean: false, reconnectPeriod: 0 })
  back.on("message", () => got++)
  back.on("close", () => (closed = true))
  const t0 = Date.now()
  while (got < N && !closed && Date.now() - t0 < 300_000) {
    await sleep(100)
    peak = Math.max(peak, rss())
  }
  console.log(`resumed: ${got}/${N} messages in ${((Date.now() - t0) / 1000).toFixed(1)} s, peak RSS ${mib(peak)}`)
  back.end(true)
} finally {
  srv.kill("SIGTERM")
  await new Promise((r) => (srv.exitCode !== null ? r() : srv.once("exit", r)))
  rmSync(dir, { recursive: true, force: true })
}
