// The Effect shell of the MQTT bridge: listens through the Transport for the life of
// the scope (plain or TLS-first), wakes session deadlines (keepalive, redelivery)
// from Effect's Clock, and closes MQTT connections when the scope closes.
import { Effect, type Scope } from "effect"
import type { MqttOptions } from "../../config/options.js"
import { type Peer, type TlsHandshakeError, Transport, TransportError } from "../../services/transport.js"
import { GLOBAL_ACCOUNT } from "../../engine/principal.js"
import { ClosedReason } from "../reasons.js"
import type { Server } from "../server.js"
import type { JetStream } from "../jetstream/jetstream.js"
import { startAlarm } from "../alarm.js"
import { MqttBridge } from "./bridge.js"
import { MqttStore } from "./store.js"
import { layerMemory } from "./store-memory.js"
import { layerStreams } from "./store-streams.js"

/** Keepalive is counted in seconds: deadlines this close together are served by one run. */
export const MQTT_TICK_MS = 250

/** A listener's start-up error names the listener ("mqtt tls: cannot load …"). */
export const listenerError = (what: string) => (e: TransportError): TransportError =>
  new TransportError({ reason: e.reason, message: `${what} ${e.message}` })

/**
 * A TLS handshake on an MQTT listener (TCP or WebSocket) failed before any MQTT was
 * spoken: counted and logged as on the client port, and kept in /connz?state=closed.
 */
export const mqttTlsFailure = (server: Server, peer: Peer, error: TlsHandshakeError): void => {
  server.tlsHandshakeFailures++
  const cid = server.allocateCid()
  server.log.error(`${peer.remoteAddress}:${peer.remotePort} - mid:${cid} - TLS handshake error: ${error.message}`)
  const now = server.now()
  server.closed.push({
    cid,
    kind: "Client",
    type: "mqtt",
    ip: peer.remoteAddress,
    port: peer.remotePort,
    start: now,
    lastActivity: now,
    rttNs: 0,
    pendingBytes: 0,
    inMsgs: 0,
    outMsgs: 0,
    inBytes: 0,
    outBytes: 0,
    subs: [],
    name: "",
    lang: "mqtt",
    version: "3.1.1",
    tlsVersion: undefined,
    tlsCipher: undefined,
    user: undefined,
    account: GLOBAL_ACCOUNT,
    mqttClient: undefined,
    stop: now,
    reason: ClosedReason.TLSHandshakeError
  })
}

/** MQTT state in the `$MQTT_*` streams when the stream subsystem runs, else in memory. */
export const startMqtt = (
  server: Server,
  options: MqttOptions,
  jetstream?: JetStream | undefined
): Effect.Effect<MqttBridge, TransportError, Transport | Scope.Scope> =>
  serveMqtt(server, options).pipe(Effect.provide(jetstream === undefined ? layerMemory : layerStreams(jetstream)))

const serveMqtt = (
  server: Server,
  options: MqttOptions
): Effect.Effect<MqttBridge, TransportError, Transport | MqttStore | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const bridge = new MqttBridge(server, options, yield* MqttStore)
    // Keep-alives, redeliveries, CONNECT timeouts and stale session records: woken when one is due.
    bridge.alarm = yield* startAlarm((now) => bridge.tick(now), MQTT_TICK_MS)
    // Sessions stored before a restart are subscribed again before the first client connects.
    yield* Effect.promise(() => bridge.openStoredAccounts())
    // MQTT clients expect TLS from the first byte (mqtts://), unlike NATS's INFO-then-upgrade.
    const tls = options.tls === undefined ? undefined : { ...options.tls, handshakeFirst: true }
    const listener = yield* transport.listen(options.host, options.port, (conn) => bridge.accept(conn), tls, {
      onTlsFailure: (peer, error) => mqttTlsFailure(server, peer, error)
    }).pipe(Effect.mapError(listenerError("mqtt")))
    bridge.host = listener.host
    bridge.port = listener.port
    server.registerListener(listener)
    yield* Effect.addFinalizer(() => Effect.promise(() => bridge.shutdown()))
    return bridge
  })
