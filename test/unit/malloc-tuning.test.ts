import { describe, expect, it } from "vitest"
import { MMAP_THRESHOLD, OPT_OUT, tunedEnvironment } from "../../src/malloc-tuning.js"

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
