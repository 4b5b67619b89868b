// Malformed and hostile MQTT 3.1.1 input over real TCP sockets: a table generated from
// the rules (reserved flags, lengths, CONNECT fields, strings, packet order, filters,
// fuzz), each case with its exact outcome, and a bystander client that must keep
// working after every batch. Also: clients announcing huge packets are cut off without
// the server buffering what they announce. Cases marked `strict` need the server to
// decode with the codec's MqttParser (mqtt-packet accepts them); they are skipped otherwise.
import * as net from "node:net"
import { connect as natsConnect, type NatsConnection } from "nats"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ClientPacket, MqttSession, type SessionInput } from "../../src/core/mqtt/index.js"
import { seededBytes, seededRandom } from "../helpers/mqtt-session.js"
import { MqttParser } from "../../src/core/mqtt/codec.js"
import { bin, frame, str, u16, varLength } from "../helpers/mqtt-wire.js"
import { getJson } from "../helpers/monitor.js"
import { connectMqtt, eventually, type MqttServer, startMqttServer, type TestMqttClient } from "../helpers/mqtt.js"

// ---- wire builders ----


interface ConnectSpec {
  readonly name?: string | Buffer
  readonly level?: number
  readonly flags?: number
  readonly clientId?: string | Buffer
  readonly willTopic?: string | Buffer
  readonly willPayload?: Buffer
  readonly username?: string | Buffer
  readonly password?: Buffer
  readonly keepalive?: number
}

let idNo = 0

/** A CONNECT whose payload carries exactly the fields its flags announce (a fresh client id unless given). */
const connectBody = (c: ConnectSpec = {}): Buffer => {
  const flags = c.flags ?? 0x02
  return Buffer.concat([
    str(c.name ?? "MQTT"),
    Buffer.from([c.level ?? 4, flags]),
    u16(c.keepalive ?? 0),
    str(c.clientId ?? `malformed-${idNo++}`),
    flags & 0x04 ? Buffer.concat([str(c.willTopic ?? "will/t"), bin(c.willPayload ?? Buffer.from("bye"))]) : Buffer.alloc(0),
    flags & 0x80 ? str(c.username ?? "user") : Buffer.alloc(0),
    flags & 0x40 ? bin(c.password ?? Buffer.from("pass")) : Buffer.alloc(0)
  ])
}
const connect = (c: ConnectSpec = {}): Buffer => frame(0x10, connectBody(c))

const publishBody = (topic: string | Buffer, qos: number, id: number, payload = "p"): Buffer =>
  Buffer.concat([str(topic), qos > 0 ? u16(id) : Buffer.alloc(0), Buffer.from(payload)])
const publish = (topic: string | Buffer, qos = 0, id = 1, payload = "p", flags = 0): Buffer =>
  frame(0x30 | (qos << 1) | flags, publishBody(topic, qos, id, payload))
const subscribeBody = (id: number, ...subs: Array<[string | Buffer, number]>): Buffer =>
  Buffer.concat([u16(id), ...subs.map(([t, q]) => Buffer.concat([str(t), Buffer.from([q])]))])
const subscribe = (id: number, ...subs: Array<[string | Buffer, number]>): Buffer => frame(0x82, subscribeBody(id, ...subs))
const unsubscribeBody = (id: number, ...filters: Array<string | Buffer>): Buffer => Buffer.concat([u16(id), ...filters.map(str)])
const unsubscribe = (id: number, ...filters: Array<string | Buffer>): Buffer => frame(0xa2, unsubscribeBody(id, ...filters))
const ack = (type: number, id: number): Buffer => frame((type << 4) | (type === 6 ? 2 : 0), u16(id))

const CONNACK = (code: number, present = 0): Buffer => Buffer.from([0x20, 0x02, present, code])
const PINGREQ = Buffer.from([0xc0, 0x00])
const PINGRESP = Buffer.from([0xd0, 0x00])
const SUBACK = (id: number, ...granted: number[]): Buffer => frame(0x90, Buffer.concat([u16(id), Buffer.from(granted)]))
const UNSUBACK = (id: number): Buffer => frame(0xb0, u16(id))
const NONE = Buffer.alloc(0)
/** The largest remaining length four bytes can carry (FF FF FF 7F): 256 MB. */
const MAX_REMAINING = 268_435_455

// ---- the table ----

/**
 * One hostile input and what the server does with it. With `afterConnect`, a valid
 * CONNECT is answered with CONNACK 0 first. `reply` is every byte the server sends
 * (after that CONNACK); then it closes the connection (`closed`), or it keeps it open
 * and answers a PINGREQ (checked by appending one).
 */
interface Case {
  readonly name: string
  readonly afterConnect: boolean
  readonly send: Buffer | ReadonlyArray<Buffer>
  readonly reply: Buffer
  readonly closed: boolean
  /** mqtt-packet gets it wrong: only right once connection.ts decodes with the codec's `MqttParser`. */
  readonly strict?: boolean
}

const strictly = (c: Case): Case => ({ ...c, strict: true })

const closes = (name: string, send: Case["send"], afterConnect = true, reply = NONE): Case => ({ name, afterConnect, send, reply, closed: true })
const answers = (name: string, send: Case["send"], reply: Buffer, afterConnect = true): Case => ({ name, afterConnect, send, reply, closed: false })
const refused = (name: string, send: Buffer, code: number): Case => ({ name, afterConnect: false, send, reply: CONNACK(code), closed: true })
const accepted = (name: string, send: Buffer, present = 0): Case => ({ name, afterConnect: false, send, reply: CONNACK(0, present), closed: false })

