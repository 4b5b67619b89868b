// The pure builders behind /varz, /subsz, /jsz, /healthz, /accountz,
// /accountstatz, /ipqueuesz, /stacksz, /metrics, and every 400 answer.
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { dispatch, endpointIndex, MonitorEndpoints, type MonitorContext, type Reply } from "../../src/core/monitor/endpoints.js"
import { buildHealthz } from "../../src/core/monitor/healthz.js"
import { buildJsz, jszOptions } from "../../src/core/monitor/jsz.js"
import { sanitizeReport } from "../../src/core/monitor/runtime.js"
import { isValidLiteralSubject, matchLiteral, subjectsCollide } from "../../src/core/monitor/subject.js"
import { sublistStats } from "../../src/core/monitor/subsz.js"
import { syntheticProbe, syntheticSource, SyntheticNow, type SyntheticOptions } from "../helpers/monitor-source.js"

const routes = endpointIndex(MonitorEndpoints)

const call = (path: string, query: Record<string, string> = {}, o: SyntheticOptions = {}): Reply => {
  const source = syntheticSource(o)
  const ctx: MonitorContext = {
    source,
    process: syntheticProbe(),
    now: source.now(),
    http: { host: "127.0.0.1", port: 8222, httpsPort: 0, basePath: "", reqStats: { "/varz": 3 } }
  }
  const e = routes.get(path)
  if (e === undefined) throw new Error(`no endpoint ${path}`)
  return dispatch(e, ctx, (n) => query[n])
}
const body = (r: Reply): any => (r._tag === "json" ? r.body : r.body)

describe("every 400 path names the parameter and what is allowed", () => {
  const cases: ReadonlyArray<readonly [string, Record<string, string>, string, ReadonlyArray<string> | undefined]> = [
    ["/connz", { sort: "bogus" }, "sort", ["cid", "start", "subs", "pending", "msgs_to", "msgs_from", "bytes_to", "bytes_from", "last", "idle", "uptime", "stop", "reason", "rtt"]],
    ["/connz", { sort: "stop" }, "sort", undefined],
    ["/connz", { sort: "reason", state: "all" }, "sort", undefined],
    ["/connz", { limit: "abc" }, "limit", undefined],
    ["/connz", { limit: "1.5" }, "limit", undefined],
    ["/connz", { offset: "ten" }, "offset", undefined],
    ["/connz", { cid: "-1" }, "cid", undefined],
    ["/connz", { cid: "0x10" }, "cid", undefined],
    ["/connz", { state: "sleeping" }, "state", ["open", "closed", "all", "any"]],
    ["/connz", { auth: "yes" }, "auth", ["true", "false", "1", "0"]],
    ["/connz", { subs: "maybe" }, "subs", ["true", "false", "1", "0", "detail"]],
    ["/routez", { subs: "2" }, "subs", ["true", "false", "1", "0", "detail"]],
    ["/gatewayz", { accs: "x" }, "accs", ["true", "false", "1", "0"]],
    ["/leafz", { subs: "detail" }, "subs", ["true", "false", "1", "0"]],
    ["/subsz", { subs: "on" }, "subs", ["true", "false", "1", "0"]],
    ["/subsz", { limit: "many" }, "limit", undefined],
    ["/subsz", { test: "orders.*" }, "test", undefined],
    ["/subsz", { subject: "orders..x" }, "subject", undefined],
    ["/jsz", { accounts: "2" }, "accounts", ["true", "false", "1", "0"]],
    ["/jsz", { "leader-only": "sure" }, "leader-only", ["true", "false", "1", "0"]],
    ["/jsz", { offset: "-x" }, "offset", undefined],
    ["/healthz", { "js-enabled-only": "nope" }, "js-enabled-only", ["true", "false", "1", "0"]],
    ["/healthz", { details: "verbose" }, "details", ["true", "false", "1", "0"]],
    ["/accountz", { acc: "NOPE" }, "acc", undefined],
    ["/accountstatz", { unused: "all" }, "unused", ["true", "false", "1", "0"]],
    ["/ipqueuesz", { all: "everything" }, "all", ["true", "false", "1", "0"]]
  ]
  for (const [path, query, param, allowed] of cases) {
    it(`${path}?${new URLSearchParams(query)} -> 400 naming ${param}`, () => {
      const r = call(path, query)
      expect(r.status).toBe(400)
      const b = body(r)
      expect(b.parameter).toBe(param)
      expect(b.error).toBeTypeOf("string")
      if (allowed !== undefined) expect(b.allowed).toEqual(allowed)
    })
  }

  it("nats-server's error texts where it has them", () => {
    expect(body(call("/connz", { sort: "bogus" })).error).toBe("invalid sorting option: bogus")
    expect(body(call("/connz", { state: "x" })).error).toBe("Error decoding state for x")
    expect(body(call("/subsz", { test: "a.>" })).error).toBe("invalid test subject, must be valid publish subject: a.>")
    expect(body(call("/accountz", { acc: "NOPE" })).error).toBe("Account NOPE does not exist")
  })

  it("accepts Go's boolean spellings, case-insensitive state and empty values", () => {
    for (const v of ["1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False", ""]) {
      expect(call("/connz", { auth: v }).status).toBe(200)
    }
    expect(call("/connz", { state: "CLOSED" }).status).toBe(200)
    expect(call("/connz", { state: "any", limit: "+5" }).status).toBe(200)
  })
})

