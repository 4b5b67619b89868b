// MQTT state in the `$MQTT_*` streams: persistent sessions (subscriptions, pending
// QoS 1/2 messages, QoS 2 packet ids and PUBREL state), messages published while a
// client is away, and retained messages — across disconnects and server restarts.
import { once } from "node:events"
import { readdirSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"
import { connect as tcpConnect, type Socket } from "node:net"
import * as MqttPacket from "mqtt-packet"
import { afterEach, describe, expect, it } from "vitest"
import { connect as natsConnect } from "nats"
import { eventuallyAsync, type JsTestServer, startJsServer } from "../helpers/jetstream.js"
import mqtt from "mqtt"
import { collect, eventually, mqttOptions, startMqttServer, type TestMqttClient } from "../helpers/mqtt.js"
import { getJson } from "../helpers/monitor.js"
import { Effect, Layer } from "effect"
import { sessionHash, sessSubject } from "../../src/core/mqtt/index.js"
import { layerNode as diskNode } from "../../src/services/disk-node.js"
import { Store } from "../../src/services/store.js"
import { layerFile } from "../../src/services/store-file.js"

let js: JsTestServer | undefined
const clients: Array<TestMqttClient> = []
const sockets: Array<Socket> = []

afterEach(async () => {
  for (const c of clients.splice(0)) await c.client.endAsync(true).catch(() => {})
  for (const s of sockets.splice(0)) s.destroy()
  await js?.close()
  js = undefined
})

const start = async () => {
  js = await startJsServer({ mqtt: mqttOptions() })
  return js
}
/** Collecting from the first packet on: a resumed session's messages may come with the CONNACK. */
const connectMqtt = async (u: string, opts: mqtt.IClientOptions & { clientId: string }): Promise<TestMqttClient> => {
  const c = collect(mqtt.connect(u, { reconnectPeriod: 0, connectTimeout: 10_000, ...opts }))
  c.client.on("error", () => {})
  await new Promise<void>((resolve, reject) => {
    c.client.once("connect", () => resolve())
    c.client.once("close", () => reject(new Error(`MQTT client ${opts.clientId} could not connect`)))
  })
  return c
}
const url = () => `mqtt://127.0.0.1:${js!.srv.serving.mqtt!.port}`
const client = async (clientId: string, clean: boolean) => {
  const c = await connectMqtt(url(), { clientId, clean })
  clients.push(c)
  return c
}
const drop = async (c: TestMqttClient) => {
  clients.splice(clients.indexOf(c), 1)
  await c.client.endAsync()
}

/** The first folder under `dir` (depth first) whose name passes `pred`. */
const findDir = (dir: string, pred: (name: string) => boolean): string | undefined => {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (!statSync(p).isDirectory()) continue
    if (pred(name)) return p
    const deeper = findDir(p, pred)
    if (deeper !== undefined) return deeper
  }
  return undefined
}

/** A raw MQTT 3.1.1 connection: full control over what is acknowledged. */
const raw = async () => {
  const sock = tcpConnect(js!.srv.serving.mqtt!.port, "127.0.0.1")
  sockets.push(sock)
  sock.on("error", () => {}) // the server going away mid-test is expected
  await once(sock, "connect")
  const packets: Array<MqttPacket.Packet> = []
  const parser = MqttPacket.parser({ protocolVersion: 4 })
  parser.on("packet", (p) => packets.push(p))
  sock.on("data", (d) => parser.parse(d))
  const send = (p: Record<string, unknown>) => sock.write(MqttPacket.generate(p as unknown as MqttPacket.Packet))
  const waitFor = async <T extends MqttPacket.Packet>(pred: (p: MqttPacket.Packet) => boolean, what: string): Promise<T> => {
    await eventually(() => packets.some(pred), `${what} (have ${JSON.stringify(packets.map((p) => p.cmd))})`)
    const i = packets.findIndex(pred)
    return packets.splice(i, 1)[0] as T
  }
  return { sock, packets, send, waitFor }
}

