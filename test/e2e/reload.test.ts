// A configuration reload applied to a running server (what SIGHUP does, driven here
// in-process so each case can look inside): clients held to the new users and
// permissions as nats-server does, NATS and MQTT alike, new limits in force, and a
// reload that changes what only a restart can change refused as a whole.
import { afterEach, describe, expect, it } from "vitest"
import mqtt from "mqtt"
import { connect, ErrorCode, type NatsConnection, type NatsError, StringCodec } from "nats"
import type { Permissions, ServerOptions } from "../../src/config/options.js"
import { applyReload } from "../../src/server/reload.js"
import { authorization, type MonitoredServer, request, startMonitoredServer, userEntry } from "../helpers/monitor.js"
import { connectMqtt, mqttOptions } from "../helpers/mqtt.js"
import { eventually } from "../helpers/server.js"

const sc = StringCodec()
const subscribeOnly = (...allow: Array<string>): Permissions => ({ publish: undefined, subscribe: { allow, deny: undefined }, allowResponses: undefined })

let srv: MonitoredServer | undefined
const natsConns: Array<NatsConnection> = []
const mqttClients: Array<mqtt.MqttClient> = []
afterEach(async () => {
  await Promise.all(natsConns.splice(0).map((c) => c.close().catch(() => {})))
  await Promise.all(mqttClients.splice(0).map((c) => c.endAsync(true).catch(() => {})))
  await srv?.close()
  srv = undefined
})

const reload = (s: MonitoredServer, next: Partial<ServerOptions>) =>
  applyReload(s.serving, { ...s.serving.server.options, ...next }, s.serving.server.log)

const natsAs = async (s: MonitoredServer, user: string, pass: string) => {
  const nc = await connect({ servers: s.url, user, pass, reconnect: false })
  natsConns.push(nc)
  return nc
}

describe("reloading authorization", () => {
  it("closes a client whose password changed or whose user is gone, and admits new users", async () => {
    srv = await startMonitoredServer({ authorization: authorization({ users: [userEntry("alice", "pa"), userEntry("bob", "pb")] }) })
    const alice = await natsAs(srv, "alice", "pa")
    const bob = await natsAs(srv, "bob", "pb")
    const outcome = reload(srv, { authorization: authorization({ users: [userEntry("alice", "changed"), userEntry("carol", "pc")] }) })
    expect(outcome).toMatchObject({ applied: true, changed: ["authorization"] })
    for (const nc of [alice, bob]) {
      const err = (await nc.closed()) as NatsError | undefined
      expect(err?.code).toBe(ErrorCode.AuthorizationViolation)
    }
    const carol = await natsAs(srv, "carol", "pc")
    expect(carol.isClosed()).toBe(false)
    await expect(connect({ servers: srv.url, user: "alice", pass: "pa", reconnect: false })).rejects.toMatchObject({
      code: ErrorCode.AuthorizationViolation
    })
    const log = srv.lines.join("")
    expect(log).toContain('User "alice" is no longer authorized after a configuration reload: closing')
    expect(log).toContain('User "bob" is no longer authorized after a configuration reload: closing')
    expect(log).not.toContain("changed")
    const closed = JSON.parse((await request(`${srv.base}/connz?state=closed&auth=true`)).body).connections
    const byUser = closed.filter((c: { authorized_user?: string }) => c.authorized_user !== undefined)
    expect(byUser.map((c: { authorized_user: string; reason: string }) => `${c.authorized_user}: ${c.reason}`)).toEqual([
      "alice: Authentication Failure",
      "bob: Authentication Failure"
    ])
  })

  it("takes away the subscriptions the new permissions forbid; the library reports the violation on that subscription", async () => {
    srv = await startMonitoredServer({
      authorization: authorization({ users: [{ ...userEntry("alice", "pa"), permissions: subscribeOnly(">") }, userEntry("pub", "pp")] })
    })
    const alice = await natsAs(srv, "alice", "pa")
    const orders = alice.subscribe("orders.>")
    const news = alice.subscribe("news.>")
    const ordersEnd = (async () => {
      for await (const _ of orders) {
        // none expected
      }
    })()
    await alice.flush()
    reload(srv, {
      authorization: authorization({ users: [{ ...userEntry("alice", "pa"), permissions: subscribeOnly("news.>") }, userEntry("pub", "pp")] })
    })
    const err = (await ordersEnd.then(() => undefined, (e: unknown) => e)) as NatsError
    expect(err.code).toBe(ErrorCode.PermissionsViolation)
    expect(err.message).toBe(`'Permissions Violation for Subscription to "orders.>" (sid "1")'`)
    // The connection stays, and so does the permitted subscription.
    const pub = await natsAs(srv, "pub", "pp")
    pub.publish("orders.1", sc.encode("o"))
    pub.publish("news.1", sc.encode("n"))
    const got = await news[Symbol.asyncIterator]().next()
    expect(sc.decode(got.value!.data)).toBe("n")
    expect(alice.isClosed()).toBe(false)
    const subs = JSON.parse((await request(`${srv.base}/connz?subs=true&auth=true&user=alice`)).body).connections[0].subscriptions_list
    expect(subs).toEqual(["news.>"])
    expect(srv.lines.join("")).toContain('Removed subscription "orders.>" (sid "1") of user "alice": not permitted after a configuration reload')
  })
})

