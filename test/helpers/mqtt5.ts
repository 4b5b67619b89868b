// MQTT 5.0 test helpers: fast-check arbitraries of valid packets (as a client or the
// server may send them), and conversions between our packets and mqtt-packet's objects
// so both codecs can be run over the same packets and compared byte by byte.
import fc from "fast-check"
import * as MqttPacket from "mqtt-packet"
import {
  type Packet,
  type Properties,
  PROPERTIES,
  type PropertyContext,
  propertyAllowed,
  type Sender,
  MAX_SUBSCRIPTION_IDENTIFIER
} from "../../src/core/mqtt/v5/index.js"

// ---- arbitraries ----

/** Any MQTT string: well-formed UTF-8 (no lone surrogates), no U+0000. */
export const mqttString = (maxLength = 12): fc.Arbitrary<string> =>
  fc.oneof(
    fc.string({ maxLength }),
    fc.string({ unit: "binary", maxLength })
  ).filter((s) => !s.includes("\u0000"))

export const topicName = (): fc.Arbitrary<string> =>
  fc.array(fc.constantFrom("a", "b", "sensor", "é", "x.y", "$SYS", "", "温度", "😀"), { minLength: 1, maxLength: 4 })
    .map((ls) => ls.join("/"))
    .filter((t) => t.length > 0)

const bytes = (maxLength = 16): fc.Arbitrary<Buffer> => fc.uint8Array({ maxLength }).map((a) => Buffer.from(a))

/** A key mqtt-packet keeps in place (integer-like keys would be reordered by JavaScript objects). */
const userKey = mqttString(8).filter((k) => !/^(0|[1-9][0-9]*)$/.test(k))

/**
 * User properties with repeats, each key's occurrences together (what mqtt-packet's object
 * form can express). Repeated values are not empty: mqtt-packet's parser overwrites a
 * repeated key whose first value is "" (it tests the value for truth).
 */
const groupedUserProperties: fc.Arbitrary<ReadonlyArray<readonly [string, string]>> = fc
  .uniqueArray(
    fc.tuple(userKey, fc.oneof(fc.array(mqttString(8), { minLength: 1, maxLength: 1 }), fc.array(mqttString(8).filter((v) => v !== ""), { minLength: 2, maxLength: 3 }))),
    { selector: ([k]) => k, minLength: 1, maxLength: 4 }
  )
  .map((groups) => groups.flatMap(([k, vs]) => vs.map((v) => [k, v] as const)))

/** User properties in any order, repeats anywhere. */
const anyUserProperties: fc.Arbitrary<ReadonlyArray<readonly [string, string]>> = fc.array(
  fc.tuple(fc.constantFrom("k", "a", "Content-Type", "é"), mqttString(6)).map(([k, v]) => [k, v] as const),
  { minLength: 1, maxLength: 6 }
)

const u16 = fc.integer({ min: 0, max: 0xffff })
const u32 = fc.integer({ min: 0, max: 0xffff_ffff })

const VALUE: Record<string, fc.Arbitrary<unknown>> = {
  topicAlias: fc.integer({ min: 1, max: 0xffff }),
  messageExpiryInterval: u32,
  payloadFormatIndicator: fc.boolean(),
  contentType: mqttString(),
  responseTopic: topicName(),
  correlationData: bytes(),
  sessionExpiryInterval: u32,
  assignedClientIdentifier: mqttString(),
  serverKeepAlive: u16,
  authenticationMethod: mqttString(),
  authenticationData: bytes(),
  requestProblemInformation: fc.boolean(),
  willDelayInterval: u32,
  requestResponseInformation: fc.boolean(),
  responseInformation: mqttString(),
  serverReference: mqttString(),
  reasonString: mqttString(),
  receiveMaximum: fc.integer({ min: 1, max: 0xffff }),
  topicAliasMaximum: u16,
  maximumQoS: fc.constantFrom(0, 1),
  retainAvailable: fc.boolean(),
  maximumPacketSize: fc.integer({ min: 1, max: 0xffff_ffff }),
  wildcardSubscriptionAvailable: fc.boolean(),
  subscriptionIdentifiersAvailable: fc.boolean(),
  sharedSubscriptionAvailable: fc.boolean()
}

export interface PropertyOptions {
  /** User properties grouped by key (for comparing with mqtt-packet); default false. */
  readonly grouped?: boolean
}

