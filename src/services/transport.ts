// The Transport port: how the server gets byte-stream connections. Production uses
// Node's `net` (transport-node.ts); the simulation issue adds an in-memory network.
// The server core only ever sees `Conn` and never a socket.
import { Context, Data } from "effect"
import type { Effect, Scope } from "effect"

/** One accepted connection, as the server core sees it. */
export interface Conn {
  readonly remoteAddress: string
  readonly remotePort: number
  /**
   * Queue bytes for sending; never blocks. The buffer is owned by the transport until
   * `done`: called once the transport no longer reads it (after the write, in the order
   * of the writes); a transport that cannot tell never calls it, and none calls it early.
   */
  write(buf: Buffer, done?: () => void): void
  /** Queue several buffers as one write (one syscall where the transport can); `done` as for `write`. */
  writev(bufs: ReadonlyArray<Buffer>, done?: () => void): void
  /** Bytes handed to `write` that the transport has not yet sent. */
  writableLength(): number
  /** Flush what is queued, then close. Forcibly destroyed if the peer does not drain in time. */
  end(): void
  /** Close at once, dropping anything queued. */
  destroy(): void
  /** TLS details once those exist; undefined for plain connections. */
  readonly tls: { readonly version: string; readonly cipher: string } | undefined
  /**
   * Switch a dialed connection to TLS now (a leaf connection, after the hub's clear-text
   * INFO): later writes are queued until the handshake is done, later reads are the
   * decrypted stream, and a failed handshake closes the connection with a
   * TlsHandshakeError. Present only on connections dialed with `TlsDial` and `first: false`.
   */
  readonly startTls?: () => void
}

/** What the server does with a connection's events. */
export interface ConnHandlers {
  /** A received chunk. The transport never reuses its memory: the server may keep references into it. */
  onData(chunk: Buffer): void
  /** The transport finished sending everything it had queued. */
  onDrain(): void
  /** The connection is gone (peer closed, error, or our own end/destroy). Called once. */
  onClose(error: Error | undefined): void
}

/** Server-side TLS for a listener (nats-server's `tls {}` block). Key material is read by the transport and never logged. */
export interface TlsListen {
  readonly certFile: string
  readonly keyFile: string
  readonly caFile: string | undefined
  /** Require and verify client certificates. */
  readonly verify: boolean
  /** Handshake timeout, milliseconds. */
  readonly timeoutMs: number
  /**
   * TLS from the first byte, as MQTT and WebSocket clients expect, instead of NATS's
   * clear-text INFO followed by the upgrade: `accept` sees a connection only once its
   * handshake is done; a failed one goes to `ListenEvents.onTlsFailure` instead.
   */
  readonly handshakeFirst?: boolean
}

/**
 * The client side of TLS on a connection this server opens (a route, a leaf remote). Key
 * material is read by the transport at each attempt and never logged.
 */
export interface TlsDial {
  /** The certificate and key this server presents (both or neither). */
  readonly certFile: string | undefined
  readonly keyFile: string | undefined
  /** The CAs the peer's certificate must chain to; undefined = the system's. */
  readonly caFile: string | undefined
  /** The name (or IP address) the peer's certificate must be issued for: the URL's host. */
  readonly serverName: string
  /** Handshake timeout, milliseconds. */
  readonly timeoutMs: number
  /**
   * TLS from the first byte, as routes do; false: the connection starts in the clear and
   * the server calls `Conn.startTls` (leaf connections, after the hub's INFO).
   */
  readonly first: boolean
}

/** Where a connection came from, for connections that never reached `accept`. */
export interface Peer {
  readonly remoteAddress: string
  readonly remotePort: number
}

/** What a listener reports besides the connections it accepts. */
export interface ListenEvents {
  /** A TLS handshake failed or timed out before the connection reached `accept` (TLS-first listeners). */
  readonly onTlsFailure?: (peer: Peer, error: TlsHandshakeError) => void
}

/** A path a WebSocket listener serves. */
export interface WebSocketPath {
  /** The request path (the query aside). */
  readonly path: string
  /** Every path that starts with `path` (nats-server takes leaf connections on any path starting with `/leafnode`). */
  readonly prefix?: boolean
  /** The subprotocol an upgrade must offer (MQTT's `mqtt`); undefined: none is asked for or answered. */
  readonly protocol: string | undefined
  /** A larger message closes the connection (close code 1009) before it is buffered whole. */
  readonly maxMessageBytes: number
}

