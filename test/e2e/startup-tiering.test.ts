// V8's optimizing compiler held back during start-up and given back (src/startup-tiering.ts),
// checked in a real Node process with V8's own report on a function: while held it is not
// optimized by TurboFan even when asked to be; once released it is. On V8 11 (Node 20)
// nothing is held. This guards against a runtime that would not take the compiler back.
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const MODULE = path.resolve("dist/src/startup-tiering.js")

const SCRIPT = `
const { holdOptimizer, releaseOptimizer, optimizerHeld } = await import(${JSON.stringify(MODULE)})
function f(a, b) { return a * b + 1 }
// V8's status bit 64: the function runs TurboFan code.
const turbofanned = () => { %PrepareFunctionForOptimization(f); f(1, 2); f(2, 3); %OptimizeFunctionOnNextCall(f); f(3, 4); return (%GetOptimizationStatus(f) & 64) !== 0 }
holdOptimizer()
const held = optimizerHeld()
const whileHeld = turbofanned()
releaseOptimizer()
console.log(JSON.stringify({ held, whileHeld, afterRelease: turbofanned(), heldAfterRelease: optimizerHeld() }))
`

describe("the optimizing compiler during start-up", () => {
  it("is held back on V8 12 and later, and optimizes again once released", () => {
    const r = spawnSync(process.execPath, ["--allow-natives-syntax", "--input-type=module", "-e", SCRIPT], {
      encoding: "utf8",
      env: { ...process.env, NODE_OPTIONS: "" },
      timeout: 60_000
    })
    expect(r.stderr).toBe("")
    const v8Major = Number(process.versions.v8.split(".")[0])
    const held = v8Major >= 12
    expect(JSON.parse(r.stdout)).toEqual({ held, whileHeld: !held, afterRelease: true, heldAfterRelease: false })
  })
})
