// The stream configuration as the JetStream API carries it: decoding a request
// (unknown fields are kept and echoed back, as nats-server does for fields it knows),
// filling nats-server's defaults, validating, and the limits the store enforces.
import { Either, Schema } from "effect"
import type { StoreConfig } from "../stream/config.js"
import { isValidSubject, subjectsCollide } from "../subject/subject.js"
import { SubjectSet } from "../subject/subject-set.js"
import { type ApiError, JsErr } from "./errors.js"

const Int = Schema.Number
const opt = <S extends Schema.Schema.Any>(s: S) => Schema.optional(s)

/** The fields of a stream configuration this server acts on. */
export const StreamConfigRequest = Schema.Struct({
  name: opt(Schema.String),
  subjects: opt(Schema.NullOr(Schema.Array(Schema.String))),
  retention: opt(Schema.Literal("limits", "interest", "workqueue")),
  max_consumers: opt(Int),
  max_msgs: opt(Int),
  max_bytes: opt(Int),
  max_age: opt(Int),
  max_msgs_per_subject: opt(Int),
  max_msg_size: opt(Int),
  discard: opt(Schema.Literal("old", "new")),
  discard_new_per_subject: opt(Schema.Boolean),
  storage: opt(Schema.Literal("file", "memory")),
  num_replicas: opt(Int),
  duplicate_window: opt(Int),
  sealed: opt(Schema.Boolean),
  deny_delete: opt(Schema.Boolean),
  deny_purge: opt(Schema.Boolean),
  allow_rollup_hdrs: opt(Schema.Boolean),
  allow_direct: opt(Schema.Boolean),
  mirror_direct: opt(Schema.Boolean),
  allow_msg_ttl: opt(Schema.Boolean)
})

export interface StreamConfig {
  readonly name: string
  readonly subjects: ReadonlyArray<string>
  readonly retention: "limits" | "interest" | "workqueue"
  readonly max_consumers: number
  readonly max_msgs: number
  readonly max_bytes: number
  /** Nanoseconds. */
  readonly max_age: number
  readonly max_msgs_per_subject: number
  readonly max_msg_size: number
  readonly discard: "old" | "new"
  readonly discard_new_per_subject: boolean
  readonly storage: "file" | "memory"
  readonly num_replicas: number
  /** Nanoseconds. */
  readonly duplicate_window: number
  readonly sealed: boolean
  readonly deny_delete: boolean
  readonly deny_purge: boolean
  readonly allow_rollup_hdrs: boolean
  readonly allow_direct: boolean
  readonly mirror_direct: boolean
  /** Messages may carry a `Nats-TTL` header (per-message TTL, nats-server 2.11); never turned off once on. */
  readonly allow_msg_ttl: boolean
  /** Fields this server does not act on, echoed back as given. */
  readonly [other: string]: unknown
}

export const NANOS_PER_MS = 1_000_000
export const DEFAULT_DUPLICATE_WINDOW_NS = 120_000 * NANOS_PER_MS

const decode = Schema.decodeUnknownEither(StreamConfigRequest, { onExcessProperty: "preserve" })

const neg = (n: number | undefined): number => (n === undefined || n === 0 ? -1 : n)

const validName = (name: string): ApiError | undefined => {
  if (name === "") return JsErr.streamInvalidConfig("stream name is required")
  if (name.includes("/") || name.includes("\\")) return JsErr.streamNameContainsPathSeparators
  if (/[\s.*>]/.test(name)) return JsErr.streamInvalidConfig("stream name can not contain '.', '*', '>'")
  return undefined
}

/**
 * A request body to a complete configuration, or the error nats-server answers.
 * `subjectName` is the stream name from the API subject; with no subjects given, the
 * stream captures its own name (as nats-server does).
 */
