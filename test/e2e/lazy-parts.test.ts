// What loads only when the configuration uses it (src/server/parts.ts): routes, leaf
// nodes, monitoring, the WebSocket support and bcrypt are chunks of the bundle of their
// own. Proved on the bundle itself (dist/switchyard): a server with NATS, JetStream and
// MQTT runs from the files it loads at start alone, every other file deleted; a
// configuration that needs a part whose file is missing stops at once with an error
// naming it; with every part configured, each serves.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import bcrypt from "bcryptjs"
import { afterEach, describe, expect, it } from "vitest"
import { connect, type NatsConnection, StringCodec } from "nats"
import { eventuallyAsync } from "../helpers/jetstream.js"
import { type LeafServer, leafsUp, startLeafServer } from "../helpers/leaf-nodes.js"
import { connectMqtt, type TestMqttClient } from "../helpers/mqtt.js"
import { killProcess, loggedPort, type ServerProcess, startServerProcess } from "../helpers/process.js"
import { eventually } from "../helpers/server.js"
import { useTempDirs } from "../helpers/tmp.js"

const dist = path.resolve("dist/switchyard")
const tmp = useTempDirs("sy-lazy-")
const sc = StringCodec()

const started: Array<ServerProcess> = []
const leafServers: Array<LeafServer> = []
const conns: Array<NatsConnection> = []
const mqttClients: Array<TestMqttClient> = []
afterEach(async () => {
  await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
  await Promise.all(mqttClients.splice(0).map((m) => m.client.endAsync().catch(() => {})))
  for (const p of started.splice(0)) await killProcess(p)
  for (const s of leafServers.splice(0)) await s.stop()
})

/**
 * The files main.js loads whatever the configuration: its static imports, the program
 * and server chunks it always loads (dynamic imports of `program-*` and `entry-*`), and
 * theirs, read from the bundle's own import statements.
 */
const loadedAtStart = (): Set<string> => {
  const seen = new Set<string>()
  const visit = (file: string): void => {
    if (seen.has(file)) return
    seen.add(file)
    const src = fs.readFileSync(path.join(dist, file), "utf8")
    for (const m of src.matchAll(/\b(?:from|import)\s*"\.\/([\w-]+\.js)"/g)) visit(m[1])
    for (const m of src.matchAll(/\bimport\(\s*"\.\/((?:program|entry)-\w+\.js)"\s*\)/g)) visit(m[1])
  }
  visit("main.js")
  return seen
}

/** The source files a chunk was built from (its linked source map), relative to the repository. */
const sourcesOf = (file: string): Array<string> =>
  (JSON.parse(fs.readFileSync(path.join(dist, `${file}.map`), "utf8")) as { sources: Array<string> }).sources.map((s) =>
    s.replace(/^(\.\.\/)+/, "")
  )

const bundleFiles = () => fs.readdirSync(dist).filter((f) => f.endsWith(".js"))

/** Each part: its chunk's name, what it is built from, and what of it must never load at start. */
const PARTS = {
  cluster: { chunk: /^cluster-\w+\.js$/, holds: ["src/server/cluster/cluster.ts", "src/server/cluster/route.ts"], never: ["src/server/cluster/"] },
  "leaf node": {
    chunk: /^leafnodes-\w+\.js$/,
    holds: ["src/server/leafnodes/leafnodes.ts", "src/server/leafnodes/leaf.ts"],
    never: ["src/server/leafnodes/leaf", "src/server/leafnodes/solicit"]
  },
  monitoring: {
    chunk: /^monitoring-\w+\.js$/,
    holds: ["src/server/monitor/http.ts", "src/server/monitor-source.ts", "src/core/monitor/varz.ts", "src/schema/monitor/connz.ts"],
    never: ["src/server/monitor/", "src/server/monitor-source.ts", "src/core/monitor/", "src/schema/monitor"]
  },
  WebSocket: {
    chunk: /^websocket-node-\w+\.js$/,
    holds: ["src/services/websocket-node.ts", "node_modules/ws/lib/websocket.js"],
    never: ["src/services/websocket-node.ts", "node_modules/ws/"]
  },
  bcrypt: { chunk: /^bcryptjs-\w+\.js$/, holds: ["node_modules/bcryptjs/index.js"], never: ["node_modules/bcryptjs/"] }
} as const

/** A copy of the bundle without the files `drop` matches. */
const bundleWithout = (drop: (file: string) => boolean): string => {
  const dir = tmp()
  for (const f of fs.readdirSync(dist)) if (!drop(f.replace(/\.map$/, ""))) fs.copyFileSync(path.join(dist, f), path.join(dir, f))
  return path.join(dir, "main.js")
}

