// Accounts sharing subjects through exports and imports: streams (with a prefix or a
// mapped subject) and services (request in the importer, one response back), and
// nothing else crossing; imports nothing exports are refused at start-up.
import { afterEach, describe, expect, it } from "vitest"
import { connect, type NatsConnection, StringCodec } from "nats"
import type { AccountExport, AccountImport, AccountOptions, UserEntry } from "../../src/config/options.js"
import { importProblems } from "../../src/config/account-checks.js"
import { mapSubject } from "../../src/server/imports.js"
import { checkUnsupported } from "../../src/config/unsupported.js"
import { eventually, startTestServer, testOptions, type TestServer } from "../helpers/server.js"
import { getJson, startMonitoredServer } from "../helpers/monitor.js"

const sc = StringCodec()
const user = (name: string): UserEntry => ({ user: name, password: "p", nkey: undefined, permissions: undefined, account: undefined })
const acc = (name: string, exports: Array<AccountExport> = [], imports: Array<AccountImport> = []): AccountOptions =>
  ({ name, users: [user(name.toLowerCase())], exports, imports, jetstream: false })
const streamExport = (stream: string, accounts?: Array<string>): AccountExport => ({ stream, service: undefined, accounts })
const serviceExport = (service: string, accounts?: Array<string>): AccountExport => ({ stream: undefined, service, accounts })
const streamImport = (account: string, subject: string, o: { prefix?: string; to?: string } = {}): AccountImport =>
  ({ stream: { account, subject }, service: undefined, prefix: o.prefix, to: o.to })
const serviceImport = (account: string, subject: string, to?: string): AccountImport =>
  ({ stream: undefined, service: { account, subject }, prefix: undefined, to })

