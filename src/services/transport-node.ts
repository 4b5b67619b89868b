// Transport over Node's `net`: one listening socket per `listen`, closed with its scope.
// With TLS the NATS way: INFO goes out in the clear, then the socket is upgraded in
// place; a failed or timed-out handshake closes the connection with a
// TlsHandshakeError and never disturbs the listener. TLS-first listeners (MQTT) run
// the handshake before the server sees the connection at all.
import { readFileSync } from "node:fs"
import * as net from "node:net"
import * as tls from "node:tls"
import { Effect, Layer, type Scope } from "effect"
import { closeServer, END_GRACE_MS, listenerOf, normalizeAddress, tlsDetails, tlsServerOptions } from "./socket-node.js"
import {
  type Conn,
  type ConnHandlers,
  type Listener,
  type ListenEvents,
  TlsHandshakeError,
  type TlsDial,
  type TlsListen,
  Transport,
  TransportError
} from "./transport.js"

/** Corked writes reach the kernel as one writev when uncorked; `done` rides on the last (Node completes them in order). */
const writevTo = (socket: net.Socket, bufs: ReadonlyArray<Buffer>, done: (() => void) | undefined): void => {
  if (socket.destroyed) return
  socket.cork()
  const last = bufs.length - 1
  for (let i = 0; i < last; i++) socket.write(bufs[i])
  socket.write(bufs[last], done)
  socket.uncork()
}

/** The parts of a socket `unsentBytes` reads (Node's internals where it has them). */
export interface UnsentView {
  readonly writableLength: number
  readonly encrypted?: boolean
  readonly _writableState?: { readonly writing?: boolean; readonly writelen?: number }
  readonly _handle?: { readonly writeQueueSize?: number } | null
}

/**
 * Bytes handed to a socket that the kernel has not taken: what max_pending and the write
 * deadline judge. Node's writableLength counts the write request in flight whole until all
 * of it is sent, the part the kernel took too; and once a backlog forms Node sends all that
 * is buffered as one request, so a peer merely behind looked up to twice as far behind as it
 * was (a route to a server busy with a fan-out was cut off at max_pending, about half of it
 * already sent, and what it carried was lost). Where the socket shows the request in flight
 * (`_writableState.writelen`) and libuv's count of its unsent bytes (`_handle.writeQueueSize`),
 * the request counts by those; otherwise (TLS, figures that do not add up) writableLength,
 * which errs toward more.
 */
export const unsentBytes = (socket: UnsentView): number => {
  const queued = socket.writableLength
  if (queued === 0 || socket.encrypted === true) return queued
  const state = socket._writableState
  const left = socket._handle?.writeQueueSize
  if (state?.writing !== true || typeof state.writelen !== "number" || typeof left !== "number") return queued
  const inFlight = state.writelen
  if (inFlight > queued || left < 0 || left > inFlight) return queued
  return queued - inFlight + left
}

const wrap = (socket: net.Socket): Conn => ({
  remoteAddress: normalizeAddress(socket.remoteAddress),
  remotePort: socket.remotePort ?? 0,
  tls: undefined,
  write: (buf, done) => {
    if (!socket.destroyed) socket.write(buf, done)
  },
  writev: (bufs, done) => writevTo(socket, bufs, done),
  writableLength: () => unsentBytes(socket),
  end: () => {
    if (socket.destroyed) return
    socket.end()
    setTimeout(() => socket.destroy(), END_GRACE_MS).unref()
  },
  destroy: () => {
    socket.destroy()
  }
})

/**
 * Why the client's certificate is not acceptable, or undefined when it chains to the CA.
 * The verdict is OpenSSL's own (what tls.Server consults); without it, refuse.
 */
const peerRefusal = (s: tls.TLSSocket): string | undefined => {
  const handle = (s as unknown as { _handle?: { verifyError?: () => Error | null } })._handle
  if (typeof handle?.verifyError !== "function") return "cannot be verified"
  const err = handle.verifyError()
  if (err !== null && err !== undefined) return (err as NodeJS.ErrnoException).code ?? err.message
  if (Object.keys(s.getPeerCertificate()).length === 0) return "none presented"
  return undefined
}