const hex = (n: number): string => `0x${n.toString(16).padStart(2, "0")}`

/** A well-formed body for every packet type a client may send (type -> body). */
const validBodies: Record<number, Buffer> = {
  1: connectBody({ clientId: "dup-connect" }),
  3: publishBody("ok/t", 0, 0),
  4: u16(1),
  5: u16(1),
  6: u16(1),
  7: u16(1),
  8: subscribeBody(1, ["ok/t", 0]),
  10: unsubscribeBody(1, "ok/t"),
  12: NONE,
  14: NONE,
  // server-to-client packets, shaped as a server would send them
  2: Buffer.from([0, 0]),
  9: Buffer.from([0, 1, 0]),
  11: u16(1),
  13: NONE
}
const REQUIRED_FLAGS: Record<number, number> = { 6: 2, 8: 2, 10: 2 }
const TYPE_NAMES = ["RESERVED0", "CONNECT", "CONNACK", "PUBLISH", "PUBACK", "PUBREC", "PUBREL", "PUBCOMP", "SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "PINGREQ", "PINGRESP", "DISCONNECT", "RESERVED15"]

/** [MQTT-2.2.2-1, -2] every flag value but the required one, for every type but PUBLISH. */
const reservedFlagCases = (): Case[] => {
  const out: Case[] = []
  for (const type of [1, 4, 5, 6, 7, 8, 10, 12, 14]) {
    for (let flags = 0; flags < 16; flags++) {
      if (flags === (REQUIRED_FLAGS[type] ?? 0)) continue
      const name = `[MQTT-2.2.2-2] ${TYPE_NAMES[type]} with header flags ${hex(flags)} closes`
      out.push(closes(name, frame((type << 4) | flags, validBodies[type]), type !== 1))
    }
  }
  return out
}

/** [MQTT-3.3.1-4] QoS 3, [MQTT-3.3.1-2] DUP on QoS 0; the other PUBLISH flags are fine. */
const publishFlagCases = (): Case[] => {
  const out: Case[] = []
  for (let flags = 0; flags < 16; flags++) {
    const qos = (flags >> 1) & 3
    const dup = (flags & 8) !== 0
    const bytes = Buffer.concat([Buffer.from([0x30 | flags]), varLength(publishBody("flags/t", qos, 9).length), publishBody("flags/t", qos, 9)])
    if (qos === 3) out.push(closes(`[MQTT-3.3.1-4] PUBLISH flags ${hex(flags)} (QoS 3) closes`, bytes))
    else if (qos === 0 && dup) out.push(strictly(closes(`[MQTT-3.3.1-2] PUBLISH flags ${hex(flags)} (DUP on QoS 0) closes`, bytes)))
    else {
      const reply = qos === 0 ? NONE : qos === 1 ? ack(4, 9) : frame(0x50, u16(9))
      // a retained message is stored: the empty retained PUBLISH after it deletes it again
      const clear = flags & 1 ? publish("flags/t", 0, 0, "", 1) : NONE
      out.push(answers(`PUBLISH flags ${hex(flags)} (QoS ${qos}) is accepted`, Buffer.concat([bytes, clear]), reply))
    }
  }
  return out
}

/** Packets only a server sends, and the reserved types 0 and 15 [MQTT-2.2.1]. */
const packetTypeCases = (): Case[] => {
  const out: Case[] = []
  for (const type of [2, 9, 11, 13]) {
    out.push(closes(`${TYPE_NAMES[type]} from a client closes [MQTT-4.8.0-1]`, frame(type << 4, validBodies[type])))
    out.push(closes(`${TYPE_NAMES[type]} before CONNECT closes [MQTT-3.1.0-1]`, frame(type << 4, validBodies[type]), false))
  }
  for (const type of [0, 15]) {
    for (const flags of [0x0, 0x2, 0xf]) {
      for (const afterConnect of [true, false]) {
        const name = `reserved packet type ${type} flags ${hex(flags)} ${afterConnect ? "after" : "before"} CONNECT closes`
        out.push(closes(name, frame((type << 4) | flags, Buffer.from([0, 1])), afterConnect))
      }
    }
  }
  return out
}

/** [MQTT-3.1.0-1] nothing but CONNECT may come first. */
const beforeConnectCases = (): Case[] =>
  [3, 4, 5, 6, 7, 8, 10, 12, 14].map((type) =>
    closes(`[MQTT-3.1.0-1] ${TYPE_NAMES[type]} before CONNECT closes`, frame((type << 4) | (REQUIRED_FLAGS[type] ?? 0), validBodies[type]), false)
  )

/** Remaining length: five bytes, lying lengths, and overlong (but at most 4 byte) encodings. */
const remainingLengthCases = (): Case[] => {
  const out: Case[] = []
  const fiveBytes = [[0x80, 0x80, 0x80, 0x80, 0x01], [0xff, 0xff, 0xff, 0xff, 0x7f], [0x81, 0x81, 0x81, 0x81, 0x00]]
  for (const type of [1, 3, 8, 12]) {
    for (const enc of fiveBytes) {
      const first = (type << 4) | (REQUIRED_FLAGS[type] ?? 0)
      const name = `[MQTT-2.2.3] ${TYPE_NAMES[type]} with a 5-byte remaining length ${Buffer.from(enc).toString("hex")} closes`
      out.push(closes(name, Buffer.from([first, ...enc]), type !== 1))
    }
  }
  // 3.1.1 does not require the shortest encoding (MQTT 5 does): overlong encodings of a
  // small value are decoded as that value.
  out.push(answers("PINGREQ with remaining length 0 encoded in 2 bytes (80 00) is answered", Buffer.from([0xc0, 0x80, 0x00]), PINGRESP))
  out.push(answers("PINGREQ with remaining length 0 encoded in 4 bytes is answered", Buffer.from([0xc0, 0x80, 0x80, 0x80, 0x00]), PINGRESP))
  const sub = subscribeBody(3, ["overlong/t", 1])
  out.push(answers("SUBSCRIBE with its remaining length encoded in 3 bytes is answered", Buffer.concat([Buffer.from([0x82, 0x80 | sub.length, 0x80, 0x00]), sub]), SUBACK(3, 1)))
  // acknowledgements are exactly 2 bytes, PINGREQ and DISCONNECT exactly 0 [MQTT-3.4.1, 3.12.1, 3.14.1]
  for (const type of [4, 5, 6, 7]) {
    for (const len of [0, 1, 3, 4]) {
      const body = Buffer.alloc(len, 1)
      out.push(strictly(closes(`${TYPE_NAMES[type]} with remaining length ${len} (must be 2) closes`, frame((type << 4) | (REQUIRED_FLAGS[type] ?? 0), body))))
    }
  }
  for (const type of [12, 14]) {
    for (const len of [1, 2]) {
      // mqtt-packet ignores the extra bytes of a PINGREQ; a DISCONNECT closes either way
      const c = closes(`${TYPE_NAMES[type]} with remaining length ${len} (must be 0) closes`, frame(type << 4, Buffer.alloc(len)))
      out.push(type === 12 ? strictly(c) : c)
    }
  }
  return out
}

/** Every truncation of a packet's variable header and payload, with a remaining length that matches the cut. */
const truncationCases = (): Case[] => {
  const out: Case[] = []
  const full = connectBody({ flags: 0xc6, clientId: "trunc", username: "u", password: Buffer.from("pw") })
  for (let n = 0; n < full.length; n++) out.push(closes(`CONNECT cut to ${n} of ${full.length} bytes closes`, frame(0x10, full.subarray(0, n)), false))
  const pub = publishBody("trunc/t", 1, 5, "")
  for (let n = 0; n < pub.length; n++) out.push(closes(`PUBLISH QoS 1 cut to ${n} of ${pub.length} bytes (topic/packet id) closes`, frame(0x32, pub.subarray(0, n))))
  const sub = subscribeBody(5, ["trunc/t", 1])
  for (let n = 0; n < sub.length; n++) {
    // two bytes (the packet id alone) is a SUBSCRIBE without filters [MQTT-3.8.3-3]
    out.push(closes(`SUBSCRIBE cut to ${n} of ${sub.length} bytes closes`, frame(0x82, sub.subarray(0, n))))
  }
  const unsub = unsubscribeBody(5, "trunc/t")
  for (let n = 0; n < unsub.length; n++) out.push(closes(`UNSUBSCRIBE cut to ${n} of ${unsub.length} bytes closes`, frame(0xa2, unsub.subarray(0, n))))
  // a string length pointing past the packet
  out.push(closes("PUBLISH topic length past the end of the packet closes", frame(0x30, Buffer.concat([u16(50), Buffer.from("short")]))))
  out.push(closes("CONNECT client id length past the end of the packet closes", frame(0x10, Buffer.concat([str("MQTT"), Buffer.from([4, 2, 0, 0]), u16(300), Buffer.from("x")])), false))
  out.push(closes("SUBSCRIBE filter length past the end of the packet closes", frame(0x82, Buffer.concat([u16(1), u16(9), Buffer.from("ab"), Buffer.from([0])]))))
  // trailing bytes after a complete CONNECT payload
  out.push(strictly(closes("CONNECT with bytes after its payload closes", frame(0x10, Buffer.concat([connectBody(), Buffer.from([0])])), false)))
  out.push(strictly(closes("CONNECT announcing no password but carrying one closes", frame(0x10, Buffer.concat([connectBody(), bin(Buffer.from("pw"))])), false)))
  return out
}

/** Protocol name x level [MQTT-3.1.2-1, -2]: "MQTT" at any level but 4 gets CONNACK 1; a wrong name a close. */
const protocolCases = (): Case[] => {
  const out: Case[] = []
  const names: Array<[string, string | Buffer]> = [
    ["MQTT", "MQTT"],
    ["MQIsdp", "MQIsdp"],
    ["mqtt", "mqtt"],
    ["MQT", "MQT"],
    ["MQTTT", "MQTTT"],
    ["empty", ""],
    ["HTTP", "HTTP"],
    ["MQTT\\0", "MQTT\u0000"],
    ["invalid UTF-8", Buffer.from([0x4d, 0xc3, 0x28, 0x54])]
  ]
  const levels = [0, 1, 2, 3, 4, 5, 6, 0x83, 0x84, 0xff]
  for (const [label, name] of names) {
    for (const level of levels) {
      const bytes = connect({ name, level, clientId: `proto-${level}` })
      const what = `protocol ${label} level ${level}`
      // mqtt-packet closes levels other than 3, 4, 5 and reads 0x83/0x84 as 3/4 ("bridge mode")
      const strict = level !== 3 && level !== 4 && (name === "MQTT" ? level !== 0x83 : name === "MQIsdp" && level === 0x83)
      const c = name === "MQTT" && level === 4
        ? accepted(`${what} is accepted`, bytes)
        : name === "MQTT"
        ? refused(`[MQTT-3.1.2-2] ${what} gets CONNACK 1`, bytes, 1)
        : name === "MQIsdp" && level === 3
        ? refused(`${what} (MQTT 3.1) gets CONNACK 1`, bytes, 1)
        : closes(`[MQTT-3.1.2-1] ${what} closes without CONNACK`, bytes, false)
      out.push(strict ? strictly(c) : c)
    }
  }
  // an MQTT 5 CONNECT with properties, and a level-5 body that is garbage after the level
  const v5 = Buffer.concat([str("MQTT"), Buffer.from([5, 0x02, 0, 60, 3, 0x21, 0, 10]), str("v5")])
  out.push(refused("[MQTT-3.1.2-2] an MQTT 5 CONNECT with properties gets CONNACK 1", frame(0x10, v5), 1))
  out.push(strictly(refused("[MQTT-3.1.2-2] level 5 followed by garbage gets CONNACK 1", frame(0x10, Buffer.concat([str("MQTT"), Buffer.from([5, 0xff, 0xff])])), 1)))
  return out
}

/** Every value of the CONNECT flags byte, the payload carrying what the flags announce. */
const connectFlagCases = (): Case[] => {
  const out: Case[] = []
  for (let flags = 0; flags < 256; flags++) {
    const will = (flags & 0x04) !== 0
    const willQos = (flags >> 3) & 3
    const willRetain = (flags & 0x20) !== 0
    const bytes = connect({ flags, clientId: `flags-${flags}` })
    const what = `CONNECT flags ${hex(flags)}`
    if (flags & 0x01) out.push(closes(`[MQTT-3.1.2-3] ${what} (reserved bit) closes`, bytes, false))
    else if (!will && willQos !== 0) out.push(closes(`[MQTT-3.1.2-13] ${what} (will QoS without will flag) closes`, bytes, false))
    else if (!will && willRetain) out.push(closes(`[MQTT-3.1.2-15] ${what} (will retain without will flag) closes`, bytes, false))
    else if (willQos === 3) out.push(closes(`[MQTT-3.1.2-14] ${what} (will QoS 3) closes`, bytes, false))
    else if ((flags & 0x40) && !(flags & 0x80)) out.push(strictly(closes(`[MQTT-3.1.2-22] ${what} (password without user name) closes`, bytes, false)))
    else out.push(accepted(`${what} is accepted`, bytes))
  }
  return out
}

/** Ill-formed UTF-8 [MQTT-1.5.3-1] and U+0000 [MQTT-1.5.3-2] in every string field. */
const BAD_STRINGS: Array<[string, Buffer]> = [
  ["U+0000", Buffer.from([0x61, 0x00, 0x62])],
  ["overlong NUL C0 80", Buffer.from([0x61, 0xc0, 0x80])],
  ["truncated sequence C3", Buffer.from([0x61, 0xc3])],
  ["lone continuation 80", Buffer.from([0x80, 0x61])],
  ["surrogate ED A0 80", Buffer.from([0x61, 0xed, 0xa0, 0x80])],
  ["above U+10FFFF F4 90 80 80", Buffer.from([0xf4, 0x90, 0x80, 0x80])],
  ["byte FF", Buffer.from([0x61, 0xff])],
  ["overlong E0 80 AF", Buffer.from([0xe0, 0x80, 0xaf])]
]

const stringCases = (): Case[] => {
  const out: Case[] = []
  for (const [label, bad] of BAD_STRINGS) {
    const nul = label === "U+0000"
    const rule = nul ? "MQTT-1.5.3-2" : "MQTT-1.5.3-1"
    // mqtt-packet decodes ill-formed UTF-8 with U+FFFD and passes U+0000 (topic names the session checks itself)
    out.push(strictly(closes(`[${rule}] client id with ${label} closes`, connect({ clientId: bad }), false)))
    const willTopic = closes(`[${rule}] will topic with ${label} closes`, connect({ flags: 0x06, willTopic: bad }), false)
    out.push(nul ? willTopic : strictly(willTopic))
    out.push(strictly(closes(`[${rule}] user name with ${label} closes`, connect({ flags: 0x82, username: bad }), false)))
    const topic = closes(`[${rule}] PUBLISH topic with ${label} closes`, publish(bad))
    out.push(nul ? topic : strictly(topic))
    out.push(strictly(closes(`[${rule}] SUBSCRIBE filter with ${label} closes`, subscribe(1, [bad, 0]))))
    out.push(strictly(closes(`[${rule}] UNSUBSCRIBE filter with ${label} closes`, unsubscribe(1, bad))))
  }
  // binary fields may hold anything; well-formed strings keep every character, BOM included [MQTT-1.5.3-3]
  out.push(accepted("a password of ill-formed UTF-8 is binary data and accepted", connect({ flags: 0xc2, password: Buffer.from([0xff, 0x00, 0xc0]) })))
  out.push(accepted("a will message of ill-formed UTF-8 is binary data and accepted", connect({ flags: 0x06, clientId: "bin-will", willPayload: Buffer.from([0xff, 0x00]) })))
  out.push(accepted("[MQTT-1.5.3-3] a client id starting with a BOM is accepted", connect({ clientId: "\ufeffbom" })))
  out.push(accepted("a client id with 4-byte UTF-8 is accepted", connect({ clientId: "id-\u{1f600}" })))
  out.push(answers("a PUBLISH topic with 4-byte UTF-8 is accepted", publish("emoji/\u{1f600}", 1, 4), ack(4, 4)))
  return out
}

/** Client identifiers of odd lengths and contents [MQTT-3.1.3-5, -6, -8]. */
const clientIdCases = (): Case[] => [
  accepted("[MQTT-3.1.3-6] an empty client id with clean session 1 is assigned one", connect({ clientId: "", flags: 0x02 })),
  refused("[MQTT-3.1.3-8] an empty client id with clean session 0 gets CONNACK 2", connect({ clientId: "", flags: 0x00 }), 2),
  ...[1, 2, 23, 24, 64, 256, 4096, 65535].map((n) =>
    accepted(`[MQTT-3.1.3-5] a client id of ${n} characters is accepted`, connect({ clientId: `L${n}-`.padEnd(n, "x").slice(0, n) }))
  ),
  ...["a b", "a/b", "#", "+", "$x", "a.b", "*", ">"].map((id) => accepted(`client id ${JSON.stringify(id)} is accepted`, connect({ clientId: `${id}-odd` })))
]

/** Order: a second CONNECT [MQTT-3.1.0-2]; unsolicited acknowledgements are ignored (PUBREL is answered). */
const orderCases = (): Case[] => [
  closes("[MQTT-3.1.0-2] a second CONNECT closes", connect({ clientId: "second" })),
  closes("[MQTT-3.1.0-2] a second CONNECT with another protocol level closes", connect({ clientId: "second5", level: 5 })),
  closes("[MQTT-3.1.0-2] a CONNECT right behind the first closes (no second CONNACK)", Buffer.concat([PINGREQ, connect()]), true, PINGRESP),
  answers("an unsolicited PUBACK is ignored", ack(4, 77), NONE),
  answers("an unsolicited PUBREC is ignored", ack(5, 77), NONE),
  answers("an unsolicited PUBCOMP is ignored", ack(7, 77), NONE),
  answers("[MQTT-4.3.3-2] an unsolicited PUBREL is answered with PUBCOMP", ack(6, 77), ack(7, 77)),
  answers("a PUBACK of packet id 0 is ignored", ack(4, 0), NONE),
  closes("DISCONNECT closes without a reply", frame(0xe0)),
  closes("bytes after DISCONNECT are not answered", Buffer.concat([frame(0xe0), PINGREQ]))
]

/** PUBLISH topics and packet ids [MQTT-2.3.1-1, MQTT-3.3.2-2, MQTT-4.7.3-1]. */
const publishCases = (): Case[] => {
  const out: Case[] = []
  for (const qos of [1, 2]) out.push(closes(`[MQTT-2.3.1-1] PUBLISH QoS ${qos} with packet id 0 closes`, publish("id/t", qos, 0)))
  for (const topic of ["#", "+", "a/#", "a/+", "a/+/b", "+/a", "a#", "a+b", "#/a"]) {
    for (const qos of [0, 1]) out.push(closes(`[MQTT-3.3.2-2] PUBLISH QoS ${qos} to wildcard topic ${topic} closes`, publish(topic, qos, 3)))
  }
  for (const qos of [0, 1]) out.push(closes(`[MQTT-4.7.3-1] PUBLISH QoS ${qos} with an empty topic closes`, publish("", qos, 3)))
  for (const topic of ["/", "a//b", "a.b", "$SYS/x", "a/b/", "x".repeat(1000)]) {
    out.push(answers(`PUBLISH to ${JSON.stringify(topic.slice(0, 20))} is accepted`, publish(topic, 1, 6), ack(4, 6)))
  }
  out.push(answers("PUBLISH QoS 1 with packet id 65535 is accepted", publish("id/max", 1, 65535), ack(4, 65535)))
  out.push(answers("PUBLISH with an empty payload is accepted", publish("empty/payload", 1, 8, ""), ack(4, 8)))
  return out
}

/** SUBSCRIBE and UNSUBSCRIBE [MQTT-2.3.1-1, MQTT-3.8.3-3, -4, MQTT-3.10.3-2, MQTT-4.7.1-2, -3]. */
const subscribeCases = (): Case[] => {
  const out: Case[] = []
  out.push(closes("[MQTT-3.8.3-3] SUBSCRIBE with no topic filters closes", frame(0x82, u16(4))))
  out.push(closes("[MQTT-3.10.3-2] UNSUBSCRIBE with no topic filters closes", frame(0xa2, u16(4))))
  out.push(closes("[MQTT-2.3.1-1] SUBSCRIBE with packet id 0 closes", subscribe(0, ["s/t", 0])))
  out.push(closes("[MQTT-2.3.1-1] UNSUBSCRIBE with packet id 0 closes", unsubscribe(0, "s/t")))
  out.push(closes("[MQTT-3-8.3-4] SUBSCRIBE requesting QoS 3 closes", subscribe(4, ["s/t", 3])))
  out.push(closes("[MQTT-3-8.3-4] SUBSCRIBE requesting QoS 3 after a valid filter closes", subscribe(4, ["s/t", 1], ["s/u", 3])))
  for (const options of [0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xfc, 0x05]) {
    out.push(closes(`[MQTT-3-8.3-4] SUBSCRIBE with reserved bits in the requested QoS byte ${hex(options)} closes`, subscribe(4, ["s/t", options])))
  }
  for (const filter of ["a/#/b", "a+", "#a", "a/b#", "+a", "a/+b", "##", "a/++", ""]) {
    out.push(answers(`[MQTT-4.7.1-2/3] SUBSCRIBE to bad filter ${JSON.stringify(filter)} gets SUBACK 0x80`, subscribe(5, [filter, 1]), SUBACK(5, 0x80)))
  }
  out.push(answers("SUBSCRIBE mixing good and bad filters gets one return code each [MQTT-3.9.3-1]", subscribe(6, ["g/#", 2], ["a/#/b", 1], ["+", 0]), SUBACK(6, 2, 0x80, 0)))
  out.push(answers("UNSUBSCRIBE of a bad filter is still answered [MQTT-3.10.4-5]", unsubscribe(7, "a/#/b"), UNSUBACK(7)))
  out.push(answers("UNSUBSCRIBE of several filters gets one UNSUBACK", unsubscribe(8, "x/1", "x/2", "x/3"), UNSUBACK(8)))
  return out
}

/** Valid packets delivered one byte per write, and in two writes split at every point: decoded all the same. */
const byteAtATimeCases = (): Case[] => {
  const steps = [
    connect({ clientId: "bytewise", keepalive: 60 }),
    subscribe(1, ["bw/t", 0]),
    publish("bw/t", 0, 0, "hi"),
    publish("bw/x", 1, 3, "q1"),
    unsubscribe(4, "bw/t")
  ]
  const reply = Buffer.concat([CONNACK(0), SUBACK(1, 0), publish("bw/t", 0, 0, "hi"), ack(4, 3), UNSUBACK(4)])
  const all = Buffer.concat(steps)
  const out: Case[] = [answers("a valid session one byte per write works", [...all].map((b) => Buffer.from([b])), reply, false)]
  // client ids of equal length (split-100 .. split-199) keep every split point inside the same bytes
  const session = (i: number) => Buffer.concat([connect({ clientId: `split-${100 + i}` }), publish("bw/x", 1, 5, "s")])
  for (let i = 1; i < session(0).length; i++) {
    const short = session(i)
    out.push(answers(`a valid session split at byte ${i} works`, [short.subarray(0, i), short.subarray(i)], Buffer.concat([CONNACK(0), ack(4, 5)]), false))
  }
  return out
}

/** Mutations of a valid session with a fixed seed: the outcome is not predicted, only that the server copes. */
const fuzzInputs = (): Array<{ name: string; bytes: Buffer; afterConnect: boolean }> => {
  const random = seededRandom(20_251_122)
  const int = (n: number) => Math.floor(random() * n)
  const valid = Buffer.concat([subscribe(1, ["fz/#", 1]), publish("fz/a", 1, 2, "hello"), unsubscribe(3, "fz/#"), PINGREQ])
  const out: Array<{ name: string; bytes: Buffer; afterConnect: boolean }> = []
  for (let i = 0; i < 30; i++) {
    const b = Buffer.from(valid)
    for (let k = 0; k <= int(3); k++) b[int(b.length)] ^= 1 << int(8)
    out.push({ name: `fuzz ${i}: bit flips of a valid session`, bytes: b, afterConnect: true })
  }
  for (let i = 0; i < 20; i++) {
    const b = Buffer.alloc(1 + int(64))
    for (let k = 0; k < b.length; k++) b[k] = int(256)
    out.push({ name: `fuzz ${i}: ${b.length} random bytes ${i % 2 === 0 ? "after" : "before"} CONNECT`, bytes: b, afterConnect: i % 2 === 0 })
  }
  for (let i = 0; i < 10; i++) {
    const c = Buffer.from(connect({ flags: 0xee, clientId: `fz${i}` }))
    c[2 + int(c.length - 2)] = int(256)
    out.push({ name: `fuzz ${i}: a CONNECT with one random byte`, bytes: c, afterConnect: false })
  }
  return out
}

/**
 * What the codec and the session machine make of `bytes`: whether the server closes,
 * and whether the input ends between packets (so a PINGREQ after it is answered).
 */
const predict = (bytes: Buffer, maxPacketBytes: number): { closes: boolean; idle: boolean } => {
  const parser = new MqttParser()
  const session = new MqttSession(0, { randomBytes: seededBytes(1) })
  let closes = false
  const feed = (input: SessionInput): void => {
    for (const a of session.step(input, 0)) {
      if (a.type === "close") closes = true
      if (a.type === "accept") feed({ type: "sessionReady" })
    }
  }
  parser.onPacket = (p: ClientPacket) => {
    if (!closes) feed({ type: "packet", packet: p })
  }
  parser.onError = () => {
    closes = true
  }
  const buffered = parser.parse(bytes)
  if (parser.announced > maxPacketBytes) closes = true
  return { closes, idle: buffered === 0 }
}

// ---- running a case ----

/** A raw socket that records what the server sends and when it closes. */
class Raw {
  data = Buffer.alloc(0)
  closed = false
  constructor(readonly socket: net.Socket) {
    socket.setNoDelay(true)
    socket.on("data", (d: Buffer) => {
      this.data = Buffer.concat([this.data, d])
    })
    socket.on("close", () => {
      this.closed = true
    })
    socket.on("error", () => {})
  }

  static open(port: number): Promise<Raw> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", port }, () => resolve(new Raw(s)))
      s.once("error", reject)
    })
  }

  write(b: Buffer): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed || this.socket.destroyed) return resolve()
      this.socket.write(b, () => resolve())
    })
  }

  async handshake(clientId: string): Promise<void> {
    await this.write(connect({ clientId }))
    await eventually(() => this.data.length >= 4 || this.closed, "CONNACK")
    expect([...this.data]).toEqual([...CONNACK(0)])
    this.data = Buffer.alloc(0)
  }
}

