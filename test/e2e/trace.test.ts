// The protocol trace (-V) both ways, in nats-server's shape: NATS ops the server sends
// (`->> [MSG …]`, PING/PONG, +OK, -ERR, INFO) and every MQTT packet in and out, with
// types, ids, topics, QoS and flags but never a payload or a password. And the MQTT
// events logged as their NATS counterparts are: refused credentials, refused
// publishes and subscriptions, a client id taken over.
import { afterEach, describe, expect, it } from "vitest"
import mqtt from "mqtt"
import { connect, type NatsConnection, StringCodec } from "nats"
import type { Permissions } from "../../src/config/options.js"
import { authorization, type MonitoredServer, startMonitoredServer, userEntry } from "../helpers/monitor.js"
import { connectMqtt, mqttOptions } from "../helpers/mqtt.js"
import { eventually, RawClient } from "../helpers/server.js"

const sc = StringCodec()
const PAYLOAD = "body-never-in-the-log-5e1f"
const PASSWORD = "pw-never-in-the-log-9c2a"

let srv: MonitoredServer | undefined
const conns: Array<NatsConnection> = []
const clients: Array<mqtt.MqttClient> = []
afterEach(async () => {
  await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
  await Promise.all(clients.splice(0).map((c) => c.endAsync(true).catch(() => {})))
  await srv?.close()
  srv = undefined
})

const log = () => srv!.lines.join("")
const traced = (pattern: RegExp) => eventually(() => pattern.test(log()), `a trace line matching ${pattern}`)

describe("NATS outbound trace", () => {
  it("traces what the server sends: INFO, PONG, +OK, MSG and HMSG by their protocol line, -ERR", async () => {
    srv = await startMonitoredServer({})
    const raw = await RawClient.connect(srv.natsPort)
    raw.send('CONNECT {"verbose":true,"headers":true,"protocol":1}\r\nSUB a.b 7\r\nPING\r\n')
    await raw.waitFor("PONG\r\n")
    raw.send(`PUB a.b reply.x ${PAYLOAD.length}\r\n${PAYLOAD}\r\nHPUB a.b 12 ${12 + PAYLOAD.length}\r\nNATS/1.0\r\n\r\n${PAYLOAD}\r\nSUB bad..subject 9\r\n`)
    await raw.waitFor("-ERR 'Invalid Subject'")
    const prefix = "127\\.0\\.0\\.1:\\d+ - cid:\\d+ - "
    await traced(new RegExp(`${prefix}->> \\[INFO \\{"server_id"`))
    await traced(new RegExp(`${prefix}->> \\[PONG\\]`))
    await traced(new RegExp(`${prefix}->> \\[OK\\]`))
    await traced(new RegExp(`${prefix}->> \\[PING\\]`))
    await traced(new RegExp(`${prefix}->> \\[MSG a\\.b 7 reply\\.x ${PAYLOAD.length}\\]`))
    await traced(new RegExp(`${prefix}->> \\[HMSG a\\.b 7 12 ${12 + PAYLOAD.length}\\]`))
    await traced(new RegExp(`${prefix}->> \\[-ERR 'Invalid Subject'\\]`))
    expect(log()).not.toContain(PAYLOAD)
  })
})

describe("MQTT trace", () => {
  it("traces every packet both ways, without payloads or passwords", async () => {
    srv = await startMonitoredServer({ mqtt: mqttOptions(), authorization: authorization({ users: [userEntry("dev", PASSWORD)] }) })
    const url = `mqtt://127.0.0.1:${srv.serving.mqtt!.port}`
    const dev = await connectMqtt(url, { clientId: "dev-1", username: "dev", password: PASSWORD, reconnectPeriod: 0 })
    clients.push(dev.client)
    await dev.client.subscribeAsync("a/#", { qos: 1 })
    await dev.client.publishAsync("a/b", PAYLOAD, { qos: 1 })
    await dev.client.publishAsync("a/c", PAYLOAD, { qos: 0 })
    await dev.waitFor((m) => m.topic === "a/c", 1, "the QoS 0 message back")
    const p = '127\\.0\\.0\\.1:\\d+ - mid:\\d+ - "dev-1" - '
    await traced(/mid:\d+ - <<- \[CONNECT client_id="dev-1" clean=true keepalive=\d+ username="dev" password=\[REDACTED\]\]/)
    await traced(new RegExp(`${p}->> \\[CONNACK rc=0\\]`))
    await traced(new RegExp(`${p}<<- \\[SUBSCRIBE pi=\\d+ \\["a/#" qos=1\\]\\]`))
    await traced(new RegExp(`${p}->> \\[SUBACK pi=\\d+ granted=\\[1\\]\\]`))
    await traced(new RegExp(`${p}<<- \\[PUBLISH "a/b" qos=1 pi=\\d+ size=${PAYLOAD.length}\\]`))
    await traced(new RegExp(`${p}->> \\[PUBACK pi=\\d+\\]`))
    await traced(new RegExp(`${p}->> \\[PUBLISH "a/b" qos=1 pi=\\d+ size=${PAYLOAD.length}\\]`))
    await traced(new RegExp(`${p}<<- \\[PUBACK pi=\\d+\\]`))
    await traced(new RegExp(`${p}->> \\[PUBLISH "a/c" qos=0 size=${PAYLOAD.length}\\]`))
    await dev.client.endAsync()
    await traced(new RegExp(`${p}<<- \\[DISCONNECT\\]`))
    expect(log()).not.toContain(PAYLOAD)
    expect(log()).not.toContain(PASSWORD)
  })
})

describe("MQTT events in the log", () => {
  it("logs refused credentials, refused publishes and subscriptions, and takeovers, as for NATS clients", async () => {
    const perms: Permissions = { publish: { allow: ["ok.>"], deny: undefined }, subscribe: { allow: ["ok.>"], deny: undefined }, allowResponses: undefined }
    srv = await startMonitoredServer({ mqtt: mqttOptions(), authorization: authorization({ users: [{ ...userEntry("dev", "pd"), permissions: perms }] }) })
    const url = `mqtt://127.0.0.1:${srv.serving.mqtt!.port}`
    await expect(mqtt.connectAsync(url, { clientId: "intruder", username: "dev", password: PASSWORD, reconnectPeriod: 0 })).rejects.toThrow()
    await traced(/mid:\d+ - "intruder" - User "dev" authentication failed \(CONNACK 5\)/)
    const first = await mqtt.connectAsync(url, { clientId: "dev-1", username: "dev", password: "pd", reconnectPeriod: 0 })
    clients.push(first)
    await expect(first.subscribeAsync("secret/#", { qos: 0 })).rejects.toThrow(/Subscribe error/)
    await first.publishAsync("secret/x", "x", { qos: 1 })
    await traced(/\[ERR\] .*mid:\d+ - "dev-1" - Subscription Violation - User "dev", Topic "secret\/#"/)
    await traced(/\[ERR\] .*mid:\d+ - "dev-1" - Publish Violation - User "dev", Topic "secret\/x"/)
    const second = await mqtt.connectAsync(url, { clientId: "dev-1", username: "dev", password: "pd", reconnectPeriod: 0 })
    clients.push(second)
    await traced(/\[WRN\] .*mid:\d+ - "dev-1" - Replacing the connection of the same client id \(mid:\d+\)/)
    expect(log()).not.toContain(PASSWORD)
    const nc = await connect({ servers: srv.url, user: "dev", pass: "pd", reconnect: false })
    conns.push(nc)
    nc.publish("ok.x", sc.encode("fine"))
    await nc.flush()
  })
})
