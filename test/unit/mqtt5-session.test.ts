// MQTT 5.0 wired into the connection's parser and session machine (issue #19 slice 1):
// the framer picks the v5 decoder from the CONNECT's level, the session answers a v5
// client with v5 reason codes and properties, and says why it closes. Bytes in are
// built by mqtt-packet; what the session sends is encoded by codec5 and read back by
// mqtt-packet's v5 parser.
import { describe, expect, it } from "vitest"
import * as MqttPacket from "mqtt-packet"
import { MalformedPacket, MqttParser } from "../../src/core/mqtt/codec.js"
import { encodeIntoV5, toV5Packet } from "../../src/core/mqtt/codec5.js"
import { MqttSession, defaultSessionConfig, type SessionConfig } from "../../src/core/mqtt/session.js"
import type { ClientPacket, ServerPacket, SessionAction, SessionSnapshot } from "../../src/core/mqtt/types.js"
import { OutBuf } from "../../src/core/outbuf.js"
import { decodeSessionRecord, decodeSubscriptionRecord, delayedWillOf, encodeSessionRecord, encodeSubscriptionRecord, qosHeader, subscriptionOptionsOf, qosOfHeader, storedHeader, storedParts } from "../../src/core/mqtt/record.js"
import { connected, ofType, pkt, seededBytes, sent } from "../helpers/mqtt-session.js"

const gen5 = (p: Record<string, unknown>): Buffer => MqttPacket.generate(p as unknown as MqttPacket.Packet, { protocolVersion: 5 })
const connect5 = (over: Record<string, unknown> = {}): Buffer =>
  gen5({ cmd: "connect", protocolId: "MQTT", protocolVersion: 5, clean: true, keepalive: 30, clientId: "dev", ...over })

/** Feeds bytes to a parser; returns the packets and the error, if any. */
const parse = (parser: MqttParser, ...chunks: Array<Buffer>): { packets: Array<ClientPacket>; error: MalformedPacket | undefined } => {
  const packets: Array<ClientPacket> = []
  let error: MalformedPacket | undefined
  parser.onPacket = (p) => packets.push(p)
  parser.onError = (e) => {
    error = e
  }
  for (const c of chunks) parser.parse(c)
  return { packets, error }
}

/** What the server's packets are, as mqtt-packet's v5 parser reads their bytes. */
const wire = (packets: ReadonlyArray<ServerPacket>, problemInformation = true): Array<Record<string, unknown>> => {
  const out = new OutBuf(256)
  for (const p of packets) encodeIntoV5(out, p, problemInformation)
  const bytes = out.take() ?? Buffer.alloc(0)
  const got: Array<Record<string, unknown>> = []
  const parser = MqttPacket.parser({ protocolVersion: 5 })
  parser.on("packet", (p) => got.push(p as unknown as Record<string, unknown>))
  parser.on("error", (e: Error) => {
    throw e
  })
  parser.parse(bytes)
  return got
}

describe("the framer picks the protocol from the CONNECT", () => {
  it("on a v5 listener, a level-5 CONNECT and what follows go through the v5 decoder", () => {
    const p = new MqttParser({ v5: true })
    const { packets, error } = parse(p, connect5({ properties: { sessionExpiryInterval: 60 } }),
      gen5({ cmd: "publish", topic: "a/b", payload: Buffer.from("x"), qos: 1, messageId: 3, retain: false, dup: false, properties: { contentType: "text/plain" } }))
    expect(error).toBeUndefined()
    expect(p.protocolLevel).toBe(5)
    expect(packets[0]).toMatchObject({ cmd: "connect", protocolVersion: 5, properties: { sessionExpiryInterval: 60 } })
    expect(packets[1]).toMatchObject({ cmd: "publish", topic: "a/b", messageId: 3, properties: { contentType: "text/plain" } })
  })

  it("on a v5 listener, a level-4 CONNECT stays 3.1.1 (a v5 property block would be malformed)", () => {
    const p = new MqttParser({ v5: true })
    const c4 = MqttPacket.generate({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, keepalive: 0, clientId: "old" } as MqttPacket.IConnectPacket)
    const { packets, error } = parse(p, c4, Buffer.from([0xc0, 0x00]))
    expect(error).toBeUndefined()
    expect(p.protocolLevel).toBe(4)
    expect(packets.map((x) => x.cmd)).toEqual(["connect", "pingreq"])
    expect((packets[0] as { properties?: unknown }).properties).toBeUndefined()
  })

  it("on a 3.1.1 listener, a level-5 CONNECT is not decoded further (the session answers CONNACK 1) [MQTT-3.1.2-2]", () => {
    const p = new MqttParser()
    const { packets } = parse(p, connect5())
    expect(p.protocolLevel).toBe(4)
    expect(packets[0]).toMatchObject({ cmd: "connect", protocolVersion: 5 })
    expect((packets[0] as { properties?: unknown }).properties).toBeUndefined()
  })

  it("v5 errors carry their reason code: a non-minimal Remaining Length is malformed [MQTT-1.5.5-1]", () => {
    const { error } = parse(new MqttParser({ v5: true }), connect5(), Buffer.from([0xc0, 0x80, 0x00]))
    expect(error?.code).toBe(0x81)
    // 3.1.1 reads it as before
    const c4 = MqttPacket.generate({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, keepalive: 0, clientId: "old" } as MqttPacket.IConnectPacket)
    expect(parse(new MqttParser({ v5: true }), c4, Buffer.from([0xc0, 0x80, 0x00])).error).toBeUndefined()
  })

  it("a packet announced over the server's Maximum Packet Size is 0x95 before its body [MQTT-3.2.2-15]", () => {
    const { error } = parse(new MqttParser({ v5: true, maximumPacketSize: 100 }), connect5(), Buffer.from([0x30, 0x63]))
    expect(error?.code).toBe(0x95)
  })

  it("AUTH (type 15) is a packet on v5, a reserved type on 3.1.1", () => {
    const auth = gen5({ cmd: "auth", reasonCode: 0x18, properties: { authenticationMethod: "m" } })
    expect(parse(new MqttParser({ v5: true }), connect5(), auth).packets[1]).toMatchObject({ cmd: "auth", reasonCode: 0x18 })
    const c4 = MqttPacket.generate({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, keepalive: 0, clientId: "old" } as MqttPacket.IConnectPacket)
    expect(parse(new MqttParser({ v5: true }), c4, auth).error?.reason).toMatch(/reserved packet type 15/)
  })
})

