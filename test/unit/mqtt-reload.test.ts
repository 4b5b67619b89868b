// The MQTT session under a configuration reload: subscriptions its new permissions
// forbid are revoked (no UNSUBACK, and the stored session forgets them), revoked
// credentials close it without its will, new ack_wait / max_ack_pending apply to the
// next deliveries. Also: packets are traced without payloads or passwords.
import { describe, expect, it } from "vitest"
import { describePacket } from "../../src/core/mqtt/describe.js"
import { bytes, connected, connectPacket, ofType, pkt, sent } from "../helpers/mqtt-session.js"

const sub = (messageId: number, ...subscriptions: Array<{ topic: string; qos: number }>) =>
  pkt({ cmd: "subscribe", messageId, subscriptions })
const deliver = (subject: string, qos: number) => ({ type: "deliver", subject, payload: bytes("m"), qos }) as const

describe("revoked subscriptions", () => {
  it("are removed without an UNSUBACK, stop delivering, and leave the stored session", () => {
    const { session } = connected({ connect: { clean: false } })
    session.step(sub(1, { topic: "a/#", qos: 1 }, { topic: "b", qos: 0 }), 0)
    const a = session.step({ type: "revoked", filters: ["a/#", "not-subscribed"] }, 0)
    expect(ofType(a, "unsubscribe")).toEqual([{ type: "unsubscribe", filter: "a/#", subjects: ["a", "a.>"] }])
    expect(sent(a)).toEqual([])
    expect(ofType(a, "persistSubscription")).toEqual([{ type: "persistSubscription", filter: "a/#", qos: undefined }])
    expect(sent(session.step(deliver("a.x", 1), 0))).toEqual([])
    expect(sent(session.step(deliver("b", 0), 0))).toHaveLength(1)
  })

  it("revoking nothing the session has changes nothing", () => {
    const { session } = connected({ connect: { clean: false } })
    expect(session.step({ type: "revoked", filters: ["x"] }, 0)).toEqual([])
  })
})

describe("revoked credentials", () => {
  it("close the connection without publishing the will", () => {
    const will = { topic: "gone", payload: bytes("bye"), qos: 0, retain: false }
    const { session } = connected({ connect: { will } })
    const a = session.step({ type: "deauthorized" }, 0)
    expect(ofType(a, "publish")).toEqual([])
    expect(ofType(a, "close")).toEqual([{ type: "close", reason: "Authentication Failure" }])
    expect(session.closeReason).toBe("Authentication Failure")
  })
})

describe("new limits", () => {
  it("max_ack_pending bounds the window from now on; ack_wait times the next deliveries", () => {
    const { session } = connected({ config: { maxAckPending: 1, ackWaitMs: 1_000 } })
    session.step(sub(1, { topic: "q", qos: 1 }), 0)
    expect(sent(session.step(deliver("q", 1), 0))).toHaveLength(1)
    expect(sent(session.step(deliver("q", 1), 0))).toHaveLength(0)
    session.setLimits({ ...session.config, maxAckPending: 3, ackWaitMs: 60_000 })
    // The queued one goes out with the next acknowledgement, and so does a new one: the window is 3 now.
    expect(sent(session.step(pkt({ cmd: "puback", messageId: 1 }), 10))).toHaveLength(1)
    expect(sent(session.step(deliver("q", 1), 10))).toHaveLength(1)
    expect(session.nextDeadline()).toBe(10 + 60_000)
  })
})

describe("describePacket", () => {
  it("shows types, ids, topics, QoS and flags, never a payload or a password", () => {
    const connect = describePacket(connectPacket({ username: "dev", password: bytes("hunter2-secret"), will: { topic: "w", payload: bytes("will-body"), qos: 1, retain: true } }))
    expect(connect).toBe('CONNECT client_id="c1" clean=true keepalive=0 username="dev" password=[REDACTED] will="w" will_qos=1 will_retain')
    const publish = describePacket({ cmd: "publish", topic: "a/b", payload: bytes("payload-body"), qos: 1, retain: true, dup: true, messageId: 7 })
    expect(publish).toBe('PUBLISH "a/b" qos=1 pi=7 dup retain size=12')
    expect(describePacket({ cmd: "suback", messageId: 3, granted: [1, 128] })).toBe("SUBACK pi=3 granted=[1,128]")
    expect(describePacket({ cmd: "connack", returnCode: 5, sessionPresent: false })).toBe("CONNACK rc=5")
    expect(describePacket({ cmd: "subscribe", messageId: 2, subscriptions: [{ topic: "x/#", qos: 2 }] })).toBe('SUBSCRIBE pi=2 ["x/#" qos=2]')
    // A topic cannot forge a log line.
    expect(describePacket({ cmd: "unsubscribe", messageId: 4, unsubscriptions: ["a\n[INF] forged"] })).toBe('UNSUBSCRIBE pi=4 ["a\\n[INF] forged"]')
    for (const line of [connect, publish]) expect(line).not.toMatch(/hunter2|payload-body|will-body/)
  })
})
