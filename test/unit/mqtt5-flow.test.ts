// Flow control and Maximum Packet Size: Receive Maximum in both directions, and the
// client's Maximum Packet Size on what the server sends.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  DEFAULT_RECEIVE_MAXIMUM,
  endsExchange,
  InboundQuota,
  PacketError,
  PacketSizeLimit,
  publishSize,
  SendQuota
} from "../../src/core/mqtt/v5/index.js"

describe("Receive Maximum of the server (what a client may have unacknowledged)", () => {
  it("[MQTT-3.3.4-7] one QoS 1/2 PUBLISH past the maximum is 0x93 Receive Maximum exceeded", () => {
    const q = new InboundQuota(2)
    q.received(1)
    q.received(2)
    let err: unknown
    try {
      q.received(3)
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(PacketError)
    expect(err).toMatchObject({ code: 0x93, ruleId: "MQTT-3.3.4-7" })
  })

  it("an acknowledged exchange frees its place; a resend of one in flight takes none", () => {
    const q = new InboundQuota(2)
    q.received(1)
    q.received(2)
    q.received(2) // a QoS 2 resend (DUP) before its PUBREL
    q.completed(1)
    q.received(3)
    expect(q.size).toBe(2)
  })

  it("defaults to 65,535 when the server announces none", () => {
    expect(new InboundQuota().receiveMaximum).toBe(DEFAULT_RECEIVE_MAXIMUM)
  })

  it("PUBACK and PUBCOMP end an exchange; a PUBREC only with a failure code", () => {
    expect(endsExchange("puback", 0)).toBe(true)
    expect(endsExchange("puback", 0x10)).toBe(true)
    expect(endsExchange("pubcomp", 0)).toBe(true)
    expect(endsExchange("pubrec", 0)).toBe(false)
    expect(endsExchange("pubrec", 0x10)).toBe(false)
    expect(endsExchange("pubrec", 0x80)).toBe(true)
  })
})

describe("the server's send quota (the client's Receive Maximum)", () => {
  it("[MQTT-4.9.0-1] starts at the client's Receive Maximum", () => {
    expect(new SendQuota(5).available).toBe(5)
    expect(new SendQuota().available).toBe(65_535)
  })

  it("[MQTT-4.9.0-2] sends no QoS 1/2 PUBLISH at zero, and gets a place back per PUBACK, PUBCOMP or failed PUBREC", () => {
    const q = new SendQuota(2)
    expect(q.take()).toBe(true)
    expect(q.take()).toBe(true)
    expect(q.take()).toBe(false)
    expect(q.available).toBe(0)
    q.release()
    expect(q.take()).toBe(true)
  })

  it("never grows past the maximum, whatever the client acknowledges", () => {
    const q = new SendQuota(3)
    for (let i = 0; i < 10; i++) q.release()
    expect(q.available).toBe(3)
  })

  it("[MQTT-3.3.4-9] never more QoS 1/2 PUBLISH packets unacknowledged than the client's Receive Maximum", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 }), fc.array(fc.boolean(), { maxLength: 200 }), (max, ops) => {
        const q = new SendQuota(max)
        let inFlight = 0
        for (const send of ops) {
          if (send) {
            if (q.take()) inFlight++
          } else if (inFlight > 0) {
            inFlight--
            q.release()
          }
          expect(inFlight).toBeLessThanOrEqual(max)
          expect(q.available).toBe(max - inFlight)
        }
      })
    )
  })
})

describe("the client's Maximum Packet Size", () => {
  const head = (topic: string) => ({
    topic, qos: 1, retain: false, dup: false, messageId: 1, topicAlias: 0, messageExpiryInterval: -1,
    subscriptionIdentifiers: undefined, messageProperties: undefined
  })

  it("[MQTT-3.1.2-24] admits a PUBLISH up to the limit, fixed header included", () => {
    const limit = new PacketSizeLimit(publishSize(head("a/b"), 100))
    expect(limit.admitDelivery(publishSize(head("a/b"), 100))).toBe(true)
    expect(limit.dropped).toBe(0)
  })

  it("[MQTT-3.1.2-25] drops a larger one and counts it", () => {
    const limit = new PacketSizeLimit(publishSize(head("a/b"), 100))
    expect(limit.admitDelivery(publishSize(head("a/b"), 101))).toBe(false)
    expect(limit.admitDelivery(publishSize(head("a/bc"), 100))).toBe(false)
    expect(limit.dropped).toBe(2)
    expect(limit.droppedBytes).toBe(publishSize(head("a/b"), 101) + publishSize(head("a/bc"), 100))
  })

  it("has no limit but the protocol's when the client sets none", () => {
    expect(new PacketSizeLimit().admitDelivery(268_435_460)).toBe(true)
  })
})
