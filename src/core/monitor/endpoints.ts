// THE endpoint table: path, query parameters, response schema, handler and
// description of every monitoring endpoint. The HTTP routes, schemas/*.json and
// the OpenAPI document are all derived from this one list.
import { Either, Schema } from "effect"
import * as M from "../../schema/monitor.js"
import type { ErrorBody, ParamSpecs, QueryOf } from "../../schema/monitor.js"
import { buildAccountStatz, buildAccountz } from "./accountz.js"
import { buildGatewayz, buildLeafz, buildRoutez } from "./cluster.js"
import { buildConnz, connzOptions, DefaultListSize } from "./connz.js"
import { buildHealthz, healthzOptions } from "./healthz.js"
import { buildIndexPage } from "./html.js"
import { buildJsz, jszOptions } from "./jsz.js"
import { decodeQuery } from "./query.js"
import { buildMetrics } from "./metrics.js"
import { MetricsContentType } from "./prometheus.js"
import { buildIpqueuesz, NoRaftNodes, sanitizeReport } from "./runtime.js"
import type { MonitorSource, ProcessProbe } from "./source.js"
import { buildSubsz, subszOptions } from "./subsz.js"
import { buildVarz, type HttpInfo } from "./varz.js"

/** Everything a handler may read. `now` is taken once per request. */
export interface MonitorContext {
  readonly source: MonitorSource
  readonly process: ProcessProbe
  readonly http: HttpInfo
  readonly now: number
}

export type Reply =
  | { readonly _tag: "json"; readonly status: number; readonly body: unknown }
  | { readonly _tag: "text"; readonly status: number; readonly contentType: string; readonly body: string }

export const HtmlContentType = "text/html; charset=utf-8"
export const JsonContentType = "application/json"

export interface ErrorResponse {
  readonly status: number
  readonly description: string
  readonly schema: Schema.Schema.Any
}

export interface Endpoint<S extends ParamSpecs = ParamSpecs> {
  /** Stable short name: schemas/<name>.json, the OpenAPI operationId. */
  readonly name: string
  readonly path: `/${string}`
  /** Other paths serving the same thing (nats-server spellings). */
  readonly aliases: ReadonlyArray<`/${string}`>
  readonly title: string
  readonly description: string
  readonly params: S
  /** Effect Schema of the query string, built from `params`. */
  readonly query: Schema.Schema.Any
  /** Schema of the 200 JSON body; undefined for the HTML index and /metrics. */
  readonly response: Schema.Schema.Any | undefined
  readonly produces: string
  /** Non-200 answers the endpoint gives on purpose (400 bad parameter, 503 unhealthy, …). */
  readonly errors: ReadonlyArray<ErrorResponse>
  readonly handle: (ctx: MonitorContext, query: QueryOf<S>) => Reply
}

const json = (body: unknown, status = 200): Reply => ({ _tag: "json", status, body })
const fromEither = <A>(e: Either.Either<A, ErrorBody>): Reply =>
  Either.isRight(e) ? json(e.right) : json(e.left, 400)

const badRequest: ErrorResponse = {
  status: 400,
  description: "A query parameter is malformed or not allowed; the body names it and the allowed values",
  schema: M.ErrorBody
}

const endpoint = <S extends ParamSpecs>(e: Omit<Endpoint<S>, "query" | "errors" | "aliases" | "produces"> & {
  readonly errors?: ReadonlyArray<ErrorResponse>
  readonly aliases?: ReadonlyArray<`/${string}`>
  readonly produces?: string
}): Endpoint<S> => ({
  ...e,
  aliases: e.aliases ?? [],
  produces: e.produces ?? JsonContentType,
  query: M.querySchema(e.params),
  errors: e.errors ?? (Object.keys(e.params).length > 0 ? [badRequest] : [])
})

const serverId = (ctx: MonitorContext): string => ctx.source.server().serverId

