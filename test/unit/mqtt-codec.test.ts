// The strict MQTT 3.1.1 decoder of the codec: framing at every split point, the
// fixed-header rules, remaining lengths, strings, and what it keeps in memory.
import { describe, expect, it } from "vitest"
import { type ClientPacket, MqttSession, type SessionAction } from "../../src/core/mqtt/index.js"
import { seededBytes } from "../helpers/mqtt-session.js"
import { frame, str, u16 } from "../helpers/mqtt-wire.js"
import { OutBuf } from "../../src/core/outbuf.js"
import { decodePacket, headerViolation, MalformedPacket, MAX_REMAINING_LENGTH, MqttParser } from "../../src/core/mqtt/codec.js"

const connectBody = (flags: number, ...fields: Buffer[]): Buffer =>
  Buffer.concat([str("MQTT"), Buffer.from([4, flags, 0, 30]), ...fields])

/** Runs a parser over chunks; returns the packets and the error reasons it emitted. */
const run = (chunks: ReadonlyArray<Buffer>) => {
  const p = new MqttParser()
  const packets: ClientPacket[] = []
  const errors: string[] = []
  p.onPacket = (x: ClientPacket) => packets.push(x)
  p.onError = (e: MalformedPacket) => errors.push(e.reason)
  const buffered = chunks.map((c) => p.parse(c))
  return { parser: p, packets, errors, buffered }
}

const session = Buffer.concat([
  frame(0x10, connectBody(0xee, str("dev-1"), str("will/t"), str("bye"), str("user"), str("pw"))),
  frame(0x33, Buffer.concat([str("a/b"), u16(7), Buffer.from("payload")])),
  frame(0x30, Buffer.concat([str("q0"), Buffer.alloc(300, 0x61)])),
  frame(0x40, u16(1)),
  frame(0x50, u16(2)),
  frame(0x62, u16(3)),
  frame(0x70, u16(4)),
  frame(0x82, Buffer.concat([u16(5), str("a/+"), Buffer.from([1]), str("#"), Buffer.from([2])])),
  frame(0xa2, Buffer.concat([u16(6), str("a/+"), str("#")])),
  Buffer.from([0xc0, 0x00, 0xe0, 0x00])
])

describe("MqttParser framing", () => {
  const whole = run([session])

  it("decodes a session of every client packet type", () => {
    expect(whole.errors).toEqual([])
    expect(whole.packets.map((p) => p.cmd)).toEqual([
      "connect", "publish", "publish", "puback", "pubrec", "pubrel", "pubcomp", "subscribe", "unsubscribe", "pingreq", "disconnect"
    ])
    expect(whole.packets[0]).toMatchObject({
      protocolId: "MQTT",
      protocolVersion: 4,
      clean: true,
      clientId: "dev-1",
      keepalive: 30,
      username: "user",
      will: { topic: "will/t", qos: 1, retain: true },
      flags: { reserved: false, will: true, willQos: 1, willRetain: true, username: true, password: true }
    })
    expect(whole.packets[1]).toMatchObject({ topic: "a/b", qos: 1, retain: true, dup: false, messageId: 7 })
    expect(Buffer.from((whole.packets[1] as { payload: Uint8Array }).payload).toString()).toBe("payload")
    expect(whole.packets[7]).toEqual({ cmd: "subscribe", messageId: 5, subscriptions: [{ topic: "a/+", qos: 1 }, { topic: "#", qos: 2 }] })
    expect(whole.packets[8]).toEqual({ cmd: "unsubscribe", messageId: 6, unsubscriptions: ["a/+", "#"] })
    expect(whole.buffered).toEqual([0])
  })

  it("gives the same packets at every split point", () => {
    for (let i = 1; i < session.length; i++) {
      const split = run([session.subarray(0, i), session.subarray(i)])
      expect(split.errors).toEqual([])
      expect(split.packets).toEqual(whole.packets)
    }
  })

  it("gives the same packets one byte at a time", () => {
    const bytes = run([...session].map((b) => Buffer.from([b])))
    expect(bytes.errors).toEqual([])
    expect(bytes.packets).toEqual(whole.packets)
  })

  it("reports one error and ignores every later byte", () => {
    const r = run([Buffer.from([0xc1, 0x00]), Buffer.from([0xc0, 0x00])])
    expect(r.errors).toHaveLength(1)
    expect(r.packets).toEqual([])
  })
})

