// A NATS parser handler that records every op, for parser tests.
import type { NatsOpHandler, ParseError } from "../../src/core/nats/parser.js"

export type Rec = ReadonlyArray<string | number>

/** Records every op; payloads are copied (as latin1 text) since buf is only valid during the call. */
export const recorder = (ops: Array<Rec>): NatsOpHandler => ({
  connect: (json) => ops.push(["connect", json]),
  pub: (subject, reply, hdrLen, buf, start, end) =>
    ops.push(["pub", subject, reply, hdrLen, buf.toString("latin1", start, end)]),
  sub: (subject, queue, sid) => ops.push(["sub", subject, queue, sid]),
  unsub: (sid, max) => ops.push(["unsub", sid, max]),
  ping: () => ops.push(["ping"]),
  pong: () => ops.push(["pong"]),
  info: (json) => ops.push(["info", json]),
  ok: () => ops.push(["ok"]),
  err: (message) => ops.push(["err", message]),
  protocolError: (e: ParseError) => ops.push(["error", e.kind])
})
