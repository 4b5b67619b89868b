// A subscriber that stops reading is cut off as a slow consumer; everyone else keeps receiving.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, type NatsConnection } from "nats"
import { eventually, RawClient, startTestServer, type TestServer } from "../helpers/server.js"

describe("slow consumers", () => {
  let srv: TestServer
  beforeAll(async () => {
    srv = await startTestServer({ maxPending: 256 * 1024 })
  })
  afterAll(async () => {
    await srv.close()
  })

  it("closes a subscriber over max_pending while a healthy one gets every message", async () => {
    const stuck = await RawClient.ready(srv.port)
    stuck.send("SUB firehose 1\r\nPING\r\n")
    await stuck.waitFor("PONG\r\n")
    stuck.pause()

    const healthy: NatsConnection = await connect({ servers: srv.url })
    let got = 0
    healthy.subscribe("firehose", { callback: () => got++ })
    await healthy.flush()

    const pub = await connect({ servers: srv.url })
    const payload = new Uint8Array(8 * 1024).fill(1)
    const n = 3000 // 24 MB: far more than any socket buffer can hide
    // Paced by the healthy subscriber (never more than 200 KB ahead of it), so that on a
    // loaded machine it stays under max_pending itself; the stuck one reads nothing at all.
    const batch = 25
    for (let i = 0; i < n; i += batch) {
      for (let k = 0; k < batch; k++) pub.publish("firehose", payload)
      await pub.flush()
      await eventually(() => got >= i, `healthy subscriber to keep up (got ${got} of ${i})`, 60_000)
    }
    await eventually(() => got === n, `healthy subscriber to get ${n} messages (got ${got})`, 60_000)
    await eventually(() => srv.server.slowConsumers === 1, "the slow consumer to be detected")
    const rec = srv.server.closed.toArray().find((c) => c.reason.startsWith("Slow Consumer"))
    expect(rec?.reason).toBe("Slow Consumer (Pending Bytes)")
    expect(srv.lines.some((l) => l.includes("Slow Consumer Detected"))).toBe(true)
    stuck.close()
    await pub.close()
    await healthy.close()
  })
})
