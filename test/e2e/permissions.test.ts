// Per-user publish/subscribe permissions with allow/deny and wildcards, default
// permissions, and allow_responses; the -ERR texts are nats-server's, and a violation
// leaves the connection open.
import { afterEach, describe, expect, it } from "vitest"
import { connect, type NatsConnection, StringCodec } from "nats"
import type { Permissions, UserEntry } from "../../src/config/options.js"
import { eventually, RawClient, startTestServer, type TestServer } from "../helpers/server.js"

const sc = StringCodec()
const authz = (over: Record<string, unknown>) => ({
  user: undefined, password: undefined, token: undefined, users: [], timeoutMs: undefined, defaultPermissions: undefined, ...over
})
const perms = (over: Partial<Permissions>): Permissions => ({ publish: undefined, subscribe: undefined, allowResponses: undefined, ...over })
const user = (name: string, permissions?: Permissions, account?: string): UserEntry =>
  ({ user: name, password: "p", nkey: undefined, permissions, account })

const login = (srv: TestServer, name: string) => RawClient.ready(srv.port, { verbose: false, user: name, pass: "p" })

/** Round-trip a PING so everything sent before it has been processed, and the connection is still up. */
const sync = async (r: RawClient) => {
  const before = r.data.split("PONG\r\n").length
  r.send("PING\r\n")
  await eventually(() => r.data.split("PONG\r\n").length > before, "PONG")
}

