// The `$JS.API` requests: each handler takes the parsed request and returns the JSON
// response nats-server would send (errors in the JetStream error shape). Handlers run
// one at a time (see start.ts), so checks and the changes they guard agree. Nothing
// below this layer imports it: the subsystem queues requests, start.ts serves them here.
import { Effect, Either } from "effect"
import { ListRequest, MsgDeleteRequest, PurgeRequest, StreamInfoRequest } from "../../core/jetstream/api-schema.js"
import { type ApiError, errorResponse, JsErr, responseType } from "../../core/jetstream/errors.js"
import {
  checkUpdate,
  normalizeStreamConfig,
  rfc3339,
  sameConfig,
  type StreamConfig,
  SubjectsCheck,
  toStoreConfig
} from "../../core/jetstream/stream-config.js"
import { subjectsCollide } from "../../core/subject/subject.js"
import { SubjectSet } from "../../core/subject/subject-set.js"
import { accountConsumerCount, handleConsumerApi } from "./consumer-api.js"
import { lookup } from "./direct-get.js"
import { type JetStream, type JsAccount, STREAM_META, type StoredStreamMeta } from "./jetstream.js"
import { BAD, decodeReq, isApiError, parseBody } from "./request.js"
import type { JsStream } from "./stream.js"

type Response = Record<string, unknown>
type Reply = Effect.Effect<Response | undefined>

const API = "$JS.API."

const fail = (kind: string, e: ApiError): Reply => Effect.succeed(errorResponse(kind, e))

/** The store name of a stream: unique per account, never a path (the store encodes it). */
export const storeName = (account: string, stream: string): string => `${account}/${stream}`

/** One request; `adopt`: an internal caller's STREAM.CREATE may take up a stream stored without its configuration (see InternalApiCall). */
export const handleApi = (js: JetStream, acc: JsAccount, subject: string, raw: string, adopt = false): Reply => {
  const rest = subject.slice(API.length)
  const dot = (p: string) => (rest.startsWith(p) ? rest.slice(p.length) : undefined)
  if (!acc.enabled) return fail(kindOf(rest), JsErr.notEnabledForAccount)
  const body = parseBody(raw)
  if (body === BAD) return fail(kindOf(rest), JsErr.invalidJson)
  const req = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>
  let name: string | undefined
  if (rest === "INFO") return Effect.succeed(accountInfo(js, acc))
  if ((name = dot("STREAM.CREATE.")) !== undefined) return createOrUpdate(js, acc, name, body, true, adopt)
  if ((name = dot("STREAM.UPDATE.")) !== undefined) return createOrUpdate(js, acc, name, body, false)
  if (rest === "STREAM.NAMES") return Effect.succeed(streamNames(acc, req))
  if (rest === "STREAM.LIST") return Effect.succeed(streamList(js, acc, req))
  if ((name = dot("STREAM.INFO.")) !== undefined) {
    const q = decodeReq(StreamInfoRequest, req)
    if (isApiError(q)) return fail("stream_info", q)
    return withStream(acc, name, "stream_info", (s) => Effect.succeed(streamInfo(js, s, "stream_info", q)))
  }
  if ((name = dot("STREAM.DELETE.")) !== undefined) return withStream(acc, name, "stream_delete", (s) => deleteStream(js, acc, s))
  if ((name = dot("STREAM.PURGE.")) !== undefined) return withStream(acc, name, "stream_purge", (s) => purgeStream(s, req))
  if ((name = dot("STREAM.MSG.GET.")) !== undefined) return withStream(acc, name, "stream_msg_get", (s) => msgGet(s, req))
  if ((name = dot("STREAM.MSG.DELETE.")) !== undefined) return withStream(acc, name, "stream_msg_delete", (s) => msgDelete(s, req))
  if (rest.startsWith("CONSUMER.")) return handleConsumerApi(js, acc, rest, req)
  return Effect.succeed(undefined)
}

const kindOf = (rest: string): string => {
  if (rest === "INFO") return "account_info"
  const parts = rest.split(".")
  return parts.slice(0, parts[1] === "MSG" ? 3 : 2).join("_").toLowerCase()
}

