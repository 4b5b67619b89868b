// Reading `$JS.API` request bodies: JSON (an empty body is `{}`), decoded into a
// request's schema or answered with nats-server's "bad request".
import { Either, Schema } from "effect"
import { type ApiError, JsErr } from "../../core/jetstream/errors.js"

export const BAD = Symbol("bad-json")

export const parseBody = (body: string): unknown | typeof BAD => {
  if (body.trim() === "") return {}
  try {
    return JSON.parse(body)
  } catch {
    return BAD
  }
}

/** A request body in its schema's shape, or nats-server's "bad request". */
export const decodeReq = <A, I>(schema: Schema.Schema<A, I>, req: unknown): A | ApiError =>
  Either.getOrElse(Either.mapLeft(Schema.decodeUnknownEither(schema)(req), () => JsErr.badRequest), (e) => e)

export const isApiError = (x: unknown): x is ApiError => typeof x === "object" && x !== null && "err_code" in x
