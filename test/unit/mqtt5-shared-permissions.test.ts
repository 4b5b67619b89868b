// MQTT 5.0 Shared Subscriptions under NATS queue permissions: `$share/G/filter` is the
// queue group G on the filter's subjects, so a `subscribe` entry naming a queue
// (`"jobs.> workers"`, nats-server's `<subject> <queue>`, the queue may use wildcards)
// allows or denies it as it does a NATS queue subscription: SUBACK 0x87 when refused, when
// a session resumes after a reload that changed the permissions too, and what an away
// session queued through a refused subscription is not delivered. (The real bridge with the
// server's users: test/helpers/mqtt-bridge.ts; nats.js against the same rules:
// test/e2e/mqtt5-bridge.test.ts.)
import type * as MqttPacket from "mqtt-packet"
import { describe, expect, it } from "vitest"
import type { Permissions, ServerOptions, UserEntry } from "../../src/config/options.js"
import { ClientPermissions } from "../../src/engine/permissions.js"
import { mqttAuthenticator } from "../../src/server/mqtt/auth.js"
import { mayHold } from "../../src/server/mqtt/connection.js"
import { reloadMqtt } from "../../src/server/mqtt/reload.js"
import { bridgeWorld } from "../helpers/mqtt-bridge.js"

const perms = (allow: Array<string> | undefined, deny?: Array<string>): Permissions =>
  ({ publish: { allow: [">"], deny: undefined }, subscribe: { allow, deny }, allowResponses: undefined })
const user = (name: string, permissions?: Permissions): UserEntry => ({ user: name, password: "p", nkey: undefined, account: undefined, permissions })
const authorization = (users: Array<UserEntry>): ServerOptions["authorization"] =>
  ({ user: undefined, password: undefined, token: undefined, timeoutMs: undefined, defaultPermissions: undefined, users })

const USERS = [
  user("admin"),
  // only in queue groups `workers` and `crew` on jobs.>, and anything on own.>
  user("worker", perms(["jobs.> workers", "jobs.> crew", "own.>"])),
  // anything but queue group `other` on jobs.>
  user("picky", perms([">"], ["jobs.> other"]))
]

const login = (name: string) => ({ username: name, password: Buffer.from("p") })
const v5 = (name: string, expiry = 0) => ({ protocolVersion: 5, properties: { sessionExpiryInterval: expiry }, ...login(name) })
const subscribe = (...topics: Array<string>) => ({ cmd: "subscribe", messageId: 1, subscriptions: topics.map((topic) => ({ topic, qos: 1 })) })
const granted = (packets: ReadonlyArray<MqttPacket.Packet>) => (packets.find((p) => p.cmd === "suback") as MqttPacket.ISubackPacket).granted
const payloads = (packets: ReadonlyArray<MqttPacket.Packet>) => packets.flatMap((p) => (p.cmd === "publish" ? [p.payload.toString()] : []))
const job = (payload: string, topic = "jobs/a") => ({ cmd: "publish", topic, payload: Buffer.from(payload), qos: 1, messageId: 7, retain: false, dup: false })

describe("queue permissions in the engine", () => {
  it("a shared filter is checked with its group; what waits for it needs an allow entry of any group and no plain deny", () => {
    const worker = { perms: new ClientPermissions(perms(["jobs.> workers"])) } as never
    expect(mayHold(worker, "$share/workers/jobs/+")).toBe(true)
    expect(mayHold(worker, "$share/idlers/jobs/+")).toBe(false)
    expect(mayHold(worker, "jobs/+")).toBe(false)
    const wild = { perms: new ClientPermissions(perms(["jobs.> *.dev"])) } as never
    expect(mayHold(wild, "$share/eu.dev/jobs/a")).toBe(true)
    expect(mayHold(wild, "$share/eu.prod/jobs/a")).toBe(false)
    const p = new ClientPermissions(perms(["jobs.> workers", "in.>"], ["in.secret", "in.q other"]))
    expect(["jobs.a", "in.x", "in.q", "in.secret", "out"].map((s) => p.mayReceive(s))).toEqual([true, true, true, false, false])
  })
})

