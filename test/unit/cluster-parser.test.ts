import { describe, expect, it } from "vitest"
import { type PeerKind, PeerParser } from "../../src/core/cluster/parser.js"
import { msg, type PeerRec, peerRecorder, sub, unsub } from "../helpers/cluster-ops.js"

// The route and leaf-node grammar as nats-server 2.9.10 was observed to send it (the byte
// strings below are copied from what it sent), and what the parser refuses.

const LIMITS = { maxControlLine: 4096, maxPayload: 1024 * 1024 }

/** Ops with errors reduced to their kind, so expectations stay readable. */
type Out = ReadonlyArray<PeerRec | readonly ["error", string]>

const parse = (kind: PeerKind, input: string | Buffer, limits = LIMITS): Out => {
  const ops: Array<PeerRec> = []
  const p = new PeerParser(kind, peerRecorder(ops), limits)
  p.feed(typeof input === "string" ? Buffer.from(input, "latin1") : input)
  return ops.map((r) => (r[0] === "error" ? (["error", r[1].kind] as const) : r))
}

const HDR = "NATS/1.0\r\nFoo: Bar\r\n\r\n"

describe("route protocol", () => {
  it("RS+ and RS-, plain and queue groups with their weights", () => {
    expect(parse("route", "RS+ $G hub.>\r\nRS+ $G work.* W 1\r\nRS+ $G work.* W 2\r\nRS- $G work.* W\r\nRS- $G hub.>\r\n")).toEqual([
      sub("$G", "hub.>"),
      sub("$G", "work.*", "W", 1),
      sub("$G", "work.*", "W", 2),
      unsub("$G", "work.*", "W"),
      unsub("$G", "hub.>")
    ])
  })

  it("LS+ with the leaf origin cluster, and LS- as nats-server 2.9.10 sends it (no origin, two spaces)", () => {
    expect(parse("route", "LS+ LEAF1 $G leafy.>\r\nLS+ LEAF1 $G leafq LQ 1\r\nLS-  $G leafy.>\r\nLS-  $G leafq LQ\r\n")).toEqual([
      sub("$G", "leafy.>", "", 1, "LEAF1"),
      sub("$G", "leafq", "LQ", 1, "LEAF1"),
      unsub("$G", "leafy.>", "", true),
      unsub("$G", "leafq", "LQ", true)
    ])
  })

  it("RMSG without and with a reply, to queue groups (| and +), and HMSG with headers", () => {
    expect(
      parse(
        "route",
        "RMSG $G hub.one 5\r\nhello\r\n" +
          "RMSG $G edge.x back 4\r\ndown\r\n" +
          "RMSG $G work.a | W 3\r\njob\r\n" +
          "RMSG $G work.b + rr W 4\r\njob2\r\n" +
          "RMSG $G rq + rr RQ RQ2 1\r\n2\r\n" +
          `HMSG $G hub.two reply.to 22 24\r\n${HDR}hi\r\n` +
          `HMSG $G rq | RQ RQ2 22 23\r\n${HDR}4\r\n`
      )
    ).toEqual([
      msg("$G", "hub.one", "hello"),
      msg("$G", "edge.x", "down", { reply: "back" }),
      msg("$G", "work.a", "job", { queues: ["W"] }),
      msg("$G", "work.b", "job2", { reply: "rr", queues: ["W"] }),
      msg("$G", "rq", "2", { reply: "rr", queues: ["RQ", "RQ2"] }),
      msg("$G", "hub.two", `${HDR}hi`, { reply: "reply.to", hdrLen: 22 }),
      msg("$G", "rq", `${HDR}4`, { queues: ["RQ", "RQ2"], hdrLen: 22 })
    ])
  })

  it("LMSG from a leaf origin always has two sizes; 0 header bytes means no headers", () => {
    expect(
      parse(
        "route",
        "LMSG LEAF1 $G routy r3 0 9\r\nfrom-leaf\r\n" +
          `LMSG LEAF1 $G routy 22 33\r\n${HDR}from-leaf-h\r\n` +
          "LMSG LEAF1 $G rq | RQ RQ2 0 1\r\n1\r\n" +
          `LMSG LEAF1 $G rq + rr RQ RQ2 22 23\r\n${HDR}3\r\n`
      )
    ).toEqual([
      msg("$G", "routy", "from-leaf", { reply: "r3", origin: "LEAF1" }),
      msg("$G", "routy", `${HDR}from-leaf-h`, { hdrLen: 22, origin: "LEAF1" }),
      msg("$G", "rq", "1", { queues: ["RQ", "RQ2"], origin: "LEAF1" }),
      msg("$G", "rq", `${HDR}3`, { reply: "rr", queues: ["RQ", "RQ2"], hdrLen: 22, origin: "LEAF1" })
    ])
  })

  it("INFO (with nats-server's trailing space), CONNECT, PING, PONG, -ERR", () => {
    const info = '{"server_id":"NCL2","version":"2.9.10","proto":2,"cluster":"C1"}'
    expect(parse("route", `INFO ${info} \r\nCONNECT {"name":"x"}\r\nPING\r\nPONG\r\n-ERR 'Unknown Protocol Operation'\r\n`)).toEqual([
      ["info", info],
      ["connect", '{"name":"x"}'],
      ["ping"],
      ["pong"],
      ["err", "Unknown Protocol Operation"]
    ])
  })

  it("op names in any case, blanks of any kind and number between fields, LF alone", () => {
    expect(parse("route", "rs+ $G foo\nRs-\t $G  foo \r\nrmsg  $G\tfoo  1\r\nx\r\nPing\r\npONG\nls+ O $G f q 3\r\n")).toEqual([
      sub("$G", "foo"),
      unsub("$G", "foo"),
      msg("$G", "foo", "x"),
      ["ping"],
      ["pong"],
      sub("$G", "f", "q", 3, "O")
    ])
  })

  it("a payload with CR LF inside, and an empty payload", () => {
    expect(parse("route", "RMSG $G a 4\r\n\r\n\r\n\r\nRMSG $G b 0\r\n\r\n")).toEqual([msg("$G", "a", "\r\n\r\n"), msg("$G", "b", "")])
  })

  // The parser takes a message line that repeats the last one (before the sizes) from
  // what it parsed then: each message must still come out as parsed alone.
  it("messages repeating the line before their sizes: each as parsed alone", () => {
    const lines =
      "RMSG $G foo 1\r\na\r\n" +
      "RMSG $G foo 2\r\nbb\r\n" + // the same line, another size
      "RMSG  $G\tfoo  3 \r\nccc\r\n" + // other blanks: parsed again, the same fields
      "RMSG $G foo 12 1\r\nd\r\n" + // a reply made of digits
      "RMSG $G foo 12 1\r\ne\r\n" +
      "RMSG $G foo 1\r\nf\r\n" + // without it again
      `HMSG $G foo 22 23\r\n${HDR}g\r\n` + // the same words under another op: headers
      `HMSG $G foo 22 22\r\n${HDR}\r\n` +
      "RMSG $G foo | Q 1\r\nh\r\n" + // queue groups are never taken from the last line
      "RMSG $G foo | Q 1\r\ni\r\n" +
      "RMSG $G foo 1\r\nj\r\n" +
      "LMSG O $G foo 0 1\r\nk\r\n" + // 0 header bytes: none
      `LMSG O $G foo 22 23\r\n${HDR}l\r\n` +
      "RMSG $G bar 1\r\nm\r\n" +
      "RMSG $G foo 1\r\nn\r\n"
    expect(parse("route", lines)).toEqual([
      msg("$G", "foo", "a"),
      msg("$G", "foo", "bb"),
      msg("$G", "foo", "ccc"),
      msg("$G", "foo", "d", { reply: "12" }),
      msg("$G", "foo", "e", { reply: "12" }),
      msg("$G", "foo", "f"),
      msg("$G", "foo", `${HDR}g`, { hdrLen: 22 }),
      msg("$G", "foo", HDR, { hdrLen: 22 }),
      msg("$G", "foo", "h", { queues: ["Q"] }),
      msg("$G", "foo", "i", { queues: ["Q"] }),
      msg("$G", "foo", "j"),
      msg("$G", "foo", "k", { origin: "O" }),
      msg("$G", "foo", `${HDR}l`, { hdrLen: 22, origin: "O" }),
      msg("$G", "bar", "m"),
      msg("$G", "foo", "n")
    ])
    // Byte by byte (lines kept across chunks) it is the same.
    const ops: Array<PeerRec> = []
    const p = new PeerParser("route", peerRecorder(ops), LIMITS)
    const bytes = Buffer.from(lines, "latin1")
    for (let i = 0; i < bytes.length; i++) p.feed(bytes.subarray(i, i + 1))
    expect(ops).toEqual(parse("route", lines))
  })

  it("a repeated message line still has its sizes checked", () => {
    const limits = { maxControlLine: 4096, maxPayload: 10 }
    expect(parse("route", "RMSG $G foo 1\r\na\r\nRMSG $G foo 11\r\n", limits)).toEqual([msg("$G", "foo", "a"), ["error", "MaxPayload"]])
    expect(parse("route", `HMSG $G foo 22 22\r\n${HDR}\r\nHMSG $G foo 5 3\r\n`)).toEqual([msg("$G", "foo", HDR, { hdrLen: 22 }), ["error", "BadHeaderSize"]])
    expect(parse("route", "RMSG $G foo 1\r\na\r\nRMSG $G foo 1x\r\n")).toEqual([msg("$G", "foo", "a"), ["error", "BadArgs"]])
    expect(parse("route", "RMSG $G foo 1\r\na\r\nRMSG $G foo\r\n")).toEqual([msg("$G", "foo", "a"), ["error", "BadArgs"]])
  })

  it("many queue groups on one message", () => {
    const queues = Array.from({ length: 40 }, (_, i) => `q${i}`)
    expect(parse("route", `RMSG $G s + r ${queues.join(" ")} 1\r\nx\r\n`)).toEqual([msg("$G", "s", "x", { reply: "r", queues })])
  })

  it.each([
    ["RS+ without a subject", "RS+ $G\r\n", "BadArgs"],
    ["RS+ with a queue and no weight", "RS+ $G foo bar\r\n", "BadArgs"],
    ["RS+ with a weight that is not a number (nats-server takes it)", "RS+ $G foo q x\r\n", "BadArgs"],
    ["RS+ with weight 0 (nats-server sends RS- instead)", "RS+ $G foo q 0\r\n", "BadArgs"],
    ["RS+ with too many fields", "RS+ $G foo q 1 x\r\n", "BadArgs"],
    ["RS- without a subject", "RS- $G\r\n", "BadArgs"],
    ["RS- with a weight", "RS- $G foo q 1\r\n", "BadArgs"],
    ["LS+ without an origin", "LS+ $G foo\r\n", "BadArgs"],
    ["LS+ origin and account only", "LS+ X $G\r\n", "BadArgs"],
    ["LS- naming an origin (nats-server 2.9.10 refuses it too)", "LS- LEAF9 $G leafq LQ\r\n", "BadArgs"],
    ["RMSG with the account only", "RMSG $G\r\n", "BadArgs"],
    ["RMSG with a bad size", "RMSG $G foo x\r\nab\r\n", "BadArgs"],
    ["RMSG with a negative size", "RMSG $G foo -1\r\n", "BadArgs"],
    ["RMSG whose fourth field is no reply marker", "RMSG a b c d 3\r\nabc\r\n", "BadArgs"],
    ["RMSG with | and no queue (nats-server takes it)", "RMSG $G foo | 3\r\nabc\r\n", "BadArgs"],
    ["RMSG with + and no reply", "RMSG $G foo + 3\r\nabc\r\n", "BadArgs"],
    ["LMSG with one size", "LMSG X $G foo 3\r\nabc\r\n", "BadArgs"],
    ["HMSG with one size", "HMSG $G foo 3\r\nabc\r\n", "BadArgs"],
    ["HMSG whose headers are larger than the message", "HMSG $G foo 5 3\r\nabc\r\n", "BadHeaderSize"],
    ["a payload longer than its size", "RMSG $G foo 3\r\nabcd\r\n", "UnknownOp"],
    ["an unknown op", "XYZ\r\n", "UnknownOp"],
    ["an op name run on into another word", "PINGX\r\n", "UnknownOp"],
    ["a client op", "PUB foo 3\r\nabc\r\n", "UnknownOp"],
    ["+OK (routes are never verbose)", "+OK\r\n", "UnknownOp"],
    ["PING with arguments", "PING x\r\n", "BadArgs"],
    ["INFO without JSON", "INFO \r\n", "BadArgs"],
    ["CONNECT without JSON", "CONNECT\r\n", "BadArgs"]
  ])("%s is a protocol error", (_, input, kind) => {
    const out = parse("route", input)
    expect(out[out.length - 1]).toEqual(["error", kind])
    expect(out.filter((r) => r[0] === "error")).toHaveLength(1)
  })

  it("accepts `+ <reply>` with no queue group, as nats-server does", () => {
    expect(parse("route", "RMSG $G foo + r 3\r\nabc\r\n")).toEqual([msg("$G", "foo", "abc", { reply: "r" })])
  })

  it("bounds the payload by max_payload, before reading it", () => {
    const limits = { maxControlLine: 4096, maxPayload: 10 }
    expect(parse("route", "RMSG $G foo 10\r\n0123456789\r\n", limits)).toEqual([msg("$G", "foo", "0123456789")])
    expect(parse("route", "RMSG $G foo 11\r\n", limits)).toEqual([["error", "MaxPayload"]])
    expect(parse("route", "LMSG O $G foo 0 99999999999999999999\r\n", limits)).toEqual([["error", "MaxPayload"]])
  })

  it("bounds the control line, also when it has no LF yet", () => {
    const limits = { maxControlLine: 20, maxPayload: 1024 }
    // "RS+ $G " is 7 bytes: a 13-byte subject makes a 20-byte line.
    expect(parse("route", "RS+ $G abcdefghijklm\r\n", limits)).toEqual([sub("$G", "abcdefghijklm")])
    expect(parse("route", "RS+ $G abcdefghijklmn\r\n", limits)).toEqual([["error", "MaxControlLine"]])
    expect(parse("route", "RS+ $G abcdefghijklmnopqrstuvwxyz", limits)).toEqual([["error", "MaxControlLine"]])
    // split across chunks: the same limit
    const ops: Array<PeerRec> = []
    const p = new PeerParser("route", peerRecorder(ops), limits)
    for (const c of ["RS+ $G abcdef", "ghijkl", "mn"]) p.feed(Buffer.from(c))
    expect(ops.map((r) => r[0])).toEqual(["error"])
  })

  it("is dead after an error: later input is ignored", () => {
    const ops: Array<PeerRec> = []
    const p = new PeerParser("route", peerRecorder(ops), LIMITS)
    p.feed(Buffer.from("XYZ\r\nPING\r\n"))
    p.feed(Buffer.from("PING\r\n"))
    expect(p.dead).toBe(true)
    expect(ops.map((r) => r[0])).toEqual(["error"])
  })

  it("quotes the offending bytes in the error detail, controls as dots", () => {
    const ops: Array<PeerRec> = []
    new PeerParser("route", peerRecorder(ops), LIMITS).feed(Buffer.from("RS+ $G foo bar\r\n"))
    expect(ops).toEqual([["error", { kind: "BadArgs", detail: "RS+ needs <account> <subject> [<queue> <weight>]: '$G foo bar'" }]])
  })
})

