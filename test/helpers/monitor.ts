// End-to-end monitoring tests: the whole server (`serve()`: NATS listener plus the
// monitoring listeners) on ephemeral ports with its log captured in memory, an
// HTTP(S) client, JSON Schema validation of live answers against the checked-in
// schemas/<endpoint>.json, and parsers for the duration forms the server prints.
import { readFileSync } from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import { join } from "node:path"
import { Ajv, type ValidateFunction } from "ajv"
import addFormats from "ajv-formats"
import { Effect, Exit, Layer, Scope } from "effect"
import { expect } from "vitest"
import type { ServerOptions } from "../../src/config/options.js"
import type { Disk } from "../../src/services/disk.js"
import { MonitorEndpoints } from "../../src/core/monitor/endpoints.js"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { serve, type Serving } from "../../src/server/serve.js"
import { testOptions } from "./server.js"

export interface MonitoredServer {
  readonly serving: Serving
  /** Every log line the server wrote (debug and trace included). */
  readonly lines: Array<string>
  readonly natsPort: number
  /** "127.0.0.1:<natsPort>", for `connect({ servers })`. */
  readonly url: string
  /** Bound monitoring ports; undefined when that listener is off. */
  readonly monitorPort: number | undefined
  readonly httpsPort: number | undefined
  /** `http://127.0.0.1:<monitorPort>` (no base path). */
  readonly base: string
  close(): Promise<void>
}

/**
 * Run `serve()` for real: NATS on 127.0.0.1:0, plain HTTP monitoring on
 * 127.0.0.1:0 (unless `over` says otherwise), Node transport, in-memory log.
 */
export const startMonitoredServer = async (over: Partial<ServerOptions> = {}, disk?: Layer.Layer<Disk>): Promise<MonitoredServer> => {
  const lines: Array<string> = []
  const scope = Effect.runSync(Scope.make())
  const base = Layer.merge(layerNode, layerMemoryLog(lines))
  const layer = disk === undefined ? base : Layer.merge(base, disk)
  const options = testOptions({ httpHost: "127.0.0.1", httpPort: 0, ...over })
  const exit = await Effect.runPromiseExit(serve(options).pipe(Effect.provide(layer), Scope.extend(scope)))
  if (Exit.isFailure(exit)) {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw new Error(`serve() failed: ${String(exit.cause)}\n${lines.join("")}`)
  }
  const serving = exit.value
  const monitorPort = serving.monitor?.port
  return {
    serving,
    lines,
    natsPort: serving.port,
    url: `127.0.0.1:${serving.port}`,
    monitorPort,
    httpsPort: serving.monitor?.httpsPort,
    base: `http://127.0.0.1:${monitorPort ?? 0}`,
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

// Configuration shapes live with the generic server helpers.
export { account, authorization, userEntry } from "./server.js"

// ---- HTTP ----

export interface Got {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

export interface RequestOptions {
  readonly method?: string
  /** Trusted CA for https URLs (a self-signed certificate itself). */
  readonly ca?: Buffer
  readonly servername?: string
  /** Local address to connect from / the host to reach (for binding tests). */
  readonly host?: string
}

/** One request; the raw path is sent as given (no URL normalization). */
export const request = (url: string, o: RequestOptions = {}): Promise<Got> =>
  new Promise((resolve, reject) => {
    const u = new URL(url)
    const isHttps = u.protocol === "https:"
    const path = url.slice(url.indexOf("/", u.protocol.length + 2))
    const common = { host: o.host ?? u.hostname.replace(/^\[(.*)\]$/, "$1"), port: Number(u.port), path, method: o.method ?? "GET", agent: false as const }
    const onRes = (res: http.IncomingMessage) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }))
      res.on("error", reject)
    }
    const req = isHttps
      ? https.request({ ...common, ca: o.ca, servername: o.servername, rejectUnauthorized: o.ca !== undefined }, onRes)
      : http.request(common, onRes)
    req.on("error", reject)
    req.end()
  })

// ---- schemas ----

const ajv = new Ajv({ strict: false, allErrors: true })
addFormats.default(ajv)
const validators = new Map<string, ValidateFunction>()

/** The compiled validator of the checked-in schemas/<name>.json. */
export const validatorFor = (name: string): ValidateFunction => {
  let v = validators.get(name)
  if (v === undefined) {
    v = ajv.compile(JSON.parse(readFileSync(join(process.cwd(), "schemas", `${name}.json`), "utf8")))
    validators.set(name, v)
  }
  return v
}

/** Throws, naming the request and every violation, unless `json` matches schemas/<name>.json. */
export const assertSchema = (name: string, json: unknown, what: string): void => {
  const v = validatorFor(name)
  if (!v(json)) throw new Error(`${what} does not match schemas/${name}.json: ${ajv.errorsText(v.errors, { separator: "\n  " })}`)
}

/** The endpoint serving a local path (aliases included). */
export const endpointFor = (path: string) =>
  MonitorEndpoints.find((e) => e.path === path || e.aliases.includes(path as `/${string}`))

