// MQTT over WebSocket: the `websocket {}` listener serves MQTT at `/mqtt` with the
// `mqtt` subprotocol, and every connection goes through the same bridge entry as
// TCP clients (one binary message is one chunk for the MQTT parser, which already
// copes with packets split across chunks and chunks holding several packets).
import { Effect, type Scope } from "effect"
import { DEFAULT_MQTT_PROTOCOL_VERSIONS, type WebsocketOptions } from "../../config/options.js"
import { type Listener, Transport, TransportError } from "../../services/transport.js"
import type { MqttBridge } from "./bridge.js"
import { listenerError, mqttTlsFailure } from "./listener.js"

/** Where MQTT is served and the subprotocol clients must offer (MQTT 3.1.1 section 6). */
export const MQTT_WS_PATH = "/mqtt"
export const MQTT_WS_PROTOCOL = "mqtt"
/** `handshake_timeout` when the block does not set one. */
export const WS_HANDSHAKE_TIMEOUT_MS = 2_000

export const startMqttWebSocket = (
  bridge: MqttBridge,
  options: WebsocketOptions
): Effect.Effect<Listener, TransportError, Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    if (transport.listenWebSocket === undefined) {
      return yield* Effect.fail(new TransportError({ reason: "Listen", message: "websocket: this transport has no WebSocket support" }))
    }
    const server = bridge.server
    bridge.websocketLevels = options.protocolVersions ?? DEFAULT_MQTT_PROTOCOL_VERSIONS
    const listener = yield* transport.listenWebSocket(
      options.host,
      options.port,
      {
        path: MQTT_WS_PATH,
        protocol: MQTT_WS_PROTOCOL,
        compression: options.compression,
        // A message may carry more than one packet; the bridge still cuts off any single packet over its limit.
        maxMessageBytes: 2 * bridge.maxPacketBytes,
        handshakeTimeoutMs: options.handshakeTimeoutMs ?? WS_HANDSHAKE_TIMEOUT_MS,
        tls: options.noTls ? undefined : options.tls
      },
      (conn) => bridge.accept(conn, "websocket"),
      { onTlsFailure: (peer, error) => mqttTlsFailure(server, peer, error) }
    ).pipe(Effect.mapError(listenerError("websocket")))
    server.registerListener(listener)
    // Runs before the listener closes (finalizers run in reverse): open WebSocket clients
    // are ended first, so closing the listener does not wait on them. Harmless when the
    // bridge's own shutdown runs again later.
    yield* Effect.addFinalizer(() => Effect.promise(() => bridge.shutdown()))
    return listener
  })