let caseNo = 0

const runCase = async (port: number, c: Case): Promise<void> => {
  const raw = await Raw.open(port)
  try {
    if (c.afterConnect) await raw.handshake(`case-${caseNo++}`)
    const chunks = Buffer.isBuffer(c.send) ? [c.send] : (c.send as ReadonlyArray<Buffer>)
    for (const chunk of chunks) await raw.write(chunk)
    if (c.closed) {
      await eventually(() => raw.closed, `${c.name}: the server to close (got ${raw.data.toString("hex")})`)
      expect(raw.data.toString("hex")).toBe(c.reply.toString("hex"))
    } else {
      await raw.write(PINGREQ)
      const want = Buffer.concat([c.reply, PINGRESP])
      await eventually(() => raw.data.length >= want.length || raw.closed, `${c.name}: ${want.toString("hex")} (got ${raw.data.toString("hex")})`)
      expect(raw.data.toString("hex")).toBe(want.toString("hex"))
      expect(raw.closed).toBe(false)
    }
  } finally {
    raw.socket.destroy()
  }
}

// ---- the server and its bystanders ----

let srv: MqttServer
let bystander: TestMqttClient
let nc: NatsConnection
let round = 0
/** Whether the server decodes with the codec's `MqttParser` (connection.ts wiring). */
let strictParser = false

