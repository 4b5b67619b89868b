// MQTT 5.0: a retained message whose Message Expiry Interval ran out is gone, for every
// subscriber and from the store: removed when a lookup meets it (the real bridge over an
// account store, test/helpers/mqtt-bridge.ts), and not loaded back after a restart
// (the streams layer: test/unit/mqtt-store.contract.test.ts).
import type * as MqttPacket from "mqtt-packet"
import { describe, expect, it } from "vitest"
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
