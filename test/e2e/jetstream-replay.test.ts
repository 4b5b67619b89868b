// Replaying a stream much larger than the file store's block cache through a pull
// consumer, with block reads counted through the Disk port. Regression: every
// message of a block not in memory re-read the whole block (several times over),
// so replay cost grew with the stream's size; now each block is read about once.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { connect } from "@nats-io/transport-node"
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream"
import { Disk, type DiskService } from "../../src/services/disk.js"
import { makeNodeDisk } from "../../src/services/disk-node.js"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerFile } from "../../src/services/store-file.js"
import { layerNode } from "../../src/services/transport-node.js"
import { startNatsServer } from "../../src/server/run.js"
import { startJetStream } from "../../src/server/jetstream/start.js"
import { testOptions } from "../helpers/server.js"

/** Whole-block reads and positioned record reads of block files, counted when asked for. */
const countingDisk = () => {
  const reads = { wholeBlocks: 0, records: 0 }
  const base = makeNodeDisk()
  const disk: DiskService = {
    ...base,
    readFile: (p) => Effect.suspend(() => {
      if (p.endsWith(".blk")) reads.wholeBlocks++
      return base.readFile(p)
    }),
    open: (p, create) =>
      Effect.map(base.open(p, create), (f) => ({
        ...f,
        read: (position: number, length: number) => Effect.suspend(() => {
          if (p.endsWith(".blk")) reads.records++
          return f.read(position, length)
        })
      }))
  }
  return { reads, layer: Layer.succeed(Disk, disk) }
}

const COUNT = 400

describe("pull consumer replay from disk", () => {
  it.scoped("reads each block about once, not once per message", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-replay-"))),
        (d) => Effect.sync(() => fs.rmSync(d, { recursive: true, force: true }))
      )
      const disk = countingDisk()
      const store = layerFile(dir, { blockSize: 4096, cacheBlocks: 1 }).pipe(Layer.provide(disk.layer))
      const options = testOptions({ jetstream: { storeDir: dir, maxMemory: -1, maxStorage: -1 } })
      const layer = Layer.mergeAll(layerNode, layerMemoryLog([]), store)
      const running = yield* Effect.gen(function*() {
        const running = yield* startNatsServer(options)
        yield* startJetStream(running.server, options.jetstream!)
        return running
      }).pipe(Effect.provide(layer))
      const nc = yield* Effect.acquireRelease(
        Effect.promise(() => connect({ servers: `127.0.0.1:${running.port}`, reconnect: false })),
        (nc) => Effect.promise(() => nc.close())
      )
      const jsm = yield* Effect.promise(() => jetstreamManager(nc, { timeout: 20_000, checkAPI: false }))
      const js = jetstream(nc, { timeout: 20_000 })
      yield* Effect.promise(() => jsm.streams.add({ name: "R", subjects: ["r.>"] }))
      const payload = (i: number) => Buffer.from(`m${i}:`.padEnd(300, "."))
      yield* Effect.promise(async () => {
        for (let i = 0; i < COUNT; i += 50) await Promise.all(Array.from({ length: 50 }, (_, k) => js.publish("r.x", payload(i + k + 1))))
      })
      const blocks = fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((n) => n.endsWith(".blk")).length
      expect(blocks).toBeGreaterThan(20)
      const before = { ...disk.reads }

      yield* Effect.promise(() => jsm.consumers.add("R", { durable_name: "C", ack_policy: AckPolicy.None }))
      const consumer = yield* Effect.promise(() => js.consumers.get("R", "C"))
      const got: string[] = []
      yield* Effect.promise(async () => {
        while (got.length < COUNT) {
          const batch = await consumer.fetch({ max_messages: 100, expires: 10_000 })
          for await (const m of batch) got.push(Buffer.from(m.data).toString("latin1"))
        }
      })
      expect(got).toEqual(Array.from({ length: COUNT }, (_, i) => payload(i + 1).toString("latin1")))
      // Each block: one record read that reveals the scan, then the block once.
      expect(disk.reads.wholeBlocks - before.wholeBlocks).toBeLessThanOrEqual(blocks)
      expect(disk.reads.records - before.records).toBeLessThanOrEqual(blocks)
    }), 60_000)
})
