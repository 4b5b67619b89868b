import { describe, expect, it } from "vitest"
import { MMAP_THRESHOLD, OPT_OUT, tunedEnvironment, tunedExecArgv, YOUNG_FLOOR_MIB } from "../../src/malloc-tuning.js"

describe("tunedEnvironment", () => {
  it("adds MALLOC_MMAP_THRESHOLD_ on Linux when the process can be replaced, keeping the rest", () => {
    expect(tunedEnvironment({ PATH: "/bin", A: "1" }, "linux", true)).toEqual({ PATH: "/bin", A: "1", MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD })
  })

  it("starts again only once: a threshold already set (by the operator or a first start) is kept", () => {
    expect(tunedEnvironment({ MALLOC_MMAP_THRESHOLD_: "65536" }, "linux", true)).toBeUndefined()
    expect(tunedEnvironment({ MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD }, "linux", true)).toBeUndefined()
  })

  it("does nothing when asked not to, off Linux, or without process.execve", () => {
    expect(tunedEnvironment({ [OPT_OUT]: "1" }, "linux", true)).toBeUndefined()
    expect(tunedEnvironment({}, "darwin", true)).toBeUndefined()
    expect(tunedEnvironment({}, "linux", false)).toBeUndefined()
  })
})

describe("tunedExecArgv", () => {
  const floor = `--min-semi-space-size=${YOUNG_FLOOR_MIB}`

  it("gives V8 12 and later a young-generation floor, after the process's own options", () => {
    expect(tunedExecArgv(["--enable-source-maps"], undefined, "12.4.254.21-node.33")).toEqual(["--enable-source-maps", floor])
    expect(tunedExecArgv([], "", "13.6.233.10")).toEqual([floor])
  })

  it("leaves an older V8 (no idle trim shrinks its young generation) as it is", () => {
    expect(tunedExecArgv(["--inspect=0"], undefined, "11.3.244.8-node.30")).toEqual(["--inspect=0"])
  })

  it("leaves a young generation the operator sized, on the command line or in NODE_OPTIONS", () => {
    expect(tunedExecArgv(["--max-semi-space-size=2"], undefined, "12.4.254.21")).toEqual(["--max-semi-space-size=2"])
    expect(tunedExecArgv(["--min_semi_space_size", "1"], undefined, "12.4.254.21")).toEqual(["--min_semi_space_size", "1"])
    expect(tunedExecArgv([], "--max-old-space-size=512 --max-semi-space-size=4", "12.4.254.21")).toEqual([])
    expect(tunedExecArgv([], "--max-old-space-size=512", "12.4.254.21")).toEqual([floor])
  })
})