describe("permissions", () => {
  let srv: TestServer | undefined
  const conns: Array<NatsConnection> = []
  afterEach(async () => {
    await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
    await srv?.close()
    srv = undefined
  })

  it("publish allow/deny with wildcards: a denied PUB gets the violation and the connection stays", async () => {
    srv = await startTestServer({
      authorization: authz({
        users: [user("pub", perms({ publish: { allow: ["foo.>", "bar"], deny: ["foo.secret.*"] } })), user("watch")]
      })
    })
    const watch = await login(srv, "watch")
    watch.send("SUB > 1\r\n")
    await sync(watch)
    const pub = await login(srv, "pub")
    pub.send("PUB foo.a 1\r\na\r\nPUB bar 1\r\nb\r\nPUB baz 1\r\nc\r\nPUB foo.secret.x 1\r\nd\r\nPUB foo.secret 1\r\ne\r\n")
    await pub.waitFor(`-ERR 'Permissions Violation for Publish to "baz"'\r\n`)
    await pub.waitFor(`-ERR 'Permissions Violation for Publish to "foo.secret.x"'\r\n`)
    await sync(pub)
    expect(pub.closed).toBe(false)
    await watch.waitFor("MSG foo.secret 1 1\r\ne\r\n")
    expect(watch.data).toContain("MSG foo.a 1 1\r\na\r\n")
    expect(watch.data).toContain("MSG bar 1 1\r\nb\r\n")
    expect(watch.data).not.toContain("baz")
    expect(watch.data).not.toContain("foo.secret.x")
    expect(pub.data.match(/Permissions Violation/g)).toHaveLength(2)
    // Cached decisions give the same answers the second time.
    pub.send("PUB baz 1\r\nc\r\nPUB foo.a 1\r\nf\r\n")
    await watch.waitFor("MSG foo.a 1 1\r\nf\r\n")
    expect(pub.data.match(/Permissions Violation/g)).toHaveLength(3)
  })

  it("subscribe allow/deny: refused filters get the violation; an overlapping wildcard never sees denied subjects", async () => {
    srv = await startTestServer({
      authorization: authz({
        users: [user("sub", perms({ subscribe: { allow: ["in.>"], deny: ["in.private"] } })), user("pub")]
      })
    })
    const sub = await login(srv, "sub")
    sub.send("SUB out 1\r\nSUB in.private 2\r\nSUB in.private q 3\r\nSUB in.* 4\r\nSUB > 5\r\n")
    await sub.waitFor(`-ERR 'Permissions Violation for Subscription to "out"'\r\n`)
    await sub.waitFor(`-ERR 'Permissions Violation for Subscription to "in.private"'\r\n`)
    await sub.waitFor(`-ERR 'Permissions Violation for Subscription to "in.private" using queue "q"'\r\n`)
    await sub.waitFor(`-ERR 'Permissions Violation for Subscription to ">"'\r\n`)
    await sync(sub)
    const pub = await login(srv, "pub")
    pub.send("PUB in.private 1\r\nx\r\nPUB out 1\r\ny\r\nPUB in.public 1\r\nz\r\n")
    await sync(pub)
    await sub.waitFor("MSG in.public 4 1\r\nz\r\n")
    expect(sub.data).not.toContain("MSG in.private")
    expect(sub.data).not.toContain("MSG out")
    expect(sub.closed).toBe(false)
  })

  it("queue permissions: only the allowed group may take the work", async () => {
    srv = await startTestServer({
      authorization: authz({ users: [user("worker", perms({ subscribe: { allow: ["jobs.> workers"], deny: undefined } }))] })
    })
    const w = await login(srv, "worker")
    w.send("SUB jobs.a workers 1\r\nSUB jobs.a idlers 2\r\nSUB jobs.a 3\r\n")
    await w.waitFor(`-ERR 'Permissions Violation for Subscription to "jobs.a" using queue "idlers"'\r\n`)
    await w.waitFor(`-ERR 'Permissions Violation for Subscription to "jobs.a"'\r\n`)
    await sync(w)
    expect(w.data.match(/Violation/g)).toHaveLength(2)
    expect(srv.server.numSubscriptions).toBe(1)
  })

  it("default permissions apply to users without their own; a user's own replace them", async () => {
    srv = await startTestServer({
      authorization: authz({
        defaultPermissions: perms({ publish: { allow: ["public.>"], deny: undefined } }),
        users: [user("plain"), user("special", perms({ publish: { allow: ["special"], deny: undefined } }))]
      })
    })
    const plain = await login(srv, "plain")
    plain.send("PUB public.x 0\r\n\r\nPUB special 0\r\n\r\n")
    await plain.waitFor(`Permissions Violation for Publish to "special"`)
    const special = await login(srv, "special")
    special.send("PUB public.x 0\r\n\r\nPUB special 0\r\n\r\n")
    await special.waitFor(`Permissions Violation for Publish to "public.x"`)
    await sync(plain)
    await sync(special)
    expect(plain.data.match(/Violation/g)).toHaveLength(1)
    expect(special.data.match(/Violation/g)).toHaveLength(1)
  })

  it("allow_responses: a responder may answer each request once, and publish nowhere else", async () => {
    srv = await startTestServer({
      authorization: authz({
        users: [user("svc", perms({ allowResponses: { maxMsgs: 1, expiresMs: 60_000 } })), user("client")]
      })
    })
    const svc = await login(srv, "svc")
    svc.send("SUB svc.echo 1\r\n")
    await sync(svc)
    const client = await login(srv, "client")
    client.send("SUB _INBOX.a 9\r\nPUB svc.echo _INBOX.a 2\r\nhi\r\n")
    await svc.waitFor("MSG svc.echo 1 _INBOX.a 2\r\nhi\r\n")
    svc.send("PUB _INBOX.a 3\r\nyes\r\nPUB _INBOX.a 5\r\nagain\r\nPUB svc.other 0\r\n\r\nPUB _INBOX.b 0\r\n\r\n")
    await client.waitFor("MSG _INBOX.a 9 3\r\nyes\r\n")
    await svc.waitFor(`-ERR 'Permissions Violation for Publish to "_INBOX.a"'\r\n`)
    await svc.waitFor(`-ERR 'Permissions Violation for Publish to "svc.other"'\r\n`)
    await svc.waitFor(`-ERR 'Permissions Violation for Publish to "_INBOX.b"'\r\n`)
    await sync(client)
    expect(client.data).not.toContain("again")
  })

  it("a real client: request/reply through allow_responses, and a denied subscription reported to its callback", async () => {
    srv = await startTestServer({
      authorization: authz({
        users: [
          user("svc", perms({ subscribe: { allow: ["svc.>"], deny: undefined }, allowResponses: { maxMsgs: 1, expiresMs: 60_000 } })),
          user("client", perms({ publish: { allow: ["svc.>"], deny: undefined }, subscribe: { allow: ["_INBOX.>"], deny: undefined } }))
        ]
      })
    })
    const svc = await connect({ servers: srv.url, user: "svc", pass: "p", reconnect: false })
    const client = await connect({ servers: srv.url, user: "client", pass: "p", reconnect: false })
    conns.push(svc, client)
    svc.subscribe("svc.upper", { callback: (_e, m) => m.respond(sc.encode(sc.decode(m.data).toUpperCase())) })
    await svc.flush()
    const reply = await client.request("svc.upper", sc.encode("abc"), { timeout: 5_000 })
    expect(sc.decode(reply.data)).toBe("ABC")
    let denied: Error | undefined
    client.subscribe("elsewhere", { callback: (e) => { if (e) denied = e } })
    await eventually(() => denied !== undefined, "the subscription error")
    expect(denied!.message).toMatch(/Permissions Violation for Subscription to "elsewhere"/)
    // The connection survived.
    const again = await client.request("svc.upper", sc.encode("x"), { timeout: 5_000 })
    expect(sc.decode(again.data)).toBe("X")
  })

  it("account users carry their permissions into their account", async () => {
    srv = await startTestServer({
      accounts: [{ name: "A", users: [user("a", perms({ publish: { allow: undefined, deny: [">"] } }))], exports: [], imports: [], jetstream: false }]
    })
    const a = await login(srv, "a")
    a.send("PUB anything 0\r\n\r\n")
    await a.waitFor(`-ERR 'Permissions Violation for Publish to "anything"'\r\n`)
    await sync(a)
  })
})
