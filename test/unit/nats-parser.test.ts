import { describe, expect, it } from "vitest"
import { NatsParser, type ParseError } from "../../src/core/nats/parser.js"
import { type Rec, recorder } from "../helpers/nats-ops.js"


const LIMITS = { maxControlLine: 4096, maxPayload: 1024 * 1024 }

const parse = (input: string | Buffer, limits = LIMITS): { ops: Array<Rec>; parser: NatsParser } => {
  const ops: Array<Rec> = []
  const parser = new NatsParser(recorder(ops), limits)
  parser.feed(typeof input === "string" ? Buffer.from(input, "latin1") : input)
  return { ops, parser }
}

const opsOf = (input: string, limits = LIMITS) => parse(input, limits).ops

describe("NATS parser: ops", () => {
  it("PUB without and with reply", () => {
    expect(opsOf("PUB foo 5\r\nhello\r\n")).toEqual([["pub", "foo", "", -1, "hello"]])
    expect(opsOf("PUB foo.bar _INBOX.1 5\r\nhello\r\n")).toEqual([["pub", "foo.bar", "_INBOX.1", -1, "hello"]])
  })

  it("HPUB without and with reply", () => {
    const hdr = "NATS/1.0\r\nA: b\r\n\r\n"
    const total = hdr.length + 2
    expect(opsOf(`HPUB foo ${hdr.length} ${total}\r\n${hdr}hi\r\n`)).toEqual([
      ["pub", "foo", "", hdr.length, hdr + "hi"]
    ])
    expect(opsOf(`HPUB foo r ${hdr.length} ${total}\r\n${hdr}hi\r\n`)).toEqual([
      ["pub", "foo", "r", hdr.length, hdr + "hi"]
    ])
  })

  it("SUB with and without queue, UNSUB with and without max", () => {
    expect(opsOf("SUB foo 1\r\nSUB foo q 2\r\nUNSUB 1\r\nUNSUB 2 10\r\n")).toEqual([
      ["sub", "foo", "", "1"],
      ["sub", "foo", "q", "2"],
      ["unsub", "1", -1],
      ["unsub", "2", 10]
    ])
  })

  it("PING, PONG, +OK, -ERR, CONNECT, INFO", () => {
    expect(
      opsOf(
        "CONNECT {\"verbose\":false,\"name\":\"a b\"}\r\nINFO {\"x\":1}\r\nPING\r\nPONG\r\n+OK\r\n-ERR 'Unknown Protocol Operation'\r\n"
      )
    ).toEqual([
      ["connect", "{\"verbose\":false,\"name\":\"a b\"}"],
      ["info", "{\"x\":1}"],
      ["ping"],
      ["pong"],
      ["ok"],
      ["err", "Unknown Protocol Operation"]
    ])
  })

  it("-ERR without quotes or text", () => {
    expect(opsOf("-ERR oops\r\n-ERR\r\n")).toEqual([["err", "oops"], ["err", ""]])
  })

  it("ops are case-insensitive", () => {
    expect(opsOf("pub a 1\r\nx\r\nPuB a 1\r\ny\r\nhpub a 0 0\r\n\r\nsub a 1\r\nSuB a 2\r\nunSUB 1\r\nping\r\nPiNg\r\npong\r\n+ok\r\n-err x\r\nconnect {}\r\ninfo {}\r\n"))
      .toEqual([
        ["pub", "a", "", -1, "x"],
        ["pub", "a", "", -1, "y"],
        ["pub", "a", "", 0, ""],
        ["sub", "a", "", "1"],
        ["sub", "a", "", "2"],
        ["unsub", "1", -1],
        ["ping"],
        ["ping"],
        ["pong"],
        ["ok"],
        ["err", "x"],
        ["connect", "{}"],
        ["info", "{}"]
      ])
  })

  it("args separated by several spaces and tabs, trailing blanks ignored", () => {
    expect(opsOf("PUB\t foo \t\treply   3 \t\r\nabc\r\nSUB \t foo\t q\t 9\t\r\nUNSUB\t9 \t 2 \r\n")).toEqual([
      ["pub", "foo", "reply", -1, "abc"],
      ["sub", "foo", "q", "9"],
      ["unsub", "9", 2]
    ])
  })

  it("a bare LF ends a control line", () => {
    expect(opsOf("PING\nPUB foo 2\nhi\r\nSUB a 1\nCONNECT {}\n")).toEqual([
      ["ping"],
      ["pub", "foo", "", -1, "hi"],
      ["sub", "a", "", "1"],
      ["connect", "{}"]
    ])
  })

  it("PING/PONG/+OK ignore trailing text", () => {
    expect(opsOf("PING \r\nPONG\tx\r\n+OK \r\n")).toEqual([["ping"], ["pong"], ["ok"]])
  })

  it("zero-length payloads", () => {
    expect(opsOf("PUB foo 0\r\n\r\nHPUB foo 0 0\r\n\r\n")).toEqual([
      ["pub", "foo", "", -1, ""],
      ["pub", "foo", "", 0, ""]
    ])
  })

  it("payloads may contain CRLF and op text", () => {
    expect(opsOf("PUB foo 12\r\n\r\nPING\r\n\r\n\r\n\r\n")).toEqual([["pub", "foo", "", -1, "\r\nPING\r\n\r\n\r\n"]])
  })

  it("many ops in one chunk", () => {
    let input = ""
    const expected: Array<Rec> = []
    for (let i = 0; i < 1000; i++) {
      const payload = "x".repeat(i % 17)
      input += `PUB s.${i % 7} ${payload.length}\r\n${payload}\r\n`
      expected.push(["pub", `s.${i % 7}`, "", -1, payload])
      if (i % 10 === 0) {
        input += `SUB s.${i} ${i}\r\nPING\r\n`
        expected.push(["sub", `s.${i}`, "", String(i)], ["ping"])
      }
    }
    expect(opsOf(input)).toEqual(expected)
  })

  it("UTF-8 subjects are decoded as UTF-8", () => {
    const { ops } = parse(Buffer.from("PUB café.☃ 1\r\nx\r\nSUB café.☃ 1\r\n", "utf8"))
    expect(ops).toEqual([["pub", "café.☃", "", -1, "x"], ["sub", "café.☃", "", "1"]])
  })

  it("the payload is passed in place inside the chunk, without a copy", () => {
    const chunk = Buffer.from("PUB foo 5\r\nhello\r\n")
    const seen: Array<[Buffer, number, number]> = []
    const p = new NatsParser({ ...recorder([]), pub: (_s, _r, _h, buf, start, end) => seen.push([buf, start, end]) }, LIMITS)
    p.feed(chunk)
    expect(seen).toHaveLength(1)
    expect(seen[0][0]).toBe(chunk)
    expect([seen[0][1], seen[0][2]]).toEqual([11, 16])
  })

  it("setMaxPayload applies to later PUBs", () => {
    const ops: Array<Rec> = []
    const p = new NatsParser(recorder(ops), LIMITS)
    p.feed(Buffer.from("PUB a 5\r\nhello\r\n"))
    p.setMaxPayload(4)
    p.feed(Buffer.from("PUB a 5\r\nhello\r\n"))
    expect(ops).toEqual([["pub", "a", "", -1, "hello"], ["error", "MaxPayload"]])
    expect(p.dead).toBe(true)
  })

  it("stop() from a handler ends parsing of the rest of the chunk", () => {
    const ops: Array<Rec> = []
    const rec = recorder(ops)
    const p: NatsParser = new NatsParser({ ...rec, ping: () => { rec.ping(); p.stop() } }, LIMITS)
    p.feed(Buffer.from("PONG\r\nPING\r\nPONG\r\n"))
    p.feed(Buffer.from("PONG\r\n"))
    expect(ops).toEqual([["pong"], ["ping"]])
    expect(p.dead).toBe(true)
  })
})

