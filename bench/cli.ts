// `npm run bench -- [--scenario a,b] [--size 16,1k] [--count N] [--systems x,y]
//                   [--iterations N] [--out DIR] [--name NAME] [--no-build] [--list]`
//
// Runs each scenario against Switchyard and every installed peer, each started fresh
// on free loopback ports and stopped by its own pid, alternating systems run by run
// (A, B, A, B, ...) so ratios come from the same conditions; prints a table of
// medians, writes <out>/<name>.json and <out>/<name>.svg (name: latest).
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { processStatusBytes } from "./loadgen/procfs.js"
import { freePort, installCleanup, runJob, startServer } from "./proc.js"
import { type Cell, type CellSummary, ratios, renderSvg, renderTable, sizeLabel, summarize } from "./report.js"
import { findScenario, type Scenario, SCENARIOS, SIZES } from "./scenarios.js"
import { type Availability, SYSTEMS, type SystemDef } from "./systems.js"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

interface Options {
  scenarios: Array<Scenario>
  sizes: Array<number>
  /** Per scenario id; "*" for all. */
  count: Map<string, number>
  systems: Array<string>
  /** --systems was given (an opt-in system named there is reported even when unavailable). */
  systemsGiven: boolean
  iterations: number
  out: string
  /** Base name of the result files. */
  name: string
  build: boolean
  list: boolean
  /** Redraw the chart of an earlier result file instead of running. */
  render: string | undefined
  pin: "auto" | "all" | "none"
}

const usage = `usage: npm run bench -- [options]
  --scenario LIST   comma-separated: ${SCENARIOS.map((s) => s.id).join(", ")} (default: all)
  --size LIST       message sizes, e.g. 16,128,1k,16k (default: ${SIZES.join(",")})
  --count N         messages / requests / connections per run, for every scenario, or per
                    scenario as id=N,id=N (default: per scenario; k/m suffixes ok)
  --systems LIST    ${SYSTEMS.map((s) => s.name).join(", ")} (default: all installed)
  --iterations N    runs per system and cell, alternating systems (default: 3)
  --out DIR         where the result files go (default: bench/results)
  --name NAME       result files NAME.json / NAME.svg (default: latest)
  --pin MODE        auto: pin server and generator to different CPUs where the scenario
                    asks (request-reply latency); all: in every scenario; none (default: auto)
  --render FILE     redraw FILE.svg from an earlier FILE.json (no runs) and exit
  --no-build        do not run tsc -p tsconfig.build.json first
  --list            print scenarios and systems and exit`

const parseNum = (s: string): number => {
  const m = /^(\d+(?:\.\d+)?)\s*(k|kb|kib|m|mb|mib)?$/i.exec(s.trim())
  if (m === null) throw new Error(`not a number: ${s}`)
  const unit = (m[2] ?? "").toLowerCase()
  const mul = unit.startsWith("k") ? 1024 : unit.startsWith("m") ? 1024 * 1024 : 1
  return Math.round(Number(m[1]) * mul)
}

/** Counts use decimal suffixes (10k = 10,000), sizes binary (1k = 1024). */
const parseCount = (s: string): number => {
  const m = /^(\d+(?:\.\d+)?)\s*(k|m)?$/i.exec(s.trim())
  if (m === null) throw new Error(`not a count: ${s}`)
  const unit = (m[2] ?? "").toLowerCase()
  return Math.round(Number(m[1]) * (unit === "k" ? 1e3 : unit === "m" ? 1e6 : 1))
}

