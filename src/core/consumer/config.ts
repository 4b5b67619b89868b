// Consumer configuration as the JetStream API sends it (durations in ns), the
// defaults nats-server fills in, and validation answering with JetStream's
// error codes so clients can switch on `err_code`.
import { isValidSubject, subjectHasWildcard, subjectsCollide } from "../subject/subject.js"

export type DeliverPolicy = "all" | "last" | "new" | "by_start_sequence" | "by_start_time" | "last_per_subject"
export type AckPolicy = "none" | "all" | "explicit"
export type ReplayPolicy = "instant" | "original"

/** The JSON body of `CONSUMER.CREATE` (`config`), field names as on the wire. */
export interface ConsumerConfig {
  readonly durable_name?: string
  readonly name?: string
  readonly description?: string
  readonly deliver_policy?: DeliverPolicy
  readonly opt_start_seq?: number
  /** RFC 3339 time. */
  readonly opt_start_time?: string
  readonly ack_policy?: AckPolicy
  /** ns */
  readonly ack_wait?: number
  readonly max_deliver?: number
  /** ns, one per redelivery; the last repeats. */
  readonly backoff?: ReadonlyArray<number>
  readonly filter_subject?: string
  readonly filter_subjects?: ReadonlyArray<string>
  readonly replay_policy?: ReplayPolicy
  readonly max_ack_pending?: number
  readonly max_waiting?: number
  readonly max_batch?: number
  /** ns */
  readonly max_expires?: number
  readonly max_bytes?: number
  readonly headers_only?: boolean
  readonly deliver_subject?: string
  readonly deliver_group?: string
  readonly flow_control?: boolean
  /** ns */
  readonly idle_heartbeat?: number
  /** ns */
  readonly inactive_threshold?: number
  readonly num_replicas?: number
  readonly mem_storage?: boolean
  readonly sample_freq?: string
  readonly metadata?: Readonly<Record<string, string>>
}

/** JetStream API error body: `{"error": ApiError}`. */
export interface ApiError {
  readonly code: number
  readonly err_code: number
  readonly description: string
}

const bad = (err_code: number, description: string): ApiError => ({ code: 400, err_code, description })

export const NS_PER_MS = 1_000_000
export const DEFAULT_ACK_WAIT_NS = 30_000 * NS_PER_MS
export const DEFAULT_MAX_ACK_PENDING = 1000
export const DEFAULT_MAX_WAITING = 512
export const DEFAULT_EPHEMERAL_INACTIVE_NS = 5_000 * NS_PER_MS
export const MIN_IDLE_HEARTBEAT_NS = 100 * NS_PER_MS

export const isPushConfig = (cfg: ConsumerConfig): boolean => (cfg.deliver_subject ?? "") !== ""
export const isDurableConfig = (cfg: ConsumerConfig): boolean => (cfg.durable_name ?? "") !== ""

/** The filters of a consumer as one list; `[]` means every subject of the stream. */
export const consumerFilters = (cfg: ConsumerConfig): ReadonlyArray<string> => {
  if (cfg.filter_subjects && cfg.filter_subjects.length > 0) return cfg.filter_subjects
  const f = cfg.filter_subject ?? ""
  return f === "" || f === ">" ? [] : [f]
}

/** What nats-server stores and reports after creation: defaults made explicit. */
export const applyConsumerDefaults = (cfg: ConsumerConfig): ConsumerConfig => {
  const ack_policy = cfg.ack_policy ?? "none"
  const backoff = cfg.backoff ?? []
  const push = isPushConfig(cfg)
  let filter_subject = cfg.filter_subject
  let filter_subjects = cfg.filter_subjects
  if (filter_subjects && filter_subjects.length === 1 && !filter_subject) {
    filter_subject = filter_subjects[0]
    filter_subjects = undefined
  }
  const out: ConsumerConfig = {
    ...cfg,
    deliver_policy: cfg.deliver_policy ?? "all",
    ack_policy,
    ack_wait: cfg.ack_wait && cfg.ack_wait > 0 ? cfg.ack_wait : backoff.length > 0 ? backoff[0] : DEFAULT_ACK_WAIT_NS,
    max_deliver: cfg.max_deliver && cfg.max_deliver > 0 ? cfg.max_deliver : -1,
    replay_policy: cfg.replay_policy ?? "instant",
    max_ack_pending: ack_policy !== "none" && !cfg.max_ack_pending ? DEFAULT_MAX_ACK_PENDING : (cfg.max_ack_pending ?? 0),
    max_waiting: !push && !cfg.max_waiting ? DEFAULT_MAX_WAITING : (cfg.max_waiting ?? 0),
    inactive_threshold:
      !isDurableConfig(cfg) && !cfg.inactive_threshold ? DEFAULT_EPHEMERAL_INACTIVE_NS : (cfg.inactive_threshold ?? 0),
    num_replicas: cfg.num_replicas ?? 0
  }
  return { ...out, filter_subject, filter_subjects }
}