describe("subsz", () => {
  it("sums sublist stats; cache_hit_rate is a ratio; avg_fanout over cache entries", () => {
    const s = sublistStats([
      { subscriptions: 3, cacheEntries: 2, inserts: 5, removes: 2, matches: 10, cacheHits: 5, maxFanout: 4, totalFanout: 6 },
      { subscriptions: 1, cacheEntries: 2, inserts: 1, removes: 0, matches: 10, cacheHits: 10, maxFanout: 9, totalFanout: 2 }
    ])
    expect(s).toEqual({ num_subscriptions: 4, num_cache: 4, num_inserts: 6, num_removes: 2, num_matches: 20, cache_hit_rate: 0.75, max_fanout: 9, avg_fanout: 2 })
    expect(sublistStats([]).cache_hit_rate).toBe(0)
  })

  it("lists subscriptions with subs=true, paged, and counts matches in total", () => {
    const all = body(call("/subsz", { subs: "1" }))
    expect(all.subscriptions_list.length).toBe(all.total)
    expect(all.total).toBeGreaterThan(50)
    const page = body(call("/subsz", { subs: "1", offset: "5", limit: "10" }))
    expect(page.subscriptions_list).toEqual(all.subscriptions_list.slice(5, 15))
    expect(body(call("/subsz")).subscriptions_list).toBeUndefined()
  })

  it("test: only subscriptions a message on the subject would reach (answer even without subs)", () => {
    const r = body(call("/subsz", { test: "orders.12.created", subs: "true" }))
    const subjects = new Set(r.subscriptions_list.map((s: any) => s.subject))
    expect(subjects).toEqual(new Set(["orders.12.>", "orders.*.created"]))
    expect(body(call("/subsz", { test: "orders.12.created" })).total).toBe(r.total)
    expect(body(call("/subsz", { test: "nobody.listens" })).total).toBe(0)
  })

  it("subject: subscriptions overlapping the pattern; acc: one account", () => {
    const r = body(call("/subsz", { subject: "telemetry.*", subs: "true" }))
    expect(r.subscriptions_list.every((s: any) => s.subject.startsWith("telemetry."))).toBe(true)
    const acme = body(call("/subsz", { acc: "ACME", subs: "true" }))
    expect(acme.subscriptions_list.every((s: any) => s.account === "ACME")).toBe(true)
    expect(acme.num_subscriptions).toBe(acme.total)
  })

  it("subject helpers", () => {
    expect(isValidLiteralSubject("a.b")).toBe(true)
    expect(isValidLiteralSubject("a.*")).toBe(false)
    expect(isValidLiteralSubject("a b")).toBe(false)
    expect(matchLiteral("a.b.c", "a.>")).toBe(true)
    expect(matchLiteral("a", "a.>")).toBe(false)
    expect(matchLiteral("a.b", "*.b")).toBe(true)
    expect(subjectsCollide("a.*", "*.b")).toBe(true)
    expect(subjectsCollide("a.>", "a")).toBe(false)
    expect(subjectsCollide("a.b", "a.c")).toBe(false)
    expect(subjectsCollide(">", "x.y.z")).toBe(true)
  })
})