/** The bystander publishes over MQTT and NATS and receives both: the server is up and undisturbed. */
const bystanderWorks = async (): Promise<void> => {
  const n = round++
  await bystander.client.publishAsync(`bystander/${n}`, `mqtt-${n}`, { qos: 1 })
  nc.publish(`bystander.${n}`, `nats-${n}`)
  await bystander.waitFor((m) => m.topic === `bystander/${n}`, 2, `bystander round ${n}`)
  expect(bystander.received.filter((m) => m.topic === `bystander/${n}`).map((m) => m.payload).sort()).toEqual([`mqtt-${n}`, `nats-${n}`])
  expect(bystander.client.connected).toBe(true)
}

beforeAll(async () => {
  srv = await startMqttServer()
  bystander = await connectMqtt(srv.mqttUrl, { clientId: "bystander", keepalive: 60 })
  await bystander.client.subscribeAsync("bystander/#", { qos: 1 })
  nc = await natsConnect({ servers: `127.0.0.1:${srv.natsPort}` })
  const probe = await Raw.open(srv.mqttPort)
  await eventually(() => srv.serving.mqtt!.connections.size >= 2, "the probe connection")
  strictParser = [...srv.serving.mqtt!.connections.values()].every((c) => c.parser instanceof MqttParser)
  probe.socket.destroy()
})
afterAll(async () => {
  await nc?.close()
  await bystander?.client.endAsync()
  await srv?.close()
})

