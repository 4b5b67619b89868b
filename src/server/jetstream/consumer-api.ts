// The `$JS.API.CONSUMER.*` requests (create, durable create, info, delete, list, names).
// Each stream holds its consumers (consumers.ts); these handlers only ask it.
import { Effect } from "effect"
import {
  applyConsumerDefaults,
  type ConsumerConfig,
  consumerFilters,
  validateConsumerConfig
} from "../../core/consumer/index.js"
import { type ApiError, errorResponse, JsErr, responseType } from "../../core/jetstream/errors.js"
import { rfc3339 } from "../../core/jetstream/stream-config.js"
import type { SequenceInfo } from "../../core/consumer/index.js"
import { subjectsCollide } from "../../core/subject/subject.js"
import type { JsConsumer, StoredConsumer } from "./consumer.js"
import type { JetStream, JsAccount } from "./jetstream.js"
import type { JsStream } from "./stream.js"

type Response = Record<string, unknown>
type Reply = Effect.Effect<Response | undefined>

const e = (code: number, err_code: number, description: string): ApiError => ({ code, err_code, description })

/** Consumer errors in nats-server's codes and words. */
export const ConsumerErr = {
  notFound: e(404, 10014, "consumer not found"),
  nameInSubjectMismatch: e(400, 10017, "consumer name in subject does not match durable name in request"),
  alreadyExists: e(400, 10148, "consumer already exists"),
  doesNotExist: e(400, 10149, "consumer does not exist"),
  filterMismatch: e(400, 10131, "Consumer create request did not match filtered subject from create subject"),
  configRequired: e(400, 10078, "consumer config required"),
  wqMultipleUnfiltered: e(400, 10099, "multiple non-filtered consumers not allowed on workqueue stream"),
  wqNotUnique: e(400, 10100, "filtered consumer not unique on workqueue stream"),
  nameContainsPathSeparators: e(400, 10127, "Consumer name can not contain path separators"),
  invalidName: e(400, 10103, "durable name can not contain '.', '*', '>'"),
  storeFailed: (why: string) => e(500, 10104, `error creating store for consumer: ${why}`)
} as const

/** Consumers of every stream of an account (account info's `consumers`). */
export const accountConsumerCount = (acc: JsAccount): number => {
  let n = 0
  for (const s of acc.streams.values()) n += s.consumers.size
  return n
}

const seqInfo = (s: SequenceInfo): Response => ({
  consumer_seq: s.consumer_seq,
  stream_seq: s.stream_seq,
  ...(s.last_active !== undefined ? { last_active: rfc3339(s.last_active) } : {})
})

export const consumerInfo = (js: JetStream, c: JsConsumer, kind?: string): Response => {
  const st = c.machine.info()
  return {
    ...(kind !== undefined ? { type: responseType(kind) } : {}),
    stream_name: c.stream.name,
    name: c.name,
    created: rfc3339(c.created),
    config: c.config,
    delivered: seqInfo(st.delivered),
    ack_floor: seqInfo(st.ack_floor),
    num_ack_pending: st.num_ack_pending,
    num_redelivered: st.num_redelivered,
    num_waiting: st.num_waiting,
    num_pending: st.num_pending,
    cluster: { leader: js.server.serverName },
    ...(c.isPush ? { push_bound: c.pushBound } : {}),
    ts: rfc3339(js.server.now())
  }
}

const fail = (kind: string, err: ApiError): Reply => Effect.succeed(errorResponse(kind, err))

const withStream = (acc: JsAccount, name: string, kind: string, f: (s: JsStream) => Reply): Reply => {
  const s = acc.streams.get(name)
  return s === undefined ? fail(kind, JsErr.streamNotFound) : f(s)
}

const withConsumer = (acc: JsAccount, stream: string, name: string, kind: string, f: (s: JsStream, c: JsConsumer) => Reply): Reply =>
  withStream(acc, stream, kind, (s) => {
    const c = s.consumers.get(name)
    return c === undefined ? fail(kind, ConsumerErr.notFound) : f(s, c)
  })

/**
 * `rest` is the subject after `$JS.API.`, starting `CONSUMER.`. Undefined for subjects
 * that are not API requests (MSG.NEXT is answered by the consumer itself).
 */
export const handleConsumerApi = (js: JetStream, acc: JsAccount, rest: string, req: Response): Reply => {
  const t = rest.split(".")
  const op = t[1]
  if (op === "MSG") return Effect.succeed(undefined)
  if (op === "CREATE" && t.length >= 3) return create(js, acc, t[2], t[3], t.length > 4 ? t.slice(4).join(".") : undefined, req, "consumer_create")
  if (op === "DURABLE" && t[2] === "CREATE" && t.length === 5) return create(js, acc, t[3], t[4], undefined, req, "consumer_create", true)
  if (op === "INFO" && t.length === 4) return withConsumer(acc, t[2], t[3], "consumer_info", (_s, c) => Effect.succeed(consumerInfo(js, c, "consumer_info")))
  if (op === "DELETE" && t.length === 4)
    return withConsumer(acc, t[2], t[3], "consumer_delete", (s, c) =>
      Effect.promise(async () => {
        await s.consumers.remove(c)
        return { type: responseType("consumer_delete"), success: true }
      }))
  if ((op === "NAMES" || op === "LIST") && t.length === 3) return list(js, acc, t[2], req, op === "NAMES")
  return Effect.succeed(undefined)
}

