// The monitoring listener on real sockets (port 0) with a synthetic source:
// every endpoint with every parameter, each response validated against the
// checked-in JSON Schema; base path, 404s, headers, HTTPS, and planted secrets
// that must never come out.
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Ajv, type ValidateFunction } from "ajv"
import addFormats from "ajv-formats"
import { Effect, Exit, Scope } from "effect"
import { MonitorEndpoints } from "../../src/core/monitor/endpoints.js"
import { syntheticSource, type SyntheticSource } from "../helpers/monitor-source.js"
import { nodeProcessProbe, startMonitor, type MonitorHandle, type MonitorOptions } from "../../src/server/monitor/index.js"
import { ConnzSortKeys } from "../../src/schema/monitor.js"

const Secrets = ["S3cr3t-Passw0rd-Sentinel", "tok-Sentinel-9f8e7d", "SUAM-nkey-seed-Sentinel", "ENV-Sentinel-42"] as const

interface Got {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

const request = (url: string, method = "GET"): Promise<Got> =>
  new Promise((resolve, reject) => {
    const lib = url.startsWith("https:") ? https : http
    const req = lib.request(url, { method, rejectUnauthorized: false }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }))
    })
    req.on("error", reject)
    req.end()
  })

/** Raw request line, for paths `new URL` would normalize away. */
const rawRequest = (port: number, path: string): Promise<Got> =>
  new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method: "GET" }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }))
    })
    req.on("error", reject)
    req.end()
  })

const ajv = new Ajv({ strict: false, allErrors: true })
addFormats.default(ajv)
const validators = new Map<string, ValidateFunction>()
const validatorFor = (name: string): ValidateFunction => {
  let v = validators.get(name)
  if (v === undefined) {
    v = ajv.compile(JSON.parse(readFileSync(join(process.cwd(), "schemas", `${name}.json`), "utf8")))
    validators.set(name, v)
  }
  return v
}
const endpointFor = (path: string) => MonitorEndpoints.find((e) => e.path === path || e.aliases.includes(path as `/${string}`))

/** Every endpoint with every parameter (and combinations that change the shape). */
const Requests: ReadonlyArray<string> = [
  "/varz",
  "/connz",
  ...ConnzSortKeys.map((k) => (k === "stop" || k === "reason" ? `/connz?sort=${k}&state=closed` : `/connz?sort=${k}`)),
  "/connz?auth=true",
  "/connz?auth=1&subs=true",
  "/connz?subs=detail",
  "/connz?subs=DETAIL&auth=true&state=all",
  "/connz?offset=10&limit=5",
  "/connz?offset=1000",
  "/connz?limit=0",
  "/connz?cid=7",
  "/connz?cid=55&state=closed",
  "/connz?state=open",
  "/connz?state=closed&auth=true&subs=detail",
  "/connz?state=all&sort=rtt&limit=3",
  "/connz?state=any",
  "/connz?user=alice&auth=true",
  "/connz?acc=ACME&sort=bytes_from",
  "/connz?mqtt_client=sensor-30",
  "/connz?mqtt_client=nobody",
  "/routez",
  "/routez?subs=true",
  "/routez?subs=detail",
  "/gatewayz",
  "/gatewayz?accs=true&subs=detail&gw_name=east&acc_name=ACME",
  "/leafz",
  "/leafz?subs=true",
  "/leafz?acc=ACME&subs=1",
  "/subsz",
  "/subscriptionsz",
  "/subsz?subs=true",
  "/subsz?subs=1&offset=3&limit=4",
  "/subsz?acc=ACME&subs=true",
  "/subsz?subject=orders.>&subs=true",
  "/subsz?test=orders.3.created",
  "/subsz?test=orders.3.created&subs=true",
  "/jsz",
  "/jsz?accounts=true",
  "/jsz?streams=true",
  "/jsz?consumers=true",
  "/jsz?consumers=true&config=true",
  "/jsz?acc=ACME&streams=true&consumers=true&config=true",
  "/jsz?accounts=true&offset=1&limit=1",
  "/jsz?leader-only=true",
  "/healthz",
  "/healthz?js-enabled-only=true",
  "/healthz?js-server-only=true",
  "/healthz?details=true",
  "/healthz?js-enabled=true",
  "/accountz",
  "/accountz?acc=ACME",
  "/accountz?acc=$G",
  "/accountz?acc=$SYS",
  "/accountstatz",
  "/accountstatz?unused=true",
  "/accstatz",
  "/accstatz?acc=$G&unused=true",
  "/stacksz",
  "/raftz",
  "/raftz?acc=ACME&group=meta",
  "/ipqueuesz",
  "/ipqueuesz?all=true",
  "/ipqueuesz?all=true&queues=outbound",
  // Bad input: each must be a 400 with the error body.
  "/connz?sort=nope",
  "/connz?sort=stop",
  "/connz?limit=abc",
  "/connz?offset=-x",
  "/connz?cid=abc",
  "/connz?state=asleep",
  "/connz?auth=yes",
  "/connz?subs=verbose",
  "/routez?subs=2",
  "/subsz?test=a.*",
  "/subsz?subject=a..b",
  "/jsz?streams=maybe",
  "/healthz?details=please",
  "/accountz?acc=NOPE",
  "/ipqueuesz?all=x"
]

