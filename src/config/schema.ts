// The configuration file's schema: decodes the tree the conf parser builds into an
// `OptionsPatch` (what the file says, in ServerOptions' words and units). Keys are
// nats-server's, aliases included; each leaf says what it expected without echoing
// secrets. `configKeys` lists the keys per block, for unknown-key warnings.
import { Either, ParseResult, Schema } from "effect"
import { isValidSubject } from "../core/subject/subject.js"
import { ConfSize, isConfMap, parseSizeText } from "./conf-parser.js"
import type {
  ClusterAuthorization,
  LeafNodeAuthorization,
  LeafNodeOptions,
  LeafRemote,
  AccountExport,
  AccountImport,
  AccountOptions,
  AuthorizationOptions,
  MqttProtocolLevel,
  Permissions,
  SubjectPermission,
  TlsOptions,
  RemoteTlsOptions,
  UserEntry
} from "./options.js"
import {
  clientPort,
  listenerPort,
  monitorPort,
  clusterPort,
  type ClusterPatch,
  type JetStreamPatch,
  type MqttPatch,
  type OptionsPatch,
  type WebsocketPatch
} from "./patch.js"
import { accountJetStreamLimits, notImplementedKeys, refusedKeys } from "./not-implemented.js"
import { parseLeafUrl, parseRouteUrl } from "./route-url.js"
import { MAX_TOPIC_LEVELS_LIMIT, topicToSubject, validateTopicName } from "../core/mqtt/topic.js"

// ---- building blocks --------------------------------------------------------

const NO: unique symbol = Symbol("no match")
type NoMatch = typeof NO

/** How a value is shown in an error: scalars as written, containers by kind. */
export const describeValue = (u: unknown): string =>
  typeof u === "string"
    ? JSON.stringify(u)
    : typeof u === "number" || typeof u === "boolean"
      ? String(u)
      : u instanceof ConfSize
        ? u.text
        : Array.isArray(u)
          ? "a list"
          : isConfMap(u)
            ? "a map"
            : typeof u

interface Cases<A> {
  readonly scalar?: (u: unknown) => A | NoMatch
  readonly list?: Schema.Schema<A, any>
  readonly map?: Schema.Schema<A, any>
}

/**
 * A value that may be written several ways (a scalar, a list, a map). Each way is
 * tried by the shape of the input; anything else fails with `expected …, got …`
 * (`secret` leaves out the `got`).
 */
const oneOf = <A>(expected: string, cases: Cases<A>, secret = false): Schema.Schema<A, unknown> =>
  Schema.transformOrFail(Schema.Unknown, Schema.Any as Schema.Schema<A>, {
    strict: true,
    decode: (u, options, ast) => {
      if (cases.map !== undefined && isConfMap(u)) return ParseResult.decodeUnknown(cases.map)(u, options)
      if (cases.list !== undefined && Array.isArray(u)) return ParseResult.decodeUnknown(cases.list)(u, options)
      if (cases.scalar !== undefined && !isConfMap(u) && !Array.isArray(u)) {
        const a = cases.scalar(u)
        if (a !== NO) return ParseResult.succeed(a)
      }
      const got = secret ? "" : `, got ${describeValue(u)}`
      return ParseResult.fail(new ParseResult.Type(ast, u, `expected ${expected}${got}`))
    },
    encode: (a) => ParseResult.succeed(a)
  })

const leaf = <A>(expected: string, f: (u: unknown) => A | NoMatch, secret = false) =>
  oneOf(expected, { scalar: f }, secret)

/**
 * A map block: its fields decode with `fields`, then `build` turns them into the
 * result or says what is wrong with the block as a whole.
 */
const block = <F extends Schema.Struct.Fields, A>(
  fields: F,
  build: (s: Schema.Struct.Type<F>) => Either.Either<A, string>
): Schema.Schema<A, unknown> => {
  const struct = Schema.Struct(fields)
  const schema = Schema.transformOrFail(Schema.Unknown, Schema.Any as Schema.Schema<A>, {
    strict: true,
    decode: (u, options, ast) => {
      if (!isConfMap(u)) return ParseResult.fail(new ParseResult.Type(ast, u, `expected a map, got ${describeValue(u)}`))
      return ParseResult.flatMap(ParseResult.decodeUnknown(struct)(u, options), (s) =>
        Either.match(build(s as Schema.Struct.Type<F>), {
          onLeft: (msg) => ParseResult.fail(new ParseResult.Type(ast, u, msg)),
          onRight: (a) => ParseResult.succeed(a)
        })
      )
    },
    encode: (a) => ParseResult.succeed(a)
  })
  // Every leaf is context-free, so the fields need no services.
  return schema as unknown as Schema.Schema<A, unknown>
}

/** An optional key; `exact` so a wrong value reports only its own problem. */
const opt = <S extends Schema.Schema.All>(s: S) => Schema.optionalWith(s, { exact: true })

/** The first alias that was written. */
const first = <T>(...vs: ReadonlyArray<T | undefined>): T | undefined => vs.find((v) => v !== undefined)

const ok = Either.right

// ---- leaves -----------------------------------------------------------------

const Str = leaf("a string", (u) => (typeof u === "string" ? u : u instanceof ConfSize ? u.text : NO))

/** Passwords and tokens: never shown back. */
const Secret = leaf(
  "a string (quote the value)",
  (u) => (typeof u === "string" ? u : u instanceof ConfSize ? u.text : NO),
  true
)

const Bool = leaf("true or false", (u) => (typeof u === "boolean" ? u : NO))

const intOf = (u: unknown): number | NoMatch =>
  typeof u === "number" && Number.isSafeInteger(u) ? u : u instanceof ConfSize ? u.bytes : NO

const NonNegInt = leaf("a non-negative integer", (u) => {
  const n = intOf(u)
  return n !== NO && n >= 0 ? n : NO
})

