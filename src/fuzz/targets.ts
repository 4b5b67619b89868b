// The fuzz targets: the byte-facing parsers (NATS protocol, MQTT 3.1.1 codec, MQTT 5.0
// decoder, configuration files) and the subject matcher. Each turns one input into calls on the code under
// test and throws when a property breaks; documented rejections are not findings.
import * as MqttPacket from "mqtt-packet"
import { Either } from "effect"
import { type ConfValue, ConfSize, parseConfig, type ParseEnv } from "../config/conf-parser.js"
import type { ClientPacket } from "../core/mqtt/index.js"
import { NatsParser, type NatsOpHandler, type ParseError } from "../core/nats/parser.js"
import { isValidLiteralSubject, isValidSubject, matchLiteral, subjectIsSubsetMatch, subjectsCollide } from "../core/subject/subject.js"
import { Sublist, type SublistResult } from "../core/subject/sublist.js"
import * as V5 from "../core/mqtt/v5/index.js"
import { encode, MalformedPacket, MAX_REMAINING_LENGTH, MqttParser } from "../core/mqtt/codec.js"
import type { FuzzTarget } from "./engine.js"
import { refMatch } from "../sim/reference.js"

const bytes = (s: string): Uint8Array => Buffer.from(s, "latin1")
const words = (...ws: ReadonlyArray<string>): ReadonlyArray<Uint8Array> => ws.map(bytes)

class PropertyViolation extends Error {
  override readonly name = "PropertyViolation"
}

const check = (ok: boolean, what: string): void => {
  if (!ok) throw new PropertyViolation(what)
}

/** A split point derived from the input itself, so a rerun splits the same way. */
const splitPoint = (b: Buffer): number => {
  let h = 0x811c9dc5
  for (const c of b) h = Math.imul(h ^ c, 0x01000193)
  return (h >>> 0) % (b.length + 1)
}

/** The three feedings every framing target compares: whole, split in two, byte by byte. */
const chunkings = (b: Buffer): ReadonlyArray<ReadonlyArray<Buffer>> => {
  const at = splitPoint(b)
  const single: Array<Buffer> = []
  for (let i = 0; i < b.length; i++) single.push(b.subarray(i, i + 1))
  return [[b], [b.subarray(0, at), b.subarray(at)], single]
}

const sameTrace = (what: string, a: ReadonlyArray<string>, b: ReadonlyArray<string>, how: string): void => {
  const n = Math.max(a.length, b.length)
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) throw new PropertyViolation(`${what} differs fed ${how} at event ${i}: whole ${a[i]} vs ${b[i]}`)
  }
}

// ---- NATS protocol parser ---------------------------------------------------

const NATS_LIMITS = { maxControlLine: 256, maxPayload: 1024 } as const

/** The handler calls of one feeding, as text; payload bytes copied at call time. */
const natsTrace = (chunks: ReadonlyArray<Buffer>): Array<string> => {
  const out: Array<string> = []
  let dead = false
  const rec = (s: string) => {
    check(!dead, `handler called after protocolError: ${s}`)
    out.push(s)
  }
  const handler: NatsOpHandler = {
    connect: (json) => rec(`connect ${json}`),
    pub: (subject, reply, hdrLen, buf, start, end) => {
      check(end - start <= NATS_LIMITS.maxPayload, `payload of ${end - start} bytes over max_payload`)
      check(hdrLen <= end - start, `header size ${hdrLen} over payload size ${end - start}`)
      rec(`pub ${subject}|${reply}|${hdrLen}|${buf.subarray(start, end).toString("hex")}`)
    },
    sub: (subject, queue, sid) => rec(`sub ${subject}|${queue}|${sid}`),
    unsub: (sid, max) => rec(`unsub ${sid}|${max}`),
    ping: () => rec("ping"),
    pong: () => rec("pong"),
    info: (json) => rec(`info ${json}`),
    ok: () => rec("ok"),
    err: (message) => rec(`err ${message}`),
    protocolError: (e: ParseError) => {
      // The detail echoes the chunk it failed in, so only the kind is split-invariant.
      rec(`protocolError ${e.kind}`)
      dead = true
    }
  }
  const parser = new NatsParser(handler, NATS_LIMITS)
  for (const c of chunks) parser.feed(c)
  check(parser.dead === dead, `parser.dead is ${parser.dead} after ${dead ? "an" : "no"} error`)
  return out
}

