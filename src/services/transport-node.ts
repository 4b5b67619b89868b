// Transport over Node's `net`: one listening socket per `listen`, closed with its scope.
import * as net from "node:net"
import { Effect, Layer } from "effect"
import { type Conn, type ConnHandlers, type Listener, Transport, TransportError } from "./transport.js"

/** How long a gracefully ended connection may take to drain before it is destroyed. */
const END_GRACE_MS = 2_000

const wrap = (socket: net.Socket): Conn => ({
  remoteAddress: normalizeAddress(socket.remoteAddress),
  remotePort: socket.remotePort ?? 0,
  tls: undefined,
  write: (buf) => {
    if (!socket.destroyed) socket.write(buf)
  },
  writev: (bufs) => {
    if (socket.destroyed) return
    // Corked writes reach the kernel as one writev when uncorked.
    socket.cork()
    for (let i = 0; i < bufs.length; i++) socket.write(bufs[i])
    socket.uncork()
  },
  writableLength: () => socket.writableLength,
  end: () => {
    if (socket.destroyed) return
    socket.end()
    setTimeout(() => socket.destroy(), END_GRACE_MS).unref()
  },
  destroy: () => {
    socket.destroy()
  }
})

const normalizeAddress = (a: string | undefined): string =>
  a === undefined ? "" : a.startsWith("::ffff:") ? a.slice(7) : a

const attach = (socket: net.Socket, handlers: ConnHandlers): void => {
  let lastError: Error | undefined
  socket.on("data", (chunk: Buffer) => handlers.onData(chunk))
  socket.on("drain", () => handlers.onDrain())
  socket.on("error", (e) => {
    lastError = e
  })
  socket.on("close", () => handlers.onClose(lastError))
}

export const listenNode = (
  host: string,
  port: number,
  accept: (conn: Conn) => ConnHandlers
): Effect.Effect<Listener, TransportError, import("effect").Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ server: net.Server; listener: Listener }, TransportError>((resume) => {
      const server = net.createServer({ noDelay: true, pauseOnConnect: false }, (socket) => {
        socket.setNoDelay(true)
        try {
          attach(socket, accept(wrap(socket)))
        } catch {
          socket.destroy()
        }
      })
      server.on("error", (e) => {
        resume(Effect.fail(new TransportError({ reason: "Listen", message: `cannot listen on ${host}:${port}: ${e.message}` })))
      })
      server.listen({ host, port, backlog: 4096 }, () => {
        const addr = server.address()
        const actual = typeof addr === "object" && addr !== null ? addr.port : port
        resume(Effect.succeed({ server, listener: { host, port: actual } }))
      })
    }),
    ({ server }) => Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
  ).pipe(Effect.map(({ listener }) => listener))

export const layerNode: Layer.Layer<Transport> = Layer.succeed(Transport, { listen: listenNode })