const withStream = (acc: JsAccount, name: string, kind: string, f: (s: JsStream) => Reply): Reply => {
  const s = acc.streams.get(name)
  return s === undefined ? fail(kind, JsErr.streamNotFound) : f(s)
}

const accountInfo = (js: JetStream, acc: JsAccount): Response => ({
  type: responseType("account_info"),
  memory: acc.usage("memory"),
  storage: acc.usage("file"),
  reserved_memory: acc.reserved("memory"),
  reserved_storage: acc.reserved("file"),
  streams: acc.streams.size,
  consumers: accountConsumerCount(acc),
  limits: {
    max_memory: js.options.maxMemory,
    max_storage: js.options.maxStorage,
    max_streams: -1,
    max_consumers: -1,
    max_ack_pending: -1,
    memory_max_stream_bytes: -1,
    storage_max_stream_bytes: -1,
    max_bytes_required: false
  },
  ...(acc.domain === undefined ? {} : { domain: acc.domain }),
  api: { total: acc.apiTotal, errors: acc.apiErrors }
})

export const streamInfo = (js: JetStream, s: JsStream, kind: string, req: typeof StreamInfoRequest.Type = {}): Response => {
  const st = s.store.state()
  const state: Response = {
    messages: st.messages,
    bytes: st.bytes,
    first_seq: st.first_seq,
    first_ts: rfc3339(st.first_ts),
    last_seq: st.last_seq,
    last_ts: rfc3339(st.last_ts),
    num_subjects: st.num_subjects,
    num_deleted: st.num_deleted,
    consumer_count: s.consumers.size
  }
  if (req.subjects_filter !== undefined && req.subjects_filter !== "") {
    const subjects: Record<string, number> = {}
    for (const [subj, ss] of s.store.subjectsState(req.subjects_filter)) subjects[subj] = ss.msgs
    state.subjects = subjects
  }
  if (req.deleted_details === true && st.num_deleted > 0) state.deleted = s.store.deleted()
  return {
    type: responseType(kind),
    config: s.config,
    created: rfc3339(s.created),
    state,
    cluster: { leader: js.server.serverName },
    ts: rfc3339(js.server.now())
  }
}

/** Subjects checked per event-loop turn when a stream is created or updated (see SubjectsCheck). */
const SUBJECTS_PER_TURN = 2000

/** Let other clients be served before going on (requests run one at a time, so nothing they check changes). */
const nextTurn = (js: JetStream): Effect.Effect<void> =>
  Effect.async<void>((resume) => js.server.env.scheduleFlush(() => resume(Effect.void)))

/** The stream's own subjects checked a slice per turn: a list of 20,000 must not stall every client. */
const checkSubjects = (js: JetStream, subjects: ReadonlyArray<string>): Effect.Effect<ApiError | undefined> =>
  Effect.gen(function*() {
    const check = new SubjectsCheck(subjects)
    for (;;) {
      const r = check.step(SUBJECTS_PER_TURN)
      if (r === "done") return undefined
      if (r !== undefined) return r
      yield* nextTurn(js)
    }
  })

/** Whether a subject collides with another stream's: a SubjectSet of theirs, a slice of ours per turn. */
const overlapsOthers = (js: JetStream, acc: JsAccount, name: string, subjects: ReadonlyArray<string>): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const taken = new SubjectSet(function*() {
      for (const s of acc.streams.values()) if (s.name !== name) yield* s.config.subjects
    }())
    for (let i = 0; i < subjects.length; i += SUBJECTS_PER_TURN) {
      if (i > 0) yield* nextTurn(js)
      for (let j = i; j < Math.min(subjects.length, i + SUBJECTS_PER_TURN); j++) if (taken.collides(subjects[j])) return true
    }
    return false
  })

