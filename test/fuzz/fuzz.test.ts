// The fuzz targets within a fixed budget of runs and fixed seeds (deterministic, about
// half a minute), and proof that coverage guidance works: the corpus grows past the
// seeds, and a bug behind a four-byte magic prefix is found only with feedback.
import { describe, expect, it } from "vitest"
import { describeFinding, fuzz, type FuzzResult, type FuzzTarget } from "../../src/fuzz/engine.js"
import { configTarget, mqtt5Target, mqttTarget, natsTarget, subjectTarget } from "../../src/fuzz/targets.js"

const RUNS = 40_000
/** Inputs kept beyond the seeds; each target keeps 18-35 with these seeds. */
const GROWN = 10

const noFindings = (r: FuzzResult): void => {
  expect(r.findings.map(describeFinding).join("\n\n")).toBe("")
  expect(r.execs).toBe(RUNS)
}

describe("fuzz targets hold their properties", () => {
  for (const [target, seed] of [
    [natsTarget, 1],
    [mqttTarget, 2],
    [configTarget, 3],
    [subjectTarget, 4],
    [mqtt5Target, 5]
  ] as const) {
    it(`${target.name}: ${RUNS} runs from seed ${seed}`, () => {
      const r = fuzz(target, { seed, runs: RUNS })
      console.log(`${target.name}: corpus ${r.seedCount} -> ${r.corpusSize}, ${r.blocks} blocks, ${r.elapsedMs} ms`)
      noFindings(r)
      expect(r.corpusSize).toBeGreaterThanOrEqual(r.seedCount + GROWN)
    })
  }
})

// Found by the config target: `$name` fell back to the environment with a plain
// property read, so a name on Object.prototype (constructor, toString, __proto__)
// yielded a function, and parsing threw a TypeError instead of returning a ConfigError
// (with process.env too: the server died on `port: $toString`).
describe("config target findings", () => {
  it("a $variable named like an Object.prototype member is a ConfigError, not a TypeError", () => {
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) configTarget.run(Buffer.from(`port: $${name}\n`))
  })
})

/** Throws only for inputs starting "FUZZ": each byte is its own block for coverage to reward. */
const magic: FuzzTarget = {
  name: "magic",
  seeds: [Buffer.from("hello")],
  dictionary: [],
  maxLength: 16,
  coverage: ["/test/fuzz/"],
  run: (b) => {
    if (b[0] === 0x46) {
      if (b[1] === 0x55) {
        if (b[2] === 0x5a) {
          if (b[3] === 0x5a) {
            throw new Error("planted bug")
          }
        }
      }
    }
  }
}

describe("coverage guidance", () => {
  it("finds a bug behind a four-byte magic prefix, which blind mutation does not", () => {
    const guided = fuzz(magic, { seed: 7, runs: 200_000 })
    expect(guided.findings).toHaveLength(1)
    expect(guided.findings[0].input.subarray(0, 4).toString()).toBe("FUZZ")
    const blind = fuzz(magic, { seed: 7, runs: guided.execs, feedback: false })
    console.log(`magic prefix: found after ${guided.execs} runs guided (corpus ${guided.corpusSize}); blind: ${blind.findings.length} findings in as many runs`)
  })
})