const Port = leaf("a port number (-1 to 65535)", (u) =>
  typeof u === "number" && Number.isInteger(u) && u >= -1 && u <= 65535 ? u : NO
)

const sizeOf = (u: unknown): number | NoMatch => {
  if (typeof u === "string") return parseSizeText(u.trim()) ?? NO
  return intOf(u)
}

/** Bytes, > 0: `1048576`, `1MB`, `"64KB"`. */
const PosSize = leaf("a size (like 1MB)", (u) => {
  const n = sizeOf(u)
  return n !== NO && n > 0 ? n : NO
})

/** Bytes or -1 (unlimited). */
const LimitSize = leaf("a size (like 1GB) or -1", (u) => {
  const n = sizeOf(u)
  return n !== NO && n >= -1 ? n : NO
})

const DURATION_PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000
}

/** Go's duration syntax (`30s`, `1h30m`, `500ms`, `1.5s`, `200us`), in milliseconds, unrounded. */
const parseDurationExact = (text: string): number | undefined => {
  if (text === "0") return 0
  if (text === "") return undefined
  DURATION_PART.lastIndex = 0
  let ms = 0
  let at = 0
  while (at < text.length) {
    DURATION_PART.lastIndex = at
    const m = DURATION_PART.exec(text)
    if (m === null) return undefined
    ms += Number(m[1]) * UNIT_MS[m[2]]
    at = DURATION_PART.lastIndex
  }
  return ms
}

/** Go's duration syntax (`30s`, `1h30m`, `500ms`, `1.5s`), in whole milliseconds. */
export const parseDurationText = (text: string): number | undefined => {
  const ms = parseDurationExact(text)
  return ms === undefined ? undefined : Math.round(ms)
}

/** Go's duration syntax, in whole microseconds (for sub-millisecond settings). */
export const parseDurationMicros = (text: string): number | undefined => {
  const ms = parseDurationExact(text)
  return ms === undefined ? undefined : Math.round(ms * 1000)
}

const durationText = (u: unknown): string | undefined =>
  typeof u === "string" ? u.trim() : u instanceof ConfSize ? u.text : undefined

const durationMs = (u: unknown): number | NoMatch => {
  if (typeof u === "number" && Number.isFinite(u) && u >= 0) return Math.round(u * 1000)
  const text = durationText(u)
  if (text === undefined) return NO
  return parseDurationText(text) ?? NO
}

const durationMicros = (u: unknown): number | NoMatch => {
  if (typeof u === "number" && Number.isFinite(u) && u >= 0) return Math.round(u * 1e6)
  const text = durationText(u)
  if (text === undefined) return NO
  return parseDurationMicros(text) ?? NO
}

/** Bytes, >= 0: `10485760`, `10MB`, `"1GB"`. */
const NonNegSize = leaf("a size (like 10MB) or 0", (u) => {
  const n = sizeOf(u)
  return n !== NO && n >= 0 ? n : NO
})

/**
 * A nats-server key whose feature Switchyard does not have: accepted only with a value
 * that turns it off (so a file written for nats-server that says so still loads), and
 * refused otherwise with `why` instead of being silently ignored.
 */
const refusedUnless = (off: (u: unknown) => boolean, why: string): Schema.Schema<unknown, unknown> =>
  Schema.transformOrFail(Schema.Unknown, Schema.Unknown, {
    strict: true,
    decode: (u, _options, ast) => (off(u) ? ParseResult.succeed(u) : ParseResult.fail(new ParseResult.Type(ast, u, why))),
    encode: (a) => ParseResult.succeed(a)
  })

const SYSLOG_REFUSED =
  "is not supported by Switchyard: it logs to stderr (where journald or the container runtime collects it) or to log_file"

/** A duration string (`"30s"`, bare `2m`), or a number of seconds. In milliseconds. */
const Duration = leaf('a duration (like "30s" or "2m") or a number of seconds', durationMs)

/** The same, in microseconds (`200us`, `0.5ms`). */
const DurationMicros = leaf('a duration (like "200us" or "1ms") or a number of seconds', durationMicros)

/** `sync_interval`: `always`, or a positive duration (a number is seconds). In milliseconds. */
const SyncInterval = leaf('a positive duration (like "2m" or "10s") or always', (u): "always" | number | NoMatch => {
  if (typeof u === "string" && u.trim().toLowerCase() === "always") return "always"
  const ms = durationMs(u)
  return ms !== NO && ms > 0 ? ms : NO
})

/** `timeout` in tls/authorization: seconds (fractions allowed) or a duration. In milliseconds. */
const Seconds = Duration

const StringList = oneOf("a string or a list of strings", {
  scalar: (u) => (typeof u === "string" ? [u] : NO),
  list: Schema.Array(Str)
})

interface HostPort {
  readonly host: string | undefined
  readonly port: number | undefined
}

const validPort = (n: number) => Number.isInteger(n) && n >= -1 && n <= 65535

/** `host:port`, `:port`, `[::1]:port`, or a bare port. */
export const parseHostPort = (text: string): HostPort | undefined => {
  if (/^-?\d+$/.test(text)) return validPort(Number(text)) ? { host: undefined, port: Number(text) } : undefined
  const colon = text.lastIndexOf(":")
  if (colon < 0) return undefined
  const portText = text.slice(colon + 1)
  let host = text.slice(0, colon)
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1)
  if (!/^-?\d+$/.test(portText) || !validPort(Number(portText))) return undefined
  return { host: host === "" ? undefined : host, port: Number(portText) }
}

const Listen = leaf('"host:port" or a port number', (u): HostPort | NoMatch => {
  if (typeof u === "number") return validPort(u) ? { host: undefined, port: u } : NO
  if (typeof u === "string") return parseHostPort(u.trim()) ?? NO
  return NO
})

const ServerName = leaf("a name without spaces", (u) =>
  typeof u === "string" && u !== "" && !/\s/.test(u) ? u : NO
)