describe("codec5: the session's packets on the v5 wire", () => {
  it("fills in Success and no properties where the session gave none; SUBACK takes its v5 codes", () => {
    const got = wire([
      { cmd: "puback", messageId: 1 },
      { cmd: "pubrec", messageId: 2, reasonCode: 0x87, properties: { reasonString: "no" } },
      { cmd: "suback", messageId: 3, granted: [1, 0x80], reasonCodes: [1, 0x8f] },
      { cmd: "unsuback", messageId: 4, reasonCodes: [0, 0x11] },
      { cmd: "connack", returnCode: 5, sessionPresent: false },
      { cmd: "disconnect", reasonCode: 0x8e }
    ])
    expect(got).toMatchObject([
      { cmd: "puback", messageId: 1, reasonCode: 0 },
      { cmd: "pubrec", messageId: 2, reasonCode: 0x87, properties: { reasonString: "no" } },
      { cmd: "suback", messageId: 3, granted: [1, 0x8f] },
      { cmd: "unsuback", messageId: 4, granted: [0, 0x11] },
      { cmd: "connack", reasonCode: 0x87, sessionPresent: false },
      { cmd: "disconnect", reasonCode: 0x8e }
    ])
  })

  it("Request Problem Information 0 keeps Reason Strings to CONNACK, PUBLISH and DISCONNECT [MQTT-3.1.2-29]", () => {
    const got = wire([
      { cmd: "puback", messageId: 1, reasonCode: 0x87, properties: { reasonString: "no" } },
      { cmd: "disconnect", reasonCode: 0x82, properties: { reasonString: "why" } }
    ], false)
    expect(got[0].properties).toBeUndefined()
    expect(got[1]).toMatchObject({ reasonCode: 0x82, properties: { reasonString: "why" } })
  })

  it("a 3.1.1 UNSUBACK has no codes to give a v5 client: refused, never written without them", () => {
    expect(() => toV5Packet({ cmd: "unsuback", messageId: 1 })).toThrow(/reason code per filter/)
  })
})

// ---- the session machine on v5 ----

const v5Limits = { maximumPacketSize: 1000, topicAliasMaximum: 0, subscriptionIdentifiersAvailable: false }
const config: SessionConfig = { ...defaultSessionConfig, v5: v5Limits }

const session5 = (connect: Record<string, unknown> = {}, deps: Partial<ConstructorParameters<typeof MqttSession>[1]> = {}) => {
  const s = new MqttSession(0, { randomBytes: seededBytes(7), ...deps }, config)
  const [packet] = parse(new MqttParser({ v5: true }), connect5(connect)).packets
  const connectActions = s.step(pkt(packet), 0)
  return { s, connectActions }
}

const ready5 = (connect: Record<string, unknown> = {}, deps: Partial<ConstructorParameters<typeof MqttSession>[1]> = {}) => {
  const { s, connectActions } = session5(connect, deps)
  const readyActions = s.step({ type: "sessionReady" }, 0)
  return { s, connectActions, readyActions }
}

/** Decoded v5 packets from the parser, for input after CONNECT. */
const v5Packets = (...ps: Array<Record<string, unknown>>): Array<ClientPacket> => {
  const parser = new MqttParser({ v5: true })
  const { packets, error } = parse(parser, connect5(), ...ps.map(gen5))
  if (error !== undefined) throw error
  return packets.slice(1)
}

const closeOf = (actions: ReadonlyArray<SessionAction>) => ofType(actions, "close")

describe("MQTT 5.0 CONNECT in the session", () => {
  it("accepts: the CONNACK carries only non-default properties, the Session Expiry decides persistence", () => {
    const { s, connectActions, readyActions } = ready5({ clean: false, properties: { sessionExpiryInterval: 120 } })
    expect(ofType(connectActions, "accept")).toEqual([{ type: "accept", clientId: "dev", cleanSession: false, persistent: true, assignedId: false }])
    expect(s.protocolVersion).toBe(5)
    expect(s.sessionExpiryInterval).toBe(120)
    expect(s.cleanSession).toBe(false)
    expect(sent(readyActions)).toEqual([{
      cmd: "connack",
      returnCode: 0,
      sessionPresent: false,
      reasonCode: 0,
      properties: { maximumPacketSize: 1000, subscriptionIdentifiersAvailable: false }
    }])
  })

  it("Clean Start 1 with an interval: a fresh session that is kept; Clean Start 0 without one: resumed, then ended", () => {
    const a = session5({ clean: true, properties: { sessionExpiryInterval: 10 } })
    expect(ofType(a.connectActions, "accept")[0]).toMatchObject({ cleanSession: true, persistent: true })
    const b = session5({ clean: false })
    expect(ofType(b.connectActions, "accept")[0]).toMatchObject({ cleanSession: false, persistent: false })
    b.s.step({ type: "sessionReady", stored: { clientId: "dev", subscriptions: [{ filter: "x/y", qos: 1 }], outbound: [], queued: [], inboundQos2: [], lastPacketId: 0 } }, 0)
    expect(b.s.cleanSession).toBe(true)
    expect(b.s.endsStored).toBe(true) // the shell removes the stored session when it ends
  })

  it("an empty Client Identifier is assigned whatever Clean Start says, and named in CONNACK [MQTT-3.2.2-16]", () => {
    const { s, readyActions } = ready5({ clientId: "", clean: true })
    expect(s.clientId).toMatch(/^[0-9A-Za-z]{22}$/)
    expect(sent(readyActions)[0]).toMatchObject({ properties: { assignedClientIdentifier: s.clientId } })
  })

  it("refusals are CONNACKs with v5 codes: 0x8C enhanced auth, 0x87 credentials, 0x90 will topic, 0x85 an id collision", () => {
    expect(sent(session5({ properties: { authenticationMethod: "x" } }).connectActions)[0]).toMatchObject({ cmd: "connack", reasonCode: 0x8c })
    expect(sent(session5({}, { authenticate: () => 4 }).connectActions)[0]).toMatchObject({ reasonCode: 0x86 })
    expect(sent(session5({}, { authenticate: () => 5 }).connectActions)[0]).toMatchObject({ reasonCode: 0x87 })
    expect(sent(session5({ will: { topic: "a/+", payload: Buffer.from("w"), qos: 0, retain: false, properties: {} } }).connectActions)[0]).toMatchObject({ reasonCode: 0x90 })
    const { s } = session5({ clean: false, properties: { sessionExpiryInterval: 5 } })
    const collided = s.step({ type: "sessionReady", stored: { clientId: "other", subscriptions: [], outbound: [], queued: [], inboundQos2: [], lastPacketId: 0 } }, 0)
    expect(sent(collided)[0]).toMatchObject({ cmd: "connack", reasonCode: 0x85, sessionPresent: false })
    expect(closeOf(collided)).toHaveLength(1)
  })

  it("a 3.1.1 CONNECT is refused with CONNACK 1 where the listener speaks only 5", () => {
    const s = new MqttSession(0, { randomBytes: seededBytes(1) }, config)
    s.refuseLevel4 = true
    const a = s.step(pkt({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, clientId: "x", keepalive: 0 }), 0)
    expect(sent(a)).toEqual([{ cmd: "connack", returnCode: 1, sessionPresent: false }])
  })
})

