// The header of a stored MQTT 5.0 copy and the stream's per-message TTL (core/mqtt/record.ts):
// the bridge's `Nats-TTL` line is the only one the stream reads as a TTL (a message's own
// `Nats-TTL`, a User Property or a NATS header, is kept escaped and reads back the same),
// the bridge's line never reaches a subscriber, and the Message Expiry Interval is read as
// `natsToPublish` reads it (`messageExpiryOf`).
import { describe, expect, it } from "vitest"
import { ttlOfHeaders } from "../../src/core/jetstream/headers.js"
import { qosHeader, qosOfHeader, storedHeader, storedParts } from "../../src/core/mqtt/record.js"
import { headerBlock, messageExpiryOf, natsToPublish, publishToNats } from "../../src/core/mqtt/v5/nats.js"

const ttlOf = (b: Buffer): number => ttlOfHeaders(b, 0, b.length)
const block = (s: string): Buffer => Buffer.from(s, "utf8")

describe("the stored copy's Nats-TTL", () => {
  it("is written after the bridge's own lines and read back as the stream's TTL; subscribers never see it", () => {
    const hdr = headerBlock([["Mqtt-Message-Expiry", "30"], ["k", "v"]])!
    const stored = storedHeader(qosHeader(1), hdr, "r.s", 30)
    expect(stored.toString()).toBe("NATS/1.0\r\nMqtt-QoS: 1\r\nNats-TTL: 30\r\nMqtt-Reply: r.s\r\nMqtt-Message-Expiry: 30\r\nk: v\r\n\r\n")
    expect(ttlOf(stored)).toBe(30)
    expect(qosOfHeader(stored)).toBe(1)
    expect(storedParts(stored)).toEqual({ reply: "r.s", hdr })
    expect(ttlOf(storedHeader(qosHeader(1), hdr, undefined))).toBe(0)
    expect(ttlOf(storedHeader(qosHeader(1), undefined, undefined, 5))).toBe(5)
  })

  it("a message's own Nats-TTL (User Property or NATS header) is no TTL in the store, and comes back as the same User Property", () => {
    const own = publishToNats("t", { userProperties: [["Nats-TTL", "1"], ["nats-ttl", "b ü"]], messageExpiryInterval: 600 })
    if (!own.ok) throw new Error("expected a NATS message")
    const hdr = headerBlock(own.headers)!
    expect(ttlOf(hdr)).toBe(1)
    for (const ttl of [0, 600]) {
      const stored = storedHeader(qosHeader(1), hdr, undefined, ttl)
      expect(ttlOf(stored)).toBe(ttl)
      const back = storedParts(stored)
      expect(natsToPublish("t", undefined, back.hdr).properties).toEqual(natsToPublish("t", undefined, hdr).properties)
    }
    const fromNats = block("NATS/1.0\r\n  Nats-TTL :  never \r\nX: y\r\n\r\n")
    const stored = storedHeader(qosHeader(2), fromNats, undefined)
    expect(ttlOf(stored)).toBe(0)
    expect(natsToPublish("t", undefined, storedParts(stored).hdr).properties.userProperties).toEqual([["Nats-TTL", "never"], ["X", "y"]])
  })
})

describe("messageExpiryOf", () => {
  it("reads the Message Expiry Interval as natsToPublish does", () => {
    for (
      const s of [
        "NATS/1.0\r\nMqtt-Message-Expiry: 30\r\n\r\n",
        "NATS/1.0\r\nmqtt-message-expiry:\t7 \r\n\r\n",
        "NATS/1.0\r\nMqtt-Message-Expiry: x\r\nMqtt-Message-Expiry: 9\r\n\r\n",
        "NATS/1.0\r\nMqtt-Message-Expiry: 4294967296\r\n\r\n",
        "NATS/1.0\r\nMqtt-Message-Expiry: 012\r\n\r\n",
        "NATS/1.0\r\nOther: 1\r\n\r\n",
        "NATS/1.0 503\r\n\r\n"
      ]
    ) expect(messageExpiryOf(block(s))).toBe(natsToPublish("t", undefined, block(s)).properties.messageExpiryInterval)
    expect(messageExpiryOf(block("NATS/1.0\r\nMqtt-Message-Expiry: x\r\nMqtt-Message-Expiry: 9\r\n\r\n"))).toBe(9)
    expect(messageExpiryOf(undefined)).toBeUndefined()
  })
})
