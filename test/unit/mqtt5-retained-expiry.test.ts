// MQTT 5.0: a retained message whose Message Expiry Interval ran out is gone, for every
// subscriber and from the store: removed when a lookup meets it or when its end comes
// (the bridge's alarm, armed only while one waits; the real bridge over an account store
// and a hand-driven clock, test/helpers/mqtt-bridge.ts), and not loaded back after a
// restart (the streams layer: test/unit/mqtt-store.contract.test.ts).
import type * as MqttPacket from "mqtt-packet"
import { describe, expect, it } from "vitest"
import { headerBlock, publishToNats } from "../../src/core/mqtt/v5/nats.js"
import { RETAINED_EXPIRIES_PER_TICK, RetainedExpiry } from "../../src/server/mqtt/retained-expiry.js"
import { MemoryAccountStore } from "../../src/server/mqtt/store-memory.js"
import { bridgeWorld as world } from "../helpers/mqtt-bridge.js"

const v5 = { protocolVersion: 5 }
const retain = (topic: string, text: string, properties: Record<string, unknown> = {}) =>
  ({ cmd: "publish", topic, payload: Buffer.from(text), qos: 0, retain: true, dup: false, properties })
const got = (packets: ReadonlyArray<MqttPacket.Packet>) =>
  packets.flatMap((p) => (p.cmd === "publish" ? [`${p.topic}=${p.payload.toString()}`] : []))

describe("an expired retained message", () => {
  const retained = async () => {
    const w = world()
    w.connect("pub", true, [
      retain("r/short", "s", { messageExpiryInterval: 5 }),
      retain("r/long", "l", { messageExpiryInterval: 60 }),
      retain("r/forever", "f")
    ], v5)
    await w.turn(true)
    expect(w.account.retained.size).toBe(3)
    return w
  }
  const subscribe = async (w: ReturnType<typeof world>, id: string, fields: Record<string, unknown>) => {
    const c = w.connect(id, true, [{ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "r/#", qos: 0 }] }], fields)
    await w.turn(true)
    await w.turn(true)
    return got(c.packets).sort()
  }

  it("[MQTT-3.3.2-5] is sent to no new subscriber, 3.1.1 ones included, and leaves the store", async () => {
    const w = await retained()
    w.tick(6_000)
    expect(await subscribe(w, "v4", {})).toEqual(["r/forever=f", "r/long=l"])
    expect(w.account.retained.get("r/short")).toBeUndefined()
    expect(w.account.retained.size).toBe(2)
    expect(await subscribe(w, "v5", v5)).toEqual(["r/forever=f", "r/long=l"])
  })

  it("while it lives, it is sent and kept", async () => {
    const w = await retained()
    w.tick(4_000)
    expect(await subscribe(w, "v4", {})).toEqual(["r/forever=f", "r/long=l", "r/short=s"])
    expect(w.account.retained.size).toBe(3)
  })

  it("a newer retained message on its topic is not removed with it", async () => {
    const w = await retained()
    w.tick(6_000)
    w.connect("pub2", true, [retain("r/short", "again", { messageExpiryInterval: 60 })], v5)
    await w.turn(true)
    expect(await subscribe(w, "v4", {})).toEqual(["r/forever=f", "r/long=l", "r/short=again"])
  })
})