/** Valid properties of `context` as `from` sends them. */
export const properties = (context: PropertyContext, from: Sender, o: PropertyOptions = {}): fc.Arbitrary<Properties> => {
  const model: Record<string, fc.Arbitrary<unknown>> = {}
  for (const d of PROPERTIES) {
    if (!propertyAllowed(d.name, context)) continue
    if (d.name === "userProperties") model.userProperties = o.grouped === true ? groupedUserProperties : anyUserProperties
    else if (d.name === "subscriptionIdentifiers") {
      if (context === "publish" && from === "client") continue // [MQTT-3.3.4-6]
      const id = fc.integer({ min: 1, max: MAX_SUBSCRIPTION_IDENTIFIER })
      model.subscriptionIdentifiers = fc.array(id, { minLength: 1, maxLength: context === "subscribe" ? 1 : 3 })
    } else if (d.name === "sessionExpiryInterval" && context === "disconnect" && from === "server") continue // [MQTT-3.14.2-2]
    else model[d.name] = VALUE[d.name]
  }
  return fc.record(model, { requiredKeys: [] }).map((p) => {
    const q = p as Record<string, unknown>
    if (q.authenticationMethod === undefined) delete q.authenticationData
    return q as Properties
  })
}

const packetId = fc.integer({ min: 1, max: 0xffff })
const reasonOf = (...codes: ReadonlyArray<number>): fc.Arbitrary<number> => fc.constantFrom(...codes)

const PUBACK_CODES = [0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99]
const DISCONNECT_BOTH = [0x00, 0x80, 0x81, 0x82, 0x83, 0x90, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99]
const DISCONNECT_SERVER = [...DISCONNECT_BOTH, 0x87, 0x89, 0x8b, 0x8d, 0x8e, 0x8f, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f, 0xa0, 0xa1, 0xa2]
const CONNACK_CODES = [0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8c, 0x90, 0x95, 0x97, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9f]

export interface PacketOptions extends PropertyOptions {
  /** Only packets mqtt-packet's generator accepts (it refuses a few valid ones: see below). */
  readonly mqttPacketCompatible?: boolean
}

const connect = (o: PacketOptions): fc.Arbitrary<Packet> =>
  fc.record({
    clean: fc.boolean(),
    keepalive: u16,
    clientId: mqttString(),
    properties: properties("connect", "client", o),
    will: fc.option(fc.record({
      topic: topicName(),
      payload: bytes(),
      qos: fc.constantFrom(0, 1, 2),
      retain: fc.boolean(),
      properties: properties("will", "client", o)
    }), { nil: undefined }),
    username: fc.option(mqttString(), { nil: undefined }),
    password: fc.option(bytes(), { nil: undefined })
  }).map((c) => ({ cmd: "connect" as const, protocolId: "MQTT" as const, protocolVersion: 5 as const, ...c }))
    // mqtt-packet refuses a password without a user name and an empty id with Clean Start 0 (both valid in v5)
    .filter((c) => o.mqttPacketCompatible !== true || ((c.password === undefined || c.username !== undefined) && (c.clientId !== "" || c.clean)))

const publish = (from: Sender, o: PacketOptions): fc.Arbitrary<Packet> =>
  fc.record({
    topic: topicName(),
    payload: bytes(64),
    qos: fc.constantFrom(0, 1, 2),
    retain: fc.boolean(),
    dup: fc.boolean(),
    messageId: packetId,
    properties: properties("publish", from, o),
    aliasOnly: fc.boolean()
  }).map(({ aliasOnly, ...p }) => ({
    cmd: "publish" as const,
    ...p,
    topic: aliasOnly && p.properties.topicAlias !== undefined ? "" : p.topic,
    dup: p.qos > 0 && p.dup,
    messageId: p.qos > 0 ? p.messageId : undefined
  }))

const ack = (from: Sender, o: PacketOptions): fc.Arbitrary<Packet> =>
  fc.constantFrom("puback", "pubrec", "pubrel", "pubcomp").chain((cmd) =>
    fc.record({
      messageId: packetId,
      reasonCode: cmd === "pubrel" || cmd === "pubcomp" ? reasonOf(0x00, 0x92) : reasonOf(...PUBACK_CODES),
      properties: properties(cmd, from, o)
    }).map((a) => ({ cmd, ...a }) as Packet)
  )

