// Monitoring against the real server (serve(): NATS listener + HTTP monitor on
// ephemeral ports) with real `nats` clients: every endpoint and parameter answers
// a body valid against its published JSON Schema, and the values are true —
// counters move by exactly what a known traffic pattern adds.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, headers, type NatsConnection } from "nats"
import { MonitorEndpoints } from "../../src/core/monitor/endpoints.js"
import { eventually, RawClient } from "../helpers/server.js"
import {
  BadRequests,
  getJson,
  parseTimestamp,
  parseUptime,
  request,
  schemaNameFor,
  assertSchema,
  startMonitoredServer,
  sweepRequests,
  TimestampRe,
  UptimeRe,
  type MonitoredServer
} from "../helpers/monitor.js"

const payload = (n: number, fill = 120) => new Uint8Array(n).fill(fill)

describe("monitoring endpoints on a live server", () => {
  let srv: MonitoredServer
  const conns: Array<NatsConnection> = []
  const open = async (name: string) => {
    const nc = await connect({ servers: srv.url, name, reconnect: false })
    conns.push(nc)
    await nc.flush()
    return nc
  }
  const varz = async () => (await getJson(srv.base, "/varz")).json
  const subsz = async (q = "") => (await getJson(srv.base, `/subsz${q}`)).json

  beforeAll(async () => {
    srv = await startMonitoredServer()
  })
  afterAll(async () => {
    await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
    await srv.close()
  })

  it("a fresh server reports zeros, its own identity and well-formed times", async () => {
    expect(srv.monitorPort).toBeGreaterThan(0)
    expect(srv.lines.some((l) => l.includes(`Starting http monitor on 127.0.0.1:${srv.monitorPort}`))).toBe(true)
    const v = await varz()
    expect(v.server_id).toBe(srv.serving.server.serverId)
    expect(v.server_id).toMatch(/^N[A-Z2-7]{55}$/)
    expect(v.port).toBe(srv.natsPort)
    expect(v.host).toBe("127.0.0.1")
    expect(v.http_port).toBe(srv.monitorPort)
    expect(v.http_host).toBe("127.0.0.1")
    expect(v.https_port).toBe(0)
    expect(v.proto).toBe(1)
    expect(v.go).toBe(`node ${process.version}`)
    expect([v.connections, v.total_connections, v.in_msgs, v.out_msgs, v.in_bytes, v.out_bytes, v.subscriptions]).toEqual([0, 0, 0, 0, 0, 0, 0])
    expect([v.slow_consumers, v.stale_connections, v.routes, v.remotes, v.leafnodes]).toEqual([0, 0, 0, 0, 0])
    expect(v.mem).toBeGreaterThan(1_000_000)
    expect(v.cores).toBeGreaterThan(0)
    expect(v.gomaxprocs).toBeGreaterThan(0)
    expect(v.cpu).toBeGreaterThanOrEqual(0)
    expect(v.max_payload).toBe(1024 * 1024)
    expect(v.max_connections).toBe(64 * 1024)
    expect(v.ping_interval).toBe(120_000_000_000)
    expect(v.write_deadline).toBe(10_000_000_000)
    expect(v.auth_required).toBe(false)
    for (const t of [v.start, v.now, v.config_load_time]) expect(t).toMatch(TimestampRe)
    expect(Date.parse(v.now)).toBeGreaterThanOrEqual(Date.parse(v.start))
    expect(Math.abs(Date.parse(v.now) - Date.now())).toBeLessThan(60_000)
    expect(v.uptime).toMatch(UptimeRe)
    expect(parseUptime(v.uptime)).toBe(Math.floor((parseTimestamp(v.now) - parseTimestamp(v.start)) / 1000))
    const s = await subsz()
    expect([s.num_subscriptions, s.num_inserts, s.num_removes, s.num_matches, s.num_cache]).toEqual([0, 0, 0, 0, 0])
  })

  it("varz, connz, subsz, accountz, accountstatz and metrics count a known traffic pattern exactly", async () => {
    const before = await varz()
    const a = await open("sub-a")
    const b = await open("sub-b")
    const p = await open("pub")
    let gotA = 0
    let gotB = 0
    a.subscribe("orders.*", { callback: () => gotA++ })
    b.subscribe("orders.eu", { callback: () => gotB++ })
    const bAll = b.subscribe("orders.>", { callback: () => gotB++ })
    await a.flush()
    await b.flush()
    // 10 × 20 bytes to orders.eu (3 subscriptions), 5 × 7 bytes to orders.us (2), 3 × 0 bytes to nobody (0).
    for (let i = 0; i < 10; i++) p.publish("orders.eu", payload(20))
    for (let i = 0; i < 5; i++) p.publish("orders.us", payload(7))
    for (let i = 0; i < 3; i++) p.publish("nobody.here")
    await p.flush()
    await eventually(() => gotA === 15 && gotB === 25, `deliveries (a ${gotA}/15, b ${gotB}/25)`)

    const v = await varz()
    expect(v.connections).toBe(before.connections + 3)
    expect(v.total_connections).toBe(before.total_connections + 3)
    expect(v.in_msgs - before.in_msgs).toBe(18)
    expect(v.in_bytes - before.in_bytes).toBe(10 * 20 + 5 * 7)
    expect(v.out_msgs - before.out_msgs).toBe(10 * 3 + 5 * 2)
    expect(v.out_bytes - before.out_bytes).toBe(10 * 20 * 3 + 5 * 7 * 2)
    expect(v.subscriptions).toBe(3)
    expect(Date.parse(v.now)).toBeGreaterThanOrEqual(Date.parse(before.now))

    const c = (await getJson(srv.base, "/connz?subs=true")).json
    expect(c.num_connections).toBe(3)
    expect(c.total).toBe(3)
    const byName = (n: string) => c.connections.find((x: any) => x.name === n)
    expect(byName("pub")).toMatchObject({ in_msgs: 18, in_bytes: 235, out_msgs: 0, out_bytes: 0, subscriptions: 0 })
    expect(byName("sub-a")).toMatchObject({ in_msgs: 0, out_msgs: 15, out_bytes: 10 * 20 + 5 * 7, subscriptions: 1, subscriptions_list: ["orders.*"] })
    expect(byName("sub-b")).toMatchObject({ in_msgs: 0, out_msgs: 25, out_bytes: 10 * 20 * 2 + 5 * 7, subscriptions: 2 })
    expect([...byName("sub-b").subscriptions_list].sort()).toEqual(["orders.>", "orders.eu"])
    for (const x of c.connections) {
      expect(x).toMatchObject({ kind: "Client", type: "nats", ip: "127.0.0.1", lang: "nats.js", account: "$G" })
      expect(x.port).toBeGreaterThan(0)
    }

    const s = await subsz()
    expect(s.num_subscriptions).toBe(3)
    expect(s.num_inserts).toBe(3)
    expect(s.num_removes).toBe(0)
    expect(s.num_matches).toBe(18)
    expect(s.num_cache).toBe(3)
    expect(s.max_fanout).toBe(3)
    expect(s.avg_fanout).toBeCloseTo((3 + 2 + 0) / 3, 5)
    expect(s.cache_hit_rate).toBeCloseTo(15 / 18, 5)

    const acc = (await getJson(srv.base, "/accountz?acc=%24G")).json.account_detail
    expect(acc).toMatchObject({ account_name: "$G", client_connections: 3, subscriptions: 3 })
    expect(acc.sublist_stats.num_matches).toBe(18)
    const statz = (await getJson(srv.base, "/accountstatz")).json.account_statz
    expect(statz).toEqual([
      {
        acc: "$G",
        conns: 3,
        leafnodes: 0,
        total_conns: 3,
        num_subscriptions: 3,
        sent: { msgs: 18, bytes: 235 },
        received: { msgs: 40, bytes: 670 },
        slow_consumers: 0
      }
    ])
    expect((await getJson(srv.base, "/accstatz")).json.account_statz).toEqual(statz)

    const m = await request(`${srv.base}/metrics`)
    expect(m.status).toBe(200)
    const metric = (name: string) => {
      const line = m.body.split("\n").find((l) => l.startsWith(`${name} `))
      return line === undefined ? undefined : Number(line.split(" ")[1])
    }
    expect(metric("switchyard_in_msgs_total")).toBe(v.in_msgs)
    expect(metric("switchyard_out_msgs_total")).toBe(v.out_msgs)
    expect(metric("switchyard_in_bytes_total")).toBe(v.in_bytes)
    expect(metric("switchyard_out_bytes_total")).toBe(v.out_bytes)
    expect(metric("switchyard_connections")).toBe(3)
    expect(metric("switchyard_subscriptions")).toBe(3)
    expect(m.body).toContain('switchyard_account_received_msgs_total{account="$G"} 40')
    expect(m.body).toContain('switchyard_connections_by_kind{kind="Client",type="nats"} 3')

    // Unsubscribing and closing move them back; totals stay.
    bAll.unsubscribe()
    await b.flush()
    const s2 = await subsz()
    expect([s2.num_subscriptions, s2.num_inserts, s2.num_removes]).toEqual([2, 3, 1])
    await p.close()
    await eventually(() => srv.serving.server.clients.size === 2, "the publisher's close to be seen")
    const v2 = await varz()
    expect([v2.connections, v2.total_connections, v2.subscriptions]).toEqual([2, 3, 2])
    expect(v2.in_msgs).toBe(v.in_msgs)
    const closed = (await getJson(srv.base, "/connz?state=closed")).json
    expect(closed.connections).toHaveLength(1)
    expect(closed.connections[0]).toMatchObject({ name: "pub", reason: "Client Closed", in_msgs: 18, in_bytes: 235 })
    expect(closed.connections[0].stop).toMatch(TimestampRe)
  })

  // Regression: a refused PUB used to count on the connection but not on the server.
  it("a refused PUB counts the same in /connz and /varz", async () => {
    const before = await varz()
    const raw = await RawClient.ready(srv.natsPort, { pedantic: true })
    raw.send("PUB bad.*.subject 5\r\nhello\r\nPING\r\n")
    await raw.waitFor("-ERR 'Invalid Publish Subject'")
    await raw.waitFor("PONG\r\n")
    const after = await varz()
    expect(after.in_msgs - before.in_msgs).toBe(1)
    expect(after.in_bytes - before.in_bytes).toBe(5)
    const cid = [...srv.serving.server.clients.values()].at(-1)!.cid
    const rec = (await getJson(srv.base, `/connz?cid=${cid}`)).json.connections[0]
    expect([rec.in_msgs, rec.in_bytes]).toEqual([1, 5])
    raw.close()
  })

  // Regression: config_load_time was taken after the listeners started.
  it("config_load_time is not later than start", async () => {
    const v = await varz()
    expect(parseTimestamp(v.config_load_time)).toBeLessThanOrEqual(parseTimestamp(v.start))
  })

  it("/subsz lists, filters and tests subscriptions", async () => {
    const q = await open("queue-worker")
    q.subscribe("jobs.*.run", { queue: "workers" })
    q.subscribe("jobs.eu.run", { max: 5 })
    await q.flush()
    const cid = (await getJson(srv.base, "/connz")).json.connections.find((c: any) => c.name === "queue-worker").cid
    const all = await subsz("?subs=true")
    expect(all.num_subscriptions).toBe(4)
    expect(all.total).toBe(4)
    expect(all.subscriptions_list).toHaveLength(4)
    const mine = all.subscriptions_list.filter((s: any) => s.cid === cid)
    expect(mine).toEqual([
      { account: "$G", subject: "jobs.*.run", qgroup: "workers", sid: expect.any(String), msgs: 0, cid },
      { account: "$G", subject: "jobs.eu.run", sid: expect.any(String), msgs: 0, max: 5, cid }
    ])
    // subject: every subscription overlapping the pattern.
    const jobs = await subsz(`?subs=true&subject=${encodeURIComponent("jobs.>")}`)
    expect(jobs.subscriptions_list.map((s: any) => s.subject).sort()).toEqual(["jobs.*.run", "jobs.eu.run"])
    // test: the subscriptions a message on a literal subject would reach.
    const hit = await subsz("?test=jobs.us.run&subs=true")
    expect(hit.total).toBe(1)
    expect(hit.subscriptions_list.map((s: any) => s.subject)).toEqual(["jobs.*.run"])
    expect((await subsz("?test=jobs.eu.run")).total).toBe(2)
    expect((await subsz("?test=orders.eu")).total).toBe(2)
    const miss = await subsz("?test=nothing.listens.here&subs=true")
    expect(miss.total).toBe(0)
    expect(miss.subscriptions_list ?? []).toEqual([])
    // Paging.
    const page = await subsz("?subs=true&offset=1&limit=2")
    expect([page.offset, page.limit, page.total, page.subscriptions_list.length]).toEqual([1, 2, 4, 2])
    expect(page.subscriptions_list).toEqual(all.subscriptions_list.slice(1, 3))
    expect((await subsz("?subs=true")).limit).toBe(1024)
    // Matches move with traffic (each publish is one match).
    const m0 = (await subsz()).num_matches
    q.publish("jobs.eu.run")
    q.publish("jobs.us.run")
    await q.flush()
    expect((await subsz()).num_matches).toBe(m0 + 2)
  })

  it("/healthz is ok; js-enabled-only is 503 unavailable with an error, streams not running", async () => {
    const ok = await getJson(srv.base, "/healthz")
    expect(ok.json).toEqual({ status: "ok" })
    const js = await getJson(srv.base, "/healthz?js-enabled-only=true", 503)
    expect(js.json.status).toBe("unavailable")
    expect(js.json.error).toEqual(expect.any(String))
    expect(js.json.error.length).toBeGreaterThan(0)
    expect((await getJson(srv.base, "/healthz?js-server-only=true")).json).toEqual({ status: "ok" })
    expect((await getJson(srv.base, "/healthz?js-enabled=true", 503)).json.status).toBe("unavailable")
    const details = await getJson(srv.base, "/healthz?js-enabled-only=true&details=true", 503)
    expect(details.json.status).toBe("error")
    expect(details.json.errors).toHaveLength(1)
    const jsz = (await getJson(srv.base, "/jsz")).json
    expect(jsz.disabled).toBe(true)
  })

  it("/accountz, /routez, /gatewayz, /leafz, /raftz, /stacksz, /ipqueuesz and / answer what exists", async () => {
    const accs = (await getJson(srv.base, "/accountz")).json
    expect(accs.accounts).toEqual(["$G", "$SYS"])
    expect(accs.system_account).toBe("$SYS")
    expect((await getJson(srv.base, "/accountz?acc=%24SYS")).json.account_detail).toMatchObject({ account_name: "$SYS", is_system: true })
    const unused = (await getJson(srv.base, "/accountstatz?unused=true")).json.account_statz
    expect(unused.map((a: any) => a.acc)).toEqual(["$G", "$SYS"])
    expect((await getJson(srv.base, "/routez")).json).toMatchObject({ num_routes: 0, routes: [] })
    expect((await getJson(srv.base, "/gatewayz")).json).toMatchObject({ outbound_gateways: {}, inbound_gateways: {} })
    expect((await getJson(srv.base, "/leafz")).json).toMatchObject({ leafnodes: 0, leafs: [] })
    expect((await getJson(srv.base, "/raftz", 404)).json.error).toEqual(expect.any(String))
    const stacks = (await getJson(srv.base, "/stacksz")).json
    expect(stacks.javascriptStack.stack.length).toBeGreaterThan(0)
    expect(stacks.libuv.some((h: any) => h.type === "tcp")).toBe(true)
    const q = (await getJson(srv.base, "/ipqueuesz?all=true")).json
    expect(Object.keys(q)).toContain("client_outbound_bytes")
    const root = await request(`${srv.base}/`)
    expect(root.status).toBe(200)
    expect(root.headers["content-type"]).toBe("text/html; charset=utf-8")
    for (const e of MonitorEndpoints) if (e.path !== "/") expect(root.body).toContain(`href="${e.path}"`)
  })

  it("counts header bytes in and out, as nats-server does for HPUB", async () => {
    const sub = await open("hdr-sub")
    const pub = await open("hdr-pub")
    let got = 0
    sub.subscribe("hdr.test", { callback: () => got++ })
    await sub.flush()
    const h = headers()
    h.set("X-Trace", "abc123")
    const hdrLen = (h as unknown as { encode(): Uint8Array }).encode().length
    const before = await varz()
    for (let i = 0; i < 4; i++) pub.publish("hdr.test", payload(10), { headers: h })
    await pub.flush()
    await eventually(() => got === 4, "the 4 messages with headers")
    const v = await varz()
    expect(v.in_msgs - before.in_msgs).toBe(4)
    expect(v.in_bytes - before.in_bytes).toBe(4 * (hdrLen + 10))
    expect(v.out_bytes - before.out_bytes).toBe(4 * (hdrLen + 10))
    const c = (await getJson(srv.base, "/connz")).json.connections
    expect(c.find((x: any) => x.name === "hdr-pub")).toMatchObject({ in_msgs: 4, in_bytes: 4 * (hdrLen + 10) })
    expect(c.find((x: any) => x.name === "hdr-sub")).toMatchObject({ out_msgs: 4, out_bytes: 4 * (hdrLen + 10) })
  })

  it("/metrics is well-formed Prometheus text whose values agree with /varz", async () => {
    const r = await request(`${srv.base}/metrics`)
    expect(r.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8")
    const lines = r.body.split("\n").filter((l) => l !== "")
    const typed = new Map<string, string>()
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*)\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/
    for (const l of lines) {
      if (l.startsWith("# HELP ")) continue
      const t = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge)$/.exec(l)
      if (t !== null) {
        expect(typed.has(t[1]), `family ${t[1]} declared once`).toBe(false)
        typed.set(t[1], t[2])
        continue
      }
      const m = sample.exec(l)
      expect(m, l).not.toBeNull()
      expect(typed.has(m![1]), `${m![1]} has a TYPE line`).toBe(true)
      // Switchyard's own counters end in _total; the exporter's gnatsd_connz_* sums keep the exporter's names.
      if (typed.get(m![1]) === "counter" && !m![1].startsWith("gnatsd_")) expect(m![1].endsWith("_total"), m![1]).toBe(true)
    }
    const v = await varz()
    const value = (name: string) => Number(lines.find((l) => l.startsWith(`${name} `))!.split(" ")[1])
    expect(value("switchyard_accepted_connections_total")).toBe(v.total_connections)
    expect(value("switchyard_slow_consumers_total")).toBe(v.slow_consumers)
    expect(value("process_resident_memory_bytes")).toBeGreaterThan(0)
    expect(value("switchyard_jetstream_enabled")).toBe(0)
    // The names prometheus-nats-exporter gives the same numbers, for nats-server's dashboards.
    const exported = (name: string) => Number(lines.find((l) => l.startsWith(`${name}{server_id="${v.server_id}"} `))!.split(" ")[1])
    expect(exported("gnatsd_varz_total_connections")).toBe(v.total_connections)
    expect(exported("gnatsd_varz_max_payload")).toBe(v.max_payload)
    expect(exported("gnatsd_connz_limit")).toBe(1024)
  })

  it("a connection that never sent CONNECT is listed with empty client fields", async () => {
    const silent = await RawClient.connect(srv.natsPort)
    await silent.waitFor("INFO ")
    try {
      const cid = srv.serving.server.totalConnections
      const c = (await getJson(srv.base, `/connz?cid=${cid}&auth=true&subs=detail`)).json.connections[0]
      expect(c).toMatchObject({ cid, name: "", lang: "", version: "", rtt: "0s", subscriptions: 0, account: "$G", in_msgs: 0 })
      expect(c.authorized_user).toBeUndefined()
    } finally {
      silent.close()
    }
    await eventually(() => srv.serving.server.closed.toArray().some((c) => c.cid === srv.serving.server.totalConnections), "the silent one to close")
    const gone = (await getJson(srv.base, `/connz?state=closed&cid=${srv.serving.server.totalConnections}`)).json.connections[0]
    expect(gone.reason).toBe("Client Closed")
  })

  it("every endpoint with every parameter answers a body valid against its published schema", async () => {
    // Some closed connections (with subscriptions) so state=closed has content.
    const gone = await open("gone")
    gone.subscribe("gone.sub")
    await gone.flush()
    await gone.close()
    await eventually(() => srv.serving.server.closed.toArray().some((c) => c.name === "gone"), "the closed connection")
    const connz = (await getJson(srv.base, "/connz")).json
    const closedCid = srv.serving.server.closed.toArray().find((c) => c.name === "gone")!.cid
    const requests = sweepRequests({
      cid: connz.connections[0].cid,
      closedCid,
      user: "nobody",
      acc: "$G",
      subject: "orders.eu",
      pattern: "orders.>"
    })
    for (const path of requests) {
      const r = await request(srv.base + path)
      const local = path.split("?")[0]
      if (local === "/" || local === "/metrics") {
        expect(r.status, path).toBe(200)
        continue
      }
      // Documented non-200 answers: no raft groups (404, as nats-server), streams not running
      // (healthz 503; jsz leader-only "not leader" 400, as nats-server).
      const expected =
        local === "/raftz" ? 404 : path.startsWith("/healthz?js-enabled") ? 503 : path.includes("leader-only") ? 400 : 200
      expect(r.status, `${path}: ${r.body.slice(0, 300)}`).toBe(expected)
      expect(r.headers["content-type"], path).toBe("application/json")
      expect(r.headers["access-control-allow-origin"], path).toBe("*")
      assertSchema(schemaNameFor(local, r.status), JSON.parse(r.body), `GET ${path}`)
    }
  })

  it("bad input is a 400 naming the parameter; unknown paths are 404 — JSON either way", async () => {
    for (const [path, status, parameter] of BadRequests) {
      const r = await getJson(srv.base, path, status)
      if (parameter !== undefined) {
        expect(r.json.parameter, path).toBe(parameter)
        expect(r.json.error, path).toEqual(expect.any(String))
      }
    }
    const sort = (await getJson(srv.base, "/connz?sort=nope", 400)).json
    expect(sort).toMatchObject({ parameter: "sort", value: "nope" })
    expect(sort.allowed).toHaveLength(14)
    const limit = (await getJson(srv.base, "/connz?limit=ten", 400)).json
    expect(limit).toMatchObject({ parameter: "limit", value: "ten", expected: "integer" })
    const state = (await getJson(srv.base, "/connz?state=zzz", 400)).json
    expect(state.allowed).toEqual(expect.arrayContaining(["open", "closed", "all"]))
    const bool = (await getJson(srv.base, "/connz?auth=nah", 400)).json
    expect(bool).toMatchObject({ parameter: "auth", allowed: expect.arrayContaining(["true", "false"]) })
    // And the server is still fine.
    expect((await getJson(srv.base, "/varz")).status).toBe(200)
  })

  it("http_req_stats counts every endpoint served, aliases under their own path, not 404s", async () => {
    const before = (await varz()).http_req_stats
    await request(`${srv.base}/connz`)
    await request(`${srv.base}/connz?limit=1`)
    await request(`${srv.base}/connz?sort=nope`)
    await request(`${srv.base}/accstatz`)
    await request(`${srv.base}/subscriptionsz`)
    await request(`${srv.base}/metrics`)
    await request(`${srv.base}/`)
    await request(`${srv.base}/nope`)
    const after = (await varz()).http_req_stats
    const delta = (p: string) => (after[p] ?? 0) - (before[p] ?? 0)
    expect(delta("/connz")).toBe(3)
    expect(delta("/accstatz")).toBe(1)
    expect(delta("/subscriptionsz")).toBe(1)
    expect(delta("/metrics")).toBe(1)
    expect(delta("/")).toBe(1)
    expect(delta("/varz")).toBe(1)
    expect(after["/nope"]).toBeUndefined()
    for (const n of Object.values(after)) expect(Number.isInteger(n)).toBe(true)
  })
})

