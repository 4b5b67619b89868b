// Internal clients: how the server's own subsystems (stream API, MQTT bridge) take part
// in routing, seen from real NATS clients.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, headers, type NatsConnection, StringCodec } from "nats"
import { eventually, startTestServer, type TestServer } from "../helpers/server.js"

const sc = StringCodec()

describe("internal clients", () => {
  let srv: TestServer
  let nc: NatsConnection
  beforeAll(async () => {
    srv = await startTestServer()
    nc = await connect({ servers: srv.url })
  })
  afterAll(async () => {
    await nc.close()
    await srv.close()
  })

  it("answer requests, see headers, and stay out of the connection count", async () => {
    const s = srv.server
    const router = s.router
    const svc = router.internal("$G", "test-service")
    const seen: Array<{ subject: string; hdr: string; body: string }> = []
    router.subscribe(svc, "svc.>", undefined, (d) => {
      const hdr = d.hdrLen >= 0 ? d.buf.toString("latin1", d.start, d.start + d.hdrLen) : ""
      const body = d.buf.toString("utf8", d.start + Math.max(0, d.hdrLen), d.end)
      seen.push({ subject: d.subject, hdr, body })
      if (d.reply !== "") router.publish(svc, d.reply, "", Buffer.from("NATS/1.0\r\nX-From: internal\r\n\r\n"), Buffer.from(`re:${body}`))
    })
    const h = headers()
    h.set("X-Test", "1")
    const r = await nc.request("svc.echo", sc.encode("hi"), { timeout: 5000, headers: h })
    expect(sc.decode(r.data)).toBe("re:hi")
    expect(r.headers?.get("X-From")).toBe("internal")
    expect(seen[0].subject).toBe("svc.echo")
    expect(seen[0].hdr).toContain("X-Test: 1")
    expect(s.clients.size).toBe(1)

    const got: Array<string> = []
    nc.subscribe("events.x", { callback: (_e, m) => got.push(sc.decode(m.data)) })
    await nc.flush()
    router.publish(svc, "events.x", "", undefined, Buffer.from("from the server"))
    await eventually(() => got.length === 1, "the internal publish")
    expect(got).toEqual(["from the server"])
  })
})
