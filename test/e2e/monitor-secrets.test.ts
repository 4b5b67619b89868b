// Monitoring has no authentication of its own, so it must never reveal a secret.
// Real servers configured with sentinel passwords and tokens, clients logged in
// with them (some gone, so they sit in the closed ring, one failing with a wrong
// sentinel password), then every endpoint with every parameter: no sentinel in
// any body or header, nor anywhere in the server's log.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, type NatsConnection } from "nats"
import type { ServerOptions } from "../../src/config/options.js"
import { eventually, RawClient } from "../helpers/server.js"
import {
  account,
  authorization,
  BadRequests,
  request,
  startMonitoredServer,
  sweepRequests,
  userEntry,
  type MonitoredServer
} from "../helpers/monitor.js"

const S = {
  alicePw: "Sntl-alice-pw-7f3a9c41",
  bobPw: "Sntl-bob-pw-0b8e22d7",
  carolPw: "Sntl-carol-pw-5c61f0aa",
  davePw: "Sntl-dave-pw-e93d1b06",
  wrongPw: "Sntl-wrong-pw-44aa19ce",
  token: "Sntl-token-c0ffee5eed",
  wrongToken: "Sntl-wrong-token-fe11ed",
  singlePw: "Sntl-single-pw-9d2c7e10",
  env: "Sntl-env-3b7d51a2"
} as const
const Sentinels = Object.values(S)

const EnvName = "SWITCHYARD_E2E_MONITOR_SECRET"

interface Scenario {
  readonly title: string
  readonly options: Partial<ServerOptions>
  /** Log in good clients (returned open), some that leave, and failures; returns sweep parameters. */
  readonly populate: (srv: MonitoredServer) => Promise<{ readonly open: Array<NatsConnection>; readonly user: string; readonly acc: string }>
}

const closeAndWait = async (srv: MonitoredServer, nc: NatsConnection, before: number) => {
  await nc.close()
  await eventually(() => srv.serving.server.closed.size > before, "the closed connection in the ring")
}

const Scenarios: ReadonlyArray<Scenario> = [
  {
    title: "user lists and accounts with sentinel passwords",
    options: {
      accounts: [
        account("ACME", [userEntry("alice", S.alicePw), userEntry("bob", S.bobPw)]),
        account("OTHER", [userEntry("carol", S.carolPw)])
      ],
      authorization: authorization({ users: [userEntry("dave", S.davePw)] })
    },
    populate: async (srv) => {
      const open: Array<NatsConnection> = []
      for (const [user, pass] of [["alice", S.alicePw], ["bob", S.bobPw], ["carol", S.carolPw], ["dave", S.davePw]] as const) {
        const nc = await connect({ servers: srv.url, user, pass, name: `app-${user}`, reconnect: false })
        nc.subscribe(`${user}.in`)
        nc.publish(`${user}.in`, new TextEncoder().encode("hello"))
        await nc.flush()
        open.push(nc)
      }
      // Leaves normally (closed ring keeps it) …
      const leaving = await connect({ servers: srv.url, user: "bob", pass: S.bobPw, name: "leaving", reconnect: false })
      leaving.subscribe("bob.leaving")
      await leaving.flush()
      await closeAndWait(srv, leaving, srv.serving.server.closed.size)
      // … a protocol error after logging in over a raw socket …
      const raw = await RawClient.ready(srv.natsPort, { verbose: false, user: "carol", pass: S.carolPw, name: "raw" })
      raw.send("SUB carol.raw 1\r\nFOO\r\n")
      await raw.waitClosed()
      // … and a wrong password.
      await expect(connect({ servers: srv.url, user: "alice", pass: S.wrongPw, reconnect: false })).rejects.toThrow(/Authorization Violation/i)
      const rawBad = await RawClient.connect(srv.natsPort)
      rawBad.send(`CONNECT {"verbose":false,"user":"dave","pass":"${S.wrongPw}"}\r\nPING\r\n`)
      await rawBad.waitClosed()
      return { open, user: "alice", acc: "ACME" }
    }
  },
  {
    title: "a sentinel token",
    options: { authorization: authorization({ token: S.token }) },
    populate: async (srv) => {
      const nc = await connect({ servers: srv.url, token: S.token, name: "tok-app", reconnect: false })
      nc.subscribe("t.in")
      await nc.flush()
      const leaving = await connect({ servers: srv.url, token: S.token, name: "tok-leaving", reconnect: false })
      await leaving.flush()
      await closeAndWait(srv, leaving, srv.serving.server.closed.size)
      await expect(connect({ servers: srv.url, token: S.wrongToken, reconnect: false })).rejects.toThrow(/Authorization Violation/i)
      // Token logins have no user name to show.
      const c = JSON.parse((await request(`${srv.base}/connz?auth=true&state=all`)).body)
      for (const r of c.connections) expect(r.authorized_user).toBeUndefined()
      return { open: [nc], user: "nobody", acc: "$G" }
    }
  },
  {
    title: "a single user with a sentinel password",
    options: { authorization: authorization({ user: "admin", password: S.singlePw }) },
    populate: async (srv) => {
      const nc = await connect({ servers: srv.url, user: "admin", pass: S.singlePw, name: "single-app", reconnect: false })
      nc.subscribe("s.in")
      await nc.flush()
      const leaving = await connect({ servers: srv.url, user: "admin", pass: S.singlePw, name: "single-leaving", reconnect: false })
      await leaving.flush()
      await closeAndWait(srv, leaving, srv.serving.server.closed.size)
      await expect(connect({ servers: srv.url, user: "admin", pass: S.wrongPw, reconnect: false })).rejects.toThrow(/Authorization Violation/i)
      return { open: [nc], user: "admin", acc: "$G" }
    }
  }
]