export const natsTarget: FuzzTarget = {
  name: "nats",
  maxLength: 2048,
  coverage: ["/src/core/nats/"],
  seeds: words(
    "CONNECT {\"verbose\":false}\r\nPING\r\n",
    "PUB foo 5\r\nhello\r\nPUB foo.bar reply.to 0\r\n\r\n",
    "HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
    "HPUB foo rep 22 27\r\nNATS/1.0\r\nA: B\r\n\r\n\r\nhello\r\n",
    "SUB foo 1\r\nSUB foo.* q 2\r\nUNSUB 1\r\nUNSUB 2 10\r\n",
    "PONG\r\n+OK\r\n-ERR 'Unknown Protocol Operation'\r\nINFO {\"server_id\":\"x\"}\r\n",
    "sub a\t1\npub a 2\nxy\r\n"
  ),
  dictionary: words(
    "PUB ", "HPUB ", "SUB ", "UNSUB ", "PING", "PONG", "CONNECT ", "INFO ", "+OK", "-ERR ", "\r\n", "NATS/1.0\r\n",
    " 0", " 1", " 12", " 256", " 1024", " 1025", " 999999999999999999", "\t", "'", "{}"
  ),
  run: (input) => {
    const [whole, ...others] = chunkings(input)
    const expected = natsTrace(whole)
    sameTrace("NATS ops", expected, natsTrace(others[0]), "split in two")
    sameTrace("NATS ops", expected, natsTrace(others[1]), "byte by byte")
  }
}

// ---- MQTT codec ---------------------------------------------------------------

/** JSON of a packet with every byte array as hex (payloads are views of the chunk). */
const showPacket = (p: unknown): string =>
  JSON.stringify(p, (_k, v: unknown) => {
    if (v instanceof Uint8Array) return `hex:${Buffer.from(v).toString("hex")}`
    if (typeof v === "object" && v !== null && (v as { type?: unknown }).type === "Buffer") {
      return `hex:${Buffer.from((v as { data: Array<number> }).data).toString("hex")}`
    }
    return v
  })

/** A length-prefixed string. */
const str = (s: string): Buffer => {
  const b = Buffer.from(s, "utf8")
  return Buffer.concat([Buffer.from([b.length >> 8, b.length & 0xff]), b])
}

/** A packet: first byte, remaining length, body. */
const frame = (first: number, ...parts: ReadonlyArray<Uint8Array | ReadonlyArray<number>>): Buffer => {
  const body = Buffer.concat(parts.map((p) => Uint8Array.from(p)))
  const len: Array<number> = []
  let n = body.length
  do {
    len.push((n % 128) | (n >= 128 ? 0x80 : 0))
    n = Math.floor(n / 128)
  } while (n > 0)
  return Buffer.concat([Buffer.from([first, ...len]), body])
}

/** Packets (as text) and error reasons of one feeding; the parser's `onError` is its documented rejection. */
const mqttTrace = (chunks: ReadonlyArray<Buffer>): { readonly events: Array<string>; readonly packets: Array<ClientPacket> } => {
  const parser = new MqttParser()
  const events: Array<string> = []
  const packets: Array<ClientPacket> = []
  let failed = false
  parser.onPacket = (p: ClientPacket) => {
    check(!failed, "packet emitted after an error")
    events.push(`packet ${showPacket(p)}`)
    packets.push(p)
  }
  parser.onError = (e: unknown) => {
    check(e instanceof MalformedPacket, `error event with ${String(e)}`)
    check(!failed, "second error emitted")
    failed = true
    events.push(`error ${(e as MalformedPacket).reason}`)
  }
  for (const c of chunks) {
    const held = parser.parse(c)
    check(held >= 0 && held <= 5 + MAX_REMAINING_LENGTH, `parse returned ${held}`)
  }
  return { events, packets }
}

