// `sync_interval`: by default (and with `always`) a PubAck waits for the fsync that
// covers the message; with a duration it waits only for the write to the OS, and a
// timer on Effect's Clock fsyncs every stream each period. The store here is the
// memory store with a sync() that counts its calls and waits for a gate the test
// opens, so "acknowledged before any fsync" is observed without relying on timing.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Clock, Effect, Layer, TestClock } from "effect"
import { connect } from "@nats-io/transport-node"
import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import type { JetStreamOptions } from "../../src/config/options.js"
import { layerMemoryLog } from "../../src/services/log.js"
import { makeMemoryStore } from "../../src/services/store-memory.js"
import { Store, type StoreService, type StreamStore } from "../../src/services/store.js"
import { layerNode } from "../../src/services/transport-node.js"
import { startNatsServer } from "../../src/server/run.js"
import { startJetStream } from "../../src/server/jetstream/start.js"
import { getJson } from "../helpers/monitor.js"
import { startJsServer } from "../helpers/jetstream.js"
import { eventually, testOptions } from "../helpers/server.js"

/** Every stream's sync() is counted and waits for `open()`; flush() is counted. */
const gatedStore = () => {
  let release: () => void = () => {}
  const gate = new Promise<void>((r) => (release = r))
  const counts = { syncs: 0, synced: 0, flushes: 0 }
  const inner = makeMemoryStore()
  const wrap = (s: StreamStore): StreamStore => ({
    ...s,
    sync: () =>
      Effect.suspend(() => {
        counts.syncs++
        return Effect.zipRight(Effect.promise(() => gate), Effect.tap(s.sync(), () => void counts.synced++))
      }),
    flush: () =>
      Effect.suspend(() => {
        counts.flushes++
        return s.flush()
      })
  })
  const service: StoreService = {
    create: (name, cfg) => Effect.map(inner.create(name, cfg), wrap),
    open: (name) => Effect.map(inner.open(name), wrap),
    delete: inner.delete,
    list: inner.list
  }
  return { service, counts, open: () => release() }
}

/** The server and its stream subsystem in the test's scope (so under its TestClock), with one client. */
const serveWith = (syncInterval: JetStreamOptions["syncInterval"]) =>
  Effect.gen(function*() {
    const store = gatedStore()
    // Registered first, so it runs last: nothing stays blocked on the gate at teardown.
    yield* Effect.addFinalizer(() => Effect.sync(store.open))
    const options = testOptions({ jetstream: { storeDir: "unused", maxMemory: -1, maxStorage: -1, syncInterval } })
    const layer = Layer.mergeAll(layerNode, layerMemoryLog([]), Layer.succeed(Store, store.service))
    const { running, js } = yield* Effect.gen(function*() {
      const running = yield* startNatsServer(options)
      const js = yield* startJetStream(running.server, options.jetstream!)
      return { running, js }
    }).pipe(Effect.provide(layer))
    const nc = yield* Effect.acquireRelease(
      Effect.promise(() => connect({ servers: `127.0.0.1:${running.port}`, reconnect: false })),
      (nc) => Effect.promise(() => nc.close())
    )
    const jsm = yield* Effect.promise(() => jetstreamManager(nc, { timeout: 20_000, checkAPI: false }))
    return { store, js, nc, jsm, client: jetstream(nc, { timeout: 20_000 }) }
  })

/** Poll until `check` holds (the bound is generous; only a failure waits it out). */
const until = (check: Effect.Effect<boolean>, what: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 30_000
    while (!(yield* check)) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
    }
  })

describe("sync_interval", () => {
  it.scoped("with a duration, PubAcks go out before any fsync, and the timer fsyncs a period after a write", () =>
    Effect.gen(function*() {
      const { store, js, jsm, client } = yield* serveWith(10_000)
      yield* Effect.promise(() => jsm.streams.add({ name: "FAST", subjects: ["fast"] }))
      // Every sync() blocks on the closed gate, yet each publish is acknowledged.
      const acks = yield* Effect.promise(() => Promise.all(Array.from({ length: 5 }, (_, i) => client.publish("fast", `m${i}`))))
      expect(acks.map((a) => a.seq)).toEqual([1, 2, 3, 4, 5])
      expect(store.counts.syncs).toBe(0)
      expect(store.counts.flushes).toBeGreaterThanOrEqual(1)

      // No fsync before the period is up, then one.
      yield* TestClock.adjust("9 seconds")
      expect(store.counts.syncs).toBe(0)
      yield* TestClock.adjust("1 second")
      yield* Effect.promise(() => eventually(() => store.counts.syncs === 1, "the periodic fsync", 30_000))

      // Nothing written since: no fsync is armed, however long the server stays idle.
      store.open()
      yield* Effect.promise(() => eventually(() => store.counts.synced === 1, "the first fsync to complete", 30_000))
      yield* TestClock.adjust("1 hour")
      expect(store.counts.syncs).toBe(1)

      // The next write arms the next fsync, one period after it.
      yield* Effect.promise(() => client.publish("fast", "later"))
      const next = (yield* Clock.currentTimeMillis) + 10_000
      yield* until(Effect.map(TestClock.sleeps(), Chunk.some((at) => at === next)), "the timer to be set again")
      yield* TestClock.adjust("10 seconds")
      yield* Effect.promise(() => eventually(() => store.counts.syncs === 2, "the second periodic fsync", 30_000))
      expect(js.snapshot().config).toMatchObject({ syncIntervalMs: 10_000, syncAlways: false })
    }))

  it.scoped("with always, a PubAck waits for the fsync covering it", () =>
    Effect.gen(function*() {
      const { store, js, nc, jsm, client } = yield* serveWith("always")
      yield* Effect.promise(() => jsm.streams.add({ name: "SAFE", subjects: ["safe"] }))
      let acked = 0
      const pub = client.publish("safe", "x").then((a) => (acked++, a))
      const stored = () => js.accounts.get("$G")?.streams.get("SAFE")?.store.state().messages === 1
      yield* Effect.promise(() => eventually(() => stored() && store.counts.syncs >= 1, "the publish to be stored", 30_000))
      yield* Effect.promise(() => nc.flush())
      expect(acked).toBe(0)
      store.open()
      expect((yield* Effect.promise(() => pub)).seq).toBe(1)
      expect(js.snapshot().config).toMatchObject({ syncIntervalMs: undefined, syncAlways: true })
    }))
})

describe("sync_interval in /jsz", () => {
  it("shows sync_interval in nanoseconds with a duration, and sync_always by default", async () => {
    const timed = await startJsServer({ httpPort: 0 }, { syncInterval: 120_000 })
    const always = await startJsServer({ httpPort: 0 })
    try {
      const a = (await getJson(timed.srv.base, "/jsz")).json
      expect(a.config.sync_interval).toBe(120_000_000_000)
      expect(a.config.sync_always).toBeUndefined()
      const b = (await getJson(always.srv.base, "/jsz")).json
      expect(b.config.sync_interval).toBeUndefined()
      expect(b.config.sync_always).toBe(true)
    } finally {
      await timed.close()
      await always.close()
    }
  })
})
