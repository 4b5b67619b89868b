import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { NatsParser } from "../../src/core/nats/parser.js"
import { type Rec, recorder } from "../helpers/nats-ops.js"
import { bytewise, chunksOf } from "../helpers/chunks.js"

// The same bytes must give the same ops however they are cut into chunks.


const LIMITS = { maxControlLine: 256, maxPayload: 4096 }

const parseChunks = (chunks: ReadonlyArray<Buffer>, limits = LIMITS): Array<Rec> => {
  const ops: Array<Rec> = []
  const p = new NatsParser(recorder(ops), limits)
  for (const c of chunks) p.feed(c)
  return ops
}

/** Chunks are copies, and the bytes fed are overwritten afterwards: the parser must not keep references. */
const scribbled = (chunks: ReadonlyArray<Buffer>, limits = LIMITS): Array<Rec> => {
  const ops: Array<Rec> = []
  const p = new NatsParser(recorder(ops), limits)
  for (const c of chunks) {
    const copy = Buffer.from(c)
    p.feed(copy)
    copy.fill(0x5a)
  }
  return ops
}

const STREAM = Buffer.from(
  "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\n" +
    "PING\r\n" +
    "SUB foo.* 1\r\n" +
    "sub bar q1 2\r\n" +
    "PUB foo.a 5\r\nhello\r\n" +
    "PUB foo.b _INBOX.x 0\r\n\r\n" +
    "HPUB foo.c 22 24\r\nNATS/1.0\r\nKey: v\r\n\r\n\r\nab\r\n" +
    "pub\tfoo.d \t 4\nx\r\ny\r\n" +
    "UNSUB 1 5\r\n" +
    "UNSUB 2\n" +
    "PONG\r\n+OK\r\n-ERR 'oops'\r\nINFO {}\r\n"
)

describe("NATS parser: chunking", () => {
  const whole = parseChunks([STREAM])

  it("the reference stream parses to the expected ops", () => {
    expect(whole).toEqual([
      ["connect", "{\"verbose\":false,\"pedantic\":false,\"headers\":true}"],
      ["ping"],
      ["sub", "foo.*", "", "1"],
      ["sub", "bar", "q1", "2"],
      ["pub", "foo.a", "", -1, "hello"],
      ["pub", "foo.b", "_INBOX.x", -1, ""],
      ["pub", "foo.c", "", 22, "NATS/1.0\r\nKey: v\r\n\r\n\r\nab"],
      ["pub", "foo.d", "", -1, "x\r\ny"],
      ["unsub", "1", 5],
      ["unsub", "2", -1],
      ["pong"],
      ["ok"],
      ["err", "oops"],
      ["info", "{}"]
    ])
  })

  it("one byte at a time", () => {
    expect(parseChunks(bytewise(STREAM))).toEqual(whole)
    expect(scribbled(bytewise(STREAM))).toEqual(whole)
  })

  it("split in two at every byte boundary", () => {
    for (let cut = 0; cut <= STREAM.length; cut++) {
      const chunks = [STREAM.subarray(0, cut), STREAM.subarray(cut)]
      expect(scribbled(chunks), `cut at ${cut}`).toEqual(whole)
    }
  })

  it("split in three at every pair of boundaries", () => {
    for (let a = 0; a <= STREAM.length; a += 3) {
      for (let b = a; b <= STREAM.length; b += 5) {
        const chunks = [STREAM.subarray(0, a), STREAM.subarray(a, b), STREAM.subarray(b)]
        expect(parseChunks(chunks), `cuts at ${a}, ${b}`).toEqual(whole)
      }
    }
  })

  it("errors are the same at every split", () => {
    const limits = { maxControlLine: 16, maxPayload: 8 }
    const cases = [
      "PING\r\nPUB a 9\r\n",
      "PING\r\nPUB a.very.long.subject 1\r\nx\r\n",
      "PING\r\nPUB a 2\r\nabc\r\n",
      "PING\r\nHPUB a 3 2\r\n",
      "PING\r\nSUB a\r\n",
      "PING\r\nXYZ\r\n"
    ]
    for (const text of cases) {
      const input = Buffer.from(text)
      const expected = parseChunks([input], limits)
      expect(expected[expected.length - 1][0]).toBe("error")
      expect(parseChunks(bytewise(input), limits)).toEqual(expected)
      for (let cut = 0; cut <= input.length; cut++) {
        expect(parseChunks([input.subarray(0, cut), input.subarray(cut)], limits), `${text} cut at ${cut}`).toEqual(
          expected
        )
      }
    }
  })
})

// ---- properties ----

