// The load-generator process: the harness forks it once per run, sends one Job over
// IPC, and gets one JobResult back. Running here, away from the harness, gives the
// generator its own event loop (and, the OS willing, its own core).
import { runFootprint } from "./footprint.js"
import type { Job, JobResult } from "./jobs.js"
import { runJsPub, runJsReplay } from "./js-load.js"
import { runMqttConnect, runMqttFlow } from "./mqtt-load.js"
import { runFlow, runIdle, runReqRep } from "./nats-load.js"

const run = (job: Job): Promise<JobResult> => {
  switch (job.kind) {
    case "nats-flow":
      return runFlow(job)
    case "nats-reqrep":
      return runReqRep(job)
    case "nats-idle":
      return runIdle(job)
    case "mqtt-flow":
      return runMqttFlow(job)
    case "mqtt-connect":
      return runMqttConnect(job)
    case "js-pub":
      return runJsPub(job)
    case "js-replay":
      return runJsReplay(job)
    case "idle-footprint":
      return runFootprint(job)
  }
}

process.once("message", (job: Job) => {
  run(job).then(
    (r) => process.send!(r, () => process.exit(0)),
    (e: unknown) => {
      const r: JobResult = {
        ok: false,
        error: e instanceof Error ? e.message : String(e),
        metrics: {},
        loss: 0,
        excess: 0,
        errors: []
      }
      process.send!(r, () => process.exit(0))
    }
  )
})
