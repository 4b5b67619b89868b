// How MQTT 5 messages cross to NATS and back (issue #19, item 4), as pure functions the
// bridge calls. The rules:
//
// * User Properties <-> NATS headers, in order, repeats kept. A property whose name is a
//   plain header name (printable ASCII, no `:`) and not reserved, and whose value a
//   header line carries unchanged (no CR, LF, NUL, no leading or trailing blank), is the
//   header `Name: value`. Any other is `Mqtt-User-Property: <name>=<value>`, both parts
//   percent-encoded (encodeURIComponent), so nothing is lost. Reserved names, always
//   escaped: `Content-Type` and every name starting `Mqtt-` or `Nmqtt-` (case-insensitive),
//   so an MQTT client cannot forge the bridge's own headers nor the cluster's (`Nmqtt-Pub`
//   carries the QoS between servers), and `Nmqtt-` headers never reach MQTT clients.
// * Content Type <-> `Content-Type`; Payload Format Indicator <-> `Mqtt-Payload-Format`
//   (0 or 1); Message Expiry Interval <-> `Mqtt-Message-Expiry` (seconds left);
//   Correlation Data <-> `Mqtt-Correlation-Data` (base64) when the reply subject does not
//   carry it. A Content Type a header line cannot carry unchanged goes as
//   `Mqtt-Content-Type`, percent-encoded. Back from NATS, a well-known header whose value does not parse, or a second
//   `Content-Type`, stays a User Property under its own name.
// * Request/response: a PUBLISH with a Response Topic reaches NATS with a reply subject.
//   Without Correlation Data it is the Response Topic's subject, so a NATS service's
//   `respond` is an ordinary publish that MQTT subscribers of the topic receive. With
//   Correlation Data of up to 512 bytes it is `$MQTT.rr.b<base64url>.<subject>`: the bridge
//   subscribes to `$MQTT.rr.>` and turns a response there into a PUBLISH on the Response
//   Topic carrying the Correlation Data (MQTT clients cannot subscribe to `$MQTT.`). Longer
//   Correlation Data goes as a header, with the plain reply subject. A NATS message with a
//   reply subject reaches MQTT 5 clients with that subject, as a topic, as its Response
//   Topic: their answer, published there, is routed to the NATS requester.
// * `$share/G/filter` <-> queue group `G` on the filter's subjects (subscription.ts).
// * NATS outcomes -> reason codes: no subscriber (or no responders, 503) is 0x10 No
//   matching subscribers; a permission refusal 0x87; max_payload or a stream limit 0x97
//   Quota exceeded; another store failure 0x80.
import { subjectToTopic, topicToSubject } from "../topic.js"
import { decodeUtf8 } from "./reader.js"
import { ReasonCode } from "./reason.js"
import type { MessageProperties } from "./types.js"

export const NatsHeader = {
  contentType: "Content-Type",
  /** A Content Type no header line carries unchanged, percent-encoded. */
  escapedContentType: "Mqtt-Content-Type",
  payloadFormat: "Mqtt-Payload-Format",
  messageExpiry: "Mqtt-Message-Expiry",
  correlationData: "Mqtt-Correlation-Data",
  userProperty: "Mqtt-User-Property"
} as const

/** Reply subjects carrying a Response Topic and Correlation Data: `$MQTT.rr.b<base64url>.<response topic subject>`. */
export const RESPONSE_SUBJECT_PREFIX = "$MQTT.rr."

/** Correlation Data longer than this goes as a header, not in the reply subject (NATS clients bound control lines). */
export const MAX_CORRELATION_IN_REPLY = 512

export type Header = readonly [string, string]

// ---- user properties <-> header lines ----

const isPlainName = (k: string): boolean => {
  if (k.length === 0) return false
  for (let i = 0; i < k.length; i++) {
    const c = k.charCodeAt(i)
    if (c <= 0x20 || c >= 0x7f || c === 0x3a) return false
  }
  const lower = k.toLowerCase()
  return lower !== "content-type" && !lower.startsWith("mqtt-") && !lower.startsWith(CLUSTER_PREFIX)
}

/**
 * Headers the servers of a cluster mark MQTT messages with (`Nmqtt-Pub`: the QoS an MQTT
 * client published at, as nats-server writes it): never a User Property either way, so a
 * client can neither forge nor read them.
 */
const CLUSTER_PREFIX = "nmqtt-"

const isBlank = (c: number): boolean => c === 0x20 || c === 0x09