/** A JetStream domain: one subject token, as it stands in `$JS.<domain>.API.>`. */
const JsDomain = leaf("a single subject token (no '.', '*', '>' or spaces)", (u) =>
  typeof u === "string" && u !== "" && !/[\s.*>]/.test(u) ? u : NO
)

// ---- tls --------------------------------------------------------------------

const TLS_TIMEOUT_MS = 2_000

const tlsFields = {
  cert_file: opt(Str),
  key_file: opt(Str),
  ca_file: opt(Str),
  verify: opt(Bool),
  timeout: opt(Seconds)
}

const Tls: Schema.Schema<TlsOptions, unknown> = block(tlsFields, (s) =>
  s.cert_file === undefined || s.key_file === undefined
    ? Either.left("cert_file and key_file are both required")
    : ok({
        certFile: s.cert_file,
        keyFile: s.key_file,
        caFile: s.ca_file,
        verify: s.verify ?? false,
        timeoutMs: s.timeout ?? TLS_TIMEOUT_MS
      })
)

/** A leaf remote's `tls`: the client side, so a certificate is optional (a hub may not ask for one) and `verify` means nothing. */
const remoteTlsFields = {
  cert_file: opt(Str),
  key_file: opt(Str),
  ca_file: opt(Str),
  timeout: opt(Seconds)
}

const RemoteTls: Schema.Schema<RemoteTlsOptions, unknown> = block(remoteTlsFields, (s) =>
  (s.cert_file === undefined) !== (s.key_file === undefined)
    ? Either.left("cert_file and key_file go together (a client certificate needs its key)")
    : ok({ certFile: s.cert_file, keyFile: s.key_file, caFile: s.ca_file, timeoutMs: s.timeout ?? TLS_TIMEOUT_MS })
)

// ---- permissions, users, authorization ---------------------------------------

const subjectPermissionFields = { allow: opt(StringList), deny: opt(StringList) }

const SubjectPerm: Schema.Schema<SubjectPermission, unknown> = oneOf(
  "a subject, a list of subjects or a map with allow/deny",
  {
    scalar: (u) => (typeof u === "string" ? { allow: [u], deny: undefined } : NO),
    list: Schema.transform(Schema.Array(Str), Schema.Any as Schema.Schema<SubjectPermission>, {
      strict: true,
      decode: (allow) => ({ allow, deny: undefined }),
      encode: (p) => p.allow ?? []
    }),
    map: block(subjectPermissionFields, (s) => ok({ allow: s.allow, deny: s.deny }))
  }
)

/** nats-server's defaults for `allow_responses: true`: one response within two minutes. */
const RESPONSES_DEFAULT = { maxMsgs: 1, expiresMs: 2 * 60_000 }

const allowResponsesFields = { max: opt(NonNegInt), expires: opt(Duration) }

const AllowResponses = oneOf<Permissions["allowResponses"]>("true, false or a map with max/expires", {
  scalar: (u) => (u === true ? RESPONSES_DEFAULT : u === false ? undefined : NO),
  map: block(allowResponsesFields, (s): Either.Either<Permissions["allowResponses"], string> =>
    ok({ maxMsgs: s.max ?? RESPONSES_DEFAULT.maxMsgs, expiresMs: s.expires ?? RESPONSES_DEFAULT.expiresMs })
  )
})

/**
 * A permissions block, as nats-server reads it for users and routes alike: what may be
 * published (`publish`, `pub`, or a route's `import`) and subscribed to (`subscribe`,
 * `sub`, or a route's `export`), and `allow_responses`.
 */
const permissionsFields = {
  publish: opt(SubjectPerm),
  pub: opt(SubjectPerm),
  import: opt(SubjectPerm),
  subscribe: opt(SubjectPerm),
  sub: opt(SubjectPerm),
  export: opt(SubjectPerm),
  allow_responses: opt(AllowResponses),
  allow_response: opt(AllowResponses)
}

const PermissionsSchema: Schema.Schema<Permissions, unknown> = block(permissionsFields, (s) =>
  ok({
    publish: first(s.publish, s.pub, s.import),
    subscribe: first(s.subscribe, s.sub, s.export),
    allowResponses: first(s.allow_responses, s.allow_response)
  })
)

const userFields = {
  user: opt(Str),
  username: opt(Str),
  password: opt(Secret),
  pass: opt(Secret),
  nkey: opt(Str),
  permissions: opt(PermissionsSchema),
  account: opt(Str)
}

const User: Schema.Schema<UserEntry, unknown> = block(userFields, (s) => {
  const user = first(s.user, s.username)
  if (user === undefined && s.nkey === undefined) return Either.left("a user needs user or nkey")
  return ok({
    user,
    password: first(s.password, s.pass),
    nkey: s.nkey,
    permissions: s.permissions,
    account: s.account
  })
})

const Users = oneOf("a list of users", { list: Schema.Array(User) })

const authorizationFields = {
  user: opt(Str),
  username: opt(Str),
  password: opt(Secret),
  pass: opt(Secret),
  token: opt(Secret),
  users: opt(Users),
  timeout: opt(Seconds),
  permissions: opt(PermissionsSchema),
  default_permissions: opt(PermissionsSchema),
  default_permission: opt(PermissionsSchema)
}

const Authorization: Schema.Schema<AuthorizationOptions, unknown> = block(authorizationFields, (s) =>
  ok({
    user: first(s.user, s.username),
    password: first(s.password, s.pass),
    token: s.token,
    users: s.users ?? [],
    timeoutMs: s.timeout,
    defaultPermissions: first(s.default_permissions, s.default_permission, s.permissions)
  })
)

// ---- accounts -----------------------------------------------------------------

const exportFields = { stream: opt(Str), service: opt(Str), accounts: opt(StringList) }

const Export: Schema.Schema<AccountExport, unknown> = block(exportFields, (s) =>
  (s.stream === undefined) === (s.service === undefined)
    ? Either.left("an export needs exactly one of stream or service")
    : ok({ stream: s.stream, service: s.service, accounts: s.accounts })
)