describe("MqttParser fixed header [MQTT-2.2.2-1, -2]", () => {
  it("accepts exactly 19 of the 256 first bytes a client may send", () => {
    const ok = [...Array(256).keys()].filter((b) => headerViolation(b) === undefined)
    expect(ok.map((b) => b.toString(16))).toEqual([
      "10", "30", "31", "32", "33", "34", "35", "3a", "3b", "3c", "3d", "40", "50", "62", "70", "82", "a2", "c0", "e0"
    ])
  })

  it.each([
    [0x00, "reserved packet type 0"],
    [0xf0, "reserved packet type 15"],
    [0x20, "client sent CONNACK"],
    [0x90, "client sent SUBACK"],
    [0xb0, "client sent UNSUBACK"],
    [0xd0, "client sent PINGRESP"],
    [0x36, "PUBLISH QoS 3"],
    [0x38, "PUBLISH DUP set on QoS 0"],
    [0x60, "reserved header flags 0x0 on packet type 6"],
    [0x80, "reserved header flags 0x0 on packet type 8"],
    [0xa0, "reserved header flags 0x0 on packet type 10"],
    [0x11, "reserved header flags 0x1 on packet type 1"]
  ].map(([b, reason]) => [b.toString(16), reason]))("first byte 0x%s is refused before any body byte: %s", (first, reason) => {
    const r = run([Buffer.from([parseInt(first, 16)])])
    expect(r.errors).toEqual([reason])
  })
})

describe("MqttParser remaining length [MQTT-2.2.3]", () => {
  it("reads the largest four-byte length and holds only what arrived", () => {
    const r = run([Buffer.concat([Buffer.from([0x30, 0xff, 0xff, 0xff, 0x7f]), Buffer.alloc(1000)])])
    expect(r.errors).toEqual([])
    expect(r.parser.announced).toBe(MAX_REMAINING_LENGTH)
    expect(r.buffered).toEqual([1005])
  })

  it("refuses a fifth length byte", () => {
    expect(run([Buffer.from([0x30, 0x80, 0x80, 0x80, 0x80, 0x01])]).errors).toEqual(["remaining length longer than 4 bytes"])
  })

  it("decodes overlong (non-minimal) encodings, which 3.1.1 allows", () => {
    expect(run([Buffer.from([0xc0, 0x80, 0x80, 0x80, 0x00])]).packets).toEqual([{ cmd: "pingreq" }])
  })

  it.each([
    [0x40, 3],
    [0x62, 1],
    [0xc0, 1],
    [0xe0, 2],
    [0x30, 1],
    [0x82, 0]
  ].map(([b, len]) => [b.toString(16), len] as const))("type byte 0x%s with remaining length %i is refused at the length", (first, len) => {
    expect(run([Buffer.from([parseInt(first, 16), len])]).errors).toHaveLength(1)
  })
})

const expectMalformed = (first: number, body: Buffer, reason: RegExp) => {
  expect(() => decodePacket(first, body)).toThrow(MalformedPacket)
  expect(() => decodePacket(first, body)).toThrow(reason)
}