const subscribe = (o: PacketOptions): fc.Arbitrary<Packet> =>
  fc.record({
    messageId: packetId,
    properties: properties("subscribe", "client", o),
    subscriptions: fc.array(
      fc.record({
        topic: fc.oneof(topicName(), fc.constantFrom("#", "+/x", "$share/g/a/#")),
        qos: fc.constantFrom(0, 1, 2),
        nl: fc.boolean(),
        rap: fc.boolean(),
        rh: fc.constantFrom(0, 1, 2)
      }).map((s) => ({ ...s, nl: s.nl && !s.topic.startsWith("$share/") })), // [MQTT-3.8.3-4]
      { minLength: 1, maxLength: 4 }
    )
  }).map((s) => ({ cmd: "subscribe" as const, ...s }))

const subackLike = (cmd: "suback" | "unsuback", o: PacketOptions): fc.Arbitrary<Packet> =>
  fc.record({
    messageId: packetId,
    properties: properties(cmd, "server", o),
    reasonCodes: fc.array(
      cmd === "suback" ? reasonOf(0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8f, 0x91, 0x97, 0x9e, 0xa1, 0xa2) : reasonOf(0x00, 0x11, 0x80, 0x83, 0x87, 0x8f, 0x91),
      { minLength: 1, maxLength: 5 }
    )
  }).map((s) => ({ cmd, ...s }))

/** Valid packets `from` may send, of every type. */
export const packet = (from: Sender, o: PacketOptions = {}): fc.Arbitrary<Packet> => {
  const both = [
    publish(from, o),
    ack(from, o),
    fc.record({ reasonCode: reasonOf(...(from === "client" ? [...DISCONNECT_BOTH, 0x04] : DISCONNECT_SERVER)), properties: properties("disconnect", from, o) })
      .map((d) => ({ cmd: "disconnect" as const, ...d })),
    fc.record({ reasonCode: reasonOf(0x00, 0x18, 0x19), properties: properties("auth", from, o) })
      .map((a) => ({ cmd: "auth" as const, ...a }))
  ]
  if (from === "client") {
    return fc.oneof(connect(o), subscribe(o), fc.record({
      messageId: packetId,
      properties: properties("unsubscribe", "client", o),
      unsubscriptions: fc.array(fc.oneof(topicName(), fc.constant("#")), { minLength: 1, maxLength: 4 })
    }).map((u) => ({ cmd: "unsubscribe" as const, ...u })), fc.constant({ cmd: "pingreq" as const }), ...both)
  }
  return fc.oneof(
    fc.record({ sessionPresent: fc.boolean(), reasonCode: reasonOf(...CONNACK_CODES), properties: properties("connack", "server", o) })
      .map((c) => ({ cmd: "connack" as const, ...c, sessionPresent: c.sessionPresent && c.reasonCode === 0 })),
    subackLike("suback", o),
    subackLike("unsuback", o),
    fc.constant({ cmd: "pingresp" as const }),
    ...both
  )
}

// ---- mqtt-packet ----

type Obj = Record<string, unknown>

/** Our properties as mqtt-packet's object, keys in our writing order. */
export const toMqttPacketProperties = (p: Properties): Obj | undefined => {
  const out: Obj = {}
  const rec = p as Obj
  for (const d of PROPERTIES) {
    const v = rec[d.name]
    if (v === undefined) continue
    if (d.name === "userProperties") {
      const o: Obj = Object.create(null)
      for (const [k, x] of v as ReadonlyArray<readonly [string, string]>) {
        const prev = o[k]
        o[k] = prev === undefined ? x : Array.isArray(prev) ? [...prev, x] : [prev, x]
      }
      out.userProperties = o
    } else if (d.name === "subscriptionIdentifiers") out.subscriptionIdentifier = v
    else out[d.name] = v
  }
  return Object.keys(out).length === 0 ? undefined : out
}

/** mqtt-packet's parsed properties as ours. */
export const fromMqttPacketProperties = (p: unknown): Properties => {
  if (p === undefined) return {}
  const out: Obj = {}
  for (const [k, v] of Object.entries(p as Obj)) {
    if (k === "userProperties") {
      const pairs: Array<readonly [string, string]> = []
      for (const [name, value] of Object.entries(v as Obj)) {
        for (const x of Array.isArray(value) ? value : [value]) pairs.push([name, x as string])
      }
      out.userProperties = pairs
    } else if (k === "subscriptionIdentifier") out.subscriptionIdentifiers = Array.isArray(v) ? v : [v]
    else out[k] = v
  }
  return out as Properties
}

