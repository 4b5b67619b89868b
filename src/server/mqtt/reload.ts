// A configuration reload as the MQTT bridge takes it: new ack_wait / max_ack_pending
// for every session, the packet bound that follows max_payload, the protocol levels of new connections, and every connected
// client held to the new users and permissions (as the NATS clients are): one whose
// credentials are no longer admitted, or whose account changed, is closed without its
// will; the others lose the subscriptions their permissions no longer allow.
import type { ServerOptions } from "../../config/options.js"
import { MAX_TOPIC_BYTES, type SessionConfig } from "../../core/mqtt/index.js"
import { ClientPermissions } from "../../engine/permissions.js"
import { GLOBAL_ACCOUNT } from "../../engine/principal.js"
import { type MqttAuthenticator, mqttAuthenticator, recheckMqtt } from "./auth.js"
import { type MqttBridge, mqtt5Limits } from "./bridge.js"
import { DEFAULT_MQTT_PROTOCOL_VERSIONS } from "../../config/options.js"
import { mayHold, mqttLogPrefix } from "./connection.js"

/** Apply `next` (already the server's options) to the bridge; `previous` admitted the connected clients. */
export const reloadMqtt = (bridge: MqttBridge, previous: MqttAuthenticator, next: ServerOptions): void => {
  const server = bridge.server
  const m = next.mqtt
  if (m === undefined) return
  const config: SessionConfig = {
    ...bridge.sessionConfig,
    ackWaitMs: m.ackWaitMs,
    maxAckPending: m.maxAckPending,
    maxQueued: m.maxQueuedMessages,
    maxQueuedBytes: m.maxQueuedBytes,
    connectTimeoutMs: m.authorization?.timeoutMs ?? next.authTimeoutMs,
    v5: mqtt5Limits(m, next.maxPayload + MAX_TOPIC_BYTES + 8)
  }
  bridge.setSessionConfig(config)
  bridge.maxPacketBytes = next.maxPayload + MAX_TOPIC_BYTES + 8
  // New connections take the new levels; open ones keep the protocol they connected with.
  bridge.mqttLevels = m.protocolVersions ?? DEFAULT_MQTT_PROTOCOL_VERSIONS
  bridge.tracing = server.log.traceEnabled
  const auth = mqttAuthenticator(server)
  for (const c of [...bridge.connections.values()]) {
    if (c.closed) continue
    c.session.setLimits(config)
    // Not admitted yet: its CONNECT meets the new rules.
    if (c.credentials === undefined) continue
    const verdict = recheckMqtt(previous, auth, c.credentials)
    const account = verdict.ok ? (verdict.result?.account ?? GLOBAL_ACCOUNT) : undefined
    if (account === undefined || account !== c.account.name) {
      server.log.warn(`${mqttLogPrefix(c)} - ${c.user === "" ? "Client" : `User ${JSON.stringify(c.user)}`} is no longer authorized after a configuration reload: closing`)
      bridge.input(c, { type: "deauthorized" })
      continue
    }
    const res = verdict.ok ? verdict.result : undefined
    c.user = res?.user ?? ""
    c.perms = res?.permissions === undefined ? undefined : new ClientPermissions(res.permissions)
    // Each as it was made: a literal `$share/…` filter (a 3.1.1 session's, resumed over 5.0 or not) is checked as it is.
    const forbidden = [...c.filters.keys()].filter((filter) => !mayHold(c, filter, c.session.isShared(filter)))
    if (forbidden.length === 0) continue
    for (const f of forbidden) {
      server.log.warn(`${mqttLogPrefix(c)} - Removed subscription ${JSON.stringify(f)}: not permitted after a configuration reload`)
    }
    bridge.input(c, { type: "revoked", filters: forbidden })
  }
}
