// WebSocket connections over Node's http/https and the `ws` package, as the server
// core's `Conn`: one binary message in is one chunk, one write out is one message.
// The path and subprotocol are checked before the upgrade (HTTP 404 / 400 with a
// reason), and a failed TLS handshake never reaches the server.
import * as http from "node:http"
import * as https from "node:https"
import type { Duplex } from "node:stream"
import { readFileSync } from "node:fs"
import { isIP } from "node:net"
import * as tls from "node:tls"
import { Effect, type Scope } from "effect"
import { type RawData, WebSocket, WebSocketServer } from "ws"
import { closeServer, END_GRACE_MS, listenerOf, normalizeAddress, tlsDetails, tlsServerOptions } from "./socket-node.js"
import {
  type Conn,
  type ConnHandlers,
  type Listener,
  type ListenEvents,
  type TlsDial,
  TlsHandshakeError,
  TransportError,
  type WebSocketListen,
  type WebSocketPath
} from "./transport.js"

/** Close code for a text frame where only binary is spoken (RFC 6455 "unsupported data"). */
const CLOSE_UNSUPPORTED_DATA = 1003

interface Refusal {
  readonly status: 400 | 404
  readonly text: string
}

const pathOf = (url: string | undefined): string => {
  const u = url ?? "/"
  const q = u.indexOf("?")
  return q < 0 ? u : u.slice(0, q)
}

/** One path of the listener: where its upgrades go. */
interface Served {
  readonly path: WebSocketPath
  readonly wss: WebSocketServer
  readonly accept: (conn: Conn) => ConnHandlers
}

const matches = (p: WebSocketPath, path: string): boolean => (p.prefix === true ? path.startsWith(p.path) : path === p.path)

/** The path a request is for, or why it may not become a WebSocket of this listener, checked before the upgrade. */
const route = (req: http.IncomingMessage, served: ReadonlyArray<Served>, upgrade: boolean): Served | Refusal => {
  const path = pathOf(req.url)
  const s = served.find((x) => matches(x.path, path))
  if (s === undefined) return { status: 404, text: `Not Found: WebSocket clients connect to ${served.map((x) => x.path.path).join(" or ")}` }
  const o = s.path
  if (!upgrade) return { status: 400, text: `Bad Request: ${o.path} expects a WebSocket upgrade` }
  if (o.protocol !== undefined) {
    const offered = String(req.headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim())
    if (!offered.includes(o.protocol)) {
      return { status: 400, text: `Bad Request: the Sec-WebSocket-Protocol header must offer "${o.protocol}"` }
    }
  }
  return s
}