/** A configuration file (loopback, a free port) with `text`; writeConf replaces its text. */
const confFile = (text: string): string => {
  const file = path.join(tmp(), "switchyard.conf")
  writeConf(file, text)
  return file
}
const writeConf = (file: string, text: string) => fs.writeFileSync(file, `host: 127.0.0.1\nport: -1\n${text}\n`)

const natsAs = async (port: number, user?: string, pass?: string): Promise<NatsConnection> => {
  const nc = await connect({ servers: `127.0.0.1:${port}`, user, pass, reconnect: false })
  conns.push(nc)
  return nc
}

const roundTrip = async (sub: NatsConnection, pub: NatsConnection, subject: string): Promise<string> => {
  const s = sub.subscribe(subject, { max: 1 })
  await sub.flush()
  pub.publish(subject, sc.encode("through"))
  for await (const m of s) return sc.decode(m.data)
  return ""
}

describe("the bundle", () => {
  it("loads none of the optional parts at start, and keeps each in a chunk of its own", () => {
    const atStart = [...loadedAtStart()]
    const loaded = atStart.flatMap(sourcesOf)
    // Not vacuous: the server itself is among them.
    expect(loaded).toContain("src/server/serve.ts")
    expect(loaded).toContain("src/server/mqtt/bridge.ts")
    for (const [part, p] of Object.entries(PARTS)) {
      expect([part, loaded.filter((s) => p.never.some((n) => s.startsWith(n)))]).toEqual([part, []])
      const chunk = bundleFiles().filter((f) => p.chunk.test(f))
      expect([part, chunk.length]).toEqual([part, 1])
      expect(atStart).not.toContain(chunk[0])
      expect(sourcesOf(chunk[0])).toEqual(expect.arrayContaining([...p.holds]))
    }
  })

  it("serves NATS, JetStream and MQTT from the files loaded at start alone", async () => {
    const atStart = loadedAtStart()
    const main = bundleWithout((f) => !atStart.has(f))
    const s = await startServerProcess(["-a", "127.0.0.1", "-p", "-1", "--mqtt_port", "-1", "-js", "-sd", tmp()], { main })
    started.push(s)
    const port = loggedPort(s, /client connections on [^ ]*:(\d+)/)
    const mqttPort = loggedPort(s, /MQTT clients on [^ ]*:(\d+)/)
    const nc = await natsAs(port)
    expect(await roundTrip(nc, nc, "lazy.core")).toBe("through")
    const created = JSON.parse(sc.decode((await nc.request("$JS.API.STREAM.CREATE.LAZY", sc.encode(JSON.stringify({ name: "LAZY", subjects: ["lazy.js.>"] })))).data))
    expect(created.config?.name).toBe("LAZY")
    const ack = JSON.parse(sc.decode((await nc.request("lazy.js.one", sc.encode("kept"))).data))
    expect(ack).toMatchObject({ stream: "LAZY", seq: 1 })
    const m = await connectMqtt(`mqtt://127.0.0.1:${mqttPort}`, { clientId: "lazy" })
    mqttClients.push(m)
    await m.client.subscribeAsync("lazy/mqtt", { qos: 1 })
    await m.client.publishAsync("lazy/mqtt", "bridged", { qos: 1 })
    await eventually(() => m.received.some((r) => r.topic === "lazy/mqtt"), "the MQTT message")
  })

  const hash = bcrypt.hashSync("secret", 4)
  it.each([
    ["monitoring", `http: "127.0.0.1:-1"`, /^switchyard: Could not load the monitoring support: /m],
    ["cluster", `cluster { name: c, listen: "127.0.0.1:-1" }`, /^switchyard: Could not load the cluster support: /m],
    ["leaf node", `leafnodes { listen: "127.0.0.1:-1" }`, /^switchyard: Could not load the leaf node support: /m],
    ["WebSocket", `mqtt { listen: "127.0.0.1:-1" }\nwebsocket { listen: "127.0.0.1:-1", no_tls: true }`, /^switchyard: websocket cannot load the WebSocket support: /m],
    ["WebSocket", `leafnodes { remotes: [ { url: "ws://127.0.0.1:1" } ] }`, /^switchyard: cannot load the WebSocket support: /m],
    ["bcrypt", `authorization { users: [ { user: a, password: "${hash}" } ] }`, /^switchyard: Could not load the bcrypt support: /m]
  ] as const)("stops at start with an error naming the %s part when its chunk is missing (%s)", (part, block, error) => {
    const main = bundleWithout((f) => PARTS[part].chunk.test(f))
    const r = spawnSync(process.execPath, [main, "-c", confFile(block)], { encoding: "utf8", timeout: 30_000 })
    expect([r.status, r.stderr]).toEqual([1, expect.stringMatching(error)])
  })

  it("with every part configured, serves each: monitoring, routes, leaf nodes over WebSocket, MQTT over WebSocket, bcrypt users", async () => {
    const hub = await startLeafServer(
      "switchyard",
      "HUB",
      `accounts { ACC { users: [ { user: a, password: "${hash}" } ] } }
mqtt { listen: "127.0.0.1:-1" }
websocket { listen: "127.0.0.1:-1", no_tls: true }
cluster { name: lazy, listen: "127.0.0.1:-1" }
leafnodes { listen: 127.0.0.1:{leaf}, authorization { users: [ { user: leaf, password: "${hash}", account: ACC } ] } }`
    )
    leafServers.push(hub)
    const wsPort = Number(/websocket clients on ws:\/\/[^ ]*:(\d+)/.exec(hub.log())?.[1])
    const edge = await startLeafServer(
      "switchyard",
      "EDGE",
      `accounts { EDGE { users: [ { user: a, password: a } ] } }
leafnodes { remotes: [ { url: "ws://leaf:secret@127.0.0.1:${wsPort}", account: EDGE } ] }`
    )
    leafServers.push(edge)
    await leafsUp(hub, 1)
    const routez = await hub.monitor<{ num_routes: number }>("/routez")
    expect(routez.num_routes).toBe(0)
    const h = await natsAs(hub.clientPort, "a", "secret")
    const e = await natsAs(edge.clientPort, "a", "a")
    h.subscribe("from.edge", { callback: (_e, m) => m.respond(sc.encode(`hub got ${sc.decode(m.data)}`)) })
    await h.flush()
    // The hub's interest reaches the edge over the leaf connection: a request is answered through it.
    const answered = async () => {
      try {
        return sc.decode((await e.request("from.edge", sc.encode("hi"), { timeout: 1000 })).data) === "hub got hi"
      } catch {
        return false
      }
    }
    await eventuallyAsync(answered, "an answer over the leaf connection", 20_000)
    await expect(natsAs(hub.clientPort, "a", "wrong")).rejects.toThrow(/Authorization/i)
    const m = await connectMqtt(`ws://127.0.0.1:${wsPort}/mqtt`, { clientId: "lazy-ws", username: "a", password: "secret" })
    mqttClients.push(m)
    await m.client.subscribeAsync("over/ws", { qos: 0 })
    await m.client.publishAsync("over/ws", "mqtt", { qos: 0 })
    await eventually(() => m.received.some((r) => r.topic === "over/ws"), "the MQTT message over WebSocket")
  }, 60_000)
})