/** OpenSSL's reason (`sslv3 alert bad certificate`, `wrong version number`) rather than its whole error line; else the message. */
const handshakeReason = (e: Error): string => {
  const reason = (e as { reason?: unknown }).reason
  return typeof reason === "string" && reason !== "" ? reason : e.message
}

const attach = (socket: net.Socket, handlers: ConnHandlers): void => {
  let lastError: Error | undefined
  socket.on("data", (chunk: Buffer) => handlers.onData(chunk))
  socket.on("drain", () => handlers.onDrain())
  socket.on("error", (e) => {
    lastError = e
  })
  socket.on("close", () => handlers.onClose(lastError))
}

/** The server side of one connection's TLS, for the whole listener. */
interface TlsSetup {
  readonly context: tls.SecureContext
  readonly verify: boolean
  readonly timeoutMs: number
}

const loadTls = (o: TlsListen): Effect.Effect<TlsSetup, TransportError> =>
  Effect.try({
    try: () => ({
      context: tls.createSecureContext({
        cert: readFileSync(o.certFile),
        key: readFileSync(o.keyFile),
        ...(o.caFile !== undefined && { ca: readFileSync(o.caFile) })
      }),
      verify: o.verify,
      timeoutMs: o.timeoutMs
    }),
    // Node's messages name the file or the PEM routine, never the key material.
    catch: (e) => new TransportError({ reason: "Listen", message: `tls: cannot load the certificate or key: ${(e as Error).message}` })
  })

/**
 * Accept one connection: hand it to the server (which writes INFO on the plain socket),
 * then upgrade to TLS. The server sees data only once the handshake is done; writes made
 * meanwhile are queued by the TLS socket until then.
 */
const acceptTls = (raw: net.Socket, setup: TlsSetup, accept: (conn: Conn) => ConnHandlers): void => {
  let current: net.Socket = raw
  // Read once, at the end of the handshake: asking a torn-down TLS socket is not safe.
  let details: Conn["tls"]
  // Errors surface on the TLS socket; the raw one must not crash the process with its own.
  raw.on("error", () => {})
  const conn = wrapSwitching(() => current, () => details, raw)
  const handlers = accept(conn)
  // Turned away at once (shutting down, too many connections): no handshake to run.
  if (raw.destroyed || raw.writableEnded) {
    attach(raw, handlers)
    raw.resume()
    return
  }
  const secure = new tls.TLSSocket(raw, {
    isServer: true,
    secureContext: setup.context,
    requestCert: setup.verify,
    rejectUnauthorized: setup.verify
  })
  current = secure
  runUpgraded(raw, secure, "secure", setup.timeoutMs, handlers, (d) => (details = d), () => {
    // A TLS socket made by hand (not by tls.Server) neither judges nor refuses its peer: we do.
    const refused = setup.verify ? peerRefusal(secure) : undefined
    return refused === undefined ? undefined : `client certificate refused: ${refused}`
  })
}

/**
 * A connection switched to TLS in place (`secure` over `raw`, either side): its data and
 * drain to `handlers`, the handshake bounded by `timeoutMs` and judged by `refusal` once
 * done (a reason closes it), `secured` told the details, and `onClose` given a
 * TlsHandshakeError when it closed before the handshake was done.
 */
const runUpgraded = (
  raw: net.Socket,
  secure: tls.TLSSocket,
  done: "secure" | "secureConnect",
  timeoutMs: number,
  handlers: ConnHandlers,
  secured: (details: Conn["tls"]) => void,
  refusal: () => string | undefined = () => undefined
): void => {
  let handshakeError: Error | undefined
  let lastError: Error | undefined
  let isSecure = false
  const timer = setTimeout(() => {
    handshakeError = new TlsHandshakeError(`handshake not completed within ${timeoutMs}ms`)
    secure.destroy()
  }, timeoutMs)
  timer.unref()
  secure.once(done, () => {
    clearTimeout(timer)
    const refused = refusal()
    if (refused !== undefined) {
      handshakeError = new TlsHandshakeError(refused)
      secure.destroy()
      return
    }
    isSecure = true
    secured(tlsDetails(secure))
  })
  secure.on("data", (chunk: Buffer) => handlers.onData(chunk))
  secure.on("drain", () => handlers.onDrain())
  secure.on("error", (e) => {
    if (!isSecure && handshakeError === undefined) handshakeError = new TlsHandshakeError(handshakeReason(e))
    lastError = e
  })
  secure.on("close", () => {
    clearTimeout(timer)
    raw.destroy()
    handlers.onClose(isSecure ? lastError : (handshakeError ?? new TlsHandshakeError("connection closed during the handshake")))
  })
}

