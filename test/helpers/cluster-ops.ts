// A cluster-peer parser handler that records every op as plain data, for parser tests and
// the interop driver. Records are copied: the parser's records are only valid during a call.
import type { ParseError, PeerInterest, PeerMsg, PeerOpHandler } from "../../src/core/cluster/parser.js"

export type PeerRec =
  | readonly ["info" | "connect", string]
  | readonly ["ping"] | readonly ["pong"]
  | readonly ["err", string]
  | readonly ["sub" | "unsub", Interest]
  | readonly ["msg", Msg]
  | readonly ["error", ParseError]

/** A copy of the parser's record (which is only valid during the call). */
export type Interest = PeerInterest

/** A message with its headers and payload copied out of the parser's buffer. */
export type Msg = Omit<PeerMsg, "buf" | "start" | "end"> & { readonly data: Buffer }

export const copyInterest = (i: PeerInterest): Interest => ({
  account: i.account,
  subject: i.subject,
  queue: i.queue,
  weight: i.weight,
  origin: i.origin,
  fromLeaf: i.fromLeaf
})

export const copyMsg = (m: PeerMsg): Msg => ({
  account: m.account,
  subject: m.subject,
  reply: m.reply,
  queues: [...m.queues],
  hdrLen: m.hdrLen,
  data: Buffer.from(m.buf.subarray(m.start, m.end)),
  origin: m.origin
})

export const peerRecorder = (ops: Array<PeerRec>): PeerOpHandler => ({
  info: (json) => ops.push(["info", json]),
  connect: (json) => ops.push(["connect", json]),
  ping: () => ops.push(["ping"]),
  pong: () => ops.push(["pong"]),
  err: (message) => ops.push(["err", message]),
  sub: (i) => ops.push(["sub", copyInterest(i)]),
  unsub: (i) => ops.push(["unsub", copyInterest(i)]),
  msg: (m) => ops.push(["msg", copyMsg(m)]),
  protocolError: (e) => ops.push(["error", e])
})

/** 256 bytes, every value once: a payload that survives no text conversion. */
export const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i))

/** A message to encode (the whole of `data` is headers then payload). */
export const outMsg = (o: Partial<PeerMsg> & { readonly subject: string; readonly data: Buffer }): PeerMsg => ({
  account: "",
  reply: "",
  queues: [],
  hdrLen: -1,
  origin: "",
  buf: o.data,
  start: 0,
  end: o.data.length,
  ...o
})

/** Test shorthands for expected records. */
export const sub = (account: string, subject: string, queue = "", weight = 1, origin = "", fromLeaf = origin !== ""): PeerRec =>
  ["sub", { account, subject, queue, weight, origin, fromLeaf }]

export const unsub = (account: string, subject: string, queue = "", fromLeaf = false): PeerRec =>
  ["unsub", { account, subject, queue, weight: 1, origin: "", fromLeaf }]

export const msg = (
  account: string,
  subject: string,
  payload: string,
  o: { reply?: string; queues?: ReadonlyArray<string>; hdrLen?: number; origin?: string } = {}
): PeerRec => [
  "msg",
  {
    account,
    subject,
    reply: o.reply ?? "",
    queues: o.queues ?? [],
    hdrLen: o.hdrLen ?? -1,
    data: Buffer.from(payload, "latin1"),
    origin: o.origin ?? ""
  }
]
