// What the MQTT bridge writes into the `$MQTT_*` streams, as plain data and bytes:
// the session record of `$MQTT_sess`, the QoS header of `$MQTT_msgs`/`$MQTT_rmsgs`
// messages, and the stream subjects. Pure: the shell stores and loads the bytes.
import { createHash } from "node:crypto"
import type { DelayedWill, QoS, SessionSnapshot } from "./types.js"

export const MqttStream = {
  sess: "$MQTT_sess",
  msgs: "$MQTT_msgs",
  rmsgs: "$MQTT_rmsgs",
  qos2in: "$MQTT_qos2in",
  out: "$MQTT_out"
} as const

export type MqttStreamName = (typeof MqttStream)[keyof typeof MqttStream]

/** The subject space each stream captures (never overlapping a user's `$MQTT.` use by accident). */
export const MqttStreamSubject: Record<MqttStreamName, string> = {
  $MQTT_sess: "$MQTT.sess.>",
  $MQTT_msgs: "$MQTT.msgs.>",
  $MQTT_rmsgs: "$MQTT.rmsgs.>",
  $MQTT_qos2in: "$MQTT.qos2.in.>",
  $MQTT_out: "$MQTT.out.pubrel.>"
}

/**
 * The storage key of a client id: a hash, so that any id (any UTF-8, any length) makes
 * a valid subject token. The full id is kept in the record and compared on restore.
 */
export const sessionHash = (clientId: string): string => createHash("sha256").update(clientId, "utf8").digest("hex").slice(0, 32)

export const sessSubject = (hash: string): string => `$MQTT.sess.${hash}`
/** One subscription of a persistent session: `$MQTT.sess.<session hash>.<filter hash>`. */
export const sessSubscriptionSubject = (hash: string, filter: string): string => `$MQTT.sess.${hash}.${sessionHash(filter)}`

/**
 * The record of one subscription (`sessSubscriptionSubject`). `c`: the `$MQTT_msgs`
 * cursor when it was made; messages stored before it were not for this subscription.
 */
export interface SubscriptionRecord {
  readonly f: string
  readonly q: QoS
  readonly c: number
  /** MQTT 5.0 options, present only when set: No Local, Subscription Identifier, Retain As Published, made as a Shared Subscription. */
  readonly nl?: 1
  readonly i?: number
  readonly rap?: 1
  readonly s?: 1
}

/** A subscription's MQTT 5.0 options, as a session keeps them (absent: not set). */
export interface SubscriptionOptions {
  readonly noLocal?: boolean | undefined
  readonly id?: number | undefined
  readonly rap?: boolean | undefined
  readonly shared?: boolean | undefined
}

export const encodeSubscriptionRecord = (filter: string, qos: QoS, cursor: number, o: SubscriptionOptions = {}): Buffer =>
  Buffer.from(JSON.stringify({
    f: filter,
    q: qos,
    c: cursor,
    ...(o.noLocal === true ? { nl: 1 } : {}),
    ...(o.id === undefined ? {} : { i: o.id }),
    ...(o.rap === true ? { rap: 1 } : {}),
    ...(o.shared === true ? { s: 1 } : {})
  } satisfies SubscriptionRecord))

/** The options a subscription record keeps (a record without any: none; a `$share/…` filter without `s` is literal). */
export const subscriptionOptionsOf = (r: SubscriptionRecord): SubscriptionOptions => ({
  ...(r.nl === 1 ? { noLocal: true } : {}),
  ...(typeof r.i === "number" ? { id: r.i } : {}),
  ...(r.rap === 1 ? { rap: true } : {}),
  ...(r.s === 1 ? { shared: true } : {})
})

export const decodeSubscriptionRecord = (bytes: Uint8Array): SubscriptionRecord | undefined => {
  try {
    const r = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")) as SubscriptionRecord
    if (typeof r?.f !== "string" || (r.q !== 0 && r.q !== 1 && r.q !== 2) || typeof r.c !== "number") return undefined
    return r
  } catch {
    return undefined
  }
}
export const msgSubject = (subject: string): string => `$MQTT.msgs.${subject}`
export const retainedSubject = (subject: string): string => `$MQTT.rmsgs.${subject}`
export const qos2InSubject = (hash: string, packetId: number): string => `$MQTT.qos2.in.${hash}.${packetId}`
export const pubrelSubject = (hash: string, packetId: number): string => `$MQTT.out.pubrel.${hash}.${packetId}`