/** The schema a JSON answer must match: the endpoint's for 200 (and /healthz 503), else the error body. */
export const schemaNameFor = (localPath: string, status: number): string => {
  const e = endpointFor(localPath)
  if (e === undefined) return "error"
  if (status === 200 || (e.name === "healthz" && status === 503)) return e.name
  return "error"
}

/**
 * GET a JSON endpoint, check the JSON headers and validate the body against its
 * published schema; `base` may include a base path, `localPath` must not.
 */
export const getJson = async <T = any>(
  base: string,
  pathAndQuery: string,
  expectStatus = 200,
  o: RequestOptions = {}
): Promise<{ readonly status: number; readonly json: T; readonly got: Got }> => {
  const got = await request(base + pathAndQuery, o)
  const what = `GET ${pathAndQuery} (${got.status})`
  if (got.status !== expectStatus) throw new Error(`${what}: expected status ${expectStatus}; body ${got.body.slice(0, 500)}`)
  if (got.headers["content-type"] !== "application/json") throw new Error(`${what}: content-type ${got.headers["content-type"]}`)
  if (got.headers["access-control-allow-origin"] !== "*") throw new Error(`${what}: no Access-Control-Allow-Origin: *`)
  const json = JSON.parse(got.body) as T
  const local = pathAndQuery.split("?")[0]
  assertSchema(schemaNameFor(local, got.status), json, what)
  return { status: got.status, json, got }
}

// ---- wire forms ----

/** ISO 8601 UTC with fractional seconds, as every timestamp must be. */
export const TimestampRe = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{1,9}Z$/
/** Go's time.Duration.String(). */
export const GoDurationRe = /^(0s|\d+(\.\d+)?(ns|µs|ms)|(\d+h)?(\d+m)?\d+(\.\d+)?s)$/
/** nats-server's uptime/idle form. */
export const UptimeRe = /^(\d+y)?(\d+d)?(\d+h)?(\d+m)?\d+s$/

/** Go duration text → nanoseconds. */
export const parseGoDuration = (s: string): number => {
  if (!GoDurationRe.test(s)) throw new Error(`not a Go duration: ${s}`)
  const unit: Record<string, number> = { ns: 1, "µs": 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 }
  let total = 0
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ns|µs|ms|s|m|h)/g)) total += Number(m[1]) * unit[m[2]]
  return Math.round(total)
}

/** Uptime text → seconds. */
export const parseUptime = (s: string): number => {
  if (!UptimeRe.test(s)) throw new Error(`not an uptime: ${s}`)
  const unit: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, y: 365 * 86400 }
  let total = 0
  for (const m of s.matchAll(/(\d+)([smhdy])/g)) total += Number(m[1]) * unit[m[2]]
  return total
}

/** Timestamp text → ms since the epoch (sub-millisecond digits kept as a fraction). */
export const parseTimestamp = (s: string): number => {
  if (!TimestampRe.test(s)) throw new Error(`not a timestamp: ${s}`)
  const frac = s.slice(20, -1)
  return Date.parse(s.slice(0, 19) + "Z") + Number(`0.${frac}`) * 1000
}

// ---- the sweep: every endpoint with every parameter ----

export interface SweepParams {
  /** An open connection's id, a closed one's id. */
  readonly cid: number
  readonly closedCid: number
  /** A user name and an account name that exist on the server. */
  readonly user: string
  readonly acc: string
  /** A subject some client subscribes to (literal) and a pattern overlapping it. */
  readonly subject: string
  readonly pattern: string
}

const SortKeys = ["cid", "start", "subs", "pending", "msgs_to", "msgs_from", "bytes_to", "bytes_from", "last", "idle", "uptime", "stop", "reason", "rtt"] as const

