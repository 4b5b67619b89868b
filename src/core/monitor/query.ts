// Decodes a raw query string against an endpoint's parameter specs. An empty
// value counts as absent (as in nats-server); the first bad parameter becomes a
// 400 body naming it, the value given and what is allowed.
import { Either, Schema } from "effect"
import type { ErrorBody, ParamSpecs, QueryOf } from "../../schema/monitor.js"

const shorten = (s: string): string => (s.length > 200 ? `${s.slice(0, 200)}…` : s)

const messageFor = (name: string, raw: string, expected: string): string => {
  const v = JSON.stringify(shorten(raw))
  if (name === "sort") return `invalid sorting option: ${shorten(raw)}`
  if (name === "state") return `Error decoding state for ${shorten(raw)}`
  switch (expected) {
    case "boolean":
      return `Error decoding boolean for '${name}': invalid syntax ${v}`
    case "boolean or detail":
      return `Error decoding boolean for '${name}': invalid syntax ${v} (or use detail)`
    case "integer":
      return `Error decoding int for '${name}': invalid syntax ${v}`
    case "unsigned integer":
      return `Error decoding uint64 for '${name}': invalid syntax ${v}`
    default:
      return `invalid value for '${name}': ${v}`
  }
}

export const badParam = (name: string, raw: string, allowed: ReadonlyArray<string> | undefined, expected: string): ErrorBody => ({
  error: messageFor(name, raw, expected),
  parameter: name,
  value: shorten(raw),
  ...(allowed !== undefined ? { allowed: [...allowed] } : {}),
  expected
})

/** Decode the parameters `specs` names from `get`; unknown parameters are ignored. */
export const decodeQuery = <S extends ParamSpecs>(
  specs: S,
  get: (name: string) => string | null | undefined
): Either.Either<QueryOf<S>, ErrorBody> => {
  const out: Record<string, unknown> = {}
  for (const name of Object.keys(specs)) {
    const spec = specs[name]
    const raw = get(name)
    if (raw === null || raw === undefined || raw === "") continue
    const input = spec.caseInsensitive ? raw.toLowerCase() : spec.normalize !== undefined ? spec.normalize(raw) : raw
    const decoded = Schema.decodeUnknownEither(spec.schema)(input)
    if (Either.isLeft(decoded)) return Either.left(badParam(name, raw, spec.allowed, spec.expected))
    out[name] = decoded.right
  }
  return Either.right(out as QueryOf<S>)
}