export const normalizeStreamConfig = (
  body: unknown,
  subjectName: string,
  create: boolean,
  /** False: the caller checks the subjects itself with a `SubjectsCheck` (spread over turns). */
  checkSubjects = true
): Either.Either<StreamConfig, ApiError> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return Either.left(JsErr.invalidJson)
  const d = decode(body)
  if (Either.isLeft(d)) return Either.left(JsErr.streamInvalidConfig(`invalid stream configuration: ${d.left.message.split("\n")[0]}`))
  const r = d.right as typeof StreamConfigRequest.Type & Record<string, unknown>
  const name = r.name ?? subjectName
  if (name !== subjectName) return Either.left(JsErr.streamMismatch)
  const badName = validName(name)
  if (badName !== undefined) return Either.left(badName)
  const unsupported = unsupportedField(r)
  if (unsupported !== undefined) return Either.left(unsupported)
  const replicas = r.num_replicas === undefined || r.num_replicas === 0 ? 1 : r.num_replicas
  if (replicas > 1) return Either.left(JsErr.replicasNotSupported)
  if (replicas < 0 || replicas > 5) return Either.left(JsErr.streamInvalidConfig("replicas > 5 not supported"))
  const subjects = r.subjects === undefined || r.subjects === null || r.subjects.length === 0 ? [name] : [...r.subjects]
  const cfg: StreamConfig = {
    ...r,
    name,
    subjects,
    retention: r.retention ?? "limits",
    max_consumers: neg(r.max_consumers),
    max_msgs: neg(r.max_msgs),
    max_bytes: neg(r.max_bytes),
    max_age: r.max_age ?? 0,
    max_msgs_per_subject: neg(r.max_msgs_per_subject),
    max_msg_size: neg(r.max_msg_size),
    discard: r.discard ?? "old",
    discard_new_per_subject: r.discard_new_per_subject ?? false,
    storage: r.storage ?? "file",
    num_replicas: replicas,
    duplicate_window: r.duplicate_window ?? 0,
    sealed: r.sealed ?? false,
    deny_delete: r.deny_delete ?? false,
    deny_purge: r.deny_purge ?? false,
    allow_rollup_hdrs: r.allow_rollup_hdrs ?? false,
    allow_direct: r.allow_direct ?? false,
    mirror_direct: r.mirror_direct ?? false,
    allow_msg_ttl: r.allow_msg_ttl ?? false
  }
  const err = validateStreamConfig(cfg, create, checkSubjects)
  return err === undefined ? Either.right(withDuplicateWindow(cfg)) : Either.left(err)
}

/**
 * Fields nats-server acts on that this server cannot honour, refused rather than echoed back
 * as if they were in force (0, null or absent asks for nothing).
 */
const unsupportedField = (r: Record<string, unknown>): ApiError | undefined => {
  const markers = r.subject_delete_marker_ttl
  if (markers !== undefined && markers !== null && markers !== 0)
    return JsErr.streamInvalidConfig("subject delete markers (subject_delete_marker_ttl) are not supported")
  return undefined
}

/** nats-server: the window defaults to 2 minutes, never beyond max_age. */
const withDuplicateWindow = (cfg: StreamConfig): StreamConfig => {
  if (cfg.duplicate_window > 0) return cfg
  const w = cfg.max_age > 0 && cfg.max_age < DEFAULT_DUPLICATE_WINDOW_NS ? cfg.max_age : DEFAULT_DUPLICATE_WINDOW_NS
  return { ...cfg, duplicate_window: w }
}

/**
 * The checks of a stream's subjects: each valid, clear of the JetStream API, and not
 * colliding with another of them. Each subject is checked against a SubjectSet of those
 * before it (near-linear; checking pairs took 10.7 s for 20,000 subjects), and the
 * work can be done a slice at a time, so that a long list need not hold the event loop.
 */
export class SubjectsCheck {
  private next = 0
  private readonly seen = new SubjectSet()

  constructor(private readonly subjects: ReadonlyArray<string>) {}