const parseArgs = (argv: ReadonlyArray<string>): Options => {
  const o: Options = {
    scenarios: [...SCENARIOS],
    sizes: [...SIZES],
    count: new Map(),
    systems: SYSTEMS.map((s) => s.name),
    systemsGiven: false,
    iterations: 3,
    out: path.join(ROOT, "bench/results"),
    name: "latest",
    build: true,
    list: false,
    render: undefined,
    pin: "auto"
  }
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i]!
    const [flag, inline] = raw.includes("=") ? [raw.slice(0, raw.indexOf("=")), raw.slice(raw.indexOf("=") + 1)] : [raw, undefined]
    const value = (): string => {
      const v = inline ?? argv[++i]
      if (v === undefined) throw new Error(`${flag} needs a value`)
      return v
    }
    switch (flag) {
      case "--scenario":
      case "--scenarios": {
        const v = value()
        if (v === "all") break
        o.scenarios = v.split(",").map((n) => {
          const s = findScenario(n)
          if (s === undefined) throw new Error(`unknown scenario ${n}; known: ${SCENARIOS.map((x) => x.id).join(", ")}`)
          return s
        })
        break
      }
      case "--size":
      case "--sizes":
        o.sizes = value().split(",").map(parseNum)
        break
      case "--count":
        // N for every scenario, or id=N,id=N for some
        for (const part of value().split(",")) {
          const eq = part.indexOf("=")
          if (eq < 0) {
            o.count.set("*", parseCount(part))
          } else {
            const sc = findScenario(part.slice(0, eq))
            if (sc === undefined) throw new Error(`unknown scenario in --count: ${part}`)
            o.count.set(sc.id, parseCount(part.slice(eq + 1)))
          }
        }
        break
      case "--systems":
      case "--system":
        o.systemsGiven = true
        o.systems = value().split(",").map((n) => {
          const s = SYSTEMS.find((x) => x.name === n.trim())
          if (s === undefined) throw new Error(`unknown system ${n}; known: ${SYSTEMS.map((x) => x.name).join(", ")}`)
          return s.name
        })
        break
      case "--iterations":
        o.iterations = Math.max(1, parseCount(value()))
        break
      case "--out":
        o.out = path.resolve(value())
        break
      case "--name": {
        const v = value()
        if (!/^[\w.-]+$/.test(v)) throw new Error("--name takes a plain file name (letters, digits, . _ -)")
        o.name = v
        break
      }
      case "--pin": {
        const v = value()
        if (v !== "auto" && v !== "all" && v !== "none") throw new Error("--pin takes auto, all or none")
        o.pin = v
        break
      }
      case "--no-build":
        o.build = false
        break
      case "--render":
        o.render = path.resolve(value())
        break
      case "--list":
        o.list = true
        break
      case "-h":
      case "--help":
        console.log(usage)
        process.exit(0)
        break
      default:
        throw new Error(`unknown option ${raw}\n${usage}`)
    }
  }
  return o
}

const buildSwitchyard = (): Availability => {
  const tsc = path.join(ROOT, "node_modules/typescript/bin/tsc")
  const r = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: ROOT, encoding: "utf8" })
  if (r.status === 0) return { ok: true, detail: "built" }
  return { ok: false, detail: `build failed (tsc -p tsconfig.build.json):\n${(r.stdout + r.stderr).trim().slice(0, 2000)}` }
}

const machine = () => ({
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model ?? "?",
  memGB: Math.round(os.totalmem() / 1e9),
  os: `${os.type()} ${os.release()}`,
  node: process.version,
  loadavg: os.loadavg().map((x) => Number(x.toFixed(2)))
})

