// Subscription options, Subscription Identifiers and Shared Subscriptions as data a
// session applies.
import { describe, expect, it } from "vitest"
import {
  deliveryFor,
  excludedByNoLocal,
  forwardedRetain,
  type HeldSubscription,
  natsSubscription,
  parseShared,
  sendsRetained,
  sharedFilterOf
} from "../../src/core/mqtt/v5/index.js"

const sub = (topic: string, o: Partial<{ qos: number; nl: boolean; rap: boolean; rh: number }> = {}, identifier?: number): HeldSubscription => ({
  options: { topic, qos: o.qos ?? 0, nl: o.nl ?? false, rap: o.rap ?? false, rh: o.rh ?? 0 },
  identifier
})

describe("retained messages on SUBSCRIBE (Retain Handling)", () => {
  it("[MQTT-3.3.1-9] 0: sent for every SUBSCRIBE", () => {
    expect(sendsRetained({ topic: "a/#", rh: 0 }, false)).toBe(true)
    expect(sendsRetained({ topic: "a/#", rh: 0 }, true)).toBe(true)
  })

  it("[MQTT-3.3.1-10] 1: sent only when the subscription did not exist", () => {
    expect(sendsRetained({ topic: "a/#", rh: 1 }, false)).toBe(true)
    expect(sendsRetained({ topic: "a/#", rh: 1 }, true)).toBe(false)
  })

  it("[MQTT-3.3.1-11] 2: never sent", () => {
    expect(sendsRetained({ topic: "a/#", rh: 2 }, false)).toBe(false)
  })

  it("a Shared Subscription gets none: retained messages go to new Non-shared Subscriptions (3.3.1.3)", () => {
    expect(sendsRetained({ topic: "$share/g/a/#", rh: 0 }, false)).toBe(false)
  })
})

describe("the RETAIN flag of what is forwarded", () => {
  it("[MQTT-3.3.1-12] 0 without Retain As Published", () => {
    expect(forwardedRetain(false, true)).toBe(false)
  })

  it("[MQTT-3.3.1-13] as published with Retain As Published", () => {
    expect(forwardedRetain(true, true)).toBe(true)
    expect(forwardedRetain(true, false)).toBe(false)
  })

  it("1 for retained messages sent because of a new subscription (3.3.1.3)", () => {
    expect(forwardedRetain(false, false, true)).toBe(true)
  })
})

describe("one delivery for several matching subscriptions", () => {
  it("[MQTT-3.8.3-3] No Local: nothing back to the connection that published it", () => {
    expect(excludedByNoLocal(true, "dev-1", "dev-1")).toBe(true)
    expect(excludedByNoLocal(true, "dev-2", "dev-1")).toBe(false)
    expect(excludedByNoLocal(false, "dev-1", "dev-1")).toBe(false)
    expect(excludedByNoLocal(true, undefined, "dev-1")).toBe(false) // published by a NATS client
    expect(deliveryFor([sub("a/#", { nl: true, qos: 1 })], { qos: 1, retain: false, publisherClientId: "me" }, "me")).toBeUndefined()
  })

  it("[MQTT-3.3.4-2] the best QoS of the matching subscriptions, capped by the message's", () => {
    const matches = [sub("a/+", { qos: 0 }), sub("a/#", { qos: 2 })]
    expect(deliveryFor(matches, { qos: 1, retain: false }, "me")).toMatchObject({ qos: 1 })
    expect(deliveryFor(matches, { qos: 2, retain: false }, "me")).toMatchObject({ qos: 2 })
  })

  it("[MQTT-3.3.4-3] [MQTT-3.3.4-4] one copy carries the Subscription Identifier of every matching subscription that has one", () => {
    const matches = [sub("a/+", {}, 7), sub("a/#", {}), sub("#", {}, 3)]
    expect(deliveryFor(matches, { qos: 0, retain: false }, "me")).toEqual({ qos: 0, retain: false, subscriptionIdentifiers: [7, 3] })
    expect(deliveryFor([sub("a")], { qos: 0, retain: false }, "me")).toMatchObject({ subscriptionIdentifiers: undefined })
  })

  it("leaves out the identifiers of subscriptions No Local excludes", () => {
    const matches = [sub("a/+", { nl: true }, 7), sub("a/#", {}, 8)]
    expect(deliveryFor(matches, { qos: 0, retain: true, publisherClientId: "me" }, "me")).toEqual({ qos: 0, retain: false, subscriptionIdentifiers: [8] })
  })

  it("keeps the RETAIN flag when a matching subscription asks for Retain As Published", () => {
    expect(deliveryFor([sub("a/+"), sub("a/#", { rap: true })], { qos: 0, retain: true }, "me")).toMatchObject({ retain: true })
  })
})

