// From the parsed tree to what the file says (an OptionsPatch) plus warnings, and
// the checks that need the whole resolved picture (limits that contradict each
// other, a no_auth_user nobody defines). Errors name the key path and where it was
// written; they never show a secret's value.
import { Either, ParseResult, Schema } from "effect"
import { ConfigFile, configKeys, type KeySpec } from "./schema.js"
import { isConfMap, type ConfMap, type ConfValue, type ParsedConfig } from "./conf-parser.js"
import { ConfigError, configError, type SourcePos } from "./errors.js"
import type { ServerOptions } from "./options.js"
import type { OptionsPatch } from "./patch.js"
import { findUnsupported } from "./unsupported.js"

export interface ConfigWarning {
  /** `Refused` ones stop the start: decodeConfig turns them into an error. */
  readonly reason: "UnknownKey" | "Invalid" | "NotImplemented" | "Refused"
  readonly detail: string
  readonly at: SourcePos | undefined
}

export const formatWarning = (w: ConfigWarning): string =>
  w.at === undefined ? w.detail : `${w.at.file}:${w.at.line}:${w.at.column}: ${w.detail}`

/** `authorization.users[0].password`; the top level is "the top level". */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string => {
  let out = ""
  for (const k of path) {
    if (typeof k === "number") out += `[${k}]`
    else if (typeof k === "string" && /^[A-Za-z0-9_$-]+$/.test(k)) out += out === "" ? k : `.${k}`
    else out += `[${JSON.stringify(String(k))}]`
  }
  return out === "" ? "the top level" : out
}

interface Problem {
  readonly path: ReadonlyArray<PropertyKey>
  /** Said after the key path, unless `at` is given: then it is the whole text, placed there. */
  readonly message: string
  readonly at?: SourcePos | undefined
}

/** The leaves of a parse issue, each with its path. No default messages: they would echo values. */
const problems = (issue: ParseResult.ParseIssue, path: ReadonlyArray<PropertyKey>, out: Array<Problem>): void => {
  switch (issue._tag) {
    case "Type":
      out.push({ path, message: issue.message ?? "has a value of the wrong type" })
      return
    case "Missing":
      out.push({ path, message: "is required" })
      return
    case "Unexpected":
      out.push({ path, message: "is not allowed here" })
      return
    case "Forbidden":
      out.push({ path, message: "could not be checked" })
      return
    case "Pointer":
      problems(issue.issue, path.concat(issue.path), out)
      return
    case "Composite":
      for (const i of Array.isArray(issue.issues) ? issue.issues : [issue.issues]) problems(i, path, out)
      return
    case "Refinement":
    case "Transformation":
      problems(issue.issue, path, out)
      return
  }
}

/** Problems in the order they are written (files in the order read); unplaced ones last. */
const inFileOrder = (parsed: ParsedConfig | undefined, found: ReadonlyArray<Problem>) => {
  const placed = found.map((p) => ({ p, at: "at" in p ? p.at : parsed?.locate(p.path) }))
  const rank = (at: SourcePos | undefined) =>
    at === undefined ? [Infinity, 0, 0] : [parsed!.files.indexOf(at.file), at.line, at.column]
  return placed.sort((a, b) => {
    const [ra, rb] = [rank(a.at), rank(b.at)]
    return ra[0] - rb[0] || ra[1] - rb[1] || ra[2] - rb[2]
  })
}

/** One error for all the problems, placed at the first; the others carry their own places. */
const invalid = (parsed: ParsedConfig | undefined, found: ReadonlyArray<Problem>): ConfigError => {
  const line = (p: Problem) => ("at" in p ? p.message : `${formatPath(p.path)}: ${p.message}`)
  const [head, ...rest] = inFileOrder(parsed, found)
  const more = rest.map(({ p, at }) => (at === undefined ? line(p) : `${at.file}:${at.line}:${at.column}: ${line(p)}`))
  return configError(
    "Invalid",
    [line(head.p), ...more].join("\n"),
    head.at ?? (parsed === undefined ? undefined : { file: parsed.file })
  )
}

/** Keys used as `$variables` inside a block of names (accounts) are definitions, not entries. */
const withoutVariables = (parsed: ParsedConfig, root: ConfMap, spec: KeySpec): ConfMap => {
  const out: Record<string, ConfValue> = {}
  for (const [key, value] of Object.entries(root)) {
    const child = spec.children[key]
    if (child?.entries !== undefined && isConfMap(value)) {
      const kept: Record<string, ConfValue> = {}
      for (const [name, entry] of Object.entries(value)) {
        if (!parsed.isUsedVariable(value, name)) Object.defineProperty(kept, name, { value: entry, enumerable: true })
      }
      Object.defineProperty(out, key, { value: kept, enumerable: true })
    } else {
      Object.defineProperty(out, key, { value, enumerable: true })
    }
  }
  return out
}

