// The monitoring listeners of the real server: http_base_path (every endpoint and
// `/` under the prefix, nothing outside it), binding one interface, and HTTPS on
// https_port with a certificate generated for the test.
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as net from "node:net"
import { networkInterfaces, tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { connect } from "nats"
import { MonitorEndpoints } from "../../src/core/monitor/endpoints.js"
import { getJson, request, startMonitoredServer, sweepRequests, type MonitoredServer } from "../helpers/monitor.js"

/** The status every endpoint answers with no parameters on a server without streams or raft groups. */
const plainStatus = (path: string): number => (path === "/raftz" ? 404 : 200)

/** Try a TCP connection; resolves "open" or the error code. */
const probe = (host: string, port: number): Promise<string> =>
  new Promise((resolve) => {
    const s = net.connect({ host, port })
    s.once("connect", () => {
      s.destroy()
      resolve("open")
    })
    s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message))
  })

const externalIPv4 = (): string | undefined =>
  Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === "IPv4" && !a.internal)?.address

describe("monitoring listeners of the real server", () => {
  let srv: MonitoredServer | undefined
  afterEach(async () => {
    await srv?.close()
    srv = undefined
  })

  it("http_base_path puts every endpoint and / under the prefix; the bare paths are 404", async () => {
    srv = await startMonitoredServer({ httpBasePath: "/nats/mon" })
    const nc = await connect({ servers: srv.url, name: "under-prefix" })
    nc.subscribe("a.b")
    await nc.flush()
    try {
      const prefixed = `${srv.base}/nats/mon`
      for (const e of MonitorEndpoints) {
        for (const path of [e.path, ...e.aliases]) {
          if (path === "/") continue
          const r = await request(prefixed + path)
          expect(r.status, path).toBe(plainStatus(path))
          if (path === "/raftz") expect(JSON.parse(r.body).error).toBe("No Raft nodes registered")
          const bare = await request(srv.base + path)
          expect(bare.status, `bare ${path}`).toBe(404)
          expect(JSON.parse(bare.body)).toEqual({ error: "404 page not found" })
        }
      }
      // Every parameter form works under the prefix too, with valid bodies.
      const cid = (await getJson(prefixed, "/connz")).json.connections[0].cid
      for (const path of sweepRequests({ cid, closedCid: 999, user: "x", acc: "$G", subject: "a.b", pattern: "a.*" })) {
        const local = path.split("?")[0]
        if (local === "/" || local === "/metrics") continue
        const status = local === "/raftz" ? 404 : path.startsWith("/healthz?js-enabled") ? 503 : path.includes("leader-only") ? 400 : 200
        await getJson(prefixed, path, status)
      }
      for (const root of ["/nats/mon", "/nats/mon/"]) {
        const r = await request(srv.base + root)
        expect(r.status, root).toBe(200)
        expect(r.headers["content-type"]).toBe("text/html; charset=utf-8")
        for (const e of MonitorEndpoints) if (e.path !== "/") expect(r.body).toContain(`href="/nats/mon${e.path}"`)
      }
      expect((await request(`${srv.base}/`)).status).toBe(404)
      expect((await request(`${srv.base}/nats/monitor/varz`)).status).toBe(404)
      expect((await request(`${srv.base}/nats/varz`)).status).toBe(404)
      expect((await request(`${prefixed}/metrics`)).body).toContain("switchyard_connections 1")
      const v = (await getJson(prefixed, "/varz")).json
      expect(v.http_base_path).toBe("/nats/mon")
      // Request counts are per endpoint, without the prefix.
      expect(v.http_req_stats["/varz"]).toBeGreaterThanOrEqual(1)
      expect(Object.keys(v.http_req_stats).every((k) => !k.startsWith("/nats"))).toBe(true)
    } finally {
      await nc.close()
    }
  })

  it("normalizes a base path given without a leading slash or with a trailing one", async () => {
    srv = await startMonitoredServer({ httpBasePath: "ops/" })
    expect((await getJson(`${srv.base}/ops`, "/varz")).json.http_base_path).toBe("/ops")
    expect((await request(`${srv.base}/ops/`)).status).toBe(200)
    expect((await request(`${srv.base}/varz`)).status).toBe(404)
  })

  it("binds only the configured host", async () => {
    srv = await startMonitoredServer({ httpHost: "127.0.0.1" })
    const port = srv.monitorPort!
    expect(await probe("127.0.0.1", port)).toBe("open")
    expect((await getJson(srv.base, "/varz")).json.http_host).toBe("127.0.0.1")
    expect(srv.lines.some((l) => l.includes(`Starting http monitor on 127.0.0.1:${port}`))).toBe(true)
    const ext = externalIPv4()
    if (ext !== undefined) {
      expect(await probe(ext, port)).toBe("ECONNREFUSED")
      // The same probe reaches a wildcard-bound listener, so the refusal above means something.
      await srv.close()
      srv = await startMonitoredServer({ httpHost: "0.0.0.0" })
      expect(await probe(ext, srv.monitorPort!)).toBe("open")
      const r = await request(`http://${ext}:${srv.monitorPort}/healthz`)
      expect(r.status).toBe(200)
      expect((await getJson(srv.base, "/varz")).json.http_host).toBe("0.0.0.0")
    }
  })

  it("binds an IPv6 host when asked", async (ctx) => {
    const hasV6 = Object.values(networkInterfaces()).flat().some((a) => a?.address === "::1")
    if (!hasV6) ctx.skip()
    srv = await startMonitoredServer({ httpHost: "::1" })
    const port = srv.monitorPort!
    expect(srv.lines.some((l) => l.includes(`Starting http monitor on [::1]:${port}`))).toBe(true)
    expect(await probe("127.0.0.1", port)).toBe("ECONNREFUSED")
    const v = (await getJson(`http://[::1]:${port}`, "/varz")).json
    expect(v.http_host).toBe("::1")
  })
})

