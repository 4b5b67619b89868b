// MQTT topic names and filters <-> NATS subjects. MQTT clients and NATS clients share
// one subject space, so every valid MQTT topic needs exactly one subject and back.
//
// The mapping, level by level (levels are split on `/`, tokens joined with `.`):
//   - a non-empty level: each `.` becomes `//`, everything else is kept;
//   - an empty level (leading `/`, trailing `/`, `a//b`): the token `/`;
//   - in filters, `+` becomes `*` and `#` becomes `>`; `a/#` subscribes to both
//     `a` and `a.>` because MQTT's `#` also matches the parent level.
// Back from a subject: a token exactly `/` is an empty level, `//` is a `.`. A topic
// never yields a token holding a lone `/`, so the mapping is reversible for every
// valid topic (`topic -> subject -> topic` is the identity). A NATS subject whose
// token holds an odd run of `/` (published by a NATS client) keeps the extra `/` in
// the topic: deliverable, just not something an MQTT client could have produced.
//
// Refused, with a reason: characters NATS cannot carry in a subject (space, tab,
// CR, LF, form feed) and levels exactly `*` or `>` (they would become NATS
// wildcards).
import { matchLiteral } from "../subject/subject.js"

export type TopicResult<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly reason: string; readonly ruleId?: string }

const SLASH = 0x2f
const PLUS = 0x2b
const HASH = 0x23
const NUL = 0x00
const DOLLAR = 0x24

/** Topic names and filters are at most 65535 bytes of UTF-8 [MQTT-4.7.3-3]. */
export const MAX_TOPIC_BYTES = 65535

/**
 * Default deepest topic name or filter, in levels (`mqtt.max_topic_levels`): 200, as in
 * mosquitto. A deeper one closes the connection, so a 32,768-level topic never becomes a
 * 32,768-token subject or Sublist branch.
 */
export const DEFAULT_MAX_TOPIC_LEVELS = 200

/** The largest `max_topic_levels` accepted: a 65,535-byte topic has at most 32,768 levels. */
export const MAX_TOPIC_LEVELS_LIMIT = 32768

/** Prefix of the subjects MQTT uses internally; MQTT clients may not subscribe to it. */
export const INTERNAL_SUBJECT_PREFIX = "$MQTT."

const fail = <A>(reason: string, ruleId?: string): TopicResult<A> =>
  ruleId === undefined ? { ok: false, reason } : { ok: false, reason, ruleId }

const okv = <A>(value: A): TopicResult<A> => ({ ok: true, value })

/** Byte length in UTF-8, or -1 on a lone surrogate (not well-formed UTF-8 [MQTT-1.5.3-1]). */
export const utf8Length = (s: string): number => {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0
      if (d < 0xdc00 || d > 0xdfff) return -1
      n += 4
      i++
    } else if (c >= 0xdc00 && c <= 0xdfff) return -1
    else n += 3
  }
  return n
}

const isNatsWhitespace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0c

/** Checks shared by names and filters: length, NUL, UTF-8, carriable characters. */
const checkCommon = (s: string, what: string): TopicResult<void> | undefined => {
  if (s.length === 0) return fail(`${what} must not be empty`, "MQTT-4.7.3-1")
  const bytes = utf8Length(s)
  if (bytes < 0) return fail(`${what} is not well-formed UTF-8`, "MQTT-1.5.3-1")
  if (bytes > MAX_TOPIC_BYTES) return fail(`${what} is longer than ${MAX_TOPIC_BYTES} bytes`, "MQTT-4.7.3-3")
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === NUL) return fail(`${what} must not contain U+0000`, "MQTT-4.7.3-2")
    if (isNatsWhitespace(c)) return fail(`${what} contains whitespace, which a NATS subject cannot carry`)
  }
  return undefined
}

const checkNatsWildcardLevel = (level: string, what: string): TopicResult<void> | undefined =>
  level === "*" || level === ">"
    ? fail(`${what} has a level '${level}', which would be a NATS wildcard`)
    : undefined

/** A topic name as used in PUBLISH (and in a will): no wildcards [MQTT-3.3.2-2]. */
export const validateTopicName = (topic: string): TopicResult<void> => {
  const common = checkCommon(topic, "topic name")
  if (common) return common
  for (let i = 0; i < topic.length; i++) {
    const c = topic.charCodeAt(i)
    if (c === PLUS || c === HASH) return fail("topic name must not contain wildcards", "MQTT-3.3.2-2")
  }
  for (const level of topic.split("/")) {
    const bad = checkNatsWildcardLevel(level, "topic name")
    if (bad) return bad
  }
  return okv(undefined)
}

