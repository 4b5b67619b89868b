// The scenario table: what each scenario runs, which metrics it reports, and which
// of them are compared between systems. A system runs a scenario when it speaks the
// scenario's protocol (see systems.ts). A new scenario: a Job kind in
// loadgen/jobs.ts, its runner in the load generator, and a row here.
import type { Job } from "./loadgen/jobs.js"
import type { Ports, Protocol } from "./systems.js"

/**
 * What a scenario needs of a system: core NATS, MQTT (QoS 0/1), MQTT QoS 2, the MQTT
 * → NATS bridge (one subject space for both), or JetStream.
 */
export type { Protocol } from "./systems.js"

export interface Metric {
  readonly key: string
  readonly label: string
  /** How to print it: "rate" (1.23M), "us" (µs), "pct", "num", "mb" (MB/s), "kb". */
  readonly format: "rate" | "us" | "pct" | "num" | "mb" | "kb"
  readonly better?: "higher" | "lower"
  /** Compare Switchyard with each peer on this metric (ratio column). */
  readonly compare?: boolean
  /**
   * A figure each system has of its own (a ratio to its own baseline): the Markdown table
   * shows every system's median side by side instead of a ratio between systems.
   */
  readonly own?: boolean
  /** Draw a chart panel for this metric. */
  readonly chart?: boolean
}

/**
 * How long a run goes: `count` messages (requests, connections), or, with `durationMs`
 * above 0, publishing for that long with `count` as a cap (then everything published is
 * waited for and counted). Timed runs take about as long on a slow peer as on a fast one.
 */
export interface RunBound {
  readonly count: number
  readonly durationMs: number
}

export interface Scenario {
  readonly id: string
  readonly title: string
  readonly protocol: Protocol
  /** Whether the message size matters (otherwise it runs once, size 0). */
  readonly sized: boolean
  /** The headline metric is the first one. */
  readonly metrics: ReadonlyArray<Metric>
  /** The count of a count-bound run (the default for scenarios that are not `timed`). */
  readonly defaultCount: (size: number) => number
  /** Runs publish for a time (see RunBound) unless `--count` asks for a count. */
  readonly timed?: boolean
  /**
   * Every run on a server of its own (memory per connection: a server that held and
   * released connections before would reuse that memory). Otherwise the iterations of a
   * cell share one server per system, warmed up once.
   */
  readonly freshServer?: boolean
  /** Unit of `count` for the docs and the progress line. */
  readonly countUnit: string
  /** `peerPid`: a cluster run's second server. */
  readonly job: (ports: Ports, serverPid: number, size: number, run: RunBound, peerPid?: number) => Job
  /**
   * Pin the server and the load generator to different CPUs by default (`--pin auto`).
   * For round-trip latency: on these VMs a wake-up across cores costs ~70 µs more than
   * one on the same core, and where the scheduler happens to put the two processes
   * otherwise decides the result more than the server does.
   */
  readonly pin?: boolean
  /** What loss counts (default "messages"). */
  readonly lossUnit?: string
  /**
   * The id of a single-server scenario this one is measured against, system by system:
   * each run also runs that scenario's job on a single server of the same system (started
   * beside this scenario's, on ports of its own), the two alternating in order run by run,
   * and reports that rate (`singleRate`) and this run's rate divided by it (`vsSingle`).
   */
  readonly baseline?: string
}

export const SIZES = [16, 128, 1024, 16384] as const