describe("SIGHUP", () => {
  /** The reload is over, applied or refused. */
  const reloaded = (s: ServerProcess) => () => /Reloading server configuration \(SIGHUP\)[^]*(reload failed|Reloaded server configuration)/.test(s.log())

  it("loads bcrypt with the reload that brings the first hash", async () => {
    const file = confFile(`authorization { users: [ { user: a, password: plain } ] }`)
    const s = await startServerProcess(["-c", file])
    started.push(s)
    const port = loggedPort(s, /client connections on [^ ]*:(\d+)/)
    await natsAs(port, "a", "plain")
    writeConf(file, `authorization { users: [ { user: a, password: plain }, { user: b, password: "${bcrypt.hashSync("hashed", 4)}" } ] }`)
    s.child.kill("SIGHUP")
    await eventually(reloaded(s), "the reload")
    expect(s.log()).toContain("Reloaded: authorization")
    await natsAs(port, "b", "hashed")
    await expect(natsAs(port, "b", "plain")).rejects.toThrow(/Authorization/i)
  })

  it("refuses a reload that needs bcrypt when it cannot be loaded, and keeps the configuration it had", async () => {
    const main = bundleWithout((f) => PARTS.bcrypt.chunk.test(f))
    const file = confFile(`authorization { users: [ { user: a, password: plain } ] }`)
    const s = await startServerProcess(["-c", file], { main })
    started.push(s)
    const port = loggedPort(s, /client connections on [^ ]*:(\d+)/)
    writeConf(file, `authorization { users: [ { user: b, password: "${bcrypt.hashSync("hashed", 4)}" } ] }`)
    s.child.kill("SIGHUP")
    await eventually(reloaded(s), "the reload")
    expect(s.log()).toMatch(/\[ERR\] Configuration reload failed: Could not load the bcrypt support: .*; the running configuration is unchanged/)
    await natsAs(port, "a", "plain")
    await expect(natsAs(port, "b", "hashed")).rejects.toThrow(/Authorization/i)
  })
})