/** Facts about the stream and server the checks need. */
export interface ValidationContext {
  readonly streamSubjects?: ReadonlyArray<string>
  readonly retention?: "limits" | "interest" | "workqueue"
  readonly streamReplicas?: number
  readonly maxAckPendingLimit?: number
}

const DELIVER_NAMES: Record<DeliverPolicy, string> = {
  all: "deliver all",
  last: "deliver last",
  new: "deliver new",
  by_start_sequence: "deliver by start sequence",
  by_start_time: "deliver by start time",
  last_per_subject: "deliver last per subject"
}

/** nats-server's longest stream or consumer name, in bytes of UTF-8. */
export const MAX_NAME_BYTES = 255

/**
 * Names as nats-server takes them: at most 255 bytes, no path separator, none of
 * the characters it forbids in names (space, tab, CR, LF, form feed, `.`, `*`, `>`).
 * Everything else is accepted, and the file store keeps any accepted name across a restart.
 */
const checkNames = (cfg: ConsumerConfig): ApiError | undefined => {
  const d = cfg.durable_name ?? ""
  const n = cfg.name ?? ""
  if (d !== "" && n !== "" && d !== n) return bad(10132, "Consumer Durable and Name have to be equal if both are provided")
  for (const s of [d, n]) {
    if (Buffer.byteLength(s, "utf8") > MAX_NAME_BYTES) return bad(10102, `consumer name is too long, maximum allowed is ${MAX_NAME_BYTES}`)
    if (/[/\\]/.test(s)) return bad(10127, "Consumer name can not contain path separators")
    if (/[ \t\r\n\f.*>]/.test(s)) return bad(10103, "durable name can not contain '.', '*', '>'")
  }
  return undefined
}

const checkDeliverPolicy = (cfg: ConsumerConfig): ApiError | undefined => {
  const policy = cfg.deliver_policy ?? "all"
  const name = DELIVER_NAMES[policy]
  if (name === undefined) return bad(10094, "consumer deliver policy invalid")
  const hasSeq = (cfg.opt_start_seq ?? 0) > 0
  const hasTime = (cfg.opt_start_time ?? "") !== ""
  const msg = (what: string) => bad(10094, `consumer delivery policy is ${name}, but optional ${what}`)
  if (policy === "by_start_sequence") {
    if (!hasSeq) return msg("start sequence is not set")
    if (hasTime) return msg("start time is also set")
  } else if (policy === "by_start_time") {
    if (!hasTime) return msg("start time is not set")
    if (Number.isNaN(Date.parse(cfg.opt_start_time!))) return bad(10094, "consumer optional start time is invalid")
    if (hasSeq) return msg("start sequence is also set")
  } else {
    if (hasSeq) return msg("start sequence is also set")
    if (hasTime) return msg("start time is also set")
  }
  return undefined
}

const checkAcks = (cfg: ConsumerConfig, ctx: ValidationContext): ApiError | undefined => {
  const ack = cfg.ack_policy ?? "none"
  if (ack !== "none" && ack !== "all" && ack !== "explicit") return bad(10181, "consumer ack policy invalid")
  const replay = cfg.replay_policy ?? "instant"
  if (replay !== "instant" && replay !== "original") return bad(10182, "consumer replay policy invalid")
  if ((cfg.ack_wait ?? 0) < 0) return bad(10183, "consumer ack wait needs to be positive")
  const backoff = cfg.backoff ?? []
  if (backoff.some((b) => !(b > 0))) return bad(10184, "consumer backoff needs to be positive")
  const maxDeliver = cfg.max_deliver ?? 0
  if (backoff.length > 0 && maxDeliver > 0 && maxDeliver <= backoff.length) {
    return bad(10116, "max deliver is required to be > length of backoff values")
  }
  if (ack === "none" && (cfg.max_ack_pending ?? 0) > 0) return bad(10082, "consumer requires ack policy for max ack pending")
  const limit = ctx.maxAckPendingLimit ?? 0
  if (limit > 0 && (cfg.max_ack_pending ?? 0) > limit) {
    return { code: 400, err_code: 10121, description: `consumer max ack pending exceeds system limit of ${limit}` }
  }
  return undefined
}