describe("monitoring over HTTP", () => {
  let scope: Scope.CloseableScope
  let handle: MonitorHandle
  let source: SyntheticSource
  let base: string
  let certDir: string | undefined

  const start = (options: MonitorOptions, s = source) =>
    Effect.runPromise(Scope.extend(startMonitor(options, s, nodeProcessProbe()), scope))

  beforeAll(async () => {
    process.env.SWITCHYARD_TEST_SECRET = Secrets[3]
    source = syntheticSource({
      extra: { password: Secrets[0], token: Secrets[1], nkeySeed: Secrets[2], users: [{ user: "alice", password: Secrets[0] }] }
    })
    scope = Effect.runSync(Scope.make())
    handle = await start({ httpHost: "127.0.0.1", httpPort: 0, httpsPort: undefined, httpBasePath: "", httpTls: undefined })
    base = `http://127.0.0.1:${handle.port}`
  })

  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    delete process.env.SWITCHYARD_TEST_SECRET
    if (certDir !== undefined) rmSync(certDir, { recursive: true, force: true })
  })

  it("binds an ephemeral port", () => {
    expect(handle.port).toBeGreaterThan(0)
    expect(handle.httpsPort).toBeUndefined()
  })

  it("answers every endpoint and parameter with a body valid against its published schema", async () => {
    for (const path of Requests) {
      const r = await request(base + path)
      const e = endpointFor(path.split("?")[0])
      expect(e, path).toBeDefined()
      expect(r.headers["content-type"], path).toBe("application/json")
      expect(r.headers["access-control-allow-origin"], path).toBe("*")
      expect(Number(r.headers["content-length"]), path).toBe(Buffer.byteLength(r.body))
      const json = JSON.parse(r.body)
      const schema = r.status === 200 || (e!.name === "healthz" && r.status === 503) ? e!.name : "error"
      if (r.status !== 200) expect([400, 404, 503], path).toContain(r.status)
      const validate = validatorFor(schema)
      if (!validate(json)) throw new Error(`${path} (${r.status}) does not match schemas/${schema}.json: ${ajv.errorsText(validate.errors)}`)
      // Secrets planted in the source and the environment never come out.
      for (const s of Secrets) expect(r.body, `${path} leaks ${s}`).not.toContain(s)
    }
  })

  it("bad input is a 400 naming the parameter and the allowed values", async () => {
    const r = await request(`${base}/connz?sort=nope`)
    expect(r.status).toBe(400)
    expect(JSON.parse(r.body)).toMatchObject({ error: "invalid sorting option: nope", parameter: "sort", value: "nope" })
    expect(JSON.parse(r.body).allowed).toHaveLength(14)
    const limit = JSON.parse((await request(`${base}/connz?limit=ten`)).body)
    expect(limit).toMatchObject({ parameter: "limit", value: "ten", expected: "integer" })
    const state = JSON.parse((await request(`${base}/connz?state=zzz`)).body)
    expect(state.allowed).toEqual(["open", "closed", "all", "any"])
    const bool = JSON.parse((await request(`${base}/jsz?config=nah`)).body)
    expect(bool).toMatchObject({ parameter: "config", allowed: ["true", "false", "1", "0"] })
  })

  it("never 500s or stops on hostile input", async () => {
    for (const path of [
      "/connz?limit=99999999999999999999",
      "/connz?cid=18446744073709551616",
      "/connz?sort=%00",
      "/connz?offset=%",
      "/connz?acc=%E0%A4%A",
      "/subsz?test=" + "a.".repeat(5000) + "b",
      "/connz?" + "x=1&".repeat(2000)
    ]) {
      const r = await rawRequest(handle.port!, path)
      expect([200, 400], path).toContain(r.status)
    }
    for (const path of ["/%E0%A4%A", "//varz", "/varz/", "/VARZ", "/connz/extra", "/../varz", "/favicon.ico"]) {
      const r = await rawRequest(handle.port!, path)
      expect([400, 404], path).toContain(r.status)
      expect(r.headers["content-type"]).toBe("application/json")
    }
    expect((await request(`${base}/varz`)).status).toBe(200)
  })

  it("unknown paths are 404; other methods 405; HEAD has headers only", async () => {
    const r = await request(`${base}/nope`)
    expect(r.status).toBe(404)
    expect(JSON.parse(r.body)).toEqual({ error: "404 page not found" })
    expect(r.headers["access-control-allow-origin"]).toBe("*")
    const post = await request(`${base}/varz`, "POST")
    expect(post.status).toBe(405)
    expect(post.headers.allow).toBe("GET, HEAD")
    const head = await request(`${base}/varz`, "HEAD")
    expect(head.status).toBe(200)
    expect(head.body).toBe("")
    expect(head.headers["content-type"]).toBe("application/json")
  })

  it("/ is an HTML page linking every endpoint; /metrics is Prometheus text", async () => {
    const root = await request(`${base}/`)
    expect(root.status).toBe(200)
    expect(root.headers["content-type"]).toBe("text/html; charset=utf-8")
    for (const e of MonitorEndpoints) if (e.path !== "/") expect(root.body).toContain(`href="${e.path}"`)
    const metrics = await request(`${base}/metrics`)
    expect(metrics.status).toBe(200)
    expect(metrics.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8")
    expect(metrics.body).toContain("# TYPE switchyard_in_msgs_total counter")
    for (const s of Secrets) expect(metrics.body).not.toContain(s)
  })

  it("counts each endpoint served in http_req_stats, including the /varz being answered", async () => {
    const before = handle.httpReqStats()
    await request(`${base}/connz`)
    await request(`${base}/accstatz`)
    const v = JSON.parse((await request(`${base}/varz`)).body)
    expect(v.http_req_stats["/connz"]).toBe((before["/connz"] ?? 0) + 1)
    expect(v.http_req_stats["/accstatz"]).toBe((before["/accstatz"] ?? 0) + 1)
    expect(v.http_req_stats["/varz"]).toBe((before["/varz"] ?? 0) + 1)
    expect(v.http_req_stats["/nope"]).toBeUndefined()
    expect(v.http_port).toBe(handle.port)
    expect(v.https_port).toBe(0)
    expect(v.http_host).toBe("127.0.0.1")
  })

  it("/varz reports live process readings", async () => {
    const v = JSON.parse((await request(`${base}/varz`)).body)
    expect(v.mem).toBeGreaterThan(1_000_000)
    expect(v.cores).toBeGreaterThan(0)
    expect(v.gomaxprocs).toBeGreaterThan(0)
    expect(v.go).toBe(`node ${process.version}`)
    expect(v.cpu).toBeGreaterThanOrEqual(0)
  })

  it("/stacksz is the process report: JS stack, native stack, libuv handles, no environment", async () => {
    const r = JSON.parse((await request(`${base}/stacksz`)).body)
    expect(r.javascriptStack.stack.length).toBeGreaterThan(0)
    expect(Array.isArray(r.nativeStack)).toBe(true)
    expect(r.libuv.some((h: any) => h.type === "tcp")).toBe(true)
    expect(r.environmentVariables).toBeUndefined()
    expect(r.header.commandLine).toBeUndefined()
  })

  it("/healthz: 200 ok, 503 unavailable with an error (spec §7)", async () => {
    const ok = await request(`${base}/healthz`)
    expect([ok.status, JSON.parse(ok.body)]).toEqual([200, { status: "ok" }])
    source.setHealth({ jetstreamError: "JetStream stream 'ACME > ORDERS' could not be recovered" })
    try {
      const bad = await request(`${base}/healthz`)
      expect(bad.status).toBe(503)
      expect(JSON.parse(bad.body)).toEqual({ status: "unavailable", error: "JetStream stream 'ACME > ORDERS' could not be recovered" })
      expect((await request(`${base}/healthz?js-server-only=true`)).status).toBe(200)
    } finally {
      source.setHealth({ jetstreamError: undefined })
    }
    const off = syntheticSource({ jetstream: false })
    const h = await start({ httpHost: "127.0.0.1", httpPort: 0, httpsPort: undefined, httpBasePath: "", httpTls: undefined }, off)
    expect((await request(`http://127.0.0.1:${h.port}/healthz`)).status).toBe(200)
    const js = await request(`http://127.0.0.1:${h.port}/healthz?js-enabled-only=true`)
    expect([js.status, JSON.parse(js.body)]).toEqual([503, { status: "unavailable", error: "JetStream not enabled" }])
    const jsz = JSON.parse((await request(`http://127.0.0.1:${h.port}/jsz`)).body)
    expect(jsz.disabled).toBe(true)
    expect(validatorFor("jsz")(jsz)).toBe(true)
  })

  it("serves everything, / included, under http_base_path and nothing outside it", async () => {
    const h = await start({ httpHost: "127.0.0.1", httpPort: 0, httpsPort: undefined, httpBasePath: "nats/mon/", httpTls: undefined })
    const b = `http://127.0.0.1:${h.port}`
    for (const e of MonitorEndpoints) {
      const path = e.path === "/" ? "/nats/mon" : `/nats/mon${e.path}`
      expect([200, 404], path).toContain((await request(b + path)).status)
      expect((await request(b + e.path)).status, e.path).toBe(404)
    }
    expect((await request(`${b}/nats/mon/connz?limit=1`)).status).toBe(200)
    expect((await request(`${b}/nats/mon/`)).status).toBe(200)
    const root = await request(`${b}/nats/mon/`)
    expect(root.body).toContain('href="/nats/mon/varz"')
    expect(JSON.parse((await request(`${b}/nats/mon/varz`)).body).http_base_path).toBe("/nats/mon")
    expect((await request(`${b}/nats/monitor/varz`)).status).toBe(404)
  })

  it("fails to start, with a MonitorError, when the port is taken or TLS is missing", async () => {
    const taken = await Effect.runPromise(
      Effect.either(Scope.extend(startMonitor({ httpHost: "127.0.0.1", httpPort: handle.port!, httpsPort: undefined, httpBasePath: "", httpTls: undefined }, source), scope))
    )
    expect(taken._tag).toBe("Left")
    if (taken._tag === "Left") expect(taken.left.reason).toBe("Listen")
    const noTls = await Effect.runPromise(
      Effect.either(Scope.extend(startMonitor({ httpHost: "127.0.0.1", httpPort: undefined, httpsPort: 0, httpBasePath: "", httpTls: undefined }, source), scope))
    )
    expect(noTls._tag).toBe("Left")
    if (noTls._tag === "Left") expect(noTls.left.reason).toBe("Tls")
  })

  it("serves HTTPS on https_port with the tls block's certificate", async (ctx) => {
    try {
      execFileSync("openssl", ["version"], { stdio: "ignore" })
    } catch {
      ctx.skip()
    }
    certDir = mkdtempSync(join(tmpdir(), "switchyard-monitor-"))
    const certFile = join(certDir, "cert.pem")
    const keyFile = join(certDir, "key.pem")
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "1", "-subj", "/CN=localhost"], { stdio: "ignore" })
    const h = await start({
      httpHost: "127.0.0.1",
      httpPort: 0,
      httpsPort: 0,
      httpBasePath: "",
      httpTls: { certFile, keyFile, caFile: undefined, verify: false, timeoutMs: 2000 }
    })
    expect(h.httpsPort).toBeGreaterThan(0)
    const r = await request(`https://127.0.0.1:${h.httpsPort}/varz`)
    expect(r.status).toBe(200)
    const v = JSON.parse(r.body)
    expect(v.https_port).toBe(h.httpsPort)
    expect(validatorFor("varz")(v)).toBe(true)
    expect((await request(`https://127.0.0.1:${h.httpsPort}/healthz`)).status).toBe(200)
  })
})
