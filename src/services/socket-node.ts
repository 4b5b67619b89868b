// What the Node transports (raw TCP, TLS-first, WebSocket) share: address and TLS
// details in nats-server's forms, the grace a closing connection gets to drain, the
// key material of a listener's `tls {}` block read once, at listen time, and how a
// listening server stops accepting and closes.
import { readFileSync } from "node:fs"
import type * as net from "node:net"
import type * as tls from "node:tls"
import { Effect } from "effect"
import { type Conn, type Listener, type TlsListen, TransportError } from "./transport.js"

/** How long a gracefully ended connection may take to drain before it is destroyed. */
export const END_GRACE_MS = 2_000

/** IPv4 peers on a dual-stack socket as nats-server shows them: without the `::ffff:` prefix. */
export const normalizeAddress = (a: string | undefined): string =>
  a === undefined ? "" : a.startsWith("::ffff:") ? a.slice(7) : a

/** nats-server's forms: version "1.3", cipher suite by its IANA name. Undefined until the handshake is done. */
export const tlsDetails = (socket: tls.TLSSocket): Conn["tls"] => {
  const protocol = socket.getProtocol()
  if (protocol === null || protocol === "unknown") return undefined
  const cipher = socket.getCipher()
  return { version: protocol.replace(/^TLSv/, ""), cipher: cipher.standardName ?? cipher.name }
}

/**
 * Options for a TLS-first server (`tls.createServer`, `https.createServer`): the
 * certificate, key and CA read from their files, client certificates demanded and
 * checked against the CA with `verify`, and the handshake timeout.
 */
export const tlsServerOptions = (o: TlsListen): Effect.Effect<tls.TlsOptions, TransportError> =>
  Effect.try({
    try: () => ({
      cert: readFileSync(o.certFile),
      key: readFileSync(o.keyFile),
      ...(o.caFile !== undefined && { ca: readFileSync(o.caFile) }),
      requestCert: o.verify,
      rejectUnauthorized: o.verify,
      handshakeTimeout: o.timeoutMs
    }),
    // Node's messages name the file, never the key material.
    catch: (e) => new TransportError({ reason: "Listen", message: `tls: cannot load the certificate or key: ${(e as Error).message}` })
  })

/**
 * Closing a listening server, which may already have stopped accepting (lame duck mode):
 * once Node's `close` event has fired it never fires again, so it is remembered.
 */
const closings = new WeakMap<net.Server, Promise<void>>()

const closedPromise = (server: net.Server): Promise<void> => {
  let p = closings.get(server)
  if (p === undefined) {
    p = new Promise<void>((res) => server.once("close", () => res()))
    closings.set(server, p)
  }
  return p
}

/** Stop accepting; connections already accepted stay. */
export const stopAccepting = (server: net.Server): void => {
  closedPromise(server)
  if (server.listening) server.close()
}

/** Stop accepting (if still listening) and wait until every connection is gone. */
export const closeServer = (server: net.Server): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    closedPromise(server).then(() => resume(Effect.void))
    if (server.listening) server.close()
  })

export const listenerOf = (host: string, port: number) => (server: net.Server): Listener => {
  const addr = server.address()
  return { host, port: typeof addr === "object" && addr !== null ? addr.port : port, stopAccepting: () => stopAccepting(server) }
}
