// /connz against the real server: 50 authenticated `nats` clients in three
// accounts, each with its own traffic (messages and bytes in and out,
// subscription count), plus connections closed normally, by a parse error and
// by a failed login. Every sort key, paging, every filter, auth/subs detail and
// the closed-connection ring, each answer checked against a model of the traffic.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, type NatsConnection } from "nats"
import { eventually, RawClient } from "../helpers/server.js"
import {
  account,
  authorization,
  getJson,
  GoDurationRe,
  parseGoDuration,
  parseTimestamp,
  parseUptime,
  startMonitoredServer,
  TimestampRe,
  UptimeRe,
  userEntry,
  type MonitoredServer
} from "../helpers/monitor.js"

const Users = [
  { user: "alice", pass: "alice-pw-Zq1", account: "ACME" },
  { user: "bob", pass: "bob-pw-Zq2", account: "ACME" },
  { user: "carol", pass: "carol-pw-Zq3", account: "OTHER" },
  { user: "dave", pass: "dave-pw-Zq4", account: "$G" }
] as const
const Passwords = [...Users.map((u) => u.pass), "wrong-pw-Zq5"]

const NatsVersion = "2.29.3"

/** What client i does, and so what /connz must say about it. */
interface Plan {
  readonly i: number
  readonly name: string
  readonly user: string
  readonly pass: string
  readonly account: string
  readonly subjects: ReadonlyArray<string>
  readonly sinkMsgs: number
  readonly sinkSize: number
  readonly selfMsgs: number
  readonly selfSize: number
}

const plan = (i: number): Plan => {
  const u = Users[i % Users.length]
  return {
    i,
    name: `c-${String(i).padStart(2, "0")}`,
    user: u.user,
    pass: u.pass,
    account: u.account,
    subjects: [`s.${i}`, ...Array.from({ length: i % 5 }, (_, k) => `x.${i}.${k}`)],
    sinkMsgs: i % 50,
    sinkSize: 50 - (i % 50),
    selfMsgs: (i * 7) % 13,
    selfSize: 1 + ((i * 11) % 23)
  }
}

const expected = (p: Plan) => ({
  in_msgs: p.sinkMsgs + p.selfMsgs,
  in_bytes: p.sinkMsgs * p.sinkSize + p.selfMsgs * p.selfSize,
  out_msgs: p.selfMsgs,
  out_bytes: p.selfMsgs * p.selfSize,
  subscriptions: p.subjects.length
})

type Rec = Record<string, any>

/** Descending by key, ties by cid ascending (cid itself ascending). */
const orderBy = (recs: ReadonlyArray<Rec>, key: (r: Rec) => number | string, ascending = false): Array<number> =>
  [...recs]
    .sort((a, b) => {
      const ka = key(a)
      const kb = key(b)
      if (ka !== kb) return (ka < kb ? -1 : 1) * (ascending ? 1 : -1)
      return a.cid - b.cid
    })
    .map((r) => r.cid)

const Persistent = 50
const Temporary = 6