const rawConnect = async (clientId: string, clean: boolean) => {
  const r = await raw()
  r.send({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean, clientId, keepalive: 0 })
  const ack = await r.waitFor<MqttPacket.IConnackPacket>((p) => p.cmd === "connack", "CONNACK")
  return { ...r, sessionPresent: ack.sessionPresent }
}

/**
 * A raw persistent `<name>-sink` subscribed at QoS 2 to `<name>/t`, and one QoS 2 message
 * from a clean `<name>-src` (disconnected again) delivered to it, not yet acknowledged.
 */
const qos2Delivered = async (name: string, payload: string) => {
  const sub = await rawConnect(`${name}-sink`, false)
  sub.send({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: `${name}/t`, qos: 2 }] })
  await sub.waitFor((p) => p.cmd === "suback", "SUBACK")
  const pub = await client(`${name}-src`, true)
  await pub.client.publishAsync(`${name}/t`, payload, { qos: 2 })
  const first = await sub.waitFor<MqttPacket.IPublishPacket>((p) => p.cmd === "publish", "PUBLISH")
  await drop(pub)
  return { sub, first }
}

describe("persistent sessions across a restart", () => {
  it("delivers QoS 1 messages published while the subscriber was away, in order, after a restart", async () => {
    await start()
    const sub = await client("sensor-sink", false)
    await sub.client.subscribeAsync("fleet/+/temp", { qos: 1 })
    await drop(sub)
    const pub = await client("sensor-1", true)
    for (let i = 0; i < 5; i++) await pub.client.publishAsync("fleet/a/temp", `t${i}`, { qos: 1 })
    await drop(pub)
    await js!.restart()
    const back = await client("sensor-sink", false)
    const got = await back.waitFor((m) => m.topic === "fleet/a/temp", 5)
    expect(got.map((m) => m.payload)).toEqual(["t0", "t1", "t2", "t3", "t4"])
    expect(got.every((m) => m.qos === 1)).toBe(true)
  })

  it("keeps subscriptions: after a restart a resumed session receives without subscribing again", async () => {
    await start()
    const sub = await client("keeper", false)
    await sub.client.subscribeAsync("cmd/#", { qos: 1 })
    await drop(sub)
    await js!.restart()
    const r = await rawConnect("keeper", false)
    expect(r.sessionPresent).toBe(true)
    const nc = await natsConnect({ servers: js!.srv.url })
    nc.publish("cmd.reboot", "now")
    await nc.flush()
    const p = await r.waitFor<MqttPacket.IPublishPacket>((x) => x.cmd === "publish", "PUBLISH")
    expect(p.topic).toBe("cmd/reboot")
    await nc.close()
  })

  it("a clean-session CONNECT discards the stored session and what it was owed [MQTT-3.1.2-6]", async () => {
    await start()
    const sub = await client("wiped", false)
    await sub.client.subscribeAsync("x/y", { qos: 1 })
    await drop(sub)
    const pub = await client("p", true)
    await pub.client.publishAsync("x/y", "owed", { qos: 1 })
    const clean = await rawConnect("wiped", true)
    expect(clean.sessionPresent).toBe(false)
    clean.send({ cmd: "disconnect" })
    await js!.restart()
    const again = await rawConnect("wiped", false)
    expect(again.sessionPresent).toBe(false)
    // Nothing is pending: a ping round-trip comes back with no PUBLISH before it.
    again.send({ cmd: "pingreq" })
    await again.waitFor((p) => p.cmd === "pingresp", "PINGRESP")
    expect(again.packets.filter((p) => p.cmd === "publish")).toEqual([])
  })

  it("resends an unacknowledged QoS 2 PUBLISH after a restart with DUP and the same packet id", async () => {
    await start()
    const { first } = await qos2Delivered("q2", "once")
    expect(first.qos).toBe(2)
    await js!.restart()
    const again = await rawConnect("q2-sink", false)
    expect(again.sessionPresent).toBe(true)
    const second = await again.waitFor<MqttPacket.IPublishPacket>((p) => p.cmd === "publish", "resent PUBLISH")
    expect(second.messageId).toBe(first.messageId)
    expect(second.dup).toBe(true)
    expect(String(second.payload)).toBe("once")
    // PUBREC moves it to PUBREL, which is owed across the next restart too.
    again.send({ cmd: "pubrec", messageId: second.messageId })
    await again.waitFor((p) => p.cmd === "pubrel", "PUBREL")
    await js!.restart()
    const third = await rawConnect("q2-sink", false)
    const rel = await third.waitFor<MqttPacket.IPubrelPacket>((p) => p.cmd === "pubrel", "PUBREL after restart")
    expect(rel.messageId).toBe(first.messageId)
    third.send({ cmd: "pubcomp", messageId: rel.messageId })
    third.send({ cmd: "pingreq" })
    await third.waitFor((p) => p.cmd === "pingresp", "PINGRESP")
    expect(third.packets.filter((p) => p.cmd === "publish")).toEqual([])
  })

  // Streams are synced side by side: after a failed commit `$MQTT_out` may be behind the
  // session record (found by the simulator, seed 1163386423). An id forgotten would be
  // handed out again while the client still holds it, and that message dropped as a resend.
  it("owes the PUBREL after a restart even when $MQTT_out lost its record: the session record says so too", async () => {
    await start()
    const { sub, first: msg } = await qos2Delivered("rel", "x")
    sub.send({ cmd: "pubrec", messageId: msg.messageId })
    await sub.waitFor((p) => p.cmd === "pubrel", "PUBREL")
    await js!.restart(() => {
      const out = findDir(js!.storeDir, (name) => name.includes("MQTT_out"))
      expect(out, "the $MQTT_out stream's folder").toBeDefined()
      for (const f of readdirSync(join(out!, "msgs"))) rmSync(join(out!, "msgs", f))
    })
    const back = await rawConnect("rel-sink", false)
    expect(back.sessionPresent).toBe(true)
    const rel = await back.waitFor<MqttPacket.IPubrelPacket>((p) => p.cmd === "pubrel", "PUBREL after restart")
    expect(rel.messageId).toBe(msg.messageId)
  })

  it("suppresses a QoS 2 duplicate across a restart: PUBLISH, restart, same PUBLISH again is not routed twice [MQTT-4.3.3-2]", async () => {
    await start()
    const sink = await client("dup-sink", false)
    await sink.client.subscribeAsync("d/t", { qos: 2 })
    const pub = await rawConnect("dup-src", false)
    pub.send({ cmd: "publish", topic: "d/t", payload: Buffer.from("one"), qos: 2, messageId: 7, retain: false, dup: false })
    await pub.waitFor((p) => p.cmd === "pubrec", "PUBREC")
    await sink.waitFor((m) => m.topic === "d/t")
    await drop(sink)
    await js!.restart()
    const back = await client("dup-sink", false)
    const again = await rawConnect("dup-src", false)
    again.send({ cmd: "publish", topic: "d/t", payload: Buffer.from("one"), qos: 2, messageId: 7, retain: false, dup: true })
    await again.waitFor((p) => p.cmd === "pubrec", "PUBREC for the duplicate")
    again.send({ cmd: "pubrel", messageId: 7 })
    await again.waitFor((p) => p.cmd === "pubcomp", "PUBCOMP")
    // A marker after it: once the marker arrived, the duplicate would have too.
    await back.client.subscribeAsync("d/marker", { qos: 1 })
    again.send({ cmd: "publish", topic: "d/marker", payload: Buffer.from("m"), qos: 1, messageId: 8, retain: false, dup: false })
    await back.waitFor((m) => m.topic === "d/marker")
    expect(back.received.filter((m) => m.topic === "d/t")).toEqual([])
  })
})