/** A Conn whose socket changes once (plain for INFO, then TLS). */
const wrapSwitching = (socket: () => net.Socket, details: () => Conn["tls"], raw: net.Socket): Conn => {
  const base = wrap(raw)
  return {
    remoteAddress: base.remoteAddress,
    remotePort: base.remotePort,
    get tls() {
      return details()
    },
    write: (buf, done) => {
      const s = socket()
      if (!s.destroyed) s.write(buf, done)
    },
    writev: (bufs, done) => writevTo(socket(), bufs, done),
    writableLength: () => unsentBytes(socket()),
    end: () => {
      const s = socket()
      if (s.destroyed) return
      s.end()
      setTimeout(() => s.destroy(), END_GRACE_MS).unref()
    },
    destroy: () => {
      socket().destroy()
    }
  }
}

/**
 * A TLS-first listener: Node's TLS server runs the handshake (demanding and checking
 * client certificates with `verify`, within `timeoutMs`) and only secured connections
 * reach `accept`; the others are reported to `onTlsFailure` and dropped.
 */
const listenTlsFirst = (
  host: string,
  port: number,
  accept: (conn: Conn) => ConnHandlers,
  o: TlsListen,
  events: ListenEvents | undefined
): Effect.Effect<Listener, TransportError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.flatMap(tlsServerOptions(o), (options) =>
      Effect.async<net.Server, TransportError>((resume) => {
        let server: tls.Server
        try {
          server = tls.createServer(options, (socket) => {
            socket.setNoDelay(true)
            try {
              attach(socket, accept({ ...wrap(socket), tls: tlsDetails(socket) }))
            } catch {
              socket.destroy()
            }
          })
        } catch (e) {
          resume(Effect.fail(new TransportError({ reason: "Listen", message: `tls: ${(e as Error).message}` })))
          return
        }
        server.on("tlsClientError", (e, socket) => {
          const peer = { remoteAddress: normalizeAddress(socket.remoteAddress), remotePort: socket.remotePort ?? 0 }
          socket.destroy()
          events?.onTlsFailure?.(peer, new TlsHandshakeError(handshakeReason(e)))
        })
        bindServer(server, host, port, resume)
      })),
    closeServer
  ).pipe(Effect.map(listenerOf(host, port)))

/** Listen, and resume with the server once bound (or with the reason it could not bind). */
const bindServer = (
  server: net.Server,
  host: string,
  port: number,
  resume: (e: Effect.Effect<net.Server, TransportError>) => void
): void => {
  server.on("error", (e) => {
    resume(Effect.fail(new TransportError({ reason: "Listen", message: `cannot listen on ${host}:${port}: ${e.message}` })))
  })
  server.listen({ host, port, backlog: 4096 }, () => resume(Effect.succeed(server)))
}

