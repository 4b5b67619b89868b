// Where Switchyard must stand next to its peers (the benchmark issue's table), checked
// against the ratios of a run: each target names scenarios, sizes, a peer, a metric and a
// bound on Switchyard ÷ peer. A cell that was not run is "not measured", never "met"; a
// lossy or failed cell has no ratio and so does not meet its target.
import type { Ratio } from "./report.js"

export interface Target {
  readonly what: string
  readonly scenarios: ReadonlyArray<string>
  /** Message sizes it applies to (0 = a scenario without sizes). */
  readonly sizes: ReadonlyArray<number>
  readonly peer: string
  readonly metric: string
  /** "min": the ratio must be at least `bound` (rates); "max": at most (latency, memory). */
  readonly kind: "min" | "max"
  readonly bound: number
}

const SMALL = [16, 128]
const LARGE = [1024, 16384]
const UP_TO_1K = [16, 128, 1024]
const ALL = [16, 128, 1024, 16384]

export const TARGETS: ReadonlyArray<Target> = [
  { what: "NATS 1→1 and fan-out, 16 B and 128 B: ≥ 0.5 × nats-server", scenarios: ["1to1", "fanout"], sizes: SMALL, peer: "nats-server", metric: "rate", kind: "min", bound: 0.5 },
  { what: "NATS 1→1 and fan-out, 1 KiB and 16 KiB: ≥ 0.8 × nats-server", scenarios: ["1to1", "fanout"], sizes: LARGE, peer: "nats-server", metric: "rate", kind: "min", bound: 0.8 },
  { what: "request-reply p50 no worse than nats-server", scenarios: ["reqrep"], sizes: ALL, peer: "nats-server", metric: "p50", kind: "max", bound: 1 },
  { what: "request-reply p99 no worse than nats-server", scenarios: ["reqrep"], sizes: ALL, peer: "nats-server", metric: "p99", kind: "max", bound: 1 },
  { what: "MQTT QoS 0 ≤ 1 KiB: ≥ 3 × mosquitto", scenarios: ["mqtt0", "mqtt0-fanout"], sizes: UP_TO_1K, peer: "mosquitto", metric: "rate", kind: "min", bound: 3 },
  { what: "MQTT QoS 0 ≤ 1 KiB: ≥ 10 × aedes", scenarios: ["mqtt0", "mqtt0-fanout"], sizes: UP_TO_1K, peer: "aedes", metric: "rate", kind: "min", bound: 10 },
  { what: "MQTT QoS 0 16 KiB: ≥ 1 × mosquitto", scenarios: ["mqtt0", "mqtt0-fanout"], sizes: [16384], peer: "mosquitto", metric: "rate", kind: "min", bound: 1 },
  // mqtt1-persist is the case where "acknowledged only once durable on disk" bites: a
  // persistent-session subscriber, so every message is fsynced before its PUBACK.
  { what: "MQTT QoS 1: ≥ 2 × nats-server's MQTT", scenarios: ["mqtt1", "mqtt1-fanout", "mqtt1-persist"], sizes: ALL, peer: "nats-server", metric: "rate", kind: "min", bound: 2 },
  { what: "MQTT QoS 1: ≥ 1.5 × mosquitto (in memory)", scenarios: ["mqtt1", "mqtt1-fanout", "mqtt1-persist"], sizes: ALL, peer: "mosquitto", metric: "rate", kind: "min", bound: 1.5 },
  { what: "MQTT QoS 2: ≥ 1.5 × mosquitto", scenarios: ["mqtt2", "mqtt2-fanout"], sizes: ALL, peer: "mosquitto", metric: "rate", kind: "min", bound: 1.5 },
  { what: "idle connections: ≤ 0.5 × nats-server's memory per connection", scenarios: ["idle"], sizes: [0], peer: "nats-server", metric: "kbPerConn", kind: "max", bound: 0.5 },
  { what: "MQTT connect rate: ≥ 2 × nats-server's", scenarios: ["mqtt-connect"], sizes: [0], peer: "nats-server", metric: "connRate", kind: "min", bound: 2 }
]

/**
 * What `npm run bench` runs by default: a scenario for every target, in a few minutes. The
 * MQTT 1→4 fan-outs the targets also cover, and the scenarios without a target, run with
 * `--scenario all` (or by name).
 */
export const DEFAULT_SCENARIOS: ReadonlyArray<string> = ["1to1", "fanout", "reqrep", "idle", "mqtt0", "mqtt1", "mqtt1-persist", "mqtt2", "mqtt-connect"]

export interface TargetCheck {
  readonly target: Target
  readonly scenario: string
  readonly size: number
  /** undefined: no ratio (a lossy or failed cell). */
  readonly ratio: number | undefined
  readonly met: boolean
  readonly note?: string
}

export const checkTargets = (rs: ReadonlyArray<Ratio>): Array<TargetCheck> => {
  const out: Array<TargetCheck> = []
  for (const t of TARGETS) {
    for (const scenario of t.scenarios) {
      for (const size of t.sizes) {
        const r = rs.find((x) => x.scenario === scenario && x.size === size && x.peer === t.peer && x.metric === t.metric)
        if (r === undefined) continue
        const met = r.ratio === undefined ? false : t.kind === "min" ? r.ratio >= t.bound : r.ratio <= t.bound
        out.push({ target: t, scenario, size, ratio: r.ratio, met, ...(r.note !== undefined && { note: r.note }) })
      }
    }
  }
  return out
}

const sizeText = (n: number): string => (n === 0 ? "" : n >= 1024 ? ` ${n / 1024} KiB` : ` ${n} B`)

/** The verdict, one line per measured cell under each target. */
export const renderTargets = (checks: ReadonlyArray<TargetCheck>): string => {
  if (checks.length === 0) return ""
  const lines = ["", `== Targets (the benchmark issue's table): ${checks.filter((c) => c.met).length} of ${checks.length} cells meet theirs`]
  for (const t of TARGETS) {
    const mine = checks.filter((c) => c.target === t)
    if (mine.length === 0) continue
    lines.push(`${mine.every((c) => c.met) ? "met   " : "NOT   "} ${t.what}`)
    for (const c of mine) {
      const r = c.ratio === undefined ? `n/a (${c.note ?? "no ratio"})` : `${c.ratio.toFixed(2)}×`
      lines.push(`         ${c.met ? "ok " : "-- "} ${c.scenario}${sizeText(c.size)}: ${r}`)
    }
  }
  return lines.join("\n")
}

/** The verdict grouped by target, for the Markdown summary (renderMarkdown). */
export const targetGroups = (checks: ReadonlyArray<TargetCheck>) =>
  TARGETS.map((t) => ({
    what: t.what,
    cells: checks
      .filter((c) => c.target === t)
      .map((c) => ({ label: `${c.scenario}${sizeText(c.size)}`, ratio: c.ratio, met: c.met }))
  })).filter((g) => g.cells.length > 0)