describe("inbound QoS 2: PUBREC first, forwarded once its de-duplication record is durable", () => {
  it("a client subscribed to its own topic gets the PUBREC before the copy of its message (raw bytes)", async () => {
    await start()
    const c = await rawConnect("q2-self", false)
    c.send({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "q2/self", qos: 2 }] })
    await c.waitFor((p) => p.cmd === "suback", "SUBACK")
    c.send({ cmd: "publish", topic: "q2/self", payload: Buffer.from("once"), qos: 2, messageId: 5, retain: false, dup: false })
    await eventually(() => c.packets.some((p) => p.cmd === "publish"), "the copy")
    const order = c.packets.filter((p) => p.cmd === "pubrec" || p.cmd === "publish").map((p) => p.cmd)
    expect(order).toEqual(["pubrec", "publish"])
  })

  it("the de-duplication record is on disk before the message reaches anyone: a resend after a restart is not forwarded again", async () => {
    await start()
    const sink = await client("q2-sink", false)
    await sink.client.subscribeAsync("q2/t", { qos: 2 })
    const pub = await rawConnect("q2-src", false)
    pub.send({ cmd: "publish", topic: "q2/t", payload: Buffer.from("one"), qos: 2, messageId: 9, retain: false, dup: false })
    // The subscriber has it: by then the record must be durable. The publisher never answers
    // the PUBREC, as if the connection died; the server restarts; the publisher resends.
    await sink.waitFor((m) => m.topic === "q2/t")
    await drop(sink)
    await js!.restart()
    const back = await client("q2-sink", false)
    const again = await rawConnect("q2-src", false)
    again.send({ cmd: "publish", topic: "q2/t", payload: Buffer.from("one"), qos: 2, messageId: 9, retain: false, dup: true })
    await again.waitFor((p) => p.cmd === "pubrec", "PUBREC for the resend")
    await back.client.subscribeAsync("q2/marker", { qos: 1 })
    again.send({ cmd: "publish", topic: "q2/marker", payload: Buffer.from("m"), qos: 1, messageId: 10, retain: false, dup: false })
    await back.waitFor((m) => m.topic === "q2/marker")
    // A copy it had not acknowledged may come again, marked DUP; a second routing would not be.
    expect(back.received.filter((m) => m.topic === "q2/t" && !m.dup)).toEqual([])
  })

  it("a stored copy that reached the disk without its $MQTT_qos2in record (a power cut between the two) still de-duplicates the resend", async () => {
    await start()
    const sink = await client("q2h-sink", false)
    await sink.client.subscribeAsync("q2h/t", { qos: 2 })
    await drop(sink) // away: the copy is stored for it
    const pub = await rawConnect("q2h-src", false)
    pub.send({ cmd: "publish", topic: "q2h/t", payload: Buffer.from("one"), qos: 2, messageId: 11, retain: false, dup: false })
    await pub.waitFor((p) => p.cmd === "pubrec", "PUBREC")
    await js!.restart(() => {
      const dir = findDir(js!.storeDir, (name) => name.includes("MQTT_qos2in"))
      expect(dir, "the $MQTT_qos2in stream's folder").toBeDefined()
      for (const f of readdirSync(join(dir!, "msgs"))) rmSync(join(dir!, "msgs", f))
    })
    const back = await client("q2h-sink", false)
    await back.waitFor((m) => m.topic === "q2h/t")
    // The publisher never saw the PUBREC (as far as it knows): it resends.
    const again = await rawConnect("q2h-src", false)
    again.send({ cmd: "publish", topic: "q2h/t", payload: Buffer.from("one"), qos: 2, messageId: 11, retain: false, dup: true })
    await again.waitFor((p) => p.cmd === "pubrec", "PUBREC for the resend")
    await back.client.subscribeAsync("q2h/marker", { qos: 1 })
    again.send({ cmd: "publish", topic: "q2h/marker", payload: Buffer.from("m"), qos: 1, messageId: 12, retain: false, dup: false })
    await back.waitFor((m) => m.topic === "q2h/marker")
    expect(back.received.filter((m) => m.topic === "q2h/t").map((m) => m.payload)).toEqual(["one"])
  })

  it("mqtt.js publishing to its own subscription sees PUBREC, then the message", async () => {
    await start()
    const c = await client("q2-mqttjs", true)
    const seen: Array<string> = []
    c.client.on("packetreceive", (p) => {
      if (p.cmd === "pubrec" || p.cmd === "publish") seen.push(p.cmd)
    })
    await c.client.subscribeAsync("q2/js", { qos: 2 })
    await c.client.publishAsync("q2/js", "x", { qos: 2 })
    await c.waitFor((m) => m.topic === "q2/js")
    expect(seen).toEqual(["pubrec", "publish"])
  })
})

