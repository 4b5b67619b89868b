// MQTT 5.0: a retained message whose Message Expiry Interval runs out leaves `$MQTT_rmsgs`
// when it does, with no subscriber looking it up; the MQTT timer is armed for that end and
// rests once nothing waits (the idle rule). The whole server on a file store under TestClock.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { serve } from "../../src/server/serve.js"
import { connectMqtt, mqttOptions } from "../helpers/mqtt.js"
import { testOptions } from "../helpers/server.js"

const storeDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "sy-rexp-"))),
  (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true }))
)

describe("expired retained messages leave the store on time", () => {
  it.scoped("[MQTT-3.3.2-5] removed from $MQTT_rmsgs when the interval runs out; the timer then rests", () =>
    Effect.gen(function*() {
      const dir = yield* storeDir
      const s = yield* serve(testOptions({ mqtt: mqttOptions({ protocolVersions: [4, 5] }), jetstream: { storeDir: dir, maxMemory: -1, maxStorage: -1 } })).pipe(
        Effect.provide(Layer.merge(layerNode, layerMemoryLog([])))
      )
      const pub = yield* Effect.acquireRelease(
        Effect.promise(() => connectMqtt(`mqtt://127.0.0.1:${s.mqtt!.port}`, { clientId: "rexp", keepalive: 0, protocolVersion: 5 })),
        (p) => Effect.promise(() => p.client.endAsync(true))
      )
      yield* Effect.promise(() => pub.client.publishAsync("state/short", "s", { qos: 1, retain: true, properties: { messageExpiryInterval: 60 } }))
      yield* Effect.promise(() => pub.client.publishAsync("state/kept", "k", { qos: 1, retain: true }))
      const nc = yield* Effect.acquireRelease(
        Effect.promise(() => connect({ servers: `127.0.0.1:${s.port}`, reconnect: false })),
        (nc) => Effect.promise(() => nc.close())
      )
      const jsm = yield* Effect.promise(() => jetstreamManager(nc))
      const stored = () => Effect.promise(async () => (await jsm.streams.info("$MQTT_rmsgs")).state.messages)
      expect(yield* stored()).toBe(2)
      // the CONNECT timeout first, then the end of the retained message
      yield* TestClock.adjust("2 seconds")
      expect(s.mqtt!.alarm!.armedAt()).toBe(60_001)
      yield* TestClock.adjust("57 seconds")
      expect(yield* stored()).toBe(2)
      yield* TestClock.adjust("1001 millis")
      expect(yield* stored()).toBe(1)
      expect(s.mqtt!.alarm!.armedAt()).toBe(Infinity)
    }))
})