/** The wire bytes of a decoded client packet, where an encoder writes that packet type as it was read. */
const reencode = (p: ClientPacket): Buffer | undefined => {
  switch (p.cmd) {
    case "publish":
    case "puback":
    case "pubrec":
    case "pubrel":
    case "pubcomp":
      return encode(p)
    case "connect":
      // mqtt-packet derives the flags from the fields and cannot write the reserved bit.
      return undefined
    case "subscribe":
      // The decoder leaves requested QoS 3 and an empty list [MQTT-3.8.3-3] to the session to
      // refuse; mqtt-packet writes QoS 3 as 0 and refuses an empty list.
      if (p.subscriptions.length === 0 || p.subscriptions.some((s) => s.qos > 2)) return undefined
      return MqttPacket.generate(p as unknown as MqttPacket.Packet, { protocolVersion: 4 })
    default:
      try {
        return MqttPacket.generate(p as unknown as MqttPacket.Packet, { protocolVersion: 4 })
      } catch {
        return undefined // mqtt-packet refuses it (an UNSUBSCRIBE without filters [MQTT-3.10.3-2])
      }
  }
}

export const mqttTarget: FuzzTarget = {
  name: "mqtt",
  maxLength: 2048,
  coverage: ["/src/core/mqtt/codec"],
  seeds: [
    frame(0x10, str("MQTT"), [4, 0xee, 0, 30], str("dev-1"), str("will/t"), str("bye"), str("user"), str("pw")),
    frame(0x10, str("MQTT"), [4, 0x02, 0, 0], str("")),
    frame(0x33, str("a/b"), [0, 7], Buffer.from("payload")),
    Buffer.concat([frame(0x30, str("q0"), Buffer.from("abc")), frame(0x3d, str("\u00e9/x"), [1, 0])]),
    Buffer.concat([frame(0x40, [0, 1]), frame(0x50, [0, 2]), frame(0x62, [0, 3]), frame(0x70, [0, 4])]),
    frame(0x82, [0, 5], str("a/+"), [1], str("#"), [2]),
    frame(0xa2, [0, 6], str("a/+"), str("#")),
    Buffer.from([0xc0, 0x00, 0xe0, 0x00])
  ],
  dictionary: [
    ...words("MQTT", "MQIsdp", "\x00\x04MQTT\x04", "\x00\x00", "\x00\x01", "\xff\xff\xff\x7f", "\x80\x80\x80\x80\x01", "#", "+", "/", "a/+/#"),
    ...[0x10, 0x30, 0x32, 0x34, 0x3b, 0x40, 0x50, 0x62, 0x70, 0x82, 0xa2, 0xc0, 0xe0].map((b) => Uint8Array.of(b)),
    Buffer.from("\xc3\xa9\xed\xa0\x80\xf0\x9f\x98\x80", "latin1")
  ],
  run: (input) => {
    const [whole, ...others] = chunkings(input)
    const expected = mqttTrace(whole)
    sameTrace("MQTT packets", expected.events, mqttTrace(others[0]).events, "split in two")
    sameTrace("MQTT packets", expected.events, mqttTrace(others[1]).events, "byte by byte")
    for (const p of expected.packets) {
      const wire = reencode(p)
      if (wire === undefined) continue
      const again = mqttTrace([wire])
      const before = showPacket(p)
      check(again.events.length === 1 && again.events[0] === `packet ${before}`, `${before} re-encodes to ${wire.toString("hex")}, read back as ${again.events.join("; ")}`)
    }
  }
}

// ---- MQTT 5.0 decoder ----------------------------------------------------------

/** The codes the v5 decoder may refuse with; any other throw, or another code, is a finding. */
const V5_CODES = new Set<number>([0x81, 0x82, 0x84, 0x8f, 0x90, 0x94, 0x95])