describe("exports and imports", () => {
  let srv: TestServer | undefined
  const conns: Array<NatsConnection> = []
  afterEach(async () => {
    await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
    await srv?.close()
    srv = undefined
  })
  const login = async (name: string) => {
    const nc = await connect({ servers: srv!.url, user: name, pass: "p", reconnect: false })
    conns.push(nc)
    return nc
  }

  it("a stream import delivers the exporter's messages under the import's prefix, and only those", async () => {
    srv = await startTestServer({
      accounts: [acc("A", [streamExport("events.>")]), acc("B", [], [streamImport("A", "events.>", { prefix: "a" })]), acc("C")]
    })
    const [a, b, c] = [await login("a"), await login("b"), await login("c")]
    const gotB: Array<string> = []
    const gotC: Array<string> = []
    b.subscribe("a.events.>", { callback: (_e, m) => gotB.push(`${m.subject}:${sc.decode(m.data)}`) })
    b.subscribe("events.>", { callback: (_e, m) => gotB.push(`unprefixed ${m.subject}`) })
    c.subscribe(">", { callback: (_e, m) => gotC.push(m.subject) })
    await b.flush()
    await c.flush()
    a.publish("events.one", sc.encode("1"))
    a.publish("private.two", sc.encode("2"))
    b.publish("events.back", sc.encode("3"))
    await a.flush()
    await eventually(() => gotB.includes("a.events.one:1") && gotB.includes("unprefixed events.back"), "the imported event")
    // The import does not flow back, and C imports nothing.
    const gotA: Array<string> = []
    a.subscribe(">", { callback: (_e, m) => gotA.push(m.subject) })
    await a.flush()
    b.publish("a.events.x", sc.encode("4"))
    await b.flush()
    a.publish("events.last", sc.encode("5"))
    await eventually(() => gotB.includes("a.events.last:5"), "the last event")
    expect(gotB.filter((s) => s.includes("private"))).toEqual([])
    expect(gotA).toEqual(["events.last"])
    expect(gotC).toEqual([])
  })

  it("a stream import with `to` maps the subject", async () => {
    srv = await startTestServer({
      accounts: [acc("A", [streamExport("orders.*")]), acc("B", [], [streamImport("A", "orders.*", { to: "imported.orders.*" })])]
    })
    const [a, b] = [await login("a"), await login("b")]
    const got: Array<string> = []
    b.subscribe("imported.>", { callback: (_e, m) => got.push(m.subject) })
    await b.flush()
    a.publish("orders.42")
    await eventually(() => got.length === 1, "the mapped message")
    expect(got).toEqual(["imported.orders.42"])
  })

  it("a service import: requests from the importer reach the exporter's responder and the reply comes back", async () => {
    srv = await startTestServer({
      accounts: [acc("A", [serviceExport("svc.>")]), acc("B", [], [serviceImport("A", "svc.upper", "upper")]), acc("C")]
    })
    const [a, b, c] = [await login("a"), await login("b"), await login("c")]
    const seen: Array<string> = []
    a.subscribe("svc.upper", {
      callback: (_e, m) => {
        seen.push(m.reply ?? "")
        m.respond(sc.encode(sc.decode(m.data).toUpperCase()))
      }
    })
    await a.flush()
    const r = await b.request("upper", sc.encode("hello"), { timeout: 5_000 })
    expect(sc.decode(r.data)).toBe("HELLO")
    // The exporter saw a private reply subject, not the importer's inbox.
    expect(seen[0]).toMatch(/^_R_\./)
    // C imported nothing: no responders.
    await expect(c.request("upper", sc.encode("x"), { timeout: 2_000 })).rejects.toThrow()
    // Many requests at once each get their own answer.
    const answers = await Promise.all(["a", "b", "c"].map((s) => b.request("upper", sc.encode(s), { timeout: 5_000 })))
    expect(answers.map((m) => sc.decode(m.data))).toEqual(["A", "B", "C"])
  })

  it("only one response is forwarded per request", async () => {
    srv = await startTestServer({
      accounts: [acc("A", [serviceExport("svc")]), acc("B", [], [serviceImport("A", "svc")])]
    })
    const [a, b] = [await login("a"), await login("b")]
    a.subscribe("svc", { callback: (_e, m) => { m.respond(sc.encode("first")); m.respond(sc.encode("second")) } })
    await a.flush()
    const got: Array<string> = []
    b.subscribe("my.reply", { callback: (_e, m) => got.push(sc.decode(m.data)) })
    await b.flush()
    b.publish("svc", sc.encode("q"), { reply: "my.reply" })
    await eventually(() => got.length >= 1, "the response")
    await a.flush()
    await b.flush()
    b.publish("svc", sc.encode("q"), { reply: "my.reply" })
    await eventually(() => got.length >= 2, "the second response")
    expect(got).toEqual(["first", "first"])
  })

  it("a request through a service import that nobody serves gets the 503 no-responders status at once", async () => {
    srv = await startTestServer({
      accounts: [acc("A", [serviceExport("svc")]), acc("B", [], [serviceImport("A", "svc")])]
    })
    const b = await login("b")
    const err = await b.request("svc", sc.encode("q"), { timeout: 20_000 }).then(
      () => undefined,
      (e: { code?: string }) => e
    )
    expect(err?.code).toBe("503")
  })

  it("/accountz shows each account's exports and imports, with the local subject of a mapped import", async () => {
    const m = await startMonitoredServer({
      accounts: [
        acc("A", [streamExport("pub.>"), serviceExport("svc", ["B"])]),
        acc("B", [], [streamImport("A", "pub.>", { prefix: "from_a" }), serviceImport("A", "svc", "ask")])
      ]
    })
    try {
      const a = (await getJson(m.base, "/accountz?acc=A")).json.account_detail
      expect(a.exports).toEqual([
        { subject: "pub.>", type: "stream" },
        { subject: "svc", type: "service", approved_accounts: ["B"] }
      ])
      expect(a.imports).toBeUndefined()
      const b = (await getJson(m.base, "/accountz?acc=B")).json.account_detail
      expect(b.imports).toEqual([
        { subject: "pub.>", account: "A", local_subject: "from_a.pub.>", type: "stream", invalid: false, share: false, tracking: false },
        { subject: "svc", account: "A", local_subject: "ask", type: "service", invalid: false, share: false, tracking: false }
      ])
    } finally {
      await m.close()
    }
  })

  it("refuses imports that no export allows", () => {
    const o = testOptions({
      accounts: [
        acc("A", [streamExport("pub.>"), serviceExport("svc", ["B"])]),
        acc("B", [], [streamImport("A", "pub.x"), serviceImport("A", "svc")]),
        acc("C", [], [streamImport("A", "other"), serviceImport("A", "svc"), streamImport("Z", "x")])
      ]
    })
    expect(importProblems(o)).toEqual([
      { path: ["accounts", "C", "imports", 0], message: 'accounts.C: stream import of "other" from "A": not authorized (no matching export for this account)' },
      { path: ["accounts", "C", "imports", 1], message: 'accounts.C: service import of "svc" from "A": not authorized (no matching export for this account)' },
      { path: ["accounts", "C", "imports", 2], message: 'accounts.C: stream import of "x" from "Z": no such account' }
    ])
    expect(checkUnsupported(o).errors).toHaveLength(3)
    expect(checkUnsupported(testOptions({ accounts: [acc("A", [streamExport(">")]), acc("B", [], [streamImport("A", "x.y")])] })).errors)
      .toEqual([])
  })

  it("maps subjects token by token", () => {
    expect(mapSubject("orders.42", "orders.*", "in.orders.*")).toBe("in.orders.42")
    expect(mapSubject("a.b.c.d", "a.>", "x.>")).toBe("x.b.c.d")
    expect(mapSubject("a.1.2", "a.*.*", "z.*.y.*")).toBe("z.1.y.2")
    expect(mapSubject("any", "any", "literal")).toBe("literal")
  })
})
