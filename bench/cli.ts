// `npm run bench -- [--scenario a,b] [--size 16,1k] [--count N] [--systems x,y]
//                   [--iterations N] [--out DIR] [--name NAME] [--no-build] [--list]`
//
// Runs each scenario against Switchyard and every installed peer, each started fresh
// on free loopback ports and stopped by its own pid, alternating systems run by run
// (A, B, A, B, ...) so ratios come from the same conditions; prints a table of
// medians, writes <out>/<name>.json, <out>/<name>.svg and <out>/<name>.md (name: latest).
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { processStatusBytes } from "./loadgen/procfs.js"
import { freePort, installCleanup, runJob, type Server, startServer } from "./proc.js"
import { type Cell, type CellSummary, type Ratio, ratios, renderMarkdown, renderSvg, renderTable, sizeLabel, summarize } from "./report.js"
import { findScenario, type RunBound, type Scenario, SCENARIOS, SIZES } from "./scenarios.js"
import { type Availability, type Ports, SYSTEMS, type SystemDef } from "./systems.js"
import { checkTargets, DEFAULT_SCENARIOS, renderTargets, targetGroups } from "./targets.js"

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
  /** Measured publishing time of a timed run, and of the warm-up before a cell's first run (ms). */
  durationMs: number
  warmupMs: number
}

const usage = `usage: npm run bench -- [options]
  --scenario LIST   comma-separated: ${SCENARIOS.map((s) => s.id).join(", ")}, or all
                    (default, one for every target and the MQTT 5.0 cells: ${DEFAULT_SCENARIOS.join(", ")})
  --size LIST       message sizes, e.g. 16,128,1k,16k (default: ${SIZES.join(",")})
  --duration S      seconds each timed run publishes (flows, JetStream publish; default 1)
  --warmup S        seconds of unmeasured load on a server before a cell's first run (default 0.3)
  --count N         messages / requests / connections per run, for every scenario, or per
                    scenario as id=N,id=N (default: per scenario; k/m suffixes ok); for a
                    timed scenario it replaces the duration: exactly N messages
  --systems LIST    ${SYSTEMS.map((s) => s.name).join(", ")} (default: all installed)
  --iterations N    runs per system and cell, alternating systems (default: 3)
  --out DIR         where the result files go (default: bench/results)
  --name NAME       result files NAME.json / NAME.svg / NAME.md (default: latest)
  --pin MODE        auto: pin server and generator to different CPUs where the scenario
                    asks (request-reply latency); all: in every scenario; none (default: auto)
  --render FILE     redraw FILE.svg and FILE.md from an earlier FILE.json (no runs) and exit
  --no-build        do not run npm run build (tsc and the bundle) first
  --list            print scenarios and systems and exit`

const parseNum = (s: string): number => {
  const m = /^(\d+(?:\.\d+)?)\s*(k|kb|kib|m|mb|mib)?$/i.exec(s.trim())
  if (m === null) throw new Error(`not a number: ${s}`)
  const unit = (m[2] ?? "").toLowerCase()
  const mul = unit.startsWith("k") ? 1024 : unit.startsWith("m") ? 1024 * 1024 : 1
  return Math.round(Number(m[1]) * mul)
}