describe("MQTT 5.0 Shared Subscriptions obey NATS queue permissions", () => {
  const world = () => bridgeWorld({ options: { authorization: authorization(USERS) } })

  it("SUBACK grants the allowed group and 0x87 for another group or no group; deny entries naming a group refuse only it", async () => {
    const w = world()
    const worker = w.connect("w1", true, [subscribe("$share/workers/jobs/+", "$share/idlers/jobs/+", "jobs/+", "$share/any/own/x")], v5("worker"))
    const picky = w.connect("p1", true, [subscribe("$share/other/jobs/+", "$share/workers/jobs/+", "jobs/+")], v5("picky"))
    await w.turn(true)
    await w.turn(true)
    expect(granted(worker.packets)).toEqual([1, 0x87, 0x87, 1])
    expect(granted(picky.packets)).toEqual([0x87, 1, 1])
    expect(w.lines.join("")).toMatch(/Subscription Violation - User "worker", Topic "\$share\/idlers\/jobs\/\+"/)
    // the allowed group gets the work
    w.connect("admin", true, [job("j1")], v5("admin"))
    await w.turn(true)
    expect(payloads(worker.packets)).toEqual(["j1"])
  })

  it("an away session keeps what its shared subscription takes, and gets it when it resumes", async () => {
    const w = world()
    const first = w.connect("w2", true, [subscribe("$share/workers/jobs/+")], v5("worker", 600))
    await w.turn(true)
    await w.turn(true)
    expect(granted(first.packets)).toEqual([1])
    first.drop()
    await w.turn(true)
    w.connect("admin", true, [job("queued")], v5("admin"))
    await w.turn(true)
    const back = w.connect("w2", false, [], v5("worker", 600))
    await w.turn(true)
    await w.turn(true)
    expect(back.packets.find((p) => p.cmd === "connack")).toMatchObject({ sessionPresent: true })
    expect(payloads(back.packets)).toEqual(["queued"])
  })

  it("a reload that takes the group away: the connected session loses the subscription, an away one finds it refused when it resumes, with nothing of it delivered", async () => {
    const w = world()
    // (two groups, each taking every message: what one takes does not depend on the other)
    const live = w.connect("live", true, [subscribe("$share/crew/jobs/+")], v5("worker"))
    const away = w.connect("away", true, [subscribe("$share/workers/jobs/+", "own/+")], v5("worker", 600))
    await w.turn(true)
    await w.turn(true)
    away.drop()
    await w.turn(true)
    // queued for the away session (and given to the live one)
    w.connect("admin", true, [job("before")], v5("admin"))
    await w.turn(true)
    // the worker may now take jobs in group `idlers` only
    const server = w.bridge.server
    const previous = mqttAuthenticator(server)
    const next = {
      ...server.options,
      mqtt: { ...server.options.mqtt!, protocolVersions: [4, 5] as const },
      authorization: authorization([user("admin"), user("worker", perms(["jobs.> idlers", "own.>"]))])
    }
    server.reconfigure(next)
    reloadMqtt(w.bridge, previous, next)
    await w.turn(true)
    expect(w.lines.join("")).toMatch(/Removed subscription "\$share\/crew\/jobs\/\+": not permitted after a configuration reload/)
    expect(w.bridge.connectedClient("live")?.filters.has("$share/crew/jobs/+")).toBe(false)
    const back = w.connect("away", false, [], v5("worker", 600))
    await w.turn(true)
    await w.turn(true)
    expect(back.packets.find((p) => p.cmd === "connack")).toMatchObject({ sessionPresent: true })
    expect(w.bridge.connectedClient("away")?.filters.has("$share/workers/jobs/+")).toBe(false)
    expect(w.bridge.connectedClient("away")?.filters.has("own/+")).toBe(true)
    // a new SUBSCRIBE in the old group is refused, in the new one granted
    back.send(subscribe("$share/workers/jobs/+", "$share/idlers/jobs/+"))
    await w.turn(true)
    await w.turn(true)
    expect(granted(back.packets)).toEqual([0x87, 1])
    w.connect("admin2", true, [job("after")], v5("admin"))
    await w.turn(true)
    expect(payloads(back.packets)).toEqual(["after"])
    expect(payloads(live.packets)).toEqual(["before"])
  })
})
