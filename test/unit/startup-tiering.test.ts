// When V8's optimizing compiler is held back during start-up (src/startup-tiering.ts):
// on V8 12 and later only, never when the operator set tiering flags, and until the
// server is busy.
import { describe, expect, it } from "vitest"
import { holdsOptimizer, RELEASE_BYTES, RELEASE_CPU_MS, ReleasePolicy } from "../../src/startup-tiering.js"

describe("holding the optimizing compiler during start-up", () => {
  it("holds it on V8 12 and later, not on V8 11 (Node 20)", () => {
    expect(holdsOptimizer("12.4.254.21-node.33", [], undefined)).toBe(true)
    expect(holdsOptimizer("13.6.233.10-node.1", [], "")).toBe(true)
    expect(holdsOptimizer("11.3.244.8-node.30", [], undefined)).toBe(false)
  })

  it("leaves tiering alone when the command line or NODE_OPTIONS set it", () => {
    for (const flag of ["--jitless", "--no-turbofan", "--turbofan", "--max-opt=2", "--no-opt", "--maglev", "--no-sparkplug"]) {
      expect([flag, holdsOptimizer("12.4.254.21", [flag], undefined)]).toEqual([flag, false])
      expect([flag, holdsOptimizer("12.4.254.21", [], `--enable-source-maps ${flag}`)]).toEqual([flag, false])
    }
  })

  it("is not put off by other options that merely contain those words", () => {
    expect(holdsOptimizer("12.4.254.21", ["--enable-source-maps", "--max-old-space-size=512"], "--optimize-for-size-not-really --trace-opt-verbose")).toBe(true)
  })
})

describe("when the optimizing compiler comes back", () => {
  const cpu = (ms: number) => () => ms

  it("when start-up itself runs long, not once the server is up", () => {
    expect(new ReleasePolicy().startupTimedOut()).toBe(true)
    const p = new ReleasePolicy()
    p.serverReady(50)
    expect(p.startupTimedOut()).toBe(false)
  })

  it("not for reads before the server is up, nor for probes and health checks after", () => {
    const p = new ReleasePolicy()
    expect(p.read(10 * RELEASE_BYTES, cpu(10_000))).toBe(false)
    p.serverReady(200)
    for (let i = 0; i < 1000; i++) expect(p.read(200, cpu(200 + i * 0.05))).toBe(false)
  })

  it("after RELEASE_BYTES read since the server was up", () => {
    const p = new ReleasePolicy()
    p.serverReady(0)
    expect(p.read(RELEASE_BYTES - 1, cpu(0))).toBe(false)
    expect(p.read(1, cpu(0))).toBe(true)
  })

  it("after RELEASE_CPU_MS of CPU time since the server was up, however few the bytes", () => {
    const p = new ReleasePolicy()
    p.serverReady(300)
    expect(p.read(40, cpu(300 + RELEASE_CPU_MS - 1))).toBe(false)
    expect(p.read(40, cpu(300 + RELEASE_CPU_MS))).toBe(true)
  })
})
