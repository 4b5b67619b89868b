// Permissions at every door an MQTT message can pass (issue #15, items 1-3): the will,
// a resumed session's owner and subscriptions, retained messages on SUBSCRIBE, and the
// stored messages a resumed session would send. The session asks its deps; these tests
// give it permissions as plain functions.
import { describe, expect, it } from "vitest"
import { bytes, connected, ofType, pkt, sent } from "../helpers/mqtt-session.js"
import type { SessionSnapshot } from "../../src/core/mqtt/types.js"

const onlyPublic = (_topic: string, subject: string) => subject.startsWith("public.")
const will = { topic: "$JS/API/STREAM/DELETE/ORDERS", payload: bytes(""), qos: 0, retain: false }

describe("the will and publish permissions", () => {
  it("a will the user may not publish is refused at CONNECT with CONNACK 5, and reported", () => {
    const { session, connectActions } = connected({ connect: { will }, deps: { canPublish: onlyPublic } })
    expect(ofType(connectActions, "denied")).toEqual([{ type: "denied", op: "will", topic: will.topic }])
    expect(ofType(connectActions, "accept")).toEqual([])
    expect(sent(connectActions)).toEqual([{ cmd: "connack", returnCode: 5, sessionPresent: false }])
    expect(session.isClosed).toBe(true)
  })

  it("a will retained on a forbidden topic is refused too: no retained store update ever happens", () => {
    const retained = { topic: "secret/state", payload: bytes("x"), qos: 1, retain: true }
    const { connectActions } = connected({ connect: { will: retained }, deps: { canPublish: onlyPublic } })
    expect(ofType(connectActions, "storeRetained")).toEqual([])
    expect(sent(connectActions)[0]).toMatchObject({ cmd: "connack", returnCode: 5 })
  })

  it("a permitted will is accepted and published on loss", () => {
    const ok = { topic: "public/dev/1", payload: bytes("gone"), qos: 1, retain: false }
    const { session } = connected({ connect: { will: ok }, deps: { canPublish: onlyPublic } })
    expect(ofType(session.step({ type: "connectionLost" }, 1), "publish")).toHaveLength(1)
  })

  it("is checked again when it is due: permissions taken away since CONNECT stop it", () => {
    let allowed = true
    const ok = { topic: "public/dev/1", payload: bytes("gone"), qos: 1, retain: true }
    const { session } = connected({ connect: { will: ok }, deps: { canPublish: () => allowed } })
    allowed = false // a reload narrowed the user's permissions
    const a = session.step({ type: "connectionLost" }, 1)
    expect(ofType(a, "publish")).toEqual([])
    expect(ofType(a, "storeRetained")).toEqual([])
    expect(ofType(a, "denied")).toEqual([{ type: "denied", op: "will", topic: "public/dev/1" }])
  })

  it("a PUBLISH and a SUBSCRIBE refused by permissions are reported", () => {
    const { session } = connected({ deps: { canPublish: onlyPublic, canSubscribe: (f) => f.startsWith("public/") } })
    const p = session.step(pkt({ cmd: "publish", topic: "secret/x", payload: bytes("x"), qos: 0, retain: false, dup: false }), 0)
    expect(ofType(p, "denied")).toEqual([{ type: "denied", op: "publish", topic: "secret/x" }])
    expect(ofType(p, "publish")).toEqual([])
    const s = session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "secret/#", qos: 1 }, { topic: "public/#", qos: 1 }] }), 0)
    expect(ofType(s, "denied")).toEqual([{ type: "denied", op: "subscribe", topic: "secret/#" }])
    expect(sent(s)).toEqual([{ cmd: "suback", messageId: 1, granted: [0x80, 1] }])
  })
})

const persistent = { clientId: "shared", clean: false }

/** admin's session: subscribed to secret/# and public/#, one secret message in flight, one queued. */
const adminSession = (): SessionSnapshot => {
  const { session } = connected({ connect: persistent, owner: "admin", config: { maxAckPending: 1 } })
  session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "secret/#", qos: 1 }, { topic: "public/#", qos: 1 }] }), 0)
  session.step({ type: "deliver", subject: "secret.plans", payload: bytes("s1"), qos: 1, ref: 7 }, 0)
  session.step({ type: "deliver", subject: "public.news", payload: bytes("p1"), qos: 1, ref: 8 }, 0)
  return session.snapshot()
}