describe("jsz", () => {
  it("disabled form", () => {
    const r = Either.getOrThrow(buildJsz("S", SyntheticNow, undefined, jszOptions({})))
    expect(r).toMatchObject({ disabled: true, config: { max_memory: 0, max_storage: 0 }, streams: 0, total: 0 })
    expect(Either.isLeft(buildJsz("S", SyntheticNow, undefined, jszOptions({ "leader-only": true })))).toBe(true)
  })

  it("totals, spec stats object, account/stream/consumer detail on request", () => {
    const plain = body(call("/jsz"))
    expect(plain).toMatchObject({ streams: 5, consumers: 4, messages: 165, memory: 2048, total: 2, api: { total: 42, errors: 1 } })
    expect(plain.stats).toEqual({ memory: 2048, storage: 1_048_576, reserved_memory: 0, reserved_storage: 0, accounts: 2, ha_assets: 0, api: { total: 42, errors: 1 } })
    expect(plain.account_details).toBeUndefined()
    const accs = body(call("/jsz", { accounts: "true" }))
    expect(accs.account_details.map((a: any) => a.name)).toEqual(["$G", "ACME"])
    expect(accs.account_details[0].stream_detail).toBeUndefined()
    const streams = body(call("/jsz", { streams: "true" }))
    const acme = streams.account_details.find((a: any) => a.name === "ACME")
    expect(acme.stream_detail.map((s: any) => s.name)).toEqual(["$MQTT_msgs", "$MQTT_rmsgs", "$MQTT_sess", "ORDERS"])
    expect(acme.stream_detail[0].consumer_detail).toBeUndefined()
    expect(acme.stream_detail[0].config).toBeUndefined()
    expect(acme.stream_detail[0].state.first_ts).toBe("0001-01-01T00:00:00.000Z")
    const full = body(call("/jsz", { consumers: "1", config: "1", acc: "ACME" }))
    expect(full.account_details).toHaveLength(1)
    const orders = full.account_details[0].stream_detail.find((s: any) => s.name === "ORDERS")
    expect(orders.config.subjects).toEqual(["orders.>"])
    expect(orders.consumer_detail.map((c: any) => c.name)).toEqual(["ORDERS-c0", "ORDERS-c1"])
    expect(orders.consumer_detail[0]).toMatchObject({ stream_name: "ORDERS", push_bound: true, delivered: { stream_seq: 120 } })
    const paged = body(call("/jsz", { accounts: "true", offset: "1", limit: "1" }))
    expect(paged.account_details.map((a: any) => a.name)).toEqual(["ACME"])
  })
})

