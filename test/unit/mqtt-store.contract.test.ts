// The MqttStore contract: both layers run this same suite. What a store keeps while the
// process runs (retained messages, messages held by persistent sessions, commits) is the
// same for both; what comes back after a restart depends on `durable`: everything that was
// committed (the streams layer, on a real file store restarted on its directory), or
// nothing (memory). The bridge relies on exactly this and never asks which layer it has.
import { Effect, type Layer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import type { SessionSnapshot } from "../../src/core/mqtt/index.js"
import { type MqttAccountStore, MqttStore, type MqttStoreService } from "../../src/server/mqtt/store.js"
import { layerMemory } from "../../src/server/mqtt/store-memory.js"
import { layerStreams } from "../../src/server/mqtt/store-streams.js"
import { headerBlock, NatsHeader } from "../../src/core/mqtt/v5/nats.js"
import { type JsTestServer, startJsServer } from "../helpers/jetstream.js"

interface Backend {
  /** The layer of the running server. */
  layer(): Layer.Layer<MqttStore>
  /** Stop and start again (the same directory for streams; memory starts over). */
  restart(): Promise<void>
  /** The clock of the servers started from now on runs this much ahead (ms). */
  later(ms: number): void
  close(): Promise<void>
}

const service = (layer: Layer.Layer<MqttStore>): Promise<MqttStoreService> => Effect.runPromise(Effect.provide(MqttStore, layer))

const committed = (s: MqttStoreService): Promise<boolean> => new Promise((resolve) => s.commit(resolve))

const text = (b: Uint8Array | undefined): string | undefined => (b === undefined ? undefined : Buffer.from(b).toString())

/** A message kept for sessions: its ref, or undefined when the store keeps no copy (a write error fails the test). */
const keep = (store: MqttAccountStore, subject: string, payload: string, qos: 1 | 2, routedLater = false): number | undefined => {
  const r = store.storeMessage(subject, Buffer.from(payload), qos, routedLater)
  if (typeof r === "object") throw r
  return r
}

const snapshot = (over: Partial<SessionSnapshot> = {}): SessionSnapshot => ({
  clientId: "dev-1",
  owner: "ann",
  subscriptions: [],
  outbound: [],
  queued: [],
  inboundQos2: [],
  lastPacketId: 0,
  ...over
})

export const mqttStoreContract = (label: string, make: () => Promise<Backend>) =>
  describe(`MqttStore contract: ${label}`, () => {
    let backend: Backend | undefined
    afterEach(async () => {
      await backend?.close()
      backend = undefined
    })
    const start = async (): Promise<{ svc: MqttStoreService; store: MqttAccountStore }> => {
      backend ??= await make()
      const svc = await service(backend.layer())
      return { svc, store: await svc.open("ACC") }
    }
    const restart = async (): Promise<{ svc: MqttStoreService; store: MqttAccountStore }> => {
      await backend!.restart()
      return start()
    }

    it("opens an account once: ready gives the store open gave, and a second open the same", async () => {
      const { svc, store } = await start()
      expect(svc.ready("ACC")).toBe(store)
      expect(await svc.open("ACC")).toBe(store)
      expect(store.takeSessions().size).toBe(0)
      expect(svc.storedAccounts()).toEqual(store.durable ? ["ACC"] : [])
    })

    it("keeps retained messages: set replaces, delete removes (false when there was none), and a lookup sees them", async () => {
      const { svc, store } = await start()
      store.setRetained("a/b", "a.b", Buffer.from("one"), 1)
      store.setRetained("a/b", "a.b", Buffer.from("two"), 2)
      store.setRetained("a/c", "a.c", Buffer.from("three"), 0)
      store.setRetained("x", "x", Buffer.from("gone"), 0)
      expect(store.deleteRetained("x", "x")).toBe(true)
      expect(store.deleteRetained("nothing/here", "nothing.here")).toBe(false)
      const found: Array<{ topic: string; payload: Uint8Array; qos: number }> = []
      store.retained.match("a/+").take(found, 100, 1000)
      expect(found.map((m) => [m.topic, text(m.payload), m.qos]).sort()).toEqual([["a/b", "two", 2], ["a/c", "three", 0]])
      expect(await committed(svc)).toBe(true)
      const after = await restart()
      const back = after.store.retained.values().map((m) => [m.topic, text(m.payload), m.qos]).sort()
      expect(back).toEqual(store.durable ? [["a/b", "two", 2], ["a/c", "three", 0]] : [])
    })

    it("keeps a message for persistent sessions by reference, or keeps no copy", async () => {
      const { store } = await start()
      const ref = store.storeMessage("t.1", Buffer.from("payload-1"), 2)
      if (!store.durable) {
        // The sessions hold the payload themselves: nothing to read back.
        expect(ref).toBeUndefined()
        return
      }
      expect(typeof ref).toBe("number")
      expect(store.sizeOf(ref as number)).toBeGreaterThanOrEqual("payload-1".length)
      const [m] = await store.loadMessages([ref as number])
      expect(text(m?.payload)).toBe("payload-1")
      expect(m?.qos).toBe(2)
      expect(await store.loadMessages([9999])).toEqual([undefined])
      expect(store.sizeOf(9999)).toBe(0)
    })

    it("removes a held message once its last holder let go and a commit followed; one nobody took at once after routing", async () => {
      const { svc, store } = await start()
      const held = keep(store, "t.h", "held", 1)
      const unheld = keep(store, "t.u", "unheld", 1)
      if (typeof held !== "number" || typeof unheld !== "number") {
        expect(store.durable).toBe(false)
        expect(svc.hasRemovals()).toBe(false)
        return
      }
      store.ref(held)
      store.ref(held)
      store.releaseIfUnheld(held)
      store.releaseIfUnheld(unheld)
      store.unref(held)
      expect(await committed(svc)).toBe(true)
      expect((await store.loadMessages([held]))[0]).toBeDefined()
      expect((await store.loadMessages([unheld]))[0]).toBeUndefined()
      store.unref(held)
      // The removal waits for the commit after the release (what no longer needs it is written first).
      expect(svc.hasRemovals()).toBe(true)
      expect((await store.loadMessages([held]))[0]).toBeDefined()
      expect(await committed(svc)).toBe(true)
      expect(svc.hasRemovals()).toBe(false)
      expect((await store.loadMessages([held]))[0]).toBeUndefined()
    })

    it("says what a commit must cover: writes since the last commit started", async () => {
      const { svc, store } = await start()
      expect(svc.hasWrites()).toBe(false)
      store.setRetained("w", "w", Buffer.from("x"), 1)
      expect(svc.hasWrites()).toBe(store.durable)
      // A commit covers what was written before its round began (a round may begin a turn later).
      expect(await committed(svc)).toBe(true)
      expect(svc.hasWrites()).toBe(false)
      store.setRetained("w", "w", Buffer.from("y"), 1)
      expect(svc.hasWrites()).toBe(store.durable)
      expect(await committed(svc)).toBe(true)
      expect(svc.hasWrites()).toBe(false)
    })

    it("brings a persistent session back after a restart: record, subscriptions, what it owes and its QoS 2 state", async () => {
      const { svc, store } = await start()
      const inFlight = keep(store, "s.a", "in flight", 1)
      const waiting = keep(store, "s.a", "queued", 2)
      for (const r of [inFlight, waiting]) if (r !== undefined) store.ref(r)
      store.writeSubscription("dev-1", "s/a", 2)
      store.writeSubscription("dev-1", "s/gone", 1)
      store.writeSubscription("dev-1", "s/gone", undefined)
      const snap = snapshot({
        subscriptions: [{ filter: "s/a", qos: 2 }],
        outbound: [
          { packetId: 7, qos: 1, topic: "s/a", payload: undefined, retain: false, phase: "publish", ref: inFlight },
          { packetId: 8, qos: 2, topic: "", payload: new Uint8Array(0), retain: false, phase: "pubrel" }
        ],
        queued: [
          { qos: 2, topic: "s/a", payload: undefined, size: 6, retain: false, ref: waiting },
          { qos: 1, topic: "from/nats", payload: Buffer.from("inline"), size: 6, retain: false }
        ],
        lastPacketId: 8
      })
      store.writeSession(snap)
      store.qos2State("$MQTT_out", "dev-1", 8, true)
      store.qos2State("$MQTT_qos2in", "dev-1", 42, true)
      store.qos2State("$MQTT_qos2in", "dev-1", 43, true)
      store.qos2State("$MQTT_qos2in", "dev-1", 43, false)
      expect(await committed(svc)).toBe(true)
      const after = await restart()
      const sessions = after.store.takeSessions()
      expect(after.store.takeSessions().size).toBe(0)
      if (!store.durable) {
        expect(sessions.size).toBe(0)
        expect(after.svc.storedAccounts()).toEqual([])
        return
      }
      expect(after.svc.storedAccounts()).toEqual(["ACC"])
      const back = sessions.get("dev-1")!
      expect(back).toMatchObject({ clientId: "dev-1", owner: "ann", subscriptions: [{ filter: "s/a", qos: 2 }], inboundQos2: [42], lastPacketId: 8 })
      expect(back.outbound.map((o) => [o.packetId, o.phase, o.topic, o.ref])).toEqual([[7, "publish", "s/a", inFlight], [8, "pubrel", "", undefined]])
      expect(back.queued.map((q) => [q.qos, q.topic, q.ref, text(q.payload), q.size])).toEqual([
        // A stored message as the index knows it: its stored size (`sizeOf`), its payload on disk.
        [2, "s/a", waiting, undefined, after.store.sizeOf(waiting as number)],
        [1, "from/nats", undefined, "inline", 6]
      ])
      // Its held messages are still there to be fetched.
      expect((await after.store.loadMessages([inFlight as number, waiting as number])).map((m) => text(m?.payload))).toEqual(["in flight", "queued"])
    })

    it("owes a restored session the messages stored for its subscriptions after its record was written, chosen as a live session chooses", async () => {
      const { svc, store } = await start()
      store.writeSubscription("dev-1", "late/#", 1)
      store.writeSubscription("dev-1", "#", 1)
      store.writeSession(snapshot({ subscriptions: [{ filter: "late/#", qos: 1 }, { filter: "#", qos: 1 }] }))
      // Stored and not yet routed: the record's cursor stays below it.
      const later = keep(store, "late.x", "after the record", 2, true)
      // Regression: recovery matched stored subjects by NATS rules, so `#` took a `$` topic,
      // which no live session receives through a filter starting with a wildcard [MQTT-4.7.2-1].
      keep(store, "$SYS.x", "not for a wildcard filter", 1, true)
      const other = keep(store, "elsewhere", "for #", 1)
      expect(await committed(svc)).toBe(true)
      const after = await restart()
      const back = after.store.takeSessions().get("dev-1")
      if (!store.durable) {
        expect(back).toBeUndefined()
        return
      }
      // Granted at the subscription's QoS 1 (its own QoS is learnt when it is fetched).
      expect(back?.queued.map((q) => [q.ref, q.topic, q.qos])).toEqual([[later, "late/x", 1], [other, "elsewhere", 1]])
    })

    it("MQTT 5.0: the messages a restored session finds by its cursor carry the Subscription Identifiers of the subscriptions that had them", async () => {
      const { svc, store } = await start()
      store.writeSubscription("dev-1", "late/#", 1, { id: 3 })
      store.writeSubscription("dev-1", "late/+", 0, { id: 7 }) // QoS 0: no grant, but its identifier goes with the message
      store.writeSubscription("dev-1", "other/#", 1)
      store.writeSession(snapshot({ protocolVersion: 5, subscriptions: [{ filter: "late/#", qos: 1, id: 3 }, { filter: "late/+", qos: 0, id: 7 }, { filter: "other/#", qos: 1 }] }))
      const late = keep(store, "late.x", "after the record", 1)
      const other = keep(store, "other.y", "no identifier", 1)
      // made after both were stored and routed: not theirs
      store.writeSubscription("dev-1", "late/x", 1, { id: 9 })
      expect(await committed(svc)).toBe(true)
      const after = await restart()
      const back = after.store.takeSessions().get("dev-1")
      if (!store.durable) return expect(back).toBeUndefined()
      expect(back?.queued.map((q) => [q.ref, q.topic, q.properties?.subscriptionIdentifiers])).toEqual([[late, "late/x", [3, 7]], [other, "other/y", undefined]])
    })

    it("MQTT 5.0: a retained message whose Message Expiry Interval ran out while the server was down is not loaded back", async () => {
      const { svc, store } = await start()
      const expiring = (seconds: number) => ({ reply: undefined, hdr: headerBlock([[NatsHeader.messageExpiry, String(seconds)]]), at: Date.now() })
      store.setRetained("r/short", "r.short", Buffer.from("s"), 1, expiring(5))
      store.setRetained("r/long", "r.long", Buffer.from("l"), 1, expiring(60))
      store.setRetained("r/plain", "r.plain", Buffer.from("p"), 1)
      expect(await committed(svc)).toBe(true)
      backend!.later(10_000)
      const after = await restart()
      if (!store.durable) return expect(after.store.retained.size).toBe(0)
      expect(after.store.retained.values().map((m) => m.topic).sort()).toEqual(["r/long", "r/plain"])
    })

    it("forgets a deleted session: record, subscriptions, QoS 2 state and its hold on stored messages", async () => {
      const { svc, store } = await start()
      const ref = keep(store, "d.x", "x", 1)
      if (typeof ref === "number") store.ref(ref)
      store.writeSubscription("dev-1", "d/#", 1)
      const snap = snapshot({ subscriptions: [{ filter: "d/#", qos: 1 }], queued: [{ qos: 1, topic: "d/x", payload: undefined, size: 1, retain: false, ref }] })
      store.writeSession(snap)
      store.qos2State("$MQTT_qos2in", "dev-1", 5, true)
      store.qos2State("$MQTT_out", "dev-1", 6, true)
      expect(await committed(svc)).toBe(true)
      store.deleteSession(snap, "dev-1")
      expect(await committed(svc)).toBe(true)
      // The message it held is removed by the commit after the release.
      if (svc.hasRemovals()) expect(await committed(svc)).toBe(true)
      if (typeof ref === "number") expect((await store.loadMessages([ref]))[0]).toBeUndefined()
      const after = await restart()
      expect(after.store.takeSessions().size).toBe(0)
    })
  })

mqttStoreContract("memory", async () => ({
  layer: () => layerMemory,
  restart: async () => {},
  later: () => {},
  close: async () => {}
}))

mqttStoreContract("streams", async () => {
  const js: JsTestServer = await startJsServer()
  let ahead = 0
  return {
    layer: () => {
      const jetstream = js.srv.serving.jetstream!
      if (ahead !== 0) {
        // the store reads the server's clock: this server's runs `ahead` of the wall clock
        const server = jetstream.server as { now: () => number }
        const real = server.now.bind(server)
        server.now = () => real() + ahead
      }
      return layerStreams(jetstream)
    },
    restart: () => js.restart(),
    later: (ms) => {
      ahead += ms
    },
    close: () => js.close()
  }
})
