// Reading one stored message for a client: by sequence, the last for a subject, or
// the next for a subject from a sequence. `$JS.API.STREAM.MSG.GET` asks through the
// API queue (api.ts); `$JS.API.DIRECT.GET` is answered by the stream itself, at once,
// with the message and its stream coordinates in headers.
import { Effect } from "effect"
import { MsgGetRequest } from "../../core/jetstream/api-schema.js"
import { type ApiError, JsErr } from "../../core/jetstream/errors.js"
import { buildHeaders } from "../../core/jetstream/headers.js"
import { rfc3339 } from "../../core/jetstream/stream-config.js"
import type { Delivery } from "../../engine/principal.js"
import type { StoredMsg, StreamStore } from "../../services/store.js"
import type { StreamHost } from "./host.js"
import { BAD, decodeReq, isApiError, parseBody } from "./request.js"

/** The message a get request names; undefined when there is none, an error for a bad request. */
export const lookup = (store: StreamStore, req: Record<string, unknown>): Effect.Effect<StoredMsg | undefined | ApiError> => {
  const q = decodeReq(MsgGetRequest, req)
  if (isApiError(q)) return Effect.succeed(q)
  const { seq, last_by_subj: last, next_by_subj: next } = q
  const found = <E>(e: Effect.Effect<StoredMsg | undefined, E>) => Effect.orElseSucceed(e, () => undefined)
  if (last !== undefined) return seq === undefined && next === undefined ? found(store.loadLastForSubject(last)) : Effect.succeed(JsErr.badRequest)
  if (next !== undefined) return found(store.loadNextMatching(next, seq ?? 1))
  if (seq !== undefined && seq > 0) return found(store.load(seq))
  return Effect.succeed(JsErr.badRequest)
}

/**
 * DIRECT.GET: the message itself, its stream coordinates in headers; 404/408 status
 * replies for no message / a bad request. `$JS.API.DIRECT.GET.<stream>.<subject>` is last-by-subject.
 */
export const answerDirectGet = (host: StreamHost, name: string, store: StreamStore, d: Delivery): void => {
  const { subject, reply } = d
  if (reply === "") return
  const prefix = `$JS.API.DIRECT.GET.${name}`
  const tail = subject.length > prefix.length ? subject.slice(prefix.length + 1) : ""
  let req: Record<string, unknown>
  if (tail !== "") req = { last_by_subj: tail }
  else {
    const body = parseBody(d.buf.toString("utf8", d.payloadStart, d.end))
    req = body !== BAD && typeof body === "object" && body !== null ? (body as Record<string, unknown>) : { bad: true }
  }
  const send = (headers: Buffer, payload: Uint8Array) =>
    host.server.router.publish(host.principal, reply, "", headers, Buffer.from(payload.buffer, payload.byteOffset, payload.length))
  Effect.runPromise(lookup(store, req)).then((m) => {
    if (isApiError(m)) return send(buildHeaders("408 Bad Request", []), new Uint8Array(0))
    if (m === undefined) return send(buildHeaders("404 Message Not Found", []), new Uint8Array(0))
    const pairs: Array<readonly [string, string]> = [
      ["Nats-Stream", name],
      ["Nats-Subject", m.subject],
      ["Nats-Sequence", String(m.seq)],
      ["Nats-Time-Stamp", rfc3339(m.ts)]
    ]
    send(buildHeaders("", pairs, m.headers), m.payload)
  })
}