describe("MQTT 5.0 closes say why", () => {
  it("DISCONNECT with the code once connected: 0x8E takeover, 0x8D keep alive, 0x87 deauthorized, the parser's code", () => {
    const cases: Array<[string, (s: MqttSession) => SessionAction[], number]> = [
      ["takeover", (s) => s.step({ type: "takenOver" }, 0), 0x8e],
      ["keepalive", (s) => s.step({ type: "tick" }, 60_000), 0x8d],
      ["deauthorized", (s) => s.step({ type: "deauthorized" }, 0), 0x87],
      ["too large", (s) => s.step({ type: "protocolError", reason: "big", code: 0x95 }, 0), 0x95],
      ["malformed", (s) => s.step({ type: "protocolError", reason: "bad" }, 0), 0x81]
    ]
    for (const [name, act, code] of cases) {
      const { s } = ready5({ keepalive: 10 })
      const actions = act(s)
      expect([name, sent(actions)]).toMatchObject([name, [{ cmd: "disconnect", reasonCode: code, properties: { reasonString: expect.any(String) } }]])
      expect(closeOf(actions)).toHaveLength(1)
    }
  })

  it("no DISCONNECT when the socket is gone, and never on 3.1.1", () => {
    expect(sent(ready5().s.step({ type: "connectionLost" }, 0))).toEqual([])
    const s4 = new MqttSession(0, { randomBytes: seededBytes(1) }, config)
    s4.step(pkt({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, clientId: "x", keepalive: 0 }), 0)
    s4.step({ type: "sessionReady" }, 0)
    expect(sent(s4.step({ type: "takenOver" }, 0))).toEqual([])
  })

  it("before the CONNACK, a CONNACK with the code instead [MQTT-3.2.2-7]", () => {
    const { s } = session5()
    const a = s.step({ type: "protocolError", reason: "bad", code: 0x81 }, 0)
    expect(sent(a)).toMatchObject([{ cmd: "connack", reasonCode: 0x81, sessionPresent: false }])
  })

  it("a Topic Alias where the server announced none is 0x94; AUTH without a method 0x82; a Subscription Identifier 0xA1", () => {
    const cases: Array<[Record<string, unknown>, number]> = [
      [{ cmd: "publish", topic: "a", payload: Buffer.from("x"), qos: 0, retain: false, dup: false, properties: { topicAlias: 1 } }, 0x94],
      [{ cmd: "auth", reasonCode: 0x18, properties: { authenticationMethod: "m" } }, 0x82],
      [{ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "a", qos: 0 }], properties: { subscriptionIdentifier: 4 } }, 0xa1],
      [{ cmd: "publish", topic: "a/#", payload: Buffer.from("x"), qos: 0, retain: false, dup: false }, 0x90]
    ]
    for (const [packet, code] of cases) {
      const { s } = ready5()
      const [p] = v5Packets(packet)
      expect(sent(s.step(pkt(p), 0))).toMatchObject([{ cmd: "disconnect", reasonCode: code }])
    }
  })
})

describe("MQTT 5.0 DISCONNECT from the client", () => {
  const will = { topic: "w", payload: Buffer.from("bye"), qos: 0, retain: false, properties: {} }
  it("0x00 drops the will, 0x04 sends it [MQTT-3.14.4-3]", () => {
    for (const [code, published] of [[0x00, 0], [0x04, 1]] as const) {
      const { s } = ready5({ will })
      const [d] = v5Packets({ cmd: "disconnect", reasonCode: code })
      expect(ofType(s.step(pkt(d), 0), "publish")).toHaveLength(published)
    }
  })

  it("may end a kept session (interval 0), not start one from 0 [MQTT-3.14.2-2]", () => {
    const { s } = ready5({ clean: false, properties: { sessionExpiryInterval: 100 } })
    const [d] = v5Packets({ cmd: "disconnect", reasonCode: 0, properties: { sessionExpiryInterval: 0 } })
    s.step(pkt(d), 0)
    expect([s.cleanSession, s.endsStored]).toEqual([true, true])
    const t = ready5()
    const [d2] = v5Packets({ cmd: "disconnect", reasonCode: 0, properties: { sessionExpiryInterval: 100 } })
    expect(sent(t.s.step(pkt(d2), 0))).toMatchObject([{ cmd: "disconnect", reasonCode: 0x82 }])
  })
})

describe("MQTT 5.0 acknowledgements in the session", () => {
  it("SUBACK: granted QoS, 0x8F, 0x87; a Shared Subscription joins its queue group; Retain Handling 2 asks for no retained messages, 1 only for new", () => {
    const { s } = ready5({}, { canSubscribe: (f) => !f.startsWith("secret") })
    const [sub] = v5Packets({
      cmd: "subscribe",
      messageId: 9,
      subscriptions: [
        { topic: "a/+", qos: 2, rh: 0 },
        { topic: "b", qos: 1, rh: 2 },
        { topic: "c", qos: 0, rh: 1 },
        { topic: "secret/x", qos: 1 },
        { topic: "$share/g/a", qos: 1 },
        { topic: "bad/#/x", qos: 1 }
      ]
    })
    const a = s.step(pkt(sub), 0)
    expect(sent(a)[0]).toMatchObject({ cmd: "suback", messageId: 9, reasonCodes: [2, 1, 0, 0x87, 1, 0x8f] })
    expect(ofType(a, "subscribe").find((x) => x.filter === "$share/g/a")).toMatchObject({ subjects: ["a"], queue: "g" })
    expect(ofType(a, "wantRetained").map((w) => w.filter)).toEqual(["a/+", "c"])
    const again = s.step(pkt(sub), 0)
    expect(ofType(again, "wantRetained").map((w) => w.filter)).toEqual(["a/+"]) // "c" existed
  })

  it("PUBACK/PUBREC 0x87 for a refused PUBLISH, in order behind the ones waiting; QoS 2 refused keeps no state", () => {
    const { s } = ready5({}, { canPublish: (t) => t !== "no" })
    const [ok1, no1, no2] = v5Packets(
      { cmd: "publish", topic: "yes", payload: Buffer.from("1"), qos: 1, messageId: 1, retain: false, dup: false },
      { cmd: "publish", topic: "no", payload: Buffer.from("2"), qos: 1, messageId: 2, retain: false, dup: false },
      { cmd: "publish", topic: "no", payload: Buffer.from("3"), qos: 2, messageId: 3, retain: false, dup: false }
    )
    expect(sent(s.step(pkt(ok1), 0))).toEqual([])
    expect(sent(s.step(pkt(no1), 0))).toEqual([])
    expect(sent(s.step(pkt(no2), 0))).toEqual([])
    expect(sent(s.step({ type: "published", packetId: 1 }, 0))).toMatchObject([
      { cmd: "puback", messageId: 1 },
      { cmd: "puback", messageId: 2, reasonCode: 0x87 },
      { cmd: "pubrec", messageId: 3, reasonCode: 0x87 }
    ])
    const [rel] = v5Packets({ cmd: "pubrel", messageId: 3 })
    expect(sent(s.step(pkt(rel), 0))).toMatchObject([{ cmd: "pubcomp", messageId: 3, reasonCode: 0x92 }])
  })

  it("UNSUBACK: 0x00 or 0x11 per filter [MQTT-3.11.3-1]", () => {
    const { s } = ready5()
    const [sub, unsub] = v5Packets(
      { cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "x", qos: 0 }] },
      { cmd: "unsubscribe", messageId: 2, unsubscriptions: ["y", "x"] }
    )
    s.step(pkt(sub), 0)
    expect(sent(s.step(pkt(unsub), 0))).toEqual([{ cmd: "unsuback", messageId: 2, reasonCodes: [0x11, 0x00] }])
  })
})