/** Seconds (fractions allowed), in milliseconds. */
const parseSeconds = (s: string): number => {
  const m = /^(\d+(?:\.\d+)?)\s*s?$/.exec(s.trim())
  if (m === null) throw new Error(`not a number of seconds: ${s}`)
  return Math.round(Number(m[1]) * 1000)
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
    scenarios: SCENARIOS.filter((s) => DEFAULT_SCENARIOS.includes(s.id)),
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
    pin: "auto",
    durationMs: 1000,
    warmupMs: 300
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
        if (v === "all") {
          o.scenarios = [...SCENARIOS]
          break
        }
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
      case "--duration":
        o.durationMs = parseSeconds(value())
        break
      case "--warmup":
        o.warmupMs = parseSeconds(value())
        break
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

/** `npm run build`'s two steps: tsc, then the bundle the switchyard command runs. */
const buildSwitchyard = (): Availability => {
  const tsc = path.join(ROOT, "node_modules/typescript/bin/tsc")
  for (const [what, args] of [["tsc -p tsconfig.build.json", [tsc, "-p", "tsconfig.build.json"]], ["node scripts/bundle.mjs", [path.join(ROOT, "scripts/bundle.mjs")]]] as const) {
    const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: "utf8" })
    if (r.status !== 0) return { ok: false, detail: `build failed (${what}):\n${(r.stdout + r.stderr).trim().slice(0, 2000)}` }
  }
  return { ok: true, detail: "built" }
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
    process.stdout.write("building Switchyard (npm run build: tsc and the bundle) ... ")
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
    readonly bound: RunBound
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
      const asked = opts.count.get(sc.id) ?? opts.count.get("*")
      const bound: RunBound =
        asked !== undefined || sc.timed !== true
          ? { count: asked ?? sc.defaultCount(size), durationMs: 0 }
          : { count: TIMED_CAP, durationMs: opts.durationMs }
      plan.push({ sc, size, bound, systems })
    }
  }
  for (const s of skipped) console.log(`skipped: ${s}`)
  const total = plan.reduce((a, p) => a + p.systems.length * opts.iterations, 0)
  console.log(`${plan.length} cells, ${total} runs, ${opts.iterations} iteration(s) each\n`)

  const cells: Array<Cell> = []
  const broken = new Map<string, string>()
  let n = 0
  // A system's server serves every cell (size) of a scenario, and is stopped when the next
  // scenario begins; each cell is warmed up on it before its first measured run.
  const instances = new Map<string, Instance>()
  const stopAll = async (): Promise<void> => {
    for (const inst of instances.values()) await inst.stop()
    instances.clear()
  }
  const runCell = async (step: Step): Promise<void> => {
    const warmed = new Set<string>()
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
        const r = await runOne(sys, step, it, { instances, warmed, broken, pin: pinFor(opts, step.sc), opts })
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
  // A system's server serves every cell (size) of a scenario and is stopped when the next
  // scenario begins; each cell is warmed up on it before its first measured run.
  try {
    let scenario: Scenario | undefined
    for (const step of plan) {
      if (step.sc !== scenario) await stopAll()
      scenario = step.sc
      await runCell(step)
    }
  } finally {
    await stopAll()
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

  const targets = checkTargets(rs, summaries, subject)
  console.log(renderTargets(targets))

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
      durationMs: opts.durationMs,
      warmupMs: opts.warmupMs,
      pin: opts.pin
    },
    skipped,
    summaries,
    ratios: rs,
    targets: targets.map((t) => ({ target: t.target.what, scenario: t.scenario, size: t.size, ratio: t.ratio, met: t.met, note: t.note })),
    cells
  }
  writeFileSync(path.join(opts.out, `${opts.name}.json`), JSON.stringify(json, null, 2) + "\n")
  writeViews(path.join(opts.out, opts.name), { when, machine: m, versions, iterations: opts.iterations, scenarios: opts.scenarios, summaries, ratios: rs })
  console.log(`\nwrote ${path.relative(ROOT, path.join(opts.out, `${opts.name}.json`))}, ${opts.name}.svg and ${opts.name}.md`)
}

/** What the chart and the Markdown summary are drawn from (a run just done, or a saved JSON). */
interface RunView {
  readonly when: string
  readonly machine: { readonly cpus: number; readonly cpuModel: string; readonly memGB?: number; readonly os?: string; readonly node: string }
  readonly versions: Record<string, string>
  readonly iterations: number
  readonly scenarios: ReadonlyArray<Scenario>
  readonly summaries: ReadonlyArray<CellSummary>
  readonly ratios: ReadonlyArray<Ratio>
}

/** `base`.svg (the chart) and `base`.md (the table and the verdict). */
const writeViews = (base: string, v: RunView): void => {
  const subject = SYSTEMS.find((s) => s.subject)!.name
  const m = v.machine
  const at = `${v.when.slice(0, 16).replace("T", " ")} UTC`
  // the versions of the systems that were measured
  const ran = Object.entries(v.versions).filter(([k]) => v.summaries.some((x) => x.system === k))
  const caption = `${at} · ${m.cpus} × ${m.cpuModel} · Node ${m.node} · ${ran
    .map(([k, ver]) => `${k} ${ver.split(" ")[0]}`)
    .join(" · ")} · medians of ${v.iterations}, whiskers min–max`
  const header = `Measured ${at} on ${m.cpus} × ${m.cpuModel}${m.memGB !== undefined ? `, ${m.memGB} GB` : ""}${
    m.os !== undefined ? `, ${m.os}` : ""
  }, Node ${m.node}: ${ran.map(([k, ver]) => `${k} ${ver}`).join(", ")}. Medians of ${v.iterations} runs per system, the systems alternating within each cell.`
  writeFileSync(base + ".svg", renderSvg(v.scenarios, v.summaries, SYSTEMS, subject, caption) + "\n")
  writeFileSync(base + ".md", renderMarkdown(v.scenarios, v.summaries, v.ratios, targetGroups(checkTargets(v.ratios, v.summaries, subject)), subject, header))
}

