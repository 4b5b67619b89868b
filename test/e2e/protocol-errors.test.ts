// Every -ERR the server sends, over a raw socket, and whether the connection survives it.
import { afterEach, describe, expect, it } from "vitest"
import { RawClient, startTestServer, type TestServer } from "../helpers/server.js"

describe("protocol errors", () => {
  let srv: TestServer | undefined
  const clients: Array<RawClient> = []
  const raw = async (connect?: Record<string, unknown>) => {
    const c = await RawClient.ready(srv!.port, connect)
    clients.push(c)
    return c
  }
  const start = async (over = {}) => {
    srv = await startTestServer(over)
    return srv
  }
  afterEach(async () => {
    clients.splice(0).forEach((c) => c.close())
    await srv?.close()
    srv = undefined
  })

  const stillAlive = async (c: RawClient) => {
    c.send("PING\r\n")
    await c.waitFor("PONG\r\n")
    expect(c.closed).toBe(false)
  }

  it("'Unknown Protocol Operation' closes the connection as a parse error", async () => {
    await start()
    const c = await raw()
    c.send("FOO BAR\r\n")
    await c.waitFor("-ERR 'Unknown Protocol Operation'\r\n")
    await c.waitClosed()
    expect(srv!.server.closed.toArray().at(-1)?.reason).toBe("Parse Error")
  })

  it("'Maximum Payload Violation' closes the connection", async () => {
    await start({ maxPayload: 1024 })
    const c = await raw()
    c.send("PUB foo 1025\r\n")
    await c.waitFor("-ERR 'Maximum Payload Violation'\r\n")
    await c.waitClosed()
    expect(srv!.server.closed.toArray().at(-1)?.reason).toBe("Maximum Message Payload Exceeded")
  })

  it("'Maximum Control Line Exceeded' closes the connection", async () => {
    await start({ maxControlLine: 256 })
    const c = await raw()
    c.send(`SUB ${"a".repeat(300)} 1\r\n`)
    await c.waitFor("-ERR 'Maximum Control Line Exceeded'\r\n")
    await c.waitClosed()
  })

  it("'Invalid Subject' on SUB keeps the connection", async () => {
    await start()
    const c = await raw()
    for (const bad of ["foo..bar", "foo.>.bar", ".foo", "foo.", ">.foo"]) {
      c.data = ""
      c.send(`SUB ${bad} 1\r\n`)
      await c.waitFor("-ERR 'Invalid Subject'\r\n")
    }
    await stillAlive(c)
  })

  it("'Invalid Publish Subject' for wildcards in pedantic mode keeps the connection", async () => {
    await start()
    const c = await raw({ pedantic: true })
    c.send("PUB foo.* 1\r\nx\r\n")
    await c.waitFor("-ERR 'Invalid Publish Subject'\r\n")
    await stillAlive(c)
  })

  it("outside pedantic mode wildcard tokens in a publish subject are routed literally, as nats-server does", async () => {
    await start()
    const sub = await raw()
    sub.send("SUB api.* 1\r\nSUB api.> 2\r\nSUB api.x 3\r\nPING\r\n")
    await sub.waitFor("PONG\r\n")
    sub.data = ""
    const c = await raw()
    // The JetStream API publishes like this: $JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>.
    c.send("PUB api.> 2\r\nhi\r\nPING\r\n")
    await c.waitFor("PONG\r\n")
    expect(c.data).not.toContain("-ERR")
    await sub.waitFor("MSG api.> 2 2\r\nhi\r\n")
    sub.send("PING\r\n")
    await sub.waitFor("PONG\r\n")
    // The token ">" is a literal here: the filters api.* and api.> match it, api.x does not.
    expect(sub.data).toContain("MSG api.> 1 2\r\nhi\r\n")
    expect(sub.data).not.toContain("MSG api.> 3")
  })

  it("a bad subject after a good one is still refused (the validity cache is per subject)", async () => {
    await start()
    const c = await raw({ pedantic: true })
    c.send("PUB ok 1\r\nx\r\nPUB ok.> 1\r\nx\r\nPUB ok 1\r\nx\r\nPUB ok..x 1\r\nx\r\nPING\r\n")
    const got = await c.waitFor("PONG\r\n")
    expect(got.match(/-ERR 'Invalid Publish Subject'/g)?.length).toBe(2)
    expect(srv!.server.inMsgs).toBe(4)
  })

  it("pedantic mode also checks the reply subject", async () => {
    await start()
    const c = await raw({ pedantic: true })
    c.send("PUB foo bad..reply 1\r\nx\r\n")
    await c.waitFor("-ERR 'Invalid Publish Subject'\r\n")
    await stillAlive(c)
  })

  it("'Maximum Connections Exceeded' refuses the connection over the limit", async () => {
    await start({ maxConnections: 2 })
    await raw()
    await raw()
    const third = await RawClient.connect(srv!.port)
    clients.push(third)
    await third.waitFor("-ERR 'Maximum Connections Exceeded'\r\n")
    await third.waitClosed()
  })

  it("'Maximum Subscriptions Exceeded' refuses the extra SUB but keeps the connection", async () => {
    await start({ maxSubscriptions: 2 })
    const c = await raw()
    c.send("SUB a 1\r\nSUB b 2\r\nSUB c 3\r\n")
    await c.waitFor("-ERR 'Maximum Subscriptions Exceeded'\r\n")
    await stillAlive(c)
    expect(srv!.server.numSubscriptions).toBe(2)
  })

  it("verbose mode acknowledges CONNECT, SUB, PUB and UNSUB with +OK", async () => {
    await start()
    const c = await RawClient.connect(srv!.port)
    clients.push(c)
    await c.waitFor("\r\n")
    c.data = ""
    c.send('CONNECT {"verbose":true}\r\nSUB foo 1\r\nPUB foo 2\r\nhi\r\nUNSUB 1\r\nPING\r\n')
    const got = await c.waitFor("PONG\r\n")
    expect(got).toBe("+OK\r\n+OK\r\nMSG foo 1 2\r\nhi\r\n+OK\r\n+OK\r\nPONG\r\n")
  })

  it("no_responders without headers is refused", async () => {
    await start()
    const c = await RawClient.connect(srv!.port)
    clients.push(c)
    await c.waitFor("\r\n")
    c.send('CONNECT {"no_responders":true}\r\n')
    await c.waitFor("-ERR 'No Responders Requires Headers Support'\r\n")
    await c.waitClosed()
  })

  it("a bad CONNECT payload is refused", async () => {
    await start()
    const c = await RawClient.connect(srv!.port)
    clients.push(c)
    await c.waitFor("\r\n")
    c.send("CONNECT {not json\r\n")
    await c.waitFor("-ERR 'Invalid CONNECT Payload'\r\n")
    await c.waitClosed()
  })

  it("sends HMSG to header-aware clients and strips headers for the others", async () => {
    await start()
    const withH = await raw({ headers: true })
    const without = await raw({})
    withH.send("SUB h 1\r\nPING\r\n")
    without.send("SUB h 9\r\nPING\r\n")
    await withH.waitFor("PONG\r\n")
    await without.waitFor("PONG\r\n")
    withH.data = ""
    without.data = ""
    const hdr = "NATS/1.0\r\nA: b\r\n\r\n"
    const pub = await raw({ headers: true })
    pub.send(`HPUB h ${hdr.length} ${hdr.length + 5}\r\n${hdr}hello\r\n`)
    await withH.waitFor(`HMSG h 1 ${hdr.length} ${hdr.length + 5}\r\n${hdr}hello\r\n`)
    await without.waitFor("MSG h 9 5\r\nhello\r\n")
  })

  it("reply subjects are passed through on MSG", async () => {
    await start()
    const sub = await raw()
    sub.send("SUB q 7\r\nPING\r\n")
    await sub.waitFor("PONG\r\n")
    sub.data = ""
    const pub = await raw()
    pub.send("PUB q my.inbox 3\r\nabc\r\n")
    await sub.waitFor("MSG q 7 my.inbox 3\r\nabc\r\n")
  })

  it("a client split at every byte still gets its messages", async () => {
    await start()
    const sub = await raw()
    sub.send("SUB split.test 1\r\nPING\r\n")
    await sub.waitFor("PONG\r\n")
    sub.data = ""
    const pub = await raw()
    const bytes = Buffer.from("PUB split.test 5\r\nhello\r\nPUB split.test reply.x 0\r\n\r\n")
    for (const b of bytes) pub.send(Buffer.from([b]))
    await sub.waitFor("MSG split.test 1 5\r\nhello\r\nMSG split.test 1 reply.x 0\r\n\r\n")
  })
})
