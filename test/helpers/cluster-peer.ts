// A test-only cluster peer: one TCP connection speaking the route or leaf-node protocol
// with nothing but the core codec (PeerParser in, the cluster encoders out). It records
// every op it receives, answers PING with PONG, and lets a test wait for ops. Used to prove
// the codec against a real nats-server in both roles (soliciting and accepting).
import * as net from "node:net"
import { encodeConnect, encodeInfo, PONG } from "../../src/core/cluster/encode.js"
import { type PeerKind, PeerParser } from "../../src/core/cluster/parser.js"
import { OutBuf } from "../../src/core/nats/outbuf.js"
import { type PeerRec, peerRecorder } from "./cluster-ops.js"
import { eventually } from "./server.js"

const LIMITS = { maxControlLine: 64 * 1024, maxPayload: 8 * 1024 * 1024 }

export class PeerDriver {
  readonly ops: Array<PeerRec> = []
  /** Raw bytes received, latin1 (for tests that look at the exact wire text). */
  raw = ""
  closed = false
  /** Answer the peer's PINGs (nats-server closes a route or leaf that stops answering). */
  autoPong = true
  private readonly parser: PeerParser

  constructor(
    readonly kind: PeerKind,
    private readonly socket: net.Socket
  ) {
    const record = peerRecorder(this.ops)
    this.parser = new PeerParser(kind, {
      ...record,
      ping: () => {
        record.ping()
        if (this.autoPong && !socket.destroyed) socket.write(PONG)
      }
    }, LIMITS)
    socket.on("data", (d: Buffer) => {
      this.raw += d.toString("latin1")
      this.parser.feed(d)
    })
    socket.on("close", () => (this.closed = true))
    socket.on("error", () => {})
  }

  /** Connects to a route or leaf-node listener. */
  static connect(kind: PeerKind, port: number): Promise<PeerDriver> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", port }, () => resolve(new PeerDriver(kind, s)))
      s.once("error", reject)
    })
  }

  /** Listens on an ephemeral loopback port for one connection from a soliciting peer. */
  static async listen(kind: PeerKind): Promise<{ readonly port: number; readonly accepted: Promise<PeerDriver>; close(): void }> {
    let resolveAccepted: (d: PeerDriver) => void = () => {}
    const accepted = new Promise<PeerDriver>((r) => (resolveAccepted = r))
    const server = net.createServer((s) => resolveAccepted(new PeerDriver(kind, s)))
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
    return { port: (server.address() as net.AddressInfo).port, accepted, close: () => server.close() }
  }

  send(bytes: Buffer | string): void {
    this.socket.write(typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes)
  }

  /** Encodes with the cluster encoders into one buffer and sends it. */
  write(encode: (out: OutBuf) => void): void {
    const out = new OutBuf(256)
    encode(out)
    const bytes = out.take()
    if (bytes !== undefined) this.socket.write(bytes)
  }

  sendInfo(info: object): void {
    this.send(encodeInfo(info))
  }

  sendConnect(connect: object): void {
    this.send(encodeConnect(connect))
  }

  /** The first received op (from index `from` on) that `pick` maps to a value; waits for it. */
  async waitFor<T>(pick: (op: PeerRec) => T | undefined, what: string, from = 0, timeoutMs = 15_000): Promise<T> {
    let found: T | undefined
    await eventually(
      () => {
        for (let i = from; i < this.ops.length && found === undefined; i++) found = pick(this.ops[i])
        return found !== undefined
      },
      `${what} (last ops: ${JSON.stringify(this.ops.slice(-5))})`,
      timeoutMs
    )
    return found!
  }

  /** JSON of the INFOs received so far, in order. */
  infos(): Array<string> {
    return this.ops.flatMap((o) => (o[0] === "info" ? [o[1]] : []))
  }

  errors(): Array<string> {
    return this.ops.flatMap((o) => (o[0] === "err" ? [o[1]] : []))
  }

  async waitClosed(timeoutMs = 15_000): Promise<void> {
    await eventually(() => this.closed, "the peer to close the connection", timeoutMs)
  }

  close(): void {
    this.socket.destroy()
  }
}