export const listenNode = (
  host: string,
  port: number,
  accept: (conn: Conn) => ConnHandlers,
  tlsOptions?: TlsListen,
  events?: ListenEvents
): Effect.Effect<Listener, TransportError, Scope.Scope> =>
  tlsOptions?.handshakeFirst === true ? listenTlsFirst(host, port, accept, tlsOptions, events) : Effect.acquireRelease(
    Effect.flatMap(tlsOptions === undefined ? Effect.succeed(undefined) : loadTls(tlsOptions), (setup) =>
    Effect.async<{ server: net.Server; listener: Listener }, TransportError>((resume) => {
      const server = net.createServer({ noDelay: true, pauseOnConnect: setup !== undefined }, (socket) => {
        socket.setNoDelay(true)
        try {
          if (setup !== undefined) acceptTls(socket, setup, accept)
          else attach(socket, accept(wrap(socket)))
        } catch {
          socket.destroy()
        }
      })
      server.on("error", (e) => {
        resume(Effect.fail(new TransportError({ reason: "Listen", message: `cannot listen on ${host}:${port}: ${e.message}` })))
      })
      server.listen({ host, port, backlog: 4096 }, () => resume(Effect.succeed({ server, listener: listenerOf(host, port)(server) })))
    })),
    ({ server }) => closeServer(server)
  ).pipe(Effect.map(({ listener }) => listener))

/** The client side's TLS options: our certificate when given, the CA (else the system's), the peer checked against `serverName`. */
const clientTlsOptions = (t: TlsDial): tls.ConnectionOptions => ({
  ...(t.certFile !== undefined && { cert: readFileSync(t.certFile) }),
  ...(t.keyFile !== undefined && { key: readFileSync(t.keyFile) }),
  ...(t.caFile !== undefined && { ca: readFileSync(t.caFile) }),
  ...(net.isIP(t.serverName) === 0 && { servername: t.serverName }),
  rejectUnauthorized: true,
  // Over a socket we made, Node would not know the host: the certificate is checked against the URL's.
  checkServerIdentity: (_host, cert) => tls.checkServerIdentity(t.serverName, cert)
})

/** Client TLS options, or the TlsHandshakeError saying why the files cannot be used (never their content). */
const loadClientTls = (t: TlsDial): tls.ConnectionOptions | TlsHandshakeError => {
  try {
    return clientTlsOptions(t)
  } catch (e) {
    return new TlsHandshakeError(`cannot load the certificate or key: ${(e as Error).message}`)
  }
}

/**
 * Run the client handshake over `raw` within `t.timeoutMs`: `secured` once it is done and
 * the peer's certificate is accepted, else `failed` once (the sockets destroyed).
 */
const clientHandshake = (
  raw: net.Socket,
  t: TlsDial,
  secured: (s: tls.TLSSocket) => void,
  failed: (e: TlsHandshakeError) => void
): void => {
  const options = loadClientTls(t)
  if (options instanceof TlsHandshakeError) {
    raw.destroy()
    failed(options)
    return
  }
  raw.on("error", () => {})
  const secure = tls.connect({ ...options, socket: raw })
  let done = false
  const fail = (e: Error) => {
    if (done) return
    done = true
    clearTimeout(timer)
    secure.destroy()
    raw.destroy()
    failed(e instanceof TlsHandshakeError ? e : new TlsHandshakeError(handshakeReason(e)))
  }
  const closed = () => fail(new TlsHandshakeError("connection closed during the handshake"))
  const timer = setTimeout(() => fail(new TlsHandshakeError(`handshake not completed within ${t.timeoutMs}ms`)), t.timeoutMs)
  timer.unref()
  secure.once("error", fail)
  secure.once("close", closed)
  secure.once("secureConnect", () => {
    if (done) return
    done = true
    clearTimeout(timer)
    secure.removeListener("error", fail)
    secure.removeListener("close", closed)
    secure.setNoDelay(true)
    secured(secure)
  })
}

/**
 * A dialed connection that starts in the clear and switches to TLS when the server says
 * so (`startTls`, a leaf connection after the hub's INFO). Reads and writes go to the TLS
 * socket from then on; a failed handshake reaches `onClose` as a TlsHandshakeError.
 */