const token = fc.string({
  unit: fc.constantFrom(..."abcdefgXYZ019._-*>$é☃".split("")),
  minLength: 1,
  maxLength: 12
})
const payload = fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a).toString("latin1"))
const opText = fc.string({ unit: fc.constantFrom(..."{}\":, abcXYZ09\t'".split("")), maxLength: 40 })

/** A client op as the test expects it back, and its wire form. */
type Case = { readonly rec: Rec; readonly wire: Buffer }

const pub = fc
  .record({ subject: token, reply: fc.option(token, { nil: "" }), payload, op: fc.constantFrom("PUB", "pub") })
  .map(({ subject, reply, payload, op }): Case => {
    const body = Buffer.from(payload, "latin1")
    const head = `${op} ${subject} ${reply === "" ? "" : reply + " "}${body.length}\r\n`
    return {
      rec: ["pub", subject, reply, -1, payload],
      wire: Buffer.concat([Buffer.from(head, "utf8"), body, Buffer.from("\r\n")])
    }
  })

const hpub = fc
  .record({ subject: token, reply: fc.option(token, { nil: "" }), headers: payload, payload })
  .map(({ subject, reply, headers, payload }): Case => {
    const body = Buffer.from(headers + payload, "latin1")
    const hdr = Buffer.byteLength(headers, "latin1")
    const head = `HPUB ${subject}\t${reply === "" ? "" : reply + "  "}${hdr} ${body.length}\n`
    return {
      rec: ["pub", subject, reply, hdr, headers + payload],
      wire: Buffer.concat([Buffer.from(head, "utf8"), body, Buffer.from("\r\n")])
    }
  })

const simple = (rec: Rec, line: string): Case => ({ rec, wire: Buffer.from(line, "utf8") })

const validOp: fc.Arbitrary<Case> = fc.oneof(
  pub,
  hpub,
  fc.tuple(token, fc.option(token, { nil: "" }), token).map(([s, q, sid]) =>
    simple(["sub", s, q, sid], `SUB ${s} ${q === "" ? "" : q + " "}${sid}\r\n`)
  ),
  fc.tuple(token, fc.option(fc.nat(), { nil: -1 })).map(([sid, max]) =>
    simple(["unsub", sid, max], `UNSUB ${sid}${max < 0 ? "" : " " + max}\r\n`)
  ),
  fc.constant(simple(["ping"], "PING\r\n")),
  fc.constant(simple(["pong"], "pong\r\n")),
  fc.constant(simple(["ok"], "+OK\r\n")),
  opText.map((t) => t.trim()).filter((t) => t !== "" && !t.startsWith("'")).map((t) =>
    simple(["connect", t], `CONNECT ${t}\r\n`)
  ),
  opText.map((t) => t.trim()).filter((t) => t !== "" && !t.startsWith("'")).map((t) => simple(["err", t], `-ERR ${t}\r\n`))
)

describe("NATS parser: properties", () => {
  it("valid op sequences round-trip through any chunking", () => {
    fc.assert(
      fc.property(fc.array(validOp, { maxLength: 30 }), fc.array(fc.nat(), { maxLength: 20 }), (cases, cuts) => {
        const wire = Buffer.concat(cases.map((c) => c.wire))
        const expected = cases.map((c) => c.rec)
        expect(parseChunks([wire], { maxControlLine: 4096, maxPayload: 1 << 20 })).toEqual(expected)
        expect(scribbled(chunksOf(wire, cuts), { maxControlLine: 4096, maxPayload: 1 << 20 })).toEqual(expected)
      }),
      { numRuns: 300 }
    )
  })

  it("arbitrary bytes never throw, and any chunking gives the same ops", () => {
    const alphabet = fc.oneof(
      fc.integer({ min: 0, max: 255 }),
      fc.constantFrom(...Buffer.from("PUB HPUB SUB UNSUB PING PONG +OK -ERR CONNECT INFO 0123456789 \t\r\n\r\n"))
    )
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 400 }), fc.array(fc.nat(), { maxLength: 10 }), (bytes, cuts) => {
        const buf = Buffer.from(bytes)
        const limits = { maxControlLine: 32, maxPayload: 64 }
        const whole = parseChunks([buf], limits)
        expect(parseChunks(chunksOf(buf, cuts), limits)).toEqual(whole)
      }),
      { numRuns: 2000 }
    )
  })

  it("valid ops followed by garbage never throw", () => {
    fc.assert(
      fc.property(fc.array(validOp, { maxLength: 5 }), fc.uint8Array({ maxLength: 200 }), (cases, junk) => {
        const wire = Buffer.concat([...cases.map((c) => c.wire), Buffer.from(junk)])
        expect(() => parseChunks(bytewise(wire), { maxControlLine: 64, maxPayload: 128 })).not.toThrow()
      }),
      { numRuns: 300 }
    )
  })
})