const table: Array<[string, () => Case[]]> = [
  ["reserved header flags", reservedFlagCases],
  ["PUBLISH header flags", publishFlagCases],
  ["packet types", packetTypeCases],
  ["before CONNECT", beforeConnectCases],
  ["remaining length", remainingLengthCases],
  ["truncated packets", truncationCases],
  ["protocol name and level", protocolCases],
  ["CONNECT flags", connectFlagCases],
  ["strings", stringCases],
  ["client identifiers", clientIdCases],
  ["packet order", orderCases],
  ["PUBLISH topics and ids", publishCases],
  ["SUBSCRIBE and UNSUBSCRIBE", subscribeCases],
  ["byte at a time", byteAtATimeCases]
]

const allCases = (): Case[] => table.flatMap(([, gen]) => gen())

describe("MQTT malformed input table", () => {
  it("has at least 300 cases", () => {
    expect(allCases().length).toBeGreaterThanOrEqual(300)
  })

  for (const [batch, gen] of table) {
    describe(batch, () => {
      for (const c of gen()) {
        it(c.name, async (ctx) => {
          if (c.strict === true && !strictParser) ctx.skip()
          await runCase(srv.mqttPort, c)
        })
      }
      it(`after the ${batch} batch the server is up and a bystander publishes and receives`, bystanderWorks)
    })
  }

  describe("fuzz (fixed seed)", () => {
    for (const f of fuzzInputs()) {
      it(`${f.name}: the server closes or answers as the codec and session machine predict`, async () => {
        const raw = await Raw.open(srv.mqttPort)
        const id = `fuzz-${caseNo++}`
        if (f.afterConnect) await raw.handshake(id)
        const input = Buffer.concat([f.afterConnect ? connect({ clientId: id }) : NONE, f.bytes, PINGREQ])
        const expected = predict(input, srv.serving.mqtt!.maxPacketBytes)
        await raw.write(Buffer.concat([f.bytes, PINGREQ]))
        if (strictParser && expected.closes) await eventually(() => raw.closed, `${f.name}: the server to close`)
        if (strictParser && !expected.closes && expected.idle) {
          await eventually(() => raw.data.includes(PINGRESP) || raw.closed, `${f.name}: PINGRESP`)
          expect(raw.closed).toBe(false)
        }
        raw.socket.destroy()
      })
    }
    it("after the fuzz batch the server is up and a bystander publishes and receives", bystanderWorks)
  })
})