const list = (js: JetStream, acc: JsAccount, stream: string, req: Response, namesOnly: boolean): Reply => {
  const kind = namesOnly ? "consumer_names" : "consumer_list"
  return withStream(acc, stream, kind, (s) => {
    const offset = typeof req.offset === "number" && req.offset > 0 ? req.offset : 0
    const limit = namesOnly ? 1024 : 256
    const all = [...s.consumers.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    const page = all.slice(offset, offset + limit)
    return Effect.succeed({
      type: responseType(kind),
      total: all.length,
      offset,
      limit,
      consumers: namesOnly ? page.map((c) => c.name) : page.map((c) => consumerInfo(js, c)),
      ...(namesOnly ? {} : { missing: [] })
    })
  })
}

/** nats-server's generated names: 8 characters of a random id. */
const generateName = (js: JetStream): string => js.server.randomId(6).replace(/[-_]/g, "x").slice(0, 8).toUpperCase()

const sameConfig = (a: ConsumerConfig, b: ConsumerConfig): boolean => JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b))
const sortKeys = (c: ConsumerConfig): Response => {
  const out: Response = {}
  for (const k of Object.keys(c).sort()) {
    const v = (c as Response)[k]
    if (v !== undefined) out[k] = v
  }
  return out
}

/** Workqueue streams: one consumer per subject (filters must not overlap). */
const workqueueConflict = (s: JsStream, cfg: ConsumerConfig, name: string): ApiError | undefined => {
  if (s.config.retention !== "workqueue") return undefined
  const mine = consumerFilters(cfg)
  for (const other of s.consumers.values()) {
    if (other.name === name) continue
    const theirs = consumerFilters(other.config)
    if (mine.length === 0 || theirs.length === 0) return ConsumerErr.wqMultipleUnfiltered
    if (mine.some((f) => theirs.some((g) => subjectsCollide(f, g)))) return ConsumerErr.wqNotUnique
  }
  return undefined
}

const create = (
  js: JetStream,
  acc: JsAccount,
  streamName: string,
  subjectName: string | undefined,
  subjectFilter: string | undefined,
  req: Response,
  kind: string,
  durableForm = false
): Reply =>
  withStream(acc, streamName, kind, (s) =>
    Effect.promise(async () => {
      if (typeof req.stream_name === "string" && req.stream_name !== "" && req.stream_name !== streamName) return errorResponse(kind, JsErr.streamMismatch)
      if (typeof req.config !== "object" || req.config === null) return errorResponse(kind, ConsumerErr.configRequired)
      let cfg = { ...(req.config as ConsumerConfig) }
      if (subjectName !== undefined) {
        if (/[/\\]/.test(subjectName)) return errorResponse(kind, ConsumerErr.nameContainsPathSeparators)
        const named = cfg.durable_name || cfg.name
        if (named && named !== subjectName) return errorResponse(kind, ConsumerErr.nameInSubjectMismatch)
        if (durableForm) cfg = { ...cfg, durable_name: subjectName }
        else if (!cfg.name) cfg = { ...cfg, name: subjectName }
      }
      if (subjectFilter !== undefined) {
        const filters = consumerFilters(cfg)
        if (filters.length > 1 || (filters.length === 1 && filters[0] !== subjectFilter)) return errorResponse(kind, ConsumerErr.filterMismatch)
        if (filters.length === 0) cfg = { ...cfg, filter_subject: subjectFilter, filter_subjects: undefined }
      }
      const invalid = validateConsumerConfig(cfg, {
        streamSubjects: s.config.subjects,
        retention: s.config.retention,
        streamReplicas: s.config.num_replicas
      })
      if (invalid !== undefined) return errorResponse(kind, invalid)
      const name = cfg.durable_name || cfg.name || generateName(js)
      cfg = applyConsumerDefaults({ ...cfg, name })
      const action = typeof req.action === "string" ? req.action : ""
      const existing = s.consumers.get(name)
      if (existing !== undefined) {
        if (sameConfig(existing.config, cfg)) return consumerInfo(js, existing, kind)
        if (action === "create") return errorResponse(kind, ConsumerErr.alreadyExists)
      } else if (action === "update") {
        return errorResponse(kind, ConsumerErr.doesNotExist)
      }
      const wq = workqueueConflict(s, cfg, name)
      if (wq !== undefined) return errorResponse(kind, wq)
      const now = js.server.now()
      const stored: StoredConsumer =
        existing === undefined ? { name, created: now, config: cfg } : { name, created: existing.created, config: cfg, state: existing.machine.snapshot() }
      if (existing !== undefined) existing.stop()
      const c = s.consumers.make(stored, now)
      // Answered "created" only once it would be there after a restart.
      const unsaved = await c.save()
      if (unsaved !== undefined && existing === undefined) {
        c.stop()
        await s.consumers.remove(c)
        return errorResponse(kind, ConsumerErr.storeFailed(unsaved.reason === "NoSpace" ? "insufficient storage" : "the consumer's state could not be written"))
      }
      c.start()
      // An update may narrow what the consumer holds (filters).
      if (existing !== undefined) s.consumers.releaseUnwanted()
      return consumerInfo(js, c, kind)
    }))