describe("pending bytes and slow consumers on a live server", () => {
  let srv: MonitoredServer
  beforeAll(async () => {
    srv = await startMonitoredServer({ maxPending: 32 * 1024 * 1024 })
  })
  afterAll(async () => {
    await srv.close()
  })

  it("a subscriber that stops reading shows pending bytes in connz, ipqueuesz and metrics, then is cut off as a slow consumer", async () => {
    const stuck = await RawClient.ready(srv.natsPort, { verbose: false, name: "stuck" })
    stuck.send("SUB bulk 1\r\nPING\r\n")
    await stuck.waitFor("PONG\r\n")
    stuck.pause()
    const pub = await connect({ servers: srv.url, name: "bulk-pub", reconnect: false })
    const cid = (await getJson(srv.base, "/connz")).json.connections.find((c: any) => c.name === "stuck").cid
    const chunk = payload(64 * 1024)
    const pendingOf = async () => (await getJson(srv.base, `/connz?cid=${cid}`)).json.connections[0]?.pending_bytes ?? 0
    // Publish until the server holds bytes for it (the kernel's socket buffers fill first).
    let sent = 0
    while ((await pendingOf()) === 0) {
      if (sent >= 20 * 1024 * 1024) throw new Error("no pending bytes after 20 MB")
      for (let i = 0; i < 16; i++) pub.publish("bulk", chunk)
      await pub.flush()
      sent += 16 * chunk.length
    }
    const pending = await pendingOf()
    expect(pending).toBeGreaterThan(0)
    const sorted = (await getJson(srv.base, "/connz?sort=pending")).json.connections
    expect(sorted[0].cid).toBe(cid)
    expect(sorted[0].pending_bytes).toBeGreaterThan(0)
    const q = (await getJson(srv.base, "/ipqueuesz")).json
    expect(q[`outbound client cid=${cid}`].pending).toBeGreaterThan(0)
    expect(q.client_outbound_bytes.pending).toBeGreaterThanOrEqual(q[`outbound client cid=${cid}`].pending)
    expect(q.client_outbound_connections.pending).toBe(1)
    const metrics = (await request(`${srv.base}/metrics`)).body
    const line = metrics.split("\n").find((l) => l.startsWith("switchyard_pending_bytes "))
    expect(Number(line?.split(" ")[1])).toBeGreaterThan(0)

    // Keep going past max_pending: the server cuts it off.
    while (srv.serving.server.slowConsumers === 0) {
      if (sent >= 200 * 1024 * 1024) throw new Error("no slow consumer after 200 MB")
      for (let i = 0; i < 16; i++) pub.publish("bulk", chunk)
      await pub.flush()
      sent += 16 * chunk.length
    }
    const v = (await getJson(srv.base, "/varz")).json
    expect(v.slow_consumers).toBe(1)
    expect(v.slow_consumer_stats.clients).toBe(1)
    const closed = (await getJson(srv.base, `/connz?state=closed&cid=${cid}`)).json.connections
    expect(closed).toHaveLength(1)
    expect(closed[0]).toMatchObject({ cid, name: "stuck", reason: "Slow Consumer (Pending Bytes)" })
    const statz = (await getJson(srv.base, "/accountstatz")).json.account_statz
    expect(statz[0].slow_consumers).toBe(1)
    expect((await getJson(srv.base, "/ipqueuesz")).json[`outbound client cid=${cid}`]).toBeUndefined()
    stuck.close()
    await pub.close()
  })
})