const leaks = (text: string): Array<string> => Sentinels.filter((s) => text.includes(s))

describe("no secret ever leaves through monitoring or the log", () => {
  beforeAll(() => {
    process.env[EnvName] = S.env
  })
  afterAll(() => {
    delete process.env[EnvName]
  })

  for (const sc of Scenarios) {
    it(`with ${sc.title}: every endpoint, every parameter, every header, every log line`, async () => {
      const srv = await startMonitoredServer({ ...sc.options, httpBasePath: "" })
      const open: Array<NatsConnection> = []
      try {
        const p = await sc.populate(srv)
        open.push(...p.open)
        expect(srv.serving.server.closed.size).toBeGreaterThan(0)
        const ring = srv.serving.server.closed.toArray()
        const connz = JSON.parse((await request(`${srv.base}/connz?auth=true`)).body)
        const requests = [
          ...sweepRequests({
            cid: connz.connections[0].cid,
            closedCid: ring[0].cid,
            user: p.user,
            acc: p.acc,
            subject: `${p.user}.in`,
            pattern: ">"
          }),
          ...ring.map((c) => `/connz?cid=${c.cid}&state=closed&auth=true&subs=detail`),
          ...BadRequests.map(([path]) => path)
        ]
        let served = 0
        for (const path of requests) {
          for (const method of ["GET", "HEAD"]) {
            const r = await request(srv.base + path, { method })
            expect([200, 400, 404, 503], `${method} ${path}`).toContain(r.status)
            expect(leaks(r.body), `${method} ${path} body`).toEqual([])
            expect(leaks(JSON.stringify(r.headers)), `${method} ${path} headers`).toEqual([])
            served++
          }
        }
        expect(served).toBeGreaterThan(100)
        // The sweep saw the people it should have: users and closed entries are there, just no secrets.
        const all = (await request(`${srv.base}/connz?state=all&auth=true&subs=detail`)).body
        expect(JSON.parse(all).total).toBe(srv.serving.server.clients.size + ring.length)
        // The environment is in the process, not in /stacksz.
        expect(process.env[EnvName]).toBe(S.env)
      } finally {
        await Promise.all(open.map((c) => c.close().catch(() => {})))
        await srv.close()
      }
      // Debug and trace logging were on for the whole run (CONNECT is traced).
      const log = srv.lines.join("")
      expect(log).toContain("CONNECT")
      if (sc.title !== "a sentinel token") expect(log).toContain('"pass":"[REDACTED]"')
      else expect(log).toContain('"auth_token":"[REDACTED]"')
      expect(leaks(log)).toEqual([])
    })
  }
})
