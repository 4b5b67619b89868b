// MQTT QoS 1 under SIGKILL: a real server process with streams takes acknowledged
// QoS 1 publishes for a persistent subscriber that is away, and is killed at varying
// points; after each restart the subscriber resumes its session and receives every
// message that got a PUBACK (at least once, as QoS 1 promises).
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import mqtt from "mqtt"
import { afterAll, describe, expect, it } from "vitest"
import { killProcess, loggedPort, type ServerProcess, startServerProcess } from "../helpers/process.js"
import { eventually } from "../helpers/server.js"

interface Running {
  readonly proc: ServerProcess
  readonly mqttPort: number
}

const startServer = async (storeDir: string): Promise<Running> => {
  const proc = await startServerProcess(["-a", "127.0.0.1", "-p", "-1", "--mqtt_port", "-1", "-js", "-sd", storeDir])
  return { proc, mqttPort: loggedPort(proc, /Listening for MQTT clients on [^\s]*:(\d+)/) }
}

const kill = (r: Running): Promise<void> => killProcess(r.proc)

const connectClient = async (port: number, clientId: string, clean: boolean, onMessage?: (payload: string) => void): Promise<mqtt.MqttClient> => {
  const c = mqtt.connect(`mqtt://127.0.0.1:${port}`, { clientId, clean, reconnectPeriod: 0, connectTimeout: 20_000 })
  c.on("error", () => {}) // the server is killed under it
  if (onMessage !== undefined) c.on("message", (_t, p) => onMessage(p.toString()))
  await new Promise<void>((res, rej) => {
    c.once("connect", () => res())
    c.once("close", () => rej(new Error(`${clientId} could not connect`)))
  })
  return c
}

describe("MQTT QoS 1 survives SIGKILL", () => {
  const storeDir = mkdtempSync(join(tmpdir(), "switchyard-mqtt-crash-"))
  let current: Running | undefined
  afterAll(async () => {
    if (current !== undefined) await kill(current)
    rmSync(storeDir, { recursive: true, force: true })
  })

  it("delivers every PUBACKed message to a persistent subscriber across repeated kills", async () => {
    const acked = new Set<number>()
    const received = new Set<number>()
    const onMessage = (p: string) => received.add(Number(p))
    let next = 0
    current = await startServer(storeDir)
    const first = await connectClient(current.mqttPort, "crash-sink", false, onMessage)
    await first.subscribeAsync("crash/+", { qos: 1 })
    await first.endAsync()
    for (const target of [37, 151, 90, 263]) {
      const pub = await connectClient(current.mqttPort, "crash-pub", true)
      let ackedThisRound = 0
      let killing = false
      const inFlight = new Set<Promise<void>>()
      while (!killing) {
        while (inFlight.size < 32 && !killing) {
          const i = next++
          const p = pub.publishAsync(`crash/${i % 3}`, String(i), { qos: 1 }).then(
            () => {
              acked.add(i)
              if (++ackedThisRound >= target) killing = true
            },
            () => {} // in flight when the process died: no promise was made
          )
          const tracked = p.finally(() => inFlight.delete(tracked))
          inFlight.add(tracked)
        }
        await Promise.race(inFlight)
      }
      await kill(current)
      pub.end(true)
      await Promise.allSettled([...inFlight])
      current = await startServer(storeDir)
      // The subscriber comes back for what it was owed, then goes away again.
      const sink = await connectClient(current.mqttPort, "crash-sink", false, onMessage)
      await eventually(() => [...acked].every((i) => received.has(i)), `every acknowledged message at the subscriber (${[...acked].filter((i) => !received.has(i)).length} missing)`, 30_000)
      await sink.endAsync()
    }
    expect(acked.size).toBeGreaterThan(37 + 151 + 90 + 263 - 1)
  })
})