describe("clients announcing huge packets", () => {
  const CHUNK = Buffer.alloc(64 * 1024, 0x61)

  /** Announces a packet of `length` bytes, then sends its body until the server closes (at most `limit` bytes). */
  const announce = async (first: number, length: number, afterConnect: boolean, limit: number, chunk: Buffer): Promise<Raw> => {
    const raw = await Raw.open(srv.mqttPort)
    if (afterConnect) await raw.handshake(`huge-${caseNo++}`)
    await raw.write(Buffer.concat([Buffer.from([first]), varLength(length), str("huge/t")]))
    for (let sent = 0; !raw.closed && sent < limit; sent += chunk.length) await raw.write(chunk)
    await eventually(() => raw.closed, `the server to cut off a client announcing ${length} bytes`)
    return raw
  }

  const ONE_BYTE = Buffer.from([0x61])

  it("[MQTT-2.2.3] a PUBLISH announcing 256 MB and trickling bytes is cut off after its CONNACK only", async () => {
    const raw = await announce(0x30, MAX_REMAINING, true, 1000, ONE_BYTE)
    expect(raw.data.length).toBe(0)
  })

  it("a CONNECT announcing 256 MB is cut off without CONNACK", async () => {
    const raw = await announce(0x10, MAX_REMAINING, false, 1000, ONE_BYTE)
    expect(raw.data.length).toBe(0)
  })

  it("a PUBLISH announcing one byte over the packet limit (max_payload + topic + header) is cut off", async () => {
    const raw = await announce(0x30, srv.serving.mqtt!.maxPacketBytes + 1, true, 1000, ONE_BYTE)
    expect(raw.data.length).toBe(0)
  })

  it("a PUBLISH with a payload of max_payload bytes is still read", async () => {
    const raw = await Raw.open(srv.mqttPort)
    await raw.handshake(`huge-${caseNo++}`)
    const payload = srv.serving.mqtt!.server.options.maxPayload
    await raw.write(Buffer.concat([Buffer.from([0x30]), varLength(8 + payload), str("huge/t")]))
    await raw.write(Buffer.alloc(payload, 0x61))
    await raw.write(PINGREQ)
    await eventually(() => raw.data.length >= 2 || raw.closed, "PINGRESP after a packet at the limit")
    expect(raw.data.toString("hex")).toBe(PINGRESP.toString("hex"))
    raw.socket.destroy()
  })

  it("clients dribbling a 1,000,000-byte PUBLISH hold what they sent, not a read buffer per byte (regression: 370x)", async () => {
    const clients = 8
    const body = 2000
    const raws = await Promise.all(Array.from({ length: clients }, () => Raw.open(srv.mqttPort)))
    await Promise.all(raws.map((r) => r.handshake(`dribble-${caseNo++}`)))
    await Promise.all(raws.map((r) => r.write(Buffer.concat([Buffer.from([0x30]), varLength(1_000_000), str("huge/t")]))))
    // One byte per write, as a client dribbling over a slow link sends them.
    await Promise.all(raws.map(async (r) => {
      for (let i = 0; i < body; i++) await r.write(ONE_BYTE)
    }))
    const bridge = srv.serving.mqtt!
    await eventually(() => bridge.partialPackets === clients && bridge.partialBytes >= clients * (body + 8), "every dribbled byte to arrive")
    const q = (await getJson(srv.base, "/ipqueuesz?queues=mqtt_inbound_partial")).json
    expect(q.mqtt_inbound_partial_connections.pending).toBe(clients)
    // Every byte copied into one buffer per connection that at most doubles what arrived.
    expect(q.mqtt_inbound_partial_bytes.pending).toBeGreaterThanOrEqual(clients * (body + 8))
    expect(q.mqtt_inbound_partial_bytes.pending).toBeLessThanOrEqual(clients * 2 * (body + 8))
    for (const r of raws) r.socket.destroy()
    await eventually(() => bridge.partialPackets === 0, "the partial packets of closed connections to be released")
    expect(bridge.partialBytes).toBe(0)
  })

  it("fourteen clients flooding announced 256 MB packets neither grow memory nor stall a bystander", async () => {
    const before = process.memoryUsage()
    let peakRss = before.rss
    let peakBuffers = before.arrayBuffers
    const sampler = setInterval(() => {
      const m = process.memoryUsage()
      peakRss = Math.max(peakRss, m.rss)
      peakBuffers = Math.max(peakBuffers, m.arrayBuffers)
    }, 5)
    try {
      const attackers = Array.from({ length: 14 }, (_, i) => announce(0x30, MAX_REMAINING, i % 2 === 0, 32 * 1024 * 1024, CHUNK))
      await Promise.all([...attackers, bystanderWorks(), bystanderWorks(), bystanderWorks()])
    } finally {
      clearInterval(sampler)
    }
    // 14 x 256 MB announced; a few tens of MB is noise (sockets, GC timing), not buffering.
    expect(peakBuffers - before.arrayBuffers).toBeLessThan(64 * 1024 * 1024)
    expect(peakRss - before.rss).toBeLessThan(128 * 1024 * 1024)
    await bystanderWorks()
  })
})
