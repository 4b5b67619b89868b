// mqtt-packet <-> the session machine's plain packets. Decoding maps field by field
// (the core's shapes follow mqtt-packet's names); encoding always speaks level 4.
import * as MqttPacket from "mqtt-packet"
import type { ClientPacket, ServerPacket } from "../../core/mqtt/index.js"

const EMPTY = new Uint8Array(0)

const bytesOf = (p: string | Buffer | undefined): Uint8Array =>
  p === undefined ? EMPTY : typeof p === "string" ? Buffer.from(p) : p

/** A decoded packet as the session takes it; undefined for packets 3.1.1 does not have (AUTH). */
export const toClientPacket = (p: MqttPacket.Packet): ClientPacket | undefined => {
  switch (p.cmd) {
    case "connect":
      return {
        cmd: "connect",
        protocolId: p.protocolId ?? "",
        protocolVersion: p.protocolVersion ?? 0,
        clean: p.clean ?? false,
        clientId: p.clientId ?? "",
        keepalive: p.keepalive ?? 0,
        username: p.username,
        password: p.password,
        will: p.will === undefined || p.will === null
          ? undefined
          : { topic: p.will.topic, payload: bytesOf(p.will.payload), qos: p.will.qos ?? 0, retain: p.will.retain ?? false }
      }
    case "publish":
      return {
        cmd: "publish",
        topic: p.topic,
        payload: bytesOf(p.payload),
        qos: p.qos,
        retain: p.retain,
        dup: p.dup,
        messageId: p.messageId
      }
    case "puback":
    case "pubrec":
    case "pubrel":
    case "pubcomp":
      return { cmd: p.cmd, messageId: p.messageId ?? 0 }
    case "subscribe":
      return {
        cmd: "subscribe",
        messageId: p.messageId ?? 0,
        subscriptions: p.subscriptions.map((s) => ({ topic: s.topic, qos: s.qos }))
      }
    case "unsubscribe":
      return { cmd: "unsubscribe", messageId: p.messageId ?? 0, unsubscriptions: p.unsubscriptions }
    case "pingreq":
    case "disconnect":
    case "connack":
    case "suback":
    case "unsuback":
    case "pingresp":
      return { cmd: p.cmd }
    default:
      return undefined
  }
}

const GENERATE_OPTS = { protocolVersion: 4 }

/** The wire bytes of a server packet (MQTT 3.1.1). */
export const encode = (p: ServerPacket): Buffer => {
  switch (p.cmd) {
    case "publish":
      return MqttPacket.generate(
        {
          cmd: "publish",
          topic: p.topic,
          payload: Buffer.from(p.payload.buffer, p.payload.byteOffset, p.payload.byteLength),
          qos: p.qos as MqttPacket.QoS,
          retain: p.retain,
          dup: p.dup,
          messageId: p.messageId
        },
        GENERATE_OPTS
      )
    case "suback":
      return MqttPacket.generate({ cmd: "suback", messageId: p.messageId, granted: [...p.granted] }, GENERATE_OPTS)
    default:
      return MqttPacket.generate(p as MqttPacket.Packet, GENERATE_OPTS)
  }
}