/** The complete packets of a byte stream: first byte and body (a truncated tail is left out). */
const v5Frames = (b: Buffer): Array<{ first: number; body: Buffer }> => {
  const out: Array<{ first: number; body: Buffer }> = []
  let i = 0
  while (i < b.length) {
    const first = b[i++]
    let len = 0
    let mul = 1
    let n = 0
    for (;;) {
      if (i >= b.length || n === 4) return out
      const c = b[i++]
      n++
      len += (c & 0x7f) * mul
      mul *= 128
      if ((c & 0x80) === 0) break
    }
    if (i + len > b.length) return out
    out.push({ first, body: b.subarray(i, i + len) })
    i += len
  }
  return out
}

/** A v5 packet as text with object keys sorted: properties decode in wire order, which re-encoding makes canonical. */
const showV5 = (p: V5.Packet): string =>
  showPacket(JSON.parse(showPacket(p), (_k, v: unknown) =>
    typeof v === "object" && v !== null && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v))

/**
 * The v5 decoder over a stream of packets (the first input byte says who sends them):
 * each is refused with a `PacketError` of a decoder code, or re-encodes to bytes that
 * decode to the same packet and re-encode to themselves.
 */
export const mqtt5Target: FuzzTarget = {
  name: "mqtt5",
  maxLength: 2048,
  coverage: ["/src/core/mqtt/v5/"],
  seeds: (() => {
    const topicProps = { messageExpiryInterval: 60, contentType: "text/plain", responseTopic: "r/1", correlationData: Buffer.from([1, 2]), userProperties: [["k", "v"]] as const }
    const client: ReadonlyArray<V5.Packet> = [
      { cmd: "connect", protocolId: "MQTT", protocolVersion: 5, clean: true, keepalive: 30, clientId: "dev-1", properties: { sessionExpiryInterval: 60, receiveMaximum: 10, topicAliasMaximum: 5, requestProblemInformation: false },
        will: { topic: "will/t", payload: Buffer.from("bye"), qos: 1, retain: true, properties: { willDelayInterval: 5, payloadFormatIndicator: true } }, username: "u", password: Buffer.from("p") },
      { cmd: "publish", topic: "a/b", payload: Buffer.from("payload"), qos: 1, retain: false, dup: false, messageId: 7, properties: { ...topicProps, topicAlias: 3 } },
      { cmd: "publish", topic: "", payload: Buffer.alloc(0), qos: 0, retain: true, dup: false, properties: { topicAlias: 3 } },
      { cmd: "subscribe", messageId: 2, properties: { subscriptionIdentifiers: [9], userProperties: [["a", "b"]] }, subscriptions: [{ topic: "a/+", qos: 1, nl: true, rap: true, rh: 1 }, { topic: "$share/g/#", qos: 2, nl: false, rap: false, rh: 2 }] },
      { cmd: "unsubscribe", messageId: 3, properties: {}, unsubscriptions: ["a/+"] },
      { cmd: "puback", messageId: 7, reasonCode: 0x10, properties: { reasonString: "none" } },
      { cmd: "pubrel", messageId: 8, reasonCode: 0, properties: {} },
      { cmd: "disconnect", reasonCode: 4, properties: { sessionExpiryInterval: 0 } },
      { cmd: "auth", reasonCode: 0x18, properties: { authenticationMethod: "m", authenticationData: Buffer.from("d") } },
      { cmd: "pingreq" }
    ]
    const server: ReadonlyArray<V5.Packet> = [
      { cmd: "connack", sessionPresent: false, reasonCode: 0, properties: { assignedClientIdentifier: "auto", maximumQoS: 1, retainAvailable: false, serverKeepAlive: 60 } },
      { cmd: "suback", messageId: 2, properties: {}, reasonCodes: [1, 0x9e] },
      { cmd: "unsuback", messageId: 3, properties: {}, reasonCodes: [0x11] },
      { cmd: "publish", topic: "a/b", payload: Buffer.from("x"), qos: 2, retain: false, dup: true, messageId: 9, properties: { subscriptionIdentifiers: [1, 300] } },
      { cmd: "disconnect", reasonCode: 0x8e, properties: { serverReference: "other" } }
    ]
    return [
      Buffer.concat([Buffer.from([0]), ...client.map((p) => V5.encode(p, "client"))]),
      Buffer.concat([Buffer.from([1]), ...server.map((p) => V5.encode(p, "server"))])
    ]
  })(),
  dictionary: [
    ...words("\x00\x04MQTT\x05", "\x00\x00", "\x00\x01", "\xff\xff\xff\x7f", "\x80\x80\x80\x80\x01", "$share/", "#", "+", "/"),
    ...[0x01, 0x02, 0x03, 0x08, 0x09, 0x0b, 0x11, 0x12, 0x13, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1c, 0x1f, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a]
      .map((id) => Uint8Array.of(id)),
    ...[0x10, 0x20, 0x30, 0x3b, 0x40, 0x50, 0x62, 0x70, 0x82, 0x90, 0xa2, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0].map((b) => Uint8Array.of(b)),
    Buffer.from("\xc3\xa9\xed\xa0\x80\xf0\x9f\x98\x80\xef\xbb\xbf", "latin1")
  ],
  run: (input) => {
    if (input.length === 0) return
    const from: V5.Sender = (input[0] & 1) === 1 ? "server" : "client"
    const decoder = new V5.Decoder({ from, maxTopicLevels: 16 })
    for (const { first, body } of v5Frames(input.subarray(1))) {
      let p: V5.Packet
      try {
        p = decoder.decode(first, body)
      } catch (e) {
        check(e instanceof V5.PacketError, `decoder threw ${String(e)}`)
        check(V5_CODES.has((e as V5.PacketError).code), `refused with code 0x${(e as V5.PacketError).code.toString(16)}`)
        continue
      }
      const wire = V5.encode(p, from)
      const [again] = v5Frames(wire)
      const back = new V5.Decoder({ from, maxTopicLevels: 16 }).decode(again.first, again.body)
      check(showV5(back) === showV5(p), `${showV5(p)} re-encodes to ${wire.toString("hex")}, read back as ${showV5(back)}`)
      check(V5.encode(back, from).equals(wire), `${showV5(p)} does not re-encode to the same bytes`)
    }
  }
}