describe("decodePacket bodies", () => {
  it("[MQTT-3.1.2-2] stops after the level when it is not 4, whatever follows", () => {
    expect(decodePacket(0x10, Buffer.concat([str("MQTT"), Buffer.from([5, 0xff])]))).toMatchObject({ protocolId: "MQTT", protocolVersion: 5 })
    expect(decodePacket(0x10, Buffer.concat([str("MQIsdp"), Buffer.from([3])]))).toMatchObject({ protocolId: "MQIsdp", protocolVersion: 3 })
  })

  it("a level byte missing is malformed", () => {
    expectMalformed(0x10, str("MQTT"), /protocol level past the end/)
  })

  it("bytes after the CONNECT payload are malformed", () => {
    expectMalformed(0x10, connectBody(0x02, str("id"), Buffer.from([0])), /1 bytes after the end of the CONNECT payload/)
  })

  it("a string length past the packet is malformed", () => {
    expectMalformed(0x30, Buffer.concat([u16(9), Buffer.from("abc")]), /topic name of 9 bytes past the end/)
  })

  it.each([
    ["U+0000", Buffer.from([0x61, 0x00]), /contains U\+0000/],
    ["an overlong NUL", Buffer.from([0xc0, 0x80]), /not well-formed UTF-8/],
    ["a surrogate", Buffer.from([0xed, 0xa0, 0x80]), /not well-formed UTF-8/],
    ["a truncated sequence", Buffer.from([0xe2, 0x82]), /not well-formed UTF-8/],
    ["a code point above U+10FFFF", Buffer.from([0xf4, 0x90, 0x80, 0x80]), /not well-formed UTF-8/]
  ])("[MQTT-1.5.3-1/2] a client id with %s is malformed", (_, bad, reason) => {
    expectMalformed(0x10, connectBody(0x02, str(bad)), reason)
  })

  it("[MQTT-1.5.3-3] keeps a BOM in a string", () => {
    expect(decodePacket(0x10, connectBody(0x02, str("\ufeffid")))).toMatchObject({ clientId: "\ufeffid" })
  })

  it("passes password bytes through without UTF-8 checks", () => {
    const p = decodePacket(0x10, connectBody(0xc2, str("id"), str("u"), str(Buffer.from([0xff, 0x00]))))
    expect([...(p as { password: Uint8Array }).password]).toEqual([0xff, 0x00])
  })

  it("[MQTT-3-8.3-4] reserved bits of a requested QoS are malformed; QoS 3 is left to the session", () => {
    expectMalformed(0x82, Buffer.concat([u16(1), str("a"), Buffer.from([0x04])]), /reserved bits/)
    expect(decodePacket(0x82, Buffer.concat([u16(1), str("a"), Buffer.from([3])]))).toMatchObject({ subscriptions: [{ topic: "a", qos: 3 }] })
  })

  it("a SUBSCRIBE filter without its QoS byte is malformed", () => {
    expectMalformed(0x82, Buffer.concat([u16(1), str("a")]), /requested QoS past the end/)
  })
})

describe("MqttParser topic depth (mqtt.max_topic_levels)", () => {
  const levels = (n: number, level = "a") => Array.from({ length: n }, () => level).join("/")
  const parse = (bytes: Buffer, max?: number) => {
    const p = new MqttParser(max)
    const packets: ClientPacket[] = []
    const errors: string[] = []
    p.onPacket = (x: ClientPacket) => packets.push(x)
    p.onError = (e: MalformedPacket) => errors.push(e.reason)
    p.parse(bytes)
    return { packets, errors }
  }
  const publish = (topic: string) => frame(0x30, Buffer.concat([str(topic), Buffer.from("x")]))
  const subscribe = (filter: string) => frame(0x82, Buffer.concat([u16(1), str(filter), Buffer.from([0])]))
  const unsubscribe = (filter: string) => frame(0xa2, Buffer.concat([u16(1), str(filter)]))
  const willConnect = (topic: string) => frame(0x10, connectBody(0x06, str("w"), str(topic), str("bye")))

  it("accepts 200 levels by default and refuses 201, in every place a topic is read", () => {
    for (const make of [publish, subscribe, unsubscribe, willConnect]) {
      expect(parse(make(levels(200))).errors).toEqual([])
      expect(parse(make(levels(201))).errors).toEqual([expect.stringMatching(/has 201 levels, more than max_topic_levels \(200\)/)])
    }
  })

  it("counts empty levels: 200 slashes are 201 levels", () => {
    expect(parse(subscribe("/".repeat(199))).errors).toEqual([])
    expect(parse(subscribe("/".repeat(200))).errors).toHaveLength(1)
    expect(parse(subscribe(`${levels(199, "+")}/#`)).errors).toEqual([])
    expect(parse(subscribe(`${levels(200, "+")}/#`)).errors).toHaveLength(1)
  })

  it("refuses a 32,768-level topic (65,534 bytes) without building anything from it", () => {
    const r = parse(publish("/".repeat(32767)))
    expect(r.packets).toEqual([])
    expect(r.errors).toEqual([expect.stringMatching(/32768 levels/)])
  })

  it("takes the configured limit", () => {
    expect(parse(publish("a/b/c"), 3).errors).toEqual([])
    expect(parse(publish("a/b/c/d"), 3).errors).toHaveLength(1)
    // A repeated topic (served from the last-topic cache) was checked the first time.
    expect(parse(Buffer.concat([publish("a/b"), publish("a/b"), publish("a/b/c/d")]), 3).packets).toHaveLength(2)
  })
})