export const MonitorEndpoints: ReadonlyArray<Endpoint<any>> = [
  endpoint({
    name: "root",
    path: "/",
    title: "Index",
    description: "HTML page linking every monitoring endpoint",
    params: M.NoParams,
    response: undefined,
    produces: HtmlContentType,
    handle: (ctx) => ({
      _tag: "text",
      status: 200,
      contentType: HtmlContentType,
      body: buildIndexPage(
        ctx.http.basePath,
        ctx.source.server().version,
        MonitorEndpoints.filter((e) => e.path !== "/")
      )
    })
  }),
  endpoint({
    name: "varz",
    path: "/varz",
    title: "General",
    description: "Server identity, configuration, limits, memory/CPU use and message counters",
    params: M.NoParams,
    response: M.Varz,
    handle: (ctx) => {
      const s = ctx.source
      return json(buildVarz(s.server(), ctx.process.sample(), s.jetstream(), ctx.http, ctx.now))
    }
  }),
  endpoint({
    name: "connz",
    path: "/connz",
    title: "Connections",
    description: "Client and leafnode connections: filter, sort and page; closed ones with state=closed",
    params: M.ConnzParams,
    response: M.Connz,
    handle: (ctx, q) =>
      fromEither(
        Either.map(connzOptions(q), (o) =>
          buildConnz(
            serverId(ctx),
            ctx.now,
            o.state === "closed" ? [] : ctx.source.connections(),
            o.state === "open" ? [] : ctx.source.closed(),
            o
          )
        )
      )
  }),
  endpoint({
    name: "routez",
    path: "/routez",
    title: "Routes",
    description: "Route (cluster) connections",
    params: M.RoutezParams,
    response: M.Routez,
    handle: (ctx, q) =>
      json(buildRoutez(ctx.source.server(), ctx.now, ctx.source.routes?.() ?? [], q.subs ?? false))
  }),
  endpoint({
    name: "gatewayz",
    path: "/gatewayz",
    title: "Gateways",
    description: "Gateway (supercluster) connections, inbound and outbound",
    params: M.GatewayzParams,
    response: M.Gatewayz,
    handle: (ctx, q) => json(buildGatewayz(serverId(ctx), ctx.now, ctx.source.gateways?.(), { name: q.gw_name }))
  }),
  endpoint({
    name: "leafz",
    path: "/leafz",
    title: "Leafnodes",
    description: "Leafnode connections with their account, round-trip time and traffic",
    params: M.LeafzParams,
    response: M.Leafz,
    handle: (ctx, q) =>
      json(buildLeafz(serverId(ctx), ctx.now, ctx.source.leafs?.() ?? [], { subs: q.subs ?? false, acc: q.acc }))
  }),
  endpoint({
    name: "subsz",
    path: "/subsz",
    aliases: ["/subscriptionsz"],
    title: "Subscriptions",
    description: "Subscription statistics; the subscriptions with subs=true, filtered by subject or test",
    params: M.SubszParams,
    response: M.Subsz,
    handle: (ctx, q) =>
      fromEither(
        Either.map(subszOptions(q), (o) =>
          buildSubsz(serverId(ctx), ctx.now, ctx.source.accounts(), ctx.source.connections(), o)
        )
      )
  }),
  endpoint({
    name: "jsz",
    path: "/jsz",
    title: "JetStream",
    description: "Persistent-stream status: usage, limits, and account/stream/consumer detail on request",
    params: M.JszParams,
    response: M.Jsz,
    handle: (ctx, q) => fromEither(buildJsz(serverId(ctx), ctx.now, ctx.source.jetstream(), jszOptions(q)))
  }),
  endpoint({
    name: "healthz",
    path: "/healthz",
    title: "Health",
    description: "200 {status: ok} when healthy, 503 {status: unavailable, error} otherwise",
    params: M.HealthzParams,
    response: M.Healthz,
    errors: [badRequest, { status: 503, description: "Unhealthy", schema: M.Healthz }],
    handle: (ctx, q) => {
      const r = buildHealthz(ctx.source.health(), healthzOptions(q))
      return json(r.body, r.status)
    }
  }),
  endpoint({
    name: "accountz",
    path: "/accountz",
    title: "Accounts",
    description: "Account names, or one account's detail with acc=<name>",
    params: M.AccountzParams,
    response: M.Accountz,
    handle: (ctx, q) => {
      const s = ctx.source.server()
      return fromEither(buildAccountz(s.serverId, ctx.now, s.systemAccount, ctx.source.accounts(), q.acc))
    }
  }),
  endpoint({
    name: "accountstatz",
    path: "/accountstatz",
    aliases: ["/accstatz"],
    title: "Account statistics",
    description: "Per-account connections, subscriptions, messages and bytes sent and received",
    params: M.AccountStatzParams,
    response: M.AccountStatz,
    handle: (ctx, q) =>
      json(buildAccountStatz(serverId(ctx), ctx.now, ctx.source.accounts(), { unused: q.unused ?? false, acc: q.acc }))
  }),
  endpoint({
    name: "stacksz",
    path: "/stacksz",
    title: "Stacks",
    description: "Node.js diagnostic report: JavaScript and native stacks, libuv handles (JSON, unlike nats-server's text)",
    params: M.NoParams,
    response: M.Stacksz,
    handle: (ctx) => json(sanitizeReport(ctx.process.report()))
  }),
  endpoint({
    name: "raftz",
    path: "/raftz",
    title: "Raft groups",
    description: "Consensus groups; 404 with an error while none exist, as nats-server answers",
    params: M.RaftzParams,
    response: M.Raftz,
    errors: [{ status: 404, description: "No consensus groups exist", schema: M.ErrorBody }],
    handle: () => json(NoRaftNodes, 404)
  }),
  endpoint({
    name: "ipqueuesz",
    path: "/ipqueuesz",
    title: "Internal queues",
    description: "Internal queues and their depth: per-connection outbound buffers (bytes) and server queues",
    params: M.IpqueueszParams,
    response: M.Ipqueuesz,
    handle: (ctx, q) =>
      json(
        buildIpqueuesz(ctx.source.connections(), ctx.source.queues?.() ?? [], { all: q.all ?? false, filter: q.queues })
      )
  }),
  endpoint({
    name: "metrics",
    path: "/metrics",
    title: "Prometheus metrics",
    description: "Counters and gauges in the Prometheus text format: switchyard_* and, under prometheus-nats-exporter's names, gnatsd_varz_*, gnatsd_connz_* and jetstream_*",
    params: M.NoParams,
    response: undefined,
    produces: MetricsContentType,
    handle: (ctx) => {
      const server = ctx.source.server()
      const process = ctx.process.sample()
      const jetstream = ctx.source.jetstream()
      const all = { acc: undefined, accounts: true, streams: true, consumers: true, config: true, leaderOnly: false, offset: 0, limit: -1 }
      const jsz = buildJsz(server.serverId, ctx.now, jetstream, all)
      return {
        _tag: "text",
        status: 200,
        contentType: MetricsContentType,
        body: buildMetrics({
          server,
          process,
          connections: ctx.source.connections(),
          accounts: ctx.source.accounts(),
          jetstream,
          httpReqStats: ctx.http.reqStats,
          now: ctx.now,
          varz: buildVarz(server, process, jetstream, ctx.http, ctx.now),
          // Never refused: leader-only is off.
          jsz: Either.getOrThrow(jsz),
          connzLimit: DefaultListSize
        })
      }
    }
  })
]

/** Path (without base path) → endpoint, aliases included. */
export const endpointIndex = (table: ReadonlyArray<Endpoint<any>>): ReadonlyMap<string, Endpoint<any>> => {
  const m = new Map<string, Endpoint<any>>()
  for (const e of table) {
    m.set(e.path, e)
    for (const a of e.aliases) m.set(a, e)
  }
  return m
}

/** Decode the query against the endpoint's parameters and run its handler. */
export const dispatch = (e: Endpoint<any>, ctx: MonitorContext, get: (name: string) => string | null | undefined): Reply => {
  const q = decodeQuery(e.params, get)
  return Either.isLeft(q) ? json(q.left, 400) : e.handle(ctx, q.right)
}