describe("HTTPS monitoring with a generated certificate", () => {
  let dir: string | undefined
  let certFile = ""
  let keyFile = ""
  let ca: Buffer
  let srv: MonitoredServer | undefined
  const hasOpenssl = (() => {
    try {
      execFileSync("openssl", ["version"], { stdio: "ignore" })
      return true
    } catch {
      return false
    }
  })()

  beforeAll(() => {
    if (!hasOpenssl) return
    dir = mkdtempSync(join(tmpdir(), "switchyard-e2e-monitor-"))
    certFile = join(dir, "cert.pem")
    keyFile = join(dir, "key.pem")
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "2",
        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
      { stdio: "ignore" }
    )
    ca = readFileSync(certFile)
  })
  afterEach(async () => {
    await srv?.close()
    srv = undefined
  })
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  const tls = () => ({ certFile, keyFile, caFile: undefined, verify: false, timeoutMs: 2000 })

  it.skipIf(!hasOpenssl)("serves every endpoint over HTTPS on https_port alone, verified against the certificate", async () => {
    srv = await startMonitoredServer({ httpPort: undefined, httpsPort: 0, httpTls: tls() })
    expect(srv.monitorPort).toBeUndefined()
    const port = srv.httpsPort!
    expect(port).toBeGreaterThan(0)
    expect(srv.lines.some((l) => l.includes(`Starting https monitor on 127.0.0.1:${port}`))).toBe(true)
    const base = `https://127.0.0.1:${port}`
    const nc = await connect({ servers: srv.url, name: "over-tls" })
    nc.subscribe("a.b")
    await nc.flush()
    try {
      const v = (await getJson(base, "/varz", 200, { ca })).json
      expect([v.https_port, v.http_port]).toEqual([port, 0])
      expect(v.connections).toBe(1)
      const cid = (await getJson(base, "/connz", 200, { ca })).json.connections[0].cid
      for (const path of sweepRequests({ cid, closedCid: 999, user: "x", acc: "$G", subject: "a.b", pattern: "a.*" })) {
        const local = path.split("?")[0]
        if (local === "/" || local === "/metrics") {
          expect((await request(base + path, { ca })).status, path).toBe(200)
          continue
        }
        const status = local === "/raftz" ? 404 : path.startsWith("/healthz?js-enabled") ? 503 : path.includes("leader-only") ? 400 : 200
        await getJson(base, path, status, { ca })
      }
      // The certificate is the one configured (verification against it passed); plain HTTP is not spoken there.
      await expect(request(`http://127.0.0.1:${port}/varz`)).rejects.toThrow()
    } finally {
      await nc.close()
    }
  })

  it.skipIf(!hasOpenssl)("serves HTTP and HTTPS side by side, both reporting both ports", async () => {
    srv = await startMonitoredServer({ httpPort: 0, httpsPort: 0, httpTls: tls(), httpBasePath: "/m" })
    const viaHttp = (await getJson(`${srv.base}/m`, "/varz")).json
    const viaHttps = (await getJson(`https://127.0.0.1:${srv.httpsPort}/m`, "/varz", 200, { ca })).json
    expect([viaHttp.http_port, viaHttp.https_port]).toEqual([srv.monitorPort, srv.httpsPort])
    expect([viaHttps.http_port, viaHttps.https_port]).toEqual([srv.monitorPort, srv.httpsPort])
    // One request count across both listeners.
    expect(viaHttps.http_req_stats["/varz"]).toBe(2)
    expect((await request(`https://127.0.0.1:${srv.httpsPort}/varz`, { ca })).status).toBe(404)
  })

  it("refuses to start HTTPS without a tls block", async () => {
    await expect(startMonitoredServer({ httpPort: undefined, httpsPort: 0, httpTls: undefined })).rejects.toThrow(/tls/i)
  })
})