describe("healthz (spec §7)", () => {
  const ok = { notReady: undefined, jetstreamConfigured: true, jetstreamError: undefined }
  const opts = { jsEnabledOnly: false, jsServerOnly: false, details: false }
  it("ok / unavailable", () => {
    expect(buildHealthz(ok, opts)).toEqual({ status: 200, body: { status: "ok" } })
    expect(buildHealthz({ ...ok, jetstreamError: "JetStream stream 'A > S' could not be recovered" }, opts)).toEqual({
      status: 503,
      body: { status: "unavailable", error: "JetStream stream 'A > S' could not be recovered" }
    })
    expect(buildHealthz({ ...ok, notReady: "not ready for connections" }, opts).status).toBe(503)
  })
  it("js-enabled-only: 503 when streams are not enabled; ignores stream-level problems", () => {
    const off = { ...ok, jetstreamConfigured: false }
    expect(buildHealthz(off, opts).status).toBe(200)
    expect(buildHealthz(off, { ...opts, jsEnabledOnly: true })).toEqual({ status: 503, body: { status: "unavailable", error: "JetStream not enabled" } })
    expect(buildHealthz({ ...ok, jetstreamError: "JetStream not enabled" }, { ...opts, jsEnabledOnly: true }).status).toBe(503)
    expect(buildHealthz({ ...ok, jetstreamError: "stream broken" }, { ...opts, jsEnabledOnly: true }).status).toBe(200)
  })
  it("js-server-only and details", () => {
    expect(buildHealthz({ ...ok, jetstreamError: "x" }, { ...opts, jsServerOnly: true }).status).toBe(200)
    expect(buildHealthz({ ...ok, jetstreamError: "x" }, { ...opts, details: true })).toEqual({
      status: 503,
      body: { status: "error", errors: [{ type: "JETSTREAM", error: "x" }] }
    })
    expect(buildHealthz(ok, { ...opts, details: true }).body).toEqual({ status: "ok" })
  })
})

describe("accountz and accountstatz", () => {
  it("names sorted, system account named; detail with acc", () => {
    const r = body(call("/accountz"))
    expect(r.accounts).toEqual(["$G", "$SYS", "ACME"])
    expect(r.system_account).toBe("$SYS")
    const d = body(call("/accountz", { acc: "ACME" })).account_detail
    expect(d).toMatchObject({ account_name: "ACME", jetstream_enabled: true, client_connections: 25, leafnode_connections: 1, expired: false, complete: true })
    expect(d.exports.map((e: any) => e.subject)).toEqual(["acme.public.>", "acme.api"])
    expect(d.sublist_stats.num_subscriptions).toBe(d.subscriptions)
  })
  it("accountstatz lists accounts with local connections unless unused=true", () => {
    expect(body(call("/accountstatz")).account_statz.map((a: any) => a.acc)).toEqual(["$G", "ACME"])
    expect(body(call("/accstatz", { unused: "true" })).account_statz.map((a: any) => a.acc)).toEqual(["$G", "$SYS", "ACME"])
    const acme = body(call("/accountstatz", { acc: "ACME" })).account_statz[0]
    expect(acme.total_conns).toBe(acme.conns + acme.leafnodes)
  })
})

describe("varz", () => {
  it("every field of spec 2.1 with the snapshot's values", () => {
    const v = body(call("/varz"))
    for (const f of [
      "server_id", "server_name", "version", "proto", "git_commit", "go", "host", "port", "auth_required", "tls_required", "tls_verify",
      "max_connections", "max_subscriptions", "ping_interval", "ping_max", "http_host", "http_port", "https_port", "auth_timeout",
      "max_control_line", "max_payload", "max_pending", "tls_timeout", "write_deadline", "start", "now", "uptime", "mem", "cores",
      "gomaxprocs", "cpu", "connections", "total_connections", "routes", "remotes", "leafnodes", "in_msgs", "out_msgs", "in_bytes",
      "out_bytes", "slow_consumers", "stale_connections", "stalled_clients", "subscriptions", "http_req_stats", "config_load_time",
      "cluster", "gateway", "leaf", "mqtt", "websocket", "jetstream"
    ]) expect(v).toHaveProperty(f)
    expect(v.uptime).toBe("1d2h3m4s")
    expect(v.ping_interval).toBe(120_000_000_000)
    expect(v.write_deadline).toBe(10_000_000_000)
    expect(v.auth_timeout).toBe(2)
    expect(v.go).toBe("node v20.0.0")
    expect(v.mqtt).toEqual({ host: "0.0.0.0", port: 1883, ack_wait: 30_000_000_000, max_ack_pending: 1024 })
    expect(v.jetstream.config.max_storage).toBe(10 * 1024 ** 3)
    expect(v.gateway).toEqual({})
    expect(v.http_req_stats).toEqual({ "/varz": 3 })
    expect(body(call("/varz", {}, { jetstream: false })).jetstream).toEqual({})
  })
})

