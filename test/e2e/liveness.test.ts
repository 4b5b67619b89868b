// Ping/stale detection, auth timeout and RTT, with time driven by Effect's TestClock.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { startNatsServer } from "../../src/server/run.js"
import { RawClient, testOptions } from "../helpers/server.js"

const withServer = (over: Parameters<typeof testOptions>[0], lines: Array<string> = []) =>
  startNatsServer(testOptions(over)).pipe(Effect.provide(Layer.merge(layerNode, layerMemoryLog(lines))))

describe("liveness", () => {
  it.scoped("pings an idle client every ping_interval and closes it as stale after ping_max unanswered", () =>
    Effect.gen(function*() {
      const running = yield* withServer({ pingIntervalMs: 60_000, pingMax: 2 })
      const c = yield* Effect.promise(() => RawClient.ready(running.port))
      yield* TestClock.adjust("60 seconds")
      yield* Effect.promise(() => c.waitFor("PING\r\n"))
      c.data = ""
      yield* TestClock.adjust("60 seconds")
      yield* Effect.promise(() => c.waitFor("PING\r\n"))
      expect(c.closed).toBe(false)
      yield* TestClock.adjust("60 seconds")
      yield* Effect.promise(() => c.waitFor("-ERR 'Stale Connection'\r\n"))
      yield* Effect.promise(() => c.waitClosed())
      expect(running.server.staleConnections).toBe(1)
      expect(running.server.closed.toArray().at(-1)?.reason).toBe("Stale Connection")
    }))

  it.scoped("a client that answers PINGs stays connected", () =>
    Effect.gen(function*() {
      const running = yield* withServer({ pingIntervalMs: 60_000, pingMax: 2 })
      const c = yield* Effect.promise(() => RawClient.ready(running.port))
      for (let i = 0; i < 5; i++) {
        c.data = ""
        yield* TestClock.adjust("60 seconds")
        yield* Effect.promise(() => c.waitFor("PING\r\n"))
        c.send("PONG\r\nPING\r\n")
        yield* Effect.promise(() => c.waitFor("PONG\r\n"))
      }
      expect(c.closed).toBe(false)
      expect(running.server.staleConnections).toBe(0)
      c.close()
    }))

  it.scoped("closes a client that never sends CONNECT within the auth timeout when auth is required", () =>
    Effect.gen(function*() {
      const running = yield* withServer({
        authorization: { user: undefined, password: undefined, token: "s3cr3t", users: [], timeoutMs: 2_000, defaultPermissions: undefined }
      })
      const c = yield* Effect.promise(() => RawClient.connect(running.port))
      yield* Effect.promise(() => c.waitFor("auth_required"))
      yield* TestClock.adjust("3 seconds")
      yield* Effect.promise(() => c.waitFor("-ERR 'Authentication Timeout'\r\n"))
      yield* Effect.promise(() => c.waitClosed())
      expect(running.server.closed.toArray().at(-1)?.reason).toBe("Authentication Timeout")
    }))

  it.scoped("closes a subscriber whose socket makes no progress for write_deadline as a slow consumer", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const running = yield* withServer({ writeDeadlineMs: 5_000, maxPending: 512 * 1024 * 1024 }, lines)
      const stuck = yield* Effect.promise(() => RawClient.ready(running.port))
      stuck.send("SUB firehose 1\r\nPING\r\n")
      yield* Effect.promise(() => stuck.waitFor("PONG\r\n"))
      stuck.pause()
      const pub = yield* Effect.promise(() => RawClient.ready(running.port))
      const payload = "x".repeat(8192)
      const batch = `PUB firehose ${payload.length}\r\n${payload}\r\n`.repeat(500)
      const stuckClient = [...running.server.clients.values()][0]
      // Keep publishing until the kernel buffers are full and the transport holds bytes.
      yield* Effect.promise(async () => {
        for (let i = 0; i < 200 && stuckClient.transportPending === 0; i++) {
          pub.send(batch)
          pub.send("PING\r\n")
          await pub.waitFor("PONG\r\n")
          pub.data = ""
        }
      })
      expect(stuckClient.transportPending).toBeGreaterThan(0)
      expect(stuckClient.closed).toBe(false)
      yield* TestClock.adjust("6 seconds")
      expect(stuckClient.closed).toBe(true)
      expect(running.server.slowConsumers).toBe(1)
      expect(running.server.closed.toArray().at(-1)?.reason).toBe("Slow Consumer (Write Deadline)")
      expect(pub.closed).toBe(false)
      stuck.close()
      pub.close()
    }))
})