describe("subscriptions of a persistent session in $MQTT_sess", () => {
  /** Bytes of $MQTT_sess's block files on disk: everything ever written there, before any compaction. */
  const sessBytes = (): number => {
    const dir = findDir(js!.storeDir, (name) => name.includes("MQTT_sess"))!
    return readdirSync(join(dir, "msgs")).reduce((n, f) => n + statSync(join(dir, "msgs", f)).size, 0)
  }

  it("each SUBSCRIBE writes its own filter, not the whole list: 2,000 one at a time stay small on disk", async () => {
    await start()
    const c = await client("many-subs", false)
    const before = sessBytes()
    for (let i = 0; i < 2000; i++) await c.client.subscribeAsync(`many/${i}/+`, { qos: 1 })
    const written = sessBytes() - before
    // About a hundred bytes a subscription; rewriting every list would have been ~60 MB.
    expect(written).toBeLessThan(2000 * 400)
    await c.client.unsubscribeAsync("many/7/+")
    await drop(c)
    await js!.restart()
    const back = await client("many-subs", false)
    await back.client.publishAsync("many/1999/x", "last", { qos: 1 })
    await back.client.publishAsync("many/7/x", "gone", { qos: 1 })
    await back.client.publishAsync("many/0/x", "first", { qos: 1 })
    await back.waitFor((m) => m.topic === "many/0/x")
    expect(back.received.map((m) => m.topic)).toEqual(["many/1999/x", "many/0/x"])
  })

  it("a session record from before subscriptions had their own records keeps its subscriptions, and an UNSUBSCRIBE then holds", async () => {
    await start()
    const first = await client("legacy-dev", false) // makes the MQTT streams, then goes
    await drop(first)
    await js!.restart(() => {
      // What an older version wrote: the subscription list inside the session record.
      const legacy = { v: 1, id: "legacy-dev", subs: [{ f: "old/#", q: 1 }], pid: 0, cursor: 0, out: [], queued: [] }
      const write = Effect.flatMap(Store, (store) =>
        Effect.flatMap(store.open("$G/$MQTT_sess"), (s) => {
          s.storeSync(sessSubject(sessionHash("legacy-dev")), undefined, Buffer.from(JSON.stringify(legacy)), Date.now())
          return Effect.zipRight(s.sync(), s.close())
        }))
      return Effect.runPromise(Effect.scoped(write).pipe(Effect.provide(layerFile(js!.storeDir).pipe(Layer.provide(diskNode)))))
    })
    const back = await client("legacy-dev", false)
    await back.client.publishAsync("old/a", "kept", { qos: 1 })
    await back.waitFor((m) => m.topic === "old/a")
    await back.client.unsubscribeAsync("old/#")
    await drop(back)
    await js!.restart()
    const again = await client("legacy-dev", false)
    await again.client.subscribeAsync("marker", { qos: 1 })
    await again.client.publishAsync("old/b", "not any more", { qos: 1 })
    await again.client.publishAsync("marker", "m", { qos: 1 })
    await again.waitFor((m) => m.topic === "marker")
    expect(again.received.map((m) => m.topic)).toEqual(["marker"])
  })
})

