// MQTT clients of cluster nodes in an e2e test file: configuration files in temporary
// directories (`{dir}` in the text names the directory) and mqtt.js clients, all closed
// and removed after the file.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import mqtt from "mqtt"
import { afterAll } from "vitest"
import type { TestServerNode } from "./cluster-nodes.js"
import { loggedPort } from "./process.js"

export const mqttUrl = (n: TestServerNode) => `mqtt://127.0.0.1:${loggedPort({ log: () => n.log() } as any, /Listening for MQTT clients on [^\s]+:(\d+)/)}`

export const useMqttClients = () => {
  const dirs: Array<string> = []
  const clients: Array<mqtt.MqttClient> = []
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.endAsync(true).catch(() => {})))
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
  })
  return {
    /** Server flags naming a configuration file with `text` (`{dir}`: its directory). */
    config: (text: string): Array<string> => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cluster-mqtt-"))
      dirs.push(dir)
      const file = path.join(dir, "server.conf")
      fs.writeFileSync(file, text.replaceAll("{dir}", dir))
      return ["-c", file]
    },
    /** A client connected to `n` (closed after the file). */
    connect: async (n: TestServerNode, clientId: string, opts: mqtt.IClientOptions = {}): Promise<mqtt.MqttClient> => {
      const c = await mqtt.connectAsync(mqttUrl(n), { clientId, reconnectPeriod: 0, ...opts })
      clients.push(c)
      return c
    },
    /** A client to close after the file. */
    track: (c: mqtt.MqttClient): void => void clients.push(c)
  }
}
