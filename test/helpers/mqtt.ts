// End-to-end MQTT tests: `serve()` with the MQTT listener on an ephemeral port (and
// NATS and monitoring ones), the real `mqtt` npm client, and a message collector
// that waits for events with generous bounds instead of sleeping.
import mqtt from "mqtt"
import type { MqttOptions, ServerOptions, WebsocketOptions } from "../../src/config/options.js"
import { type MonitoredServer, startMonitoredServer } from "./monitor.js"
import { eventually } from "./server.js"

export const mqttOptions = (over: Partial<MqttOptions> = {}): MqttOptions => ({
  host: "127.0.0.1",
  port: 0,
  ackWaitMs: 30_000,
  maxAckPending: 1024,
  maxTopicLevels: 200,
  maxQueuedMessages: 65_536,
  maxQueuedBytes: 1024 * 1024 * 1024,
  tls: undefined,
  authorization: undefined,
  noAuthUser: undefined,
  ...over
})

export interface MqttServer extends MonitoredServer {
  readonly mqttPort: number
  readonly mqttUrl: string
}

export const startMqttServer = async (over: Partial<ServerOptions> = {}): Promise<MqttServer> => {
  const srv = await startMonitoredServer({ mqtt: mqttOptions(), ...over })
  const mqttPort = srv.serving.mqtt!.port
  return { ...srv, mqttPort, mqttUrl: `mqtt://127.0.0.1:${mqttPort}` }
}

export interface Received {
  readonly topic: string
  readonly payload: string
  readonly qos: number
  readonly retain: boolean
  readonly dup: boolean
}

/** A connected mqtt.js client that records every PUBLISH it receives. */
export interface TestMqttClient {
  readonly client: mqtt.MqttClient
  readonly received: Array<Received>
  /** Wait until `n` messages matching `pred` arrived; returns them. */
  waitFor(pred: (m: Received) => boolean, n?: number, what?: string): Promise<Array<Received>>
}

export const connectMqtt = async (
  url: string,
  opts: mqtt.IClientOptions & { clientId: string }
): Promise<TestMqttClient> => {
  const client = await mqtt.connectAsync(url, { reconnectPeriod: 0, connectTimeout: 10_000, ...opts })
  return collect(client)
}

export const collect = (client: mqtt.MqttClient): TestMqttClient => {
  const received: Array<Received> = []
  client.on("message", (topic, payload, packet) => {
    received.push({ topic, payload: payload.toString(), qos: packet.qos, retain: packet.retain, dup: packet.dup })
  })
  return {
    client,
    received,
    waitFor: async (pred, n = 1, what = "MQTT messages") => {
      await eventually(() => received.filter(pred).length >= n, `${what} (have ${JSON.stringify(received)})`)
      return received.filter(pred)
    }
  }
}

/** Wait for the client's socket to be closed by the server. */
export const waitClosed = (client: mqtt.MqttClient): Promise<void> =>
  eventually(() => !client.connected, "the MQTT connection to close")

export { eventually }

/** A `websocket {}` block for tests: plain (no_tls) on 127.0.0.1, ephemeral port. */
export const websocketOptions = (over: Partial<WebsocketOptions> = {}): WebsocketOptions => ({
  host: "127.0.0.1",
  port: 0,
  noTls: true,
  tls: undefined,
  compression: false,
  ...over
})

/** The bound port of the server's MQTT-over-WebSocket listener. */
export const websocketPort = (srv: MonitoredServer): number => {
  const l = srv.serving.websocket
  if (l === undefined) throw new Error("the WebSocket listener is not running")
  return l.port
}
