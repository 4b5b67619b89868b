// Removed messages' space is reclaimed on the subsystem's clock: after a purge, the
// next compaction round (TestClock moved past it) shrinks the stream's files on disk.
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { serveJsScoped } from "../helpers/jetstream.js"
import { eventually } from "../helpers/server.js"

const diskBytes = (dir: string): number => {
  let n = 0
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += fs.statSync(path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).size
  }
  return n
}

describe("compaction", () => {
  it.scoped("reclaims the space of purged messages on the next compaction round", () =>
    Effect.gen(function*() {
      const { storeDir, jsm, js } = yield* serveJsScoped
      yield* Effect.promise(() => jsm.streams.add({ name: "BIG", subjects: ["big"] }))
      const payload = new Uint8Array(4096).fill(9)
      // ~20 MiB: more than two 8 MiB blocks, so whole sealed blocks become reclaimable.
      yield* Effect.promise(async () => {
        for (let i = 0; i < 5000; i += 250) {
          await Promise.all(Array.from({ length: 250 }, () => js.publish("big", payload)))
        }
      })
      const before = diskBytes(storeDir)
      expect(before).toBeGreaterThan(16 * 1024 * 1024)
      yield* Effect.promise(() => jsm.streams.purge("BIG", { keep: 10 }))
      yield* TestClock.adjust("61 seconds")
      yield* Effect.promise(() => eventually(() => diskBytes(storeDir) < before / 2, "compaction to shrink the files", 20_000))
      const info = yield* Effect.promise(() => jsm.streams.info("BIG"))
      expect(info.state.messages).toBe(10)
    }))
})
