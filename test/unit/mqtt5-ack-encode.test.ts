// The MQTT 5.0 acknowledgements a session sends for every QoS 1/2 message (PUBACK,
// PUBREC, PUBREL, PUBCOMP) are written in place when they carry no properties: the bytes
// must be exactly the full v5 encoder's, for every packet id, reason code and client
// Maximum Packet Size, and mqtt-packet must read them back as sent [MQTT-3.4.2-1].
import * as fc from "fast-check"
import * as MqttPacket from "mqtt-packet"
import { describe, expect, it } from "vitest"
import { encodeIntoV5, toV5Packet } from "../../src/core/mqtt/codec5.js"
import type { ServerPacket } from "../../src/core/mqtt/types.js"
import { encodeInto, fitToMaximumPacketSize } from "../../src/core/mqtt/v5/encode.js"
import { ReasonCode } from "../../src/core/mqtt/v5/reason.js"
import { OutBuf } from "../../src/core/outbuf.js"

const ACKS = ["puback", "pubrec", "pubrel", "pubcomp"] as const

/** Reason codes each acknowledgement may carry from a server (3.4.2.1, 3.5.2.1, 3.6.2.1, 3.7.2.1). */
const CODES: Record<(typeof ACKS)[number], ReadonlyArray<number>> = {
  puback: [0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99],
  pubrec: [0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99],
  pubrel: [0x00, 0x92],
  pubcomp: [0x00, 0x92]
}

const bytesOf = (out: OutBuf): Buffer => out.take() ?? Buffer.alloc(0)

/** What the full v5 path writes for `p`: the packet built, fitted to the maximum, encoded. */
const fullPath = (p: ServerPacket, maximumPacketSize: number): Buffer => {
  const out = new OutBuf(64)
  const packet = toV5Packet(p)
  const fits = maximumPacketSize === Number.POSITIVE_INFINITY ? packet : fitToMaximumPacketSize(packet, maximumPacketSize)
  if (fits !== undefined) encodeInto(out, fits, "server")
  return bytesOf(out)
}

const ackCase = fc.constantFrom(...ACKS).chain((cmd) =>
  fc.record({
    cmd: fc.constant(cmd),
    messageId: fc.integer({ min: 1, max: 65535 }),
    // undefined: the session gave none (Success)
    reasonCode: fc.oneof(fc.constant(undefined), fc.constantFrom(...CODES[cmd])),
    maximumPacketSize: fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.integer({ min: 1, max: 8 }))
  })
)

describe("MQTT 5.0 acknowledgements without properties", () => {
  it("are the full encoder's bytes, whatever the packet id, reason code and Maximum Packet Size", () => {
    fc.assert(
      fc.property(ackCase, (c) => {
        const p: ServerPacket = { cmd: c.cmd, messageId: c.messageId, ...(c.reasonCode !== undefined && { reasonCode: c.reasonCode }) }
        const out = new OutBuf(64)
        const n = encodeIntoV5(out, p, true, c.maximumPacketSize)
        const got = bytesOf(out)
        expect(got.length).toBe(n)
        expect(got.toString("hex")).toBe(fullPath(p, c.maximumPacketSize).toString("hex"))
      }),
      { numRuns: 2000 }
    )
  })

  it("read back by mqtt-packet as sent: Success in the two-byte form, other codes after the packet id", () => {
    const out = new OutBuf(64)
    const sent: Array<{ cmd: (typeof ACKS)[number]; messageId: number; reasonCode?: number }> = [
      { cmd: "puback", messageId: 1 },
      { cmd: "puback", messageId: 65535, reasonCode: ReasonCode.NoMatchingSubscribers },
      { cmd: "pubrec", messageId: 300, reasonCode: ReasonCode.QuotaExceeded },
      { cmd: "pubrel", messageId: 7 },
      { cmd: "pubcomp", messageId: 8, reasonCode: ReasonCode.PacketIdentifierNotFound }
    ]
    for (const p of sent) encodeIntoV5(out, p, true)
    const bytes = bytesOf(out)
    // the first is 0x40 0x02 and the packet id: no reason code, no Property Length
    expect(bytes.subarray(0, 4).toString("hex")).toBe("40020001")
    const got: Array<Record<string, unknown>> = []
    const parser = MqttPacket.parser({ protocolVersion: 5 })
    parser.on("packet", (p) => got.push(p as unknown as Record<string, unknown>))
    parser.on("error", (e: Error) => {
      throw e
    })
    parser.parse(bytes)
    expect(got.map((p) => [p.cmd, p.messageId, p.reasonCode ?? 0])).toEqual(sent.map((p) => [p.cmd, p.messageId, p.reasonCode ?? 0]))
  })

  it("with properties still go the full way (a Reason String the client asked to be spared is left out)", () => {
    const p: ServerPacket = { cmd: "puback", messageId: 9, reasonCode: ReasonCode.NotAuthorized, properties: { reasonString: "no" } }
    const spared = new OutBuf(64)
    encodeIntoV5(spared, p, false)
    const told = new OutBuf(64)
    encodeIntoV5(told, p, true)
    expect(bytesOf(spared).toString("hex")).toBe("4004000987" + "00")
    expect(bytesOf(told).length).toBeGreaterThan(6)
  })
})