/** `--render results.json`: the chart and the summary again from the stored results, e.g. after a renderer change. */
const rerender = (file: string): void => {
  const j = JSON.parse(readFileSync(file, "utf8")) as Omit<RunView, "iterations" | "scenarios"> & {
    options: { scenarios: Array<string>; iterations: number }
  }
  const scenarios = j.options.scenarios.map(findScenario).filter((s): s is Scenario => s !== undefined)
  const base = file.replace(/\.json$/, "")
  writeViews(base, { ...j, iterations: j.options.iterations, scenarios })
  console.log(`wrote ${path.relative(ROOT, base + ".svg")} and ${path.relative(ROOT, base + ".md")}`)
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

/** Runs of timed scenarios stop at the clock; this cap only guards against a runaway. */
const TIMED_CAP = 100_000_000

/** A system's server for the runs of one cell: started on fresh ports, stopped by its own pid. */
interface Instance {
  readonly server: Server
  /** A cluster run's second server. */
  readonly peer?: Server
  readonly ports: Ports
  readonly stop: () => Promise<void>
}

const startInstance = async (
  sys: SystemDef,
  step: { readonly sc: Scenario },
  pin: { readonly server: number; readonly gen: number } | undefined
): Promise<Instance> => {
  const cluster = step.sc.protocol === "cluster"
  const ports: Ports = {
    nats: await freePort(),
    mqtt: await freePort(),
    ...(cluster ? { nats2: await freePort(), route: await freePort(), route2: await freePort() } : {})
  }
  const workDir = mkdtempSync(path.join(os.tmpdir(), `bench-${sys.name}-`))
  // taskset execs the server, so the pid we stop is the server's own
  const pinned = (c: { readonly cmd: string; readonly args: ReadonlyArray<string> }) =>
    pin === undefined ? c : { cmd: "taskset", args: ["-c", String(pin.server), c.cmd, ...c.args] }
  let server: Server | undefined
  try {
    const base = sys.command(ROOT, ports, workDir, step.sc.protocol)
    const first = pinned(base)
    server = await startServer(first.cmd, first.args, sys.ready(ports, [step.sc.protocol]), { cwd: ROOT, env: base.env, readyLine: sys.readyLine })
    let peer: Server | undefined
    if (cluster) {
      if (sys.clusterPeer === undefined) throw new Error(`${sys.name} cannot run a cluster`)
      const peerDir = path.join(workDir, "peer")
      mkdirSync(peerDir, { recursive: true })
      const p = sys.clusterPeer(ROOT, ports, peerDir)
      const second = pinned(p)
      peer = await startServer(second.cmd, second.args, sys.ready({ ...ports, nats: ports.nats2! }, [step.sc.protocol]), { cwd: ROOT, env: p.env, readyLine: sys.readyLine })
    }
    const s = server
    return {
      server: s,
      ...(peer === undefined ? {} : { peer }),
      ports,
      stop: async () => {
        await peer?.stop()
        await s.stop()
        rmSync(workDir, { recursive: true, force: true })
      }
    }
  } catch (e) {
    await server?.stop()
    rmSync(workDir, { recursive: true, force: true })
    throw e
  }
}

interface RunStep {
  readonly sc: Scenario
  readonly size: number
  readonly bound: RunBound
}

/** What the runs of a benchmark share: the servers started, which are warm, which systems failed. */
interface RunContext {
  readonly instances: Map<string, Instance>
  readonly warmed: Set<string>
  readonly broken: Map<string, string>
  readonly pin: { readonly server: number; readonly gen: number } | undefined
  readonly opts: Options
}

/**
 * One run: the system's server for this scenario (started at its first run, or for each
 * run where the scenario needs a fresh one; warmed up with flows at each cell's first
 * run), then one load-generator process. A scenario with a `baseline` also runs the
 * baseline's job on a single server of the same system (an instance of its own), before
 * this run on even iterations and after it on odd ones, and reports both rates and their
 * ratio as this run's.
 */
const runOne = async (sys: SystemDef, step: RunStep, iteration: number, ctx: RunContext): Promise<Cell["runs"][number]> => {
  const base = step.sc.baseline === undefined ? undefined : findScenario(step.sc.baseline)
  if (base === undefined) return runOnInstance(sys, step, sys.name, ctx)
  const baseStep = { ...step, sc: base }
  const baseKey = `${sys.name} (${base.id})`
  // Both servers started and warm before either is measured, so that neither run follows a
  // server's start (a Node server spends some CPU on its start-up garbage for seconds).
  for (const [st, key] of [[baseStep, baseKey], [step, sys.name]] as const) {
    const ready = await prepare(sys, st, key, ctx)
    if (!("server" in ready)) return ready
  }
  const single = (): Promise<Cell["runs"][number]> => runOnInstance(sys, baseStep, baseKey, ctx)
  const mine = (): Promise<Cell["runs"][number]> => runOnInstance(sys, step, sys.name, ctx)
  let s: Cell["runs"][number]
  let c: Cell["runs"][number]
  if (iteration % 2 === 0) {
    s = await single()
    c = await mine()
  } else {
    c = await mine()
    s = await single()
  }
  const sRate = s.metrics.rate
  const cRate = c.metrics.rate
  const merged = {
    ...c,
    loss: c.loss + s.loss,
    excess: c.excess + s.excess,
    errors: [...c.errors, ...s.errors.map((e) => `baseline ${base.id}: ${e}`)]
  }
  if (!s.ok) return { ...merged, ok: false, error: `baseline ${base.id}: ${s.error ?? s.errors.join("; ")}` }
  if (!c.ok || sRate === undefined || cRate === undefined || sRate === 0) return merged
  return { ...merged, metrics: { ...c.metrics, singleRate: sRate, vsSingle: cRate / sRate } }
}

/**
 * The system's instance kept under `key` for `step.sc`: started if it is not (or the
 * scenario wants a fresh one each run), warmed up at the cell's first run; or the failed run.
 */
const prepare = async (sys: SystemDef, step: RunStep, key: string, ctx: RunContext): Promise<Instance | Cell["runs"][number]> => {
  const { instances, warmed, broken, pin, opts } = ctx
  const failed = (error: string): Cell["runs"][number] => ({ ok: false, error, metrics: {}, loss: 0, excess: 0, errors: [] })
  let inst = instances.get(key)
  if (inst === undefined || inst.server.exited() || inst.peer?.exited() === true || step.sc.freshServer === true) {
    if (inst !== undefined) await inst.stop()
    instances.delete(key)
    try {
      inst = await startInstance(sys, step, pin)
    } catch (e) {
      const msg = `could not start: ${e instanceof Error ? e.message : String(e)}`
      broken.set(sys.name, msg)
      return failed(msg)
    }
    instances.set(key, inst)
    warmed.delete(key)
  }
  if (!warmed.has(key)) {
    warmed.add(key)
    // Flows run unmeasured first on the same server: every system is measured warm (a
    // JIT-compiled server would otherwise pay its warm-up in the run).
    const kind = step.sc.job(inst.ports, inst.server.pid, step.size, step.bound, inst.peer?.pid).kind
    if (kind === "nats-flow" || kind === "mqtt-flow") {
      const warmBound: RunBound =
        step.bound.durationMs > 0
          ? { count: step.bound.count, durationMs: opts.warmupMs }
          : { count: Math.max(1000, Math.floor(step.bound.count / 5)), durationMs: 0 }
      const warm = await runJob(step.sc.job(inst.ports, inst.server.pid, step.size, warmBound, inst.peer?.pid), 180_000, pin?.gen)
      if (!warm.ok) return { ...warm, error: `warm-up failed: ${warm.error ?? warm.errors.join("; ")}` }
    }
  }
  return inst
}

/** One run of `step.sc` on the system's instance kept under `key` (see runOne). */
const runOnInstance = async (sys: SystemDef, step: RunStep, key: string, ctx: RunContext): Promise<Cell["runs"][number]> => {
  const inst = await prepare(sys, step, key, ctx)
  if (!("server" in inst)) return inst
  const pin = ctx.pin
  const job = step.sc.job(inst.ports, inst.server.pid, step.size, step.bound, inst.peer?.pid)
  const ran = await runJob(job, 180_000, pin?.gen)
  // The footprint scenario starts a fresh server for every run: how long it took to be ready belongs to the run.
  const r = job.kind === "idle-footprint" && ran.ok ? { ...ran, metrics: { ...ran.metrics, readyMs: inst.server.readyMs } } : ran
  const peak = processStatusBytes(inst.server.pid, "VmHWM")
  const dead = [inst.server, inst.peer].find((s) => s?.exited() === true)
  if (dead !== undefined) {
    const tail = dead.logTail().trim().split("\n").slice(-3).join(" | ")
    return { ...r, ok: false, error: `server exited during the run: ${tail}` }
  }
  return peak === undefined ? r : { ...r, serverPeakRssMB: peak / 1048576 }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e)
  process.exit(1)
})

