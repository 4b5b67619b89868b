// Core NATS behaviour end to end with the real `nats` npm client.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, Empty, ErrorCode, headers, type NatsConnection, type NatsError, StringCodec } from "nats"
import { NATS_COMPAT_VERSION, VERSION } from "../../src/version.js"
import { eventually, startTestServer, type TestServer } from "../helpers/server.js"

const sc = StringCodec()

describe("pub/sub with the nats client", () => {
  let srv: TestServer
  const conns: Array<NatsConnection> = []
  const open = async (opts: Record<string, unknown> = {}) => {
    const nc = await connect({ servers: srv.url, ...opts })
    conns.push(nc)
    return nc
  }

  beforeAll(async () => {
    srv = await startTestServer()
  })
  afterAll(async () => {
    await Promise.all(conns.map((c) => c.close().catch(() => {})))
    await srv.close()
  })

  it("INFO carries the server identity and limits", async () => {
    const nc = await open()
    const info = nc.info!
    expect(info.server_id).toMatch(/^N[A-Z2-7]{55}$/)
    expect(info.proto).toBe(1)
    // Clients enable features by the nats-server version in INFO; ours travels beside it.
    expect(info.version).toBe(NATS_COMPAT_VERSION)
    expect((info as unknown as { switchyard: string }).switchyard).toBe(VERSION)
    expect(info.headers).toBe(true)
    expect(info.max_payload).toBe(1024 * 1024)
    expect(info.port).toBe(srv.port)
    expect(typeof info.client_id).toBe("number")
    expect(info.client_ip).toBe("127.0.0.1")
    expect(info.auth_required).toBeUndefined()
  })

  it("delivers a published message to a subscriber", async () => {
    const nc = await open()
    const sub = nc.subscribe("greet.joe", { max: 1 })
    await nc.flush()
    nc.publish("greet.joe", sc.encode("hello"))
    for await (const m of sub) {
      expect(m.subject).toBe("greet.joe")
      expect(sc.decode(m.data)).toBe("hello")
    }
  })

  it("matches * and > wildcards and not beyond them", async () => {
    const nc = await open()
    const star: Array<string> = []
    const full: Array<string> = []
    nc.subscribe("w.*.x", { callback: (_e, m) => star.push(m.subject) })
    nc.subscribe("w.>", { callback: (_e, m) => full.push(m.subject) })
    await nc.flush()
    for (const s of ["w.a.x", "w.b.x", "w.a.y", "w.a.x.z", "w"]) nc.publish(s)
    nc.publish("done.w")
    await nc.flush()
    await eventually(() => full.length === 4, "4 messages on w.>")
    expect(star.sort()).toEqual(["w.a.x", "w.b.x"])
    expect(full.sort()).toEqual(["w.a.x", "w.a.x.z", "w.a.y", "w.b.x"])
  })

  it("gives each message to exactly one member of a queue group", async () => {
    const pub = await open()
    const members = await Promise.all([open(), open(), open()])
    const got = [0, 0, 0]
    let plain = 0
    members.forEach((nc, i) => nc.subscribe("work", { queue: "workers", callback: () => got[i]++ }))
    members[0].subscribe("work", { callback: () => plain++ })
    await Promise.all(members.map((m) => m.flush()))
    const n = 300
    for (let i = 0; i < n; i++) pub.publish("work", sc.encode(String(i)))
    await pub.flush()
    await eventually(() => got[0] + got[1] + got[2] === n && plain === n, "all queue deliveries")
    expect(got.every((g) => g > 0)).toBe(true)
  })

  it("answers requests (request-reply)", async () => {
    const nc = await open()
    nc.subscribe("svc.echo", { callback: (_e, m) => m.respond(sc.encode(`echo:${sc.decode(m.data)}`)) })
    await nc.flush()
    const client = await open()
    const r = await client.request("svc.echo", sc.encode("ping"), { timeout: 5000 })
    expect(sc.decode(r.data)).toBe("echo:ping")
  })

  it("carries headers (HPUB -> HMSG)", async () => {
    const nc = await open()
    const sub = nc.subscribe("hdr.test", { max: 1 })
    await nc.flush()
    const h = headers()
    h.set("X-Trace", "abc123")
    h.append("X-Multi", "1")
    h.append("X-Multi", "2")
    nc.publish("hdr.test", sc.encode("body"), { headers: h })
    for await (const m of sub) {
      expect(m.headers?.get("X-Trace")).toBe("abc123")
      expect(m.headers?.values("X-Multi")).toEqual(["1", "2"])
      expect(sc.decode(m.data)).toBe("body")
    }
  })

  it("reports no responders (503) for a request nobody listens to", async () => {
    const nc = await open()
    const err = await nc.request("nobody.home", Empty, { timeout: 5000 }).then(
      () => undefined,
      (e: NatsError) => e
    )
    expect(err?.code).toBe(ErrorCode.NoResponders)
  })

  it("does not echo a client's own messages when echo is off", async () => {
    const quiet = await open({ noEcho: true })
    const other = await open()
    const own: Array<string> = []
    const seen: Array<string> = []
    quiet.subscribe("echo.test", { callback: (_e, m) => own.push(sc.decode(m.data)) })
    other.subscribe("echo.test", { callback: (_e, m) => seen.push(sc.decode(m.data)) })
    await quiet.flush()
    await other.flush()
    quiet.publish("echo.test", sc.encode("from-quiet"))
    other.publish("echo.test", sc.encode("from-other"))
    await quiet.flush()
    await other.flush()
    await eventually(() => seen.length === 2 && own.length === 1, "deliveries")
    expect(own).toEqual(["from-other"])
    expect(seen.sort()).toEqual(["from-other", "from-quiet"])
  })

  it("auto-unsubscribes after max messages", async () => {
    const nc = await open()
    const got: Array<string> = []
    const sub = nc.subscribe("auto.unsub", { callback: (_e, m) => got.push(sc.decode(m.data)) })
    sub.unsubscribe(3)
    await nc.flush()
    for (let i = 0; i < 10; i++) nc.publish("auto.unsub", sc.encode(String(i)))
    await nc.flush()
    await eventually(() => got.length === 3, "3 messages")
    // The server removed the subscription: a probe published after it reaches nobody there.
    const probe = await open()
    probe.publish("auto.unsub", sc.encode("late"))
    await probe.flush()
    await nc.flush()
    expect(got).toEqual(["0", "1", "2"])
    await eventually(() => srv.server.account("$G").sublist.match("auto.unsub").psubs.length === 0, "sub removed")
  })

  it("keeps delivering across large payloads and many messages in order", async () => {
    const nc = await open()
    const got: Array<number> = []
    nc.subscribe("order.big", { callback: (_e, m) => got.push(m.data.length) })
    await nc.flush()
    const sizes = [0, 1, 100, 4096, 65536, 500_000, 1024 * 1024]
    for (const s of sizes) nc.publish("order.big", new Uint8Array(s).fill(7))
    await nc.flush()
    await eventually(() => got.length === sizes.length, "all sizes")
    expect(got).toEqual(sizes)
  })

  it("gives a busy subscriber's output slabs back to the pool once the socket wrote them", async () => {
    const sub = await open()
    const pub = await open()
    let got = 0
    sub.subscribe("slabs.>", { callback: () => got++ })
    await sub.flush()
    const before = srv.server.slabs.freeCount
    const payload = new Uint8Array(2048)
    // published in one burst: the subscriber's flushes are large enough for pooled slabs
    for (let i = 0; i < 2000; i++) pub.publish(`slabs.${i % 10}`, payload)
    await pub.flush()
    await eventually(() => got === 2000, "2000 messages")
    await eventually(() => srv.server.slabs.freeCount > before, "slabs back in the pool")
  })

  it("rejects a payload over max_payload", async () => {
    const nc = await open()
    // The client enforces max_payload itself; the server-side check is covered by the raw-socket tests.
    expect(() => nc.publish("too.big", new Uint8Array(1024 * 1024 + 1))).toThrow()
  })
})