describe("retained messages in $MQTT_rmsgs", () => {
  it("survive a restart, and an empty retained publish deletes one for good", async () => {
    await start()
    const pub = await client("ret-pub", true)
    await pub.client.publishAsync("site/1/status", "online", { qos: 1, retain: true })
    await pub.client.publishAsync("site/2/status", "online", { qos: 1, retain: true })
    await pub.client.publishAsync("site/2/status", "", { qos: 1, retain: true })
    await drop(pub)
    await js!.restart()
    const sub = await client("ret-sub", true)
    await sub.client.subscribeAsync("site/+/status", { qos: 1 })
    const got = await sub.waitFor((m) => m.retain)
    expect(got.map((m) => [m.topic, m.payload])).toEqual([["site/1/status", "online"]])
    sub.client.publish("site/marker", "x", { qos: 0 })
    await sub.client.subscribeAsync("site/marker", { qos: 0 })
    expect(sub.received.some((m) => m.topic === "site/2/status")).toBe(false)
  })
})

/** `$MQTT_msgs`' last sequence, from the stream API. */
const msgsLastSeq = async (): Promise<number> => {
  const { jsm } = await js!.client()
  return (await jsm.streams.info("$MQTT_msgs")).state.last_seq
}

describe("what goes to disk", () => {
  it("a QoS 1/2 message only clean sessions receive is acknowledged without a stored copy", async () => {
    await start()
    const sub = await client("clean-sink", true)
    await sub.client.subscribeAsync("cl/#", { qos: 2 })
    const pub = await client("clean-src", true)
    await pub.client.publishAsync("cl/1", "one", { qos: 1 })
    await pub.client.publishAsync("cl/2", "two", { qos: 2 })
    expect((await sub.waitFor((m) => m.topic.startsWith("cl/"), 2)).map((m) => [m.payload, m.qos])).toEqual([["one", 1], ["two", 2]])
    // after a restart nobody could be owed them: nothing to keep
    expect(await msgsLastSeq()).toBe(0)
  })

  it("a message a persistent session takes, connected or away, is stored before the PUBACK", async () => {
    await start()
    const here = await client("keep-here", false)
    await here.client.subscribeAsync("kp/here", { qos: 1 })
    const away = await client("keep-away", false)
    await away.client.subscribeAsync("kp/away", { qos: 1 })
    await drop(away)
    const pub = await client("keep-src", true)
    await pub.client.publishAsync("kp/here", "h", { qos: 1 })
    expect(await msgsLastSeq()).toBe(1)
    await pub.client.publishAsync("kp/away", "a", { qos: 1 })
    expect(await msgsLastSeq()).toBe(2)
    // a QoS 0 subscription holds nothing: not stored
    const zero = await client("keep-zero", false)
    await zero.client.subscribeAsync("kp/zero", { qos: 0 })
    await pub.client.publishAsync("kp/zero", "z", { qos: 1 })
    expect(await msgsLastSeq()).toBe(2)
  })

  it("PUBACKs keep the order of the PUBLISHes when only the first one waited for the disk [MQTT-4.6.0-2]", async () => {
    await start()
    const holder = await client("order-holder", false)
    await holder.client.subscribeAsync("ord/held", { qos: 1 })
    const pub = await rawConnect("order-src", true)
    pub.sock.write(
      Buffer.concat([
        MqttPacket.generate({ cmd: "publish", topic: "ord/held", payload: Buffer.from("stored"), qos: 1, messageId: 1, retain: false, dup: false }),
        MqttPacket.generate({ cmd: "publish", topic: "ord/free", payload: Buffer.from("not stored"), qos: 1, messageId: 2, retain: false, dup: false })
      ])
    )
    await eventually(() => pub.packets.filter((p) => p.cmd === "puback").length === 2, "two PUBACKs")
    expect(pub.packets.filter((p) => p.cmd === "puback").map((p) => (p as MqttPacket.IPubackPacket).messageId)).toEqual([1, 2])
  })
})

