// The v5 decoder's hot path for a PUBLISH without properties on the topic of the one
// before it, and the delivery path's 3.1.1 PUBLISH with an empty property block: both
// must give exactly what the full paths give, for every input, good or bad.
import * as fc from "fast-check"
import mqttPacket from "mqtt-packet"
import { describe, expect, it } from "vitest"
import { encodePublishRange } from "../../src/core/mqtt/codec.js"
import { Decoder } from "../../src/core/mqtt/v5/decode.js"
import { encodePublishRange as encodePublishRangeV5 } from "../../src/core/mqtt/v5/encode.js"
import { PacketError } from "../../src/core/mqtt/v5/reader.js"
import { OutBuf } from "../../src/core/outbuf.js"

const TOPICS = ["a/b", "sensors/7/temp", "é/x", ""]

/** What decoding gives: the packet, or the error's code and text. */
const outcome = (d: Decoder, first: number, body: Buffer): unknown => {
  try {
    const p = d.decode(first, body, 0, body.length) as { payload?: Uint8Array }
    return { ...p, ...(p.payload !== undefined && { payload: Buffer.from(p.payload).toString("hex") }) }
  } catch (e) {
    if (!(e instanceof PacketError)) throw e
    return { code: e.code, message: e.message }
  }
}

const u16 = (n: number): Buffer => Buffer.from([n >> 8, n & 0xff])
const str = (s: string): Buffer => Buffer.concat([u16(Buffer.byteLength(s)), Buffer.from(s)])

const publishCase = fc.record({
  flags: fc.nat(15),
  topic: fc.constantFrom(...TOPICS),
  packetId: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 65535 })),
  // Property Length 0, a User Property, a Topic Alias, or a truncated block
  props: fc.constantFrom("none", "user", "alias", "cut"),
  payload: fc.uint8Array({ maxLength: 40 }),
  // cut the body short (a topic or packet id past its end)
  cut: fc.oneof(fc.constant(-1), fc.nat(8)),
  maximumPacketSize: fc.oneof(fc.constant(undefined), fc.integer({ min: 8, max: 80 }))
})

type PublishCase = typeof publishCase extends fc.Arbitrary<infer T> ? T : never

const bodyOf = (c: PublishCase): Buffer => {
  const qos = (c.flags >> 1) & 3
  const props = c.props === "none" ? Buffer.from([0])
    : c.props === "user" ? Buffer.concat([Buffer.from([1 + 3 + 3, 0x26]), str("k"), str("v")])
    : c.props === "alias" ? Buffer.from([3, 0x23, 0, 1])
    : Buffer.from([5, 0x23])
  const body = Buffer.concat([str(c.topic), qos > 0 ? u16(c.packetId) : Buffer.alloc(0), props, Buffer.from(c.payload)])
  return c.cut < 0 ? body : body.subarray(0, Math.min(body.length, c.cut))
}

describe("MQTT 5.0 PUBLISH decoding: the repeated-topic hot path", () => {
  it("gives what the full path gives, for any PUBLISH after one on the same topic", () => {
    fc.assert(
      fc.property(publishCase, (c) => {
        const first = 0x30 | c.flags
        const body = bodyOf(c)
        const options = c.maximumPacketSize === undefined ? {} : { maximumPacketSize: c.maximumPacketSize }
        // primed: the topic is the one remembered (a first PUBLISH on it, by the full path)
        const primed = new Decoder(options)
        const prime = Buffer.concat([str(c.topic), Buffer.from([0])])
        if (c.topic !== "") outcome(primed, 0x30, prime) // (refused when over a tiny Maximum Packet Size: then nothing is remembered)
        expect(outcome(primed, first, body)).toEqual(outcome(new Decoder(options), first, body))
      }),
      { numRuns: 3000 }
    )
  })

  it("decodes a repeated PUBLISH as mqtt-packet does, and keeps no reader on the bytes", () => {
    const d = new Decoder()
    for (let i = 1; i <= 3; i++) {
      const bytes = mqttPacket.generate({ cmd: "publish", topic: "a/b", payload: Buffer.from(`m${i}`), qos: 1, messageId: i, retain: i === 2, dup: false, properties: {} } as mqttPacket.IPublishPacket, { protocolVersion: 5 })
      const p = d.decode(bytes[0]!, bytes, 2, bytes.length) as { topic: string; payload: Uint8Array; messageId: number; retain: boolean }
      expect({ topic: p.topic, payload: Buffer.from(p.payload).toString(), messageId: p.messageId, retain: p.retain }).toEqual({ topic: "a/b", payload: `m${i}`, messageId: i, retain: i === 2 })
    }
  })
})

