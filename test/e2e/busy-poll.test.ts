// Busy polling end to end: request-reply traffic from real clients (NATS and MQTT) turns
// the event loop's polling on, and `busy_poll: 0` leaves it off. The window is wide (100 ms)
// so that a slow test machine still answers within it; the policy itself is unit-tested.
import { afterEach, describe, expect, it } from "vitest"
import { connect, StringCodec } from "nats"
import { eventually, startTestServer, type TestServer } from "../helpers/server.js"
import { connectMqtt, startMqttServer, type MqttServer } from "../helpers/mqtt.js"

const sc = StringCodec()

describe("busy polling", () => {
  const servers: Array<TestServer | MqttServer> = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()))
  })

  const requestReply = async (srv: TestServer, rounds: number): Promise<void> => {
    const nc = await connect({ servers: srv.url })
    nc.subscribe("svc.echo", { callback: (_e, m) => m.respond(m.data) })
    await nc.flush()
    for (let i = 0; i < rounds; i++) expect(sc.decode((await nc.request("svc.echo", sc.encode(`r${i}`))).data)).toBe(`r${i}`)
    await nc.close()
  }

  it("NATS request-reply makes the loop keep polling", async () => {
    const srv = await startTestServer({ busyPollUs: 100_000 })
    servers.push(srv)
    let spun = false
    const watch = setInterval(() => {
      if (srv.busyPoll?.isSpinning === true) spun = true
    }, 1)
    try {
      await requestReply(srv, 200)
      await eventually(() => spun, "the loop to poll")
    } finally {
      clearInterval(watch)
    }
    // and it stops once the traffic does
    await eventually(() => srv.busyPoll?.isSpinning === false, "the loop to sleep again")
  })

  it("busy_poll: 0 turns it off", async () => {
    const srv = await startTestServer({ busyPollUs: 0 })
    servers.push(srv)
    expect(srv.busyPoll).toBeUndefined()
    await requestReply(srv, 20)
  })

  it("MQTT packets count as client I/O too", async () => {
    const srv = await startMqttServer({ busyPollUs: 100_000, jetstream: undefined })
    servers.push(srv)
    const busyPoll = srv.serving.busyPoll!
    const c = await connectMqtt(srv.mqttUrl, { clientId: "poller" })
    await c.client.subscribeAsync("echo/#", { qos: 1 })
    let spun = false
    for (let i = 0; i < 30; i++) {
      await c.client.publishAsync(`echo/${i}`, `m${i}`, { qos: 1 })
      if (busyPoll.isSpinning) spun = true
    }
    await c.client.endAsync()
    expect(spun).toBe(true)
  })
})