describe("a persistent session belongs to the user that created it", () => {
  it("is stored with its owner", () => {
    expect(adminSession().owner).toBe("admin")
  })

  it("the same user resumes it: session present 1, subscriptions and messages back", () => {
    const { readyActions } = connected({ connect: persistent, owner: "admin", stored: adminSession() })
    expect(sent(readyActions)[0]).toEqual({ cmd: "connack", returnCode: 0, sessionPresent: true })
    expect(ofType(readyActions, "subscribe").map((s) => s.filter)).toEqual(["secret/#", "public/#"])
    expect(ofType(readyActions, "discardStored")).toEqual([])
  })

  it("another user gets a fresh session (present 0): nothing of the old one is resumed, and it is discarded", () => {
    const stored = adminSession()
    const { session, readyActions } = connected({ connect: persistent, owner: "guest", stored })
    expect(sent(readyActions)).toEqual([{ cmd: "connack", returnCode: 0, sessionPresent: false }])
    expect(ofType(readyActions, "subscribe")).toEqual([])
    expect(ofType(readyActions, "discardStored")).toEqual([{ type: "discardStored", stored }])
    // Nothing the old subscriptions matched reaches the newcomer.
    expect(sent(session.step({ type: "deliver", subject: "secret.plans", payload: bytes("s2"), qos: 1, ref: 9 }, 1))).toEqual([])
    expect(session.snapshot()).toMatchObject({ owner: "guest", subscriptions: [], outbound: [], queued: [] })
  })

  it("a session stored before owners were kept is resumed with only what the user may have", () => {
    const { owner: _, ...legacy } = adminSession()
    const { readyActions, session } = connected({
      connect: persistent,
      owner: "guest",
      stored: legacy,
      deps: { canSubscribe: (f) => f.startsWith("public/"), canReceive: (s) => s.startsWith("public.") }
    })
    expect(sent(readyActions)[0]).toEqual({ cmd: "connack", returnCode: 0, sessionPresent: true })
    expect(ofType(readyActions, "subscribe").map((s) => s.filter)).toEqual(["public/#"])
    expect(ofType(readyActions, "denied")).toEqual([{ type: "denied", op: "subscribe", topic: "secret/#" }])
    // The secret message in flight and none of the rest is sent; its stored copy is let go.
    expect(sent(readyActions).filter((p) => p.cmd === "publish").map((p) => (p as { topic: string }).topic)).toEqual(["public/news"])
    expect(ofType(readyActions, "drop")).toEqual([{ type: "drop", reason: "not_permitted", ref: 7 }])
    // The stored subscription that was taken away is removed.
    expect(ofType(readyActions, "persistSubscription")).toEqual([{ type: "persistSubscription", filter: "secret/#", qos: undefined }])
    expect(session.snapshot().owner).toBe("guest")
  })

  it("its owner, with narrower permissions since, gets back only what they still allow", () => {
    const { readyActions } = connected({
      connect: persistent,
      owner: "admin",
      stored: adminSession(),
      deps: { canSubscribe: (f) => !f.startsWith("secret/"), canReceive: (s) => !s.startsWith("secret.") }
    })
    expect(ofType(readyActions, "subscribe").map((s) => s.filter)).toEqual(["public/#"])
    expect(ofType(readyActions, "drop")).toEqual([{ type: "drop", reason: "not_permitted", ref: 7 }])
  })
})

describe("retained messages on SUBSCRIBE follow the subscribe permissions", () => {
  it("a topic the user may not receive (a deny under an allowed filter) is withheld", () => {
    const { session } = connected({ deps: { canReceive: (s) => s !== "home.alarm.code" } })
    session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "home/#", qos: 0 }] }), 0)
    const a = session.step({
      type: "retained",
      filter: "home/#",
      messages: [
        { topic: "home/alarm/code", payload: bytes("1234"), qos: 0 },
        { topic: "home/temp", payload: bytes("21"), qos: 0 }
      ]
    }, 0)
    expect(sent(a).map((p) => (p as { topic: string }).topic)).toEqual(["home/temp"])
  })
})