/** Our packet as the object mqtt-packet's generator takes. */
export const toMqttPacket = (p: Packet): MqttPacket.Packet => {
  const props = "properties" in p ? toMqttPacketProperties(p.properties) : undefined
  const o: Obj = { ...p, properties: props }
  if (p.cmd === "suback" || p.cmd === "unsuback") {
    o.granted = p.reasonCodes
    delete o.reasonCodes
  }
  if (p.cmd === "connect" && p.will !== undefined) o.will = { ...p.will, properties: toMqttPacketProperties(p.will.properties) }
  if (p.cmd === "publish" && p.messageId === undefined) delete o.messageId
  return o as unknown as MqttPacket.Packet
}

/** A packet mqtt-packet's parser emitted, as ours. */
export const fromMqttPacket = (m: Obj): Packet => {
  const properties = fromMqttPacketProperties(m.properties)
  switch (m.cmd) {
    case "connect": {
      const w = m.will as Obj | undefined
      return {
        cmd: "connect", protocolId: "MQTT", protocolVersion: 5, clean: m.clean as boolean, keepalive: m.keepalive as number,
        clientId: m.clientId as string, properties,
        will: w === undefined ? undefined : {
          topic: w.topic as string, payload: w.payload as Buffer, qos: w.qos as number, retain: w.retain as boolean,
          properties: fromMqttPacketProperties(w.properties)
        },
        username: m.username as string | undefined,
        password: m.password as Buffer | undefined
      }
    }
    case "connack":
      return { cmd: "connack", sessionPresent: m.sessionPresent as boolean, reasonCode: m.reasonCode as number, properties }
    case "publish":
      return {
        cmd: "publish", topic: m.topic as string, payload: m.payload as Buffer, qos: m.qos as number, retain: m.retain as boolean,
        dup: m.dup as boolean, messageId: (m.qos as number) > 0 ? (m.messageId as number) : undefined, properties
      }
    case "puback":
    case "pubrec":
    case "pubrel":
    case "pubcomp":
      return { cmd: m.cmd, messageId: m.messageId as number, reasonCode: m.reasonCode as number, properties }
    case "subscribe":
      return {
        cmd: "subscribe", messageId: m.messageId as number, properties,
        subscriptions: (m.subscriptions as Array<Obj>).map((s) => ({ topic: s.topic as string, qos: s.qos as number, nl: s.nl as boolean, rap: s.rap as boolean, rh: s.rh as number }))
      }
    case "suback":
    case "unsuback":
      return { cmd: m.cmd, messageId: m.messageId as number, properties, reasonCodes: m.granted as Array<number> }
    case "unsubscribe":
      return { cmd: "unsubscribe", messageId: m.messageId as number, properties, unsubscriptions: m.unsubscriptions as Array<string> }
    case "pingreq":
    case "pingresp":
      return { cmd: m.cmd }
    case "disconnect":
    case "auth":
      return { cmd: m.cmd, reasonCode: m.reasonCode as number, properties }
    default:
      throw new Error(`mqtt-packet emitted ${String(m.cmd)}`)
  }
}

/** mqtt-packet's v5 generator. */
export const mqttPacketGenerate = (p: Packet): Buffer => MqttPacket.generate(toMqttPacket(p), { protocolVersion: 5 })

/** mqtt-packet's v5 parser over whole packets: what it emitted, or its error. */
export const mqttPacketParse = (bytes: Buffer): { packets: Array<Packet>; error?: Error } => {
  const parser = MqttPacket.parser({ protocolVersion: 5 })
  const packets: Array<Packet> = []
  let error: Error | undefined
  parser.on("packet", (m: unknown) => packets.push(fromMqttPacket(m as Obj)))
  parser.on("error", (e: Error) => {
    error = e
  })
  parser.parse(bytes)
  return error === undefined ? { packets } : { packets, error }
}

/** Splits bytes into (first byte, body) of one packet: the framing MqttParser does. */
export const unframe = (bytes: Buffer): { first: number; body: Buffer } => {
  let len = 0
  let mul = 1
  let i = 1
  for (;;) {
    const b = bytes[i++]
    len += (b & 0x7f) * mul
    mul *= 128
    if ((b & 0x80) === 0) break
  }
  if (i + len !== bytes.length) throw new Error(`frame of ${bytes.length} bytes announces ${len} after ${i}`)
  return { first: bytes[0], body: bytes.subarray(i) }
}