/** The NATS subject a `$MQTT.msgs.`/`$MQTT.rmsgs.` stream subject was stored for. */
export const storedSubjectOf = (streamSubject: string): string => {
  const i = streamSubject.indexOf(".", "$MQTT.".length)
  return streamSubject.slice(i + 1)
}

// One pre-encoded header per QoS: the publish path allocates nothing for it.
const QOS_HEADERS = [0, 1, 2].map((q) => Buffer.from(`NATS/1.0\r\nMqtt-QoS: ${q}\r\n\r\n`))

export const qosHeader = (qos: QoS): Buffer => QOS_HEADERS[qos]

/**
 * The header of a stored QoS 2 message from a persistent session: besides its QoS, who
 * sent it (session hash, packet id) and the last `$MQTT_qos2in` sequence before its
 * de-duplication record, which is written right after it. The copy and the record live in
 * two files synced side by side: after a power cut the copy may be on disk without its
 * record (the record's stream ends at or before that sequence), and recovery restores the
 * record, so the publisher's resend is known as one. A record written and later removed
 * (its PUBREL came) leaves the stream past it: that exchange is over.
 */
export const qos2InHeader = (hash: string, packetId: number, recordsBefore: number): Buffer =>
  Buffer.from(`NATS/1.0\r\nMqtt-QoS: 2\r\nMqtt-In: ${hash} ${packetId} ${recordsBefore}\r\n\r\n`)

/** The sender of a stored QoS 2 message and where its de-duplication record went, when its header says. */
export const inboundOfHeader = (headers: Uint8Array | undefined): { hash: string; packetId: number; recordsBefore: number } | undefined => {
  if (headers === undefined) return undefined
  const m = /Mqtt-In: ([0-9a-f]+) (\d+) (\d+)/.exec(Buffer.from(headers.buffer, headers.byteOffset, headers.byteLength).toString("latin1"))
  return m === null ? undefined : { hash: m[1], packetId: Number(m[2]), recordsBefore: Number(m[3]) }
}

const CRLF = Buffer.from("\r\n")
const EMPTY_BUF = Buffer.alloc(0)
/** The bridge's own lines of a stored copy (a message's own `Nats-TTL` is escaped, see `storedHeader`). */
const BRIDGE_LINE = /^(Mqtt-(QoS|In|Reply)|Nats-TTL):/i
const OWN_TTL_LINE = /^[ \t]*(nats-ttl)[ \t]*:(.*)$/i

/**
 * The header of a stored MQTT message with MQTT 5.0 properties: the bridge's own lines
 * (`base`: its QoS, and `Mqtt-In`), the stream's per-message TTL (`Nats-TTL: <ttl>`,
 * seconds; 0: none), its reply subject (`Mqtt-Reply`, which the Response Topic and
 * Correlation Data make) and then the lines of its NATS header block (`hdr`,
 * `headerBlock` of its properties). Without any of these, `base` itself.
 *
 * A `Nats-TTL` of the message's own (a User Property of that name, or a NATS publisher's
 * header) is kept as the escaped User Property it reads back as
 * (`Mqtt-User-Property: Nats-TTL=<value>`): in the store only the bridge's line is a TTL.
 */
export const storedHeader = (base: Buffer, hdr: Uint8Array | undefined, reply: string | undefined, ttl = 0): Buffer => {
  if (hdr === undefined && reply === undefined && ttl === 0) return base
  const head = base.subarray(0, base.length - 2) // its lines, without the blank line that ends them
  const ttlLine = ttl === 0 ? EMPTY_BUF : Buffer.from(`Nats-TTL: ${ttl}\r\n`, "latin1")
  const replyLine = reply === undefined ? EMPTY_BUF : Buffer.from(`Mqtt-Reply: ${reply}\r\n`, "utf8")
  if (hdr === undefined) return Buffer.concat([head, ttlLine, replyLine, CRLF])
  const h = Buffer.from(hdr.buffer, hdr.byteOffset, hdr.byteLength)
  return Buffer.concat([head, ttlLine, replyLine, withOwnTtlEscaped(h.subarray(h.indexOf(CRLF) + 2))])
}