describe("leaf-node protocol", () => {
  it("LS+ and LS-: no account on the wire", () => {
    expect(parse("leaf", "LS+ edge.x\r\nLS+ work.* W 1\r\nLS+ $LDS.7fb9kfYzHZYtGLJjOdwM6W\r\nLS- work.* W\r\nLS- hub.>\r\n")).toEqual([
      sub("", "edge.x"),
      sub("", "work.*", "W", 1),
      sub("", "$LDS.7fb9kfYzHZYtGLJjOdwM6W"),
      unsub("", "work.*", "W"),
      unsub("", "hub.>")
    ])
  })

  it("LMSG: plain, with a reply (no marker), to queue groups (| and +); HMSG with headers", () => {
    expect(
      parse(
        "leaf",
        "LMSG hub.one 5\r\nhello\r\n" +
          "LMSG edge.x back 4\r\ndown\r\n" +
          "LMSG work.a | W 3\r\njob\r\n" +
          "LMSG rq + rr RQ RQ2 1\r\n2\r\n" +
          `HMSG edge.x 22 27\r\n${HDR}downh\r\n` +
          `HMSG hub.two reply.to 22 24\r\n${HDR}hi\r\n` +
          `HMSG rq + rr RQ RQ2 22 23\r\n${HDR}3\r\n` +
          `HMSG rq | RQ RQ2 22 23\r\n${HDR}4\r\n`
      )
    ).toEqual([
      msg("", "hub.one", "hello"),
      msg("", "edge.x", "down", { reply: "back" }),
      msg("", "work.a", "job", { queues: ["W"] }),
      msg("", "rq", "2", { reply: "rr", queues: ["RQ", "RQ2"] }),
      msg("", "edge.x", `${HDR}downh`, { hdrLen: 22 }),
      msg("", "hub.two", `${HDR}hi`, { reply: "reply.to", hdrLen: 22 }),
      msg("", "rq", `${HDR}3`, { reply: "rr", queues: ["RQ", "RQ2"], hdrLen: 22 }),
      msg("", "rq", `${HDR}4`, { queues: ["RQ", "RQ2"], hdrLen: 22 })
    ])
  })

  it.each([
    ["a route op (RS+)", "RS+ $G foo\r\n", "UnknownOp"],
    ["a route op (RMSG)", "RMSG $G foo 1\r\nx\r\n", "UnknownOp"],
    ["LS+ without a subject", "LS+\r\n", "BadArgs"],
    ["LS+ with a queue and no weight", "LS+ foo bar\r\n", "BadArgs"],
    ["LS- with a weight", "LS- foo q 1\r\n", "BadArgs"],
    ["LS- without a subject (nats-server takes it)", "LS- \r\n", "BadArgs"],
    ["LMSG with a bad size", "LMSG foo x\r\nab\r\n", "BadArgs"],
    ["LMSG whose second field is no reply marker", "LMSG a b c d 3\r\nabc\r\n", "BadArgs"],
    ["HMSG whose headers are larger than the message", "HMSG foo 5 3\r\nabc\r\n", "BadHeaderSize"],
    ["a payload longer than its size", "LMSG foo 3\r\nabcd\r\n", "UnknownOp"],
    ["a client PUB (nats-server takes it on a leaf connection)", "PUB foo 3\r\nabc\r\n", "UnknownOp"]
  ])("%s is a protocol error", (_, input, kind) => {
    const out = parse("leaf", input)
    expect(out[out.length - 1]).toEqual(["error", kind])
  })
})
