// The idle footprint of a server nobody talks to: its resident memory once it has been
// idle for a while (a garbage-collected runtime gives back its start-up garbage only
// after some idle seconds) and the CPU it burns meanwhile (timers that fire with
// nothing to do). Read from /proc by pid; the generator opens no connection.
import type { FootprintJob, JobResult } from "./jobs.js"
import { ProcWatch } from "./procfs.js"

export const runFootprint = async (job: FootprintJob): Promise<JobResult> => {
  const watch = new ProcWatch(job.serverPid)
  try {
    const before = watch.cpuMicros()
    const t0 = performance.now()
    await new Promise((r) => setTimeout(r, job.seconds * 1000))
    const after = watch.cpuMicros()
    const elapsedUs = (performance.now() - t0) * 1000
    const rss = watch.statusBytes("VmRSS")
    if (before === undefined || after === undefined || rss === undefined) {
      return { ok: false, error: "the server exited while idle", metrics: {}, loss: 0, excess: 0, errors: [] }
    }
    return {
      ok: true,
      metrics: { idleRssMiB: rss / 1048576, idleCpuPct: ((after - before) / elapsedUs) * 100 },
      loss: 0,
      excess: 0,
      errors: []
    }
  } finally {
    watch.close()
  }
}
