// Query parameters of every monitoring endpoint. Each parameter is a small spec:
// an Effect Schema decoding the raw string (the single source for validation and
// for the published parameter schemas) plus what to tell the caller when it fails.
import { Schema } from "effect"

export interface ParamSpec<A> {
  /** Decodes the raw (non-empty) query-string value. Its encoded side is what gets documented. */
  readonly schema: Schema.Schema<A, any>
  /** The accepted spellings, for enumerations and booleans. */
  readonly allowed: ReadonlyArray<string> | undefined
  /** What kind of value is expected, for the 400 body. */
  readonly expected: string
  /** Lower-case the raw value before decoding (nats-server does for `state`). */
  readonly caseInsensitive: boolean
  /** Rewrite the raw value before decoding (e.g. `subs=DETAIL` → `detail`, as nats-server compares it). */
  readonly normalize?: (raw: string) => string
}

export type ParamSpecs = Readonly<Record<string, ParamSpec<any>>>
export type QueryOf<S extends ParamSpecs> = { readonly [K in keyof S]?: S[K] extends ParamSpec<infer A> ? A : never }

/** The spellings Go's strconv.ParseBool accepts, which is what nats-server parses with. */
export const BoolSpellings = ["true", "false", "1", "0", "t", "f", "TRUE", "FALSE", "True", "False", "T", "F"] as const
const TrueSpellings: ReadonlySet<string> = new Set(["true", "1", "t", "TRUE", "True", "T"])

const bool = (description: string): ParamSpec<boolean> => ({
  schema: Schema.transform(Schema.Literal(...BoolSpellings).annotations({ description }), Schema.Boolean, {
    strict: true,
    decode: (s) => TrueSpellings.has(s),
    encode: (b) => (b ? "true" : "false")
  }),
  allowed: ["true", "false", "1", "0"],
  expected: "boolean",
  caseInsensitive: false
})

const subs = (description: string): ParamSpec<boolean | "detail"> => ({
  schema: Schema.transform(
    Schema.Literal(...BoolSpellings, "detail").annotations({ description }),
    Schema.Union(Schema.Boolean, Schema.Literal("detail")),
    {
      strict: true,
      decode: (s) => (s === "detail" ? "detail" : TrueSpellings.has(s)),
      encode: (v) => (v === "detail" ? "detail" : v ? "true" : "false")
    }
  ),
  allowed: ["true", "false", "1", "0", "detail"],
  expected: "boolean or detail",
  caseInsensitive: false,
  // nats-server: strings.ToLower(subs) == "detail"; anything else goes through ParseBool (case as given).
  normalize: (raw) => (raw.toLowerCase() === "detail" ? "detail" : raw)
})

const integer = (description: string, pattern: RegExp, expected: string): ParamSpec<number> => ({
  schema: Schema.transform(Schema.String.pipe(Schema.pattern(pattern)).annotations({ description }), Schema.Int, {
    strict: true,
    decode: (s) => Number(s),
    encode: (n) => String(n)
  }),
  allowed: undefined,
  expected,
  caseInsensitive: false
})
const int = (description: string) => integer(description, /^[+-]?\d{1,15}$/, "integer")
const uint = (description: string) => integer(description, /^\d{1,15}$/, "unsigned integer")

const oneOf = <const L extends ReadonlyArray<string>>(
  values: L,
  description: string,
  caseInsensitive = false
): ParamSpec<L[number]> => ({
  schema: Schema.Literal(...values).annotations({ description }),
  allowed: values,
  expected: "one of the allowed values",
  caseInsensitive
})

const text = (description: string): ParamSpec<string> => ({
  schema: Schema.String.annotations({ description }),
  allowed: undefined,
  expected: "string",
  caseInsensitive: false
})