/** A further path on the same listener, with the connections it accepts. */
export interface WebSocketRoute extends WebSocketPath {
  readonly accept: (conn: Conn) => ConnHandlers
}

/**
 * A WebSocket listener serving one subprotocol on one path (MQTT at `/mqtt`), and any paths
 * in `also` (a hub's `/leafnode`), each with its own connections. Each binary message
 * received is one `onData` chunk; each `write`/`writev` is one message sent. Requests for
 * another path get HTTP 404, upgrades that do not offer the path's `protocol` get HTTP 400,
 * both before any upgrade.
 */
export interface WebSocketListen extends WebSocketPath {
  /** Offer permessage-deflate to clients that ask for it. */
  readonly compression: boolean
  /** A connection that has not completed its upgrade this long after connecting (after TLS) is dropped. */
  readonly handshakeTimeoutMs: number
  /** HTTPS from the first byte; undefined = plain (`no_tls`). */
  readonly tls: TlsListen | undefined
  readonly also?: ReadonlyArray<WebSocketRoute>
}

/** The error a connection closes with when its TLS handshake failed or timed out. */
export class TlsHandshakeError extends Error {
  readonly _tag = "TlsHandshakeError"
}

export interface Listener {
  readonly host: string
  readonly port: number
  /**
   * Stop accepting connections now and keep those already accepted (lame duck mode);
   * the listener's scope still closes it for good. Absent where the transport has no
   * such thing (the simulation).
   */
  readonly stopAccepting?: () => void
}

export class TransportError extends Data.TaggedError("TransportError")<{
  /** Load: what WebSocket listeners and dials need could not be loaded (`loadWebSocket`). */
  readonly reason: "Listen" | "Accept" | "Load"
  readonly message: string
}> {}

export interface TransportService {
  /**
   * Listen on host:port (port 0 = ephemeral) for the lifetime of the scope. `accept` is
   * called synchronously for each new connection and returns its handlers. With `tls`,
   * whatever `accept` writes at once (INFO) goes out in the clear, then the connection
   * upgrades to TLS, as the NATS protocol does (unless `tls.handshakeFirst`).
   */
  readonly listen: (
    host: string,
    port: number,
    accept: (conn: Conn) => ConnHandlers,
    tls?: TlsListen,
    events?: ListenEvents
  ) => Effect.Effect<Listener, TransportError, Scope.Scope>
  /**
   * Open a connection to host:port (a route to another server). `connected` is called
   * synchronously once it is up and returns its handlers; `failed` if it cannot be made
   * (refused, unreachable, not up within `timeoutMs`, with `tls.first` a TLS handshake
   * that failed: a TlsHandshakeError). Absent where the transport cannot dial (the
   * simulation).
   */
  readonly dial?: Dial
  /**
   * Open a WebSocket to `url` (a leaf remote's ws:// or wss:// URL, path included): as
   * `dial`, with `tls` for wss. Absent where the transport cannot (the simulation).
   */
  readonly dialWebSocket?: (
    url: string,
    timeoutMs: number,
    connected: (conn: Conn) => ConnHandlers,
    failed: (error: Error) => void,
    tls?: TlsDial
  ) => void
  /**
   * Ready the WebSocket support ahead of its first use, where the transport loads it only
   * when needed (Node's: the `ws` package, for a server with a WebSocket listener or a
   * ws:// leaf remote), so that a failure to load it is an error at start rather than at
   * each dial. `listenWebSocket` and `dialWebSocket` load it themselves too. Absent where
   * there is nothing to load.
   */
  readonly loadWebSocket?: Effect.Effect<void, TransportError>
  /** Listen for WebSocket connections; absent where the transport has none (the simulation). */
  readonly listenWebSocket?: (
    host: string,
    port: number,
    ws: WebSocketListen,
    accept: (conn: Conn) => ConnHandlers,
    events?: ListenEvents
  ) => Effect.Effect<Listener, TransportError, Scope.Scope>
}

export type Dial = (
  host: string,
  port: number,
  timeoutMs: number,
  connected: (conn: Conn) => ConnHandlers,
  failed: (error: Error) => void,
  tls?: TlsDial
) => void

export class Transport extends Context.Tag("switchyard/Transport")<Transport, TransportService>() {}
