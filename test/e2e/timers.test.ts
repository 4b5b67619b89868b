// No periodic work when nothing happens: the server's timers (clients' deadlines, MQTT
// keep-alives, the stream subsystem's consumers, expiry, sync and compaction) run only
// when a client, a consumer, a deadline or a compaction asks for them, under TestClock.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { connect } from "nats"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { serve } from "../../src/server/serve.js"
import { COMPACT_AFTER_MS } from "../../src/server/jetstream/jetstream.js"
import { connectMqtt, eventually, mqttOptions } from "../helpers/mqtt.js"
import { RawClient, testOptions } from "../helpers/server.js"

const storeDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "sy-timers-"))),
  (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true }))
)

/** NATS, MQTT and JetStream on a file store, as the embedded default runs them. */
const serveAll = Effect.gen(function*() {
  const dir = yield* storeDir
  return yield* serve(
    testOptions({ mqtt: mqttOptions(), jetstream: { storeDir: dir, maxMemory: -1, maxStorage: -1 } })
  ).pipe(Effect.provide(Layer.merge(layerNode, layerMemoryLog([]))))
})

const settle = TestClock.adjust(0)

describe("timers run only on demand", () => {
  it.scoped("an idle server with JetStream and MQTT on arms no timer at all", () =>
    Effect.gen(function*() {
      const s = yield* serveAll
      yield* TestClock.adjust("1 hour")
      expect([s.alarm.runs(), s.mqtt!.alarm!.runs(), s.jetstream!.alarm!.runs()]).toEqual([0, 0, 0])
      expect([s.alarm.armedAt(), s.mqtt!.alarm!.armedAt(), s.jetstream!.alarm!.armedAt()]).toEqual([Infinity, Infinity, Infinity])
    }))

  it.scoped("a NATS client arms its ping deadline; once it is gone the timer rests", () =>
    Effect.gen(function*() {
      const s = yield* serveAll
      const c = yield* Effect.promise(() => RawClient.ready(s.port))
      yield* settle
      expect(s.alarm.armedAt()).toBe(s.server.options.pingIntervalMs)
      yield* TestClock.adjust(s.server.options.pingIntervalMs)
      yield* Effect.promise(() => c.waitFor("PING\r\n"))
      c.close()
      yield* Effect.promise(() => eventually(() => s.server.clients.size === 0, "the client to be gone"))
      const runs = s.alarm.runs()
      yield* TestClock.adjust("1 hour")
      // One more run finds nobody, then nothing is armed.
      expect(s.alarm.runs()).toBeLessThanOrEqual(runs + 1)
      expect(s.alarm.armedAt()).toBe(Infinity)
    }))

  it.scoped("an MQTT client's keep-alive arms the MQTT timer, which rests after it leaves", () =>
    Effect.gen(function*() {
      const s = yield* serveAll
      const m = yield* Effect.promise(() => connectMqtt(`mqtt://127.0.0.1:${s.mqtt!.port}`, { clientId: "t1", keepalive: 30 }))
      // First the CONNECT timeout (auth_timeout, 2 s) it was armed for at accept; that run
      // finds the session connected and arms 1.5 x keep-alive.
      yield* settle
      expect(s.mqtt!.alarm!.armedAt()).toBe(2_000)
      yield* TestClock.adjust("2 seconds")
      expect(s.mqtt!.alarm!.armedAt()).toBe(45_000)
      yield* Effect.promise(() => m.client.endAsync())
      yield* Effect.promise(() => eventually(() => s.mqtt!.connectedClient("t1") === undefined, "the client to be gone"))
      yield* TestClock.adjust("1 hour")
      expect(s.mqtt!.alarm!.armedAt()).toBe(Infinity)
    }))

  it.scoped("a stream write arms one compaction a while later, and then nothing", () =>
    Effect.gen(function*() {
      const s = yield* serveAll
      const nc = yield* Effect.acquireRelease(
        Effect.promise(() => connect({ servers: `127.0.0.1:${s.port}`, reconnect: false })),
        (nc) => Effect.promise(() => nc.close())
      )
      yield* Effect.promise(() => nc.request("$JS.API.STREAM.CREATE.T", JSON.stringify({ name: "T", subjects: ["t"] })))
      const written = yield* TestClock.currentTimeMillis
      yield* Effect.promise(() => nc.request("t", "x"))
      yield* settle
      const js = s.jetstream!.alarm!
      expect(js.armedAt()).toBe(written + COMPACT_AFTER_MS)
      yield* TestClock.adjust(COMPACT_AFTER_MS)
      yield* Effect.promise(() => eventually(() => js.runs() >= 1, "the compaction run"))
      yield* settle
      expect(js.armedAt()).toBe(Infinity)
    }))
})
