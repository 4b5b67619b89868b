// The foundation's authentication: token, single user, user lists and accounts as isolation.
import { afterEach, describe, expect, it } from "vitest"
import { connect, type NatsConnection, StringCodec } from "nats"
import { account, authorization as authz, eventually, RawClient, startTestServer, type TestServer, userEntry as user } from "../helpers/server.js"

const sc = StringCodec()

describe("authentication", () => {
  let srv: TestServer | undefined
  const conns: Array<NatsConnection> = []
  afterEach(async () => {
    await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
    await srv?.close()
    srv = undefined
  })

  it("token: accepts the right token and refuses others with 'Authorization Violation'", async () => {
    srv = await startTestServer({ authorization: authz({ token: "t0ken" }) })
    conns.push(await connect({ servers: srv.url, token: "t0ken" }))
    await expect(connect({ servers: srv.url, token: "wrong", reconnect: false })).rejects.toThrow(/Authorization Violation/i)
    const raw = await RawClient.connect(srv.port)
    await raw.waitFor('"auth_required":true')
    raw.send("SUB foo 1\r\n")
    await raw.waitFor("-ERR 'Authorization Violation'\r\n")
    await raw.waitClosed()
  })

  it("user/password: accepts and refuses", async () => {
    srv = await startTestServer({ authorization: authz({ user: "alice", password: "pw" }) })
    conns.push(await connect({ servers: srv.url, user: "alice", pass: "pw" }))
    await expect(connect({ servers: srv.url, user: "alice", pass: "nope", reconnect: false })).rejects.toThrow(/Authorization Violation/i)
    await expect(connect({ servers: srv.url, reconnect: false })).rejects.toThrow(/Authorization Violation/i)
  })

  it("accounts isolate subjects: a subscriber in A never sees B's messages", async () => {
    srv = await startTestServer({
      accounts: [
        account("A", [user("a1", "p"), user("a2", "p")]),
        account("B", [user("b1", "p")])
      ]
    })
    const a1 = await connect({ servers: srv.url, user: "a1", pass: "p" })
    const a2 = await connect({ servers: srv.url, user: "a2", pass: "p" })
    const b1 = await connect({ servers: srv.url, user: "b1", pass: "p" })
    conns.push(a1, a2, b1)
    const gotA: Array<string> = []
    const gotB: Array<string> = []
    a1.subscribe("shared.subject", { callback: (_e, m) => gotA.push(sc.decode(m.data)) })
    b1.subscribe("shared.subject", { callback: (_e, m) => gotB.push(sc.decode(m.data)) })
    await a1.flush()
    await b1.flush()
    a2.publish("shared.subject", sc.encode("for-A"))
    b1.publish("shared.subject", sc.encode("for-B"))
    await a2.flush()
    await b1.flush()
    await eventually(() => gotA.length === 1 && gotB.length === 1, "one message in each account")
    await a1.flush()
    expect(gotA).toEqual(["for-A"])
    expect(gotB).toEqual(["for-B"])
    const accountOf = (u: string) => [...srv!.server.clients.values()].find((c) => c.user === u)?.account.name
    expect(accountOf("a1")).toBe("A")
    expect(accountOf("b1")).toBe("B")
  })

  it("no_auth_user lets credential-less clients in as that user", async () => {
    srv = await startTestServer({
      accounts: [account("A", [user("dflt", "p")])],
      noAuthUser: "dflt"
    })
    conns.push(await connect({ servers: srv.url }))
    await eventually(() => [...srv!.server.clients.values()].some((c) => c.user === "dflt" && c.account.name === "A"), "bound to A")
  })

  it("traces CONNECT without ever printing a password or token", async () => {
    const secret = "Sentinel-Pa55-9f3b"
    srv = await startTestServer({ authorization: authz({ users: [user("carol", secret)] }) })
    const nc = await connect({ servers: srv.url, user: "carol", pass: secret })
    conns.push(nc)
    await expect(connect({ servers: srv.url, user: "carol", pass: `${secret}-wrong`, reconnect: false })).rejects.toThrow()
    const raw = await RawClient.connect(srv.port)
    await raw.waitFor("\r\n")
    raw.send(`CONNECT {"user":"x","pass":"${secret}","auth_token":"${secret}"}\r\n`)
    await raw.waitClosed()
    const log = srv.lines.join("")
    expect(log).toContain("<<- [CONNECT")
    expect(log).toContain("[REDACTED]")
    expect(log).not.toContain(secret)
  })
})