/** A value a header line carries unchanged: NATS clients trim values (nats.js with String.trim), and a line ends at CR or LF. */
const isPlainValue = (v: string): boolean => {
  if (v !== v.trim()) return false
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i)
    if (c === 0x0d || c === 0x0a || c === 0x00) return false
  }
  return true
}

/** The header line of one User Property. */
export const userPropertyHeader = (name: string, value: string): Header =>
  isPlainName(name) && isPlainValue(value)
    ? [name, value]
    : [NatsHeader.userProperty, `${encodeURIComponent(name)}=${encodeURIComponent(value)}`]

/** Percent-decoded text, or undefined when it is not valid percent-encoding or not an MQTT string (U+0000). */
const unescapeText = (v: string): string | undefined => {
  try {
    const s = decodeURIComponent(v)
    return s.includes("\u0000") ? undefined : s
  } catch {
    return undefined
  }
}

const unescapeUserProperty = (v: string): Header | undefined => {
  const eq = v.indexOf("=")
  if (eq < 0 || v.indexOf("=", eq + 1) >= 0) return undefined
  const name = unescapeText(v.slice(0, eq))
  const value = unescapeText(v.slice(eq + 1))
  return name === undefined || value === undefined ? undefined : [name, value]
}

// ---- reply subjects ----

const isBase64Url = (s: string): boolean => /^[A-Za-z0-9_-]*$/.test(s)

/** The reply subject of a request with this Response Topic and Correlation Data; undefined when the topic cannot be a subject. */
export const replySubjectFor = (responseTopic: string, correlationData: Uint8Array | undefined): string | undefined => {
  const subject = topicToSubject(responseTopic)
  if (!subject.ok) return undefined
  if (correlationData === undefined || correlationData.length > MAX_CORRELATION_IN_REPLY) return subject.value
  return `${RESPONSE_SUBJECT_PREFIX}b${Buffer.from(correlationData).toString("base64url")}.${subject.value}`
}

/** The Response Topic and Correlation Data a `$MQTT.rr.` subject carries; undefined for any other subject. */
export const parseResponseSubject = (subject: string): { readonly responseTopic: string; readonly correlationData: Buffer } | undefined => {
  if (!subject.startsWith(RESPONSE_SUBJECT_PREFIX)) return undefined
  const dot = subject.indexOf(".", RESPONSE_SUBJECT_PREFIX.length)
  if (dot < 0 || dot === subject.length - 1) return undefined
  const token = subject.slice(RESPONSE_SUBJECT_PREFIX.length, dot)
  if (token[0] !== "b" || !isBase64Url(token.slice(1))) return undefined
  const correlationData = Buffer.from(token.slice(1), "base64url")
  // only the canonical encoding: one reply subject per Correlation Data
  if (correlationData.toString("base64url") !== token.slice(1)) return undefined
  return { responseTopic: subjectToTopic(subject.slice(dot + 1)), correlationData }
}

// ---- MQTT -> NATS ----

export interface ToNats {
  readonly subject: string
  readonly reply: string | undefined
  /** Header lines in order; empty: the message goes without headers. */
  readonly headers: ReadonlyArray<Header>
}

export type ToNatsResult =
  | ({ readonly ok: true } & ToNats)
  | { readonly ok: false; readonly code: typeof ReasonCode.TopicNameInvalid | typeof ReasonCode.ImplementationSpecificError; readonly reason: string }

/**
 * A PUBLISH (its Topic Name after alias resolution, and its properties) as a NATS
 * message. Refused: a topic NATS cannot carry (0x90), a Response Topic that cannot be a
 * reply subject (0x83, the request could never be answered).
 */
export const publishToNats = (topic: string, p: MessageProperties): ToNatsResult => {
  const subject = topicToSubject(topic)
  if (!subject.ok) return { ok: false, code: ReasonCode.TopicNameInvalid, reason: subject.reason }
  let reply: string | undefined
  let correlationInReply = false
  if (p.responseTopic !== undefined) {
    reply = replySubjectFor(p.responseTopic, p.correlationData)
    if (reply === undefined) return { ok: false, code: ReasonCode.ImplementationSpecificError, reason: `Response Topic ${JSON.stringify(p.responseTopic)} cannot be a NATS reply subject` }
    correlationInReply = reply.startsWith(RESPONSE_SUBJECT_PREFIX)
  }
  const headers: Array<Header> = []
  if (p.contentType !== undefined) {
    headers.push(isPlainValue(p.contentType) ? [NatsHeader.contentType, p.contentType] : [NatsHeader.escapedContentType, encodeURIComponent(p.contentType)])
  }
  if (p.payloadFormatIndicator !== undefined) headers.push([NatsHeader.payloadFormat, p.payloadFormatIndicator ? "1" : "0"])
  if (p.messageExpiryInterval !== undefined) headers.push([NatsHeader.messageExpiry, String(p.messageExpiryInterval)])
  if (p.correlationData !== undefined && !correlationInReply) headers.push([NatsHeader.correlationData, Buffer.from(p.correlationData).toString("base64")])
  if (p.userProperties !== undefined) for (const [k, v] of p.userProperties) headers.push(userPropertyHeader(k, v))
  return { ok: true, subject: subject.value, reply, headers }
}

