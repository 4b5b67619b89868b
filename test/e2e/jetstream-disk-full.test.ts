// Disk full, then space freed, with real clients: the server runs on the simulated disk
// (src/services/disk-sim.ts), which fills up and gets space back on the test's word.
// A publish refused with 503 "insufficient resources" (nats-server's answer) is never
// stored or readable; /healthz says why while it lasts; once space is back the stream
// takes publishes again by itself, and a restart finds exactly the acknowledged ones.
import { AckPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layerSim, SimDisk } from "../../src/services/disk-sim.js"
import { apiError, eventuallyAsync } from "../helpers/jetstream.js"
import { type MonitoredServer, request, startMonitoredServer } from "../helpers/monitor.js"

const STORE = "/js"

describe("JetStream on a disk that fills up and gets space back", () => {
  const disk = new SimDisk({ random: () => 0.5 })
  disk.provision(STORE)
  let srv: MonitoredServer
  let nc: NatsConnection
  let jsm: JetStreamManager
  let js: JetStreamClient
  const start = async () => {
    srv = await startMonitoredServer({ jetstream: { storeDir: STORE, maxMemory: -1, maxStorage: -1 } }, layerSim(disk))
    nc = await connect({ servers: srv.url, reconnect: false })
    jsm = await jetstreamManager(nc, { timeout: 10_000, checkAPI: false })
    js = jetstream(nc, { timeout: 10_000 })
  }
  const stop = async () => {
    await nc.close()
    await srv.close()
  }
  const healthz = async () => {
    const r = await request(`${srv.base}/healthz`)
    return { status: r.status, body: JSON.parse(r.body) as { status: string; error?: string } }
  }

  beforeAll(start)
  afterAll(stop)

  it("refuses publishes with 503 insufficient resources, stores none of them, reports it, and recovers by itself", async () => {
    await jsm.streams.add({ name: "FULL", subjects: ["full.>"] })
    for (let i = 1; i <= 3; i++) expect((await js.publish("full.ok", `kept ${i}`)).seq).toBe(i)
    disk.fill()
    const big = Buffer.alloc(64 * 1024, 0x62)
    const refused = []
    // The first is stored and taken back out when its write fails; the others are refused up front.
    for (let i = 0; i < 20; i++) refused.push(await apiError(js.publish("full.refused", big, { msgID: `refused-${i}` })))
    expect(refused.every((e) => e.code === 503 && e.err_code === 10023 && e.description === "insufficient resources")).toBe(true)
    // Never stored, never readable.
    const info = await jsm.streams.info("FULL")
    expect(info.state.messages).toBe(3)
    expect(info.state.bytes).toBeLessThan(1024)
    for (let seq = 4; seq <= info.state.last_seq; seq++) expect(await jsm.streams.getMessage("FULL", { seq })).toBeNull()
    // A durable consumer whose state cannot be written is not answered "created".
    expect(await apiError(jsm.consumers.add("FULL", { durable_name: "d", ack_policy: AckPolicy.Explicit }))).toMatchObject({
      err_code: 10104,
      description: "error creating store for consumer: insufficient storage"
    })
    expect(await apiError(jsm.consumers.info("FULL", "d"))).toMatchObject({ err_code: 10014 })
    const health = await healthz()
    expect(health.status).toBe(503)
    expect(health.body.error).toMatch(/no space left on the device/)
    expect(srv.lines.join("")).toMatch(/no space left on the device: publishes are refused/)
    // Space comes back: no restart, no operator step; the stream notices within its probe period.
    disk.free()
    await eventuallyAsync(async () => (await healthz()).status === 200, "/healthz to be ok once space is back")
    const after = await js.publish("full.ok", "after", { msgID: "refused-0" })
    // A refused message is no duplicate: its id is stored anew.
    expect(after.duplicate).toBe(false)
    expect(after.seq).toBeGreaterThan(info.state.last_seq)
    expect((await jsm.streams.info("FULL")).state.messages).toBe(4)
  })

  it("a restart finds the acknowledged messages and none of the refused ones", async () => {
    await stop()
    disk.powerLoss(true)
    await start()
    const info = await jsm.streams.info("FULL")
    expect(info.state.messages).toBe(4)
    const subjects = []
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage("FULL", { seq })
      if (m !== null) subjects.push(m.subject)
    }
    expect(subjects).toEqual(["full.ok", "full.ok", "full.ok", "full.ok"])
    expect((await healthz()).status).toBe(200)
  })
})
