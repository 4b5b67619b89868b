// Error replies to clients never name server files: a storage failure tells the client
// what failed (ENOENT, ENOSPC, …) while the file it happened to stays in the server log.
import { rmSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { withoutPaths } from "../../src/services/disk-node.js"
import { apiError, useJsServer } from "../helpers/jetstream.js"

const t = useJsServer({ client: false })

describe("storage errors in replies", () => {
  it("a stream delete that fails on disk says why, without the store's path", async () => {
    const { jsm, js } = await t.client()
    await jsm.streams.add({ name: "PATHS", subjects: ["paths.>"] })
    await js.publish("paths.a", "x")
    // The stream's folder vanishes under the running server (an operator's rm, a bad mount).
    rmSync(t.storeDir, { recursive: true, force: true })
    const err = await apiError(jsm.streams.delete("PATHS"))
    expect(err.description).toMatch(/ENOENT/)
    expect(err.description).not.toContain(t.storeDir)
    expect(err.description).not.toMatch(/\.blk|%24G|\/tmp\//)
  })
})

describe("withoutPaths", () => {
  it("drops the file names Node puts in its messages, and keeps the rest", () => {
    const e = Object.assign(new Error("ENOENT: no such file or directory, open '/var/lib/sy/%24G%2FX/msgs/1.blk'"), {
      code: "ENOENT",
      path: "/var/lib/sy/%24G%2FX/msgs/1.blk"
    })
    expect(withoutPaths(e)).toBe("ENOENT: no such file or directory, open")
    const r = Object.assign(new Error("EXDEV: cross-device link not permitted, rename '/a/b.tmp' -> '/c/d'"), {
      code: "EXDEV",
      path: "/a/b.tmp",
      dest: "/c/d"
    })
    expect(withoutPaths(r)).toBe("EXDEV: cross-device link not permitted, rename")
    expect(withoutPaths(new Error("ENOSPC: no space left on device, write"))).toBe("ENOSPC: no space left on device, write")
  })
})