const importSourceFields = { account: opt(Str), subject: opt(Str) }

const ImportSource = block(importSourceFields, (s) =>
  s.account === undefined || s.subject === undefined
    ? Either.left("account and subject are both required")
    : ok({ account: s.account, subject: s.subject })
)

const importFields = { stream: opt(ImportSource), service: opt(ImportSource), prefix: opt(Str), to: opt(Str) }

const Import: Schema.Schema<AccountImport, unknown> = block(importFields, (s) =>
  (s.stream === undefined) === (s.service === undefined)
    ? Either.left("an import needs exactly one of stream or service")
    : ok({ stream: s.stream, service: s.service, prefix: s.prefix, to: s.to })
)

const enabledWord = (u: unknown): boolean | NoMatch => {
  if (typeof u === "boolean") return u
  if (typeof u !== "string") return NO
  const w = u.toLowerCase()
  return w === "enabled" || w === "enable" ? true : w === "disabled" || w === "disable" ? false : NO
}

/** Per-account JetStream: enabled/disabled, or a map of limits (enabled; limits not enforced yet). */
const AccountJetStream = oneOf("enabled, disabled or a map of limits", {
  scalar: enabledWord,
  map: Schema.transform(Schema.Unknown, Schema.Boolean, { strict: true, decode: () => true, encode: () => ({}) })
})

const accountFields = {
  users: opt(Users),
  exports: opt(oneOf("a list of exports", { list: Schema.Array(Export) })),
  imports: opt(oneOf("a list of imports", { list: Schema.Array(Import) })),
  jetstream: opt(AccountJetStream)
}

const Account = block(accountFields, (s) =>
  ok({ users: s.users ?? [], exports: s.exports ?? [], imports: s.imports ?? [], jetstream: s.jetstream ?? false })
)

const Accounts: Schema.Schema<ReadonlyArray<AccountOptions>, unknown> = oneOf("a map of accounts", {
  map: Schema.transform(Schema.Record({ key: Schema.String, value: Account }), Schema.Any, {
    strict: true,
    decode: (r) => Object.entries(r).map(([name, a]) => ({ name, ...a })),
    encode: (as: ReadonlyArray<AccountOptions>) => Object.fromEntries(as.map(({ name, ...a }) => [name, a]))
  })
})

// ---- jetstream, mqtt, websocket ------------------------------------------------

const jetstreamFields = {
  enabled: opt(Bool),
  store_dir: opt(Str),
  storedir: opt(Str),
  max_memory_store: opt(LimitSize),
  max_mem_store: opt(LimitSize),
  max_mem: opt(LimitSize),
  max_memory: opt(LimitSize),
  max_file_store: opt(LimitSize),
  max_file: opt(LimitSize),
  max_storage: opt(LimitSize),
  sync_interval: opt(SyncInterval),
  domain: opt(JsDomain)
}

const JetStream: Schema.Schema<JetStreamPatch, unknown> = oneOf<JetStreamPatch>("enabled, disabled, true, false or a map", {
  scalar: (u) => {
    const on = enabledWord(u)
    return on === NO ? NO : { enabled: on }
  },
  map: block(jetstreamFields, (s): Either.Either<JetStreamPatch, string> =>
    ok({
      enabled: s.enabled ?? true,
      storeDir: first(s.store_dir, s.storedir),
      maxMemory: first(s.max_memory_store, s.max_mem_store, s.max_mem, s.max_memory),
      maxStorage: first(s.max_file_store, s.max_file, s.max_storage),
      syncInterval: s.sync_interval,
      domain: s.domain
    })
  )
})

/** host/port/listen of a listener block, with the 0 = disabled, -1 = ephemeral convention. */
const listener = (s: { host?: string; port?: number; listen?: HostPort }) => {
  const written = first(s.port, s.listen?.port)
  const p = written === undefined ? undefined : listenerPort(written)
  return { host: first(s.host, s.listen?.host), enabled: p?.enabled, port: p?.port }
}

const MAX_ACK_PENDING_LIMIT = 65535

const MaxAckPending = leaf(`an integer from 1 to ${MAX_ACK_PENDING_LIMIT}`, (u) => {
  const n = intOf(u)
  return n !== NO && n >= 1 && n <= MAX_ACK_PENDING_LIMIT ? n : NO
})

const MaxTopicLevels = leaf(`an integer from 1 to ${MAX_TOPIC_LEVELS_LIMIT}`, (u) => {
  const n = intOf(u)
  return n !== NO && n >= 1 && n <= MAX_TOPIC_LEVELS_LIMIT ? n : NO
})

const MAX_QUEUED_MESSAGES_LIMIT = 100_000_000

const MaxQueuedMessages = leaf(`an integer from 1 to ${MAX_QUEUED_MESSAGES_LIMIT}`, (u) => {
  const n = intOf(u)
  return n !== NO && n >= 1 && n <= MAX_QUEUED_MESSAGES_LIMIT ? n : NO
})

const ProtocolLevel = leaf("4 (MQTT 3.1.1) or 5 (MQTT 5.0)", (u) => {
  const n = intOf(u)
  return n === 4 || n === 5 ? (n as MqttProtocolLevel) : NO
})

/** `protocol_versions`: the MQTT protocol levels a listener accepts, each once, at least one. */
const ProtocolVersions: Schema.Schema<ReadonlyArray<MqttProtocolLevel>, unknown> = oneOf("a list of MQTT protocol levels like [4, 5]", {
  list: Schema.transformOrFail(Schema.Array(ProtocolLevel), Schema.Any as Schema.Schema<ReadonlyArray<MqttProtocolLevel>>, {
    strict: true,
    decode: (levels, _options, ast) => {
      if (levels.length === 0) return ParseResult.fail(new ParseResult.Type(ast, levels, "expected at least one MQTT protocol level (4, 5)"))
      if (new Set(levels).size !== levels.length) {
        return ParseResult.fail(new ParseResult.Type(ast, levels, `expected each protocol level once, got [${levels.join(", ")}]`))
      }
      return ParseResult.succeed([...levels].sort((a, b) => a - b))
    },
    encode: (levels) => ParseResult.succeed(levels)
  })
})

