// A PubAck means durable: the server answers only after the store's sync() covering
// the message completed. The store here is the memory store with a sync that waits
// for the test to open a gate, so "stored but not yet synced" can be observed.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { layerMemoryLog } from "../../src/services/log.js"
import { makeMemoryStore } from "../../src/services/store-memory.js"
import { Store, type StoreService, type StreamStore } from "../../src/services/store.js"
import { layerNode } from "../../src/services/transport-node.js"
import { startNatsServer } from "../../src/server/run.js"
import type { JetStream } from "../../src/server/jetstream/jetstream.js"
import { startJetStream } from "../../src/server/jetstream/start.js"
import { eventually, testOptions } from "../helpers/server.js"

/** Every stream's sync() waits until `open()` is called (and counts its calls). */
const gatedStore = () => {
  let release: () => void = () => {}
  let gate = new Promise<void>((r) => (release = r))
  const state = { syncs: 0 }
  const inner = makeMemoryStore()
  const wrap = (s: StreamStore): StreamStore => ({
    ...s,
    sync: () =>
      Effect.suspend(() => {
        state.syncs++
        return Effect.zipRight(Effect.promise(() => gate), s.sync())
      })
  })
  const service: StoreService = {
    create: (name, cfg) => Effect.map(inner.create(name, cfg), wrap),
    open: (name) => Effect.map(inner.open(name), wrap),
    delete: inner.delete,
    list: inner.list
  }
  return {
    service,
    state,
    open: () => release(),
    close: () => {
      gate = new Promise<void>((r) => (release = r))
    }
  }
}

describe("acknowledged means durable", () => {
  const store = gatedStore()
  const scope = Effect.runSync(Scope.make())
  let js: JetStream
  let nc: NatsConnection
  beforeAll(async () => {
    const lines: string[] = []
    const options = testOptions({ jetstream: { storeDir: "unused", maxMemory: -1, maxStorage: -1 } })
    const layer = Layer.mergeAll(layerNode, layerMemoryLog(lines), Layer.succeed(Store, store.service))
    const running = await Effect.runPromise(
      Effect.gen(function*() {
        const r = yield* startNatsServer(options)
        js = yield* startJetStream(r.server, options.jetstream!)
        return r
      }).pipe(Effect.provide(layer), Scope.extend(scope))
    )
    nc = await connect({ servers: `127.0.0.1:${running.port}`, reconnect: false })
  })
  afterAll(async () => {
    store.open()
    await nc.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  it("sends the PubAck only after sync() completed, one sync for a burst of publishes", async () => {
    const jsm = await jetstreamManager(nc, { timeout: 10_000 })
    await jsm.streams.add({ name: "DURABLE", subjects: ["durable"] })
    const client = jetstream(nc, { timeout: 20_000 })
    let acked = 0
    const pubs = Array.from({ length: 20 }, (_, i) => client.publish("durable", `${i}`).then((a) => (acked++, a)))
    const stream = () => js.accounts.get("$G")!.streams.get("DURABLE")!
    // Stored (visible) but not yet durable: no ack has gone out.
    await eventually(() => stream().store.state().messages === 20 && store.state.syncs >= 1, "the publishes to be stored")
    await nc.flush()
    expect(acked).toBe(0)
    store.open()
    const acks = await Promise.all(pubs)
    expect(acks.map((a) => a.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
    // The first publish started a sync; everything that arrived while it ran shares the next one.
    expect(store.state.syncs).toBeLessThanOrEqual(3)
  })
})