describe("across accounts", () => {
  it("a QoS 1 message stored in the exporting account reaches an away session of the importing account when it resumes", async () => {
    const user = (name: string) => ({ user: name, password: "p", nkey: undefined, permissions: undefined, account: undefined })
    js = await startJsServer({
      mqtt: mqttOptions(),
      accounts: [
        { name: "A", users: [user("a")], exports: [{ stream: "dev.>", service: undefined, accounts: ["B"] }], imports: [], jetstream: true },
        {
          name: "B",
          users: [user("b")],
          exports: [],
          imports: [{ stream: { account: "A", subject: "dev.>" }, service: undefined, prefix: undefined, to: undefined }],
          jetstream: true
        }
      ]
    })
    const login = async (clientId: string, name: string, clean: boolean) => {
      const c = await connectMqtt(url(), { clientId, clean, username: name, password: "p" })
      clients.push(c)
      return c
    }
    // A persistent session in A makes A store the message (its `$MQTT_msgs` sequence goes with it).
    const holder = await login("holder-a", "a", false)
    await holder.client.subscribeAsync("dev/#", { qos: 1 })
    const away = await login("away-b", "b", false)
    await away.client.subscribeAsync("dev/#", { qos: 1 })
    await drop(away)
    const pub = await login("pub-a", "a", true)
    await pub.client.publishAsync("dev/x", "across", { qos: 1 })
    await holder.waitFor((m) => m.topic === "dev/x")
    // B's session is owed the message itself, not a sequence of A's stream that B's streams do not have.
    const back = await login("away-b", "b", false)
    expect((await back.waitFor((m) => m.topic === "dev/x")).map((m) => [m.payload, m.qos])).toEqual([["across", 1]])
  })
})

