// Subscription options and identifiers as data a session applies (sections 3.3.1.3,
// 3.8.3.1, 3.3.4, 4.8.2): which retained messages a new subscription gets, the RETAIN
// flag of what is forwarded, No Local, the Subscription Identifiers and QoS of one
// delivery to a client whose several subscriptions match, and Shared Subscription filters.
import { subjectToTopic, subscriptionSubjects } from "../topic.js"
import { ReasonCode } from "./reason.js"
import type { Subscription } from "./types.js"

/** A subscription a session holds: its options, and its Subscription Identifier if it came with one. */
export interface HeldSubscription {
  readonly options: Subscription
  readonly identifier?: number | undefined
}

/**
 * Are the retained messages matching a new SUBSCRIBE's filter sent? Retain Handling 0:
 * yes [MQTT-3.3.1-9]; 1: only when the subscription did not exist before
 * [MQTT-3.3.1-10]; 2: no [MQTT-3.3.1-11]. A Shared Subscription gets none: they go to
 * new Non-shared Subscriptions only (3.3.1.3).
 */
export const sendsRetained = (options: Pick<Subscription, "rh" | "topic">, existed: boolean): boolean => {
  if (parseShared(options.topic).shared) return false
  return options.rh === 0 || (options.rh === 1 && !existed)
}

/**
 * The RETAIN flag of an Application Message forwarded to a subscription: as published
 * with Retain As Published [MQTT-3.3.1-13], else 0 [MQTT-3.3.1-12]. Retained messages sent
 * because of a new subscription always carry 1 (3.3.1.3): pass `forNewSubscription`.
 */
export const forwardedRetain = (rap: boolean, published: boolean, forNewSubscription = false): boolean =>
  forNewSubscription || (rap && published)

/** No Local: a message is not forwarded to the connection whose Client Identifier published it [MQTT-3.8.3-3]. */
export const excludedByNoLocal = (nl: boolean, publisherClientId: string | undefined, subscriberClientId: string): boolean =>
  nl && publisherClientId === subscriberClientId

/** One PUBLISH to a client for a message that matched some of its (non-shared) subscriptions. */
export interface Delivery {
  /** The message's QoS capped by the best matching subscription's [MQTT-3.3.4-2]. */
  readonly qos: number
  readonly retain: boolean
  /** Of every matching subscription that has one, in the order given [MQTT-3.3.4-3], [MQTT-3.3.4-4]. */
  readonly subscriptionIdentifiers: ReadonlyArray<number> | undefined
}

/**
 * The single copy the server sends a client when a message (`qos`, `retain` as
 * published, from `publisherClientId`) matches `matches`, its non-shared subscriptions
 * on it; undefined when No Local leaves none. The RETAIN flag follows Retain As
 * Published when any matching subscription asks for it.
 */
export const deliveryFor = (
  matches: ReadonlyArray<HeldSubscription>,
  message: { readonly qos: number; readonly retain: boolean; readonly publisherClientId?: string | undefined },
  subscriberClientId: string
): Delivery | undefined => {
  let best = -1
  let rap = false
  let ids: Array<number> | undefined
  for (const m of matches) {
    if (excludedByNoLocal(m.options.nl, message.publisherClientId, subscriberClientId)) continue
    if (m.options.qos > best) best = m.options.qos
    rap ||= m.options.rap
    if (m.identifier !== undefined) (ids ??= []).push(m.identifier)
  }
  if (best < 0) return undefined
  return { qos: Math.min(message.qos, best), retain: forwardedRetain(rap, message.retain), subscriptionIdentifiers: ids }
}

// ---- Shared Subscriptions ----

const SHARE = "$share/"

/** A SUBSCRIBE or UNSUBSCRIBE filter read: shared (`group` is the ShareName) or not, or refused. */
export type SharedFilter =
  | { readonly ok: true; readonly shared: false; readonly filter: string }
  | { readonly ok: true; readonly shared: true; readonly group: string; readonly filter: string }
  | { readonly ok: false; readonly shared: true; readonly code: typeof ReasonCode.TopicFilterInvalid; readonly reason: string; readonly ruleId?: string }

