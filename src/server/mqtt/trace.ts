// MQTT's part of the protocol trace (`-V`) and of the connection log, in nats-server's
// shape: `ip:port - mid:N - "client id" - <<- [PUBLISH "a/b" qos=1 pi=7 size=5]`.
// Callers check the bridge's `tracing` flag first, so a trace costs nothing when off.
import { type ClientPacket, describePacket, describePublish, type ServerPacket } from "../../core/mqtt/index.js"
import type { LogService } from "../../services/log.js"
import { type MqttConnection, mqttLogPrefix } from "./connection.js"

export const traceMqttIn = (log: LogService, c: MqttConnection, p: ClientPacket): void =>
  log.trace(`${mqttLogPrefix(c)} - <<- [${describePacket(p)}]`)

export const traceMqttOut = (log: LogService, c: MqttConnection, p: ServerPacket): void =>
  log.trace(`${mqttLogPrefix(c)} - ->> [${describePacket(p)}]`)

/** A QoS 0 PUBLISH written on the delivery fast path (no packet object exists). */
export const traceMqttOutQos0 = (log: LogService, c: MqttConnection, topic: string, size: number): void =>
  log.trace(`${mqttLogPrefix(c)} - ->> [${describePublish(topic, 0, undefined, false, false, size)}]`)
