import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { writeLeafMsg, writeLeafSub, writeLeafUnsub, writeRouteMsg, writeRouteSub, writeRouteUnsub } from "../../src/core/cluster/encode.js"
import { type PeerKind, PeerParser } from "../../src/core/cluster/parser.js"
import { OutBuf } from "../../src/core/outbuf.js"
import { msg, type PeerRec, peerRecorder, sub, unsub } from "../helpers/cluster-ops.js"
import { bytewise, chunksOf } from "../helpers/chunks.js"

// The same bytes must give the same ops however they are cut into chunks, and whatever the
// encoders write must parse back to what they were given.

const LIMITS = { maxControlLine: 4096, maxPayload: 1 << 20 }
type Out = ReadonlyArray<PeerRec | readonly ["error", string]>

const parseChunks = (kind: PeerKind, chunks: ReadonlyArray<Buffer>, limits = LIMITS): Out => {
  const ops: Array<PeerRec> = []
  const p = new PeerParser(kind, peerRecorder(ops), limits)
  for (const c of chunks) {
    // Copies that are overwritten afterwards: the parser must not keep references to them.
    const copy = Buffer.from(c)
    p.feed(copy)
    copy.fill(0x5a)
  }
  return ops.map((r) => (r[0] === "error" ? (["error", r[1].kind] as const) : r))
}

const HDR = "NATS/1.0\r\nFoo: Bar\r\n\r\n"

const ROUTE_STREAM = Buffer.from(
  'INFO {"server_id":"N1","cluster":"C1"} \r\n' +
    "PING\r\n" +
    "RS+ $G hub.>\r\n" +
    "rs+ $G work.* W 2\r\n" +
    "LS+ LEAF1 $G leafq LQ 1\r\n" +
    "RMSG $G hub.one 5\r\nhello\r\n" +
    "RMSG $G work.b + rr W Q2 4\r\njob2\r\n" +
    "RMSG $G work.a | W 3\r\njob\r\n" +
    `HMSG $G hub.two reply.to 22 24\r\n${HDR}hi\r\n` +
    "LMSG LEAF1 $G routy r3 0 9\r\nfrom-leaf\r\n" +
    `LMSG LEAF1 $G rq + rr RQ 22 23\r\n${HDR}3\r\n` +
    "LS-  $G leafq LQ\r\n" +
    "RS- $G work.* W\n" +
    "PONG\r\n-ERR 'oops'\r\n"
)

describe("cluster parser: chunking", () => {
  const whole = parseChunks("route", [ROUTE_STREAM])

  it("the reference stream parses to the expected ops", () => {
    expect(whole).toEqual([
      ["info", '{"server_id":"N1","cluster":"C1"}'],
      ["ping"],
      sub("$G", "hub.>"),
      sub("$G", "work.*", "W", 2),
      sub("$G", "leafq", "LQ", 1, "LEAF1"),
      msg("$G", "hub.one", "hello"),
      msg("$G", "work.b", "job2", { reply: "rr", queues: ["W", "Q2"] }),
      msg("$G", "work.a", "job", { queues: ["W"] }),
      msg("$G", "hub.two", `${HDR}hi`, { reply: "reply.to", hdrLen: 22 }),
      msg("$G", "routy", "from-leaf", { reply: "r3", origin: "LEAF1" }),
      msg("$G", "rq", `${HDR}3`, { reply: "rr", queues: ["RQ"], hdrLen: 22, origin: "LEAF1" }),
      unsub("$G", "leafq", "LQ", true),
      unsub("$G", "work.*", "W"),
      ["pong"],
      ["err", "oops"]
    ])
  })

  it("one byte at a time", () => {
    expect(parseChunks("route", bytewise(ROUTE_STREAM))).toEqual(whole)
  })

  it("split in two at every byte boundary", () => {
    for (let cut = 0; cut <= ROUTE_STREAM.length; cut++) {
      const chunks = [ROUTE_STREAM.subarray(0, cut), ROUTE_STREAM.subarray(cut)]
      expect(parseChunks("route", chunks), `cut at ${cut}`).toEqual(whole)
    }
  })

  it("split in three at many pairs of boundaries", () => {
    for (let a = 0; a <= ROUTE_STREAM.length; a += 7) {
      for (let b = a; b <= ROUTE_STREAM.length; b += 11) {
        const chunks = [ROUTE_STREAM.subarray(0, a), ROUTE_STREAM.subarray(a, b), ROUTE_STREAM.subarray(b)]
        expect(parseChunks("route", chunks), `cuts at ${a}, ${b}`).toEqual(whole)
      }
    }
  })

  it("errors are the same at every split", () => {
    const limits = { maxControlLine: 20, maxPayload: 8 }
    const cases: ReadonlyArray<[PeerKind, string]> = [
      ["route", "PING\r\nRMSG $G a 9\r\n"],
      ["route", "PING\r\nRS+ $G a.very.long.subject\r\n"],
      ["route", "PING\r\nRMSG $G a 2\r\nabc\r\n"],
      ["route", "PING\r\nHMSG $G a 3 2\r\n"],
      ["route", "PING\r\nRS+ $G a q\r\n"],
      ["route", "PING\r\nRMSG $G a b c 1\r\n"],
      ["route", "PING\r\nRSX\r\n"],
      ["leaf", "PING\r\nRS+ $G a\r\n"],
      ["leaf", "PING\r\nLMSG a 2\r\nabc\r\n"]
    ]
    for (const [kind, text] of cases) {
      const input = Buffer.from(text)
      const expected = parseChunks(kind, [input], limits)
      expect(expected[expected.length - 1][0], text).toBe("error")
      expect(parseChunks(kind, bytewise(input), limits)).toEqual(expected)
      for (let cut = 0; cut <= input.length; cut++) {
        expect(parseChunks(kind, [input.subarray(0, cut), input.subarray(cut)], limits), `${text} cut at ${cut}`).toEqual(expected)
      }
    }
  })
})