const createOrUpdate = (js: JetStream, acc: JsAccount, name: string, body: unknown, create: boolean, adopt = false): Reply =>
  Effect.gen(function*() {
    const kind = create ? "stream_create" : "stream_update"
    const parsed = normalizeStreamConfig(body, name, create, false)
    if (Either.isLeft(parsed)) return errorResponse(kind, parsed.left)
    const cfg = parsed.right
    const badSubject = yield* checkSubjects(js, cfg.subjects)
    if (badSubject !== undefined) return errorResponse(kind, badSubject)
    const cur = acc.streams.get(name)
    if (create && cur !== undefined)
      return sameConfig(cur.config, cfg) ? streamInfo(js, cur, kind) : errorResponse(kind, JsErr.streamNameExist)
    if (!create && cur === undefined) return errorResponse(kind, JsErr.streamNotFound)
    if (cur !== undefined) {
      const bad = checkUpdate(cur.config, cfg)
      if (bad !== undefined) return errorResponse(kind, bad)
    }
    if (yield* overlapsOthers(js, acc, name, cfg.subjects)) return errorResponse(kind, JsErr.streamSubjectOverlap)
    const noRoom = acc.reserve(cfg)
    if (noRoom !== undefined) return errorResponse(kind, noRoom)
    if (cur !== undefined) return yield* update(js, cur, cfg, kind)
    const created = js.server.now()
    const meta: StoredStreamMeta = { account: acc.name, created, config: cfg }
    const r = yield* Effect.either(js.store.create(storeName(acc.name, name), toStoreConfig(cfg), [[STREAM_META, encodeMeta(meta)]]))
    if (r._tag === "Left" && adopt && r.left.reason === "Exists") return yield* adoptStored(js, acc, meta, kind)
    if (r._tag === "Left") return errorResponse(kind, JsErr.streamStoreFailed(r.left.message))
    return streamInfo(js, js.makeStream(acc, meta, r.right), kind)
  })

/**
 * An internal caller's create of a stream whose records are stored but whose configuration
 * could not be read at recovery (seen after a power cut in the simulator, seed 59): the
 * configuration is written again and the stream opened with its records, instead of the
 * caller's state silently going elsewhere.
 */
const adoptStored = (js: JetStream, acc: JsAccount, meta: StoredStreamMeta, kind: string): Reply =>
  Effect.gen(function*() {
    const name = storeName(acc.name, meta.config.name)
    const st = yield* Effect.either(js.store.open(name))
    if (st._tag === "Left") return errorResponse(kind, JsErr.streamStoreFailed(st.left.message))
    const written = yield* Effect.either(st.right.writeMeta(STREAM_META, encodeMeta(meta)))
    if (written._tag === "Left") return errorResponse(kind, JsErr.streamStoreFailed(written.left.message))
    js.log.warn(`JetStream stream '${acc.name} > ${meta.config.name}' had lost its configuration; written again, its ${st.right.state().messages} messages kept`)
    js.recovered(name)
    return streamInfo(js, js.makeStream(acc, meta, st.right), kind)
  })

const encodeMeta = (m: StoredStreamMeta): Uint8Array => Buffer.from(JSON.stringify(m))

const update = (js: JetStream, s: JsStream, cfg: StreamConfig, kind: string): Reply =>
  Effect.gen(function*() {
    const meta: StoredStreamMeta = { account: s.host.principal.account.name, created: s.created, config: cfg }
    const r = yield* Effect.either(Effect.zipRight(s.store.updateConfig(toStoreConfig(cfg)), s.store.writeMeta(STREAM_META, encodeMeta(meta))))
    if (r._tag === "Left") return errorResponse(kind, JsErr.streamUpdate(r.left.message))
    s.config = cfg
    s.subscribe()
    return streamInfo(js, s, kind)
  })

const deleteStream = (js: JetStream, acc: JsAccount, s: JsStream): Reply =>
  Effect.gen(function*() {
    s.unsubscribe()
    s.closed = true
    acc.streams.delete(s.name)
    s.consumers.stopAll()
    const r = yield* Effect.either(js.store.delete(storeName(acc.name, s.name)))
    if (r._tag === "Left") return errorResponse("stream_delete", JsErr.streamStoreFailed(r.left.message))
    return { type: responseType("stream_delete"), success: true }
  })