describe("reloading MQTT", () => {
  it("an MQTT session loses the filters its new permissions forbid; a removed user's connection is closed without its will", async () => {
    const users = (devPerms: Permissions) => authorization({
      users: [{ ...userEntry("dev", "pd"), permissions: devPerms }, userEntry("old", "po"), userEntry("watch", "pw")]
    })
    srv = await startMonitoredServer({ mqtt: mqttOptions(), authorization: users(subscribeOnly(">")) })
    const url = `mqtt://127.0.0.1:${srv.serving.mqtt!.port}`
    const dev = await connectMqtt(url, { clientId: "dev-1", username: "dev", password: "pd", reconnectPeriod: 0 })
    mqttClients.push(dev.client)
    await dev.client.subscribeAsync(["sensors/#", "alerts/#"], { qos: 0 })
    const old = await mqtt.connectAsync(url, {
      clientId: "old-1", username: "old", password: "po", reconnectPeriod: 0, will: { topic: "wills/old", payload: Buffer.from("gone"), qos: 0, retain: false }
    })
    mqttClients.push(old)
    const oldClosed = new Promise<void>((res) => old.once("close", () => res()))
    const watch = await natsAs(srv, "watch", "pw")
    const wills = watch.subscribe("wills.>")
    await watch.flush()

    // sensors/# is the subjects sensors and sensors.>: both must be allowed, as at SUBSCRIBE time.
    reload(srv, { authorization: authorization({ users: [{ ...userEntry("dev", "pd"), permissions: subscribeOnly("sensors", "sensors.>") }, userEntry("watch", "pw")] }) })
    await oldClosed
    watch.publish("alerts.fire", sc.encode("a"))
    watch.publish("sensors.t", sc.encode("s"))
    await dev.waitFor((m) => m.topic === "sensors/t", 1, "the permitted message")
    await watch.flush()
    expect(dev.received.map((m) => m.topic)).toEqual(["sensors/t"])
    expect(wills.getProcessed()).toBe(0)
    const log = srv.lines.join("")
    expect(log).toContain('- "dev-1" - Removed subscription "alerts/#": not permitted after a configuration reload')
    expect(log).toContain('- "old-1" - User "old" is no longer authorized after a configuration reload: closing')
    await eventually(() => srv!.serving.server.closed.toArray().some((c) => c.mqttClient === "old-1"), "the closed record")
    expect(srv.serving.server.closed.toArray().find((c) => c.mqttClient === "old-1")?.reason).toBe("Authentication Failure")
  })

  it("new ack_wait and max_ack_pending show in /varz and apply to the sessions", async () => {
    srv = await startMonitoredServer({ mqtt: mqttOptions() })
    const url = `mqtt://127.0.0.1:${srv.serving.mqtt!.port}`
    const dev = await connectMqtt(url, { clientId: "dev-1", reconnectPeriod: 0 })
    mqttClients.push(dev.client)
    reload(srv, { mqtt: { ...srv.serving.server.options.mqtt!, ackWaitMs: 5_000, maxAckPending: 7 } })
    const varz = JSON.parse((await request(`${srv.base}/varz`)).body)
    expect(varz.mqtt).toMatchObject({ ack_wait: 5_000_000_000, max_ack_pending: 7 })
    const conn = [...srv.serving.mqtt!.connections.values()][0]
    expect(conn.session.config).toMatchObject({ ackWaitMs: 5_000, maxAckPending: 7 })
  })
})

describe("reloading limits", () => {
  it("new clients and /varz see the new max_payload; a lowered max_connections closes the newest clients", async () => {
    srv = await startMonitoredServer({})
    const first = await connect({ servers: srv.url, reconnect: false })
    const second = await connect({ servers: srv.url, reconnect: false })
    natsConns.push(first, second)
    await second.flush()
    reload(srv, { maxPayload: 2048, maxConnections: 1 })
    const err = (await second.closed()) as NatsError | undefined
    expect(err?.message).toBe("'Maximum Connections Exceeded'")
    expect(first.isClosed()).toBe(false)
    await first.close()
    await eventually(() => srv!.serving.server.clients.size === 0, "both clients to be gone")
    const third = await connect({ servers: srv.url, reconnect: false })
    natsConns.push(third)
    expect(third.info?.max_payload).toBe(2048)
    const varz = JSON.parse((await request(`${srv.base}/varz`)).body)
    expect(varz).toMatchObject({ max_payload: 2048, max_connections: 1 })
    expect(Date.parse(varz.config_load_time)).toBeGreaterThan(Date.parse(varz.start))
  })
})

describe("a reload that cannot be applied", () => {
  it("is refused as a whole, naming the key, and the running configuration stays", async () => {
    srv = await startMonitoredServer({ authorization: authorization({ users: [userEntry("alice", "pa")] }) })
    const alice = await natsAs(srv, "alice", "pa")
    const outcome = reload(srv, { port: 1, maxPayload: 2048, authorization: authorization({ users: [] }) })
    expect(outcome).toMatchObject({ applied: false, refused: ["port: cannot be changed while the server runs (restart it to apply this)"] })
    const log = srv.lines.join("")
    expect(log).toContain("[ERR] Reloading the configuration refused: port: cannot be changed while the server runs (restart it to apply this)")
    expect(log).toContain("[ERR] Configuration reload failed: the running configuration is unchanged")
    await alice.flush()
    expect(alice.isClosed()).toBe(false)
    expect(JSON.parse((await request(`${srv.base}/varz`)).body).max_payload).toBe(1024 * 1024)
  })
})