describe("Shared Subscriptions (4.8.2)", () => {
  it("[MQTT-4.8.2-1] [MQTT-4.8.2-2] splits $share/ShareName/filter", () => {
    expect(parseShared("$share/workers/jobs/#")).toEqual({ ok: true, shared: true, group: "workers", filter: "jobs/#" })
    expect(parseShared("jobs/#")).toEqual({ ok: true, shared: false, filter: "jobs/#" })
    expect(parseShared("$shared/x/y")).toMatchObject({ shared: false })
  })

  it("[MQTT-4.8.2-1] a ShareName of at least one character", () => {
    expect(parseShared("$share//jobs")).toMatchObject({ ok: false, code: 0x8f, ruleId: "MQTT-4.8.2-1" })
  })

  it("[MQTT-4.8.2-2] no wildcard in the ShareName, and a filter after it", () => {
    expect(parseShared("$share/g+/jobs")).toMatchObject({ ok: false, code: 0x8f, ruleId: "MQTT-4.8.2-2" })
    expect(parseShared("$share/#/jobs")).toMatchObject({ ok: false, ruleId: "MQTT-4.8.2-2" })
    expect(parseShared("$share/g")).toMatchObject({ ok: false, ruleId: "MQTT-4.8.2-2" })
    expect(parseShared("$share/g/")).toMatchObject({ ok: false, ruleId: "MQTT-4.8.2-2" })
  })

  it("refuses a ShareName a NATS queue group cannot carry", () => {
    expect(parseShared("$share/a b/jobs")).toMatchObject({ ok: false, code: 0x8f })
  })

  it("is the NATS queue group of that name on the filter's subjects", () => {
    expect(natsSubscription("$share/workers/jobs/#")).toEqual({ ok: true, subjects: ["jobs", "jobs.>"], queue: "workers" })
    expect(natsSubscription("$share/w/a/+/c")).toEqual({ ok: true, subjects: ["a.*.c"], queue: "w" })
    expect(natsSubscription("a/+/c")).toEqual({ ok: true, subjects: ["a.*.c"], queue: undefined })
  })

  it("refuses with 0x8F a filter that is invalid or reaches the internal $MQTT subjects", () => {
    expect(natsSubscription("$share/w/a/#/b")).toMatchObject({ ok: false, code: 0x8f })
    expect(natsSubscription("$share/w/$MQTT/sess/x")).toMatchObject({ ok: false, code: 0x8f })
    expect(natsSubscription("$share/w")).toMatchObject({ ok: false, code: 0x8f })
  })

  it("a NATS queue subscription reads back as the shared filter an MQTT 5 client would use", () => {
    expect(sharedFilterOf("jobs.>", "workers")).toBe("$share/workers/jobs/#")
    expect(sharedFilterOf("a.*.c", "w")).toBe("$share/w/a/+/c")
    expect(natsSubscription(sharedFilterOf("a.*.c", "w")!)).toEqual({ ok: true, subjects: ["a.*.c"], queue: "w" })
    expect(sharedFilterOf("a", "x+y")).toBeUndefined()
    expect(sharedFilterOf("a", "x/y")).toBeUndefined()
  })
})