/** Header lines with each `Nats-TTL` line turned into `Mqtt-User-Property: <name>=<value>` (percent-encoded). */
const withOwnTtlEscaped = (lines: Buffer): Buffer => {
  const text = lines.toString("latin1")
  if (!/(^|\n)[ \t]*nats-ttl[ \t]*:/i.test(text)) return lines
  const out = text.split("\r\n").map((line) => {
    const m = OWN_TTL_LINE.exec(line)
    if (m === null) return Buffer.from(line, "latin1")
    const value = Buffer.from(m[2], "latin1").toString("utf8").replace(/^[ \t]+|[ \t]+$/g, "")
    return Buffer.from(`Mqtt-User-Property: ${encodeURIComponent(m[1])}=${encodeURIComponent(value)}`, "utf8")
  })
  return Buffer.concat(out.flatMap((l, i) => (i === 0 ? [l] : [CRLF, l])))
}

/** What `storedHeader` kept of a message: its reply subject and NATS header block (undefined: none). */
export const storedParts = (headers: Uint8Array | undefined): { readonly reply: string | undefined; readonly hdr: Buffer | undefined } => {
  if (headers === undefined) return { reply: undefined, hdr: undefined }
  const lines = Buffer.from(headers.buffer, headers.byteOffset, headers.byteLength).toString("utf8").split("\r\n").slice(1)
  let reply: string | undefined
  const own: Array<string> = []
  for (const l of lines) {
    if (l === "") continue
    if (l.startsWith("Mqtt-Reply: ")) reply = l.slice("Mqtt-Reply: ".length)
    else if (!BRIDGE_LINE.test(l)) own.push(l)
  }
  return { reply, hdr: own.length === 0 ? undefined : Buffer.from(`NATS/1.0\r\n${own.join("\r\n")}\r\n\r\n`, "utf8") }
}

/** The QoS a stored MQTT message was published with (1 when the header is missing). */
export const qosOfHeader = (headers: Uint8Array | undefined): QoS => {
  if (headers === undefined) return 1
  const m = /Mqtt-QoS: ([0-2])/.exec(Buffer.from(headers.buffer, headers.byteOffset, headers.byteLength).toString("latin1"))
  return m === null ? 1 : (Number(m[1]) as QoS)
}

/**
 * A pending message in a stored session: `seq` when its body lives in `$MQTT_msgs`,
 * else topic and payload inline (retained replays, messages routed without a store).
 */
interface StoredPending {
  readonly q: 1 | 2
  readonly s?: number
  readonly t?: string
  readonly d?: string
  readonly r?: boolean
}

/**
 * The `$MQTT_sess` record. `cursor`: every `$MQTT_msgs` message after it that matches
 * a QoS 1/2 subscription is pending for the session too, so messages routed to the
 * session after the record was written are not lost when the record is stale.
 */
export interface SessionRecord {
  readonly v: 1
  readonly id: string
  /** The owner (user) of the session; absent in records written before owners were kept. */
  readonly u?: string
  readonly subs: ReadonlyArray<{ readonly f: string; readonly q: QoS }>
  readonly pid: number
  readonly cursor: number
  readonly out: ReadonlyArray<StoredPending & { readonly p: number; readonly ph: "publish" | "pubrel" }>
  readonly queued: ReadonlyArray<StoredPending>
  /** MQTT 5.0: the Session Expiry Interval (seconds); absent: never expires. */
  readonly x?: number
  /** When the session ends unless resumed (ms since the epoch), once its connection closed. */
  readonly e?: number
  /** 5: an MQTT 5.0 session. */
  readonly l?: 5
  /** MQTT 5.0: its delayed will: due at, topic, subject, payload and header block (base64), QoS, RETAIN, reply subject. */
  readonly w?: { readonly a: number; readonly t: string; readonly s: string; readonly d: string; readonly q: QoS; readonly r: boolean; readonly y?: string; readonly h?: string }
}

