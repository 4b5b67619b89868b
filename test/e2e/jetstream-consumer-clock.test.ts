// Consumer timing runs on Effect's Clock: under TestClock, ack_wait redelivery and pull
// expiry happen exactly when the test moves time, not when wall-clock time passes.
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { AckPolicy } from "@nats-io/jetstream"
import { serveJsScoped } from "../helpers/jetstream.js"

describe("consumer timers under TestClock", () => {
  it.scoped("redelivers an unacknowledged message after ack_wait, and not before", () =>
    Effect.gen(function*() {
      const { jsm, js, nc } = yield* serveJsScoped
      yield* Effect.promise(() => jsm.streams.add({ name: "CLOCK", subjects: ["clock.>"] }))
      yield* Effect.promise(() =>
        jsm.consumers.add("CLOCK", { durable_name: "c", ack_policy: AckPolicy.Explicit, ack_wait: 30_000_000_000 })
      )
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