const NOT_IMPLEMENTED = "is not implemented by this version and has no effect"
const REFUSED = "is not implemented by this version, and running without it would be less secure than the configuration asks"

/**
 * Keys the schema does not know, block by block (unknown: a warning), nats-server
 * keys this version does not act on (a warning too, so `-t` fails on them) and the
 * refused ones among them (errors). Keys used as `$variables` are definitions.
 */
export const unknownKeys = (parsed: ParsedConfig, spec: KeySpec = configKeys): Array<ConfigWarning> => {
  const out: Array<ConfigWarning> = []
  const walk = (value: unknown, s: KeySpec, path: ReadonlyArray<PropertyKey>): void => {
    if (Array.isArray(value)) {
      value.forEach((v, i) => walk(v, s, [...path, i]))
      return
    }
    if (!isConfMap(value)) return
    for (const [key, v] of Object.entries(value)) {
      const here = [...path, key]
      const at = () => parsed.locate(here)
      if (s.entries !== undefined) {
        if (!parsed.isUsedVariable(value, key)) walk(v, s.entries, here)
      } else if (parsed.isUsedVariable(value, key)) {
        continue
      } else if (s.notImplemented !== undefined) {
        out.push({ reason: "NotImplemented", detail: `${formatPath(here)}: ${s.notImplemented}`, at: at() })
      } else if (s.known.has(key)) {
        const child = s.children[key]
        if (child !== undefined) walk(v, child, here)
      } else if (s.refused.has(key)) {
        out.push({ reason: "Refused", detail: `${formatPath(here)} ${REFUSED}`, at: at() })
      } else if (s.ignored.has(key)) {
        out.push({ reason: "NotImplemented", detail: `${formatPath(here)} ${NOT_IMPLEMENTED}`, at: at() })
      } else {
        const where = path.length === 0 ? "the top level" : formatPath(path)
        out.push({ reason: "UnknownKey", detail: `unknown key "${key}" in ${where}`, at: at() })
      }
    }
  }
  walk(parsed.root, spec, [])
  return out
}

/** A websocket block without a port is legal (nats-server) but almost surely a mistake. */
const websocketWithoutPort = (parsed: ParsedConfig): Array<ConfigWarning> =>
  (["websocket", "ws"] as const).flatMap((key) => {
    const ws = parsed.root[key]
    if (!isConfMap(ws) || ws.port !== undefined || ws.listen !== undefined) return []
    return [
      {
        reason: "Invalid" as const,
        detail: `${key}: no port is set, so the WebSocket listener stays off`,
        at: parsed.locate([key])
      }
    ]
  })

export interface DecodedConfig {
  readonly patch: OptionsPatch
  readonly warnings: ReadonlyArray<ConfigWarning>
}

/** What the parsed file sets, and what looks wrong but is not an error. */
export const decodeConfig = (parsed: ParsedConfig): Either.Either<DecodedConfig, ConfigError> => {
  const decoded = Schema.decodeUnknownEither(ConfigFile, { errors: "all" })(
    withoutVariables(parsed, parsed.root, configKeys)
  )
  if (Either.isLeft(decoded)) {
    const found: Array<Problem> = []
    problems(decoded.left.issue, [], found)
    return Either.left(invalid(parsed, found))
  }
  const keys = unknownKeys(parsed)
  const refused = keys.filter((w) => w.reason === "Refused")
  if (refused.length > 0) {
    return Either.left(invalid(parsed, refused.map((w) => ({ path: [], message: w.detail, at: w.at }))))
  }
  return Either.right({
    patch: { ...decoded.right, configFile: parsed.file },
    warnings: [...keys, ...websocketWithoutPort(parsed)]
  })
}

// ---- checks on the resolved options ---------------------------------------------

/** nats-server refuses a shorter `lame_duck_duration`. */
export const MIN_LAME_DUCK_DURATION_MS = 30_000

const knownUsers = (o: ServerOptions): Set<string> => {
  const names = new Set<string>()
  const add = (users: ReadonlyArray<{ user: string | undefined; nkey: string | undefined }>) => {
    for (const u of users) {
      if (u.user !== undefined) names.add(u.user)
      if (u.nkey !== undefined) names.add(u.nkey)
    }
  }
  add(o.authorization?.users ?? [])
  for (const a of o.accounts) add(a.users)
  return names
}