describe("runtime endpoints", () => {
  it("ipqueuesz: non-empty queues by default, all with all=true, name filter", () => {
    const r = body(call("/ipqueuesz"))
    expect(r["store write queue ACME > ORDERS"]).toEqual({ pending: 3, in_progress: 1 })
    expect(r["jetstream api requests"]).toBeUndefined()
    expect(body(call("/ipqueuesz", { all: "true" }))["jetstream api requests"]).toEqual({ pending: 0 })
    expect(Object.keys(body(call("/ipqueuesz", { queues: "store" })))).toEqual(["store write queue ACME > ORDERS"])
  })
  it("raftz: 404 with nats-server's message while no groups exist", () => {
    const r = call("/raftz")
    expect(r.status).toBe(404)
    expect(body(r)).toEqual({ error: "No Raft nodes registered" })
  })
  it("stacksz drops environment, command line, cwd and host, also in workers", () => {
    const report = syntheticProbe({ secret: "hunter2" }).report()
    const s = sanitizeReport({ ...report, workers: [report] })
    const text = JSON.stringify(s)
    expect(text).not.toContain("hunter2")
    expect(text).not.toContain("/srv")
    expect(s.javascriptStack).toEqual({ message: "Error [ERR_SYNTHETIC]: JavaScript Callstack", stack: ["at main (main.js:1:1)"] })
    expect(s.header.nodejsVersion).toBe("v20.0.0")
  })
})

