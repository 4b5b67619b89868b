// The MQTT client matrix: the same cases for every MQTT 3.1.1 library (paho-mqtt,
// mosquitto_pub/mosquitto_sub, mqtt.js), each run by the library itself against a real
// Switchyard and checked against what the library reported: CONNACK reason and session
// present, granted QoS, each message as "topic|qos|retain|payload".
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeTestCerts, serverTls, type TestCerts } from "../helpers/certs.js"
import { mqttOptions, type MqttServer, startMqttServer, websocketOptions, websocketPort } from "../helpers/mqtt.js"
import { authorization, userEntry } from "../helpers/server.js"
import { type Json, type RestartableServer, startRestartable } from "./run.js"

export type MqttCase = "connect" | "qos" | "retained" | "will" | "persist_subscribe" | "publish" | "persist_resume"

export interface MqttLibrary {
  readonly name: string
  prepare(): Promise<void>
  /** Run a case against `host:port`; args: ws=1, user, pass, ca, id, topic, payload, qos. */
  run(c: MqttCase, hostPort: string, args?: Record<string, string>): Promise<Json>
  readonly websocket: boolean
  /** Whether the library tells the CONNACK's session-present flag. */
  readonly reportsSessionPresent: boolean
  /** The library's words for a CONNACK with return code 5. */
  readonly notAuthorized: string | RegExp
  cleanup?(): void
}

export const describeMqttMatrix = (lib: MqttLibrary): void => {
  describe(`MQTT client matrix: ${lib.name}`, () => {
    let rs: RestartableServer
    let storeDir: string
    let users: MqttServer
    let tls: MqttServer
    let certs: TestCerts
    const tcp = () => `127.0.0.1:${rs.srv.serving.mqtt!.port}`

    beforeAll(async () => {
      await lib.prepare()
      storeDir = mkdtempSync(join(tmpdir(), "switchyard-mqtt-matrix-"))
      rs = await startRestartable((ports) => ({
        mqtt: mqttOptions({ port: ports.mqtt }),
        websocket: websocketOptions(),
        jetstream: { storeDir, maxMemory: -1, maxStorage: -1 }
      }))
      certs = makeTestCerts()
      users = await startMqttServer({ authorization: authorization({ users: [userEntry("alice", "alice-secret")] }) })
      tls = await startMqttServer({ mqtt: mqttOptions({ tls: serverTls(certs) }) })
    })
    afterAll(async () => {
      await Promise.all([rs?.close(), users?.close(), tls?.close()])
      certs?.remove()
      if (storeDir !== undefined) rmSync(storeDir, { recursive: true, force: true })
      lib.cleanup?.()
    })

    const qosRoundTrip = {
      granted: [2],
      published: [0, 1, 2],
      received: ["mx/qos/q0|0|false|hello 0", "mx/qos/q1|1|false|hello 1", "mx/qos/q2|2|false|hello 2"]
    }

    it("publishes and receives at QoS 0, 1 and 2 through a # subscription granted QoS 2", async () => {
      expect(await lib.run("qos", tcp())).toEqual(qosRoundTrip)
    })

    it("keeps a retained message for a later subscriber, flagged retained", async () => {
      expect(await lib.run("retained", tcp())).toEqual({ granted: [1], received: ["mx/ret|1|true|kept"] })
    })

    it("publishes the will of a client that vanishes without DISCONNECT", async () => {
      expect(await lib.run("will", tcp())).toEqual({ received: ["mx/will|1|false|gone"] })
    })

    it("keeps a persistent session and the QoS 1 message queued for it across a server restart", async () => {
      const id = `persist-${lib.name.replace(/\W+/g, "-")}`
      expect(await lib.run("persist_subscribe", tcp(), { id })).toMatchObject({ granted: [1] })
      expect(await lib.run("publish", tcp(), { topic: "mx/persist", payload: "while away", qos: "1" })).toEqual({ published: true })
      await rs.restart()
      const resumed = await lib.run("persist_resume", tcp(), { id })
      expect(resumed.received).toEqual(["mx/persist|1|false|while away"])
      if (lib.reportsSessionPresent) expect(resumed.session_present).toBe(true)
    })

    if (lib.websocket) {
      it("works the same over WebSocket (/mqtt, subprotocol mqtt)", async () => {
        expect(await lib.run("qos", `127.0.0.1:${websocketPort(rs.srv)}`, { ws: "1" })).toEqual(qosRoundTrip)
      })
    }

    it("is accepted with the right user name and password, refused with CONNACK 5 (not authorized) with a wrong one", async () => {
      const port = `127.0.0.1:${users.mqttPort}`
      expect((await lib.run("connect", port, { user: "alice", pass: "alice-secret", id: "auth-ok" })).connack).toMatchObject({ failure: false })
      const refused = (await lib.run("connect", port, { user: "alice", pass: "wrong", id: "auth-bad" })).connack
      expect(refused.failure).toBe(true)
      expect(refused.reason).toMatch(lib.notAuthorized)
    })

    it("connects over TLS (mqtts), verifying the server's certificate with the CA", async () => {
      expect((await lib.run("connect", `127.0.0.1:${tls.mqttPort}`, { ca: certs.caFile, id: "tls-ok" })).connack).toMatchObject({ failure: false })
    })
  })
}
