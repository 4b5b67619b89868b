// A persistent session whose client is away is an MqttSession in the `away` phase: it keeps
// its subscriptions, what was in flight and what waits, queues the QoS 1/2 messages routed
// to it at the QoS its subscriptions grant (one choice, `bestGrant`, for every session),
// within its queue's bounds, and gives a connection everything back to resume from.
import { describe, expect, it } from "vitest"
import { bestGrant } from "../../src/core/mqtt/qos.js"
import { defaultSessionConfig, MqttSession, type SessionConfig, type SessionDeps } from "../../src/core/mqtt/session.js"
import { bytes, connected, ofType, pkt, seededBytes, sent } from "../helpers/mqtt-session.js"
import type { SessionSnapshot } from "../../src/core/mqtt/types.js"
import { subscriptionSubjects } from "../../src/core/mqtt/topic.js"

const grant = (filter: string, qos: number) => {
  const subjects = subscriptionSubjects(filter)
  if (!subjects.ok) throw new Error(filter)
  return { filter, subjects: subjects.value, qos }
}

describe("bestGrant: the QoS a message goes to a session with", () => {
  it("is the highest QoS of the subscriptions matching it; -1 when none does [MQTT-3.3.5-1]", () => {
    const grants = [grant("a/#", 0), grant("a/+", 2), grant("a/b", 1)]
    expect(bestGrant(grants, "a.b")).toBe(2)
    expect(bestGrant(grants, "a.b.c")).toBe(0)
    expect(bestGrant(grants, "a")).toBe(0)
    expect(bestGrant(grants, "b")).toBe(-1)
    expect(bestGrant([], "a")).toBe(-1)
  })

  it("does not let a filter starting with a wildcard match a topic starting with $ [MQTT-4.7.2-1]", () => {
    expect(bestGrant([grant("#", 2), grant("+/x", 1)], "$SYS.x")).toBe(-1)
    expect(bestGrant([grant("#", 2), grant("$SYS/#", 1)], "$SYS.x")).toBe(1)
  })
})

const released: Array<Uint8Array> = []
const deps = (over: Partial<SessionDeps> = {}): SessionDeps => ({ randomBytes: seededBytes(1), released: (p) => released.push(p), ...over })
const config = (over: Partial<SessionConfig> = {}): SessionConfig => ({ ...defaultSessionConfig, ...over })

const stored = (over: Partial<SessionSnapshot> = {}): SessionSnapshot => ({
  clientId: "dev",
  owner: "ann",
  subscriptions: [{ filter: "t/#", qos: 1 }, { filter: "t/hot", qos: 2 }, { filter: "q0/#", qos: 0 }],
  outbound: [],
  queued: [],
  inboundQos2: [],
  lastPacketId: 0,
  ...over
})

const away = (snap: SessionSnapshot = stored(), over: Partial<SessionDeps> = {}, limits: Partial<SessionConfig> = {}) =>
  MqttSession.away(snap, 0, deps(over), config(limits))

const deliver = (subject: string, payload: string, qos: number, ref?: number) =>
  ({ type: "deliver", subject, payload: bytes(payload), qos, ref }) as const

const queuedOf = (s: MqttSession) => s.snapshot().queued.map((q) => [q.topic, q.qos, q.payload === undefined ? undefined : Buffer.from(q.payload).toString(), q.ref])

