// Servers joined by leaf-node connections, as real processes on loopback: a Switchyard
// process or a nats-server (2.9.10) from a configuration text in which `{client}`,
// `{http}` and `{leaf}` stand for ports picked once (free ones), so that a restart comes
// back on the same ports. Each can be asked for a monitoring endpoint and a nats.js client.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { expect } from "vitest"
import { freePort } from "../clients/run.js"
import { nodeAccess, type TestServerNode } from "./cluster-nodes.js"
import { eventuallyAsync } from "./jetstream.js"
import { type NatsServerProcess, spawnNatsServer } from "./nats-server.js"
import { killProcess, type ServerProcess, startServerProcess } from "./process.js"

export interface LeafServer extends TestServerNode {
  readonly leafPort: number
}

export type Implementation = "switchyard" | "nats-server"

const fill = (config: string, ports: { client: number; http: number; leaf: number }): string =>
  config.replaceAll("{client}", String(ports.client)).replaceAll("{http}", String(ports.http)).replaceAll("{leaf}", String(ports.leaf))

/** Starts one server of `impl` with `config` (its `{client}`, `{http}`, `{leaf}` placeholders filled with free ports). */
export const startLeafServer = async (impl: Implementation, name: string, config: string): Promise<LeafServer> => {
  const ports = { client: await freePort(), http: await freePort(), leaf: await freePort() }
  const text = `server_name: ${name}\nlisten: 127.0.0.1:${ports.client}\nhttp: 127.0.0.1:${ports.http}\n${fill(config, ports)}`
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "leaf-"))
  const file = path.join(dir, "server.conf")
  fs.writeFileSync(file, text)
  let sy: ServerProcess | undefined
  let ns: NatsServerProcess | undefined
  let before = ""
  const start = async () => {
    if (impl === "switchyard") sy = await startServerProcess(["-c", file])
    else ns = await spawnNatsServer(text)
  }
  const halt = async () => {
    before += (sy?.log() ?? ns?.log() ?? "") + "\n--- restart ---\n"
    if (sy !== undefined) await killProcess(sy)
    if (ns !== undefined) await ns.stop()
  }
  await start()
  const access = nodeAccess(ports)
  return {
    name,
    ...{ clientPort: ports.client, httpPort: ports.http, leafPort: ports.leaf },
    log: () => before + (sy?.log() ?? ns?.log() ?? ""),
    monitor: access.monitor,
    client: access.client,
    restart: async () => {
      await halt()
      await start()
    },
    stop: async () => {
      await access.closeClients()
      await halt()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** /leafz of a server. */
export const leafz = (s: LeafServer, q = "") => s.monitor<{ leafnodes: number; leafs: Array<Record<string, any>> }>(`/leafz${q}`)

/** Waits until `s` lists `n` leaf connections. */
export const leafsUp = (s: LeafServer, n: number, what = `${n} leaf connection(s) on ${s.name}`): Promise<void> =>
  eventuallyAsync(async () => (await leafz(s)).leafnodes === n, what, 30_000)

/** A hub, then a leaf whose configuration names the hub's leaf port; resolved once each lists the other's connection. */
export const startLeafPair = async (
  hub: { readonly impl: Implementation; readonly config: string },
  leaf: { readonly impl: Implementation; readonly config: (hubLeafPort: number) => string }
): Promise<{ hub: LeafServer; leaf: LeafServer }> => {
  const h = await startLeafServer(hub.impl, "HUB", hub.config)
  const l = await startLeafServer(leaf.impl, "EDGE", leaf.config(h.leafPort))
  await leafsUp(h, 1)
  await leafsUp(l, 1)
  return { hub: h, leaf: l }
}

/** Stops a pair (either may be missing when the start failed), the leaf first. */
export const stopLeafPair = async (p: { readonly hub?: LeafServer; readonly leaf?: LeafServer }): Promise<void> => {
  await p.leaf?.stop()
  await p.hub?.stop()
}

/**
 * Starts a leaf (`impl`, `config`) that `hub` must refuse, waits until `refused(leafLog,
 * hubLog since)` holds, checks that neither side counts the connection, and stops it.
 */
export const expectRefusedLeaf = async (
  hub: LeafServer,
  impl: Implementation,
  config: string,
  refused: (leafLog: string, hubLog: string) => boolean,
  what: string
): Promise<void> => {
  const before = hub.log().length
  const bad = await startLeafServer(impl, "BAD", config)
  try {
    await eventuallyAsync(async () => refused(bad.log(), hub.log().slice(before)), what, 20_000)
    expect((await leafz(bad)).leafnodes).toBe(0)
    expect((await leafz(hub)).leafnodes).toBe(1)
  } finally {
    await bad.stop()
  }
}
