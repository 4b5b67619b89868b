// The benchmark harness's bookkeeping: medians, ratios, the verdict on the targets and
// the Markdown summary. What matters most: a lossy or failed Switchyard cell never gets a
// ratio (so it can never look fast), and a target whose cells did not run is not "met".
import { describe, expect, it } from "vitest"
import type { JobResult } from "../../bench/loadgen/jobs.js"
import { type Cell, ratios, renderMarkdown, summarize } from "../../bench/report.js"
import { findScenario } from "../../bench/scenarios.js"
import { checkTargets, targetGroups } from "../../bench/targets.js"

const run = (metrics: Record<string, number>, loss = 0, ok = true): JobResult =>
  ({ ok, metrics, loss, excess: 0, errors: [] }) as unknown as JobResult

const cell = (scenario: string, size: number, system: string, rates: ReadonlyArray<number>, loss = 0): Cell => ({
  scenario,
  size,
  system,
  runs: rates.map((rate, i) => run({ rate }, i === 0 ? loss : 0))
})

const oneToOne = findScenario("1to1")!
const mqtt0 = findScenario("mqtt0")!

describe("bench report", () => {
  it("summarizes runs as median and min–max", () => {
    const s = summarize(cell("1to1", 16, "switchyard", [300, 100, 200]))
    expect(s.stats.rate).toEqual({ median: 200, min: 100, max: 300 })
    expect(s.lossy).toBe(false)
    expect(s.failed).toBe(false)
  })

  it("gives a ratio of medians, and none to a lossy or failed Switchyard cell", () => {
    const summaries = [
      summarize(cell("1to1", 16, "switchyard", [200, 200, 200])),
      summarize(cell("1to1", 16, "nats-server", [100, 100, 100])),
      summarize(cell("1to1", 1024, "switchyard", [900, 900, 900], 5)),
      summarize(cell("1to1", 1024, "nats-server", [100, 100, 100])),
      summarize({ scenario: "1to1", size: 16384, system: "switchyard", runs: [run({}, 0, false)] }),
      summarize(cell("1to1", 16384, "nats-server", [100, 100, 100]))
    ]
    const rs = ratios([oneToOne], summaries, "switchyard")
    const at = (size: number) => rs.find((r) => r.size === size && r.metric === "rate")!
    expect(at(16).ratio).toBe(2)
    expect(at(1024).ratio).toBeUndefined()
    expect(at(1024).note).toMatch(/lost/)
    expect(at(16384).ratio).toBeUndefined()
    expect(at(16384).note).toMatch(/failed/)
  })

  it("checks targets only on cells that ran, and a cell without a ratio does not meet its target", () => {
    const summaries = [
      summarize(cell("1to1", 16, "switchyard", [200])),
      summarize(cell("1to1", 16, "nats-server", [100])),
      summarize(cell("1to1", 128, "switchyard", [40])),
      summarize(cell("1to1", 128, "nats-server", [100])),
      summarize(cell("1to1", 1024, "switchyard", [900], 1)),
      summarize(cell("1to1", 1024, "nats-server", [100]))
    ]
    const checks = checkTargets(ratios([oneToOne], summaries, "switchyard"))
    expect(checks.map((c) => [c.size, c.met])).toEqual([
      [16, true],
      [128, false],
      [1024, false]
    ])
    // fan-out and the other scenarios did not run: nothing is said about them
    expect(checks.every((c) => c.scenario === "1to1")).toBe(true)
  })

  it("renders the run as Markdown: medians, ratios per peer, lost cells marked, the verdict", () => {
    const summaries = [
      summarize(cell("mqtt0", 16, "switchyard", [3_000_000])),
      summarize(cell("mqtt0", 16, "mosquitto", [150_000])),
      summarize(cell("mqtt0", 16, "aedes", [100_000])),
      summarize(cell("mqtt0", 1024, "switchyard", [900_000], 3)),
      summarize(cell("mqtt0", 1024, "mosquitto", [110_000])),
      summarize(cell("mqtt0", 1024, "aedes", [90_000]))
    ]
    const rs = ratios([mqtt0], summaries, "switchyard")
    const md = renderMarkdown([mqtt0], summaries, rs, targetGroups(checkTargets(rs)), "switchyard", "HEADER")
    expect(md.startsWith("HEADER\n")).toBe(true)
    expect(md).toContain("| scenario | metric | 16 B | 1 KiB |")
    expect(md).toContain("| 3.00M · M 20× · A 30× | **LOST 3** |")
    expect(md).toContain("Targets: 2 of 4 cells meet theirs.")
    expect(md).toContain("- **not met** — MQTT QoS 0 ≤ 1 KiB: ≥ 3 × mosquitto: mqtt0 16 B 20.00×, mqtt0 1 KiB n/a ✗")
  })

  it("checks the footprint bounds on Switchyard's own medians, beside the peers' numbers", () => {
    const footprint = findScenario("footprint")!
    const fp = (system: string, rss: number, cpu: number, ready: number): Cell => ({
      scenario: "footprint",
      size: 0,
      system,
      runs: [run({ idleRssMiB: rss, idleCpuPct: cpu, readyMs: ready })]
    })
    const summaries = [summarize(fp("switchyard", 58.25, 0.01, 620)), summarize(fp("nats-server", 11, 0.1, 30))]
    const rs = ratios([footprint], summaries, "switchyard")
    expect(rs.find((r) => r.metric === "idleRssMiB")?.ratio).toBeCloseTo(58.25 / 11)
    const checks = checkTargets(rs, summaries, "switchyard")
    expect(checks.map((c) => [c.target.what, c.met, c.shown])).toEqual([
      ["idle RSS with JetStream and MQTT on: ≤ 64 MiB", true, "58.3 MiB"],
      ["idle CPU with JetStream and MQTT on: ≤ 0.5%", true, "0.01%"],
      ['spawn to "Server is ready": ≤ 500 ms', false, "620 ms"]
    ])
    const md = renderMarkdown([footprint], summaries, rs, targetGroups(checks), "switchyard", "H")
    expect(md).toContain('- **not met** — spawn to "Server is ready": ≤ 500 ms: footprint 620 ms ✗')
    expect(md).toContain("- **met** — idle RSS with JetStream and MQTT on: ≤ 64 MiB: footprint 58.3 MiB")
  })

  it("checks MQTT 5.0 against the same system's 3.1.1 runs beside it", () => {
    const v5 = findScenario("mqtt5-1")!
    expect(v5.baseline).toBe("mqtt1")
    expect(findScenario("mqtt5-2-fanout")!.baseline).toBe("mqtt2-fanout")
    const paired = (scenario: string, size: number, vs: ReadonlyArray<number>, loss = 0): Cell => ({
      scenario,
      size,
      system: "switchyard",
      runs: vs.map((v, i) => run({ rate: 1000 * v, singleRate: 1000, vsSingle: v }, i === 0 ? loss : 0))
    })
    const summaries = [
      summarize(paired("mqtt5-1", 16, [0.93, 0.95, 0.97])),
      summarize(paired("mqtt5-1", 1024, [0.8, 0.85, 0.95])),
      summarize(paired("mqtt5-0-fanout", 16, [1, 1, 1], 3))
    ]
    const checks = checkTargets([], summaries, "switchyard").filter((c) => c.scenario.startsWith("mqtt5"))
    expect(checks.map((c) => [c.scenario, c.size, c.met, c.shown])).toEqual([
      ["mqtt5-0-fanout", 16, false, "n/a (lost messages)"],
      ["mqtt5-1", 16, true, "0.95×"],
      ["mqtt5-1", 1024, false, "0.85×"]
    ])
  })

  it("checks a routed pair's server against the same system's single server, and shows each system's own ratio", () => {
    const local = findScenario("cluster-local")!
    expect(local.baseline).toBe("1to1")
    const pair = (system: string, size: number, vs: ReadonlyArray<number>, loss = 0): Cell => ({
      scenario: "cluster-local",
      size,
      system,
      runs: vs.map((v, i) => run({ rate: 1000 * v, singleRate: 1000, vsSingle: v }, i === 0 ? loss : 0))
    })
    const summaries = [
      summarize(pair("switchyard", 16, [0.95, 0.97, 0.99])),
      summarize(pair("nats-server", 16, [1.0, 1.02, 0.98])),
      summarize(pair("switchyard", 1024, [0.8, 0.85, 0.88])),
      summarize(pair("nats-server", 1024, [1, 1, 1])),
      summarize(pair("switchyard", 128, [1, 1, 1])),
      summarize(pair("nats-server", 128, [1, 1, 1]))
    ]
    const rs = ratios([local], summaries, "switchyard")
    // the flow's rate is still compared with the peer's; the own ratio is not
    expect(rs.filter((r) => r.size === 16).map((r) => r.metric)).toEqual(["rate"])
    const checks = checkTargets(rs, summaries, "switchyard").filter((c) => c.scenario === "cluster-local")
    // 128 B is not among the target's sizes
    expect(checks.map((c) => [c.size, c.met, c.shown])).toEqual([
      [16, true, "0.97×"],
      [1024, false, "0.85×"]
    ])
    const md = renderMarkdown([local], summaries, rs, targetGroups(checks), "switchyard", "H")
    expect(md).toContain("| ÷ 1 node | 0.97 · N 1 | 1 · N 1 | 0.85 · N 1 |")
    expect(md).toContain("cluster-local 16 B 0.97×, cluster-local 1 KiB 0.85× ✗")
    // a lossy cell has no figure that counts
    const lossy = [summarize(pair("switchyard", 16, [1, 1, 1], 2))]
    expect(checkTargets([], lossy, "switchyard").map((c) => [c.met, c.shown])).toEqual([[false, "n/a (lost messages)"]])
  })
})