const refuseSocket = (socket: Duplex, r: Refusal): void => {
  const body = `${r.text}\n`
  const phrase = r.status === 404 ? "Not Found" : "Bad Request"
  socket.end(
    `HTTP/1.1 ${r.status} ${phrase}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  )
  setTimeout(() => socket.destroy(), END_GRACE_MS).unref()
}

const asBuffer = (data: RawData): Buffer =>
  Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)

/** The server core's view of one WebSocket: every write is one binary message (one frame). */
const wrapWebSocket = (ws: WebSocket, peer: { readonly remoteAddress?: string; readonly remotePort?: number }, socket: Duplex): Conn => {
  const open = () => ws.readyState === WebSocket.OPEN
  return {
    remoteAddress: normalizeAddress(peer.remoteAddress),
    remotePort: peer.remotePort ?? 0,
    tls: socket instanceof tls.TLSSocket ? tlsDetails(socket) : undefined,
    write: (buf, done) => {
      if (open()) ws.send(buf, { binary: true }, done)
    },
    writev: (bufs, done) => {
      if (open()) ws.send(bufs.length === 1 ? bufs[0] : Buffer.concat(bufs), { binary: true }, done)
    },
    // Bytes in the socket's buffer plus those ws still holds (compressing or corked).
    writableLength: () => ws.bufferedAmount,
    end: () => {
      if (ws.readyState === WebSocket.CLOSED) return
      // The close frame follows everything queued; a peer that never answers it is cut off.
      ws.close(1000)
      setTimeout(() => ws.terminate(), END_GRACE_MS).unref()
    },
    destroy: () => ws.terminate()
  }
}

const attachWebSocket = (ws: WebSocket, socket: Duplex, handlers: ConnHandlers): void => {
  let lastError: Error | undefined
  let refused = false
  ws.on("message", (data, isBinary) => {
    if (refused) return
    // MQTT control packets travel in binary frames only; anything else closes [MQTT-6.0.0-1].
    // Leaf connections are binary too (nats-server 2.9.10 sends and expects binary messages).
    if (!isBinary) {
      refused = true
      lastError = new Error("text frame received where only binary frames are allowed")
      ws.close(CLOSE_UNSUPPORTED_DATA, "binary frames only")
      setTimeout(() => ws.terminate(), END_GRACE_MS).unref()
      return
    }
    handlers.onData(asBuffer(data))
  })
  socket.on("drain", () => handlers.onDrain())
  ws.on("error", (e) => {
    lastError = e
  })
  ws.on("close", () => handlers.onClose(lastError))
}

export const listenWebSocketNode = (
  host: string,
  port: number,
  o: WebSocketListen,
  accept: (conn: Conn) => ConnHandlers,
  events?: ListenEvents
): Effect.Effect<Listener, TransportError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.flatMap(o.tls === undefined ? Effect.succeed(undefined) : tlsServerOptions(o.tls), (tlsOptions) =>
      Effect.async<http.Server, TransportError>((resume) => {
        let server: http.Server
        try {
          server = tlsOptions === undefined ? http.createServer() : https.createServer(tlsOptions)
        } catch (e) {
          resume(Effect.fail(new TransportError({ reason: "Listen", message: `tls: ${(e as Error).message}` })))
          return
        }
        // One ws server per path: each has its own message limit and subprotocol.
        const served: Array<Served> = [{ path: o, accept }, ...(o.also ?? []).map((r) => ({ path: r, accept: r.accept }))].map((x) => ({
          ...x,
          wss: new WebSocketServer({
            noServer: true,
            clientTracking: false,
            perMessageDeflate: o.compression,
            maxPayload: x.path.maxMessageBytes,
            handleProtocols: () => x.path.protocol ?? false
          })
        }))
        server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
          const r = route(req, served, false) as Refusal
          res.writeHead(r.status, { "Content-Type": "text/plain; charset=utf-8", Connection: "close" })
          res.end(`${r.text}\n`)
        })
        // The upgrade must come within the handshake timeout (TLS has its own, before this one).
        const deadlines = new WeakMap<Duplex, NodeJS.Timeout>()
        server.on(tlsOptions === undefined ? "connection" : "secureConnection", (socket: Duplex) => {
          deadlines.set(socket, setTimeout(() => socket.destroy(), o.handshakeTimeoutMs).unref())
        })
        server.on("upgrade", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
          clearTimeout(deadlines.get(socket))
          socket.on("error", () => {})
          const r = route(req, served, true)
          if ("status" in r) return refuseSocket(socket, r)
          r.wss.handleUpgrade(req, socket, head, (ws) => {
            try {
              attachWebSocket(ws, socket, r.accept(wrapWebSocket(ws, req.socket, socket)))
            } catch {
              ws.terminate()
            }
          })
        })
        server.on("clientError", (_e: Error, socket: Duplex) => {
          socket.destroy()
        })
        server.on("tlsClientError", (e: Error, socket: tls.TLSSocket) => {
          const peer = { remoteAddress: normalizeAddress(socket.remoteAddress), remotePort: socket.remotePort ?? 0 }
          socket.destroy()
          events?.onTlsFailure?.(peer, new TlsHandshakeError(e.message))
        })
        server.on("error", (e) => {
          resume(Effect.fail(new TransportError({ reason: "Listen", message: `cannot listen on ${host}:${port}: ${e.message}` })))
        })
        server.listen({ host, port, backlog: 4096 }, () => resume(Effect.succeed(server)))
      })),
    (server) =>
      Effect.suspend(() => {
        const closing = closeServer(server)
        server.closeIdleConnections()
        return closing
      })
  ).pipe(Effect.map((server) => listenerOf(host, port)(server)))

/**
 * A WebSocket this server opens (a leaf remote's `ws://` / `wss://` URL): handed over as a
 * Conn once the upgrade is done (one binary message per write, each message received one
 * chunk); a refused upgrade, a failed TLS handshake (a TlsHandshakeError) or no answer
 * within `timeoutMs` goes to `failed` instead. With `tlsDial` (wss) the server's
 * certificate is checked against the CA and the URL's host.
 */
export const dialWebSocketNode = (
  url: string,
  timeoutMs: number,
  connected: (conn: Conn) => ConnHandlers,
  failed: (error: Error) => void,
  tlsDial?: TlsDial
): void => {
  let ws: WebSocket
  try {
    ws = new WebSocket(url, {
      perMessageDeflate: false,
      handshakeTimeout: timeoutMs,
      ...(tlsDial === undefined ? {} : {
        ...(tlsDial.certFile !== undefined && { cert: readFileSync(tlsDial.certFile) }),
        ...(tlsDial.keyFile !== undefined && { key: readFileSync(tlsDial.keyFile) }),
        ...(tlsDial.caFile !== undefined && { ca: readFileSync(tlsDial.caFile) }),
        ...(isIP(tlsDial.serverName) === 0 && { servername: tlsDial.serverName }),
        rejectUnauthorized: true
      })
    })
  } catch (e) {
    failed(tlsDial === undefined ? (e as Error) : new TlsHandshakeError(`cannot load the certificate or key: ${(e as Error).message}`))
    return
  }
  let open = false
  const fail = (e: Error) => {
    if (open) return
    open = true
    ws.terminate()
    const code = (e as NodeJS.ErrnoException).code ?? ""
    failed(tlsDial !== undefined && /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code) ? new TlsHandshakeError((e as { reason?: string }).reason ?? e.message) : e)
  }
  ws.once("error", fail)
  ws.once("open", () => {
    if (open) return
    open = true
    ws.removeListener("error", fail)
    const socket = (ws as unknown as { _socket: Duplex & { remoteAddress?: string; remotePort?: number } })._socket
    try {
      attachWebSocket(ws, socket, connected(wrapWebSocket(ws, socket, socket)))
    } catch {
      ws.terminate()
    }
  })
}
