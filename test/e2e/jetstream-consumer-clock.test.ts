// Consumer timing runs on Effect's Clock: under TestClock, ack_wait redelivery and pull
// expiry happen exactly when the test moves time, not when wall-clock time passes.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { connect } from "@nats-io/transport-node"
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { serve } from "../../src/server/serve.js"
import { testOptions } from "../helpers/server.js"

describe("consumer timers under TestClock", () => {
  it.scoped("redelivers an unacknowledged message after ack_wait, and not before", () =>
    Effect.gen(function*() {
      const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), "sy-js-clock-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(storeDir, { recursive: true, force: true })))
      const running = yield* serve(testOptions({ jetstream: { storeDir, maxMemory: -1, maxStorage: -1 } })).pipe(
        Effect.provide(Layer.merge(layerNode, layerMemoryLog([])))
      )
      const nc = yield* Effect.acquireRelease(
        Effect.promise(() => connect({ servers: `127.0.0.1:${running.port}`, reconnect: false })),
        (nc) => Effect.promise(() => nc.close())
      )
      const jsm = yield* Effect.promise(() => jetstreamManager(nc, { checkAPI: false }))
      yield* Effect.promise(() => jsm.streams.add({ name: "CLOCK", subjects: ["clock.>"] }))
      yield* Effect.promise(() =>
        jsm.consumers.add("CLOCK", { durable_name: "c", ack_policy: AckPolicy.Explicit, ack_wait: 30_000_000_000 })
      )
      const js = jetstream(nc)
      yield* Effect.promise(() => js.publish("clock.a", "one"))
      const consumer = yield* Effect.promise(() => js.consumers.get("CLOCK", "c"))
      const first = yield* Effect.promise(() => consumer.next({ expires: 5_000 }))
      expect(first?.string()).toBe("one")
      expect(first?.info.redelivered).toBe(false)

      // 29 s later nothing is due: the message is still pending, not redelivered.
      yield* TestClock.adjust("29 seconds")
      const pending = yield* Effect.promise(() => jsm.consumers.info("CLOCK", "c"))
      expect(pending.num_ack_pending).toBe(1)
      expect(pending.num_redelivered).toBe(0)

      // Past ack_wait the consumer makes it available again, marked redelivered.
      yield* TestClock.adjust("2 seconds")
      const again = yield* Effect.promise(() => consumer.next({ expires: 5_000 }))
      expect(again?.string()).toBe("one")
      expect(again?.info.redelivered).toBe(true)
      expect(again?.info.deliveryCount).toBe(2)
      again?.ack()
      yield* Effect.promise(() => nc.flush())
    }))
})