const cpu: ReadonlyArray<Metric> = [
  { key: "srvCpuPct", label: "srv CPU", format: "pct" },
  { key: "srvUsPerMsg", label: "srv µs/msg", format: "us" },
  { key: "srvSysPct", label: "srv sys", format: "pct" },
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
  (ports: Ports, serverPid: number, size: number, run: RunBound): Job => ({
    kind: "nats-flow",
    port: ports.nats,
    serverPid,
    pubs,
    subs,
    queue,
    size,
    count: run.count,
    durationMs: run.durationMs
  })

// Long enough to run ≥ 1 s on the fastest system: shorter runs measured mostly start-up.
const mqttCount = (qos: 0 | 1 | 2, size: number): number =>
  qos === 0 ? (size <= 128 ? 500_000 : size <= 1024 ? 200_000 : 40_000) : size <= 1024 ? 30_000 : 10_000

const jsCount = (size: number): number => (size <= 1024 ? 20_000 : 5_000)

const mqttFlow =
  (qos: 0 | 1 | 2, subs: number, natsSubs: boolean, persistent = false, v5 = false, shared = false) =>
  (ports: Ports, serverPid: number, size: number, run: RunBound): Job => ({
    kind: "mqtt-flow",
    port: ports.mqtt,
    natsPort: ports.nats,
    serverPid,
    qos,
    subs,
    natsSubs,
    persistent,
    ...(v5 ? { v5: true } : {}),
    ...(shared ? { shared: true } : {}),
    size,
    count: run.count,
    durationMs: run.durationMs
  })

export const SCENARIOS: ReadonlyArray<Scenario> = [
  {
    id: "pub",
    title: "NATS publish only (no subscribers)",
    protocol: "nats",
    sized: true,
    metrics: flowMetrics,
    defaultCount: flowCount,
    timed: true,
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
    timed: true,
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
    timed: true,
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
    timed: true,
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
    timed: true,
    countUnit: "messages (all publishers)",
    job: flow(4, 1, false)
  },
  ...([1, 4] as const).map(
    (subs): Scenario => ({
      id: subs === 1 ? "cluster-1to1" : "cluster-fanout",
      title: `NATS ${subs === 1 ? "1→1" : "1→4 fan-out (msgs/s delivered)"} across a route: publisher on one server, subscribers on another (both servers' CPU)`,
      protocol: "cluster",
      sized: true,
      metrics: flowMetrics,
      defaultCount: flowCount,
      timed: true,
      countUnit: subs === 1 ? "messages" : "messages published",
      job: (ports, serverPid, size, run, peerPid) => ({ ...flow(1, subs, false)(ports, serverPid, size, run), subPort: ports.nats2, subServerPid: peerPid })
    })
  ),
  // The per-node cost of being in a cluster: everyone on the first server of a routed pair,
  // the second without interest, against the same system's single server in the same run.
  ...([1, 4] as const).map(
    (subs): Scenario => ({
      id: subs === 1 ? "cluster-local" : "cluster-local-fanout",
      title: `NATS ${subs === 1 ? "1→1" : "1→4 fan-out (msgs/s delivered)"} on one server of a routed pair, no interest on the other`,
      protocol: "cluster",
      sized: true,
      metrics: [
        flowMetrics[0]!,
        { key: "vsSingle", label: "÷ 1 node", format: "num", better: "higher", own: true },
        { key: "singleRate", label: "1 node msgs/s", format: "rate" },
        ...flowMetrics.slice(1)
      ],
      defaultCount: flowCount,
      timed: true,
      countUnit: subs === 1 ? "messages" : "messages published",
      baseline: subs === 1 ? "1to1" : "fanout",
      job: (ports, serverPid, size, run, peerPid) => ({ ...flow(1, subs, false)(ports, serverPid, size, run), peerPort: ports.nats2, peerPid })
    })
  ),
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
    job: (ports, serverPid, size, run) => ({ kind: "nats-reqrep", port: ports.nats, serverPid, size, count: run.count })
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
    freshServer: true,
    job: (ports, serverPid, _size, run) => ({ kind: "nats-idle", port: ports.nats, serverPid, count: run.count })
  },
  {
    id: "footprint",
    title: "Footprint: started with JetStream and MQTT on, then idle (no clients)",
    // MQTT scenarios start every system with MQTT, and JetStream where it has it.
    protocol: "mqtt",
    sized: false,
    metrics: [
      { key: "idleRssMiB", label: "idle RSS MiB", format: "num", better: "lower", compare: true, chart: true },
      { key: "idleCpuPct", label: "idle CPU %", format: "num", better: "lower", compare: true },
      { key: "readyMs", label: "ready ms", format: "num", better: "lower", compare: true, chart: true }
    ],
    defaultCount: () => 20,
    countUnit: "seconds idle",
    freshServer: true,
    job: (_ports, serverPid, _size, run) => ({ kind: "idle-footprint", serverPid, seconds: run.count })
  },
  ...([0, 1, 2] as const).flatMap((qos): Array<Scenario> =>
    ([1, 4] as const).map((subs) => ({
      id: subs === 1 ? `mqtt${qos}` : `mqtt${qos}-fanout`,
      title: `MQTT QoS ${qos} ${subs === 1 ? "1→1" : "1→4 fan-out (msgs/s delivered)"}`,
      protocol: qos === 2 ? "mqtt-qos2" : "mqtt",
      sized: true,
      metrics: flowMetrics,
      defaultCount: (size: number) => mqttCount(qos, size),
      timed: true,
      countUnit: subs === 1 ? "messages" : "messages published",
      job: mqttFlow(qos, subs, false)
    }))
  ),
  // MQTT 5.0 clients (protocol level 5, no properties) on the same flows as mqtt0/1/2 and
  // their fan-outs: the cost of speaking 5.0. Each run is paired with a run of the 3.1.1
  // cell on a server of the same system beside it (the order alternating), and reports
  // the ratio of the two (`vsSingle`, shown as "÷ 3.1.1"): runs of one cell move by up to
  // ±20% on a shared VM, pairs much less. Pinned (server and generator on CPUs of their
  // own, both runs of a pair alike): on 2 cores where the scheduler puts the two decided
  // the rate more than the protocol did (mqtt5-1-fanout 16 B, unpinned: single runs of
  // 437k-951k msgs/s, pair medians 0.83 and 1.41 in two runs an hour apart; pinned, the
  // pairs 0.89-1.08).
  ...([0, 1, 2] as const).flatMap((qos): Array<Scenario> =>
    ([1, 4] as const).map((subs) => ({
      id: subs === 1 ? `mqtt5-${qos}` : `mqtt5-${qos}-fanout`,
      title: `MQTT 5.0 QoS ${qos} ${subs === 1 ? "1→1" : "1→4 fan-out (msgs/s delivered)"}`,
      protocol: "mqtt5",
      sized: true,
      metrics: [
        flowMetrics[0]!,
        { key: "vsSingle", label: "÷ 3.1.1", format: "num", better: "higher", own: true },
        { key: "singleRate", label: "3.1.1 msgs/s", format: "rate" },
        ...flowMetrics.slice(1)
      ],
      baseline: subs === 1 ? `mqtt${qos}` : `mqtt${qos}-fanout`,
      pin: true,
      defaultCount: (size: number) => mqttCount(qos, size),
      timed: true,
      countUnit: subs === 1 ? "messages" : "messages published",
      job: mqttFlow(qos, subs, false, false, true)
    }))
  ),
  {
    id: "mqtt5-shared",
    title: "MQTT 5.0 QoS 1 Shared Subscription, 4 members (each message to one)",
    protocol: "mqtt5",
    sized: true,
    metrics: flowMetrics,
    defaultCount: (size: number) => mqttCount(1, size),
    timed: true,
    countUnit: "messages",
    job: mqttFlow(1, 4, false, false, true, true)
  },
  {
    id: "mqtt1-persist",
    title: "MQTT QoS 1 1→1, persistent-session subscriber (each message kept until acknowledged)",
    protocol: "mqtt",
    sized: true,
    metrics: flowMetrics,
    defaultCount: (size: number) => mqttCount(1, size),
    timed: true,
    countUnit: "messages",
    job: mqttFlow(1, 1, false, true)
  },
  {
    id: "bridge",
    title: "MQTT QoS 0 publisher → NATS subscriber (bridge)",
    protocol: "bridge",
    sized: true,
    metrics: flowMetrics,
    defaultCount: (size) => mqttCount(0, size),
    timed: true,
    countUnit: "messages",
    job: mqttFlow(0, 1, true)
  },
  {
    id: "mqtt-connect",
    title: "MQTT connect rate (CONNECT/CONNACK, held)",
    protocol: "mqtt",
    sized: false,
    metrics: [
      { key: "connRate", label: "conn/s (64 at a time)", format: "rate", better: "higher", compare: true, chart: true },
      { key: "seqConnRate", label: "conn/s (one at a time)", format: "rate", better: "higher", compare: true, chart: true },
      { key: "kbPerConn", label: "KiB/conn", format: "kb", better: "lower", compare: true },
      // On a small machine the generator opening sockets can be the limit for every system:
      // the server's own CPU per accepted connection compares the servers whatever the rate.
      { key: "srvUsPerMsg", label: "srv µs/conn", format: "us", better: "lower", compare: true },
      { key: "held", label: "held", format: "num" },
      { key: "srvCpuPct", label: "srv CPU", format: "pct" },
      { key: "genCpuPct", label: "gen CPU", format: "pct" }
    ],
    // long enough that the 64-at-a-time phase lasts about a second (at 2000 it was ~0.3 s)
    defaultCount: () => 8000,
    countUnit: "connections",
    lossUnit: "connections",
    freshServer: true,
    job: (ports, serverPid, _size, run) => ({ kind: "mqtt-connect", port: ports.mqtt, serverPid, count: run.count })
  },
  {
    id: "js-pub",
    title: "JetStream acknowledged publish (file store, window 1000)",
    protocol: "jetstream",
    sized: true,
    metrics: flowMetrics,
    defaultCount: jsCount,
    countUnit: "messages",
    timed: true,
    job: (ports, serverPid, size, run) => ({ kind: "js-pub", port: ports.nats, serverPid, size, count: run.count, durationMs: run.durationMs })
  },
  {
    id: "js-replay",
    title: "JetStream pull-consumer replay (file store, batches of 1000)",
    protocol: "jetstream",
    sized: true,
    metrics: [
      ...flowMetrics,
      { key: "fillRate", label: "fill msgs/s", format: "rate" }
    ],
    defaultCount: jsCount,
    countUnit: "messages stored, then replayed",
    job: (ports, serverPid, size, run) => ({ kind: "js-replay", port: ports.nats, serverPid, size, count: run.count })
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
    cluster: "cluster1to1",
    route: "cluster1to1",
    clusterlocal1to1: "clusterlocal",
    norouteinterest: "clusterlocal",
    "41": "fanin",
    queuegroup: "queue",
    request: "reqrep",
    requestreply: "reqrep",
    latency: "reqrep",
    connections: "idle",
    idlefootprint: "footprint",
    memory: "footprint",
    startup: "footprint",
    qos0: "mqtt0",
    qos1: "mqtt1",
    qos2: "mqtt2",
    mqtt: "mqtt0",
    connect: "mqttconnect",
    mqttbridge: "bridge",
    jetstream: "jspub",
    replay: "jsreplay",
    pull: "jsreplay"
  }
  const id = alias[n] ?? n
  return SCENARIOS.find((s) => s.id.replace(/[^a-z0-9]/g, "") === id)
}
