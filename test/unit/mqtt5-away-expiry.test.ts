// MQTT 5.0 Session Expiry and delayed wills in the bridge when the alarm has not run yet:
// a client that comes back after its session's interval ran out finds no session, and a
// will whose time came goes out, whether or not the bridge's tick saw the moment pass
// (test/helpers/mqtt-bridge.ts: the real bridge, its clock moved by the test, no tick).
import type * as MqttPacket from "mqtt-packet"
import { describe, expect, it } from "vitest"
import { bridgeWorld as world } from "../helpers/mqtt-bridge.js"

const presence = (packets: ReadonlyArray<MqttPacket.Packet>) => packets.flatMap((p) => (p.cmd === "connack" ? [p.sessionPresent] : []))
const expiring = (seconds: number, more: Record<string, unknown> = {}) => ({ protocolVersion: 5, properties: { sessionExpiryInterval: seconds }, ...more })

describe("an away session whose Session Expiry Interval ran out before the bridge's tick", () => {
  // Found by the simulator (seed 1758060521): the server restarted for longer than a
  // session's interval; the client connected before the first tick and heard "session present".
  it("[MQTT-4.1.0-2] the client that comes back finds no session (session present 0), and the store forgets it", async () => {
    const w = world()
    const first = w.connect("dev", false, [{ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 1 }] }], expiring(2))
    await w.turn(true)
    expect(presence(first.packets)).toEqual([false])
    first.drop()
    await w.turn(true)
    expect(w.account.sessions.has("dev")).toBe(true)
    w.tick(2_500) // past the interval; the bridge's tick has not run
    const second = w.connect("dev", false, [], expiring(2))
    await w.turn(true)
    expect(presence(second.packets)).toEqual([false])
    // the new session is a new record, without the old one's subscription
    expect(w.account.sessions.get("dev")?.subscriptions).toEqual([])
  })

  it("within the interval it is resumed (session present 1), subscriptions and all", async () => {
    const w = world()
    const first = w.connect("dev", false, [{ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 1 }] }], expiring(2))
    await w.turn(true)
    first.drop()
    await w.turn(true)
    w.tick(1_500)
    const second = w.connect("dev", false, [], expiring(2))
    await w.turn(true)
    expect(presence(second.packets)).toEqual([true])
    expect(w.account.sessions.get("dev")?.subscriptions).toMatchObject([{ filter: "t/#", qos: 1 }])
  })

  /** A watcher of `w/#`, and "dev" gone with a will delayed 60 s (its session kept 600 s). */
  const goneWithWill = async () => {
    const w = world()
    const watcher = w.connect("watch", true, [{ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "w/#", qos: 0 }] }])
    await w.turn(true)
    const will = { topic: "w/dev", payload: Buffer.from("gone"), qos: 0, retain: false, properties: { willDelayInterval: 60 } }
    const first = w.connect("dev", false, [], expiring(600, { will }))
    await w.turn(true)
    first.drop()
    await w.turn(true)
    const wills = () => watcher.packets.filter((p) => p.cmd === "publish").map((p) => (p as MqttPacket.IPublishPacket).topic)
    return { w, wills }
  }

  it("[MQTT-3.1.3-9] a delayed will whose time came goes out when the client comes back before the tick", async () => {
    const { w, wills } = await goneWithWill()
    w.tick(61_000) // the will's delay passed; no tick ran
    w.connect("dev", false, [], expiring(600))
    await w.turn(true)
    expect(wills()).toEqual(["w/dev"])
  })

  it("a delayed will whose time has not come is cancelled by the new connection", async () => {
    const { w, wills } = await goneWithWill()
    w.tick(30_000)
    w.connect("dev", false, [], expiring(600))
    await w.turn(true)
    w.tick(60_000)
    w.bridge.tick(w.now())
    await w.turn(true)
    expect(wills()).toEqual([])
  })
})
