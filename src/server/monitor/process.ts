// Process readings for /varz and /metrics: resident memory, CPU use over the
// last sampling interval (at least one second, sampled lazily on request, so no
// timer runs), core counts, and the diagnostic report behind /stacksz.
import * as os from "node:os"
import type { ProcessProbe, ProcessSnapshot } from "../../core/monitor/source.js"

const MinIntervalMs = 1000

const cpuMicros = (u: NodeJS.CpuUsage): number => u.user + u.system

export const nodeProcessProbe = (): ProcessProbe => {
  let lastAt = performance.now()
  let lastCpu = process.cpuUsage()
  // Until a full interval has passed, report the lifetime average.
  let percent = process.uptime() > 0 ? cpuMicros(lastCpu) / 1e6 / process.uptime() * 100 : 0
  const cores = os.cpus().length
  const runtime = `node ${process.version}`
  return {
    sample: (): ProcessSnapshot => {
      const at = performance.now()
      const cpu = process.cpuUsage()
      if (at - lastAt >= MinIntervalMs) {
        percent = ((cpuMicros(cpu) - cpuMicros(lastCpu)) / 1000 / (at - lastAt)) * 100
        lastAt = at
        lastCpu = cpu
      }
      return {
        rssBytes: process.memoryUsage.rss(),
        cpuPercent: Math.max(0, percent),
        cpuSeconds: cpuMicros(cpu) / 1e6,
        cores,
        maxProcs: typeof os.availableParallelism === "function" ? os.availableParallelism() : cores,
        runtime
      }
    },
    report: () => {
      // Skip reverse DNS of socket endpoints: slow, and not ours to publish.
      const report = process.report as NodeJS.ProcessReport & { excludeNetwork?: boolean }
      const exclude = report.excludeNetwork
      report.excludeNetwork = true
      try {
        return report.getReport() as unknown as Readonly<Record<string, unknown>>
      } finally {
        report.excludeNetwork = exclude
      }
    }
  }
}