describe("MQTT 5.0 flow control in the session (slice 2)", () => {
  const subscribeTo = (s: MqttSession, topic: string, qos: number) => {
    const [sub] = v5Packets({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic, qos }] })
    s.step(pkt(sub), 0)
  }
  const publishes = (actions: ReadonlyArray<SessionAction>) => sent(actions).filter((p) => p.cmd === "publish")

  it("the client's Receive Maximum bounds the deliveries in flight [MQTT-4.9.0-2]; a PUBACK makes room", () => {
    const { s } = ready5({ properties: { receiveMaximum: 2 } })
    subscribeTo(s, "t", 1)
    const out = [1, 2, 3].flatMap((i) => publishes(s.step({ type: "deliver", subject: "t", payload: Buffer.from(`m${i}`), qos: 1 }, 0)))
    expect(out.map((p) => p.cmd === "publish" && Buffer.from(p.payload).toString())).toEqual(["m1", "m2"])
    const [ack] = v5Packets({ cmd: "puback", messageId: (out[0] as { messageId: number }).messageId })
    expect(publishes(s.step(pkt(ack), 0)).map((p) => p.cmd === "publish" && Buffer.from(p.payload).toString())).toEqual(["m3"])
  })

  it("the server's Receive Maximum: one QoS 1/2 PUBLISH more than it is DISCONNECT 0x93 [MQTT-3.3.4-7]; an acknowledged one frees its place", () => {
    const s = new MqttSession(0, { randomBytes: seededBytes(3) }, { ...config, v5: { ...v5Limits, receiveMaximum: 1 } })
    s.step(pkt(parse(new MqttParser({ v5: true }), connect5()).packets[0]), 0)
    expect(sent(s.step({ type: "sessionReady" }, 0))[0]).toMatchObject({ properties: { receiveMaximum: 1 } })
    const [p1, p2, p3] = v5Packets(
      { cmd: "publish", topic: "a", payload: Buffer.from("1"), qos: 1, messageId: 1, retain: false, dup: false },
      { cmd: "publish", topic: "a", payload: Buffer.from("2"), qos: 1, messageId: 2, retain: false, dup: false },
      { cmd: "publish", topic: "a", payload: Buffer.from("3"), qos: 1, messageId: 3, retain: false, dup: false }
    )
    s.step(pkt(p1), 0)
    expect(sent(s.step({ type: "published", packetId: 1 }, 0))).toMatchObject([{ cmd: "puback", messageId: 1 }])
    expect(sent(s.step(pkt(p2), 0))).toEqual([]) // the first was acknowledged: room for this one
    expect(sent(s.step(pkt(p3), 0))).toMatchObject([{ cmd: "disconnect", reasonCode: 0x93 }])
  })

  it("the client's Maximum Packet Size: a delivery over it is dropped as if sent, takes no packet id, and is counted [MQTT-3.1.2-25]", () => {
    const { s } = ready5({ properties: { maximumPacketSize: 40 } })
    subscribeTo(s, "t", 1)
    const big = s.step({ type: "deliver", subject: "t", payload: Buffer.alloc(100), qos: 1, ref: 7 }, 0)
    expect(publishes(big)).toEqual([])
    expect(ofType(big, "drop")).toEqual([{ type: "drop", reason: "packet_too_large" }])
    expect(s.storedTaken).toBe(0) // the store keeps no hold for this session
    expect(s.inflightCount).toBe(0)
    const small = s.step({ type: "deliver", subject: "t", payload: Buffer.from("ok"), qos: 1 }, 0)
    expect(publishes(small)).toMatchObject([{ messageId: 1 }])
  })

  it("resends only on a new connection, never after ack_wait [MQTT-4.4.0-1]", () => {
    const { s } = ready5({ keepalive: 0 })
    subscribeTo(s, "t", 1)
    s.step({ type: "deliver", subject: "t", payload: Buffer.from("x"), qos: 1 }, 0)
    expect(s.nextDeadline()).toBeUndefined()
    expect(publishes(s.step({ type: "tick" }, 10 * defaultSessionConfig.ackWaitMs))).toEqual([])
  })

  it("Topic Aliases from the client up to the server's maximum: set, used by an empty topic, 0x94 above", () => {
    const s = new MqttSession(0, { randomBytes: seededBytes(3) }, { ...config, v5: { ...v5Limits, topicAliasMaximum: 2 } })
    s.step(pkt(parse(new MqttParser({ v5: true }), connect5()).packets[0]), 0)
    s.step({ type: "sessionReady" }, 0)
    const [set, use, over] = v5Packets(
      { cmd: "publish", topic: "x/y", payload: Buffer.from("1"), qos: 0, retain: false, dup: false, properties: { topicAlias: 2 } },
      { cmd: "publish", topic: "", payload: Buffer.from("2"), qos: 0, retain: false, dup: false, properties: { topicAlias: 2 } },
      { cmd: "publish", topic: "z", payload: Buffer.from("3"), qos: 0, retain: false, dup: false, properties: { topicAlias: 3 } }
    )
    expect(ofType(s.step(pkt(set), 0), "publish").map((p) => p.subject)).toEqual(["x.y"])
    expect(ofType(s.step(pkt(use), 0), "publish").map((p) => p.subject)).toEqual(["x.y"])
    expect(sent(s.step(pkt(over), 0))).toMatchObject([{ cmd: "disconnect", reasonCode: 0x94 }])
  })
})

describe("MQTT 5.0 Session Expiry in the snapshot and the stored record", () => {
  it("a v5 session's snapshot carries its interval (not for 0xFFFFFFFF, nor on 3.1.1); the record keeps it and its end", () => {
    expect(ready5({ clean: false, properties: { sessionExpiryInterval: 30 } }).s.snapshot().expiryInterval).toBe(30)
    expect(ready5({ clean: false, properties: { sessionExpiryInterval: 0xffffffff } }).s.snapshot().expiryInterval).toBeUndefined()
    const s4 = new MqttSession(0, { randomBytes: seededBytes(1) }, config)
    s4.step(pkt({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: false, clientId: "x", keepalive: 0 }), 0)
    s4.step({ type: "sessionReady" }, 0)
    expect(s4.snapshot().expiryInterval).toBeUndefined()
    const snap = { ...ready5({ clean: false, properties: { sessionExpiryInterval: 30 } }).s.snapshot(), endsAt: 1_700_000_030_000 }
    const rec = decodeSessionRecord(encodeSessionRecord(snap, 0))
    expect([rec?.x, rec?.e]).toEqual([30, 1_700_000_030_000])
    // an away session made from it keeps both for its own snapshot
    const away = MqttSession.away(snap, 0, { randomBytes: seededBytes(1) }, config)
    expect([away.snapshot().expiryInterval, away.snapshot().endsAt]).toEqual([30, 1_700_000_030_000])
    expect(decodeSessionRecord(Buffer.from(JSON.stringify({ v: 1, id: "x", subs: [], pid: 0, cursor: 0, out: [], queued: [], x: "30" })))).toBeUndefined()
  })
})

