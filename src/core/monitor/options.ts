// The configuration-derived part of a ServerSnapshot, picked field by field
// from ServerOptions so that nothing secret (passwords, tokens, key files) can
// reach the monitoring layer. The server adds identity, ports and counters.
import type { ServerOptions } from "../../config/options.js"
import type { ServerSnapshot } from "./source.js"

export type ConfigPart = Pick<
  ServerSnapshot,
  "authRequired" | "tlsRequired" | "tlsVerify" | "systemAccount" | "limits" | "mqtt" | "websocket"
>

const authConfigured = (o: ServerOptions): boolean => {
  const a = o.authorization
  const hasTopLevel = a !== undefined && (a.user !== undefined || a.token !== undefined || a.users.length > 0)
  return hasTopLevel || o.accounts.some((acc) => acc.users.length > 0)
}

/** The configured limits as /varz reports them (the authorization block's timeout wins). */
export const limitsFromOptions = (o: ServerOptions): ServerSnapshot["limits"] => ({
  maxConnections: o.maxConnections,
  maxSubscriptions: o.maxSubscriptions,
  maxPayload: o.maxPayload,
  maxControlLine: o.maxControlLine,
  maxPending: o.maxPending,
  pingIntervalMs: o.pingIntervalMs,
  pingMax: o.pingMax,
  authTimeoutMs: o.authorization?.timeoutMs ?? o.authTimeoutMs,
  tlsTimeoutMs: o.tls?.timeoutMs ?? 2000,
  writeDeadlineMs: o.writeDeadlineMs
})

/** Limits, TLS/auth flags and MQTT/WebSocket listener settings as /varz shows them. */
export const monitorSnapshotFromOptions = (o: ServerOptions): ConfigPart => ({
  authRequired: authConfigured(o),
  tlsRequired: o.tls !== undefined,
  tlsVerify: o.tls?.verify ?? false,
  systemAccount: o.systemAccount,
  limits: limitsFromOptions(o),
  mqtt:
    o.mqtt === undefined
      ? undefined
      : {
          host: o.mqtt.host,
          port: o.mqtt.port,
          ackWaitMs: o.mqtt.ackWaitMs,
          maxAckPending: o.mqtt.maxAckPending,
          tlsTimeoutMs: o.mqtt.tls?.timeoutMs,
          authTimeoutMs: o.mqtt.authorization?.timeoutMs,
          noAuthUser: o.mqtt.noAuthUser
        },
  websocket:
    o.websocket === undefined
      ? undefined
      : {
          host: o.websocket.host,
          port: o.websocket.port,
          noTls: o.websocket.noTls,
          compression: o.websocket.compression,
          handshakeTimeoutMs: undefined,
          noAuthUser: undefined
        }
})