describe("metrics", () => {
  it("Prometheus text with typed, conventionally named families", () => {
    const r = call("/metrics")
    expect(r._tag).toBe("text")
    const text = r.body as string
    expect(text).toContain("# TYPE switchyard_in_msgs_total counter")
    expect(text).toContain("# TYPE switchyard_connections gauge")
    expect(text).toMatch(/^switchyard_connections 50$/m)
    expect(text).toMatch(/^switchyard_connections_by_kind\{kind="Client",type="mqtt"\} 5$/m)
    expect(text).toMatch(/^switchyard_account_connections\{account="ACME"\} 25$/m)
    expect(text).toMatch(/^switchyard_stream_messages\{account="ACME",stream="ORDERS"\} 120$/m)
    expect(text).toMatch(/^switchyard_http_requests_total\{path="\/varz"\} 3$/m)
    // Every sample line belongs to a family declared just before it.
    let family = ""
    for (const line of text.trimEnd().split("\n")) {
      const t = /^# TYPE (\S+) (counter|gauge)$/.exec(line)
      if (t) family = t[1]
      else if (!line.startsWith("#")) expect(line.startsWith(family)).toBe(true)
      // Switchyard's own counters end in _total (the exporter's names below follow the exporter instead).
      if (/^switchyard_.*_total[ {]/.test(line)) expect(text).toContain(`# TYPE ${line.split(/[ {]/)[0]} counter`)
    }
  })

  it("also carries prometheus-nats-exporter's series, under its names, with the values of /varz, /connz and /jsz", () => {
    const text = call("/metrics").body as string
    const varz = call("/varz").body as Record<string, any>
    const id = `server_id="${varz.server_id}"`
    const sample = (name: string, labels: string = id) => {
      const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `))
      expect(line, `${name}{${labels}}`).toBeDefined()
      return Number(line!.split(" ").pop())
    }
    // /varz: every number by its field name, nested objects joined with _, as gauges.
    expect(text).toContain("# TYPE gnatsd_varz_connections gauge")
    expect(sample("gnatsd_varz_connections")).toBe(varz.connections)
    expect(sample("gnatsd_varz_in_msgs")).toBe(varz.in_msgs)
    expect(sample("gnatsd_varz_max_payload")).toBe(varz.max_payload)
    expect(sample("gnatsd_varz_mem")).toBe(varz.mem)
    expect(sample("gnatsd_varz_slow_consumer_stats_clients")).toBe(varz.slow_consumer_stats.clients)
    expect(sample("gnatsd_varz_jetstream_stats_storage")).toBe(varz.jetstream.stats.storage)
    expect(sample("gnatsd_varz_jetstream_stats_api_errors")).toBe(varz.jetstream.stats.api.errors)
    expect(sample("gnatsd_varz_jetstream_config_max_storage")).toBe(varz.jetstream.config.max_storage)
    expect(sample("gnatsd_varz_http_req_stats_varz")).toBe(3)
    expect(sample("gnatsd_varz_start")).toBe(Date.parse(varz.start))
    expect(sample("gnatsd_varz_server_name", `${id},value="switchyard-test"`)).toBe(1)
    expect(sample("gnatsd_varz_version", `${id},value="${varz.version}"`)).toBe(1)
    // Strings, booleans and lists have no series.
    expect(text).not.toMatch(/^gnatsd_varz_(auth_required|host|go|connect_urls)[ {]/m)
    // /connz: the default page and its sums.
    const connz = call("/connz").body as Record<string, any>
    expect(sample("gnatsd_connz_num_connections")).toBe(connz.num_connections)
    expect(sample("gnatsd_connz_total")).toBe(connz.total)
    expect(sample("gnatsd_connz_limit")).toBe(1024)
    expect(sample("gnatsd_connz_in_msgs")).toBe(connz.connections.reduce((n: number, c: any) => n + c.in_msgs, 0))
    expect(text).toContain("# TYPE gnatsd_connz_in_msgs counter")
    // /jsz with every detail.
    const jsz = call("/jsz", { accounts: "true", streams: "true", consumers: "true", config: "true" }).body as Record<string, any>
    const server = `${id},server_name="switchyard-test",cluster="",domain="",meta_leader="",is_meta_leader="true"`
    expect(sample("jetstream_server_total_streams", server)).toBe(jsz.streams)
    expect(sample("jetstream_server_total_messages", server)).toBe(jsz.messages)
    expect(sample("jetstream_server_jetstream_disabled", server)).toBe(0)
    const acme = `${server},account="ACME",account_name="ACME",account_id="ACME"`
    const orders = `${acme},stream_name="ORDERS",stream_leader="",is_stream_leader="true",stream_raft_group=""`
    expect(sample("jetstream_account_storage_used", acme)).toBe(jsz.account_details.find((a: any) => a.name === "ACME").storage)
    expect(sample("jetstream_stream_total_messages", orders)).toBe(120)
    expect(sample("jetstream_stream_consumer_count", orders)).toBe(2)
    const c0 = `${orders},consumer_name="ORDERS-c0",consumer_leader="",is_consumer_leader="true",consumer_desc=""`
    const consumer = jsz.account_details.find((a: any) => a.name === "ACME").stream_detail.find((s: any) => s.name === "ORDERS").consumer_detail[0]
    expect(sample("jetstream_consumer_num_pending", c0)).toBe(consumer.num_pending)
    expect(sample("jetstream_consumer_ack_floor_stream_seq", c0)).toBe(consumer.ack_floor.stream_seq)
  })

  it("with the stream subsystem off, says so as the exporter does", () => {
    const text = call("/metrics", {}, { jetstream: false }).body as string
    expect(text).toMatch(/^jetstream_server_jetstream_disabled\{server_id="[A-Z0-9]+",server_name="switchyard-test",[^}]*\} 1$/m)
    expect(text).not.toMatch(/^jetstream_stream_/m)
  })
})