describe("MqttParser memory", () => {
  // Each byte as the socket hands it over: a view into a read buffer of its own.
  const dribble = (bytes: Buffer): Buffer[] =>
    [...bytes].map((b) => {
      const read = Buffer.alloc(64 * 1024)
      read[100] = b
      return read.subarray(100, 101)
    })

  it("a packet dribbled one byte per read keeps no view of the reads (regression: 370x memory)", () => {
    const body = Buffer.concat([str("dribble/t"), Buffer.from("the payload, one byte at a time")])
    const chunks = dribble(frame(0x30, body))
    const p = new MqttParser()
    const packets: ClientPacket[] = []
    p.onPacket = (x) => packets.push(x)
    for (const c of chunks) {
      p.parse(c)
      // The socket's memory is not ours: whatever becomes of it later must not reach the packet.
      new Uint8Array(c.buffer, c.byteOffset, 1).fill(0x21)
    }
    expect(packets).toHaveLength(1)
    expect(Buffer.from((packets[0] as { payload: Uint8Array }).payload).toString()).toBe("the payload, one byte at a time")
  })

  it("holds memory proportional to what arrived of a partial packet, not one buffer per read", () => {
    const p = new MqttParser()
    p.parse(Buffer.from([0x30, 0xc0, 0x84, 0x3d])) // announces 1,000,000 bytes
    let received = 0
    let over = 0
    for (const c of dribble(Buffer.concat([str("t"), Buffer.alloc(20_000, 0x61)]))) {
      p.parse(c)
      received++
      if (p.held > Math.max(2 * received, 1024)) over++
    }
    expect(over).toBe(0)
    expect(p.held).toBeGreaterThanOrEqual(received)
  })

  it("decodes a packet inside one chunk in place and holds nothing for it", () => {
    const chunk = frame(0x30, Buffer.concat([str("in/place"), Buffer.from("zero copies")]))
    const p = new MqttParser()
    let payload: Uint8Array | undefined
    p.onPacket = (x) => {
      if (x.cmd === "publish") payload = x.payload
    }
    p.parse(chunk)
    expect(p.held).toBe(0)
    expect(payload!.buffer).toBe(chunk.buffer)
  })

  it("gives a completed partial packet its own exact buffer and starts the next one empty", () => {
    const body = Buffer.concat([str("t"), Buffer.alloc(5000, 0x62)])
    const bytes = frame(0x30, body)
    const p = new MqttParser()
    const packets: ClientPacket[] = []
    p.onPacket = (x) => packets.push(x)
    for (let i = 0; i < bytes.length; i += 7) p.parse(bytes.subarray(i, Math.min(bytes.length, i + 7)))
    expect(p.held).toBe(0)
    const payload = (packets[0] as { payload: Uint8Array }).payload
    expect(payload.buffer.byteLength).toBe(body.length)
    expect(Buffer.from(payload).equals(Buffer.alloc(5000, 0x62))).toBe(true)
  })

  it("holds what arrived of an announced 256 MB packet, not the announced size", () => {
    const p = new MqttParser()
    const before = process.memoryUsage().arrayBuffers
    let buffered = p.parse(Buffer.from([0x30, 0xff, 0xff, 0xff, 0x7f]))
    for (let i = 0; i < 16; i++) buffered = p.parse(Buffer.alloc(1024, 0x61))
    expect(buffered).toBe(5 + 16 * 1024)
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024)
  })
})

/** Bytes through the codec into a session that is made ready at once: what it sends and whether it closes. */
const serve = (bytes: Buffer) => {
  const parser = new MqttParser()
  const session = new MqttSession(0, { randomBytes: seededBytes(3) })
  const sent: unknown[] = []
  let closed: string | undefined
  const feed = (actions: SessionAction[]): void => {
    for (const a of actions) {
      if (a.type === "send") sent.push(a.packet)
      if (a.type === "close") closed = a.reason
      if (a.type === "accept") feed(session.step({ type: "sessionReady" }, 0))
    }
  }
  parser.onPacket = (p: ClientPacket) => closed === undefined && feed(session.step({ type: "packet", packet: p }, 0))
  parser.onError = (e: MalformedPacket) => closed === undefined && feed(session.step({ type: "protocolError", reason: e.reason }, 0))
  parser.parse(bytes)
  return { sent, closed }
}

const CONNECT_OK = frame(0x10, connectBody(0x02, str("reg")))
const connack = (returnCode: number) => ({ cmd: "connack", returnCode, sessionPresent: false })