/**
 * What only the whole picture can tell. `parsed` (when there is a file) places
 * the error at the key that caused it.
 */
export const checkOptions = (
  options: ServerOptions,
  parsed: ParsedConfig | undefined
): Either.Either<ServerOptions, ConfigError> => {
  const found: Array<Problem> = []
  if (options.maxPayload > options.maxPending) {
    found.push({
      path: ["max_payload"],
      message: `${options.maxPayload} must not be larger than max_pending (${options.maxPending})`
    })
  }
  if (options.httpsPort !== undefined && options.httpTls === undefined) {
    found.push({ path: ["https_port"], message: "https monitoring needs a tls block (in http { tls {…} } or at the top level)" })
  }
  // nats-server's bounds: lame duck mode spreads its closes over at least 30s, after the grace period.
  if (options.lameDuckDurationMs < MIN_LAME_DUCK_DURATION_MS) {
    found.push({ path: ["lame_duck_duration"], message: `must be at least 30s (got ${options.lameDuckDurationMs}ms)` })
  } else if (options.lameDuckGracePeriodMs >= options.lameDuckDurationMs) {
    found.push({
      path: ["lame_duck_grace_period"],
      message: `must be shorter than lame_duck_duration (${options.lameDuckGracePeriodMs}ms is not less than ${options.lameDuckDurationMs}ms)`
    })
  }
  const users = knownUsers(options)
  if (options.noAuthUser !== undefined && !users.has(options.noAuthUser)) {
    found.push({
      path: ["no_auth_user"],
      message: `no user "${options.noAuthUser}" is defined in authorization or accounts`
    })
  }
  for (const e of findUnsupported(options).errors) found.push({ ...e, at: parsed?.locate(e.path) })
  const mqttNoAuth = options.mqtt?.noAuthUser
  if (mqttNoAuth !== undefined && !users.has(mqttNoAuth)) {
    found.push({
      path: ["mqtt", "no_auth_user"],
      message: `no user "${mqttNoAuth}" is defined in authorization or accounts`
    })
  }
  return found.length === 0 ? Either.right(options) : Either.left(invalid(parsed, found))
}

/** Where a setting was written: the first of `paths` the file has, else it came from `flag`. */
const placed = (parsed: ParsedConfig | undefined, paths: ReadonlyArray<ReadonlyArray<string>>, flag: string) => {
  for (const path of paths) {
    let v: unknown = parsed?.root
    for (const k of path) v = isConfMap(v) ? v[k] : undefined
    if (v !== undefined) return { at: parsed!.locate(path), name: formatPath(path) }
  }
  return { at: undefined, name: flag }
}

/**
 * Settings the resolved configuration accepts but would not act on: a store directory
 * with JetStream off, monitoring settings with monitoring off, a WebSocket listener
 * with MQTT off. Warnings at a normal start, errors under `-t`.
 */
export const ineffectiveSettings = (
  options: ServerOptions,
  patch: OptionsPatch,
  parsed: ParsedConfig | undefined
): Array<ConfigWarning> => {
  const out: Array<ConfigWarning> = []
  const warn = (detail: string, at: SourcePos | undefined) => out.push({ reason: "Invalid", detail, at })
  if (patch.jetstream?.storeDir !== undefined && options.jetstream === undefined) {
    const { at, name } = placed(parsed, [["jetstream", "store_dir"], ["jetstream", "storedir"], ["store_dir"]], "-sd")
    warn(`${name}: JetStream is not enabled (jetstream {} or -js), so the store directory is not used`, at)
  }
  const monitoring = options.httpPort !== undefined || options.httpsPort !== undefined
  if (!monitoring && patch.httpBasePath !== undefined) {
    warn("http_base_path: monitoring is not enabled (http_port, http, https_port, -m or -ms), so it has no effect", parsed?.locate(["http_base_path"]))
  }
  if (options.httpsPort === undefined && patch.httpTls !== undefined) {
    warn("http.tls: no https_port is set, so this certificate is not used", parsed?.locate(["http", "tls"]))
  }
  for (const w of findUnsupported(options).warnings) {
    const at = parsed?.locate(w.path) ?? (w.path[0] === "websocket" ? parsed?.locate(["ws"]) : undefined)
    warn(w.message, at)
  }
  return out
}