const EMPTY = new Uint8Array(0)

/** A stored message by reference; one not stored (no streams behind it) inline. */
const pending = (m: { qos: 1 | 2; topic: string; payload: Uint8Array | undefined; retain: boolean; ref?: string | number | undefined }): StoredPending => {
  if (typeof m.ref === "number") return { q: m.qos, s: m.ref }
  const p = m.payload ?? EMPTY
  return { q: m.qos, t: m.topic, d: Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString("base64"), r: m.retain }
}

const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64")

const willRecord = (w: DelayedWill): NonNullable<SessionRecord["w"]> => ({
  a: w.at, t: w.topic, s: w.subject, d: b64(w.payload), q: w.qos, r: w.retain,
  ...(w.reply === undefined ? {} : { y: w.reply }),
  ...(w.hdr === undefined ? {} : { h: b64(w.hdr) })
})

/** The delayed will of a session record; undefined when it has none (or a damaged one). */
export const delayedWillOf = (r: SessionRecord): DelayedWill | undefined => {
  const w = r.w
  if (w === undefined || typeof w.a !== "number" || typeof w.t !== "string" || typeof w.s !== "string" || typeof w.d !== "string" || (w.q !== 0 && w.q !== 1 && w.q !== 2)) return undefined
  return {
    at: w.a, topic: w.t, subject: w.s, payload: Buffer.from(w.d, "base64"), qos: w.q, retain: w.r === true,
    ...(typeof w.y === "string" ? { reply: w.y } : {}),
    ...(typeof w.h === "string" ? { hdr: Buffer.from(w.h, "base64") } : {})
  }
}

export const encodeSessionRecord = (snap: SessionSnapshot, cursor: number): Buffer => {
  const rec: SessionRecord = {
    v: 1,
    id: snap.clientId,
    ...(snap.owner === undefined ? {} : { u: snap.owner }),
    // Subscriptions have a record each (sessSubscriptionSubject); older records listed them here.
    subs: [],
    pid: snap.lastPacketId,
    cursor,
    // PUBREL state lives in `$MQTT_out`; kept here too so the send order survives.
    out: snap.outbound.map((o) => ({ ...pending(o), p: o.packetId, ph: o.phase })),
    queued: snap.queued.map(pending),
    ...(snap.expiryInterval === undefined ? {} : { x: snap.expiryInterval }),
    ...(snap.endsAt === undefined ? {} : { e: snap.endsAt }),
    ...(snap.protocolVersion === 5 ? { l: 5 as const } : {}),
    ...(snap.will === undefined ? {} : { w: willRecord(snap.will) })
  }
  return Buffer.from(JSON.stringify(rec))
}

export const decodeSessionRecord = (bytes: Uint8Array): SessionRecord | undefined => {
  try {
    const r = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")) as SessionRecord
    if (r?.v !== 1 || typeof r.id !== "string" || (r.u !== undefined && typeof r.u !== "string") || !Array.isArray(r.subs) || !Array.isArray(r.out) || !Array.isArray(r.queued)) return undefined
    if ((r.x !== undefined && typeof r.x !== "number") || (r.e !== undefined && typeof r.e !== "number")) return undefined
    return r
  } catch {
    return undefined
  }
}

/**
 * A pending entry of a record back to a message. A stored one (`s`) is described by what
 * the `$MQTT_msgs` index knows of it (its topic and size): its payload stays on disk until
 * the session fetches it; undefined when it is no longer stored.
 */
export const pendingMessage = (
  e: StoredPending,
  entry: (seq: number) => { topic: string; size: number } | undefined
): { qos: 1 | 2; topic: string; payload: Uint8Array | undefined; size: number; retain: boolean; ref?: number } | undefined => {
  if (e.s !== undefined) {
    const m = entry(e.s)
    return m === undefined ? undefined : { qos: e.q, topic: m.topic, payload: undefined, size: m.size, retain: false, ref: e.s }
  }
  if (e.t === undefined) return undefined
  const payload = Buffer.from(e.d ?? "", "base64")
  return { qos: e.q, topic: e.t, payload, size: payload.length, retain: e.r === true }
}
