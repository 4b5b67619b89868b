// A test-only cluster peer: one TCP connection speaking the route or leaf-node protocol
// with nothing but the core codec (PeerParser in, the cluster encoders out). It records
// every op it receives, answers PING with PONG, and lets a test wait for ops. Used to prove
// the codec against a real nats-server in both roles (soliciting and accepting).
import * as net from "node:net"
import type { NatsConnection } from "@nats-io/transport-node"
import { encodeConnect, encodeInfo, PONG } from "../../src/core/cluster/encode.js"
import { type PeerKind, PeerParser } from "../../src/core/cluster/parser.js"
import { OutBuf } from "../../src/core/outbuf.js"
import { type Msg, type PeerRec, peerRecorder, sub, unsub } from "./cluster-ops.js"
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

  /** Waits until the other server has processed everything sent so far (it answers our PING in order). */
  async roundTrip(): Promise<void> {
    const from = this.ops.length
    this.send("PING\r\n")
    await this.waitFor((op) => (op[0] === "pong" ? true : undefined), "PONG", from)
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

const isSystemOrLoop = (i: { readonly account: string; readonly subject: string }): boolean =>
  i.account === "$SYS" || i.subject.startsWith("$SYS.") || i.subject.startsWith("$LDS.")

/** The interest records (RS+/RS-/LS+/LS-) from index `from` on, without the system account's and loop-detection subjects. */
export const interestOps = (peer: PeerDriver, from = 0): Array<PeerRec> =>
  peer.ops.slice(from).filter((op) => (op[0] === "sub" || op[0] === "unsub") && !isSystemOrLoop(op[1]))

/**
 * Subscription churn by a client of the other server: `<prefix>.>`, then two members of
 * queue group W on `<prefix>.work`, then unsubscribed one by one (a member, the other, the
 * plain one). Returns the interest the peer was sent from index `from` on, once the last
 * unsubscribe has arrived: churnAnnounced when the server behaves as nats-server does.
 */
export const interestChurn = async (client: NatsConnection, peer: PeerDriver, prefix: string, from = peer.ops.length): Promise<Array<PeerRec>> => {
  const plain = client.subscribe(`${prefix}.>`)
  const q1 = client.subscribe(`${prefix}.work`, { queue: "W" })
  const q2 = client.subscribe(`${prefix}.work`, { queue: "W" })
  await client.flush()
  await peer.waitFor((op) => (op[0] === "sub" && op[1].weight === 2 ? true : undefined), "queue weight 2", from)
  q2.unsubscribe()
  await client.flush()
  q1.unsubscribe()
  plain.unsubscribe()
  await client.flush()
  await peer.waitFor((op) => (op[0] === "unsub" && op[1].subject === `${prefix}.>` ? true : undefined), `the unsubscribe of ${prefix}.>`, from)
  return interestOps(peer, from)
}

/**
 * What interestChurn's peer is told by nats-server: the queue group's weight is absolute
 * (1, 2, back to 1) and its last member's departure withdraws it by name, without a weight.
 * `account` is "" on a leaf connection.
 */
export const churnAnnounced = (account: string, prefix: string): Array<PeerRec> => [
  sub(account, `${prefix}.>`),
  sub(account, `${prefix}.work`, "W", 1),
  sub(account, `${prefix}.work`, "W", 2),
  sub(account, `${prefix}.work`, "W", 1),
  unsub(account, `${prefix}.work`, "W"),
  unsub(account, `${prefix}.>`)
]

/**
 * The messages the peer is sent because of `act` (a client of the other server publishing
 * and flushing), the system account's aside: a round trip before settles what came earlier,
 * one after makes sure whatever `act` caused has arrived.
 */
export const messagesFrom = async (peer: PeerDriver, act: () => Promise<void>): Promise<Array<Msg>> => {
  await peer.roundTrip()
  const from = peer.ops.length
  await act()
  await peer.roundTrip()
  return peer.ops.slice(from).flatMap((op) => (op[0] === "msg" && !isSystemOrLoop(op[1]) ? [op[1]] : []))
}