// Each was accepted (or answered wrongly) when mqtt-packet decoded for the server.
describe("regressions: codec and session together", () => {
  it.each([0, 1, 2, 6, 0x84, 255])("[MQTT-3.1.2-2] protocol level %i got no CONNACK 1 (or 0x84 was taken for 4)", (level) => {
    const r = serve(frame(0x10, Buffer.concat([str("MQTT"), Buffer.from([level, 0x02, 0, 0]), str("lvl")])))
    expect(r.sent).toEqual([connack(1)])
    expect(r.closed).toBeDefined()
  })

  it("[MQTT-3.1.2-1] MQIsdp at level 4 was accepted as MQTT 3.1.1", () => {
    const r = serve(frame(0x10, Buffer.concat([str("MQIsdp"), Buffer.from([4, 0x02, 0, 0]), str("old")])))
    expect(r.sent).toEqual([])
    expect(r.closed).toMatch(/protocol name MQIsdp/)
  })

  it("[MQTT-3.1.2-22] a password without a user name was accepted", () => {
    const r = serve(frame(0x10, connectBody(0x42, str("pw-only"), str("secret"))))
    expect(r.sent).toEqual([])
    expect(r.closed).toMatch(/password without user name/)
  })

  it("[MQTT-1.5.3-1] ill-formed UTF-8 in a client id was read as U+FFFD and accepted", () => {
    const r = serve(frame(0x10, connectBody(0x02, str(Buffer.from([0x61, 0xff])))))
    expect(r.sent).toEqual([])
    expect(r.closed).toMatch(/client identifier is not well-formed UTF-8/)
  })

  it("[MQTT-1.5.3-2] U+0000 in a SUBSCRIBE filter was granted", () => {
    const r = serve(Buffer.concat([CONNECT_OK, frame(0x82, Buffer.concat([u16(1), str("a\u0000b"), Buffer.from([0])]))]))
    expect(r.sent).toEqual([connack(0)])
    expect(r.closed).toMatch(/topic filter contains U\+0000/)
  })

  it("[MQTT-3.4.1] a PUBACK with extra bytes was taken as a PUBACK", () => {
    const r = serve(Buffer.concat([CONNECT_OK, frame(0x40, Buffer.from([0, 1, 9]))]))
    expect(r.closed).toMatch(/remaining length 3/)
  })

  it("[MQTT-3.12.1] a PINGREQ with a body was answered", () => {
    const r = serve(Buffer.concat([CONNECT_OK, frame(0xc0, Buffer.from([0]))]))
    expect(r.sent).toEqual([connack(0)])
    expect(r.closed).toBeDefined()
  })

  it("bytes after a CONNECT payload were ignored", () => {
    const r = serve(frame(0x10, Buffer.concat([connectBody(0x02, str("tail")), Buffer.from([1, 2])])))
    expect(r.sent).toEqual([])
    expect(r.closed).toMatch(/bytes after the end of the CONNECT payload/)
  })

  it("[MQTT-3.3.1-2] a QoS 0 PUBLISH with DUP set was accepted", () => {
    const r = serve(Buffer.concat([CONNECT_OK, frame(0x38, Buffer.concat([str("a"), Buffer.from("x")]))]))
    expect(r.closed).toMatch(/DUP set on QoS 0/)
  })

  it.each([
    ["SUBSCRIBE", frame(0x82, Buffer.concat([u16(0), str("a"), Buffer.from([0])]))],
    ["UNSUBSCRIBE", frame(0xa2, Buffer.concat([u16(0), str("a")]))]
  ])("[MQTT-2.3.1-1] %s with packet id 0 was answered", (what, packet) => {
    const r = serve(Buffer.concat([CONNECT_OK, packet]))
    expect(r.sent).toEqual([connack(0)])
    expect(r.closed).toMatch(new RegExp(`${what} with packet id 0`))
  })
})

