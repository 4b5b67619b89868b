// The monitoring listener: plain node:http / node:https servers, opened and
// closed by an Effect scope, routing every request through the endpoint table.
// Requests are answered synchronously from fresh snapshots; bad input gets a
// 400 JSON body, unknown paths a 404, and nothing a client sends can crash it.
import { readFile } from "node:fs/promises"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { Context, Data, Effect, Layer, type Scope } from "effect"
import type { ServerOptions } from "../../config/options.js"
import {
  dispatch,
  endpointIndex,
  JsonContentType,
  MonitorEndpoints,
  type Endpoint,
  type MonitorContext,
  type Reply
} from "../../core/monitor/endpoints.js"
import type { MonitorSource, ProcessProbe } from "../../core/monitor/source.js"
import { nodeProcessProbe } from "./process.js"

/** The settings the monitor reads; a subset of ServerOptions. */
export type MonitorOptions = Pick<ServerOptions, "httpHost" | "httpPort" | "httpsPort" | "httpBasePath" | "httpTls">

export class MonitorError extends Data.TaggedError("MonitorError")<{
  readonly reason: "Listen" | "Tls"
  readonly message: string
  readonly cause?: unknown
}> {}

export interface MonitorHandle {
  /** Bound HTTP port; undefined when plain HTTP monitoring is off. */
  readonly port: number | undefined
  /** Bound HTTPS port; undefined when HTTPS monitoring is off. */
  readonly httpsPort: number | undefined
  /** Requests served per endpoint path (what /varz reports as http_req_stats). */
  readonly httpReqStats: () => Readonly<Record<string, number>>
}

/** `http_base_path` normalized to "" or "/prefix" (leading slash, no trailing slash). */
export const normalizeBasePath = (raw: string): string => {
  const trimmed = raw.trim().replace(/\/+$/, "")
  if (trimmed === "") return ""
  return trimmed.startsWith("/") ? trimmed : `/${trimmed}`
}

interface Routing {
  readonly basePath: string
  readonly routes: ReadonlyMap<string, Endpoint<any>>
  readonly stats: Map<string, number>
  readonly source: MonitorSource
  readonly process: ProcessProbe
  readonly host: string
  readonly ports: { http: number; https: number }
}

const commonHeaders = { "Access-Control-Allow-Origin": "*" } as const

const send = (req: http.IncomingMessage, res: http.ServerResponse, status: number, contentType: string, body: string) => {
  const bytes = Buffer.from(body, "utf8")
  res.writeHead(status, { ...commonHeaders, "Content-Type": contentType, "Content-Length": bytes.length })
  res.end(req.method === "HEAD" ? undefined : bytes)
}

const sendReply = (req: http.IncomingMessage, res: http.ServerResponse, reply: Reply) =>
  reply._tag === "json"
    ? send(req, res, reply.status, JsonContentType, JSON.stringify(reply.body, null, 2))
    : send(req, res, reply.status, reply.contentType, reply.body)

const sendError = (req: http.IncomingMessage, res: http.ServerResponse, status: number, error: string) =>
  send(req, res, status, JsonContentType, JSON.stringify({ error }, null, 2))

/** The path under the base path, or undefined when the request is outside it. */
const localPath = (basePath: string, path: string): string | undefined => {
  if (basePath === "") return path
  if (path === basePath) return "/"
  return path.startsWith(`${basePath}/`) ? path.slice(basePath.length) : undefined
}

const handle = (r: Routing, req: http.IncomingMessage, res: http.ServerResponse): void => {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("Allow", "GET, HEAD")
    return sendError(req, res, 405, `method ${String(req.method).slice(0, 20)} not allowed`)
  }
  const url = req.url ?? "/"
  const q = url.indexOf("?")
  const rawPath = q < 0 ? url : url.slice(0, q)
  let path: string
  try {
    path = decodeURIComponent(rawPath)
  } catch {
    return sendError(req, res, 400, "malformed path")
  }
  const local = localPath(r.basePath, path)
  const endpoint = local === undefined ? undefined : r.routes.get(local)
  if (local === undefined || endpoint === undefined) return sendError(req, res, 404, "404 page not found")
  r.stats.set(local, (r.stats.get(local) ?? 0) + 1)
  const params = new URLSearchParams(q < 0 ? "" : url.slice(q + 1))
  const ctx: MonitorContext = {
    source: r.source,
    process: r.process,
    now: r.source.now(),
    http: {
      host: r.host,
      port: r.ports.http,
      httpsPort: r.ports.https,
      basePath: r.basePath,
      reqStats: Object.fromEntries(r.stats)
    }
  }
  sendReply(req, res, dispatch(endpoint, ctx, (name) => params.get(name)))
}