const ReceiveMaximum = leaf("an integer from 1 to 65535", (u) => {
  const n = intOf(u)
  return n !== NO && n >= 1 && n <= 65535 ? n : NO
})

const TopicAliasMaximum = leaf("an integer from 0 to 65535", (u) => {
  const n = intOf(u)
  return n !== NO && n >= 0 && n <= 65535 ? n : NO
})

const MaxKeepAlive = leaf("an integer from 1 to 65535 (seconds)", (u) => {
  const n = intOf(u)
  return n !== NO && n >= 1 && n <= 65535 ? n : NO
})

/** A topic prefix a client may build response topics under (no wildcards, a valid subject), or false: none. */
const ResponseInformation = leaf("a topic name without wildcards, or false", (u) => {
  if (u === false) return ""
  if (typeof u !== "string" || u.length === 0 || u.endsWith("/")) return NO
  return validateTopicName(u).ok && topicToSubject(`${u}/x`).ok ? u : NO
})

const mqttFields = {
  host: opt(Str),
  port: opt(Port),
  listen: opt(Listen),
  ack_wait: opt(Duration),
  max_ack_pending: opt(MaxAckPending),
  max_topic_levels: opt(MaxTopicLevels),
  max_queued_messages: opt(MaxQueuedMessages),
  max_queued_bytes: opt(LimitSize),
  tls: opt(Tls),
  authorization: opt(Authorization),
  no_auth_user: opt(Str),
  protocol_versions: opt(ProtocolVersions),
  receive_maximum: opt(ReceiveMaximum),
  topic_alias_maximum: opt(TopicAliasMaximum),
  max_keepalive: opt(MaxKeepAlive),
  response_information: opt(ResponseInformation)
}

const Mqtt: Schema.Schema<MqttPatch, unknown> = oneOf<MqttPatch>("enabled, disabled, true, false or a map", {
  scalar: (u) => {
    const on = enabledWord(u)
    return on === NO ? NO : { enabled: on }
  },
  map: block(mqttFields, (s): Either.Either<MqttPatch, string> => {
    const l = listener(s)
    return ok({
      enabled: l.enabled ?? true,
      host: l.host,
      port: l.port,
      ackWaitMs: s.ack_wait,
      maxAckPending: s.max_ack_pending,
      maxTopicLevels: s.max_topic_levels,
      maxQueuedMessages: s.max_queued_messages,
      // -1: no bound (as nats-server's size limits), kept as 0.
      maxQueuedBytes: s.max_queued_bytes === undefined ? undefined : Math.max(0, s.max_queued_bytes),
      tls: s.tls,
      authorization: s.authorization,
      noAuthUser: s.no_auth_user,
      protocolVersions: s.protocol_versions,
      receiveMaximum: s.receive_maximum,
      topicAliasMaximum: s.topic_alias_maximum,
      maxKeepAlive: s.max_keepalive,
      responseInformation: s.response_information
    })
  })
})

const websocketFields = {
  host: opt(Str),
  port: opt(Port),
  listen: opt(Listen),
  no_tls: opt(Bool),
  tls: opt(Tls),
  compression: opt(Bool),
  handshake_timeout: opt(Duration),
  protocol_versions: opt(ProtocolVersions)
}

const Websocket: Schema.Schema<WebsocketPatch, unknown> = oneOf<WebsocketPatch>("disabled, false or a map", {
  scalar: (u) => (enabledWord(u) === false ? { enabled: false } : NO),
  map: block(websocketFields, (s): Either.Either<WebsocketPatch, string> => {
    const l = listener(s)
    // nats-server: the listener exists only with a port, and needs TLS unless told otherwise.
    const enabled = l.enabled ?? false
    if (enabled && s.no_tls !== true && s.tls === undefined) {
      return Either.left("tls is required unless no_tls is true")
    }
    return ok({
      enabled,
      host: l.host,
      port: l.port,
      noTls: s.no_tls,
      tls: s.tls,
      compression: s.compression,
      handshakeTimeoutMs: s.handshake_timeout,
      protocolVersions: s.protocol_versions
    })
  })
})

// ---- cluster (routes) --------------------------------------------------------------

const RouteUrl = leaf("a route URL like nats-route://host:6222 (tls:// routes are not supported yet)", (u) =>
  typeof u === "string" && parseRouteUrl(u) !== undefined ? u.trim() : NO
, true)

const RouteUrls = oneOf("a route URL or a list of them", {
  scalar: (u) => (typeof u === "string" && parseRouteUrl(u) !== undefined ? [u.trim()] : NO),
  list: Schema.Array(RouteUrl)
})

/**
 * A route's permissions: the user permissions block, read as nats-server reads it for
 * routes (publish = import: what the other servers may send here; subscribe = export:
 * what they may ask for). `allow_responses` means nothing between servers: refused.
 */
const ClusterPermissions = Schema.transformOrFail(PermissionsSchema, Schema.Any as Schema.Schema<{ import: SubjectPermission | undefined; export: SubjectPermission | undefined }>, {
  strict: true,
  decode: (p, _o, ast) =>
    p.allowResponses !== undefined
      ? ParseResult.fail(new ParseResult.Type(ast, p, "allow_responses has no meaning on routes"))
      : ParseResult.succeed({ import: p.publish, export: p.subscribe }),
  encode: (p) => ParseResult.succeed({ publish: p.import, subscribe: p.export, allowResponses: undefined })
})

/** The credentials a server asks of the servers that connect to it (routes, leaf nodes): one user, and how long they have. */
const peerAuthorizationFields = {
  user: opt(Str),
  username: opt(Str),
  password: opt(Secret),
  pass: opt(Secret),
  timeout: opt(Seconds)
}

