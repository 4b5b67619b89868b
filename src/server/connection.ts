// What every protocol driver with a socket shares, over the engine's Peer: reading chunks
// into its parser, the peer going away, and closing on our side (an `-ERR` first when
// there is one, what is pending written, then the socket ended). NATS clients, routes and
// leaf-node connections differ in their reasons (nats-server's words for each kind) and in
// what they do once closed (`finish`), not in this lifecycle.
import { writeErr } from "../core/nats/encode.js"
import { type Outbound, Peer } from "../engine/outbound.js"
import type { Account } from "../engine/principal.js"
import type { Conn } from "../services/transport.js"

/** What a connection's parser must offer its lifecycle. */
export interface ChunkParser {
  feed(chunk: Buffer): void
  /** Dead from now on: later feeds are ignored. */
  stop(): void
}

export abstract class Connection<Reason extends string> extends Peer {
  abstract override readonly conn: Conn
  abstract readonly parser: ChunkParser
  /** Protocol tracing (-V): checked once per op. */
  abstract tracing: boolean

  // Counters for /connz, /routez, /leafz and /varz.
  inMsgs = 0
  inBytes = 0
  outMsgs = 0
  outBytes = 0
  /** When it was accepted or made. */
  readonly start: number
  /** Last time anything was read from it. */
  lastActivity: number
  /** Round-trip time of the last PING, nanoseconds; 0 until measured. */
  rttNs = 0

  // Liveness.
  pingsOut = 0
  nextPingAt: number
  /** When (high-resolution nanoseconds) an RTT-measuring PING was sent; -1 when none is outstanding. */
  rttPingSentAt = -1

  constructor(account: Account, now: number, pingIntervalMs: number) {
    super(account)
    this.start = now
    this.lastActivity = now
    this.nextPingAt = now + pingIntervalMs
  }

  /** Address, times and traffic, as every monitoring snapshot of a connection shows them. */
  traffic() {
    return {
      ip: this.conn.remoteAddress,
      port: this.conn.remotePort,
      start: this.start,
      lastActivity: this.lastActivity,
      rttNs: this.rttNs,
      pendingBytes: this.pendingBytes,
      inMsgs: this.inMsgs,
      outMsgs: this.outMsgs,
      inBytes: this.inBytes,
      outBytes: this.outBytes
    }
  }

  /** The one flusher its output goes through (the server's). */
  protected abstract get outbound(): Outbound

  /** Once, after it closed for `reason` (either side): out of its owner's tables. */
  protected abstract finish(reason: Reason): void

  /** An outbound op for the trace (`->> [op]`). */
  abstract traceOut(op: string): void

  /** Called with each chunk before it is parsed (a NATS client's first RTT PING). */
  protected beforeFeed(): void {}

  /** A chunk read from the socket at `now`: every complete op in it is handled before this returns. */
  receive(chunk: Buffer, now: number): void {
    if (this.closed) return
    this.lastActivity = now
    this.beforeFeed()
    this.parser.feed(chunk)
  }

  /** The peer went away (or the transport confirms our close): nothing more is written. */
  lost(reason: Reason): void {
    if (this.closed) return
    this.closed = true
    this.finish(reason)
  }

  /** Close on our side: `-ERR '<errText>'` first when given, what is pending goes out, then the socket ends. */
  close(reason: Reason, errText?: string): void {
    if (this.closed) return
    this.closed = true
    this.parser.stop()
    if (errText !== undefined) {
      if (this.tracing) this.traceOut(`-ERR '${errText}'`)
      writeErr(this.out, errText)
    }
    this.outbound.flushNow(this)
    this.conn.end()
    this.finish(reason)
  }
}