describe("MQTT 5.0 Will Delay Interval in the session", () => {
  const will = (delay: number) => ({ topic: "w", payload: Buffer.from("bye"), qos: 1, retain: true, properties: { willDelayInterval: delay } })

  it("delays the will's actions by the shorter of its delay and the session's interval; none with a session ending now", () => {
    const cases: Array<[Record<string, unknown>, number | undefined]> = [
      [{ clean: false, properties: { sessionExpiryInterval: 60 }, will: will(5) }, 5000],
      [{ clean: false, properties: { sessionExpiryInterval: 3 }, will: will(5) }, 3000],
      [{ clean: true, will: will(5) }, undefined],
      [{ clean: false, properties: { sessionExpiryInterval: 60 }, will: will(0) }, undefined]
    ]
    for (const [connect, afterMs] of cases) {
      const { s } = ready5(connect)
      const actions = s.step({ type: "connectionLost" }, 0)
      const delayed = ofType(actions, "willDelayed")
      if (afterMs === undefined) {
        expect(delayed).toEqual([])
        expect(ofType(actions, "publish")).toHaveLength(1)
      } else {
        expect(delayed.map((d) => d.afterMs)).toEqual([afterMs])
        expect(delayed[0].actions.map((a) => a.type)).toEqual(["storeRetained", "publish"])
        expect(ofType(actions, "publish")).toEqual([])
      }
    }
  })
})

describe("MQTT 5.0 message properties across the bridge, in the session (slice 3)", () => {
  it("a PUBLISH's properties become the publish action's header block and reply subject", () => {
    const { s } = ready5()
    const [p] = v5Packets({
      cmd: "publish", topic: "a/b", payload: Buffer.from("x"), qos: 0, retain: false, dup: false,
      properties: { userProperties: { k: ["1", "2"] }, contentType: "text/plain", responseTopic: "r/t", correlationData: Buffer.from("id") }
    })
    const [pub] = ofType(s.step(pkt(p), 0), "publish")
    expect(pub.reply).toBe(`$MQTT.rr.b${Buffer.from("id").toString("base64url")}.r.t`)
    expect(pub.hdr?.toString()).toBe("NATS/1.0\r\nContent-Type: text/plain\r\nk: 1\r\nk: 2\r\n\r\n")
  })

  it("a Response Topic no reply subject can carry is refused with PUBACK 0x83, not routed", () => {
    const { s } = ready5()
    const [p] = v5Packets({ cmd: "publish", topic: "a", payload: Buffer.from("x"), qos: 1, messageId: 4, retain: false, dup: false, properties: { responseTopic: "bad topic" } })
    const actions = s.step(pkt(p), 0)
    expect(ofType(actions, "publish")).toEqual([])
    expect(sent(actions)).toMatchObject([{ cmd: "puback", messageId: 4, reasonCode: 0x83 }])
  })

  it("a delivery's properties go out with it, at QoS 0 and with a QoS 1 packet id", () => {
    const { s } = ready5()
    const [sub] = v5Packets({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 1 }] })
    s.step(pkt(sub), 0)
    const properties = { contentType: "a/b", userProperties: [["k", "v"]] as const }
    const out = [0, 1].flatMap((qos) => sent(s.step({ type: "deliver", subject: "t.x", payload: Buffer.from("p"), qos, properties }, 0)))
    expect(out).toMatchObject([{ cmd: "publish", qos: 0, properties }, { cmd: "publish", qos: 1, messageId: 1, properties }])
  })
})

describe("MQTT 5.0 Payload Format Indicator in the session", () => {
  const notUtf8 = Buffer.from([0x68, 0xc3, 0x28])
  it("[MQTT-3.3.2-4] 1 with a payload that is not UTF-8: PUBACK/PUBREC 0x99 at QoS 1/2, DISCONNECT 0x99 at QoS 0, never routed", () => {
    const { s } = ready5()
    const [q1, q2, ok, anyBytes] = v5Packets(
      { cmd: "publish", topic: "a", payload: notUtf8, qos: 1, messageId: 1, retain: false, dup: false, properties: { payloadFormatIndicator: true } },
      { cmd: "publish", topic: "a", payload: notUtf8, qos: 2, messageId: 2, retain: false, dup: false, properties: { payloadFormatIndicator: true } },
      { cmd: "publish", topic: "a", payload: Buffer.from("é"), qos: 1, messageId: 3, retain: false, dup: false, properties: { payloadFormatIndicator: true } },
      { cmd: "publish", topic: "a", payload: notUtf8, qos: 1, messageId: 4, retain: false, dup: false, properties: { payloadFormatIndicator: false } }
    )
    const refused = [...s.step(pkt(q1), 0), ...s.step(pkt(q2), 0)]
    expect(ofType(refused, "publish")).toEqual([])
    expect(sent(refused)).toMatchObject([{ cmd: "puback", messageId: 1, reasonCode: 0x99 }, { cmd: "pubrec", messageId: 2, reasonCode: 0x99 }])
    expect(ofType([...s.step(pkt(ok), 0), ...s.step(pkt(anyBytes), 0)], "publish")).toHaveLength(2)
    const [q0] = v5Packets({ cmd: "publish", topic: "a", payload: notUtf8, qos: 0, retain: false, dup: false, properties: { payloadFormatIndicator: true } })
    const closed = s.step(pkt(q0), 0)
    expect(ofType(closed, "publish")).toEqual([])
    expect(sent(closed)).toMatchObject([{ cmd: "disconnect", reasonCode: 0x99 }])
  })
})