const peerCredentials = (s: Schema.Struct.Type<typeof peerAuthorizationFields>) => ({
  user: first(s.user, s.username),
  password: first(s.password, s.pass),
  timeoutMs: s.timeout
})

const clusterAuthorizationFields = { ...peerAuthorizationFields, permissions: opt(ClusterPermissions) }

const ClusterAuthorizationSchema: Schema.Schema<ClusterAuthorization, unknown> = block(clusterAuthorizationFields, (s) =>
  ok({ ...peerCredentials(s), import: s.permissions?.import, export: s.permissions?.export })
)

/** What a cluster block may name that this version does not do yet: refused, never silently ignored. */
const notYet = (what: string) => opt(refusedUnless(() => false, `${what} is not supported by this version yet`))

const clusterFields = {
  name: opt(ServerName),
  host: opt(Str),
  port: opt(Port),
  listen: opt(Listen),
  advertise: opt(Str),
  cluster_advertise: opt(Str),
  no_advertise: opt(Bool),
  routes: opt(RouteUrls),
  authorization: opt(ClusterAuthorizationSchema),
  permissions: opt(ClusterPermissions),
  connect_retries: opt(NonNegInt),
  tls: opt(Tls),
  pool_size: opt(refusedUnless((u) => u === -1, "route pooling is not supported by this version yet (a single route per server, as before nats-server 2.10); only -1 is accepted")),
  accounts: notYet("a dedicated route per account"),
  compression: opt(refusedUnless((u) => u === false || u === "off" || u === "disabled", "route compression is not supported by this version yet")),
  ping_interval: notYet("a ping interval for routes apart from the clients' one"),
  ping_max: notYet("a ping_max for routes apart from the clients' one")
}

const Cluster: Schema.Schema<ClusterPatch, unknown> = block(clusterFields, (s): Either.Either<ClusterPatch, string> => {
  const written = first(s.port, s.listen?.port)
  if (s.authorization?.import !== undefined && s.permissions !== undefined) {
    return Either.left("permissions are given twice (cluster.permissions and cluster.authorization.permissions)")
  }
  const auth = s.authorization === undefined && s.permissions === undefined
    ? undefined
    : {
        user: s.authorization?.user,
        password: s.authorization?.password,
        timeoutMs: s.authorization?.timeoutMs,
        import: s.authorization?.import ?? s.permissions?.import,
        export: s.authorization?.export ?? s.permissions?.export
      }
  return ok({
    enabled: true,
    name: s.name,
    host: first(s.host, s.listen?.host),
    port: written === undefined ? undefined : clusterPort(written),
    advertise: first(s.advertise, s.cluster_advertise),
    noAdvertise: s.no_advertise,
    routes: s.routes,
    authorization: auth,
    connectRetries: s.connect_retries,
    tls: s.tls
  })
})

// ---- leafnodes ---------------------------------------------------------------------

const LEAF_URL_EXPECTED = "a leaf URL like nats-leaf://host:7422, tls://host:7422 or ws://host:8080"

const LeafUrl = leaf(LEAF_URL_EXPECTED, (u) => (typeof u === "string" && parseLeafUrl(u) !== undefined ? u.trim() : NO), true)

const LeafUrls = oneOf(`${LEAF_URL_EXPECTED}, or a list of them`, {
  scalar: (u) => (typeof u === "string" && parseLeafUrl(u) !== undefined ? [u.trim()] : NO),
  list: Schema.Array(LeafUrl)
}, true)

const leafUserFields = { user: opt(Str), username: opt(Str), password: opt(Secret), pass: opt(Secret), account: opt(Str) }

const LeafUser = block(leafUserFields, (s) => {
  const user = first(s.user, s.username)
  return user === undefined ? Either.left("a leaf-node user needs user") : ok({ user, password: first(s.password, s.pass), account: s.account })
})

const leafAuthorizationFields = {
  ...peerAuthorizationFields,
  account: opt(Str),
  users: opt(oneOf("a list of users", { list: Schema.Array(LeafUser) }))
}

const LeafAuthorization: Schema.Schema<LeafNodeAuthorization, unknown> = block(leafAuthorizationFields, (s) => {
  const c = peerCredentials(s)
  if (c.user !== undefined && (s.users?.length ?? 0) > 0) return Either.left("give either user/password or users, not both")
  return ok({ ...c, account: s.account, users: s.users ?? [] })
})

/** `off`, `false` or `disabled`: what turns a feature this version does not have off. */
const offWord = (u: unknown): boolean => u === false || u === "off" || u === "disabled"

const leafRemoteFields = {
  url: opt(LeafUrls),
  urls: opt(LeafUrls),
  account: opt(Str),
  local: opt(Str),
  credentials: opt(Str),
  nkey: notYet("an nkey seed on leaf-node remotes (nats-server 2.9 has none either): use a credentials file"),
  tls: opt(RemoteTls),
  ws_compression: opt(refusedUnless(offWord, "compression on WebSocket leaf-node connections is not supported by this version yet")),
  compression: opt(refusedUnless(offWord, "leaf-node compression is not supported by this version yet")),
  hub: opt(refusedUnless((u) => u === false, "a remote that makes this server the hub (hub: true) is not supported by this version yet")),
  deny_imports: opt(StringList),
  deny_exports: opt(StringList),
  first_info_timeout: notYet("first_info_timeout")
}