describe("an expired retained message is removed when its end comes, without a lookup", () => {
  /** The bridge with an alarm that records what it is asked for. */
  const watched = () => {
    const w = world()
    const asked: Array<number> = []
    w.bridge.alarm = { wakeAt: (at) => void asked.push(at), armedAt: () => Math.min(...asked), runs: () => 0 }
    return { w, asked }
  }
  const keep = async (w: ReturnType<typeof world>, id: string, ...msgs: Array<ReturnType<typeof retain>>) => {
    w.connect(id, true, msgs, v5)
    await w.turn(true)
  }

  it("[MQTT-3.3.2-5] the alarm is asked for its end; the tick then removes it, and the next end is the one left", async () => {
    const { w, asked } = watched()
    const t0 = w.now()
    await keep(w, "pub", retain("r/short", "s", { messageExpiryInterval: 5 }), retain("r/long", "l", { messageExpiryInterval: 60 }), retain("r/forever", "f"))
    expect(asked).toContain(t0 + 5_001)
    expect(w.bridge.tick(w.now())).toBe(t0 + 5_001)
    // its last second: still there
    w.tick(5_000)
    expect(w.bridge.tick(w.now())).toBe(t0 + 5_001)
    expect(w.account.retained.get("r/short")).toBeDefined()
    w.tick(1)
    expect(w.bridge.tick(w.now())).toBe(t0 + 60_001)
    expect(w.account.retained.get("r/short")).toBeUndefined()
    expect(w.account.retained.size).toBe(2)
    w.tick(60_000)
    // nothing left to wait for: no timer (the idle rule)
    expect(w.bridge.tick(w.now())).toBeUndefined()
    expect(w.account.retained.size).toBe(1)
    expect(w.bridge.retainedExpiry.size).toBe(0)
  })

  it("no timer for retained messages without an interval; a replacement without one, or a removal, stops the watch", async () => {
    const { w } = watched()
    await keep(w, "pub", retain("p/a", "1"), retain("p/b", "2"))
    expect(w.bridge.retainedExpiry.size).toBe(0)
    expect(w.bridge.tick(w.now())).toBeUndefined()
    await keep(w, "pub2", retain("p/a", "3", { messageExpiryInterval: 5 }), retain("p/b", "4", { messageExpiryInterval: 5 }))
    expect(w.bridge.retainedExpiry.size).toBe(2)
    await keep(w, "pub3", retain("p/a", "5"), retain("p/b", ""))
    expect(w.bridge.retainedExpiry.size).toBe(0)
    expect(w.bridge.tick(w.now())).toBeUndefined()
    w.tick(10_000)
    w.bridge.tick(w.now())
    expect(w.account.retained.get("p/a")?.payload.toString()).toBe("5")
  })

  it("a newer retained message on the topic moves the end: the old one's end removes nothing", async () => {
    const { w } = watched()
    await keep(w, "pub", retain("n/t", "old", { messageExpiryInterval: 5 }))
    w.tick(4_000)
    await keep(w, "pub2", retain("n/t", "new", { messageExpiryInterval: 5 }))
    w.tick(2_000)
    w.bridge.tick(w.now())
    expect(w.account.retained.get("n/t")?.payload.toString()).toBe("new")
    w.tick(4_000)
    w.bridge.tick(w.now())
    expect(w.account.retained.get("n/t")).toBeUndefined()
  })

  it(`many ending together go at most ${RETAINED_EXPIRIES_PER_TICK} per tick, the rest at the next ones`, async () => {
    const { w } = watched()
    const n = RETAINED_EXPIRIES_PER_TICK * 2 + 500
    const msgs = Array.from({ length: n }, (_, i) => retain(`many/${i}`, "x", { messageExpiryInterval: 1 }))
    await keep(w, "pub", ...msgs)
    expect(w.account.retained.size).toBe(n)
    w.tick(2_000)
    const now = w.now()
    expect(w.bridge.tick(now)).toBe(now)
    expect(w.account.retained.size).toBe(n - RETAINED_EXPIRIES_PER_TICK)
    expect(w.bridge.tick(now)).toBe(now)
    expect(w.bridge.tick(now)).toBeUndefined()
    expect(w.account.retained.size).toBe(0)
  })

  it("retained messages a store already held when it opened (loaded after a restart) are watched too", () => {
    const store = new MemoryAccountStore()
    const hdr = (interval: number) => {
      const n = publishToNats("l/t", { messageExpiryInterval: interval })
      if (!n.ok) throw new Error(n.reason)
      return headerBlock(n.headers)
    }
    store.setRetained("l/a", "l.a", Buffer.from("a"), 0, { reply: undefined, hdr: hdr(10), at: 1_000 })
    store.setRetained("l/b", "l.b", Buffer.from("b"), 0, { reply: undefined, hdr: hdr(3), at: 1_000 })
    store.setRetained("l/c", "l.c", Buffer.from("c"), 0)
    const asked: Array<number> = []
    const e = new RetainedExpiry((at) => void asked.push(at))
    e.opened(store)
    e.opened(store)
    expect(asked).toEqual([4_001])
    expect(e.size).toBe(2)
    expect(e.tick(4_001)).toEqual({ removed: true, next: 11_001 })
    expect(store.retained.values().map((m) => m.topic).sort()).toEqual(["l/a", "l/c"])
  })
})
