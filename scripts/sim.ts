// `npm run sim -- [--seed N] [--steps M] [--runs K] [--faults net|disk [--disk-full|--no-disk-full]] [--mqtt [--no-device-faults]] [--no-nonces] [--cluster [N] [--no-auto-unsub]] [--plant BUG] [--tail L]`:
// run the deterministic simulation. With a seed it replays that run exactly; without one
// it picks seeds and prints them. `--faults disk` adds JetStream on a simulated disk with
// crashes and power cuts, `--mqtt` MQTT devices and the bridge; `--no-nonces` leaves out
// the nkey user that makes INFO carry nonces in a third of the runs (to replay older
// seeds). `--cluster` runs 2 to 4 servers joined by routes instead (`--cluster N`: N of
// them), with route drops, partitions, slow routes and restarts (`--no-auto-unsub` leaves
// out auto-unsubscribes, to replay a seed recorded before them). A failure prints the
// seed, the step, a command that reproduces it and the last trace events.
// `--release [--runs K]`: the release check, K fresh seeds (default 50) in each of the five
// modes (network faults; plus disk; each with MQTT; a cluster), a one-line summary per mode.
import { type FaultSet, type PlantedBug, reproduceCommand, runSim, type SimResult } from "../src/sim/runner.js"

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

export const report = (r: SimResult, plant?: PlantedBug, faults: FaultSet = "net", mqtt = false, deviceFaults = true, diskFull?: boolean, nonces = true, cluster?: number, autoUnsub = true): string => {
  if (r.ok) return `seed ${r.seed}: ok (${r.steps} steps, trace ${r.traceHash}/${r.traceLines}) ${JSON.stringify(r.stats)}`
  return [
    `seed ${r.seed}: FAILED at step ${r.failedStep}`,
    ...r.violations.slice(0, 10).map((v) => `  violation: ${v}`),
    `  reproduce: ${reproduceCommand(r.seed, r.steps, plant, faults, mqtt, deviceFaults, diskFull, nonces, cluster, autoUnsub)}`,
    `  last trace events:`,
    ...r.trace.map((l) => `    ${l}`)
  ].join("\n")
}

/** Fresh seeds in every mode; failures are printed in full, passes counted. */
const release = async (runs: number, steps: number): Promise<boolean> => {
  let allOk = true
  const modes = [["net", false, undefined], ["disk", false, undefined], ["net", true, undefined], ["disk", true, undefined], ["net", false, 1]] as const
  for (const [faults, mqtt, cluster] of modes) {
    const failed: Array<number> = []
    const start = Date.now()
    for (let i = 0; i < runs; i++) {
      const seed = (Math.random() * 0x7fffffff) | 0
      const r = await runSim({ seed, steps, faults, mqtt, cluster, traceTail: 30 })
      if (!r.ok) {
        failed.push(seed)
        console.log(report(r, undefined, faults, mqtt, true, undefined, true, cluster))
      }
    }
    const mode = cluster !== undefined ? "--cluster" : `--faults ${faults}${mqtt ? " --mqtt" : ""}`
    console.log(`${mode}: ${runs - failed.length}/${runs} seeds ok in ${Math.round((Date.now() - start) / 1000)} s${failed.length > 0 ? `; failed: ${failed.join(", ")}` : ""}`)
    if (failed.length > 0) allOk = false
  }
  return allOk
}

/** `--cluster` alone: as many nodes as the seed picks (2 to 4); `--cluster N`: N nodes. */
const clusterArg = (): number | undefined => {
  const i = process.argv.indexOf("--cluster")
  if (i < 0) return undefined
  const next = process.argv[i + 1]
  if (next === undefined || next.startsWith("--")) return 1
  const n = Number(next)
  if (!Number.isInteger(n) || n < 2 || n > 4) throw new Error(`--cluster takes a node count from 2 to 4, not ${next}`)
  return n
}

const main = async (): Promise<void> => {
  const steps = Number(arg("steps") ?? 2000)
  if (process.argv.includes("--release")) {
    process.exitCode = (await release(Number(arg("runs") ?? 50), steps)) ? 0 : 1
    return
  }
  const plant = arg("plant") as PlantedBug | undefined
  const faults = (arg("faults") ?? (plant === "ack-before-sync" || plant === "lying-fsync" || plant === "keep-refused" || plant === "mqtt-commit-before-sync" || plant === "mqtt-forget-pubrel" ? "disk" : "net")) as FaultSet
  if (faults !== "net" && faults !== "disk") throw new Error(`--faults takes net or disk, not ${String(faults)}`)
  const mqtt = process.argv.includes("--mqtt") || plant === "mqtt-commit-before-sync" || plant === "mqtt-forget-pubrel"
  const deviceFaults = !process.argv.includes("--no-device-faults")
  const diskFull = process.argv.includes("--disk-full") ? true : process.argv.includes("--no-disk-full") ? false : undefined
  const nonces = !process.argv.includes("--no-nonces")
  const cluster = clusterArg()
  const autoUnsub = !process.argv.includes("--no-auto-unsub")
  const given = arg("seed")
  const runs = given === undefined ? Number(arg("runs") ?? 1) : 1
  let failed = false
  for (let i = 0; i < runs; i++) {
    const seed = given === undefined ? (Math.random() * 0x7fffffff) | 0 : Number(given)
    if (given === undefined) console.log(`seed ${seed}`)
    const r = await runSim({ seed, steps, faults, plant, mqtt, mqttDeviceFaults: deviceFaults, diskFull, nonces, cluster, autoUnsub, traceTail: Number(arg("tail") ?? 30) })
    console.log(report(r, plant, faults, mqtt, deviceFaults, diskFull, nonces, cluster, autoUnsub))
    if (!r.ok) failed = true
  }
  process.exitCode = failed ? 1 : 0
}

void main()
