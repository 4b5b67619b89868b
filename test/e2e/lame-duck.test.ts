// Lame duck mode on a running server, in-process (the real-process test with SIGUSR2 is
// in signals.test.ts): NATS and MQTT clients alike are closed, MQTT ones without their
// wills, NATS ones after the ldm INFO their library reports; nothing new gets in.
import { afterEach, describe, expect, it } from "vitest"
import mqtt from "mqtt"
import { connect, Events, type NatsConnection } from "nats"
import { Effect } from "effect"
import { lameDuckTarget } from "../../src/server/signals.js"
import { runLameDuck } from "../../src/server/lame-duck.js"
import { type MonitoredServer, request, startMonitoredServer } from "../helpers/monitor.js"
import { mqttOptions } from "../helpers/mqtt.js"

let srv: MonitoredServer | undefined
const conns: Array<NatsConnection> = []
afterEach(async () => {
  await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
  await srv?.close()
  srv = undefined
})

describe("lame duck mode", () => {
  it("closes NATS and MQTT clients (no wills), after telling the NATS ones, and accepts no one new", async () => {
    srv = await startMonitoredServer({ mqtt: mqttOptions() })
    const mqttUrl = `mqtt://127.0.0.1:${srv.serving.mqtt!.port}`
    const nc = await connect({ servers: srv.url, reconnect: false })
    conns.push(nc)
    // Watched from inside: an internal subscriber is not a client lame duck mode closes.
    let wills = 0
    const s = srv.serving.server
    s.router.subscribe(s.router.internal("$G", "will watcher"), "wills.>", undefined, () => void wills++)
    const device = await mqtt.connectAsync(mqttUrl, {
      clientId: "dev-1", reconnectPeriod: 0, will: { topic: "wills/dev-1", payload: Buffer.from("gone"), qos: 0, retain: false }
    })
    const deviceClosed = new Promise<void>((res) => device.once("close", () => res()))
    const heard = (async () => {
      for await (const s of nc.status()) if (s.type === Events.LDM) return true
      return false
    })()
    const done = Effect.runPromise(runLameDuck(lameDuckTarget(srv.serving), { durationMs: 30_000, graceMs: 0 }, srv.serving.server.log))
    expect(await heard).toBe(true)
    await expect(connect({ servers: srv.url, reconnect: false })).rejects.toThrow()
    await expect(mqtt.connectAsync(mqttUrl, { clientId: "late", reconnectPeriod: 0, connectTimeout: 2_000 })).rejects.toThrow()
    expect((await request(`${srv.base}/healthz`)).status).toBe(503)
    await done
    await deviceClosed
    await nc.closed()
    expect(wills).toBe(0)
    expect(srv.serving.server.clients.size).toBe(0)
    expect(srv.serving.mqtt!.connections.size).toBe(0)
    const closed = srv.serving.server.closed.toArray()
    expect(closed.filter((c) => c.reason === "Server Shutdown").map((c) => c.type).sort()).toEqual(["mqtt", "nats"])
  })
})
