// The publish-time rules of a stream, pure and synchronous: de-duplication by message
// id within the duplicate window, the expected-* checks (stream, last sequence, last
// sequence on the subject, last message id), rollups and the per-message TTL (`Nats-TTL`). `decidePublish(state, …,
// message, now)` says what to do with one publish; the shell does it (stores the
// message and applies the rollup's purge, answers the duplicate, refuses the publish)
// and reports back what it stored (`published`) or later took back (`unpublished`).
// The state is updated in place: the publish path allocates nothing for it, and a
// message without JetStream headers is decided without allocating at all.
import type { PurgeOptions } from "./retention.js"
import { parseTtl } from "./ttl.js"

const NANOS_PER_MS = 1_000_000

/** The stream configuration the rules read (JetStream's field names; the window in nanoseconds). */
export interface PublishRules {
  readonly name: string
  readonly duplicate_window: number
  readonly sealed: boolean
  readonly allow_rollup_hdrs: boolean
  readonly allow_msg_ttl: boolean
}

/** What the rules read of the stream's store at the time of the publish. */
export interface PublishView {
  /** Writes fail for want of space now. */
  readonly outOfSpace: () => boolean
  readonly lastSeq: () => number
  /** The sequence of the last message stored on exactly `subject`; 0 when none is. */
  readonly lastSeqOf: (subject: string) => number
}

/**
 * The JetStream headers of a publish (`Nats-Msg-Id`, `Nats-Expected-Stream`,
 * `-Last-Sequence`, `-Last-Subject-Sequence`, `-Last-Msg-Id`, `Nats-Rollup`), as
 * sent; undefined where absent.
 */
export interface PublishHeaders {
  readonly msgId: string | undefined
  readonly expectedStream: string | undefined
  readonly expectedLastSeq: string | undefined
  readonly expectedLastSubjSeq: string | undefined
  readonly expectedLastMsgId: string | undefined
  readonly rollup: string | undefined
  /** `Nats-TTL`, the message's own time to live (see ttl.ts). */
  readonly ttl: string | undefined
}

/** The message ids seen within the duplicate window, and the last one stored. */
export interface PublishState {
  /** Message id -> its sequence and when it was stored (ms); insertion order is time order. */
  readonly ids: Map<string, MsgIdEntry>
  lastMsgId: string
}

export interface MsgIdEntry {
  readonly seq: number
  readonly ts: number
}

export const makePublishState = (): PublishState => ({ ids: new Map(), lastMsgId: "" })

export type PublishDecision =
  /**
   * Store it (with its TTL in seconds, TTL_NEVER, or 0 for none); then purge per `rollup`
   * (keeping the new message) and report it with `published`.
   */
  | { readonly type: "store"; readonly msgId: string; readonly rollup: PurgeOptions | undefined; readonly ttl: number }
  /** Already stored as `seq` within the duplicate window: acknowledge it as a duplicate. */
  | { readonly type: "duplicate"; readonly seq: number; readonly msgId: string }
  /** The store cannot take writes: refused before anything is stored. */
  | { readonly type: "noSpace" }
  | { readonly type: "sealed" }
  | { readonly type: "wrongStream" }
  /** An expected last sequence (of the stream or of the subject) that is not `last`. */
  | { readonly type: "wrongLastSeq"; readonly last: number }
  | { readonly type: "wrongLastMsgId"; readonly last: string }
  | { readonly type: "rollupNotPermitted" }
  | { readonly type: "rollupInvalid"; readonly value: string }
  /** A `Nats-TTL` that is not a TTL (or under a second). */
  | { readonly type: "ttlInvalid" }
  /** A `Nats-TTL` on a stream without `allow_msg_ttl`. */
  | { readonly type: "ttlDisabled" }

/** The refusals among the decisions. */
export type PublishRefusal = Exclude<PublishDecision, { readonly type: "store" | "duplicate" | "noSpace" }>

const STORE_PLAIN: PublishDecision = { type: "store", msgId: "", rollup: undefined, ttl: 0 }
const NO_SPACE: PublishDecision = { type: "noSpace" }
const SEALED: PublishDecision = { type: "sealed" }
const TTL_INVALID: PublishDecision = { type: "ttlInvalid" }
const TTL_DISABLED: PublishDecision = { type: "ttlDisabled" }