describe("encodePublish", () => {
  it("writes the same bytes as mqtt-packet for any topic, payload size, QoS and flags", async () => {
    const fc = (await import("fast-check")).default
    const MqttPacket = await import("mqtt-packet")
    const { encodePublish, PUBLISH_BY_REFERENCE } = await import("../../src/core/mqtt/codec.js")
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40, unit: "grapheme" }),
        fc.oneof(fc.integer({ min: 0, max: 200 }), fc.integer({ min: PUBLISH_BY_REFERENCE - 2, max: 20_000 })),
        fc.integer({ min: 0, max: 2 }),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 65535 }),
        (topic, size, qos, retain, dup, messageId) => {
          const payload = Buffer.alloc(size, 0xab)
          const out = new OutBuf(64)
          out.writeAscii("x") // not at the start of the slab
          const n = encodePublish(out, topic, payload, qos, retain, dup, qos > 0 ? messageId : undefined)
          const want = MqttPacket.generate({ cmd: "publish", topic, payload, qos: qos as 0 | 1 | 2, retain, dup, messageId: qos > 0 ? messageId : undefined })
          const parts = out.takeAll()!
          const got = Buffer.concat(parts).subarray(1)
          expect(n).toBe(got.length)
          expect(got.equals(want)).toBe(true)
          // A large QoS 0 payload goes by reference: the very buffer, not a copy. QoS 1/2
          // payloads are always copied (a held one's slab is reused once acknowledged).
          const byRef = parts.some((b) => b.buffer === payload.buffer && b.byteOffset === payload.byteOffset && b.length === payload.length)
          expect(byRef).toBe(qos === 0 && size >= PUBLISH_BY_REFERENCE)
          expect(parts.some((b) => b.buffer === payload.buffer)).toBe(byRef)
          // With the owner of its memory (a Pinner), any QoS goes by reference, pinned.
          const pinned = new OutBuf(64)
          let retained = 0
          const pin = { retain: () => void retained++, release: () => void retained-- }
          encodePublish(pinned, topic, payload, qos, retain, dup, qos > 0 ? messageId : undefined, pin)
          const pinnedParts = pinned.takeAll()!
          expect(Buffer.concat(pinnedParts).equals(want)).toBe(true)
          expect(pinnedParts.some((b) => b.buffer === payload.buffer)).toBe(size >= PUBLISH_BY_REFERENCE)
          expect(retained).toBe(size >= PUBLISH_BY_REFERENCE ? 1 : 0)
          pinned.written()
          expect(retained).toBe(0)
        }
      ),
      { numRuns: 500 }
    )
  })
})

describe("encode of the acknowledgements", () => {
  it("writes PUBACK, PUBREC, PUBREL and PUBCOMP as mqtt-packet does, for every packet id edge", async () => {
    const MqttPacket = await import("mqtt-packet")
    const { encode } = await import("../../src/core/mqtt/codec.js")
    for (const cmd of ["puback", "pubrec", "pubrel", "pubcomp"] as const) {
      for (const messageId of [1, 2, 255, 256, 4660, 65535]) {
        expect(encode({ cmd, messageId }).equals(MqttPacket.generate({ cmd, messageId }))).toBe(true)
      }
    }
  })

  it("writes SUBACK (any number of return codes, failures too) and UNSUBACK as mqtt-packet does", async () => {
    const fc = (await import("fast-check")).default
    const MqttPacket = await import("mqtt-packet")
    const { encode } = await import("../../src/core/mqtt/codec.js")
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 65535 }),
        // past 125 codes the remaining length takes two bytes
        fc.array(fc.constantFrom(0, 1, 2, 0x80), { minLength: 1, maxLength: 300 }),
        (messageId, granted) => {
          const want = MqttPacket.generate({ cmd: "suback", messageId, granted }, { protocolVersion: 4 })
          expect(encode({ cmd: "suback", messageId, granted }).equals(want)).toBe(true)
          const unsub = MqttPacket.generate({ cmd: "unsuback", messageId, granted: [] }, { protocolVersion: 4 })
          expect(encode({ cmd: "unsuback", messageId }).equals(unsub)).toBe(true)
        }
      ),
      { numRuns: 300 }
    )
  })

  it("writes CONNACK (every return code, session present or not) and PINGRESP as mqtt-packet does", async () => {
    const MqttPacket = await import("mqtt-packet")
    const { encode } = await import("../../src/core/mqtt/codec.js")
    for (const returnCode of [0, 1, 2, 3, 4, 5]) {
      for (const sessionPresent of [false, true]) {
        if (returnCode !== 0 && sessionPresent) continue // [MQTT-3.2.2-4]
        const want = MqttPacket.generate({ cmd: "connack", returnCode, sessionPresent }, { protocolVersion: 4 })
        expect(encode({ cmd: "connack", returnCode, sessionPresent }).equals(want)).toBe(true)
      }
    }
    expect(encode({ cmd: "pingresp" }).equals(MqttPacket.generate({ cmd: "pingresp" }))).toBe(true)
  })
})