const checkFilters = (cfg: ConsumerConfig, ctx: ValidationContext): ApiError | undefined => {
  const list = cfg.filter_subjects ?? []
  if ((cfg.filter_subject ?? "") !== "" && list.length > 0) {
    return bad(10136, "consumer cannot have both FilterSubject and FilterSubjects specified")
  }
  if (list.some((f) => f === "")) return bad(10139, "consumer filter in FilterSubjects cannot be empty")
  const filters = consumerFilters(cfg)
  for (let i = 0; i < filters.length; i++) {
    if (!isValidSubject(filters[i])) return bad(10093, "consumer filter subject is not a valid subset of the interest subjects")
    for (let j = i + 1; j < filters.length; j++) {
      if (subjectsCollide(filters[i], filters[j])) return bad(10138, "consumer subject filters cannot overlap")
    }
    const subjects = ctx.streamSubjects
    if (subjects && subjects.length > 0 && !subjects.some((s) => subjectsCollide(s, filters[i]))) {
      return bad(10093, "consumer filter subject is not a valid subset of the interest subjects")
    }
  }
  return undefined
}

const checkPush = (cfg: ConsumerConfig): ApiError | undefined => {
  const subject = cfg.deliver_subject!
  if (!isValidSubject(subject)) return bad(10112, "invalid push consumer deliver subject")
  if (subjectHasWildcard(subject)) return bad(10079, "consumer deliver subject has wildcards")
  if ((cfg.max_waiting ?? 0) !== 0) return bad(10080, "consumer in push mode can not set max waiting")
  if ((cfg.max_batch ?? 0) !== 0) return bad(10094, "consumer in push mode can not set max request batch")
  if ((cfg.max_expires ?? 0) !== 0) return bad(10094, "consumer in push mode can not set max request expires")
  if ((cfg.max_bytes ?? 0) !== 0) return bad(10094, "consumer in push mode can not set max request bytes")
  const hb = cfg.idle_heartbeat ?? 0
  if (hb > 0 && hb < MIN_IDLE_HEARTBEAT_NS) return bad(10083, "consumer idle heartbeat needs to be >= 100ms")
  if (cfg.flow_control && hb <= 0) return bad(10108, "consumer with flow control also needs heartbeats")
  return undefined
}

const checkPull = (cfg: ConsumerConfig): ApiError | undefined => {
  if ((cfg.idle_heartbeat ?? 0) > 0) return bad(10088, "consumer idle heartbeat requires a push based consumer")
  if (cfg.flow_control) return bad(10089, "consumer flow control requires a push based consumer")
  if ((cfg.deliver_group ?? "") !== "") return bad(10094, "consumer with deliver group requires a deliver subject")
  if ((cfg.max_waiting ?? 0) < 0) return bad(10087, "consumer max waiting needs to be positive")
  if ((cfg.max_batch ?? 0) < 0) return bad(10114, "consumer max request batch needs to be > 0")
  const me = cfg.max_expires ?? 0
  if (me < 0 || (me > 0 && me < NS_PER_MS)) return bad(10115, "consumer max request expires needs to be >= 1ms")
  if ((cfg.max_bytes ?? 0) < 0) return bad(10094, "consumer max request bytes needs to be >= 0")
  return undefined
}

const checkStorage = (cfg: ConsumerConfig, ctx: ValidationContext): ApiError | undefined => {
  const replicas = cfg.num_replicas ?? 0
  if (replicas < 0) return bad(10133, "replicas count cannot be negative")
  if (replicas > (ctx.streamReplicas ?? 1)) return bad(10126, "consumer config replica count exceeds parent stream")
  if ((cfg.inactive_threshold ?? 0) < 0) return bad(10094, "consumer inactive threshold can not be negative")
  if (ctx.retention === "workqueue") {
    if ((cfg.ack_policy ?? "none") !== "explicit") return bad(10098, "workqueue stream requires explicit ack")
    if ((cfg.deliver_policy ?? "all") !== "all") return bad(10101, "consumer must be deliver all on workqueue stream")
  }
  return undefined
}

/**
 * Checks a requested config (before defaults). Consumer-set checks that need the
 * other consumers of the stream (workqueue uniqueness, name in use) stay with the caller.
 */
export const validateConsumerConfig = (cfg: ConsumerConfig, ctx: ValidationContext = {}): ApiError | undefined =>
  checkNames(cfg) ??
  checkDeliverPolicy(cfg) ??
  checkAcks(cfg, ctx) ??
  checkFilters(cfg, ctx) ??
  (isPushConfig(cfg) ? checkPush(cfg) : checkPull(cfg)) ??
  checkStorage(cfg, ctx)
