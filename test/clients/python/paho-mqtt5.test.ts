// paho-mqtt 2.x (pip, pinned by .ci/run) speaking MQTT 5.0 (protocol=MQTTv5) to a listener
// with `protocol_versions: [4, 5]`: test/clients/python/paho5_client.py runs each case
// and prints what the library reported (reason codes, CONNACK properties, messages).
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { mqttOptions, type MqttServer, startMqttServer } from "../../helpers/mqtt.js"
import { authorization, limitedUser } from "../../helpers/server.js"
import { INSTALL, pipVersion, requireInstalled, runCase } from "../run.js"

const script = fileURLToPath(new URL("paho5_client.py", import.meta.url))
const VERSION = "2.1.0"


describe(`MQTT 5.0 with paho-mqtt ${VERSION} (Python, MQTTv5)`, () => {
  let srv: MqttServer
  const run = (c: string, args: Record<string, string> = { user: "admin", pass: "admin-pw" }) =>
    runCase(["python3", script], c, `127.0.0.1:${srv.mqttPort}`, args)

  beforeAll(async () => {
    requireInstalled(`paho-mqtt ${VERSION}`, () => pipVersion("paho-mqtt") === VERSION, INSTALL.python)
    srv = await startMqttServer({
      mqtt: mqttOptions({ protocolVersions: [4, 5] }),
      authorization: authorization({ users: [limitedUser("admin"), limitedUser("guest", ["public.>"], ["public.>"])] })
    })
  })
  afterAll(async () => {
    await srv?.close()
  })

  it("connects (assigned id, the server's limits), round-trips QoS 0/1/2, and reads SUBACK/UNSUBACK reason codes", async () => {
    const r = await run("session")
    expect(r.connack).toMatchObject({
      reason: 0,
      session_present: false,
      properties: { MaximumPacketSize: srv.serving.mqtt!.maxPacketBytes }
    })
    expect(r.connack.properties.AssignedClientIdentifier).toMatch(/^[0-9A-Za-z]{22}$/)
    expect(r.connack.properties.TopicAliasMaximum).toBe(10)
    expect(r.connack.properties.SubscriptionIdentifierAvailable).toBeUndefined() // available: the default
    expect(r.granted).toEqual([2, 1]) // mx5/# and $share/g/mx5/x
    expect(r.acks).toEqual([0, 0, 0])
    // once each, though both subscriptions match (one session, one delivery)
    expect(r.received).toEqual(["mx5/q0|0|hello 0", "mx5/q1|1|hello 1", "mx5/q2|2|hello 2"])
    expect(r.unsubscribed).toEqual([0x00, 0x11])
  })

  it("gets PUBACK 0x87 for a PUBLISH its user may not make; at QoS 2, PUBREC 0x87 ends the exchange", async () => {
    // paho still sends PUBREL after a failed PUBREC (the standard says it must not, 4.3.3);
    // the server holds no such exchange and answers PUBCOMP 0x92, which paho reports. The
    // allowed PUBLISH reaches nobody: PUBACK 0x10 No matching subscribers, as paho reports it.
    expect(await run("refused", { user: "guest", pass: "guest-pw" })).toEqual({ acks: [0x87, 0x92, 0x10] })
  })

  it("is told 0x8E when another connection takes its client id", async () => {
    expect(await run("takeover")).toEqual({ disconnected: 0x8e })
  })
})
