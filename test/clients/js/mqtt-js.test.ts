// mqtt.js (the `mqtt` npm package, MQTT 3.1.1) through the MQTT client matrix, in process,
// over TCP, WebSocket and TLS.
import { readFileSync } from "node:fs"
import mqtt from "mqtt"
import { eventually } from "../../helpers/server.js"
import type { Json } from "../run.js"
import { describeMqttMatrix, type MqttCase } from "../mqtt-matrix.js"

/** A connected client recording what mqtt.js reports: CONNACK, granted QoS, messages. */
const client = async (hostPort: string, args: Record<string, string>, id: string, over: mqtt.IClientOptions = {}) => {
  const scheme = args.ws === "1" ? "ws" : args.ca !== undefined ? "mqtts" : "mqtt"
  const c = mqtt.connect(`${scheme}://${hostPort}${args.ws === "1" ? "/mqtt" : ""}`, {
    clientId: args.id ?? id,
    protocolVersion: 4,
    reconnectPeriod: 0,
    connectTimeout: 10_000,
    ...(args.user !== undefined ? { username: args.user, password: args.pass } : {}),
    ...(args.ca !== undefined ? { ca: readFileSync(args.ca) } : {}),
    ...over
  })
  // Listening before CONNACK: a resumed session's messages follow it in the same read.
  const received: Array<string> = []
  c.on("message", (topic, payload, packet) => received.push(`${topic}|${packet.qos}|${packet.retain}|${payload.toString()}`))
  const connack = await new Promise<mqtt.IConnackPacket>((resolve, reject) => {
    c.once("connect", resolve)
    c.once("error", (e) => {
      c.end(true)
      reject(e)
    })
  })
  return {
    c,
    sessionPresent: connack.sessionPresent,
    subscribe: async (topic: string, qos: 0 | 1 | 2) => (await c.subscribeAsync(topic, { qos })).map((g) => g.qos),
    messages: async (n: number) => {
      await eventually(() => received.length >= n, `${n} messages (have ${JSON.stringify(received)})`)
      return [...received].sort()
    }
  }
}

const cases: Record<MqttCase, (hostPort: string, args: Record<string, string>) => Promise<Json>> = {
  connect: async (hostPort, args) => {
    try {
      const { c } = await client(hostPort, args, "mqttjs-connect")
      await c.endAsync()
      return { connack: { failure: false, reason: "" } }
    } catch (e) {
      return { connack: { failure: true, reason: (e as Error).message, code: (e as { code?: number }).code } }
    }
  },
  qos: async (hostPort, args) => {
    const sub = await client(hostPort, args, "mqttjs-qos-sub")
    const pub = await client(hostPort, args, "mqttjs-qos-pub")
    const granted = await sub.subscribe("mx/qos/#", 2)
    const published: Array<number> = []
    for (const q of [0, 1, 2] as const) {
      await pub.c.publishAsync(`mx/qos/q${q}`, `hello ${q}`, { qos: q }) // resolves on PUBACK / PUBCOMP
      published.push(q)
    }
    const received = await sub.messages(3)
    await Promise.all([sub.c.endAsync(), pub.c.endAsync()])
    return { granted, published, received }
  },
  retained: async (hostPort, args) => {
    const pub = await client(hostPort, args, "mqttjs-ret-pub")
    await pub.c.publishAsync("mx/ret", "kept", { qos: 1, retain: true })
    await pub.c.endAsync()
    const sub = await client(hostPort, args, "mqttjs-ret-sub")
    const granted = await sub.subscribe("mx/ret", 1)
    const received = await sub.messages(1)
    await sub.c.endAsync()
    return { granted, received }
  },
  will: async (hostPort, args) => {
    const sub = await client(hostPort, args, "mqttjs-will-sub")
    await sub.subscribe("mx/will", 1)
    const dev = await client(hostPort, args, "mqttjs-will-dev", { will: { topic: "mx/will", payload: Buffer.from("gone"), qos: 1, retain: false } })
    dev.c.stream.destroy() // no DISCONNECT: the socket just closes
    dev.c.end(true)
    const received = await sub.messages(1)
    await sub.c.endAsync()
    return { received }
  },
  persist_subscribe: async (hostPort, args) => {
    const c = await client(hostPort, args, "unused", { clean: false })
    const granted = await c.subscribe("mx/persist", 1)
    await c.c.endAsync()
    return { granted }
  },
  publish: async (hostPort, args) => {
    const c = await client(hostPort, args, "mqttjs-publisher")
    await c.c.publishAsync(args.topic, args.payload, { qos: Number(args.qos) as 0 | 1 | 2 })
    await c.c.endAsync()
    return { published: true }
  },
  persist_resume: async (hostPort, args) => {
    const c = await client(hostPort, args, "unused", { clean: false })
    const received = await c.messages(1) // no SUBSCRIBE: the session kept it
    await c.c.endAsync()
    return { session_present: c.sessionPresent, received }
  }
}

describeMqttMatrix({
  name: "mqtt 5.16.0 (JavaScript, mqtt.js, protocol 3.1.1)",
  prepare: async () => {},
  run: (c, hostPort, args = {}) => cases[c](hostPort, args),
  websocket: true,
  reportsSessionPresent: true,
  notAuthorized: /^Connection refused: Not authorized$/
})