describe("/connz over 50 live connections", () => {
  let srv: MonitoredServer
  const conns: Array<NatsConnection> = []
  const planOf = new Map<number, Plan>() // cid → plan
  const closedCids = { normal: [] as Array<number>, parse: 0, auth: 0 }
  const connz = async (q = "", status = 200) => (await getJson(srv.base, `/connz${q}`, status)).json

  const run = async (p: Plan): Promise<NatsConnection> => {
    const nc = await connect({ servers: srv.url, user: p.user, pass: p.pass, name: p.name, reconnect: false })
    let got = 0
    nc.subscribe(p.subjects[0], { callback: () => got++ })
    for (const s of p.subjects.slice(1)) nc.subscribe(s)
    await nc.flush()
    for (let k = 0; k < p.sinkMsgs; k++) nc.publish(`sink.${p.i}`, new Uint8Array(p.sinkSize))
    for (let k = 0; k < p.selfMsgs; k++) nc.publish(p.subjects[0], new Uint8Array(p.selfSize))
    await nc.flush()
    await eventually(() => got === p.selfMsgs, `${p.name} to receive its ${p.selfMsgs} messages`)
    return nc
  }

  beforeAll(async () => {
    srv = await startMonitoredServer({
      accounts: [
        account("ACME", [userEntry("alice", Users[0].pass), userEntry("bob", Users[1].pass)]),
        account("OTHER", [userEntry("carol", Users[2].pass)])
      ],
      authorization: authorization({ users: [userEntry("dave", Users[3].pass)] })
    })
    // Connected one after the other, so client i gets cid i + 1.
    for (let i = 0; i < Persistent + Temporary; i++) {
      const p = plan(i)
      const nc = await run(p)
      planOf.set(srv.serving.server.totalConnections, p)
      conns.push(nc)
    }
    // The temporary ones leave normally …
    for (const nc of conns.splice(Persistent)) {
      await nc.close()
    }
    for (let i = Persistent; i < Persistent + Temporary; i++) closedCids.normal.push(i + 1)
    // … one breaks the protocol …
    const raw = await RawClient.ready(srv.natsPort, { verbose: false, user: "bob", pass: Users[1].pass, name: "raw-parse", lang: "raw", version: "0.0.1" })
    closedCids.parse = srv.serving.server.totalConnections
    raw.send("FOO BAR\r\n")
    await raw.waitFor("-ERR 'Unknown Protocol Operation'")
    await raw.waitClosed()
    // … and one fails to log in.
    await expect(
      connect({ servers: srv.url, user: "alice", pass: "wrong-pw-Zq5", name: "bad-login", reconnect: false })
    ).rejects.toThrow(/Authorization Violation/i)
    closedCids.auth = srv.serving.server.totalConnections
    await eventually(() => srv.serving.server.closed.size === Temporary + 2, "every closed connection in the ring")
  })

  afterAll(async () => {
    await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
    await srv.close()
  })

  it("lists every open connection by cid with exact counters, client name/lang/version and Go-style durations", async () => {
    const c = await connz()
    expect([c.num_connections, c.total, c.offset, c.limit]).toEqual([Persistent, Persistent, 0, 1024])
    expect(c.now).toMatch(TimestampRe)
    expect(c.connections.map((r: Rec) => r.cid)).toEqual(Array.from({ length: Persistent }, (_, i) => i + 1))
    for (const r of c.connections) {
      const p = planOf.get(r.cid)!
      expect(r, p.name).toMatchObject({
        ...expected(p),
        kind: "Client",
        type: "nats",
        ip: "127.0.0.1",
        name: p.name,
        lang: "nats.js",
        version: NatsVersion,
        account: p.account,
        pending_bytes: 0
      })
      expect(r.authorized_user).toBeUndefined()
      expect(r.subscriptions_list).toBeUndefined()
      expect(r.stop).toBeUndefined()
      expect(r.reason).toBeUndefined()
      expect(r.start).toMatch(TimestampRe)
      expect(r.last_activity).toMatch(TimestampRe)
      expect(parseTimestamp(r.last_activity)).toBeGreaterThanOrEqual(parseTimestamp(r.start))
      expect(r.rtt).toMatch(GoDurationRe)
      expect(r.uptime).toMatch(UptimeRe)
      expect(r.idle).toMatch(UptimeRe)
      // Durations agree with the timestamps of the same answer.
      expect(parseUptime(r.uptime)).toBe(Math.floor((parseTimestamp(c.now) - parseTimestamp(r.start)) / 1000))
      expect(parseUptime(r.idle)).toBe(Math.floor((parseTimestamp(c.now) - parseTimestamp(r.last_activity)) / 1000))
      // nats.js answers the server's first PING during the handshake: every client has a measured RTT.
      expect(parseGoDuration(r.rtt)).toBeLessThan(60e9)
    }
    // /varz agrees with the sum.
    const v = (await getJson(srv.base, "/varz")).json
    const all = [...planOf.values()]
    expect(v.connections).toBe(Persistent)
    expect(v.total_connections).toBe(Persistent + Temporary + 2)
    expect(v.in_msgs).toBe(all.reduce((n, p) => n + expected(p).in_msgs, 0))
    expect(v.in_bytes).toBe(all.reduce((n, p) => n + expected(p).in_bytes, 0))
    expect(v.out_msgs).toBe(all.reduce((n, p) => n + expected(p).out_msgs, 0))
    expect(v.out_bytes).toBe(all.reduce((n, p) => n + expected(p).out_bytes, 0))
    expect(v.subscriptions).toBe(all.filter((p) => p.i < Persistent).reduce((n, p) => n + p.subjects.length, 0))
    expect(v.auth_required).toBe(true)
  })

  it("sorts by every open-connection key: descending, ties by cid; cid ascending", async () => {
    const base = (await connz()).connections as Array<Rec>
    const counters: Record<string, (r: Rec) => number> = {
      subs: (r) => expected(planOf.get(r.cid)!).subscriptions,
      msgs_to: (r) => expected(planOf.get(r.cid)!).out_msgs,
      msgs_from: (r) => expected(planOf.get(r.cid)!).in_msgs,
      bytes_to: (r) => expected(planOf.get(r.cid)!).out_bytes,
      bytes_from: (r) => expected(planOf.get(r.cid)!).in_bytes,
      pending: (r) => r.pending_bytes
    }
    for (const [key, f] of Object.entries(counters)) {
      const got = (await connz(`?sort=${key}`)).connections.map((r: Rec) => r.cid)
      expect(got, key).toEqual(orderBy(base, f))
      // The order is not just cid order (except pending, which is 0 everywhere here).
      if (key !== "pending") expect(got, key).not.toEqual(orderBy(base, (r) => r.cid, true))
    }
    expect((await connz("?sort=cid")).connections.map((r: Rec) => r.cid)).toEqual(orderBy(base, (r) => r.cid, true))
    // Time-valued keys: checked against the timestamps each answer carries (ms precision).
    const timeKeys: Record<string, [(r: Rec) => number, boolean]> = {
      start: [(r) => parseTimestamp(r.start), false],
      last: [(r) => parseTimestamp(r.last_activity), false],
      // Longest idle first = oldest last activity first; longest uptime first = oldest start first.
      idle: [(r) => parseTimestamp(r.last_activity), true],
      uptime: [(r) => parseTimestamp(r.start), true]
    }
    for (const [key, [f, asc]] of Object.entries(timeKeys)) {
      const recs = (await connz(`?sort=${key}`)).connections as Array<Rec>
      expect(recs.map((r) => r.cid), key).toEqual(orderBy(recs, f, asc))
      expect(recs.map((r) => r.cid).sort((a, b) => a - b), key).toEqual(base.map((r) => r.cid))
    }
    // rtt sorts by the measured nanoseconds, finer than the printed microseconds, so rows
    // that print alike may come in either order: check the printed values never increase.
    const byRtt = (await connz("?sort=rtt")).connections as Array<Rec>
    const rtts = byRtt.map((r) => parseGoDuration(r.rtt))
    for (let i = 1; i < rtts.length; i++) expect(rtts[i], "rtt").toBeLessThanOrEqual(rtts[i - 1])
    expect(byRtt.map((r) => r.cid).sort((a, b) => a - b), "rtt").toEqual(base.map((r) => r.cid))
  })

  it("sorts the closed ring, stop and reason included, and refuses stop/reason on open connections", async () => {
    const closed = (await connz("?state=closed")).connections as Array<Rec>
    for (const key of ["cid", "start", "subs", "pending", "msgs_to", "msgs_from", "bytes_to", "bytes_from", "last", "idle", "uptime", "stop", "reason", "rtt"]) {
      const recs = (await connz(`?state=closed&sort=${key}`)).connections as Array<Rec>
      const f: Record<string, [(r: Rec) => number | string, boolean]> = {
        cid: [(r) => r.cid, true],
        start: [(r) => parseTimestamp(r.start), false],
        subs: [(r) => r.subscriptions, false],
        pending: [(r) => r.pending_bytes, false],
        msgs_to: [(r) => r.out_msgs, false],
        msgs_from: [(r) => r.in_msgs, false],
        bytes_to: [(r) => r.out_bytes, false],
        bytes_from: [(r) => r.in_bytes, false],
        last: [(r) => parseTimestamp(r.last_activity), false],
        // Closed: idle = stop - last, uptime = stop - start.
        idle: [(r) => parseTimestamp(r.stop) - parseTimestamp(r.last_activity), false],
        uptime: [(r) => parseTimestamp(r.stop) - parseTimestamp(r.start), false],
        stop: [(r) => parseTimestamp(r.stop), false],
        reason: [(r) => r.reason, false],
        rtt: [(r) => parseGoDuration(r.rtt), false]
      }
      if (key === "rtt") {
        // Sorted by the measured nanoseconds; the printed microseconds may tie.
        const v = recs.map((r) => parseGoDuration(r.rtt))
        for (let i = 1; i < v.length; i++) expect(v[i], key).toBeLessThanOrEqual(v[i - 1])
        continue
      }
      expect(recs.map((r) => r.cid), key).toEqual(orderBy(closed, f[key][0], f[key][1]))
    }
    expect((await connz("?state=closed&sort=reason")).connections.map((r: Rec) => r.reason)).toEqual([
      "Parse Error",
      ...Array(Temporary).fill("Client Closed"),
      "Authentication Failure"
    ])
    for (const q of ["?sort=stop", "?sort=reason", "?sort=stop&state=open", "?sort=reason&state=all", "?sort=stop&state=any"]) {
      const e = await connz(q, 400)
      expect(e.parameter, q).toBe("sort")
      expect(e.error, q).toMatch(/closed/)
    }
    // state=all mixes both, in every order.
    const all = (await connz("?state=all&sort=msgs_from")).connections as Array<Rec>
    expect(all).toHaveLength(Persistent + Temporary + 2)
    expect(all.map((r) => r.cid)).toEqual(orderBy(all, (r) => r.in_msgs))
    expect(all.map((r) => r.in_msgs)).toEqual([...all.map((r) => r.in_msgs)].sort((a, b) => b - a))
  })

  it("lists closed connections with their reasons, final counters and subscriptions", async () => {
    const c = await connz("?state=closed&subs=true&auth=true")
    expect([c.num_connections, c.total]).toEqual([Temporary + 2, Temporary + 2])
    const byCid = new Map<number, Rec>(c.connections.map((r: Rec) => [r.cid, r]))
    for (const cid of closedCids.normal) {
      const r = byCid.get(cid)!
      const p = planOf.get(cid)!
      expect(r, p.name).toMatchObject({ ...expected(p), reason: "Client Closed", name: p.name, account: p.account, authorized_user: p.user })
      expect([...r.subscriptions_list].sort()).toEqual([...p.subjects].sort())
      expect(r.stop).toMatch(TimestampRe)
      expect(parseTimestamp(r.stop)).toBeGreaterThanOrEqual(parseTimestamp(r.start))
    }
    const detail = (await connz(`?state=closed&subs=detail&cid=${closedCids.normal[0]}`)).connections[0]
    const p0 = planOf.get(closedCids.normal[0])!
    expect(detail.subscriptions_list_detail.find((d: Rec) => d.subject === `s.${p0.i}`)).toMatchObject({ msgs: p0.selfMsgs, cid: closedCids.normal[0] })
    expect(detail.subscriptions_list_detail).toHaveLength(p0.subjects.length)
    expect(byCid.get(closedCids.parse)).toMatchObject({ reason: "Parse Error", name: "raw-parse", lang: "raw", version: "0.0.1", authorized_user: "bob", account: "ACME" })
    const bad = byCid.get(closedCids.auth)!
    expect(bad).toMatchObject({ reason: "Authentication Failure", name: "bad-login", lang: "nats.js", account: "$G" })
    expect(bad.authorized_user).toBeUndefined()
    // Open ones are not in it; state=open has none of these.
    const openCids = new Set((await connz("?state=open")).connections.map((r: Rec) => r.cid))
    for (const cid of byCid.keys()) expect(openCids.has(cid)).toBe(false)
    expect((await connz("?state=ALL")).total).toBe(Persistent + Temporary + 2)
    expect((await connz("?state=any")).total).toBe(Persistent + Temporary + 2)
  })

  it("pages with offset and limit (default 1024) over the sorted list", async () => {
    const full = (await connz("?sort=bytes_from")).connections.map((r: Rec) => r.cid)
    const page = await connz("?sort=bytes_from&offset=10&limit=5")
    expect([page.offset, page.limit, page.num_connections, page.total]).toEqual([10, 5, 5, Persistent])
    expect(page.connections.map((r: Rec) => r.cid)).toEqual(full.slice(10, 15))
    const tail = await connz("?sort=bytes_from&offset=45&limit=20")
    expect([tail.num_connections, tail.total]).toEqual([5, Persistent])
    expect(tail.connections.map((r: Rec) => r.cid)).toEqual(full.slice(45))
    const past = await connz("?offset=500")
    expect([past.num_connections, past.total, past.connections.length]).toEqual([0, Persistent, 0])
    expect((await connz("?limit=0")).limit).toBe(1024)
    expect((await connz("?limit=1")).connections.map((r: Rec) => r.cid)).toEqual([1])
    // Walking the pages visits every connection once.
    const seen: Array<number> = []
    for (let off = 0; off < Persistent; off += 7) seen.push(...(await connz(`?sort=msgs_to&offset=${off}&limit=7`)).connections.map((r: Rec) => r.cid))
    expect(seen).toEqual((await connz("?sort=msgs_to")).connections.map((r: Rec) => r.cid))
  })

  it("filters by cid, open or closed", async () => {
    for (const cid of [1, 17, 50]) {
      const c = await connz(`?cid=${cid}`)
      expect([c.num_connections, c.total]).toEqual([1, 1])
      expect(c.connections[0]).toMatchObject({ cid, name: planOf.get(cid)!.name })
    }
    const gone = closedCids.normal[2]
    expect((await connz(`?cid=${gone}`)).connections).toEqual([])
    expect((await connz(`?cid=${gone}&state=closed`)).connections.map((r: Rec) => [r.cid, r.reason])).toEqual([[gone, "Client Closed"]])
    expect((await connz(`?cid=${gone}&state=all`)).connections.map((r: Rec) => r.cid)).toEqual([gone])
    expect((await connz(`?cid=${closedCids.parse}&state=closed`)).connections[0].reason).toBe("Parse Error")
    expect((await connz("?cid=4242")).total).toBe(0)
  })

  it("shows subscriptions with subs=true and their detail with subs=detail", async () => {
    const t = await connz("?subs=true")
    for (const r of t.connections) {
      const p = planOf.get(r.cid)!
      expect([...r.subscriptions_list].sort(), p.name).toEqual([...p.subjects].sort())
      expect(r.subscriptions_list_detail).toBeUndefined()
    }
    const d = await connz("?subs=detail")
    for (const r of d.connections) {
      const p = planOf.get(r.cid)!
      expect(r.subscriptions_list).toBeUndefined()
      const detail = [...r.subscriptions_list_detail].sort((a: Rec, b: Rec) => (a.subject < b.subject ? -1 : 1))
      const want = p.subjects
        .map((subject) => ({ subject, sid: expect.any(String), msgs: subject === `s.${p.i}` ? p.selfMsgs : 0, cid: r.cid }))
        .sort((a, b) => (a.subject < b.subject ? -1 : 1))
      expect(detail, p.name).toEqual(want)
    }
    expect((await connz("?subs=DETAIL&cid=3")).connections[0].subscriptions_list_detail).toHaveLength(plan(2).subjects.length)
  })

  it("auth=true shows the authorized user and account; user and acc filter", async () => {
    const a = await connz("?auth=true")
    for (const r of a.connections) {
      const p = planOf.get(r.cid)!
      expect([r.authorized_user, r.account], p.name).toEqual([p.user, p.account])
    }
    const count = (f: (p: Plan) => boolean) => [...planOf.values()].filter((p) => p.i < Persistent && f(p)).length
    for (const u of Users) {
      const c = await connz(`?user=${u.user}&auth=true`)
      expect(c.total, u.user).toBe(count((p) => p.user === u.user))
      for (const r of c.connections) expect([r.authorized_user, r.account]).toEqual([u.user, u.account])
    }
    for (const acc of ["ACME", "OTHER", "$G"]) {
      const c = await connz(`?acc=${encodeURIComponent(acc)}`)
      expect(c.total, acc).toBe(count((p) => p.account === acc))
      for (const r of c.connections) expect(r.account).toBe(acc)
    }
    expect((await connz("?acc=ACME&user=carol")).total).toBe(0)
    expect((await connz("?acc=ACME&user=bob")).total).toBe(count((p) => p.user === "bob"))
    expect((await connz("?user=nobody")).total).toBe(0)
    expect((await connz("?acc=NOPE")).total).toBe(0)
    expect((await connz("?mqtt_client=nobody")).total).toBe(0)
    // Closed ones filter too: alice's temporary connection and nobody else's.
    const aliceAll = await connz("?user=alice&state=all&auth=true")
    expect(aliceAll.total).toBe([...planOf.values()].filter((p) => p.user === "alice").length)
    const bobClosed = (await connz("?user=bob&state=closed")).connections.map((r: Rec) => r.cid).sort((x: number, y: number) => x - y)
    expect(bobClosed).toEqual([...closedCids.normal.filter((cid) => planOf.get(cid)!.user === "bob"), closedCids.parse].sort((x, y) => x - y))
  })

  // Regression: RTT was timed with the millisecond clock, so loopback read "0s" or "1ms".
  it("rtt is measured with sub-millisecond precision", async () => {
    const rows = (await connz("?state=open&limit=1024")).connections as Array<Rec>
    const rtts = rows.map((r) => parseGoDuration(r.rtt)).filter((ns) => ns > 0)
    expect(rtts.length).toBeGreaterThan(0)
    // Go prints sub-millisecond durations in µs; some loopback round trip is that short.
    expect(rows.some((r) => /µs$/.test(r.rtt) || (/ms$/.test(r.rtt) && !/^\d+ms$/.test(r.rtt)))).toBe(true)
  })

  it("never shows a password, in any form of /connz", async () => {
    for (const q of ["?auth=true&subs=detail", "?auth=true&subs=true&state=all", "?auth=1&state=closed&subs=detail", "?user=alice&auth=true&state=all"]) {
      const body = (await getJson(srv.base, `/connz${q}`)).got.body
      for (const pw of Passwords) expect(body, q).not.toContain(pw)
    }
  })

  it("per-account statistics add up to the clients of each account", async () => {
    const statz = (await getJson(srv.base, "/accountstatz")).json.account_statz as Array<Rec>
    expect(statz.map((a) => a.acc)).toEqual(["$G", "ACME", "OTHER"])
    for (const a of statz) {
      const mine = [...planOf.values()].filter((p) => p.account === a.acc)
      const open = mine.filter((p) => p.i < Persistent)
      expect(a.conns, a.acc).toBe(open.length)
      expect(a.num_subscriptions, a.acc).toBe(open.reduce((n, p) => n + p.subjects.length, 0))
      expect(a.sent, a.acc).toEqual({
        msgs: mine.reduce((n, p) => n + expected(p).in_msgs, 0),
        bytes: mine.reduce((n, p) => n + expected(p).in_bytes, 0)
      })
      expect(a.received, a.acc).toEqual({
        msgs: mine.reduce((n, p) => n + expected(p).out_msgs, 0),
        bytes: mine.reduce((n, p) => n + expected(p).out_bytes, 0)
      })
    }
    const acme = (await getJson(srv.base, "/accountz?acc=ACME")).json.account_detail
    expect(acme).toMatchObject({ account_name: "ACME", client_connections: statz[1].conns, subscriptions: statz[1].num_subscriptions })
  })
})
