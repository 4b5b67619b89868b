// Removed messages' space is reclaimed on the subsystem's clock: after a purge, the
// next compaction round (TestClock moved past it) shrinks the stream's files on disk.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { connect } from "@nats-io/transport-node"
import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { serve } from "../../src/server/serve.js"
import { eventually, testOptions } from "../helpers/server.js"

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
      const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), "sy-js-compact-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(storeDir, { recursive: true, force: true })))
      const running = yield* serve(testOptions({ jetstream: { storeDir, maxMemory: -1, maxStorage: -1 } })).pipe(
        Effect.provide(Layer.merge(layerNode, layerMemoryLog([])))
      )
      const nc = yield* Effect.acquireRelease(
        Effect.promise(() => connect({ servers: `127.0.0.1:${running.port}`, reconnect: false })),
        (nc) => Effect.promise(() => nc.close())
      )
      const jsm = yield* Effect.promise(() => jetstreamManager(nc, { checkAPI: false }))
      yield* Effect.promise(() => jsm.streams.add({ name: "BIG", subjects: ["big"] }))
      const js = jetstream(nc)
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
