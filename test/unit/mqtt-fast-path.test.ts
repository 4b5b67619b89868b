// The session's hot paths (publishQos0, deliverQos0) make the decisions `step` makes:
// checked against `step` on twin sessions over random subscriptions, topics, QoS and
// permissions, and for the states where they must hand the input back to `step`.
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { MqttSession, defaultSessionConfig } from "../../src/core/mqtt/session.js"
import { bytes, connected, connectPacket, ofType, pkt, seededBytes, sent } from "../helpers/mqtt-session.js"

const LEVELS = ["a", "b", "c", "d"] as const
const topicArb = fc.array(fc.constantFrom(...LEVELS), { minLength: 1, maxLength: 4 }).map((ls) => ls.join("/"))
const filterArb = fc
  .array(fc.constantFrom(...LEVELS, "+"), { minLength: 1, maxLength: 4 })
  .chain((ls) => fc.boolean().map((hash) => (hash ? [...ls, "#"] : ls).join("/")))
const subsArb = fc.array(fc.record({ filter: filterArb, qos: fc.constantFrom(0, 1, 2) }), { minLength: 0, maxLength: 4 })

/** Two sessions in the same state: one driven by `step` only, one through the hot path. */
const twins = (subs: ReadonlyArray<{ filter: string; qos: number }>, canPublish?: (topic: string) => boolean) => {
  const make = () => {
    const f = connected({ deps: canPublish === undefined ? {} : { canPublish: (t) => canPublish(t) } })
    if (subs.length > 0) f.session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: subs.map((s) => ({ topic: s.filter, qos: s.qos })) }), 0)
    return f.session
  }
  return { viaStep: make(), viaFast: make() }
}

describe("the session's hot paths decide as step does", () => {
  it("publishQos0 routes to the subject step routes to, or hands the packet back", () => {
    fc.assert(
      fc.property(topicArb, fc.boolean(), (topic, permitted) => {
        const { viaStep, viaFast } = twins([], () => permitted)
        const routed = ofType(viaStep.step(pkt({ cmd: "publish", topic, payload: bytes("x"), qos: 0, retain: false, dup: false }), 5), "publish")
        const fast = viaFast.publishQos0(topic, 5)
        if (fast === undefined) expect(routed).toEqual([])
        else expect(routed.map((a) => a.subject)).toEqual([fast])
      })
    )
  })

  it("deliverQos0 sends at QoS 0 on step's topic, says 'not for me' when step sends nothing, and hands QoS 1/2 back", () => {
    fc.assert(
      fc.property(subsArb, topicArb, fc.constantFrom(0, 1, 2), (subs, topic, qos) => {
        const subject = topic.split("/").join(".")
        const { viaStep, viaFast } = twins(subs)
        const out = sent(viaStep.step({ type: "deliver", subject, payload: bytes("m"), qos, ref: undefined }, 5))
        const fast = viaFast.deliverQos0(subject, qos)
        if (fast === null) expect(out).toEqual([])
        else if (fast === undefined) expect(out.map((p) => (p.cmd === "publish" ? p.qos : -1))).not.toContain(0)
        else expect(out).toEqual([{ cmd: "publish", topic: fast, payload: bytes("m"), qos: 0, retain: false, dup: false }])
      })
    )
  })

  it("take nothing before the session is connected, nor a topic that is not valid", () => {
    const s = new MqttSession(0, { randomBytes: seededBytes(1) }, defaultSessionConfig)
    expect(s.publishQos0("a/b", 0)).toBeUndefined()
    expect(s.deliverQos0("a.b", 0)).toBeNull()
    s.step(pkt(connectPacket()), 0)
    expect(s.publishQos0("a/b", 0)).toBeUndefined() // CONNACK not sent yet: step queues it
    s.step({ type: "sessionReady", stored: undefined }, 0)
    expect(s.publishQos0("a/+", 0)).toBeUndefined() // a wildcard in a topic name: step closes
    expect(s.publishQos0("a/b", 0)).toBe("a.b")
  })
})