const main = async (): Promise<void> => {
  installCleanup()
  const opts = parseArgs(process.argv.slice(2))
  if (opts.render !== undefined) return rerender(opts.render)
  const chosen = SYSTEMS.filter(
    (s) => opts.systems.includes(s.name) && (s.optIn !== true || opts.systemsGiven || s.available(ROOT).ok)
  )

  if (opts.build && !opts.list && chosen.some((s) => s.subject)) {
    process.stdout.write("building Switchyard (tsc -p tsconfig.build.json) ... ")
    const b = buildSwitchyard()
    console.log(b.ok ? "ok" : "FAILED")
    if (!b.ok) console.log(b.detail)
  }
  const avail = new Map<string, Availability>()
  for (const s of chosen) avail.set(s.name, s.available(ROOT))

  if (opts.list) {
    console.log("scenarios:")
    for (const s of SCENARIOS) {
      console.log(`  ${s.id.padEnd(13)} ${s.title} [${s.protocol}] (default count ${s.defaultCount(16)} ${s.countUnit})`)
    }
    console.log("systems:")
    for (const s of SYSTEMS) {
      const a = s.available(ROOT)
      if (s.optIn === true && !a.ok) continue
      console.log(`  ${s.name.padEnd(12)} ${s.protocols.join("+").padEnd(38)} ${a.ok ? a.detail : `unavailable: ${a.detail}`}`)
    }
    return
  }

  const m = machine()
  console.log(`machine: ${m.cpus} × ${m.cpuModel}, ${m.memGB} GB, ${m.os}, Node ${m.node}, load ${m.loadavg.join(" ")}`)
  for (const s of chosen) {
    const a = avail.get(s.name)!
    console.log(`  ${s.name.padEnd(12)} ${a.ok ? a.detail : `unavailable: ${a.detail}`}`)
  }

  // the plan: cells in order, systems alternating inside each cell
  interface Step {
    readonly sc: Scenario
    readonly size: number
    readonly count: number
    readonly systems: ReadonlyArray<SystemDef>
  }
  const plan: Array<Step> = []
  const skipped: Array<string> = []
  for (const sc of opts.scenarios) {
    const lacks = (s: SystemDef): string | undefined => s.lacks?.(sc.protocol, avail.get(s.name)!.detail.split(" ")[0]!)
    const systems = chosen.filter(
      (s) => s.protocols.includes(sc.protocol) && avail.get(s.name)!.ok && lacks(s) === undefined
    )
    const missing = chosen.filter((s) => s.protocols.includes(sc.protocol) && !avail.get(s.name)!.ok)
    if (missing.length > 0) skipped.push(`${sc.id}: ${missing.map((s) => s.name).join(", ")} unavailable`)
    for (const s of chosen) {
      const why = s.protocols.includes(sc.protocol) && avail.get(s.name)!.ok ? lacks(s) : undefined
      if (why !== undefined) skipped.push(`${sc.id}: ${s.name} skipped: ${why}`)
    }
    if (systems.length === 0) {
      skipped.push(`${sc.id}: no available system speaks ${sc.protocol}`)
      continue
    }
    for (const size of sc.sized ? opts.sizes : [0]) {
      plan.push({ sc, size, count: opts.count.get(sc.id) ?? opts.count.get("*") ?? sc.defaultCount(size), systems })
    }
  }
  for (const s of skipped) console.log(`skipped: ${s}`)
  const total = plan.reduce((a, p) => a + p.systems.length * opts.iterations, 0)
  console.log(`${plan.length} cells, ${total} runs, ${opts.iterations} iteration(s) each\n`)

  const cells: Array<Cell> = []
  const broken = new Map<string, string>()
  let n = 0
  for (const step of plan) {
    const byName = new Map<string, Cell>()
    for (const sys of step.systems) {
      const c: Cell = { scenario: step.sc.id, size: step.size, system: sys.name, runs: [] }
      byName.set(sys.name, c)
      cells.push(c)
    }
    for (let it = 0; it < opts.iterations; it++) {
      for (const sys of step.systems) {
        n++
        const cell = byName.get(sys.name)!
        const label = `[${n}/${total}] ${step.sc.id} ${sizeLabel(step.size)} ${sys.name} #${it + 1}`
        const why = broken.get(sys.name)
        if (why !== undefined) {
          cell.runs.push({ ok: false, error: why, metrics: {}, loss: 0, excess: 0, errors: [] })
          console.log(`${label}: skipped (${why.split("\n")[0]})`)
          continue
        }
        const r = await runOne(sys, step, broken, pinFor(opts, step.sc))
        cell.runs.push(r)
        const head = step.sc.metrics[0]!
        const v = r.metrics[head.key]
        console.log(
          `${label}: ${
            r.ok ? `${v === undefined ? "-" : formatHead(head.format, v)} ${head.label}` : `FAILED: ${r.error?.split("\n")[0]}`
          }${r.loss > 0 ? `, LOST ${r.loss}` : ""}${r.excess > 0 ? `, ${r.excess} duplicates` : ""}${
            r.errors.length > 0 ? ` [${r.errors[0]}]` : ""
          }`
        )
      }
    }
  }

  const subject = SYSTEMS.find((s) => s.subject)!.name
  const summaries = cells.map(summarize)
  const rs = ratios(opts.scenarios, summaries, subject)
  console.log(
    renderTable(opts.scenarios, summaries, rs, subject, (sc) => {
      const pin = pinFor(opts, sc)
      return pin === undefined ? undefined : `(pinned: server on CPU ${pin.server}, load generator on CPU ${pin.gen})`
    })
  )

  mkdirSync(opts.out, { recursive: true })
  const versions: Record<string, string> = {}
  for (const s of chosen) versions[s.name] = avail.get(s.name)!.detail.split("\n")[0]!
  const when = new Date().toISOString()
  const json = {
    when,
    machine: m,
    versions,
    options: {
      scenarios: opts.scenarios.map((s) => s.id),
      sizes: opts.sizes,
      count: opts.count.size === 0 ? "default" : Object.fromEntries(opts.count),
      systems: chosen.map((s) => s.name),
      iterations: opts.iterations,
      pin: opts.pin
    },
    skipped,
    summaries,
    ratios: rs,
    cells
  }
  writeFileSync(path.join(opts.out, `${opts.name}.json`), JSON.stringify(json, null, 2) + "\n")
  const caption = chartCaption(when, m, versions, summaries, opts.iterations)
  writeFileSync(path.join(opts.out, `${opts.name}.svg`), renderSvg(opts.scenarios, summaries, SYSTEMS, subject, caption) + "\n")
  console.log(`\nwrote ${path.relative(ROOT, path.join(opts.out, `${opts.name}.json`))} and ${opts.name}.svg`)
}