describe("MQTT 5.0 acknowledgements from routing and the store", () => {
  it("[MQTT-3.4.2.1] 0x10 No matching subscribers on a PUBACK, without a Reason String", () => {
    const { s } = ready5()
    const [p1, p2] = v5Packets(
      { cmd: "publish", topic: "a", payload: Buffer.from("x"), qos: 1, messageId: 1, retain: false, dup: false },
      { cmd: "publish", topic: "a", payload: Buffer.from("x"), qos: 1, messageId: 2, retain: false, dup: false }
    )
    s.step(pkt(p1), 0)
    s.step(pkt(p2), 0)
    expect(sent(s.step({ type: "published", packetId: 1, code: 0x10 }, 0))).toEqual([{ cmd: "puback", messageId: 1, reasonCode: 0x10 }])
    expect(sent(s.step({ type: "published", packetId: 2 }, 0))).toEqual([{ cmd: "puback", messageId: 2 }])
  })

  it("[MQTT-3.5.2.2] 0x10 No matching subscribers on a PUBREC: the PUBREL still completes the exchange; a resend before it gets the same code", () => {
    const { s } = ready5()
    const [p1, dup1, rel1, p2] = v5Packets(
      { cmd: "publish", topic: "a", payload: Buffer.from("x"), qos: 2, messageId: 1, retain: false, dup: false },
      { cmd: "publish", topic: "a", payload: Buffer.from("x"), qos: 2, messageId: 1, retain: false, dup: true },
      { cmd: "pubrel", messageId: 1 },
      { cmd: "publish", topic: "a", payload: Buffer.from("x"), qos: 2, messageId: 2, retain: false, dup: false }
    )
    expect(ofType(s.step(pkt(p1), 0), "publish")).toMatchObject([{ qos: 2, confirm: 1 }])
    expect(wire(sent(s.step({ type: "published", packetId: 1, code: 0x10 }, 0)))).toMatchObject([{ cmd: "pubrec", messageId: 1, reasonCode: 0x10 }])
    // the client did not hear it and resends: not routed again, the same answer
    const again = s.step(pkt(dup1), 0)
    expect(ofType(again, "publish")).toEqual([])
    expect(sent(again)).toEqual([{ cmd: "pubrec", messageId: 1, reasonCode: 0x10 }])
    expect(sent(s.step(pkt(rel1), 0))).toEqual([{ cmd: "pubcomp", messageId: 1 }])
    // the next one that reached someone: Success
    s.step(pkt(p2), 0)
    expect(sent(s.step({ type: "published", packetId: 2 }, 0))).toEqual([{ cmd: "pubrec", messageId: 2 }])
  })

  it("0x97 Quota exceeded: PUBACK or PUBREC with a Reason String; the QoS 2 exchange ends there [MQTT-4.3.3-4]", () => {
    const { s } = ready5()
    const [p1, p2, rel] = v5Packets(
      { cmd: "publish", topic: "a", payload: Buffer.from("x"), qos: 1, messageId: 1, retain: false, dup: false },
      { cmd: "publish", topic: "a", payload: Buffer.from("x"), qos: 2, messageId: 2, retain: false, dup: false },
      { cmd: "pubrel", messageId: 2 }
    )
    s.step(pkt(p1), 0)
    s.step(pkt(p2), 0)
    expect(sent([...s.step({ type: "published", packetId: 1, code: 0x97 }, 0), ...s.step({ type: "published", packetId: 2, code: 0x97 }, 0)])).toMatchObject([
      { cmd: "puback", messageId: 1, reasonCode: 0x97, properties: { reasonString: "a storage limit refused the message" } },
      { cmd: "pubrec", messageId: 2, reasonCode: 0x97 }
    ])
    // no QoS 2 state is left: a PUBREL for it is PUBCOMP 0x92
    expect(sent(s.step(pkt(rel), 0))).toMatchObject([{ cmd: "pubcomp", messageId: 2, reasonCode: 0x92 }])
  })

  it("3.1.1 ignores the codes: a plain PUBACK", () => {
    const { session: s } = connected()
    s.step(pkt({ cmd: "publish", topic: "a", payload: Buffer.from("x"), qos: 1, messageId: 1, retain: false, dup: false }), 0)
    expect(sent(s.step({ type: "published", packetId: 1, code: 0x10 }, 0))).toEqual([{ cmd: "puback", messageId: 1 }])
  })
})

describe("MQTT 5.0 Server Keep Alive and Response Information in the session", () => {
  const limited = (connect: Record<string, unknown>) => {
    const s = new MqttSession(0, { randomBytes: seededBytes(7) }, { ...config, v5: { ...v5Limits, maximumKeepAlive: 10, responseInformation: "_INBOX/mqtt" } })
    s.step(pkt(parse(new MqttParser({ v5: true }), connect5(connect)).packets[0]!), 0)
    return { s, connack: sent(s.step({ type: "sessionReady" }, 0))[0] as { properties?: Record<string, unknown> } }
  }

  it("[MQTT-3.2.2-21] a Keep Alive above the maximum, or 0, is replaced by the Server Keep Alive, and the server holds the client to it", () => {
    const { s, connack } = limited({ keepalive: 0 })
    expect(connack.properties?.serverKeepAlive).toBe(10)
    expect(closeOf(s.step({ type: "tick" }, 14_000))).toEqual([])
    expect(sent(s.step({ type: "tick" }, 15_000))).toMatchObject([{ cmd: "disconnect", reasonCode: 0x8d }])
    expect(limited({ keepalive: 5 }).connack.properties?.serverKeepAlive).toBeUndefined()
  })

  it("[MQTT-3.1.2-28] Response Information only when asked for: the prefix and the client's own level (a hash for an id that is no plain word)", () => {
    expect(limited({}).connack.properties?.responseInformation).toBeUndefined()
    expect(limited({ clientId: "dev-1", properties: { requestResponseInformation: true } }).connack.properties?.responseInformation).toBe("_INBOX/mqtt/dev-1")
    expect(limited({ clientId: "a/b c", properties: { requestResponseInformation: true } }).connack.properties?.responseInformation).toMatch(/^_INBOX\/mqtt\/[0-9a-f]{32}$/)
  })
})