// ---- encoder -> parser round trips ----

const token = fc.string({ unit: fc.constantFrom(..."abcXYZ019._-*>$é".split("")), minLength: 1, maxLength: 10 })
/** Tokens that are not a reply or queue marker on their own. */
const name = token.filter((t) => t !== "+" && t !== "|")
const bytes = fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a))

interface MsgCase {
  readonly account: string
  readonly subject: string
  readonly reply: string
  readonly queues: ReadonlyArray<string>
  readonly headers: Buffer | undefined
  readonly payload: Buffer
  readonly origin: string
}

const msgCase = (withOrigin: boolean): fc.Arbitrary<MsgCase> =>
  fc.record({
    account: name,
    subject: name,
    reply: fc.option(name, { nil: "" }),
    queues: fc.array(name, { maxLength: 4 }),
    headers: fc.option(bytes, { nil: undefined }),
    payload: bytes,
    origin: withOrigin ? fc.option(name, { nil: "" }) : fc.constant("")
  })

const asPeerMsg = (c: MsgCase) => {
  const data = Buffer.concat([c.headers ?? Buffer.alloc(0), c.payload])
  return { ...c, hdrLen: c.headers === undefined ? -1 : c.headers.length, buf: data, start: 0, end: data.length }
}

/** What the parser gives back; a route LMSG with an empty header block reads as no headers. */
const expectedMsg = (kind: PeerKind, c: MsgCase): PeerRec => {
  const data = Buffer.concat([c.headers ?? Buffer.alloc(0), c.payload])
  const hdrLen = c.headers === undefined || (c.origin !== "" && c.headers.length === 0) ? -1 : c.headers.length
  return [
    "msg",
    { account: kind === "route" ? c.account : "", subject: c.subject, reply: c.reply, queues: c.queues, hdrLen, data, origin: c.origin }
  ]
}

describe("cluster encoders: what they write parses back", () => {
  it("route messages (RMSG, HMSG, LMSG with an origin) through any chunking", () => {
    fc.assert(
      fc.property(fc.array(msgCase(true), { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 12 }), (cases, cuts) => {
        const out = new OutBuf(64)
        for (const c of cases) writeRouteMsg(out, asPeerMsg(c))
        const wire = out.take() ?? Buffer.alloc(0)
        expect(parseChunks("route", chunksOf(wire, cuts))).toEqual(cases.map((c) => expectedMsg("route", c)))
      }),
      { numRuns: 300 }
    )
  })

  it("leaf messages (LMSG, HMSG) through any chunking", () => {
    fc.assert(
      fc.property(fc.array(msgCase(false), { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 12 }), (cases, cuts) => {
        const out = new OutBuf(64)
        for (const c of cases) writeLeafMsg(out, asPeerMsg(c))
        const wire = out.take() ?? Buffer.alloc(0)
        expect(parseChunks("leaf", chunksOf(wire, cuts))).toEqual(cases.map((c) => expectedMsg("leaf", c)))
      }),
      { numRuns: 300 }
    )
  })

  it("interest (RS+/RS-/LS+/LS- on routes, LS+/LS- on leaf connections)", () => {
    const interest = fc.record({
      account: name,
      subject: name,
      queue: fc.option(name, { nil: "" }),
      weight: fc.integer({ min: 1, max: 100_000 }),
      origin: fc.option(name, { nil: "" }),
      add: fc.boolean()
    })
    fc.assert(
      fc.property(fc.array(interest, { maxLength: 20 }), (cases) => {
        const route = new OutBuf(64)
        const leaf = new OutBuf(64)
        for (const c of cases) {
          if (c.add) {
            writeRouteSub(route, c.account, c.subject, c.queue, c.weight, c.origin)
            writeLeafSub(leaf, c.subject, c.queue, c.weight)
          } else {
            writeRouteUnsub(route, c.account, c.subject, c.queue, c.origin !== "")
            writeLeafUnsub(leaf, c.subject, c.queue)
          }
        }
        const weight = (c: (typeof cases)[number]) => (c.queue === "" ? 1 : c.weight)
        expect(parseChunks("route", [route.take() ?? Buffer.alloc(0)])).toEqual(
          cases.map((c) =>
            c.add ? sub(c.account, c.subject, c.queue, weight(c), c.origin) : unsub(c.account, c.subject, c.queue, c.origin !== "")
          )
        )
        expect(parseChunks("leaf", [leaf.take() ?? Buffer.alloc(0)])).toEqual(
          cases.map((c) => (c.add ? sub("", c.subject, c.queue, weight(c)) : unsub("", c.subject, c.queue)))
        )
      }),
      { numRuns: 200 }
    )
  })

  it("arbitrary bytes never throw, and any chunking gives the same ops", () => {
    const alphabet = fc.oneof(
      fc.integer({ min: 0, max: 255 }),
      fc.constantFrom(...Buffer.from("RS+ RS- LS+ LS- RMSG LMSG HMSG PING PONG -ERR INFO CONNECT $G | + 0123456789 \t\r\n\r\n"))
    )
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 400 }), fc.array(fc.nat(), { maxLength: 10 }), fc.constantFrom<PeerKind>("route", "leaf"), (bs, cuts, kind) => {
        const input = Buffer.from(bs)
        const limits = { maxControlLine: 64, maxPayload: 64 }
        const expected = parseChunks(kind, [input], limits)
        expect(parseChunks(kind, chunksOf(input, cuts), limits)).toEqual(expected)
      }),
      { numRuns: 500 }
    )
  })
})