const LeafRemoteSchema: Schema.Schema<LeafRemote, unknown> = block(leafRemoteFields, (s): Either.Either<LeafRemote, string> => {
  const urls = [...(s.url ?? []), ...(s.urls ?? [])]
  if (urls.length === 0) return Either.left("a remote needs url or urls")
  if (s.credentials !== undefined && urls.some((u) => { const p = parseLeafUrl(u); return p?.user !== undefined })) {
    return Either.left("give either credentials or user:password in the URL, not both")
  }
  for (const [key, list] of [["deny_imports", s.deny_imports], ["deny_exports", s.deny_exports]] as const) {
    const bad = list?.find((subject) => !isValidSubject(subject))
    if (bad !== undefined) return Either.left(`${key}: ${JSON.stringify(bad)} is not a valid subject`)
  }
  return ok({
    urls,
    account: first(s.account, s.local) ?? "$G",
    tls: s.tls,
    credentials: s.credentials,
    denyImports: s.deny_imports,
    denyExports: s.deny_exports
  })
})

const leafnodesFields = {
  host: opt(Str),
  port: opt(Port),
  listen: opt(Listen),
  advertise: opt(Str),
  no_advertise: opt(Bool),
  authorization: opt(LeafAuthorization),
  remotes: opt(oneOf("a list of remotes", { list: Schema.Array(LeafRemoteSchema) })),
  reconnect: opt(Duration),
  reconnect_delay: opt(Duration),
  tls: opt(Tls),
  compression: opt(refusedUnless(offWord, "leaf-node compression is not supported by this version yet")),
  min_version: notYet("min_version for leaf nodes"),
  isolate_leafnode_interest: notYet("isolate_leafnode_interest")
}

const DEFAULT_LEAF_RECONNECT_MS = 1_000

const LeafNodes: Schema.Schema<LeafNodeOptions, unknown> = block(leafnodesFields, (s): Either.Either<LeafNodeOptions, string> => {
  const written = first(s.port, s.listen?.port)
  return ok({
    host: first(s.host, s.listen?.host) ?? "",
    // -1: a port the system picks; absent or 0: no listener (only remotes), as nats-server reads it.
    port: written === undefined || written === 0 ? undefined : written === -1 ? 0 : written,
    advertise: s.advertise,
    noAdvertise: s.no_advertise ?? false,
    authorization: s.authorization,
    tls: s.tls,
    remotes: s.remotes ?? [],
    reconnectMs: first(s.reconnect, s.reconnect_delay) ?? DEFAULT_LEAF_RECONNECT_MS
  })
})

// ---- http (monitoring) -------------------------------------------------------------

/** `http` is "host:port", a port, or (the spec's form) a block that also carries the HTTPS `tls`. */
interface HttpListen {
  readonly host: string | undefined
  readonly port: number | undefined
  readonly tls: TlsOptions | undefined
}

const httpFields = {
  host: opt(Str),
  port: opt(Port),
  listen: opt(Listen),
  tls: opt(Tls)
}

const Http: Schema.Schema<HttpListen, unknown> = oneOf<HttpListen>('"host:port", a port number or a block with host, port and tls', {
  scalar: (u) => {
    const hp = typeof u === "number" ? (validPort(u) ? { host: undefined, port: u } : undefined)
      : typeof u === "string" ? parseHostPort(u.trim()) : undefined
    return hp === undefined ? NO : { host: hp.host, port: hp.port, tls: undefined }
  },
  map: block(httpFields, (s) => ok({ host: first(s.host, s.listen?.host), port: first(s.port, s.listen?.port), tls: s.tls }))
})

// ---- the whole file --------------------------------------------------------------

const topFields = {
  server_name: opt(ServerName),
  name: opt(ServerName),
  host: opt(Str),
  net: opt(Str),
  port: opt(Port),
  listen: opt(Listen),
  http: opt(Http),
  http_port: opt(Port),
  monitor_port: opt(Port),
  https: opt(Listen),
  https_port: opt(Port),
  http_base_path: opt(Str),
  max_connections: opt(NonNegInt),
  max_conn: opt(NonNegInt),
  max_payload: opt(PosSize),
  max_control_line: opt(PosSize),
  max_pending: opt(PosSize),
  max_subscriptions: opt(NonNegInt),
  max_subs: opt(NonNegInt),
  write_deadline: opt(Duration),
  ping_interval: opt(Duration),
  ping_max: opt(NonNegInt),
  busy_poll: opt(DurationMicros),
  max_closed_clients: opt(NonNegInt),
  no_header_support: opt(Bool),
  tls: opt(Tls),
  authorization: opt(Authorization),
  no_auth_user: opt(Str),
  accounts: opt(Accounts),
  system_account: opt(Str),
  jetstream: opt(JetStream),
  store_dir: opt(Str),
  mqtt: opt(Mqtt),
  websocket: opt(Websocket),
  ws: opt(Websocket),
  cluster: opt(Cluster),
  leafnodes: opt(LeafNodes),
  leaf: opt(LeafNodes),
  debug: opt(Bool),
  trace: opt(Bool),
  logtime: opt(Bool),
  log_file: opt(Str),
  logfile: opt(Str),
  logtime_utc: opt(Bool),
  log_size_limit: opt(NonNegSize),
  logfile_size_limit: opt(NonNegSize),
  logfile_max_num: opt(NonNegInt),
  log_max_num: opt(NonNegInt),
  syslog: opt(refusedUnless((u) => u === false, SYSLOG_REFUSED)),
  remote_syslog: opt(refusedUnless((u) => u === "", SYSLOG_REFUSED)),
  pid_file: opt(Str),
  pidfile: opt(Str),
  ports_file_dir: opt(Str),
  lame_duck_duration: opt(Duration),
  lame_duck_grace_period: opt(Duration)
}

const definedOnly = <T extends object>(o: T): T | undefined =>
  Object.values(o).some((v) => v !== undefined) ? o : undefined