/** A NATS header block (`NATS/1.0`, the lines, a blank line) in UTF-8; undefined for no headers. */
export const headerBlock = (headers: ReadonlyArray<Header>, status?: string): Buffer | undefined => {
  if (headers.length === 0 && status === undefined) return undefined
  let s = status === undefined ? "NATS/1.0\r\n" : `NATS/1.0 ${status}\r\n`
  for (const [k, v] of headers) s += `${k}: ${v}\r\n`
  return Buffer.from(`${s}\r\n`, "utf8")
}

// ---- NATS -> MQTT ----

export interface ParsedHeaders {
  /** The status code of the first line (`NATS/1.0 503`), if any. */
  readonly status: number | undefined
  readonly headers: ReadonlyArray<Header>
  /** Lines dropped: not `Name: value`, or not text an MQTT string can hold (not UTF-8, U+0000). */
  readonly dropped: number
}

const trimBlanks = (s: string): string => {
  let a = 0
  let b = s.length
  while (a < b && isBlank(s.charCodeAt(a))) a++
  while (b > a && isBlank(s.charCodeAt(b - 1))) b--
  return s.slice(a, b)
}

/** The lines of a NATS header block, in order, repeats kept. */
export const parseHeaderBlock = (block: Uint8Array): ParsedHeaders => {
  const buf = Buffer.from(block.buffer, block.byteOffset, block.byteLength)
  const headers: Array<Header> = []
  let status: number | undefined
  let dropped = 0
  let start = 0
  let first = true
  while (start < buf.length) {
    let end = buf.indexOf("\r\n", start, "latin1")
    if (end < 0) end = buf.length
    if (first) {
      const m = /^NATS\/1\.0 (\d{3})/.exec(buf.toString("latin1", start, end))
      if (m !== null) status = Number(m[1])
      first = false
    } else if (end > start) {
      let line: string | undefined
      try {
        line = decodeUtf8(buf, start, end, "header")
      } catch {
        line = undefined
      }
      const colon = line?.indexOf(":") ?? -1
      if (line === undefined || colon <= 0) dropped++
      else headers.push([trimBlanks(line.slice(0, colon)), trimBlanks(line.slice(colon + 1))])
    }
    start = end + 2
  }
  return { status, headers, dropped }
}

export interface FromNats {
  readonly topic: string
  readonly properties: MessageProperties
  /** A status message (`NATS/1.0 503` …) is not application data: the bridge does not deliver it. */
  readonly status: number | undefined
  /** Header lines that could not become properties (see `parseHeaderBlock`). */
  readonly dropped: number
}

const U32_DECIMAL = /^(0|[1-9][0-9]{0,9})$/
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

const correlationOf = (v: string): Buffer | undefined => {
  if (!BASE64.test(v) || v.length % 4 !== 0) return undefined
  const b = Buffer.from(v, "base64")
  return b.toString("base64") === v ? b : undefined
}

type Building = { -readonly [K in keyof MessageProperties]: MessageProperties[K] }

const isExpiryInterval = (v: string): boolean => U32_DECIMAL.test(v) && Number(v) <= 0xffff_ffff

/**
 * The Message Expiry Interval a NATS header block carries (`Mqtt-Message-Expiry`), as
 * `natsToPublish` would read it, without making the other properties; undefined: none.
 */
export const messageExpiryOf = (headers: Uint8Array | undefined): number | undefined => {
  if (headers === undefined || headers.length === 0) return undefined
  for (const [k, v] of parseHeaderBlock(headers).headers) if (k.toLowerCase() === "mqtt-message-expiry" && isExpiryInterval(v)) return Number(v)
  return undefined
}