const chartCaption = (
  when: string,
  m: { readonly cpus: number; readonly cpuModel: string; readonly node: string },
  versions: Record<string, string>,
  summaries: ReadonlyArray<CellSummary>,
  iterations: number
): string =>
  `${when.slice(0, 16).replace("T", " ")} UTC · ${m.cpus} × ${m.cpuModel} · Node ${m.node} · ${Object.entries(versions)
    .filter(([k]) => summaries.some((x) => x.system === k))
    .map(([k, v]) => `${k} ${v.split(" ")[0]}`)
    .join(" · ")} · medians of ${iterations}, whiskers min–max`

/** `--render results.json`: the chart again from the stored summaries, e.g. after a renderer change. */
const rerender = (file: string): void => {
  const j = JSON.parse(readFileSync(file, "utf8")) as {
    when: string
    machine: { cpus: number; cpuModel: string; node: string }
    versions: Record<string, string>
    options: { scenarios: Array<string>; iterations: number }
    summaries: Array<CellSummary>
  }
  const scs = j.options.scenarios.map(findScenario).filter((s): s is Scenario => s !== undefined)
  const subject = SYSTEMS.find((s) => s.subject)!.name
  const caption = chartCaption(j.when, j.machine, j.versions, j.summaries, j.options.iterations)
  const out = file.replace(/\.json$/, "") + ".svg"
  writeFileSync(out, renderSvg(scs, j.summaries, SYSTEMS, subject, caption) + "\n")
  console.log(`wrote ${path.relative(ROOT, out)}`)
}

const formatHead = (format: Scenario["metrics"][number]["format"], v: number): string =>
  format === "rate" ? (v >= 1e6 ? `${(v / 1e6).toFixed(2)}M` : `${(v / 1e3).toFixed(1)}k`) : v.toFixed(1)

let tasksetOk: boolean | undefined

/** CPUs for (server, generator) in this scenario, or undefined to leave placement to the OS. */
const pinFor = (opts: Options, sc: Scenario): { readonly server: number; readonly gen: number } | undefined => {
  if (opts.pin === "none" || (opts.pin === "auto" && sc.pin !== true)) return undefined
  if (os.cpus().length < 2) return undefined
  if (tasksetOk === undefined) tasksetOk = spawnSync("taskset", ["-c", "0", "true"]).status === 0
  if (!tasksetOk) return undefined
  return { server: 1, gen: 0 }
}

/** One run: fresh server on fresh ports, one load-generator process, server stopped by pid. */
const runOne = async (
  sys: SystemDef,
  step: { readonly sc: Scenario; readonly size: number; readonly count: number },
  broken: Map<string, string>,
  pin: { readonly server: number; readonly gen: number } | undefined
): Promise<Cell["runs"][number]> => {
  const ports = { nats: await freePort(), mqtt: await freePort() }
  const workDir = mkdtempSync(path.join(os.tmpdir(), `bench-${sys.name}-`))
  const base = sys.command(ROOT, ports, workDir, step.sc.protocol)
  // taskset execs the server, so the pid we stop is the server's own
  const { cmd, args } =
    pin === undefined ? base : { cmd: "taskset", args: ["-c", String(pin.server), base.cmd, ...base.args] }
  let server
  try {
    server = await startServer(cmd, args, sys.ready(ports, [step.sc.protocol]), { cwd: ROOT, env: base.env })
  } catch (e) {
    const msg = `could not start: ${e instanceof Error ? e.message : String(e)}`
    broken.set(sys.name, msg)
    rmSync(workDir, { recursive: true, force: true })
    return { ok: false, error: msg, metrics: {}, loss: 0, excess: 0, errors: [] }
  }
  try {
    const job = step.sc.job(ports, server.pid, step.size, step.count)
    // Flows first run a fifth of their count unmeasured on the same server: every system
    // is measured warm (a JIT-compiled server would otherwise pay its warm-up in the run).
    if (job.kind === "nats-flow" || job.kind === "mqtt-flow") {
      const warm = await runJob(step.sc.job(ports, server.pid, step.size, Math.max(1000, Math.floor(step.count / 5))), 180_000, pin?.gen)
      if (!warm.ok) return { ...warm, error: `warm-up failed: ${warm.error ?? warm.errors.join("; ")}` }
    }
    const r = await runJob(job, 180_000, pin?.gen)
    const peak = processStatusBytes(server.pid, "VmHWM")
    if (server.exited()) {
      const tail = server.logTail().trim().split("\n").slice(-3).join(" | ")
      return { ...r, ok: false, error: `server exited during the run: ${tail}` }
    }
    return peak === undefined ? r : { ...r, serverPeakRssMB: peak / 1048576 }
  } finally {
    await server.stop()
    rmSync(workDir, { recursive: true, force: true })
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e)
  process.exit(1)
})

