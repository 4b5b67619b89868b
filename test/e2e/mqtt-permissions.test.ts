// MQTT clients get exactly what their user's permissions allow, on every path a message
// can take (issue #15, items 1-3): the will, a persistent session resumed by another
// user, retained messages on SUBSCRIBE, and messages queued while a session was away.
// Real mqtt.js and NATS clients against a server with users and streams.
import mqtt from "mqtt"
import { describe, expect, it } from "vitest"
import type { Permissions, UserEntry } from "../../src/config/options.js"
import { useJsServer } from "../helpers/jetstream.js"
import { collect, connectMqtt, mqttOptions, type TestMqttClient } from "../helpers/mqtt.js"
import { authorization } from "../helpers/server.js"

const perms = (p: { pub?: Partial<Permissions["publish"] & object>; sub?: Partial<Permissions["subscribe"] & object> }): Permissions => ({
  publish: p.pub === undefined ? undefined : { allow: p.pub.allow, deny: p.pub.deny },
  subscribe: p.sub === undefined ? undefined : { allow: p.sub.allow, deny: p.sub.deny },
  allowResponses: undefined
})

const user = (name: string, permissions?: Permissions): UserEntry =>
  ({ user: name, password: `${name}-pw`, nkey: undefined, permissions, account: undefined })

const users = [
  user("admin"),
  user("guest", perms({ pub: { allow: ["public.>"] }, sub: { allow: ["public.>"] } })),
  // May subscribe to everything but secret.>: a `#` subscription overlaps the deny.
  user("alice", perms({ sub: { allow: [">"], deny: ["secret.>"] } }))
]

const js = useJsServer({ options: { mqtt: mqttOptions(), authorization: authorization({ users }) }, client: false })

const url = () => `mqtt://127.0.0.1:${js.srv.serving.mqtt!.port}`
const as = (name: string) => ({ username: name, password: `${name}-pw` })
const attempt = (opts: mqtt.IClientOptions) => mqtt.connectAsync(url(), { reconnectPeriod: 0, connectTimeout: 10_000, ...opts })
const logs = () => js.srv.lines.join("")

/** A client collecting from its first packet, with the CONNACK's session-present flag. */
const session = async (opts: mqtt.IClientOptions & { clientId: string }): Promise<TestMqttClient & { present: boolean }> => {
  const c = collect(mqtt.connect(url(), { reconnectPeriod: 0, connectTimeout: 10_000, ...opts }))
  c.client.on("error", () => {})
  const present = await new Promise<boolean>((resolve, reject) => {
    c.client.once("connect", (ack) => resolve(ack.sessionPresent))
    c.client.once("close", () => reject(new Error(`MQTT client ${opts.clientId} could not connect`)))
  })
  return { ...c, present }
}

describe("the will obeys publish permissions", () => {
  it("a will on the stream API from a user who may publish only public.> is refused with CONNACK 5; the stream stays", async () => {
    const { jsm } = await js.client({ user: "admin", pass: "admin-pw" })
    await jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"] })
    await expect(attempt({
      clientId: "sneaky",
      ...as("guest"),
      will: { topic: "$JS/API/STREAM/DELETE/ORDERS", payload: Buffer.from(""), qos: 0, retain: false }
    })).rejects.toThrow(/Not authorized/)
    expect((await jsm.streams.info("ORDERS")).config.name).toBe("ORDERS")
    expect(logs()).toMatch(/"sneaky" - Will Publish Violation - User "guest", Topic "\$JS\/API\/STREAM\/DELETE\/ORDERS"/)
  })

  it("a retained will on a forbidden topic is refused: nothing is retained there", async () => {
    await expect(attempt({
      clientId: "sneaky-retain",
      ...as("guest"),
      will: { topic: "secret/state", payload: Buffer.from("forged"), qos: 1, retain: true }
    })).rejects.toThrow(/Not authorized/)
    const watcher = await connectMqtt(url(), { clientId: "retain-watch", ...as("admin") })
    await watcher.client.subscribeAsync(["secret/state", "public/end"], { qos: 1 })
    await watcher.client.publishAsync("public/end", "end", { qos: 1 })
    await watcher.waitFor((r) => r.topic === "public/end")
    expect(watcher.received.map((r) => r.topic)).toEqual(["public/end"])
    await watcher.client.endAsync()
  })

  it("a permitted will still goes out", async () => {
    const watcher = await connectMqtt(url(), { clientId: "will-watch", ...as("admin") })
    await watcher.client.subscribeAsync("public/dev/1", { qos: 1 })
    const dying = await connectMqtt(url(), {
      clientId: "dev-1",
      ...as("guest"),
      will: { topic: "public/dev/1", payload: Buffer.from("offline"), qos: 1, retain: false }
    })
    dying.client.stream.destroy()
    const [w] = await watcher.waitFor((r) => r.topic === "public/dev/1")
    expect(w.payload).toBe("offline")
    dying.client.end(true)
    await watcher.client.endAsync()
  })
})