describe("a $MQTT_ stream that lost its configuration", () => {
  /** Remove the stored configuration of the stream whose folder name contains `name` (as a power cut once did). */
  const loseConfiguration = (name: string) => {
    const dir = findDir(js!.storeDir, (n) => n.includes(name))
    if (dir === undefined) throw new Error(`no folder for ${name} under ${js!.storeDir}`)
    for (const f of readdirSync(join(dir, "meta"))) rmSync(join(dir, "meta", f), { force: true })
  }

  it("is created again through the JetStream API with its records kept: the away session still gets its message", async () => {
    await start()
    const sub = await client("adopt-sink", false)
    await sub.client.subscribeAsync("adopt/#", { qos: 1 })
    await drop(sub)
    const pub = await client("adopt-src", true)
    await pub.client.publishAsync("adopt/x", "kept", { qos: 1 })
    await drop(pub)
    await js!.restart(() => loseConfiguration("MQTT_msgs"))
    const back = await client("adopt-sink", false)
    expect((await back.waitFor((m) => m.topic === "adopt/x")).map((m) => m.payload)).toEqual(["kept"])
    expect(js!.srv.lines.some((l) => l.includes("stream '$G > $MQTT_msgs' had lost its configuration; written again, its 1 messages kept"))).toBe(true)
    // Taken up again, the stream no longer fails /healthz.
    expect((await getJson(js!.srv.base, "/healthz")).status).toBe(200)
  })

  it("a client's STREAM.CREATE of a stream stored without its configuration is refused as before: only the server takes one up", async () => {
    await start()
    const { jsm } = await js!.client()
    await jsm.streams.add({ name: "ORPHAN", subjects: ["orphan.>"] })
    await js!.restart(() => loseConfiguration("ORPHAN"))
    const { jsm: again } = await js!.client()
    await expect(again.streams.add({ name: "ORPHAN", subjects: ["orphan.>"] })).rejects.toThrow(/already exists/)
  })
})

describe("the streams in /jsz", () => {
  it("lists the five $MQTT_ streams of the account once an MQTT client connected", async () => {
    await start()
    await client("jsz-probe", false)
    await eventuallyAsync(async () => {
      const jsz = (await getJson(js!.srv.base, "/jsz?streams=true")).json as { account_details?: Array<{ stream_detail?: Array<{ name: string }> }> }
      const names = (jsz.account_details ?? []).flatMap((a) => (a.stream_detail ?? []).map((s) => s.name))
      return ["$MQTT_sess", "$MQTT_msgs", "$MQTT_rmsgs", "$MQTT_qos2in", "$MQTT_out"].every((n) => names.includes(n))
    }, "the MQTT streams in /jsz")
  })
})

describe("without streams", () => {
  it("still queues QoS 1 messages for a persistent session while its client is away (in memory)", async () => {
    const srv = await startMqttServer()
    try {
      const u = `mqtt://127.0.0.1:${srv.mqttPort}`
      const sub = await connectMqtt(u, { clientId: "mem-sink", clean: false })
      await sub.client.subscribeAsync("m/t", { qos: 1 })
      await sub.client.endAsync()
      const pub = await connectMqtt(u, { clientId: "mem-pub", clean: true })
      await pub.client.publishAsync("m/t", "while away", { qos: 1 })
      await pub.client.endAsync()
      const back = await connectMqtt(u, { clientId: "mem-sink", clean: false })
      const got = await back.waitFor((m) => m.topic === "m/t")
      expect(got[0].payload).toBe("while away")
      await back.client.endAsync()
    } finally {
      await srv.close()
    }
  })
})
