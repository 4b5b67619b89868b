// MQTT 5.0: a QoS 1 message stored in `$MQTT_msgs` for an away persistent session carries
// its Message Expiry Interval as the stream's per-message TTL (`Nats-TTL`), so the stream
// removes it when the interval runs out, with nobody looking at it [MQTT-3.3.2-5]; the
// resumed session skips it. A `$MQTT_msgs` made before this is upgraded in place. The
// whole server on a file store under TestClock, mqtt.js v5 and nats.js.
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
import { eventuallyAsync } from "../helpers/jetstream.js"
import mqtt from "mqtt"
import { eventually, mqttOptions } from "../helpers/mqtt.js"
import { testOptions } from "../helpers/server.js"

const MSGS = "$MQTT_msgs"

const server = Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "sy-mexp-"))),
    (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true }))
  )
  const s = yield* serve(testOptions({ mqtt: mqttOptions({ protocolVersions: [4, 5] }), jetstream: { storeDir: dir, maxMemory: -1, maxStorage: -1 } })).pipe(
    Effect.provide(Layer.merge(layerNode, layerMemoryLog([])))
  )
  const nc = yield* Effect.acquireRelease(
    Effect.promise(() => connect({ servers: `127.0.0.1:${s.port}`, reconnect: false })),
    (nc) => Effect.promise(() => nc.close())
  )
  const jsm = yield* Effect.promise(() => jetstreamManager(nc, { checkAPI: false }))
  const mqtt = (clientId: string, persistent: boolean) =>
    Effect.acquireRelease(
      Effect.promise(() => client5(`mqtt://127.0.0.1:${s.mqtt!.port}`, clientId, persistent)),
      (c) => Effect.promise(() => c.client.endAsync(true))
    )
  const stored = () => Effect.promise(async () => (await jsm.streams.info(MSGS)).state.messages)
  const until = (what: string, check: () => Promise<boolean>) => Effect.promise(() => eventuallyAsync(check, what))
  return { s, jsm, mqtt, stored, until }
})

/** An mqtt.js v5 client recording what it receives from the start (a resumed session's queue comes with the CONNACK). */
const client5 = (url: string, clientId: string, persistent: boolean) =>
  new Promise<{ client: mqtt.MqttClient; got: Array<{ payload: string; expiry: number | undefined }>; present: boolean }>((resolve, reject) => {
    const client = mqtt.connect(url, {
      clientId,
      keepalive: 0,
      protocolVersion: 5,
      clean: !persistent,
      properties: persistent ? { sessionExpiryInterval: 3600 } : {},
      reconnectPeriod: 0,
      connectTimeout: 10_000
    })
    const got: Array<{ payload: string; expiry: number | undefined }> = []
    client.on("message", (_t, payload, packet) => got.push({ payload: payload.toString(), expiry: packet.properties?.messageExpiryInterval }))
    client.once("connect", (ack) => resolve({ client, got, present: ack.sessionPresent }))
    client.once("error", reject)
  })

describe("stored MQTT 5.0 messages expire through the stream's per-message TTL", () => {
  it.scoped("[MQTT-3.3.2-5] a QoS 1 message queued for an away session leaves $MQTT_msgs when its interval runs out, and is not delivered on resume", () =>
    Effect.gen(function*() {
      const { jsm, mqtt, stored, until } = yield* server
      const away = yield* mqtt("away", true)
      yield* Effect.promise(() => away.client.subscribeAsync("exp/t", { qos: 2 }))
      yield* Effect.promise(() => away.client.endAsync())
      const pub = yield* mqtt("pub", false)
      const publish = (payload: string, qos: 1 | 2, messageExpiryInterval?: number) =>
        Effect.promise(() => pub.client.publishAsync("exp/t", payload, { qos, properties: messageExpiryInterval === undefined ? {} : { messageExpiryInterval } }))
      yield* publish("short", 1, 30)
      yield* publish("long", 1, 3600)
      yield* publish("plain", 1)
      // QoS 2 keeps no TTL: a QoS 2 delivery whose PUBLISH went out must complete whatever its interval says
      yield* publish("qos2", 2, 30)
      expect(yield* stored()).toBe(4)
      const info = yield* Effect.promise(() => jsm.streams.info(MSGS))
      expect(info.config.allow_msg_ttl).toBe(true)
      const header = (seq: number) => Effect.promise(async () => (await jsm.streams.getMessage(MSGS, { seq }))?.header.get("Nats-TTL"))
      expect([yield* header(1), yield* header(2), yield* header(3), yield* header(4)]).toEqual(["30", "3600", "", ""])

      yield* TestClock.adjust("29 seconds")
      expect(yield* stored()).toBe(4)
      yield* TestClock.adjust("2 seconds")
      yield* until("the expired message to leave $MQTT_msgs", async () => (await jsm.streams.info(MSGS)).state.messages === 3)
      expect((yield* Effect.promise(() => jsm.streams.info(MSGS))).state.first_seq).toBe(2)

      const back = yield* mqtt("away", true)
      expect(back.present).toBe(true)
      yield* Effect.promise(() => eventually(() => back.got.some((m) => m.payload === "plain"), "the queued messages after the expired one"))
      // what is sent carries what is left of its interval
      expect(back.got).toEqual([{ payload: "long", expiry: 3600 - 31 }, { payload: "plain", expiry: undefined }])
      // delivered and acknowledged, or expired: nothing is left stored once the session's record is (its DISCONNECT writes it)
      yield* Effect.promise(() => back.client.endAsync())
      yield* until("$MQTT_msgs to empty", async () => (await jsm.streams.info(MSGS)).state.messages === 0)
    }))

  it.scoped("a $MQTT_msgs made before stored copies had a TTL is upgraded in place, its own limits kept", () =>
    Effect.gen(function*() {
      const { jsm, mqtt, stored, until } = yield* server
      // as an older server made it, with a limit a user set since
      yield* Effect.promise(() =>
        jsm.streams.add({ name: MSGS, subjects: ["$MQTT.msgs.>"], storage: "file" as never, retention: "limits" as never, max_msgs: 50_000 })
      )
      expect((yield* Effect.promise(() => jsm.streams.info(MSGS))).config.allow_msg_ttl).toBe(false)
      const away = yield* mqtt("old-away", true)
      yield* Effect.promise(() => away.client.subscribeAsync("old/t", { qos: 1 }))
      yield* Effect.promise(() => away.client.endAsync())
      const config = (yield* Effect.promise(() => jsm.streams.info(MSGS))).config
      expect([config.allow_msg_ttl, config.max_msgs]).toEqual([true, 50_000])
      const pub = yield* mqtt("old-pub", false)
      yield* Effect.promise(() => pub.client.publishAsync("old/t", "x", { qos: 1, properties: { messageExpiryInterval: 10 } }))
      expect(yield* stored()).toBe(1)
      yield* TestClock.adjust("11 seconds")
      yield* until("the expired message to leave the upgraded $MQTT_msgs", async () => (await jsm.streams.info(MSGS)).state.messages === 0)
    }))
})
