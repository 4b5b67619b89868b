// The scenario table: what each scenario runs, which metrics it reports, and which
// of them are compared between systems. A system runs a scenario when it speaks the
// scenario's protocol (see systems.ts). MQTT and JetStream scenarios go here as
// those features land: add a Job kind in loadgen/jobs.ts, its runner, and a row.
import type { Job } from "./loadgen/jobs.js"

export type Protocol = "nats" | "mqtt" | "jetstream"

export interface Metric {
  readonly key: string
  readonly label: string
  /** How to print it: "rate" (1.23M), "us" (µs), "pct", "num", "mb" (MB/s), "kb". */
  readonly format: "rate" | "us" | "pct" | "num" | "mb" | "kb"
  readonly better?: "higher" | "lower"
  /** Compare Switchyard with each peer on this metric (ratio column). */
  readonly compare?: boolean
  /** Draw a chart panel for this metric. */
  readonly chart?: boolean
}

export interface Scenario {
  readonly id: string
  readonly title: string
  readonly protocol: Protocol
  /** Whether the message size matters (otherwise it runs once, size 0). */
  readonly sized: boolean
  /** The headline metric is the first one. */
  readonly metrics: ReadonlyArray<Metric>
  readonly defaultCount: (size: number) => number
  /** Unit of `count` for the docs and the progress line. */
  readonly countUnit: string
  readonly job: (port: number, serverPid: number, size: number, count: number) => Job
  /**
   * Pin the server and the load generator to different CPUs by default (`--pin auto`).
   * For round-trip latency: on these VMs a wake-up across cores costs ~70 µs more than
   * one on the same core, and where the scheduler happens to put the two processes
   * otherwise decides the result more than the server does.
   */
  readonly pin?: boolean
  /** What loss counts (default "messages"). */
  readonly lossUnit?: string
}

export const SIZES = [16, 128, 1024, 16384] as const

const cpu: ReadonlyArray<Metric> = [
  { key: "srvCpuPct", label: "srv CPU", format: "pct" },
  { key: "srvUsPerMsg", label: "srv µs/msg", format: "us" },
  { key: "genCpuPct", label: "gen CPU", format: "pct" }
]

const flowMetrics: ReadonlyArray<Metric> = [
  { key: "rate", label: "msgs/s", format: "rate", better: "higher", compare: true, chart: true },
  { key: "mbps", label: "MB/s", format: "mb" },
  ...cpu
]

const flowCount = (size: number): number =>
  size <= 128 ? 2_000_000 : size <= 1024 ? 500_000 : size <= 4096 ? 150_000 : 50_000

const flow =
  (pubs: number, subs: number, queue: boolean) =>
  (port: number, serverPid: number, size: number, count: number): Job => ({
    kind: "nats-flow",
    port,
    serverPid,
    pubs,
    subs,
    queue,
    size,
    count
  })

export const SCENARIOS: ReadonlyArray<Scenario> = [
  {
    id: "pub",
    title: "NATS publish only (no subscribers)",
    protocol: "nats",
    sized: true,
    metrics: flowMetrics,
    defaultCount: flowCount,
    countUnit: "messages",
    job: flow(1, 0, false)
  },
  {
    id: "1to1",
    title: "NATS 1→1",
    protocol: "nats",
    sized: true,
    metrics: flowMetrics,
    defaultCount: flowCount,
    countUnit: "messages",
    job: flow(1, 1, false)
  },
  {
    id: "fanout",
    title: "NATS 1→4 fan-out (msgs/s delivered)",
    protocol: "nats",
    sized: true,
    metrics: flowMetrics,
    defaultCount: flowCount,
    countUnit: "messages published",
    job: flow(1, 4, false)
  },
  {
    id: "queue",
    title: "NATS 1→4 queue group",
    protocol: "nats",
    sized: true,
    metrics: [...flowMetrics, { key: "queueBalance", label: "balance", format: "num" }],
    defaultCount: flowCount,
    countUnit: "messages",
    job: flow(1, 4, true)
  },
  {
    id: "fanin",
    title: "NATS 4→1 fan-in",
    protocol: "nats",
    sized: true,
    metrics: flowMetrics,
    defaultCount: flowCount,
    countUnit: "messages (all publishers)",
    job: flow(4, 1, false)
  },
  {
    id: "reqrep",
    title: "NATS request-reply latency (sequential)",
    protocol: "nats",
    sized: true,
    metrics: [
      { key: "p50", label: "p50 µs", format: "us", better: "lower", compare: true, chart: true },
      { key: "p99", label: "p99 µs", format: "us", better: "lower", compare: true, chart: true },
      { key: "p999", label: "p99.9 µs", format: "us", better: "lower", compare: true },
      { key: "rate", label: "req/s", format: "rate" },
      { key: "srvUsPerMsg", label: "srv µs/req", format: "us" },
      { key: "genCpuPct", label: "gen CPU", format: "pct" }
    ],
    defaultCount: () => 20_000,
    countUnit: "requests",
    pin: true,
    job: (port, serverPid, size, count) => ({ kind: "nats-reqrep", port, serverPid, size, count })
  },
  {
    id: "idle",
    title: "NATS idle connections",
    protocol: "nats",
    sized: false,
    metrics: [
      { key: "kbPerConn", label: "KiB/conn", format: "kb", better: "lower", compare: true, chart: true },
      { key: "connRate", label: "conn/s", format: "rate", better: "higher", compare: true, chart: true },
      { key: "rssAfterMB", label: "RSS MB", format: "num" },
      { key: "held", label: "held", format: "num" },
      { key: "srvCpuPct", label: "srv CPU", format: "pct" },
      { key: "genCpuPct", label: "gen CPU", format: "pct" }
    ],
    defaultCount: () => 10_000,
    countUnit: "connections",
    lossUnit: "connections",
    job: (port, serverPid, _size, count) => ({ kind: "nats-idle", port, serverPid, count })
  }
]

/** Accepts ids and a few spellings: "1-1", "1to1", "fan-out", "req-rep", ... */
export const findScenario = (name: string): Scenario | undefined => {
  const n = name.toLowerCase().replace(/[^a-z0-9]/g, "")
  const alias: Record<string, string> = {
    publish: "pub",
    pubonly: "pub",
    "11": "1to1",
    "14": "fanout",
    "41": "fanin",
    queuegroup: "queue",
    request: "reqrep",
    requestreply: "reqrep",
    latency: "reqrep",
    connections: "idle"
  }
  const id = alias[n] ?? n
  return SCENARIOS.find((s) => s.id.replace(/[^a-z0-9]/g, "") === id)
}