describe("MQTT 5.0 No Local in the session", () => {
  it("a message the connection published itself skips its No Local subscriptions, on the fast path and in step", () => {
    const { s } = ready5()
    const [sub] = v5Packets({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t", qos: 1, nl: true }] })
    s.step(pkt(sub), 0)
    expect(s.deliverQos0("t", 0, true)).toBeNull()
    expect(s.deliverQos0("t", 0, false)).toBe("t")
    expect(sent(s.step({ type: "deliver", subject: "t", payload: Buffer.from("x"), qos: 1, local: true }, 0))).toEqual([])
    expect(sent(s.step({ type: "deliver", subject: "t", payload: Buffer.from("x"), qos: 1, local: false }, 0))).toHaveLength(1)
    expect(s.snapshot().subscriptions).toEqual([{ filter: "t", qos: 1, noLocal: true }])
  })
})

describe("MQTT 5.0 Message Expiry in the session", () => {
  it("a queued message goes with what is left of its interval [MQTT-3.3.2-6], or not at all once it ran out [MQTT-3.3.2-5]", () => {
    const { s } = ready5({ keepalive: 0, properties: { receiveMaximum: 1 } })
    const [sub] = v5Packets({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t", qos: 1 }] })
    s.step(pkt(sub), 0)
    const d = (text: string, expiry?: number) =>
      s.step({ type: "deliver", subject: "t", payload: Buffer.from(text), qos: 1, properties: expiry === undefined ? undefined : { messageExpiryInterval: expiry } }, 0)
    expect(sent(d("m1"))).toHaveLength(1)
    d("m2", 10)
    d("m3", 2)
    const [ack1, ack2] = v5Packets({ cmd: "puback", messageId: 1 }, { cmd: "puback", messageId: 2 })
    const second = s.step(pkt(ack1), 4_000)
    expect(sent(second)).toMatchObject([{ cmd: "publish", messageId: 2, properties: { messageExpiryInterval: 6 } }])
    // m3 ran out while it waited: dropped as soon as it is looked at, window or not
    expect(ofType(second, "drop")).toEqual([{ type: "drop", reason: "expired", ref: undefined }])
    expect(sent(s.step(pkt(ack2), 4_000))).toEqual([])
  })
})

describe("MQTT 5.0 Message Expiry on kept copies", () => {
  const publishes = (actions: ReadonlyArray<SessionAction>) => sent(actions).filter((p) => p.cmd === "publish")

  it("[MQTT-3.3.2-5] [MQTT-3.3.2-6] in an away session's queue: counted from its arrival, dropped once run out, the rest sent with what is left", () => {
    const live = ready5({ clean: false, properties: { sessionExpiryInterval: 600 } }).s
    const [sub] = v5Packets({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t", qos: 1 }] })
    live.step(pkt(sub), 0)
    const away = MqttSession.away(live.snapshot(), 0, { randomBytes: seededBytes(1) }, config)
    const deliver = (text: string, expiry: number) =>
      away.step({ type: "deliver", subject: "t", payload: Buffer.from(text), qos: 1, properties: { messageExpiryInterval: expiry, contentType: "c" } }, 1_000)
    deliver("short", 5)
    deliver("long", 60)
    // back 10 s later: "short" ran out while away
    const back = new MqttSession(11_000, { randomBytes: seededBytes(2) }, config)
    back.step(pkt(parse(new MqttParser({ v5: true }), connect5({ clean: false, properties: { sessionExpiryInterval: 600 } })).packets[0]!), 11_000)
    const out = back.step({ type: "sessionReady", stored: away.snapshot() }, 11_000)
    expect(publishes(out)).toMatchObject([{ payload: Buffer.from("long"), properties: { messageExpiryInterval: 50, contentType: "c" } }])
    expect(ofType(out, "drop")).toMatchObject([{ reason: "expired" }])
  })

  it("a retained message: sent with what is left of its interval, not at all once it ran out; properties kept", () => {
    const { s } = ready5()
    const [sub] = v5Packets({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "r/#", qos: 1 }] })
    s.step(pkt(sub), 0)
    const out = s.step({
      type: "retained",
      filter: "r/#",
      messages: [
        { topic: "r/old", payload: Buffer.from("o"), qos: 1, properties: { messageExpiryInterval: 10 }, receivedAt: 0 },
        { topic: "r/new", payload: Buffer.from("n"), qos: 1, properties: { messageExpiryInterval: 100, userProperties: [["k", "v"]] }, receivedAt: 0 },
        { topic: "r/forever", payload: Buffer.from("f"), qos: 1 }
      ]
    }, 20_000)
    expect(publishes(out)).toMatchObject([
      { topic: "r/new", retain: true, properties: { messageExpiryInterval: 80, userProperties: [["k", "v"]] } },
      { topic: "r/forever", retain: true }
    ])
  })

  /**
   * A session resumed from the store at t=30 s with stored messages 7 and 8 (in flight or
   * queued: their payloads wait in the store), read back: 7 stored at 0 with 20 s to live,
   * 8 with 40 s and a Content Type.
   */
  const readBack = (stored: Pick<SessionSnapshot, "outbound" | "queued" | "lastPacketId">) => {
    const s = new MqttSession(30_000, { randomBytes: seededBytes(2) }, config)
    s.step(pkt(parse(new MqttParser({ v5: true }), connect5({ clean: false, properties: { sessionExpiryInterval: 600 } })).packets[0]!), 30_000)
    const ready = s.step({ type: "sessionReady", stored: { clientId: "dev", subscriptions: [{ filter: "t", qos: 1 }], inboundQos2: [], expiryInterval: 600, ...stored } }, 30_000)
    expect(ofType(ready, "fetch")).toMatchObject([{ refs: [7, 8] }])
    return s.step({
      type: "fetched",
      messages: [
        { ref: 7, payload: Buffer.from("a"), qos: 1, properties: { messageExpiryInterval: 20 }, receivedAt: 0 },
        { ref: 8, payload: Buffer.from("b"), qos: 1, properties: { messageExpiryInterval: 40, contentType: "x" }, receivedAt: 0 }
      ]
    }, 30_000)
  }

  it("a stored message read back (fetched): its stored properties, its interval counted from when it was stored", () => {
    const waiting = (ref: number) => ({ qos: 1 as const, topic: "t", payload: undefined, size: 1, retain: false, ref })
    const out = readBack({ outbound: [], queued: [waiting(7), waiting(8)], lastPacketId: 0 })
    expect(ofType(out, "drop")).toMatchObject([{ reason: "expired", ref: 7 }])
    expect(publishes(out)).toMatchObject([{ payload: Buffer.from("b"), properties: { messageExpiryInterval: 10, contentType: "x" } }])
  })

  /** A v5 persistent session that sent `t` messages (QoS 1 "one", QoS 2 "two", 10 s to live) at t=0 and is resumed by a new connection at `at`. */
  const resumedAt = (at: number) => {
    const live = ready5({ clean: false, properties: { sessionExpiryInterval: 600 } }).s
    const [sub] = v5Packets({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t", qos: 2 }] })
    live.step(pkt(sub), 0)
    const sentLive = publishes([
      ...live.step({ type: "deliver", subject: "t", payload: Buffer.from("one"), qos: 1, properties: { messageExpiryInterval: 10 } }, 0),
      ...live.step({ type: "deliver", subject: "t", payload: Buffer.from("two"), qos: 2, properties: { messageExpiryInterval: 10 } }, 0)
    ])
    expect(sentLive).toMatchObject([{ qos: 1, properties: { messageExpiryInterval: 10 } }, { qos: 2, properties: { messageExpiryInterval: 10 } }])
    live.step({ type: "connectionLost" }, 1_000)
    const away = MqttSession.away(live.snapshot(), 1_000, { randomBytes: seededBytes(1) }, config)
    const back = new MqttSession(at, { randomBytes: seededBytes(2) }, config)
    back.step(pkt(parse(new MqttParser({ v5: true }), connect5({ clean: false, properties: { sessionExpiryInterval: 600 } })).packets[0]!), at)
    return back.step({ type: "sessionReady", stored: away.snapshot() }, at)
  }

  it("[MQTT-3.3.2-6] a message resent on a new connection carries what is left of its interval, counted to now", () => {
    const out = resumedAt(4_000)
    expect(publishes(out)).toMatchObject([
      { payload: Buffer.from("one"), dup: true, qos: 1, properties: { messageExpiryInterval: 6 } },
      { payload: Buffer.from("two"), dup: true, qos: 2, properties: { messageExpiryInterval: 6 } }
    ])
    expect(ofType(out, "drop")).toEqual([])
  })

  it("[MQTT-3.3.2-5] [MQTT-4.3.3-7] once it ran out, a QoS 1 message is not resent; a QoS 2 one completes its exchange", () => {
    const out = resumedAt(15_000)
    expect(publishes(out)).toMatchObject([{ payload: Buffer.from("two"), dup: true, qos: 2, properties: { messageExpiryInterval: 0 } }])
    expect(ofType(out, "drop")).toMatchObject([{ reason: "expired" }])
  })

  it("an in-flight stored message read back after a restart: counted from when it was stored, not resent once it ran out", () => {
    const inFlight = (packetId: number, ref: number) => ({ packetId, qos: 1 as const, topic: "t", payload: undefined, retain: false, phase: "publish" as const, ref })
    const out = readBack({ outbound: [inFlight(1, 7), inFlight(2, 8)], queued: [], lastPacketId: 2 })
    expect(ofType(out, "drop")).toMatchObject([{ reason: "expired", ref: 7 }])
    expect(publishes(out)).toMatchObject([{ payload: Buffer.from("b"), dup: true, messageId: 2, properties: { messageExpiryInterval: 10 } }])
  })

  it("the stored header keeps the bridge's lines, the reply subject and the message's own headers apart", () => {
    const hdr = Buffer.from("NATS/1.0\r\nContent-Type: a/b\r\nk: ü\r\n\r\n")
    const stored = storedHeader(qosHeader(1), hdr, "$MQTT.rr.bYw.r")
    expect(qosOfHeader(stored)).toBe(1)
    expect(storedParts(stored)).toEqual({ reply: "$MQTT.rr.bYw.r", hdr })
    expect(storedParts(qosHeader(2))).toEqual({ reply: undefined, hdr: undefined })
    expect(storedHeader(qosHeader(2), undefined, undefined)).toBe(qosHeader(2))
    expect(storedParts(storedHeader(qosHeader(2), undefined, "r.s"))).toEqual({ reply: "r.s", hdr: undefined })
  })
})

describe("MQTT 5.0 subscription options and delayed wills in the stored records", () => {
  it("a subscription record keeps No Local, the Subscription Identifier, Retain As Published and sharing; none set, none written", () => {
    const rec = decodeSubscriptionRecord(encodeSubscriptionRecord("$share/g/t", 1, 5, { noLocal: false, id: 9, rap: true, shared: true }))!
    expect(rec).toEqual({ f: "$share/g/t", q: 1, c: 5, i: 9, rap: 1, s: 1 })
    expect(subscriptionOptionsOf(rec)).toEqual({ id: 9, rap: true, shared: true })
    expect(JSON.parse(encodeSubscriptionRecord("a", 0, 1).toString())).toEqual({ f: "a", q: 0, c: 1 })
    // a record without `s` (3.1.1, or written before) is a literal filter
    expect(subscriptionOptionsOf(decodeSubscriptionRecord(encodeSubscriptionRecord("$share/g/t", 1, 1))!)).toEqual({})
  })

  it("the session asks for them with the subscription; a 3.1.1 `$share/` filter is not shared", () => {
    const s = new MqttSession(0, { randomBytes: seededBytes(5) }, { ...config, v5: { ...v5Limits, subscriptionIdentifiersAvailable: true } })
    s.step(pkt(parse(new MqttParser({ v5: true }), connect5({ clean: false, properties: { sessionExpiryInterval: 60 } })).packets[0]!), 0)
    s.step({ type: "sessionReady" }, 0)
    const [sub] = v5Packets({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "$share/g/t", qos: 1 }, { topic: "x", qos: 1, nl: true, rap: true }], properties: { subscriptionIdentifier: 4 } })
    expect(ofType(s.step(pkt(sub), 0), "persistSubscription")).toEqual([
      { type: "persistSubscription", filter: "$share/g/t", qos: 1, options: { noLocal: false, id: 4, rap: false, shared: true } },
      { type: "persistSubscription", filter: "x", qos: 1, options: { noLocal: true, id: 4, rap: true, shared: false } }
    ])
    const { session: old } = connected({ connect: { clean: false } })
    const acts = old.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "$share/g/t", qos: 1 }] }), 0)
    expect(ofType(acts, "subscribe")).toMatchObject([{ subjects: ["$share.g.t"], queue: undefined }])
    expect(ofType(acts, "persistSubscription")).toEqual([{ type: "persistSubscription", filter: "$share/g/t", qos: 1 }])
    const away = MqttSession.away(old.snapshot(), 0, { randomBytes: seededBytes(1) }, defaultSessionConfig)
    expect(away.snapshot().subscriptions).toEqual([{ filter: "$share/g/t", qos: 1 }])
  })

  it("a delayed will rides in the session record and comes back as it was", () => {
    const will = { at: 1_700_000_000_000, topic: "w/t", subject: "w.t", payload: Buffer.from("bye"), qos: 1 as const, retain: true, reply: "r.s", hdr: Buffer.from("NATS/1.0\r\nk: v\r\n\r\n") }
    const snap = { clientId: "c", subscriptions: [], outbound: [], queued: [], inboundQos2: [], lastPacketId: 0, will }
    expect(delayedWillOf(decodeSessionRecord(encodeSessionRecord(snap, 0))!)).toEqual(will)
    const away = MqttSession.away(snap, 0, { randomBytes: seededBytes(1) }, defaultSessionConfig)
    expect(away.pendingWill).toEqual(will)
    away.willDone()
    expect(away.snapshot().will).toBeUndefined()
  })
})

