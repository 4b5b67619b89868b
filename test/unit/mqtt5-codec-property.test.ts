// Properties of the MQTT 5.0 codec over generated packets: decode(encode(p)) = p for
// every packet either side sends; byte-by-byte agreement with mqtt-packet's v5
// generator and parser; the delivery-path PUBLISH writer agrees with the generic
// encoder; and no input, random or mutated, makes the decoder throw anything but its
// own PacketError.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { OutBuf } from "../../src/core/outbuf.js"
import {
  Decoder,
  decodePacket,
  encode,
  encodePublishRange,
  type Packet,
  PacketError,
  publishHeadOf,
  publishSize,
  type Sender
} from "../../src/core/mqtt/v5/index.js"
import { mqttPacketGenerate, mqttPacketParse, packet, unframe } from "../helpers/mqtt5.js"

const decodeBytes = (bytes: Buffer, from: Sender): Packet => {
  const { first, body } = unframe(bytes)
  return decodePacket(first, body, { from })
}

const RUNS = { numRuns: 400 }

describe("MQTT 5 codec round trip", () => {
  for (const from of ["client", "server"] as const) {
    it(`decode(encode(p)) = p for every packet a ${from} sends`, () => {
      fc.assert(
        fc.property(packet(from), (p) => {
          expect(decodeBytes(encode(p, from), from)).toEqual(p)
        }),
        RUNS
      )
    })

    it(`re-encoding what was decoded gives the same bytes (${from})`, () => {
      fc.assert(
        fc.property(packet(from), (p) => {
          const bytes = encode(p, from)
          expect(encode(decodeBytes(bytes, from), from).equals(bytes)).toBe(true)
        }),
        RUNS
      )
    })
  }
})

describe("decoding in place", () => {
  it("a body inside a larger chunk decodes as alone, reading nothing outside it", () => {
    fc.assert(
      fc.property(packet("client"), fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 8 }), (p, before, after) => {
        const { first, body } = unframe(encode(p, "client"))
        const chunk = Buffer.concat([before, body, after])
        const d = new Decoder()
        expect(d.decode(first, chunk, before.length, before.length + body.length)).toEqual(p)
      }),
      RUNS
    )
  })
})

describe("MQTT 5 codec agrees with mqtt-packet", () => {
  for (const from of ["client", "server"] as const) {
    it(`writes the bytes mqtt-packet's v5 generator writes (${from} packets)`, () => {
      fc.assert(
        fc.property(packet(from, { grouped: true, mqttPacketCompatible: true }), (p) => {
          expect(encode(p, from).toString("hex")).toBe(mqttPacketGenerate(p).toString("hex"))
        }),
        RUNS
      )
    })

    it(`mqtt-packet's v5 parser reads back what we write (${from} packets)`, () => {
      fc.assert(
        fc.property(packet(from, { grouped: true }), (p) => {
          const parsed = mqttPacketParse(encode(p, from))
          expect(parsed.error).toBeUndefined()
          expect(parsed.packets).toEqual([p])
        }),
        RUNS
      )
    })

    it(`we read what mqtt-packet's v5 generator writes (${from} packets)`, () => {
      fc.assert(
        fc.property(packet(from, { grouped: true, mqttPacketCompatible: true }), (p) => {
          expect(decodeBytes(mqttPacketGenerate(p), from)).toEqual(p)
        }),
        RUNS
      )
    })
  }
})

describe("the delivery-path PUBLISH writer", () => {
  it("writes the bytes the generic encoder writes, and publishSize says how many", () => {
    const server = packet("server").filter((p) => p.cmd === "publish")
    fc.assert(
      fc.property(server, fc.boolean(), (p, big) => {
        if (p.cmd !== "publish") return
        const payload = big ? Buffer.alloc(5000, 7) : p.payload // by reference from 4 KiB on
        const q = { ...p, payload }
        const out = new OutBuf(64)
        const n = encodePublishRange(out, publishHeadOf(q), payload, 0, payload.length)
        const bytes = out.take()!
        expect(bytes.toString("hex")).toBe(encode(q, "server").toString("hex"))
        expect(n).toBe(bytes.length)
        expect(publishSize(publishHeadOf(q), payload.length)).toBe(bytes.length)
      }),
      RUNS
    )
  })
})

/** Decodes and, when that succeeds, re-encodes and decodes again: the same packet must come back. */
const decodeHolds = (first: number, body: Buffer, from: Sender): void => {
  let p: Packet
  try {
    p = decodePacket(first, body, { from })
  } catch (e) {
    expect(e).toBeInstanceOf(PacketError)
    expect([0x81, 0x82, 0x84, 0x8f, 0x90, 0x94, 0x95]).toContain((e as PacketError).code)
    return
  }
  const again = encode(p, from)
  const { first: f2, body: b2 } = unframe(again)
  expect(decodePacket(f2, b2, { from })).toEqual(p)
}

describe("MQTT 5 decoder on hostile input", () => {
  it("random bytes are a packet or a PacketError, never another throw", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 255 }), fc.uint8Array({ maxLength: 64 }), fc.constantFrom("client", "server"), (first, body, from) => {
        decodeHolds(first, Buffer.from(body), from as Sender)
      }),
      { numRuns: 3000 }
    )
  })

  it("valid packets with a byte changed, dropped or added are a packet or a PacketError", () => {
    const edit = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom("set", "drop", "insert", "truncate"))
    for (const from of ["client", "server"] as const) {
      fc.assert(
        fc.property(packet(from), fc.array(edit, { minLength: 1, maxLength: 3 }), (p, edits) => {
          const { first, body } = unframe(encode(p, from))
          let b = Buffer.from(body)
          for (const [at, value, kind] of edits) {
            const i = b.length === 0 ? 0 : at % b.length
            if (kind === "set" && b.length > 0) b[i] = value
            else if (kind === "drop") b = Buffer.concat([b.subarray(0, i), b.subarray(i + 1)])
            else if (kind === "insert") b = Buffer.concat([b.subarray(0, i), Buffer.from([value]), b.subarray(i)])
            else b = b.subarray(0, i)
          }
          decodeHolds(first, b, from)
        }),
        { numRuns: 2000 }
      )
    }
  })
})