// ---- configuration parser -----------------------------------------------------

const CONF_ENV: ParseEnv = {
  readFile: (file) => (file.endsWith("inc.conf") ? "port: 4222\nnested { a: 1, b: [x, \"y\"] }\n" : undefined),
  env: { HOST: "127.0.0.1", PORT: "4222", LIST: "[1, 2, 3]", MAP: "{ a: 1 }", EMPTY: "" }
}

/** The nesting depth of a value (shared sub-values are measured once). */
const depthOf = (v: ConfValue, memo: Map<object, number>): number => {
  if (typeof v !== "object" || v instanceof ConfSize) return 0
  const known = memo.get(v)
  if (known !== undefined) return known
  let d = 0
  for (const x of Array.isArray(v) ? v : Object.values(v)) d = Math.max(d, depthOf(x as ConfValue, memo))
  memo.set(v, d + 1)
  return d + 1
}

/** A canonical text of a value, or undefined past `budget` nodes (variables share sub-values, so a tree can be huge). */
const showConf = (v: ConfValue, budget: { n: number }): string | undefined => {
  if (--budget.n < 0) return undefined
  if (v instanceof ConfSize) return `size(${v.bytes},${JSON.stringify(v.text)})`
  if (typeof v !== "object") return JSON.stringify(v)
  const parts: Array<string> = []
  for (const [k, x] of Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v)) {
    const s = showConf(x as ConfValue, budget)
    if (s === undefined) return undefined
    parts.push(`${JSON.stringify(k)}:${s}`)
  }
  return `${Array.isArray(v) ? "[" : "{"}${parts.join(",")}${Array.isArray(v) ? "]" : "}"}`
}

