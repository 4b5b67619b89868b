// QoS 1 redelivery runs on Effect's Clock: under TestClock an unacknowledged PUBLISH is
// sent again with DUP set once ack_wait has passed, and not before [MQTT-4.4.0-1].
// The subscriber is a raw socket so nothing acknowledges behind the test's back.
import * as net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import * as MqttPacket from "mqtt-packet"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { serve } from "../../src/server/serve.js"
import { connectMqtt, eventually, mqttOptions } from "../helpers/mqtt.js"
import { testOptions } from "../helpers/server.js"

/** A raw MQTT client: writes generated packets, records every decoded packet it receives. */
const rawMqtt = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<{ socket: net.Socket; packets: Array<MqttPacket.Packet> }>((resolve) => {
          const packets: Array<MqttPacket.Packet> = []
          const parser = MqttPacket.parser({ protocolVersion: 4 })
          parser.on("packet", (p) => packets.push(p))
          const socket = net.connect({ host: "127.0.0.1", port }, () => resolve({ socket, packets }))
          socket.on("data", (d) => parser.parse(d))
          socket.on("error", () => {})
        })
    ),
    ({ socket }) => Effect.sync(() => socket.destroy())
  )

const send = (socket: net.Socket, p: MqttPacket.Packet) => socket.write(MqttPacket.generate(p, { protocolVersion: 4 }))

describe("QoS 1 redelivery under TestClock", () => {
  it.scoped("resends an unacknowledged QoS 1 PUBLISH with DUP after ack_wait, and stops after PUBACK", () =>
    Effect.gen(function*() {
      const running = yield* serve(testOptions({ mqtt: mqttOptions({ ackWaitMs: 30_000 }) })).pipe(
        Effect.provide(Layer.merge(layerNode, layerMemoryLog([])))
      )
      const port = running.mqtt!.port
      const { socket, packets } = yield* rawMqtt(port)
      const count = (pred: (p: MqttPacket.Packet) => boolean) => packets.filter(pred).length
      const wait = (pred: (p: MqttPacket.Packet) => boolean, n: number, what: string) =>
        Effect.promise(() => eventually(() => count(pred) >= n, `${what} (have ${JSON.stringify(packets.map((p) => p.cmd))})`))

      send(socket, { cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: true, clientId: "raw-sub", keepalive: 0 })
      yield* wait((p) => p.cmd === "connack", 1, "CONNACK")
      send(socket, { cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "redeliver/x", qos: 1 }] })
      yield* wait((p) => p.cmd === "suback", 1, "SUBACK")

      const pub = yield* Effect.acquireRelease(
        Effect.promise(() => connectMqtt(`mqtt://127.0.0.1:${port}`, { clientId: "raw-pub", keepalive: 0 })),
        (c) => Effect.sync(() => c.client.end(true))
      )
      yield* Effect.promise(() => pub.client.publishAsync("redeliver/x", "once", { qos: 1 }))
      const isPublish = (p: MqttPacket.Packet): p is MqttPacket.IPublishPacket => p.cmd === "publish"
      yield* wait(isPublish, 1, "the first PUBLISH")
      const first = packets.find(isPublish)!
      expect([first.qos, first.dup, first.payload.toString()]).toEqual([1, false, "once"])

      // A PINGREQ round trip: anything the server wrote before its PINGRESP has arrived.
      const roundTrip = (n: number) => {
        send(socket, { cmd: "pingreq" })
        return wait((p) => p.cmd === "pingresp", n, "PINGRESP")
      }
      yield* TestClock.adjust("29 seconds")
      yield* roundTrip(1)
      expect(count(isPublish)).toBe(1)

      yield* TestClock.adjust("2 seconds")
      yield* wait(isPublish, 2, "the redelivered PUBLISH")
      const again = packets.filter(isPublish)[1]!
      expect([again.messageId, again.dup, again.payload.toString()]).toEqual([first.messageId, true, "once"])

      // Acknowledged: nothing more is due.
      send(socket, { cmd: "puback", messageId: first.messageId! })
      const session = running.mqtt!.connectedClient("raw-sub")!.session
      yield* Effect.promise(() => eventually(() => session.inflightCount === 0, "the PUBACK to be processed"))
      yield* TestClock.adjust("120 seconds")
      yield* roundTrip(2)
      expect(count(isPublish)).toBe(2)
    }))
})