/** Takes a well-known header into `p` (or an escaped User Property into `user`); false when it stays a plain User Property. */
const wellKnown = (p: Building, name: string, v: string, user: Array<Header>): boolean => {
  switch (name) {
    case "content-type":
      if (p.contentType !== undefined) return false
      p.contentType = v
      return true
    case "mqtt-content-type": {
      const text = p.contentType === undefined ? unescapeText(v) : undefined
      if (text !== undefined) p.contentType = text
      return text !== undefined
    }
    case "mqtt-payload-format":
      if (p.payloadFormatIndicator !== undefined || (v !== "0" && v !== "1")) return false
      p.payloadFormatIndicator = v === "1"
      return true
    case "mqtt-message-expiry":
      if (p.messageExpiryInterval !== undefined || !isExpiryInterval(v)) return false
      p.messageExpiryInterval = Number(v)
      return true
    case "mqtt-correlation-data": {
      const data = p.correlationData === undefined ? correlationOf(v) : undefined
      if (data !== undefined) p.correlationData = data
      return data !== undefined
    }
    case "mqtt-user-property": {
      const pair = unescapeUserProperty(v)
      if (pair !== undefined) user.push(pair)
      return pair !== undefined
    }
    default:
      return false
  }
}

/** Does a reply subject survive the trip to a topic and back, so an MQTT answer reaches the NATS requester? */
const responseTopicOf = (reply: string): string | undefined => {
  const topic = subjectToTopic(reply)
  const back = topicToSubject(topic)
  return back.ok && back.value === reply && !topic.includes("+") && !topic.includes("#") ? topic : undefined
}

/**
 * A NATS message (subject, reply subject, header block) as what an MQTT 5 PUBLISH
 * carries: its topic and message properties. A message on a `$MQTT.rr.` subject (the
 * response to an MQTT request) is addressed to the Response Topic it carries, with its
 * Correlation Data.
 */
export const natsToPublish = (subject: string, reply: string | undefined, headers: Uint8Array | undefined): FromNats => {
  const parsed = headers === undefined || headers.length === 0 ? undefined : parseHeaderBlock(headers)
  const response = parseResponseSubject(subject)
  const p: Building = {}
  const user: Array<Header> = []
  for (const [k, v] of parsed?.headers ?? []) {
    const name = k.toLowerCase()
    if (!name.startsWith(CLUSTER_PREFIX) && !wellKnown(p, name, v, user)) user.push([k, v])
  }
  if (user.length > 0) p.userProperties = user
  if (response !== undefined) p.correlationData = response.correlationData
  else if (reply !== undefined) {
    const rr = parseResponseSubject(reply)
    const topic = rr === undefined ? responseTopicOf(reply) : rr.responseTopic
    if (topic !== undefined) p.responseTopic = topic
    if (rr !== undefined) p.correlationData = rr.correlationData
  }
  return {
    topic: response === undefined ? subjectToTopic(subject) : response.responseTopic,
    properties: p,
    status: parsed?.status,
    dropped: parsed?.dropped ?? 0
  }
}

// ---- NATS outcomes -> reason codes ----

/** What became of a message an MQTT client published, on the NATS side. */
export type NatsOutcome =
  /** Routed by core NATS to this many subscriptions (0: nobody). */
  | { readonly kind: "routed"; readonly receivers: number }
  /** The answer to a request was a 503 status: no responders. */
  | { readonly kind: "noResponders" }
  /** The publisher's permissions refuse the subject. */
  | { readonly kind: "permissionDenied" }
  /** Larger than max_payload. */
  | { readonly kind: "maxPayload" }
  /** A stream stored it. */
  | { readonly kind: "stored" }
  /** A stream refused it: `limit` for its limits (max messages, bytes, …), else another failure. */
  | { readonly kind: "storeFailed"; readonly limit: boolean }

/** The PUBACK or PUBREC reason code for an outcome (3.4.2.1). */
export const ackReasonFor = (o: NatsOutcome): number => {
  switch (o.kind) {
    case "routed":
      return o.receivers === 0 ? ReasonCode.NoMatchingSubscribers : ReasonCode.Success
    case "noResponders":
      return ReasonCode.NoMatchingSubscribers
    case "permissionDenied":
      return ReasonCode.NotAuthorized
    case "maxPayload":
      return ReasonCode.QuotaExceeded
    case "stored":
      return ReasonCode.Success
    case "storeFailed":
      return o.limit ? ReasonCode.QuotaExceeded : ReasonCode.UnspecifiedError
  }
}

/** The NATS status code of a no-responders answer. */
export const NO_RESPONDERS_STATUS = 503
