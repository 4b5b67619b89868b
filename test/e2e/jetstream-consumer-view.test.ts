// The consumer's synchronous view of a real file store whose older blocks are only on
// disk: the machine still finds every matching message, in order, without waiting,
// and the positions agree with the store's own (asynchronous) reads.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { ConsumerMachine, type DeliverAction } from "../../src/core/consumer/index.js"
import { makeStoreConfig } from "../../src/core/stream/config.js"
import { layerNode } from "../../src/services/disk-node.js"
import { Store, type StreamStore } from "../../src/services/store.js"
import { layerFile } from "../../src/services/store-file.js"
import { storeView } from "../../src/server/jetstream/consumer.js"

const dir = mkdtempSync(join(tmpdir(), "switchyard-consumer-view-"))
const layer = () => layerFile(dir, { blockSize: 256, cacheBlocks: 1 }).pipe(Layer.provide(layerNode))

describe("consumer view of a file store", () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("finds messages in blocks that are only on disk", async () => {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function*() {
          const st = yield* (yield* Store).create("V", makeStoreConfig())
          for (let i = 1; i <= 60; i++) yield* st.store(i % 3 === 0 ? "v.a" : "v.b", undefined, Buffer.from(`payload-${i}`), 1_000 + i)
          yield* st.sync()
        }).pipe(Effect.provide(layer()))
      )
    )
    const inScope = <A>(f: (st: StreamStore) => Effect.Effect<A, unknown>) =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        return yield* f(yield* (yield* Store).open("V"))
      }).pipe(Effect.provide(layer()))))
    const expected = await inScope((st) =>
      Effect.gen(function*() {
        const seqs: number[] = []
        for (let m = yield* st.loadNextMatching(["v.a"], 1); m !== undefined; m = yield* st.loadNextMatching(["v.a"], m.seq + 1)) seqs.push(m.seq)
        return seqs
      })
    )
    // A fresh open: the first blocks are on disk only, so a synchronous read cannot answer.
    const { onDisk, seqs } = await inScope((st) =>
      Effect.sync(() => {
        const onDisk = Exit.isFailure(Effect.runSyncExit(st.loadNextMatching(["v.a"], 1)))
        const view = storeView(st)
        const machine = ConsumerMachine.create({ stream: "V", name: "c", config: { durable_name: "c", ack_policy: "explicit", filter_subject: "v.a" }, view }, 0)
        const out = machine.step({ type: "pull", request: { batch: 100, no_wait: true }, reply: "r" }, 1)
        return { onDisk, seqs: out.filter((a): a is DeliverAction => a.type === "deliver").map((a) => a.seq) }
      })
    )
    expect(onDisk).toBe(true)
    expect(expected).toHaveLength(20)
    expect(seqs).toEqual(expected)
  })
})
