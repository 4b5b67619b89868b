// Leaf connections on the `websocket` listener, as nats-server serves them: an upgrade on a
// path starting with `/leafnode` (nats-server 2.9.10 takes `/leafnode`, `/leafnode/`,
// `/leafnodex` alike, and its leaf dials `/leafnode` + the remote URL's path) speaks the
// leaf protocol in binary WebSocket messages, with the leaf listener's authorization; TLS
// is the WebSocket's (wss). Only a server that accepts leaf connections (a `leafnodes`
// block with a listen port) serves the path.
import { Effect, type Scope } from "effect"
import type { ServerOptions, WebsocketOptions } from "../../config/options.js"
import { type Listener, Transport, TransportError, type WebSocketRoute } from "../../services/transport.js"
import type { Server } from "../server.js"
import type { LeafNodes } from "./leafnodes.js"

export const LEAF_WS_PATH = "/leafnode"

/**
 * The listener's `/leafnode` path, when this server accepts leaf connections. A WebSocket
 * message is buffered whole before it is read, so one is bounded: by `max_pending`, what a
 * connection may have queued before it is cut off as a slow consumer (a peer's single write
 * may hold many messages, as ours do).
 */
export const leafWebSocketRoute = (leafnodes: LeafNodes | undefined, options: ServerOptions): WebSocketRoute | undefined =>
  leafnodes === undefined || options.leafnodes?.port === undefined
    ? undefined
    : { path: LEAF_WS_PATH, prefix: true, protocol: undefined, maxMessageBytes: options.maxPending, accept: (conn) => leafnodes.acceptWebSocket(conn) }

/** The transport, its WebSocket listeners also serving `route` (the MQTT listener, which builds its own options). */
export const alsoServing = (route: WebSocketRoute | undefined) =>
  Effect.updateService(Transport, (t) =>
    route === undefined || t.listenWebSocket === undefined
      ? t
      : { ...t, listenWebSocket: (host, port, ws, accept, events) => t.listenWebSocket!(host, port, { ...ws, also: [...(ws.also ?? []), route] }, accept, events) })

/** A websocket listener for leaf connections only (MQTT is off). */
export const startLeafWebSocket = (
  server: Server,
  route: WebSocketRoute,
  options: WebsocketOptions,
  handshakeTimeoutMs: number
): Effect.Effect<Listener, TransportError, Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    if (transport.listenWebSocket === undefined) {
      return yield* Effect.fail(new TransportError({ reason: "Listen", message: "websocket: this transport has no WebSocket support" }))
    }
    const listener = yield* transport.listenWebSocket(
      options.host,
      options.port,
      { ...route, compression: options.compression, handshakeTimeoutMs: options.handshakeTimeoutMs ?? handshakeTimeoutMs, tls: options.noTls ? undefined : options.tls },
      route.accept,
      { onTlsFailure: (peer, error) => server.log.error(`${peer.remoteAddress}:${peer.remotePort} - TLS websocket handshake error: ${error.message}`) }
    ).pipe(Effect.mapError((e) => new TransportError({ reason: e.reason, message: `websocket ${e.message}` })))
    server.registerListener(listener)
    return listener
  })