describe("a server with streams configured and MQTT asked for", () => {
  it("reports both as running with their real settings", async () => {
    const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), "sy-mon-js-"))
    const srv = await startMonitoredServer({
      jetstream: { storeDir, maxMemory: -1, maxStorage: -1 },
      mqtt: { host: "127.0.0.1", port: 0, ackWaitMs: 30_000, maxAckPending: 1024, maxTopicLevels: 200, maxQueuedMessages: 65_536, maxQueuedBytes: 0, tls: undefined, authorization: undefined, noAuthUser: undefined }
    })
    try {
      const mqttPort = Number(/Listening for MQTT clients on 127\.0\.0\.1:(\d+)/.exec(srv.lines.join(""))?.[1])
      expect(mqttPort).toBeGreaterThan(0)
      expect((await getJson(srv.base, "/healthz")).json).toEqual({ status: "ok" })
      expect((await getJson(srv.base, "/healthz?js-enabled-only=true")).json).toEqual({ status: "ok" })
      const jsz = (await getJson(srv.base, "/jsz?config=true")).json
      expect(jsz.disabled).toBeUndefined()
      expect(jsz.config.store_dir).toBe(storeDir)
      const v = (await getJson(srv.base, "/varz")).json
      expect(v.mqtt.port).toBe(mqttPort)
      expect(v.mqtt.host).toBe("127.0.0.1")
      expect(v.websocket).toEqual({})
    } finally {
      await srv.close()
      fs.rmSync(storeDir, { recursive: true, force: true })
    }
  })
})

describe("a server with streams off", () => {
  it("answers js-enabled-only with 503 and /jsz disabled", async () => {
    const srv = await startMonitoredServer({ jetstream: undefined })
    try {
      const js = (await getJson(srv.base, "/healthz?js-enabled-only=true", 503)).json
      expect(js).toEqual({ status: "unavailable", error: "JetStream not enabled" })
      expect((await getJson(srv.base, "/jsz")).json.disabled).toBe(true)
    } finally {
      await srv.close()
    }
  })
})