describe("MQTT 5.0 Subscription Identifiers in the session", () => {
  it("the fast path and step both give the identifiers of the matching subscriptions, in order", () => {
    const s = new MqttSession(0, { randomBytes: seededBytes(5) }, { ...config, v5: { ...v5Limits, subscriptionIdentifiersAvailable: true } })
    s.step(pkt(parse(new MqttParser({ v5: true }), connect5()).packets[0]), 0)
    s.step({ type: "sessionReady" }, 0)
    const [a, b] = v5Packets(
      { cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "x/#", qos: 1 }], properties: { subscriptionIdentifier: 3 } },
      { cmd: "subscribe", messageId: 2, subscriptions: [{ topic: "x/y", qos: 1 }], properties: { subscriptionIdentifier: 5 } }
    )
    s.step(pkt(a), 0)
    s.step(pkt(b), 0)
    expect(s.deliverQos0("x.y", 0)).toBe("x/y")
    expect(s.deliveryIdentifiers).toEqual([3, 5])
    expect(s.deliverQos0("x.z", 0)).toBe("x/z")
    expect(s.deliveryIdentifiers).toEqual([3])
    const out = sent(s.step({ type: "deliver", subject: "x.y", payload: Buffer.from("p"), qos: 1 }, 0))
    expect(out).toMatchObject([{ cmd: "publish", qos: 1, properties: { subscriptionIdentifiers: [3, 5] } }])
  })
})

describe("MQTT 5.0 Will Properties across the bridge", () => {
  it("a will's User Properties and Content Type become the NATS headers of its publish", () => {
    const { s } = ready5({ will: { topic: "w/x", payload: Buffer.from("bye"), qos: 0, retain: false, properties: { contentType: "text/plain", userProperties: { why: "lost" } } } })
    const [pub] = ofType(s.step({ type: "connectionLost" }, 0), "publish")
    expect(pub.subject).toBe("w.x")
    expect(pub.hdr?.toString()).toBe("NATS/1.0\r\nContent-Type: text/plain\r\nwhy: lost\r\n\r\n")
  })
})

describe("the cluster's MQTT header", () => {
  it("Nmqtt-Pub is never a User Property: escaped from a client, not handed to one", async () => {
    const { publishToNats, natsToPublish } = await import("../../src/core/mqtt/v5/nats.js")
    const out = publishToNats("a", { userProperties: [["Nmqtt-Pub", "2"]] })
    expect(out.ok && out.headers).toEqual([["Mqtt-User-Property", "Nmqtt-Pub=2"]])
    const back = natsToPublish("a", undefined, Buffer.from("NATS/1.0\r\nNmqtt-Pub: 1\r\nk: v\r\n\r\n"))
    expect(back.properties.userProperties).toEqual([["k", "v"]])
  })
})
