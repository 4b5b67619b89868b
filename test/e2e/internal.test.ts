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
    const svc = s.internalClient("$G", "test-service")
    const seen: Array<{ subject: string; hdr: string; body: string }> = []
    s.internalSubscribe(svc, "svc.>", undefined, (subject, reply, hdrLen, buf, start, end) => {
      const hdr = hdrLen >= 0 ? buf.toString("latin1", start, start + hdrLen) : ""
      const body = buf.toString("utf8", start + Math.max(0, hdrLen), end)
      seen.push({ subject, hdr, body })
      if (reply !== "") s.internalPublish(svc, reply, "", Buffer.from("NATS/1.0\r\nX-From: internal\r\n\r\n"), Buffer.from(`re:${body}`))
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
    s.internalPublish(svc, "events.x", "", undefined, Buffer.from("from the server"))
    await eventually(() => got.length === 1, "the internal publish")
    expect(got).toEqual(["from the server"])
  })
})