/** The 14 /connz sort keys; ascending for `cid`, descending for every other key. */
export const ConnzSortKeys = [
  "cid",
  "start",
  "subs",
  "pending",
  "msgs_to",
  "msgs_from",
  "bytes_to",
  "bytes_from",
  "last",
  "idle",
  "uptime",
  "stop",
  "reason",
  "rtt"
] as const
export type ConnzSort = (typeof ConnzSortKeys)[number]

export const ConnStates = ["open", "closed", "all", "any"] as const
export type ConnState = "open" | "closed" | "all"

export const NoParams = {} satisfies ParamSpecs

export const ConnzParams = {
  sort: oneOf(ConnzSortKeys, "Sort order: cid ascending, every other key descending; stop and reason need state=closed"),
  auth: bool("Include authorized_user"),
  subs: subs("Include subscriptions_list (true) or subscriptions_list_detail (detail)"),
  offset: int("Pagination offset (default 0)"),
  limit: int("Pagination size (default 1024)"),
  cid: uint("Only the connection with this id"),
  state: oneOf(ConnStates, "Connection state: open (default), closed, all", true),
  user: text("Only connections of this authorized user"),
  acc: text("Only connections of this account"),
  mqtt_client: text("Only the MQTT connection with this client id")
} satisfies ParamSpecs

export const RoutezParams = {
  subs: subs("Include subscriptions_list (true) or subscriptions_list_detail (detail)")
} satisfies ParamSpecs

export const GatewayzParams = {
  subs: subs("Include account subscriptions (true) or their detail (detail)"),
  accs: bool("Include per-account interest"),
  gw_name: text("Only this remote gateway"),
  acc_name: text("Only this account (implies accs)")
} satisfies ParamSpecs

export const LeafzParams = {
  subs: bool("Include subscriptions_list"),
  acc: text("Only leafnodes bound to this account")
} satisfies ParamSpecs

export const SubszParams = {
  subs: bool("Include subscriptions_list"),
  offset: int("Pagination offset (default 0)"),
  limit: int("Pagination size (default 1024)"),
  acc: text("Only this account"),
  subject: text("Only subscriptions whose subject overlaps this subject pattern"),
  test: text("A publish subject: only subscriptions a message on it would reach")
} satisfies ParamSpecs

export const JszParams = {
  acc: text("Only this account's detail"),
  accounts: bool("Include account_details"),
  streams: bool("Include stream_detail (implies accounts)"),
  consumers: bool("Include consumer_detail (implies streams)"),
  config: bool("Include stream and consumer configurations"),
  "leader-only": bool("Answer only if this server is the stream-subsystem leader"),
  offset: int("Pagination offset over accounts (default 0)"),
  limit: int("Pagination size over accounts (default 1024)")
} satisfies ParamSpecs

export const HealthzParams = {
  "js-enabled-only": bool("503 unless the stream subsystem is enabled and running"),
  "js-server-only": bool("Check the server only, not the stream subsystem"),
  "js-enabled": bool("Deprecated spelling of js-enabled-only"),
  details: bool("nats-server's detailed form: status ok|error with an errors list")
} satisfies ParamSpecs

export const AccountzParams = {
  acc: text("Account name: its detail instead of the list of names")
} satisfies ParamSpecs

export const AccountStatzParams = {
  unused: bool("Also list accounts without local connections"),
  acc: text("Only this account")
} satisfies ParamSpecs

export const IpqueueszParams = {
  all: bool("Also list empty queues"),
  queues: text("Only queues whose name contains this text")
} satisfies ParamSpecs

export const RaftzParams = {
  acc: text("Only groups of this account"),
  group: text("Only this group")
} satisfies ParamSpecs

/** The Effect Schema of an endpoint's query string (all parameters optional strings on the wire). */
export const querySchema = <S extends ParamSpecs>(specs: S) =>
  Schema.Struct(
    Object.fromEntries(Object.entries(specs).map(([k, spec]) => [k, Schema.optional(spec.schema)])) as {
      [K in keyof S]: Schema.optional<S[K]["schema"]>
    }
  )