/** Blocks may nest MAX_DEPTH (100) deep below the root map; each `$variable` can graft one such tree. */
const CONF_DEPTH = 101

const confOutcome = (text: string): { readonly shown: string; readonly depth: number } => {
  const r = parseConfig(text, "/etc/switchyard/fuzz.conf", CONF_ENV)
  if (Either.isLeft(r)) {
    const e = r.left
    check(e.line !== undefined && e.column !== undefined, `error without a position: ${e.message}`)
    return { shown: `error ${e.reason} ${e.message}`, depth: 0 }
  }
  const root = r.right.root
  return { shown: showConf(root, { n: 20_000 }) ?? `large ${Object.keys(root).join(",")}`, depth: depthOf(root, new Map()) }
}

export const configTarget: FuzzTarget = {
  name: "config",
  maxLength: 4096,
  coverage: ["/src/config/"],
  seeds: words(
    "port: 4222\nhost = \"0.0.0.0\"\nmax_payload 1MB\n",
    "# comment\n// another\njetstream {\n  store_dir: '/tmp/js'\n  max_mem: 64Mi\n}\n",
    "authorization { users = [ { user: a, password: \"$2a$11$xyz\" }, { user: b, password: $PORT } ] }\n",
    "{ \"listen\": \"127.0.0.1:4222\", \"debug\": true, \"ping_interval\": \"2m\", \"list\": [1, 2.5, -3e2] }",
    "v = 10\nmqtt { port: $v, s: \"a\\tb\\u00e9\\x41\" }; include inc.conf\n",
    "cluster {\n  routes = [\n    nats://a:4248\n    nats://b:4248\n  ]\n}\nenabled: yes\nlimit: 2Gi\n"
  ),
  dictionary: words(
    "{", "}", "[", "]", "=", ":", ";", ",", "\n", "#", "//", "\"", "'", "\\u00e9", "\\x41", "\\U0001F600", "\\n",
    "$HOST", "$PORT", "$LIST", "$MAP", "$EMPTY", "$UNDEFINED", "$v", "include inc.conf\n", "include missing.conf\n",
    "true", "off", "1k", "64MB", "2Gi", "1.5e3", "-0", "99999999999999999999", "$2a$11$",
    "__proto__", "constructor", "toString"
  ),
  run: (input) => {
    const text = input.toString("utf8")
    const first = confOutcome(text)
    const second = confOutcome(text)
    check(first.shown === second.shown, `parsing twice differs: ${first.shown} vs ${second.shown}`)
    const grafts = text.split("$").length // one more than the variable references
    check(first.depth <= CONF_DEPTH * grafts, `value nested ${first.depth} deep`)
  }
}

// ---- subject matching -----------------------------------------------------------

const TOKENS = ["a", "b", "*", ">", "foo", ""] as const

interface FuzzSub {
  readonly id: number
  readonly subject: string
  readonly queue: string | undefined
}


/** Reads a subject of 1-4 tokens from the input at `pos`. */
const readSubject = (b: Buffer, pos: { i: number }): string => {
  const head = b[pos.i++] ?? 0
  const n = 1 + (head & 3)
  const ts: Array<string> = []
  for (let k = 0; k < n; k++) ts.push(TOKENS[(b[pos.i++] ?? 0) % TOKENS.length])
  return ts.join(".")
}

const showResult = (r: SublistResult<FuzzSub>): string => {
  const groups = r.qsubs.map((g) => `${g[0]?.queue}:${g.map((s) => s.id).sort((x, y) => x - y).join(",")}`).sort()
  return `${r.psubs.map((s) => s.id).sort((x, y) => x - y).join(",")}|${groups.join(";")}`
}

const naiveResult = (live: ReadonlyArray<FuzzSub>, subject: string): string => {
  const matching = live.filter((s) => refMatch(subject, s.subject))
  const groups = new Map<string, Array<number>>()
  for (const s of matching) if (s.queue !== undefined) groups.set(s.queue, [...(groups.get(s.queue) ?? []), s.id])
  const shown = [...groups].map(([q, ids]) => `${q}:${ids.sort((x, y) => x - y).join(",")}`).sort()
  return `${matching.filter((s) => s.queue === undefined).map((s) => s.id).sort((x, y) => x - y).join(",")}|${shown.join(";")}`
}