/**
 * What to do with a publish on `subject`, in nats-server's order: a duplicate is
 * acknowledged whatever else holds; a full store refuses; then the stream's own rules
 * (sealed) and the publisher's expectations; a valid rollup is stored and purges; a TTL
 * must be valid and the stream must allow it.
 * Drops the ids that left the duplicate window on the way.
 */
export const decidePublish = (
  state: PublishState,
  rules: PublishRules,
  view: PublishView,
  subject: string,
  headers: PublishHeaders | undefined,
  now: number
): PublishDecision => {
  const msgId = headers?.msgId ?? ""
  if (msgId !== "") {
    const dup = duplicateOf(state, rules, msgId, now)
    if (dup !== undefined) return { type: "duplicate", seq: dup, msgId }
  }
  if (view.outOfSpace()) return NO_SPACE
  if (rules.sealed) return SEALED
  if (headers === undefined) return STORE_PLAIN
  const { expectedStream, expectedLastSeq, expectedLastSubjSeq, expectedLastMsgId, rollup, ttl: ttlValue } = headers
  if (expectedStream !== undefined && expectedStream !== rules.name) return { type: "wrongStream" }
  if (expectedLastSeq !== undefined) {
    const last = view.lastSeq()
    if (Number(expectedLastSeq) !== last) return { type: "wrongLastSeq", last }
  }
  if (expectedLastSubjSeq !== undefined) {
    const last = view.lastSeqOf(subject)
    if (Number(expectedLastSubjSeq) !== last) return { type: "wrongLastSeq", last }
  }
  if (expectedLastMsgId !== undefined && expectedLastMsgId !== state.lastMsgId) return { type: "wrongLastMsgId", last: state.lastMsgId }
  if (rollup !== undefined) {
    if (!rules.allow_rollup_hdrs) return { type: "rollupNotPermitted" }
    if (rollup !== "sub" && rollup !== "all") return { type: "rollupInvalid", value: rollup }
  }
  let ttl = 0
  if (ttlValue !== undefined) {
    const parsed = parseTtl(ttlValue)
    if (parsed === undefined) return TTL_INVALID
    if (!rules.allow_msg_ttl) return TTL_DISABLED
    ttl = parsed
  }
  if (msgId === "" && rollup === undefined && ttl === 0) return STORE_PLAIN
  return { type: "store", msgId, rollup: rollup === undefined ? undefined : rollup === "all" ? { keep: 1 } : { subject, keep: 1 }, ttl }
}

/** The sequence `msgId` was stored as within the window; forgets the ids stored before it. */
const duplicateOf = (state: PublishState, rules: PublishRules, msgId: string, now: number): number | undefined => {
  const windowMs = rules.duplicate_window / NANOS_PER_MS
  for (const [id, { ts }] of state.ids) {
    if (ts > now - windowMs) break
    state.ids.delete(id)
  }
  return state.ids.get(msgId)?.seq
}

/** The message with `msgId` ("" for none) was stored as `seq` at `now` (or took `seq` without being kept). */
export const published = (state: PublishState, msgId: string, seq: number, now: number): void => {
  if (msgId === "") return
  state.ids.set(msgId, { seq, ts: now })
  state.lastMsgId = msgId
}

/**
 * The message stored as `seq` with `msgId` was taken back (its write failed and its
 * publisher was refused): it is not a duplicate of anything, so its id may come again.
 */
export const unpublished = (state: PublishState, msgId: string, seq: number): void => {
  if (msgId === "" || state.ids.get(msgId)?.seq !== seq) return
  state.ids.delete(msgId)
  if (state.lastMsgId === msgId) state.lastMsgId = [...state.ids.keys()].pop() ?? ""
}

/**
 * After a restart: the ids of the messages stored within the window, found newest
 * first, so a publisher retrying across the restart is still de-duplicated.
 */
export const restoreMsgIds = (state: PublishState, newestFirst: ReadonlyArray<{ readonly msgId: string; readonly seq: number; readonly ts: number }>): void => {
  for (let i = newestFirst.length - 1; i >= 0; i--) {
    const { msgId, seq, ts } = newestFirst[i]
    if (!state.ids.has(msgId)) state.ids.set(msgId, { seq, ts })
    state.lastMsgId = msgId
  }
}