const attachUpgradable = (raw: net.Socket, t: TlsDial, connected: (conn: Conn) => ConnHandlers): void => {
  let current: net.Socket = raw
  let details: Conn["tls"]
  let closed = false
  let handlers: ConnHandlers | undefined
  const onClose = (e: Error | undefined) => {
    if (closed) return
    closed = true
    handlers?.onClose(e)
  }
  let lastError: Error | undefined
  const onData = (chunk: Buffer) => handlers?.onData(chunk)
  const onDrain = () => handlers?.onDrain()
  const onError = (e: Error) => {
    lastError = e
  }
  const onRawClose = () => onClose(lastError)
  const conn: Conn = {
    ...wrapSwitching(() => current, () => details, raw),
    startTls: () => {
      if (current !== raw || raw.destroyed) return
      raw.removeListener("data", onData)
      raw.removeListener("drain", onDrain)
      raw.removeListener("error", onError)
      raw.removeListener("close", onRawClose)
      const options = loadClientTls(t)
      if (options instanceof TlsHandshakeError) {
        raw.destroy()
        onClose(options)
        return
      }
      raw.on("error", () => {})
      const secure = tls.connect({ ...options, socket: raw })
      current = secure
      runUpgraded(raw, secure, "secureConnect", t.timeoutMs, { onData, onDrain, onClose }, (d) => (details = d))
    }
  }
  raw.on("data", onData)
  raw.on("drain", onDrain)
  raw.on("error", onError)
  raw.on("close", onRawClose)
  handlers = connected(conn)
}

/**
 * An outgoing connection (a route, a leaf remote): handed over once connected; a failure
 * or timeout before that is reported instead. With `tlsDial.first` the TLS handshake is
 * part of connecting (a route): handed over once secured; without `first`, the connection
 * can be switched to TLS later (`Conn.startTls`).
 */
export const dialNode = (
  host: string,
  port: number,
  timeoutMs: number,
  connected: (conn: Conn) => ConnHandlers,
  failed: (error: Error) => void,
  tlsDial?: TlsDial
): void => {
  const socket = net.connect({ host, port, noDelay: true })
  let done = false
  const fail = (e: Error) => {
    if (done) return
    done = true
    clearTimeout(timer)
    socket.destroy()
    failed(e)
  }
  const timer = setTimeout(() => fail(new Error(`no connection within ${timeoutMs}ms`)), timeoutMs)
  timer.unref()
  socket.once("error", fail)
  socket.once("connect", () => {
    if (done) return
    done = true
    clearTimeout(timer)
    socket.removeListener("error", fail)
    try {
      if (tlsDial === undefined) attach(socket, connected(wrap(socket)))
      else if (!tlsDial.first) attachUpgradable(socket, tlsDial, connected)
      else {
        clientHandshake(socket, tlsDial, (secure) => {
          try {
            attach(secure, connected({ ...wrap(secure), remoteAddress: normalizeAddress(socket.remoteAddress), remotePort: socket.remotePort ?? 0, tls: tlsDetails(secure) }))
          } catch {
            secure.destroy()
          }
        }, failed)
      }
    } catch {
      socket.destroy()
    }
  })
}

// WebSocket connections (websocket-node.ts and the `ws` package) load with the first
// listener or dial that needs them: a server without either never reads or compiles them.
type WebSocketNode = typeof import("./websocket-node.js")
let webSocketNode: Promise<WebSocketNode> | undefined
const importWebSocket = (): Promise<WebSocketNode> => (webSocketNode ??= import("./websocket-node.js"))

const loadWebSocket: Effect.Effect<WebSocketNode, TransportError> = Effect.tryPromise({
  try: importWebSocket,
  catch: (e) => new TransportError({ reason: "Load", message: `cannot load the WebSocket support: ${e instanceof Error ? e.message : String(e)}` })
})

export const layerNode: Layer.Layer<Transport> = Layer.succeed(Transport, {
  listen: listenNode,
  dial: dialNode,
  loadWebSocket: Effect.asVoid(loadWebSocket),
  listenWebSocket: (host, port, ws, accept, events) =>
    Effect.flatMap(loadWebSocket, (m) => m.listenWebSocketNode(host, port, ws, accept, events)),
  dialWebSocket: (url, timeoutMs, connected, failed, tls) => {
    importWebSocket().then(
      (m) => m.dialWebSocketNode(url, timeoutMs, connected, failed, tls),
      (e: unknown) => failed(new Error(`cannot load the WebSocket support: ${e instanceof Error ? e.message : String(e)}`))
    )
  }
})