describe("a persistent session belongs to its user", () => {
  it("another user with the same client id gets a fresh session and none of the first user's messages", async () => {
    const admin = await connectMqtt(url(), { clientId: "shared", clean: false, ...as("admin") })
    await admin.client.subscribeAsync("secret/#", { qos: 1 })
    await admin.client.endAsync()
    const { nc } = await js.client({ user: "admin", pass: "admin-pw" })
    nc.publish("secret.while-away", "for admin only")
    await nc.flush()

    const guest = await session({ clientId: "shared", clean: false, ...as("guest") })
    expect(guest.present).toBe(false)
    nc.publish("secret.now", "still for admin only")
    await nc.flush()
    await guest.client.subscribeAsync("public/end", { qos: 1 })
    await guest.client.publishAsync("public/end", "end", { qos: 1 })
    await guest.waitFor((r) => r.topic === "public/end")
    expect(guest.received.map((r) => r.topic)).toEqual(["public/end"])
    expect(logs()).toMatch(/session of user "admin" not resumed by user "guest"/)
    await guest.client.endAsync()

    // The old session is gone for its owner too: admin starts fresh (session present 0).
    const again = await session({ clientId: "shared", clean: false, ...as("admin") })
    expect(again.present).toBe(false)
    await again.client.endAsync()
  })

  it("across a restart: the owner is kept with the stored session", async () => {
    const admin = await connectMqtt(url(), { clientId: "shared-2", clean: false, ...as("admin") })
    await admin.client.subscribeAsync("secret/#", { qos: 1 })
    await admin.client.endAsync()
    await js.restart()
    const { nc } = await js.client({ user: "admin", pass: "admin-pw" })
    nc.publish("secret.after-restart", "for admin only")
    await nc.flush()
    const guest = await session({ clientId: "shared-2", clean: false, ...as("guest") })
    expect(guest.present).toBe(false)
    await guest.client.subscribeAsync("public/end", { qos: 1 })
    await guest.client.publishAsync("public/end", "end", { qos: 1 })
    await guest.waitFor((r) => r.topic === "public/end")
    expect(guest.received.map((r) => r.topic)).toEqual(["public/end"])
    await guest.client.endAsync()
  })
})

describe("subscribe permissions apply to every delivery", () => {
  it("retained messages sent on SUBSCRIBE skip denied topics under an allowed filter", async () => {
    const admin = await connectMqtt(url(), { clientId: "retainer", ...as("admin") })
    await admin.client.publishAsync("secret/code", "1234", { qos: 1, retain: true })
    await admin.client.publishAsync("house/temp", "21", { qos: 1, retain: true })
    await admin.client.endAsync()
    const alice = await connectMqtt(url(), { clientId: "alice-ret", ...as("alice") })
    await alice.client.subscribeAsync("#", { qos: 1 })
    await alice.waitFor((r) => r.topic === "house/temp")
    await alice.client.publishAsync("house/end", "end", { qos: 1 })
    await alice.waitFor((r) => r.topic === "house/end")
    expect(alice.received.map((r) => r.topic)).not.toContain("secret/code")
    await alice.client.endAsync()
  })

  it.each([
    ["queued while a session was away", false],
    ["stored for a session before a restart", true]
  ])("messages %s skip denied topics when it resumes", async (_what, restart) => {
    const id = restart ? "alice-restart" : "alice-away"
    const alice = await connectMqtt(url(), { clientId: id, clean: false, ...as("alice") })
    await alice.client.subscribeAsync("#", { qos: 1 })
    await alice.client.endAsync()
    if (restart) await js.restart()
    const admin = await connectMqtt(url(), { clientId: `publisher-${id}`, ...as("admin") })
    await admin.client.publishAsync(`secret/${id}`, "no", { qos: 1 })
    await admin.client.publishAsync(`house/${id}`, "yes", { qos: 1 })
    await admin.client.endAsync()
    const back = await session({ clientId: id, clean: false, ...as("alice") })
    expect(back.present).toBe(true)
    await back.waitFor((r) => r.topic === `house/${id}`)
    await back.client.publishAsync(`house/end/${id}`, "end", { qos: 1 })
    await back.waitFor((r) => r.topic === `house/end/${id}`)
    expect(back.received.map((r) => r.topic)).not.toContain(`secret/${id}`)
    await back.client.endAsync()
  })
})