describe("MQTT 5.0 QoS 0 delivery without properties", () => {
  it("is the v5 encoder's PUBLISH byte for byte, and mqtt-packet reads it", () => {
    fc.assert(
      fc.property(fc.constantFrom(...TOPICS.filter((t) => t !== "")), fc.uint8Array({ maxLength: 300 }), fc.boolean(), (topic, payload, retain) => {
        const src = Buffer.concat([Buffer.alloc(5, 1), Buffer.from(payload)])
        const plain = new OutBuf()
        encodePublishRange(plain, topic, src, 5, src.length, 0, retain, false, undefined, undefined, true)
        const full = new OutBuf()
        encodePublishRangeV5(full, { topic, topicAlias: 0, qos: 0, retain, dup: false, messageId: undefined, messageExpiryInterval: -1, subscriptionIdentifiers: undefined, messageProperties: undefined }, src, 5, src.length)
        const a = Buffer.concat(plain.takeAll() ?? [])
        const b = Buffer.concat(full.takeAll() ?? [])
        expect(a.toString("hex")).toBe(b.toString("hex"))
        const parsed: Array<mqttPacket.Packet> = []
        const parser = mqttPacket.parser({ protocolVersion: 5 })
        parser.on("packet", (p) => parsed.push(p))
        parser.parse(a)
        expect(parsed).toHaveLength(1)
        const p = parsed[0] as mqttPacket.IPublishPacket
        expect({ topic: p.topic, payload: Buffer.from(p.payload).toString("hex"), retain: p.retain, qos: p.qos }).toEqual({ topic, payload: Buffer.from(payload).toString("hex"), retain, qos: 0 })
      }),
      { numRuns: 500 }
    )
  })
})

describe("MQTT 5.0 acknowledgement decoding: the packet-id-only hot path", () => {
  // A PUBACK/PUBREC/PUBREL/PUBCOMP of Remaining Length 2 means Success without properties
  // [MQTT-3.4.2-1]: it must decode as the same packet with its reason code written out (the
  // full path) does, and be refused where that is (bad flags, packet id 0, a Maximum Packet
  // Size under 4), with the same reason code.
  const ackCase = fc.record({
    type: fc.integer({ min: 4, max: 7 }),
    flags: fc.oneof(fc.constant(-1), fc.nat(15)),
    packetId: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 65535 })),
    maximumPacketSize: fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 8 }))
  })

  const codeOf = (o: unknown): unknown => (typeof o === "object" && o !== null && "code" in o ? { code: (o as { code: number }).code } : o)

  it("gives what the full path gives for the same acknowledgement with its Success code written", () => {
    fc.assert(
      fc.property(ackCase, (c) => {
        // -1: the flags the type requires (PUBREL 0b0010, the others 0)
        const first = (c.type << 4) | (c.flags === -1 ? (c.type === 6 ? 2 : 0) : c.flags)
        const options = c.maximumPacketSize === undefined ? {} : { maximumPacketSize: c.maximumPacketSize + 1 }
        const short = outcome(new Decoder(c.maximumPacketSize === undefined ? {} : { maximumPacketSize: c.maximumPacketSize }), first, u16(c.packetId))
        const long = outcome(new Decoder(options), first, Buffer.concat([u16(c.packetId), Buffer.from([0])]))
        expect(codeOf(short)).toEqual(codeOf(long))
      }),
      { numRuns: 3000 }
    )
  })

  it("reads mqtt-packet's short PUBACK and PUBCOMP", () => {
    const d = new Decoder()
    for (const cmd of ["puback", "pubcomp"] as const) {
      const bytes = mqttPacket.generate({ cmd, messageId: 513, reasonCode: 0 } as mqttPacket.IPubackPacket, { protocolVersion: 5 })
      expect(bytes.length).toBe(4)
      expect(d.decode(bytes[0]!, bytes, 2, bytes.length)).toEqual({ cmd, messageId: 513, reasonCode: 0, properties: {} })
    }
  })
})