describe("an away session", () => {
  it("queues a routed QoS 1/2 message at the best QoS its subscriptions grant, capped by the message's; QoS 0 is not kept", () => {
    const s = away()
    for (const a of [
      deliver("t.hot", "hot", 2),
      deliver("t.cold", "cold", 2),
      deliver("t.hot", "capped", 1),
      deliver("t.x", "zero", 0),
      deliver("q0.x", "granted zero", 2),
      deliver("elsewhere", "no match", 2)
    ]) expect(s.step(a, 1)).toEqual([])
    expect(queuedOf(s)).toEqual([["t/hot", 2, "hot", undefined], ["t/cold", 1, "cold", undefined], ["t/hot", 1, "capped", undefined]])
    expect(s.awayQueue()).toEqual({ messages: 3, bytes: 3 + 4 + 6, bytesInMemory: 3 + 4 + 6 })
  })

  it("keeps a stored message by reference only: its payload waits in the store, its size counts", () => {
    const s = away()
    const before = s.storedTaken
    s.step(deliver("t.a", "on disk", 1, 41), 1)
    expect(s.storedTaken).toBe(before + 1)
    s.step(deliver("elsewhere", "not taken", 1, 42), 1)
    expect(s.storedTaken).toBe(before + 1)
    expect(queuedOf(s)).toEqual([["t/a", 1, undefined, 41]])
    expect(s.awayQueue()).toEqual({ messages: 1, bytes: "on disk".length, bytesInMemory: 0 })
  })

  it("queues nothing its owner may not receive", () => {
    const s = away(stored(), { canReceive: (subject) => subject !== "t.secret" })
    s.step(deliver("t.secret", "no", 1), 1)
    s.step(deliver("t.open", "yes", 1), 1)
    expect(queuedOf(s)).toEqual([["t/open", 1, "yes", undefined]])
  })

  it("at max_queued_messages the oldest waiting message gives way, said with its ref; a reload's limits apply", () => {
    released.length = 0
    const s = away(stored(), {}, { maxQueued: 2 })
    s.step(deliver("t.1", "one", 1, 1), 1)
    s.step(deliver("t.2", "two", 1), 1)
    expect(ofType(s.step(deliver("t.3", "three", 1), 1), "drop")).toEqual([{ type: "drop", reason: "queue_full", ref: 1 }])
    const drops = ofType(s.step(deliver("t.4", "four", 1), 1), "drop")
    expect(drops).toEqual([{ type: "drop", reason: "queue_full", ref: undefined }])
    // The payload it held is let go.
    expect(released.map((p) => Buffer.from(p).toString())).toEqual(["two"])
    expect(queuedOf(s).map((q) => q[0])).toEqual(["t/3", "t/4"])
    s.setLimits(config({ maxQueued: 3 }))
    expect(ofType(s.step(deliver("t.5", "five", 1), 1), "drop")).toEqual([])
    expect(queuedOf(s).map((q) => q[0])).toEqual(["t/3", "t/4", "t/5"])
  })

  it("at max_queued_bytes the same", () => {
    const s = away(stored(), {}, { maxQueuedBytes: 10 })
    s.step(deliver("t.1", "12345", 1), 1)
    s.step(deliver("t.2", "12345", 1), 1)
    expect(ofType(s.step(deliver("t.3", "123", 1), 1), "drop")).toEqual([{ type: "drop", reason: "queue_full", ref: undefined }])
    expect(s.awayQueue()).toMatchObject({ messages: 2, bytes: 8 })
  })

  it("takes no other input and has no deadline", () => {
    const s = away()
    expect(s.nextDeadline()).toBeUndefined()
    expect(s.step({ type: "tick" }, 1_000_000)).toEqual([])
    expect(s.step(pkt({ cmd: "pingreq" }), 1)).toEqual([])
    expect(s.step({ type: "connectionLost" }, 1)).toEqual([])
    expect(s.step({ type: "sessionReady", stored: undefined, owner: "" }, 1)).toEqual([])
    expect(s.isClosed).toBe(false)
  })

  it("lets go of the payloads of stored messages it had in memory, and keeps the others", () => {
    released.length = 0
    const inFlight = bytes("in flight, stored")
    const inline = bytes("in flight, from NATS")
    const waiting = bytes("waiting, stored")
    const s = away(stored({
      outbound: [
        { packetId: 1, qos: 1, topic: "t/a", payload: inFlight, retain: false, phase: "publish", ref: 7 },
        { packetId: 2, qos: 1, topic: "t/b", payload: inline, retain: false, phase: "publish" },
        { packetId: 3, qos: 2, topic: "", payload: new Uint8Array(0), retain: false, phase: "pubrel" }
      ],
      queued: [{ qos: 2, topic: "t/c", payload: waiting, size: waiting.length, retain: false, ref: 8 }],
      inboundQos2: [9],
      lastPacketId: 3
    }))
    expect(released).toEqual([inFlight, waiting])
    const snap = s.snapshot()
    expect(snap.outbound.map((o) => [o.packetId, o.phase, o.payload, o.ref])).toEqual([[1, "publish", undefined, 7], [2, "publish", inline, undefined], [3, "pubrel", new Uint8Array(0), undefined]])
    expect(snap.queued.map((q) => [q.topic, q.payload, q.ref])).toEqual([["t/c", undefined, 8]])
    expect(s.awayQueue()).toEqual({ messages: 1, bytes: waiting.length, bytesInMemory: inline.length })
  })
})

describe("a session goes away and comes back", () => {
  it("resumes with what it had and what came while it was away, in order, the owner kept [MQTT-4.4.0-1]", () => {
    // Connected: subscribed, one message in flight and unacknowledged.
    const live = connected({ connect: { clientId: "dev", clean: false }, owner: "ann" })
    live.session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 1 }] }), 0)
    live.session.step(deliver("t.a", "before", 1), 0)
    live.session.step({ type: "connectionLost" }, 1)
    const s = MqttSession.away(live.session.snapshot(), 1, deps(), config())
    s.step(deliver("t.b", "while away", 1), 2)
    const back = connected({ connect: { clientId: "dev", clean: false }, owner: "ann", stored: s.snapshot(), now: 3 })
    const out = sent(back.readyActions).filter((p) => p.cmd === "publish")
    expect(out.map((p) => [p.cmd === "publish" && p.topic, p.cmd === "publish" && p.dup, p.cmd === "publish" && Buffer.from(p.payload).toString()])).toEqual([
      ["t/a", true, "before"],
      ["t/b", false, "while away"]
    ])
    expect(back.session.snapshot().owner).toBe("ann")
  })

  it("a session stored before owners were kept stays ownerless while away (any user of the account may resume it)", () => {
    const { owner: _dropped, ...legacy } = stored()
    expect(away(legacy).snapshot().owner).toBeUndefined()
  })
})