/** Checks the pairwise filter relations against the literals the program used. */
const checkRelations = (filters: ReadonlyArray<string>, literals: ReadonlyArray<string>): void => {
  for (const a of filters) {
    for (const b of filters) {
      const collide = subjectsCollide(a, b)
      check(collide === subjectsCollide(b, a), `subjectsCollide(${a}, ${b}) is not symmetric`)
      const both = literals.find((l) => refMatch(l, a) && refMatch(l, b))
      check(both === undefined || collide, `subjectsCollide(${a}, ${b}) is false but ${both} matches both`)
      if (subjectIsSubsetMatch(a, b)) {
        const escapee = literals.find((l) => refMatch(l, a) && !refMatch(l, b))
        check(escapee === undefined, `${a} is a subset of ${b} but ${escapee} matches only the first`)
      }
    }
  }
}

/**
 * The input is a program: each op byte picks insert (filter, optional queue), remove
 * (an earlier subscription) or match (a literal); operands follow it.
 */
export const subjectTarget: FuzzTarget = {
  name: "subject",
  maxLength: 512,
  coverage: ["/src/core/subject/"],
  seeds: [Buffer.from([0, 1, 0, 4, 2, 1, 0, 4, 3, 2, 0, 0, 1, 2, 3, 1, 4, 0, 1]), Buffer.from([0x10, 3, 0, 1, 2, 3, 2, 1, 0, 0, 1, 2, 1])],
  dictionary: [Uint8Array.of(0, 0), Uint8Array.of(2, 1, 4), Uint8Array.of(0x40, 2, 0, 0, 3)],
  run: (input) => {
    const sl = new Sublist<FuzzSub>({ cacheSize: input.length > 0 ? [0, 1, 3, 1024][input[0] & 3] : 3 })
    const created: Array<FuzzSub> = []
    let live: Array<FuzzSub> = []
    const filters = new Set<string>()
    const literals = new Set<string>()
    const pos = { i: 1 }
    while (pos.i < input.length) {
      const op = input[pos.i++]
      switch (op % 3) {
        case 0: {
          const subject = readSubject(input, pos)
          if (!isValidSubject(subject)) break
          const queue = (op & 0x30) === 0x10 ? "q1" : (op & 0x30) === 0x20 ? "q2" : undefined
          const s: FuzzSub = { id: created.length, subject, queue }
          created.push(s)
          live.push(s)
          filters.add(subject)
          sl.insert(s)
          break
        }
        case 1: {
          if (created.length === 0) break
          const s = created[(input[pos.i++] ?? 0) % created.length]
          check(sl.remove(s) === live.includes(s), `remove(${s.subject}) disagrees with the live set`)
          live = live.filter((x) => x !== s)
          break
        }
        default: {
          const subject = readSubject(input, pos)
          literals.add(subject)
          for (const f of filters) {
            check(matchLiteral(subject, f) === refMatch(subject, f), `matchLiteral(${subject}, ${f}) is ${matchLiteral(subject, f)}`)
          }
          if (!isValidLiteralSubject(subject)) break
          const expected = naiveResult(live, subject)
          const got = showResult(sl.match(subject))
          check(got === expected, `match(${subject}) gives ${got}, a scan gives ${expected}`)
          check(sl.hasInterest(subject) === live.some((s) => refMatch(subject, s.subject)), `hasInterest(${subject}) disagrees`)
        }
      }
      check(sl.count() === live.length, `count ${sl.count()} with ${live.length} live`)
    }
    checkRelations([...filters], [...literals].filter((l) => isValidLiteralSubject(l)))
  }
}

export const TARGETS: ReadonlyArray<FuzzTarget> = [natsTarget, mqttTarget, mqtt5Target, configTarget, subjectTarget]