const purgeStream = (s: JsStream, req: Response): Reply => {
  const kind = "stream_purge"
  if (s.config.sealed) return fail(kind, JsErr.streamSealed)
  if (s.config.deny_purge) return fail(kind, JsErr.streamPurgeFailed("stream purge not permitted"))
  const q = decodeReq(PurgeRequest, req)
  if (isApiError(q)) return fail(kind, q)
  const seq = q.seq === 0 ? undefined : q.seq
  const keep = q.keep === 0 ? undefined : q.keep
  if (seq !== undefined && keep !== undefined) return fail(kind, JsErr.badRequest)
  const filter = q.filter !== undefined && q.filter !== "" ? q.filter : undefined
  return Effect.map(
    Effect.either(Effect.tap(s.store.purge({ subject: filter, seq, keep }), () => Effect.zipLeft(s.store.sync(), Effect.sync(() => s.consumers.notify(true))))),
    (r) =>
      r._tag === "Left"
        ? errorResponse(kind, JsErr.streamPurgeFailed(r.left.message))
        : { type: responseType(kind), success: true, purged: r.right }
  )
}

const msgGet = (s: JsStream, req: Response): Reply =>
  Effect.map(lookup(s.store, req), (m) => {
    const kind = "stream_msg_get"
    if (isApiError(m)) return errorResponse(kind, m)
    if (m === undefined) return errorResponse(kind, JsErr.noMessageFound)
    const message: Response = { subject: m.subject, seq: m.seq }
    if (m.headers !== undefined && m.headers.length > 0) message.hdrs = Buffer.from(m.headers).toString("base64")
    message.data = Buffer.from(m.payload).toString("base64")
    message.time = rfc3339(m.ts)
    return { type: responseType(kind), message }
  })

const msgDelete = (s: JsStream, req: Response): Reply => {
  const kind = "stream_msg_delete"
  if (s.config.sealed) return fail(kind, JsErr.streamSealed)
  if (s.config.deny_delete) return fail(kind, JsErr.streamMsgDeleteFailed("message delete not permitted"))
  const q = decodeReq(MsgDeleteRequest, req)
  if (isApiError(q)) return fail(kind, q)
  const seq = q.seq
  if (seq === 0) return fail(kind, JsErr.badRequest)
  return Effect.map(Effect.either(Effect.tap(s.store.remove(seq), () => Effect.zipLeft(s.store.sync(), Effect.sync(() => s.consumers.notify(true))))), (r) =>
    r._tag === "Left"
      ? errorResponse(kind, JsErr.streamMsgDeleteFailed(r.left.message))
      : r.right
      ? { type: responseType(kind), success: true }
      : errorResponse(kind, JsErr.sequenceNotFound(seq))
  )
}

/** Names (NAMES) or infos (LIST) of the streams whose subjects collide with `subject`, paged by `offset`. */
const page = (acc: JsAccount, req: Response, limit: number) => {
  const q = decodeReq(ListRequest, req)
  const { subject, offset: from } = isApiError(q) ? { subject: undefined, offset: undefined } : q
  const filter = subject !== undefined && subject !== "" ? subject : undefined
  const all = [...acc.streams.values()]
    .filter((s) => filter === undefined || s.config.subjects.some((x) => subjectsCollide(x, filter)))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const offset = from ?? 0
  return { total: all.length, offset, limit, streams: all.slice(offset, offset + limit) }
}

const streamNames = (acc: JsAccount, req: Response): Response => {
  const p = page(acc, req, 1024)
  return { type: responseType("stream_names"), ...p, streams: p.streams.map((s) => s.name) }
}

const streamList = (js: JetStream, acc: JsAccount, req: Response): Response => {
  const p = page(acc, req, 256)
  return {
    type: responseType("stream_list"),
    ...p,
    streams: p.streams.map((s) => {
      const { type: _t, ...info } = streamInfo(js, s, "stream_info")
      return info
    }),
    missing: []
  }
}
