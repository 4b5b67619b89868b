// A 3.1.1 session's `$share/…` filter is a literal topic filter, not a Shared Subscription;
// an MQTT 5.0 connection that resumes the session keeps it literal for permissions too:
// when it resumes, and when a configuration reload checks the subscriptions again
// (test/helpers/mqtt-bridge.ts: the real bridge, the server's users and permissions).
import type * as MqttPacket from "mqtt-packet"
import { describe, expect, it } from "vitest"
import { mqttAuthenticator } from "../../src/server/mqtt/auth.js"
import { reloadMqtt } from "../../src/server/mqtt/reload.js"
import { bridgeWorld } from "../helpers/mqtt-bridge.js"

/** User "u" may subscribe to `$share.>` (the literal filter's subject) and not to `t` (the filter inside it). */
const world = () =>
  bridgeWorld({
    options: {
      authorization: {
        user: undefined, password: undefined, token: undefined, timeoutMs: undefined, defaultPermissions: undefined,
        users: [{
          user: "u", password: "p", nkey: undefined, account: undefined,
          permissions: { publish: { allow: [">"], deny: undefined }, subscribe: { allow: ["$share.>"], deny: ["t"] }, allowResponses: undefined }
        }]
      }
    }
  })
const login = { username: "u", password: Buffer.from("p") }

describe("a literal `$share/` filter of a 3.1.1 session, resumed over MQTT 5.0", () => {
  const resumedOver5 = async () => {
    const w = world()
    const old = w.connect("dev", false, [{ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "$share/g/t", qos: 1 }] }], login)
    await w.turn(true)
    await w.turn(true)
    const suback = old.packets.find((p) => p.cmd === "suback") as MqttPacket.ISubackPacket
    expect(suback.granted).toEqual([1]) // allowed as it is: the subject `$share.g.t`
    old.drop()
    await w.turn(true)
    const now = w.connect("dev", false, [], { protocolVersion: 5, properties: { sessionExpiryInterval: 600 }, ...login })
    await w.turn(true)
    expect(now.packets.filter((p) => p.cmd === "connack")).toMatchObject([{ sessionPresent: true, reasonCode: 0 }])
    return w
  }

  it("is still allowed when the session resumes: checked as the filter it is, not as `t`", async () => {
    const w = await resumedOver5()
    expect(w.lines.filter((l) => l.includes("Subscription Violation"))).toEqual([])
    expect(w.bridge.connectedClient("dev")?.filters.has("$share/g/t")).toBe(true)
    expect(w.account.sessions.get("dev")?.subscriptions).toMatchObject([{ filter: "$share/g/t", qos: 1 }])
  })

  it("is not revoked by a configuration reload that leaves the permissions as they are", async () => {
    const w = await resumedOver5()
    const server = w.bridge.server
    reloadMqtt(w.bridge, mqttAuthenticator(server), server.options)
    await w.turn(true)
    expect(w.lines.filter((l) => l.includes("Removed subscription"))).toEqual([])
    expect(w.bridge.connectedClient("dev")?.filters.has("$share/g/t")).toBe(true)
  })
})