const isWhitespace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0c

const refuse = (reason: string, ruleId?: string): SharedFilter =>
  ({ ok: false, shared: true, code: ReasonCode.TopicFilterInvalid, reason, ...(ruleId === undefined ? {} : { ruleId }) })

/**
 * Splits `$share/{ShareName}/{filter}` (4.8.2): a ShareName of at least one character
 * [MQTT-4.8.2-1] without `/`, `+` or `#`, followed by `/` and a filter [MQTT-4.8.2-2]. The
 * ShareName becomes a NATS queue group, so it may not hold whitespace either. A filter not
 * starting with `$share/` is not shared. Refusals are per filter (SUBACK 0x8F).
 */
export const parseShared = (topicFilter: string): SharedFilter => {
  if (!topicFilter.startsWith(SHARE)) return { ok: true, shared: false, filter: topicFilter }
  const slash = topicFilter.indexOf("/", SHARE.length)
  const group = topicFilter.slice(SHARE.length, slash < 0 ? undefined : slash)
  if (group.length === 0) return refuse("Shared Subscription without a ShareName", "MQTT-4.8.2-1")
  if (group.includes("+") || group.includes("#")) return refuse(`ShareName ${JSON.stringify(group)} holds a wildcard`, "MQTT-4.8.2-2")
  if (slash < 0 || slash === topicFilter.length - 1) return refuse("Shared Subscription without a Topic Filter after its ShareName", "MQTT-4.8.2-2")
  for (let i = 0; i < group.length; i++) {
    if (isWhitespace(group.charCodeAt(i))) return refuse(`ShareName ${JSON.stringify(group)} holds whitespace, which a NATS queue group cannot carry`)
  }
  return { ok: true, shared: true, group, filter: topicFilter.slice(slash + 1) }
}

/** What a SUBSCRIBE filter becomes on NATS: subjects, and the queue group of a shared one. */
export type NatsSubscription =
  | { readonly ok: true; readonly subjects: ReadonlyArray<string>; readonly queue: string | undefined }
  | { readonly ok: false; readonly code: typeof ReasonCode.TopicFilterInvalid; readonly reason: string; readonly ruleId?: string }

/**
 * A SUBSCRIBE filter as NATS subscriptions: `$share/G/filter` is the queue group `G` on
 * the filter's subjects, so MQTT shared subscribers and NATS queue subscribers of `G`
 * split the messages, each to exactly one member; any other filter has no queue group.
 * Invalid filters are 0x8F (Topic Filter invalid).
 */
export const natsSubscription = (topicFilter: string): NatsSubscription => {
  const s = parseShared(topicFilter)
  if (!s.ok) return s
  const subjects = subscriptionSubjects(s.filter)
  if (!subjects.ok) return { ok: false, code: ReasonCode.TopicFilterInvalid, reason: subjects.reason, ...(subjects.ruleId === undefined ? {} : { ruleId: subjects.ruleId }) }
  return { ok: true, subjects: subjects.value, queue: s.shared ? s.group : undefined }
}

/**
 * The MQTT filter of a NATS queue subscription (`subject` in queue group `queue`), as
 * an MQTT 5 client would subscribe to share it: `$share/{queue}/{filter}`; undefined when
 * the queue name cannot be a ShareName.
 */
export const sharedFilterOf = (subject: string, queue: string): string | undefined => {
  const s = parseShared(`${SHARE}${queue}/x`)
  if (!s.ok || queue.includes("/")) return undefined
  // NATS wildcards are whole tokens, and no MQTT topic has a level `*` or `>`: they map back unambiguously
  const filter = subjectToTopic(subject).split("/").map((l) => (l === "*" ? "+" : l === ">" ? "#" : l)).join("/")
  return `${SHARE}${queue}/${filter}`
}
