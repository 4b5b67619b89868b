// The secrets sweep for MQTT clients: passwords and tokens sent in MQTT CONNECT
// (accepted, refused, of clients still connected and of clients gone) never appear
// in any monitoring body or header, nor in the log at trace level.
import { describe, expect, it } from "vitest"
import mqtt from "mqtt"
import { account, authorization, BadRequests, expectNoLeaks, request, startMonitoredServer, sweepRequests, userEntry } from "../helpers/monitor.js"
import { eventually, mqttOptions } from "../helpers/mqtt.js"

const S = {
  alicePw: "Sntl-mqtt-alice-4f1e2d3c",
  bobPw: "Sntl-mqtt-bob-8a7b6c5d",
  wrongPw: "Sntl-mqtt-wrong-0e9f8a7b",
  token: "Sntl-mqtt-token-1c2d3e4f"
} as const

describe("no MQTT password or token ever leaves", () => {
  it("every endpoint, every parameter, every header, every log line at trace level", async () => {
    const srv = await startMonitoredServer({
      mqtt: mqttOptions(),
      log: { debug: true, trace: true, logtime: false, logFile: undefined },
      accounts: [account("ACME", [userEntry("bob", S.bobPw)])],
      authorization: authorization({ users: [userEntry("alice", S.alicePw)] })
    })
    const url = `mqtt://127.0.0.1:${srv.serving.mqtt!.port}`
    const open: Array<mqtt.MqttClient> = []
    const leaks = (text: string) => Object.values(S).filter((s) => text.includes(s))
    try {
      const alice = await mqtt.connectAsync(url, { clientId: "alice-dev", username: "alice", password: S.alicePw, reconnectPeriod: 0 })
      await alice.subscribeAsync("alice/in", { qos: 1 })
      open.push(alice)
      // bob publishes and leaves: his connection sits in the closed ring.
      const bob = await mqtt.connectAsync(url, { clientId: "bob-dev", username: "bob", password: S.bobPw, reconnectPeriod: 0 })
      await bob.publishAsync("acme/x", "hello", { qos: 1 })
      await bob.endAsync()
      // Refused: a wrong password, and a token sent as the password.
      for (const opts of [{ username: "alice", password: S.wrongPw }, { username: "device", password: S.token }]) {
        await expect(mqtt.connectAsync(url, { clientId: "refused", reconnectPeriod: 0, ...opts })).rejects.toThrow()
      }
      await eventually(() => srv.serving.server.closed.toArray().filter((c) => c.type === "mqtt").length >= 3, "the MQTT connections in the closed ring")
      const ring = srv.serving.server.closed.toArray()
      const connz = JSON.parse((await request(`${srv.base}/connz?auth=true&mqtt_client=alice-dev`)).body)
      expect(connz.connections[0].authorized_user).toBe("alice")
      const requests = [
        ...sweepRequests({ cid: connz.connections[0].cid, closedCid: ring[0].cid, user: "bob", acc: "ACME", subject: "alice.in", pattern: ">" }),
        ...ring.map((c) => `/connz?cid=${c.cid}&state=closed&auth=true&subs=detail`),
        "/connz?state=all&auth=true&subs=detail&mqtt_client=bob-dev",
        ...BadRequests.map(([path]) => path)
      ]
      await expectNoLeaks(srv.base, requests, leaks)
    } finally {
      await Promise.all(open.map((c) => c.endAsync(true).catch(() => {})))
      await srv.close()
    }
    const log = srv.lines.join("")
    expect(leaks(log)).toEqual([])
  })
})