describe("NATS parser: errors", () => {
  const errorOf = (input: string, limits = LIMITS): ReadonlyArray<Rec> => {
    const { ops, parser } = parse(input, limits)
    expect(parser.dead).toBe(true)
    return ops
  }

  it("unknown op bytes", () => {
    expect(errorOf("GET / HTTP/1.1\r\n")).toEqual([["error", "UnknownOp"]])
    expect(errorOf("PUX foo 1\r\n")).toEqual([["error", "UnknownOp"]])
    expect(errorOf("PINGPONG\r\n")).toEqual([["error", "UnknownOp"]])
    expect(errorOf("\r\n")).toEqual([["error", "UnknownOp"]])
    expect(errorOf("MSG foo 1 1\r\nx\r\n")).toEqual([["error", "UnknownOp"]])
    expect(errorOf("PING\r\n\x0b")).toEqual([["ping"], ["error", "UnknownOp"]])
  })

  it("a payload not followed by CRLF exactly", () => {
    expect(errorOf("PUB foo 2\r\nhello\r\n")).toEqual([["error", "UnknownOp"]])
    expect(errorOf("PUB foo 5\r\nhello\n")).toEqual([["error", "UnknownOp"]])
    expect(errorOf("PUB foo 5\r\nhello\rX")).toEqual([["error", "UnknownOp"]])
  })

  it("max_control_line counts the op and excludes CRLF", () => {
    const limits = { maxControlLine: 12, maxPayload: 100 }
    // "PUB foo.ab 1" is 12 bytes: allowed; one more byte is not
    expect(opsOf("PUB foo.ab 1\r\nx\r\n", limits)).toEqual([["pub", "foo.ab", "", -1, "x"]])
    expect(errorOf("PUB foo.abc 1\r\nx\r\n", limits)).toEqual([["error", "MaxControlLine"]])
    expect(errorOf("CONNECT {\"a\":1}\r\n", limits)).toEqual([["error", "MaxControlLine"]])
  })

  it("max_control_line is enforced before the line ends (no unbounded buffering)", () => {
    const ops: Array<Rec> = []
    const p = new NatsParser(recorder(ops), { maxControlLine: 64, maxPayload: 100 })
    p.feed(Buffer.from("SUB "))
    for (let i = 0; i < 10 && !p.dead; i++) p.feed(Buffer.from("a".repeat(10)))
    expect(ops).toEqual([["error", "MaxControlLine"]])
    expect(p.dead).toBe(true)
  })

  it("a chunk far longer than max_control_line without LF is rejected", () => {
    const { ops, parser } = parse(Buffer.concat([Buffer.from("SUB "), Buffer.alloc(1 << 20, 0x61)]))
    expect(ops).toEqual([["error", "MaxControlLine"]])
    expect(parser.dead).toBe(true)
  })

  it("a line of exactly max_control_line split before its CR is accepted", () => {
    const ops: Array<Rec> = []
    const p = new NatsParser(recorder(ops), { maxControlLine: 8, maxPayload: 100 })
    p.feed(Buffer.from("SUB a 12\r"))
    p.feed(Buffer.from("\n"))
    expect(ops).toEqual([["sub", "a", "", "12"]])
  })

  it("a size over max_payload, before the payload is read", () => {
    expect(errorOf("PUB foo 101\r\n", { maxControlLine: 4096, maxPayload: 100 })).toEqual([["error", "MaxPayload"]])
    expect(errorOf("HPUB foo 10 101\r\n", { maxControlLine: 4096, maxPayload: 100 })).toEqual([["error", "MaxPayload"]])
    expect(errorOf("PUB foo 99999999999999999999999\r\n")).toEqual([["error", "MaxPayload"]])
  })

  it("bad sizes and wrong arg counts", () => {
    for (const line of [
      "PUB foo -1\r\n",
      "PUB foo abc\r\n",
      "PUB foo 1x\r\n",
      "PUB foo\r\n",
      "PUB\r\n",
      "PUB a b c 1\r\n",
      "HPUB foo 1\r\n",
      "HPUB foo x 1\r\n",
      "HPUB a b c d 1\r\n",
      "SUB foo\r\n",
      "SUB a b c d\r\n",
      "UNSUB\r\n",
      "UNSUB 1 x\r\n",
      "UNSUB 1 -2\r\n",
      "UNSUB 1 2 3\r\n",
      "CONNECT\r\n",
      "CONNECT  \r\n",
      "INFO\r\n"
    ]) {
      expect(errorOf(line), line).toEqual([["error", "BadArgs"]])
    }
  })

  it("an HPUB header size over its total size", () => {
    expect(errorOf("HPUB foo 10 5\r\n0123456789\r\n")).toEqual([["error", "BadHeaderSize"]])
  })

  it("nothing is parsed after an error", () => {
    const ops: Array<Rec> = []
    const p = new NatsParser(recorder(ops), LIMITS)
    p.feed(Buffer.from("PING\r\nXX\r\nPING\r\n"))
    p.feed(Buffer.from("PING\r\n"))
    expect(ops).toEqual([["ping"], ["error", "UnknownOp"]])
  })

  it("error details are short and printable", () => {
    const errors: Array<ParseError> = []
    const p = new NatsParser({ ...recorder([]), protocolError: (e) => errors.push(e) }, LIMITS)
    p.feed(Buffer.from("\x00\x01GARBAGE" + "z".repeat(10_000)))
    expect(errors).toHaveLength(1)
    expect(errors[0].detail.length).toBeLessThan(120)
    expect(errors[0].detail).toMatch(/^[\x20-\x7e]*$/)
  })

  it("a throwing handler leaves the parser dead", () => {
    const p = new NatsParser({ ...recorder([]), ping: () => { throw new Error("boom") } }, LIMITS)
    expect(() => p.feed(Buffer.from("PING\r\n"))).toThrow("boom")
    expect(p.dead).toBe(true)
  })
})