/** Requests answered 200 (or 503/404 where that is the endpoint's documented answer). */
export const sweepRequests = (p: SweepParams): ReadonlyArray<string> => {
  const acc = encodeURIComponent(p.acc)
  const user = encodeURIComponent(p.user)
  return [
    "/",
    "/varz",
    "/connz",
    ...SortKeys.flatMap((k) =>
      k === "stop" || k === "reason"
        ? [`/connz?sort=${k}&state=closed`, `/connz?sort=${k}&state=closed&auth=true&subs=detail`]
        : [`/connz?sort=${k}`, `/connz?sort=${k}&state=all&auth=true&subs=true`, `/connz?sort=${k}&state=closed`]
    ),
    "/connz?auth=true",
    "/connz?auth=1&subs=true",
    "/connz?subs=detail",
    "/connz?subs=DETAIL&auth=true&state=all",
    "/connz?offset=1&limit=2",
    "/connz?offset=100000",
    "/connz?limit=0",
    "/connz?limit=1",
    `/connz?cid=${p.cid}`,
    `/connz?cid=${p.cid}&auth=true&subs=detail`,
    `/connz?cid=${p.closedCid}&state=closed&auth=true&subs=true`,
    `/connz?cid=${p.closedCid}&state=all`,
    "/connz?cid=999999",
    "/connz?state=open",
    "/connz?state=closed",
    "/connz?state=closed&auth=true&subs=detail",
    "/connz?state=all&auth=true&subs=detail",
    "/connz?state=any",
    `/connz?user=${user}`,
    `/connz?user=${user}&auth=true&subs=detail&state=all`,
    `/connz?acc=${acc}&auth=true`,
    `/connz?acc=${acc}&state=closed&auth=true&subs=true`,
    "/connz?user=nobody&acc=nowhere",
    "/connz?mqtt_client=nobody",
    "/routez",
    "/routez?subs=true",
    "/routez?subs=detail",
    "/gatewayz",
    `/gatewayz?accs=true&subs=detail&gw_name=east&acc_name=${acc}`,
    "/leafz",
    "/leafz?subs=true",
    `/leafz?acc=${acc}&subs=1`,
    "/subsz",
    "/subscriptionsz",
    "/subsz?subs=true",
    "/subsz?subs=1&offset=1&limit=2",
    `/subsz?acc=${acc}&subs=true`,
    `/subsz?subject=${encodeURIComponent(p.pattern)}&subs=true`,
    `/subsz?subject=${encodeURIComponent(p.subject)}`,
    `/subsz?test=${encodeURIComponent(p.subject)}`,
    `/subsz?test=${encodeURIComponent(p.subject)}&subs=true`,
    "/subsz?test=no.such.subject&subs=true",
    "/jsz",
    "/jsz?accounts=true",
    "/jsz?streams=true",
    "/jsz?consumers=true",
    "/jsz?consumers=true&config=true",
    `/jsz?acc=${acc}&streams=true&consumers=true&config=true`,
    "/jsz?accounts=true&offset=1&limit=1",
    "/jsz?leader-only=true",
    "/healthz",
    "/healthz?js-enabled-only=true",
    "/healthz?js-enabled-only=true&details=true",
    "/healthz?js-server-only=true",
    "/healthz?details=true",
    "/healthz?js-enabled=true",
    "/accountz",
    `/accountz?acc=${acc}`,
    "/accountz?acc=%24G",
    "/accountz?acc=%24SYS",
    "/accountstatz",
    "/accountstatz?unused=true",
    `/accountstatz?acc=${acc}`,
    "/accstatz",
    "/accstatz?acc=%24G&unused=true",
    "/stacksz",
    "/raftz",
    `/raftz?acc=${acc}&group=meta`,
    "/ipqueuesz",
    "/ipqueuesz?all=true",
    "/ipqueuesz?all=true&queues=outbound",
    "/metrics"
  ]
}

/** Bad input: each must be a 400 with an error body naming the parameter (or a 404 for unknown paths). */
export const BadRequests: ReadonlyArray<readonly [path: string, status: number, parameter: string | undefined]> = [
  ["/connz?sort=nope", 400, "sort"],
  ["/connz?sort=stop", 400, "sort"],
  ["/connz?sort=reason&state=all", 400, "sort"],
  ["/connz?sort=stop&state=open", 400, "sort"],
  ["/connz?limit=abc", 400, "limit"],
  ["/connz?limit=1.5", 400, "limit"],
  ["/connz?offset=-x", 400, "offset"],
  ["/connz?cid=abc", 400, "cid"],
  ["/connz?cid=-1", 400, "cid"],
  ["/connz?state=asleep", 400, "state"],
  ["/connz?auth=yes", 400, "auth"],
  ["/connz?subs=verbose", 400, "subs"],
  ["/routez?subs=2", 400, "subs"],
  ["/leafz?subs=maybe", 400, "subs"],
  ["/subsz?subs=yes", 400, "subs"],
  ["/subsz?limit=ten", 400, "limit"],
  ["/subsz?test=a.*", 400, "test"],
  ["/subsz?subject=a..b", 400, "subject"],
  ["/jsz?streams=maybe", 400, "streams"],
  ["/jsz?limit=x", 400, "limit"],
  ["/healthz?js-enabled-only=sure", 400, "js-enabled-only"],
  ["/healthz?details=please", 400, "details"],
  ["/accountz?acc=NOPE", 400, "acc"],
  ["/accountstatz?unused=nah", 400, "unused"],
  ["/gatewayz?accs=nah", 400, "accs"],
  ["/ipqueuesz?all=x", 400, "all"],
  ["/nope", 404, undefined],
  ["/varz/", 404, undefined],
  ["/VARZ", 404, undefined],
  ["/connz/extra", 404, undefined],
  ["/favicon.ico", 404, undefined]
]

/** GET and HEAD every path: no sentinel (as `leaks` finds them) in any body or header. */
export const expectNoLeaks = async (base: string, paths: ReadonlyArray<string>, leaks: (text: string) => ReadonlyArray<string>): Promise<void> => {
  for (const path of paths) {
    for (const method of ["GET", "HEAD"]) {
      const r = await request(base + path, { method })
      expect(leaks(r.body), `${method} ${path} body`).toEqual([])
      expect(leaks(JSON.stringify(r.headers)), `${method} ${path} headers`).toEqual([])
    }
  }
}
