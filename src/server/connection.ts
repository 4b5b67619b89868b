// What every protocol driver with a socket shares, over the engine's Peer: reading chunks
// into its parser, the peer going away, and closing on our side (an `-ERR` first when
// there is one, what is pending written, then the socket ended). NATS clients, routes and
// leaf-node connections differ in their reasons (nats-server's words for each kind) and in
// what they do once closed (`finish`), not in this lifecycle.
import { writeErr } from "../core/nats/encode.js"
import { type Outbound, Peer } from "../engine/outbound.js"
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
  /** Last time anything was read from it. */
  abstract lastActivity: number
  /** Protocol tracing (-V): checked once per op. */
  abstract tracing: boolean

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
