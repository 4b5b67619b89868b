// Authentication beyond plain passwords: bcrypt hashes in every user source, and nkey
// users signing the nonce the server puts in INFO.
import bcrypt from "bcryptjs"
import { createUser } from "@nats-io/nkeys"
import { afterEach, describe, expect, it } from "vitest"
import { connect, type NatsConnection, nkeyAuthenticator } from "nats"
import type { Permissions, UserEntry } from "../../src/config/options.js"
import { eventually, RawClient, startTestServer, type TestServer } from "../helpers/server.js"

const authz = (over: Record<string, unknown>) => ({
  user: undefined, password: undefined, token: undefined, users: [], timeoutMs: undefined, defaultPermissions: undefined, ...over
})
const user = (name: string, password: string, account?: string): UserEntry =>
  ({ user: name, password, nkey: undefined, permissions: undefined, account })
const nkeyUser = (nkey: string, account?: string, permissions?: Permissions): UserEntry =>
  ({ user: undefined, password: undefined, nkey, permissions, account })
// Cost 4 keeps the tests quick; the server accepts any cost.
const hash = (pw: string) => bcrypt.hashSync(pw, 4)

describe("bcrypt passwords", () => {
  let srv: TestServer | undefined
  const conns: Array<NatsConnection> = []
  afterEach(async () => {
    await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
    await srv?.close()
    srv = undefined
  })

  it("single user: the password matching the hash is accepted, others refused", async () => {
    const h = hash("s3cret")
    srv = await startTestServer({ authorization: authz({ user: "admin", password: h }) })
    conns.push(await connect({ servers: srv.url, user: "admin", pass: "s3cret", reconnect: false }))
    await expect(connect({ servers: srv.url, user: "admin", pass: "wrong", reconnect: false })).rejects.toThrow(/Authorization Violation/i)
    // The hash itself is not a password.
    await expect(connect({ servers: srv.url, user: "admin", pass: h, reconnect: false })).rejects.toThrow(/Authorization Violation/i)
  })

  it("user lists and account users, $2a$ and $2b$ alike, next to plain passwords", async () => {
    const b = hash("bob-pw")
    srv = await startTestServer({
      authorization: authz({ users: [user("alice", hash("alice-pw").replace(/^\$2b\$/, "$2a$")), user("plain", "plain-pw")] }),
      accounts: [{ name: "B", users: [user("bob", b)], exports: [], imports: [], jetstream: false }]
    })
    conns.push(await connect({ servers: srv.url, user: "alice", pass: "alice-pw", reconnect: false }))
    conns.push(await connect({ servers: srv.url, user: "bob", pass: "bob-pw", reconnect: false }))
    conns.push(await connect({ servers: srv.url, user: "plain", pass: "plain-pw", reconnect: false }))
    await expect(connect({ servers: srv.url, user: "bob", pass: "alice-pw", reconnect: false })).rejects.toThrow(/Authorization Violation/i)
    await expect(connect({ servers: srv.url, user: "nobody", pass: "bob-pw", reconnect: false })).rejects.toThrow(/Authorization Violation/i)
    await eventually(() => [...srv!.server.clients.values()].some((c) => c.user === "bob" && c.account.name === "B"), "bob in B")
  })
})

describe("nkey users", () => {
  let srv: TestServer | undefined
  const conns: Array<NatsConnection> = []
  afterEach(async () => {
    await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
    await srv?.close()
    srv = undefined
  })

  it("INFO carries a fresh nonce per connection; a real client signs it and is let in", async () => {
    const kp = createUser()
    srv = await startTestServer({ authorization: authz({ users: [nkeyUser(kp.getPublicKey())] }) })
    const r1 = await RawClient.connect(srv.port)
    const r2 = await RawClient.connect(srv.port)
    const nonceOf = async (r: RawClient) => JSON.parse((await r.waitFor("\r\n")).slice(5).split("\r\n")[0]).nonce as string
    const [n1, n2] = [await nonceOf(r1), await nonceOf(r2)]
    expect(n1).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(n1).not.toBe(n2)
    r1.close()
    r2.close()
    const nc = await connect({ servers: srv.url, authenticator: nkeyAuthenticator(kp.getSeed()), reconnect: false })
    conns.push(nc)
    await eventually(() => [...srv!.server.clients.values()].some((c) => c.user === kp.getPublicKey()), "the nkey user connected")
  })

  it("refuses an unknown nkey, a signature by another key, a signature of another nonce, and none", async () => {
    const kp = createUser()
    const other = createUser()
    srv = await startTestServer({ accounts: [{ name: "N", users: [nkeyUser(kp.getPublicKey())], exports: [], imports: [], jetstream: false }] })
    await expect(connect({ servers: srv.url, authenticator: nkeyAuthenticator(other.getSeed()), reconnect: false }))
      .rejects.toThrow(/Authorization Violation/i)
    const attempt = async (make: (nonce: string) => Record<string, unknown>) => {
      const r = await RawClient.connect(srv!.port)
      const info = JSON.parse((await r.waitFor("\r\n")).slice(5).split("\r\n")[0])
      r.send(`CONNECT ${JSON.stringify({ verbose: false, ...make(info.nonce) })}\r\nPING\r\n`)
      await r.waitFor("-ERR 'Authorization Violation'")
      await r.waitClosed()
    }
    const sig = (k: typeof kp, s: string) => Buffer.from(k.sign(Buffer.from(s))).toString("base64url")
    await attempt((n) => ({ nkey: kp.getPublicKey(), sig: sig(other, n) }))
    await attempt(() => ({ nkey: kp.getPublicKey(), sig: sig(kp, "not-the-nonce") }))
    await attempt(() => ({ nkey: kp.getPublicKey() }))
    await attempt((n) => ({ nkey: kp.getPublicKey(), sig: "%%%" + sig(kp, n) }))
    // The right signature (url-safe base64 without padding, as nats-server's own clients send it) works.
    const ok = await RawClient.connect(srv.port)
    const info = JSON.parse((await ok.waitFor("\r\n")).slice(5).split("\r\n")[0])
    ok.send(`CONNECT ${JSON.stringify({ verbose: false, nkey: kp.getPublicKey(), sig: sig(kp, info.nonce) })}\r\nPING\r\n`)
    await ok.waitFor("PONG\r\n")
    await eventually(() => [...srv!.server.clients.values()].some((c) => c.account.name === "N"), "bound to N")
    ok.close()
  })

  it("no nonce is offered when there are no nkey users, and nkey users sit next to password users", async () => {
    const kp = createUser()
    srv = await startTestServer({ authorization: authz({ users: [user("pw", "p")] }) })
    const r = await RawClient.connect(srv.port)
    expect(await r.waitFor("\r\n")).not.toContain("nonce")
    r.close()
    await srv.close()
    srv = await startTestServer({ authorization: authz({ users: [user("pw", "p"), nkeyUser(kp.getPublicKey())] }) })
    conns.push(await connect({ servers: srv.url, user: "pw", pass: "p", reconnect: false }))
    conns.push(await connect({ servers: srv.url, authenticator: nkeyAuthenticator(kp.getSeed()), reconnect: false }))
  })
})