/** A topic filter as used in SUBSCRIBE/UNSUBSCRIBE. */
export const validateTopicFilter = (filter: string): TopicResult<void> => {
  const common = checkCommon(filter, "topic filter")
  if (common) return common
  const levels = filter.split("/")
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i]
    if (level.includes("#") && (level !== "#" || i !== levels.length - 1)) {
      return fail("'#' must be the last level and alone in it", "MQTT-4.7.1-2")
    }
    if (level.includes("+") && level !== "+") return fail("'+' must occupy a whole level", "MQTT-4.7.1-3")
    const bad = checkNatsWildcardLevel(level, "topic filter")
    if (bad) return bad
  }
  return okv(undefined)
}

const levelToToken = (level: string): string => (level.length === 0 ? "/" : level.replaceAll(".", "//"))

const filterLevelToToken = (level: string): string =>
  level === "+" ? "*" : level === "#" ? ">" : levelToToken(level)

const DOT = 0x2e
const STAR = 0x2a
const GT = 0x3e

/**
 * The common case of `topicToSubject` in one pass: printable ASCII, no `.`, no empty
 * level, nothing to refuse. Undefined sends the topic down the full path.
 */
const plainTopicSubject = (topic: string): string | undefined => {
  const n = topic.length
  if (n === 0 || n > MAX_TOPIC_BYTES) return undefined
  let prev = SLASH // a leading '/' opens an empty level
  for (let i = 0; i < n; i++) {
    const c = topic.charCodeAt(i)
    if (c <= 0x20 || c >= 0x7f || c === DOT || c === PLUS || c === HASH) return undefined
    if (c === SLASH && prev === SLASH) return undefined
    // A whole level '*' or '>' would be a NATS wildcard.
    if ((c === STAR || c === GT) && prev === SLASH && (i + 1 === n || topic.charCodeAt(i + 1) === SLASH)) return undefined
    prev = c
  }
  return prev === SLASH ? undefined : topic.replaceAll("/", ".")
}

/** The NATS subject for a valid topic name. */
export const topicToSubject = (topic: string): TopicResult<string> => {
  const plain = plainTopicSubject(topic)
  if (plain !== undefined) return { ok: true, value: plain }
  const valid = validateTopicName(topic)
  if (!valid.ok) return valid
  return okv(topic.split("/").map(levelToToken).join("."))
}

/**
 * The NATS subjects for a valid topic filter: one, or two when it ends in `#`
 * (the parent subject and `parent.>`); a lone `#` is `>`.
 */
export const filterToSubjects = (filter: string): TopicResult<ReadonlyArray<string>> => {
  const valid = validateTopicFilter(filter)
  if (!valid.ok) return valid
  const levels = filter.split("/")
  if (levels[levels.length - 1] !== "#") return okv([levels.map(filterLevelToToken).join(".")])
  if (levels.length === 1) return okv([">"])
  const parent = levels.slice(0, -1).map(filterLevelToToken).join(".")
  return okv([parent, `${parent}.>`])
}

/**
 * Like `filterToSubjects`, and also refuses filters reaching the internal `$MQTT.`
 * subjects (what a SUBSCRIBE uses).
 */
export const subscriptionSubjects = (filter: string): TopicResult<ReadonlyArray<string>> => {
  const r = filterToSubjects(filter)
  if (!r.ok) return r
  for (const s of r.value) {
    if (s.startsWith(INTERNAL_SUBJECT_PREFIX) || s === "$MQTT") {
      return fail("subscriptions to internal $MQTT subjects are not allowed")
    }
  }
  return r
}

const tokenToLevel = (token: string): string => (token === "/" ? "" : token.replaceAll("//", "."))

/** The MQTT topic for a literal NATS subject (the reverse of `topicToSubject`). */
export const subjectToTopic = (subject: string): string =>
  // Without a '/' no token is an escaped '.' or an empty level: a plain replace does it.
  subject.indexOf("/") < 0 ? subject.replaceAll(".", "/") : subject.split(".").map(tokenToLevel).join("/")

/** True when the filter's first level is a wildcard (`+` or `#`). */
export const filterStartsWithWildcard = (filter: string): boolean => {
  const c = filter.charCodeAt(0)
  return (c === PLUS || c === HASH) && (filter.length === 1 || filter.charCodeAt(1) === SLASH)
}

/**
 * Does the MQTT filter, translated to `subjects`, match the literal `subject`?
 * Topics starting with `$` are not matched by filters starting with a wildcard
 * [MQTT-4.7.2-1].
 */
export const filterMatchesSubject = (filter: string, subjects: ReadonlyArray<string>, subject: string): boolean => {
  if (subject.charCodeAt(0) === DOLLAR && filterStartsWithWildcard(filter)) return false
  for (const s of subjects) if (matchLiteral(subject, s)) return true
  return false
}

/** MQTT matching directly on topic names (used for retained messages and tests). */
export const topicMatchesFilter = (topic: string, filter: string): boolean => {
  const subj = topicToSubject(topic)
  const subs = filterToSubjects(filter)
  return subj.ok && subs.ok && filterMatchesSubject(filter, subs.value, subj.value)
}
