// `node dist/fuzz/scripts/fuzz.js [--target nats|mqtt|mqtt5|config|subject|all] [--seconds S] [--runs N] [--seed N]`:
// coverage-guided fuzzing of the parsers and the subject matcher. A seed and `--runs`
// replay the same inputs; `--replay FILE` runs one saved input. Findings are written to
// fuzz-findings/<target>-<hash>.bin and make the exit code 1.
import { createHash } from "node:crypto"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { describeFinding, escapeInput, type Finding, fuzz } from "../src/fuzz/engine.js"
import { TARGETS } from "../src/fuzz/targets.js"

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

const CLI = "node dist/fuzz/scripts/fuzz.js"

const save = (f: Finding): string => {
  const file = path.join("fuzz-findings", `${f.target}-${createHash("sha1").update(f.input).digest("hex").slice(0, 12)}.bin`)
  mkdirSync("fuzz-findings", { recursive: true })
  writeFileSync(file, f.input)
  return file
}

const replay = (name: string, file: string): boolean => {
  const target = TARGETS.find((t) => t.name === name)
  if (target === undefined) throw new Error(`--replay needs --target, one of ${TARGETS.map((t) => t.name).join(", ")}`)
  const input = readFileSync(file)
  console.log(`${name}: ${escapeInput(input)}`)
  try {
    target.run(input)
    console.log("ok: no finding")
    return true
  } catch (e) {
    console.log(describeFinding({ target: name, input, error: e, exec: 0 }))
    return false
  }
}

const main = (): void => {
  const which = arg("target") ?? "all"
  const given = arg("replay")
  if (given !== undefined) {
    process.exitCode = replay(which, given) ? 0 : 1
    return
  }
  const targets = which === "all" ? TARGETS : TARGETS.filter((t) => t.name === which)
  if (targets.length === 0) throw new Error(`--target takes all, ${TARGETS.map((t) => t.name).join(", ")}; not ${which}`)
  const seed = arg("seed") === undefined ? (Math.random() * 0x7fffffff) | 0 : Number(arg("seed"))
  const runs = arg("runs") === undefined ? undefined : Number(arg("runs"))
  const seconds = Number(arg("seconds") ?? 60)
  const budget = runs === undefined ? `--seconds ${seconds}` : `--runs ${runs}`
  console.log(`seed ${seed}, ${budget} per target`)
  let failed = false
  for (const target of targets) {
    const r = fuzz(target, { seed, runs, seconds })
    const rate = Math.round((r.execs * 1000) / Math.max(1, r.elapsedMs))
    console.log(
      `${r.target}: ${r.execs} execs in ${(r.elapsedMs / 1000).toFixed(1)} s (${rate}/s), ` +
        `corpus ${r.seedCount} -> ${r.corpusSize}, ${r.blocks} blocks, ${r.findings.length} findings`
    )
    for (const f of r.findings) {
      failed = true
      const file = save(f)
      console.log(describeFinding(f))
      console.log(`  saved: ${file}`)
      console.log(`  replay: ${CLI} --target ${f.target} --replay ${file}`)
      console.log(`  rerun:  ${CLI} --target ${f.target} --seed ${seed} --runs ${f.exec + 1}`)
    }
  }
  process.exitCode = failed ? 1 : 0
}

main()
