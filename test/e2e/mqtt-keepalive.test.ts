// Keepalive runs on Effect's Clock: under TestClock a silent client is closed once
// 1.5 x keepalive has passed, and its will published [MQTT-3.1.2-24], not before.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { serve } from "../../src/server/serve.js"
import { connectMqtt, eventually, mqttOptions } from "../helpers/mqtt.js"
import { testOptions } from "../helpers/server.js"

describe("MQTT keepalive under TestClock", () => {
  it.scoped("closes a client silent for 1.5 x keepalive and publishes its will", () =>
    Effect.gen(function*() {
      const running = yield* serve(testOptions({ mqtt: mqttOptions() })).pipe(
        Effect.provide(Layer.merge(layerNode, layerMemoryLog([])))
      )
      const bridge = running.mqtt!
      const url = `mqtt://127.0.0.1:${bridge.port}`
      const watcher = yield* Effect.acquireRelease(
        Effect.promise(() => connectMqtt(url, { clientId: "ka-watch", keepalive: 0 })),
        (w) => Effect.sync(() => w.client.end(true))
      )
      yield* Effect.promise(() => watcher.client.subscribeAsync("ka/will", { qos: 0 }))
      // mqtt.js pings on its own wall-clock timer after 60 s: it stays silent for the whole test.
      const silent = yield* Effect.acquireRelease(
        Effect.promise(() =>
          connectMqtt(url, { clientId: "ka-silent", keepalive: 60, will: { topic: "ka/will", payload: Buffer.from("timed out"), qos: 0, retain: false } })
        ),
        (s) => Effect.sync(() => s.client.end(true))
      )

      yield* TestClock.adjust("89 seconds")
      expect(bridge.connectedClient("ka-silent")).toBeDefined()
      expect(watcher.received).toEqual([])

      yield* TestClock.adjust("2 seconds")
      yield* Effect.promise(() => watcher.waitFor((r) => r.topic === "ka/will"))
      expect(watcher.received.map((r) => r.payload)).toEqual(["timed out"])
      yield* Effect.promise(() => eventually(() => !silent.client.connected, "the silent client to be disconnected"))
      expect(bridge.connectedClient("ka-silent")).toBeUndefined()
      // The watcher (keepalive 0) is never timed out.
      expect(bridge.connectedClient("ka-watch")).toBeDefined()
    }))
})