  /** Checks up to `n` more subjects: the first error, "done" when all passed, undefined when some are left. */
  step(n: number): ApiError | "done" | undefined {
    const end = Math.min(this.subjects.length, this.next + n)
    for (; this.next < end; this.next++) {
      const s = this.subjects[this.next]
      if (!isValidSubject(s)) return JsErr.streamInvalidConfig(`invalid subject '${s}'`)
      if (subjectsCollide(s, "$JS.API.>")) return JsErr.streamInvalidConfig("subjects that overlap with jetstream api require no-ack to be true")
      if (this.seen.collides(s)) return JsErr.streamInvalidConfig("duplicate subjects detected")
      this.seen.add(s)
    }
    return this.next === this.subjects.length ? "done" : undefined
  }
}

export const validateStreamConfig = (cfg: StreamConfig, create: boolean, checkSubjects = true): ApiError | undefined => {
  if (checkSubjects) {
    const r = new SubjectsCheck(cfg.subjects).step(Number.POSITIVE_INFINITY)
    if (r !== "done") return r
  }
  if (cfg.max_age < 0) return JsErr.streamInvalidConfig("max age needs to be >= 0")
  if (cfg.duplicate_window < 0) return JsErr.streamInvalidConfig("duplicates window can not be negative")
  if (cfg.max_age > 0 && cfg.duplicate_window > cfg.max_age)
    return JsErr.streamInvalidConfig("duplicates window can not be larger then max age")
  if (cfg.discard_new_per_subject && (cfg.discard !== "new" || cfg.max_msgs_per_subject <= 0))
    return JsErr.streamInvalidConfig("discard new per subject requires discard new policy to be set and max msgs per subject > 0")
  if (create && cfg.sealed) return JsErr.streamInvalidConfig("stream configuration for create can not be sealed")
  return undefined
}

/** What may change on update; undefined when `next` may replace `cur`. */
export const checkUpdate = (cur: StreamConfig, next: StreamConfig): ApiError | undefined => {
  if (cur.storage !== next.storage) return JsErr.streamUpdate("stream configuration update can not change storage type")
  if (cur.retention !== next.retention) return JsErr.streamUpdate("stream configuration update can not change retention policy")
  if (cur.sealed && !next.sealed) return JsErr.streamUpdate("stream configuration update can not unseal a sealed stream")
  if (cur.deny_delete && !next.deny_delete) return JsErr.streamUpdate("stream configuration update can not cancel deny message deletes")
  if (cur.deny_purge && !next.deny_purge) return JsErr.streamUpdate("stream configuration update can not cancel deny purge")
  // A TTL stored messages already carry must keep counting (nats-server answers 10052 here).
  if (cur.allow_msg_ttl && !next.allow_msg_ttl) return JsErr.streamInvalidConfig("message TTL status can not be disabled")
  return undefined
}

/** Whether any of `subjects` collides with any of `others`: one SubjectSet of `others`, one query per subject. */
export const overlaps = (subjects: ReadonlyArray<string>, others: Iterable<string>): boolean => {
  if (subjects.length === 0) return false
  const set = new SubjectSet(others)
  return subjects.some((a) => set.collides(a))
}

export const toStoreConfig = (cfg: StreamConfig): StoreConfig => ({
  subjects: cfg.subjects,
  max_msgs: cfg.max_msgs,
  max_bytes: cfg.max_bytes,
  max_age_ms: Math.floor(cfg.max_age / NANOS_PER_MS),
  max_msg_size: cfg.max_msg_size,
  max_msgs_per_subject: cfg.max_msgs_per_subject,
  discard: cfg.discard,
  discard_new_per_subject: cfg.discard_new_per_subject,
  storage: cfg.storage,
  allow_msg_ttl: cfg.allow_msg_ttl
})

/** Two configurations are the same stream when their JSON forms agree (key order aside). */
export const sameConfig = (a: StreamConfig, b: StreamConfig): boolean => canonical(a) === canonical(b)

const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    x !== null && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([p], [q]) => (p < q ? -1 : 1)))
      : x
  )

/** RFC 3339 with nanosecond-style fraction, as nats-server writes times. */
export const rfc3339 = (ms: number): string => (ms <= 0 ? "0001-01-01T00:00:00Z" : new Date(ms).toISOString())