const requestListener = (r: Routing) => (req: http.IncomingMessage, res: http.ServerResponse) => {
  try {
    handle(r, req, res)
  } catch (cause) {
    // A failing snapshot must not take the listener down; report it and keep serving.
    if (!res.headersSent) sendError(req, res, 500, `internal error: ${cause instanceof Error ? cause.message : String(cause)}`)
    else res.destroy()
  }
}

const listen = (server: http.Server, host: string, port: number, label: string) =>
  Effect.acquireRelease(
    Effect.async<number, MonitorError>((resume) => {
      const onError = (cause: Error) =>
        resume(Effect.fail(new MonitorError({ reason: "Listen", message: `${label} monitoring on ${host}:${port}: ${cause.message}`, cause })))
      server.once("error", onError)
      server.listen(port, host, () => {
        server.off("error", onError)
        server.on("error", () => undefined)
        resume(Effect.succeed((server.address() as AddressInfo).port))
      })
    }),
    () =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )

const readTls = (tls: NonNullable<MonitorOptions["httpTls"]>) =>
  Effect.tryPromise({
    try: () => Promise.all([readFile(tls.certFile), readFile(tls.keyFile)]),
    catch: (cause) =>
      new MonitorError({ reason: "Tls", message: `monitoring TLS: cannot read cert_file/key_file: ${String(cause)}`, cause })
  })

/**
 * Start the monitoring listeners the options ask for (plain HTTP on `httpPort`,
 * HTTPS on `httpsPort`; undefined = off, 0 = ephemeral) and keep them open for
 * the life of the scope.
 */
export const startMonitor = (
  options: MonitorOptions,
  source: MonitorSource,
  probe: ProcessProbe = nodeProcessProbe()
): Effect.Effect<MonitorHandle, MonitorError, Scope.Scope> =>
  Effect.gen(function* () {
    const routing: Routing = {
      basePath: normalizeBasePath(options.httpBasePath),
      routes: endpointIndex(MonitorEndpoints),
      stats: new Map(),
      source,
      process: probe,
      host: options.httpHost,
      ports: { http: 0, https: 0 }
    }
    const listener = requestListener(routing)
    let port: number | undefined
    let httpsPort: number | undefined
    if (options.httpPort !== undefined) {
      port = yield* listen(http.createServer(listener), options.httpHost, options.httpPort, "HTTP")
      routing.ports.http = port
    }
    if (options.httpsPort !== undefined) {
      if (options.httpTls === undefined) {
        return yield* new MonitorError({
          reason: "Tls",
          message: "https_port needs a tls block with cert_file and key_file in the http block"
        })
      }
      const [cert, key] = yield* readTls(options.httpTls)
      const server = yield* Effect.try({
        try: () => https.createServer({ cert, key }, listener),
        catch: (cause) => new MonitorError({ reason: "Tls", message: `monitoring TLS: ${String(cause)}`, cause })
      })
      httpsPort = yield* listen(server, options.httpHost, options.httpsPort, "HTTPS")
      routing.ports.https = httpsPort
    }
    return { port, httpsPort, httpReqStats: () => Object.fromEntries(routing.stats) }
  })

/** The running monitor, for whoever needs its ports or request counts. */
export class MonitorServer extends Context.Tag("switchyard/MonitorServer")<MonitorServer, MonitorHandle>() {
  static layer = (options: MonitorOptions, source: MonitorSource, probe?: ProcessProbe): Layer.Layer<MonitorServer, MonitorError> =>
    Layer.scoped(MonitorServer, startMonitor(options, source, probe))
}