/** The configuration file, decoded: what it sets, in ServerOptions' terms. */
export const ConfigFile: Schema.Schema<OptionsPatch, unknown> = block(topFields, (s): Either.Either<OptionsPatch, string> => {
  const clientWritten = first(s.port, s.listen?.port)
  const httpWritten = first(s.http_port, s.monitor_port, s.http?.port)
  const httpsWritten = first(s.https_port, s.https?.port)
  const jetstream = s.jetstream ?? (s.store_dir === undefined ? undefined : {})
  return ok({
    serverName: first(s.server_name, s.name),
    host: first(s.host, s.net, s.listen?.host),
    port: clientWritten === undefined ? undefined : clientPort(clientWritten),
    httpHost: first(s.http?.host, s.https?.host),
    httpPort: httpWritten === undefined ? undefined : monitorPort(httpWritten),
    httpsPort: httpsWritten === undefined ? undefined : monitorPort(httpsWritten),
    httpBasePath: s.http_base_path,
    httpTls: s.http?.tls,
    maxConnections: first(s.max_connections, s.max_conn),
    maxPayload: s.max_payload,
    maxControlLine: s.max_control_line,
    maxPending: s.max_pending,
    maxSubscriptions: first(s.max_subscriptions, s.max_subs),
    writeDeadlineMs: s.write_deadline,
    pingIntervalMs: s.ping_interval,
    pingMax: s.ping_max,
    busyPollUs: s.busy_poll,
    maxClosedClients: s.max_closed_clients,
    noHeaderSupport: s.no_header_support,
    tls: s.tls,
    authorization: s.authorization,
    noAuthUser: s.no_auth_user,
    accounts: s.accounts,
    systemAccount: s.system_account,
    jetstream:
      jetstream === undefined ? undefined : { ...jetstream, storeDir: first(jetstream.storeDir, s.store_dir) },
    mqtt: s.mqtt,
    websocket: first(s.websocket, s.ws),
    cluster: s.cluster,
    leafnodes: first(s.leafnodes, s.leaf),
    log: definedOnly({
      debug: s.debug,
      trace: s.trace,
      logtime: s.logtime,
      logFile: first(s.log_file, s.logfile),
      logtimeUtc: s.logtime_utc,
      logSizeLimit: first(s.log_size_limit, s.logfile_size_limit),
      logMaxNum: first(s.logfile_max_num, s.log_max_num)
    }),
    pidFile: first(s.pid_file, s.pidfile),
    portsFileDir: s.ports_file_dir,
    lameDuckDurationMs: s.lame_duck_duration,
    lameDuckGracePeriodMs: s.lame_duck_grace_period
  })
})

// ---- keys, for unknown-key warnings ------------------------------------------------

/**
 * The keys a block accepts. `children` describe the blocks under a key (a map
 * value, or each map in a list value); `entries` describes every value of a
 * block whose keys are names (accounts); `ignored` are nats-server keys this
 * version does not act on (a warning, an error under `-t`), `refused` those of them
 * the server will not start with; every key of a `notImplemented` block is one
 * this version does not act on, for the reason given.
 */
export interface KeySpec {
  readonly known: ReadonlySet<string>
  readonly ignored: ReadonlySet<string>
  readonly refused: ReadonlySet<string>
  readonly children: Readonly<Record<string, KeySpec>>
  readonly entries?: KeySpec
  readonly notImplemented?: string
}

const spec = (
  fields: object,
  children: Record<string, KeySpec> = {},
  block?: keyof typeof notImplementedKeys
): KeySpec => ({
  known: new Set(Object.keys(fields)),
  ignored: new Set(block === undefined ? [] : notImplementedKeys[block]),
  refused: new Set(block === undefined ? [] : (refusedKeys[block] ?? [])),
  children
})

const namesOnly = (entries: KeySpec): KeySpec => ({ known: new Set(), ignored: new Set(), refused: new Set(), children: {}, entries })


const tlsSpec = spec(tlsFields, {}, "tls")
const subjectPermissionSpec = spec(subjectPermissionFields)
const permissionsSpec = spec(
  permissionsFields,
  {
    publish: subjectPermissionSpec,
    pub: subjectPermissionSpec,
    import: subjectPermissionSpec,
    subscribe: subjectPermissionSpec,
    sub: subjectPermissionSpec,
    export: subjectPermissionSpec,
    allow_responses: spec(allowResponsesFields),
    allow_response: spec(allowResponsesFields)
  }
)
const userSpec = spec(userFields, { permissions: permissionsSpec }, "user")
const authorizationSpec = spec(
  authorizationFields,
  {
    users: userSpec,
    permissions: permissionsSpec,
    default_permissions: permissionsSpec,
    default_permission: permissionsSpec
  },
  "authorization"
)
const importSourceSpec = spec(importSourceFields)
const accountSpec = spec(
  accountFields,
  {
    users: userSpec,
    exports: spec(exportFields, {}, "export"),
    imports: spec(importFields, { stream: importSourceSpec, service: importSourceSpec }, "import"),
    jetstream: { ...spec({}), notImplemented: accountJetStreamLimits }
  },
  "account"
)
const mqttSpec = spec(mqttFields, { tls: tlsSpec, authorization: authorizationSpec }, "mqtt")
const websocketSpec = spec(websocketFields, { tls: tlsSpec }, "websocket")
const clusterSpec = spec(clusterFields, {
  authorization: spec(clusterAuthorizationFields, { permissions: permissionsSpec }),
  permissions: permissionsSpec,
  tls: tlsSpec
})

const leafnodesSpec = spec(leafnodesFields, {
  authorization: spec(leafAuthorizationFields, { users: spec(leafUserFields) }),
  tls: tlsSpec,
  remotes: spec(leafRemoteFields, { tls: spec(remoteTlsFields, {}, "tls") })
})

/** Every block's keys, from the top of the file down. */
export const configKeys: KeySpec = spec(
  topFields,
  {
    tls: tlsSpec,
    http: spec(httpFields, { tls: tlsSpec }),
    authorization: authorizationSpec,
    accounts: namesOnly(accountSpec),
    jetstream: spec(jetstreamFields, {}, "jetstream"),
    mqtt: mqttSpec,
    websocket: websocketSpec,
    ws: websocketSpec,
    cluster: clusterSpec,
    leafnodes: leafnodesSpec,
    leaf: leafnodesSpec
  },
  "top"
)
