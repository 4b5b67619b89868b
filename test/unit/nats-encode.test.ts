import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  BY_REFERENCE,
  OK,
  PING,
  PONG,
  encodeInfo,
  noRespondersHmsg,
  protocolErrorText,
  statusHeaderBlock,
  writeErr,
  writeHeaderMsg,
  writeMsg,
  writeStatusHmsg
} from "../../src/core/nats/encode.js"
import { OutBuf, SlabPool } from "../../src/core/outbuf.js"
import { NatsParser } from "../../src/core/nats/parser.js"

const text = (out: OutBuf): string => (out.take() ?? Buffer.alloc(0)).toString("utf8")

describe("OutBuf", () => {
  it("is empty to start with and take() gives undefined", () => {
    const out = new OutBuf()
    expect(out.length).toBe(0)
    expect(out.take()).toBeUndefined()
  })

  it("writes ASCII, UTF-8, bytes and integers", () => {
    const out = new OutBuf(8)
    out.writeAscii("MSG ")
    out.writeUtf8("café.☃")
    out.writeByte(32)
    out.writeInt(0)
    out.writeByte(32)
    out.writeInt(1234567890)
    out.writeByte(32)
    out.writeInt(Number.MAX_SAFE_INTEGER)
    out.writeCrlf()
    out.writeBytes(Buffer.from("xxhelloxx"), 2, 7)
    expect(out.length).toBe(Buffer.byteLength("MSG café.☃ 0 1234567890 9007199254740991\r\nhello"))
    expect(text(out)).toBe("MSG café.☃ 0 1234567890 9007199254740991\r\nhello")
    expect(out.length).toBe(0)
  })

  it("long strings and byte ranges take the native path", () => {
    const out = new OutBuf(16)
    const ascii = "a".repeat(1000)
    const utf8 = "é".repeat(500) + "z".repeat(10)
    const bytes = Buffer.alloc(5000, 7)
    out.writeAscii(ascii)
    out.writeUtf8(utf8)
    out.writeBytes(bytes, 0, bytes.length)
    const b = out.take()!
    expect(b.subarray(0, 1000).toString()).toBe(ascii)
    expect(b.subarray(1000, 1000 + Buffer.byteLength(utf8)).toString()).toBe(utf8)
    expect(b.subarray(1000 + Buffer.byteLength(utf8)).equals(bytes)).toBe(true)
  })

  it("grows across many writes and keeps every byte in order", () => {
    const out = new OutBuf(4)
    const expected: Array<string> = []
    for (let i = 0; i < 20_000; i++) {
      out.writeAscii("n=")
      out.writeInt(i)
      out.writeCrlf()
      expected.push(`n=${i}\r\n`)
    }
    expect(text(out)).toBe(expected.join(""))
  })

  it("take() never hands out memory it writes again", () => {
    const out = new OutBuf(64)
    const taken: Array<[Buffer, string]> = []
    for (let round = 0; round < 200; round++) {
      const s = `round ${round} `.repeat((round % 13) + 1)
      out.writeAscii(s)
      if (round % 3 === 0) out.writeBytes(Buffer.alloc(round * 10, round & 0xff), 0, round * 10)
      const b = out.take()!
      taken.push([b, b.toString("latin1")])
    }
    for (const [b, s] of taken) expect(b.toString("latin1")).toBe(s)
  })

  it("take() after a burst starts from a modest size again", () => {
    const out = new OutBuf(256)
    out.writeBytes(Buffer.alloc(4 << 20), 0, 4 << 20)
    expect(out.take()!.length).toBe(4 << 20)
    out.writeAscii("PING\r\n")
    const small = out.take()!
    expect(small.toString()).toBe("PING\r\n")
    expect(small.buffer.byteLength).toBeLessThanOrEqual(128 * 1024)
  })

  it("clear() drops pending bytes", () => {
    const out = new OutBuf()
    out.writeAscii("hello")
    out.clear()
    expect(out.length).toBe(0)
    expect(out.take()).toBeUndefined()
    out.writeAscii("x")
    expect(text(out)).toBe("x")
  })

  it("property: any sequence of writes equals the concatenation", () => {
    const write = fc.oneof(
      fc.string({ maxLength: 80 }).map((s) => ({ kind: "utf8" as const, s })),
      fc.string({ unit: fc.integer({ min: 0, max: 127 }).map((c) => String.fromCharCode(c)), maxLength: 80 }).map(
        (s) => ({ kind: "ascii" as const, s })
      ),
      fc.nat().map((n) => ({ kind: "int" as const, n })),
      fc.uint8Array({ maxLength: 200 }).map((a) => ({ kind: "bytes" as const, a })),
      fc.constant({ kind: "take" as const })
    )
    fc.assert(
      fc.property(fc.array(write, { maxLength: 60 }), fc.integer({ min: 1, max: 300 }), (writes, size) => {
        const out = new OutBuf(size)
        const got: Array<Buffer> = []
        const want: Array<Buffer> = []
        for (const w of writes) {
          switch (w.kind) {
            case "utf8":
              out.writeUtf8(w.s)
              want.push(Buffer.from(w.s, "utf8"))
              break
            case "ascii":
              out.writeAscii(w.s)
              want.push(Buffer.from(w.s, "latin1"))
              break
            case "int":
              out.writeInt(w.n)
              want.push(Buffer.from(String(w.n)))
              break
            case "bytes":
              out.writeBytes(Buffer.from(w.a), 0, w.a.length)
              want.push(Buffer.from(w.a))
              break
            case "take": {
              const b = out.take()
              if (b !== undefined) got.push(Buffer.from(b))
            }
          }
        }
        const b = out.take()
        if (b !== undefined) got.push(b)
        expect(Buffer.concat(got).equals(Buffer.concat(want))).toBe(true)
      })
    )
  })
})

describe("encode", () => {
  const payload = Buffer.from("..hello..")

  it("MSG without and with reply", () => {
    const out = new OutBuf()
    writeMsg(out, "foo.bar", "7", "", -1, payload, 2, 7)
    expect(text(out)).toBe("MSG foo.bar 7 5\r\nhello\r\n")
    writeMsg(out, "foo.bar", "7", "_INBOX.a", -1, payload, 2, 7)
    expect(text(out)).toBe("MSG foo.bar 7 _INBOX.a 5\r\nhello\r\n")
  })

  it("HMSG without and with reply", () => {
    const hdr = "NATS/1.0\r\nA: 1\r\n\r\n"
    const body = Buffer.from(hdr + "hi")
    const out = new OutBuf()
    writeMsg(out, "foo", "1", "", hdr.length, body, 0, body.length)
    expect(text(out)).toBe(`HMSG foo 1 ${hdr.length} ${body.length}\r\n${hdr}hi\r\n`)
    writeMsg(out, "foo", "1", "r", hdr.length, body, 0, body.length)
    expect(text(out)).toBe(`HMSG foo 1 r ${hdr.length} ${body.length}\r\n${hdr}hi\r\n`)
  })

  it("empty payloads and UTF-8 subjects", () => {
    const out = new OutBuf()
    writeMsg(out, "café", "1", "", -1, payload, 3, 3)
    expect(out.take()!.equals(Buffer.from("MSG café 1 0\r\n\r\n", "utf8"))).toBe(true)
  })

  it("fixed lines", () => {
    expect(PING.toString()).toBe("PING\r\n")
    expect(PONG.toString()).toBe("PONG\r\n")
    expect(OK.toString()).toBe("+OK\r\n")
    expect(encodeInfo({ server_id: "X", max_payload: 1048576 }).toString()).toBe(
      "INFO {\"server_id\":\"X\",\"max_payload\":1048576}\r\n"
    )
    const out = new OutBuf()
    writeErr(out, "Unknown Protocol Operation")
    expect(text(out)).toBe("-ERR 'Unknown Protocol Operation'\r\n")
  })

  it("no-responders HMSG is what nats-server sends", () => {
    const out = new OutBuf()
    noRespondersHmsg(out, "_INBOX.abc.1", "3")
    expect(text(out)).toBe("HMSG _INBOX.abc.1 3 16 16\r\nNATS/1.0 503\r\n\r\n\r\n")
  })

  it("status header HMSGs", () => {
    expect(statusHeaderBlock(408, "Request Timeout").toString()).toBe("NATS/1.0 408 Request Timeout\r\n\r\n")
    const out = new OutBuf()
    writeStatusHmsg(out, "hb", "9", "$JS.FC.x", 100, "FlowControl Request")
    const hdr = "NATS/1.0 100 FlowControl Request\r\n\r\n"
    expect(text(out)).toBe(`HMSG hb 9 $JS.FC.x ${hdr.length} ${hdr.length}\r\n${hdr}\r\n`)
    writeStatusHmsg(out, "hb", "9", "", 100, "Idle Heartbeat", [["Nats-Last-Consumer", "5"], ["Nats-Last-Stream", "7"]])
    const hdr2 = "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 5\r\nNats-Last-Stream: 7\r\n\r\n"
    expect(text(out)).toBe(`HMSG hb 9 ${hdr2.length} ${hdr2.length}\r\n${hdr2}\r\n`)
    writeHeaderMsg(out, "s", "1", "", statusHeaderBlock(200), Buffer.from("body"))
    expect(text(out)).toBe("HMSG s 1 16 20\r\nNATS/1.0 200\r\n\r\nbody\r\n")
  })

  it("protocol error texts", () => {
    expect(protocolErrorText("UnknownOp")).toBe("Unknown Protocol Operation")
    expect(protocolErrorText("MaxControlLine")).toBe("Maximum Control Line Exceeded")
    expect(protocolErrorText("MaxPayload")).toBe("Maximum Payload Violation")
  })

  it("a PUB parsed and re-encoded as MSG keeps its payload and headers", () => {
    const out = new OutBuf()
    const p = new NatsParser(
      {
        connect: () => {},
        pub: (subject, reply, hdrLen, buf, start, end) => writeMsg(out, subject, "1", reply, hdrLen, buf, start, end),
        sub: () => {},
        unsub: () => {},
        ping: () => {},
        pong: () => {},
        info: () => {},
        ok: () => {},
        err: () => {},
        protocolError: () => {}
      },
      { maxControlLine: 4096, maxPayload: 1024 }
    )
    p.feed(Buffer.from("PUB a r 2\r\nhi\r\nHPUB b 12 14\r\nNATS/1.0\r\n\r\nyo\r\n"))
    expect(text(out)).toBe("MSG a 1 r 2\r\nhi\r\nHMSG b 1 12 14\r\nNATS/1.0\r\n\r\nyo\r\n")
  })
})

describe("OutBuf segments and payloads by reference", () => {
  it("queues a payload of BY_REFERENCE bytes or more without copying it", () => {
    const out = new OutBuf(64)
    const chunk = Buffer.alloc(BY_REFERENCE + 100, 7)
    writeMsg(out, "big", "1", "", -1, chunk, 50, 50 + BY_REFERENCE)
    const segs = out.takeAll()!
    expect(segs.some((s) => s.buffer === chunk.buffer && s.byteOffset === chunk.byteOffset + 50)).toBe(true)
    const joined = Buffer.concat(segs)
    expect(joined.toString("latin1")).toBe(`MSG big 1 ${BY_REFERENCE}\r\n${"\u0007".repeat(BY_REFERENCE)}\r\n`)
  })

  it("copies small payloads, so the source may be reused", () => {
    const out = new OutBuf(64)
    const chunk = Buffer.from("hello")
    writeMsg(out, "s", "1", "", -1, chunk, 0, 5)
    chunk.fill(0)
    expect(out.take()!.toString()).toBe("MSG s 1 5\r\nhello\r\n")
  })

  it("keeps order and length across sealed slabs, references and small writes", () => {
    const out = new OutBuf(16)
    const big = Buffer.alloc(BY_REFERENCE, 65)
    let expected = ""
    for (let i = 0; i < 200; i++) {
      if (i % 7 === 0) {
        writeMsg(out, `r.${i}`, "9", "", -1, big, 0, big.length)
        expected += `MSG r.${i} 9 ${big.length}\r\n${"A".repeat(big.length)}\r\n`
      } else {
        out.writeAscii(`line ${i}\r\n`)
        expected += `line ${i}\r\n`
      }
      expect(out.length).toBe(Buffer.byteLength(expected))
    }
    expect(Buffer.concat(out.takeAll()!).toString("latin1")).toBe(expected)
    expect(out.length).toBe(0)
    expect(out.takeAll()).toBeUndefined()
  })
})

describe("OutBuf slabs from a SlabPool", () => {
  const SLAB = 1024
  /** A busy flush: enough bytes that the OutBuf asks the pool (batches of 16 KiB and more). */
  const fill = (out: OutBuf, bytes: number, ch = "x"): void => {
    for (let n = 0; n < bytes; n += 100) out.writeAscii(ch.repeat(Math.min(100, bytes - n)))
  }
  const busy = (pool: SlabPool): OutBuf => new OutBuf(16 * 1024, pool)

  it("writes busy batches into pooled slabs and gets them back only once their write is done", () => {
    const pool = new SlabPool(32 * 1024, 8)
    const out = busy(pool)
    fill(out, 20_000)
    const first = out.takeAll()!
    expect(Buffer.concat(first).toString()).toBe("x".repeat(20_000))
    expect(pool.freeCount).toBe(0) // still the transport's
    fill(out, 20_000, "y")
    const second = out.takeAll()!
    // the first slab is not handed out again while its write is pending: the bytes stay
    expect(Buffer.concat(first).toString()).toBe("x".repeat(20_000))
    out.written()
    expect(pool.freeCount).toBe(1)
    out.written()
    expect(pool.freeCount).toBe(2)
    expect(Buffer.concat(second).toString()).toBe("y".repeat(20_000))
  })

  it("releases a slab filled within one batch with the take that carries its bytes", () => {
    const pool = new SlabPool(SLAB * 16, 8)
    const out = busy(pool)
    fill(out, 40_000) // more than two slabs: sealed ones wait for this take too
    const bufs = out.takeAll()!
    expect(bufs.reduce((a, b) => a + b.length, 0)).toBe(40_000)
    expect(pool.freeCount).toBe(0)
    out.written()
    expect(pool.freeCount).toBe(3)
  })

  it("holds no slab between flushes (an idle connection pins nothing)", () => {
    const pool = new SlabPool(32 * 1024, 8)
    const out = busy(pool)
    fill(out, 20_000)
    out.takeAll()
    out.written()
    expect(pool.freeCount).toBe(1)
    expect(out.takeAll()).toBeUndefined()
    expect(pool.freeCount).toBe(1)
  })

  it("gives a slab back at once when its bytes are dropped (clear)", () => {
    const pool = new SlabPool(32 * 1024, 8)
    const out = busy(pool)
    fill(out, 20_000)
    out.clear()
    expect(pool.freeCount).toBe(1)
    expect(out.length).toBe(0)
  })

  it("writes small batches into ordinary buffers, not pooled slabs", () => {
    const pool = new SlabPool(32 * 1024, 8)
    const out = new OutBuf(512, pool)
    out.writeAscii("PONG\r\n")
    out.takeAll()
    out.written()
    expect(pool.freeCount).toBe(0)
  })

  it("never waits on more than a bounded number of slabs for a transport that does not report writes", () => {
    const pool = new SlabPool(32 * 1024, 8)
    const out = busy(pool)
    for (let i = 0; i < 200; i++) {
      fill(out, 20_000)
      out.takeAll()
    }
    // nothing came back (no `written`), and nothing was reused: every take kept its bytes
    expect(pool.freeCount).toBe(0)
  })
})

describe("OutBuf references pinned until their write is done", () => {
  /** A Pinner that counts what is retained, per payload. */
  const counting = () => {
    const live = new Map<Uint8Array, number>()
    return {
      live,
      retain: (p: Uint8Array) => void live.set(p, (live.get(p) ?? 0) + 1),
      release: (p: Uint8Array) => void live.set(p, (live.get(p) ?? 0) - 1)
    }
  }

  it("retains a payload when queued and releases it once the write that carries it is done", () => {
    const pin = counting()
    const out = new OutBuf(64)
    const a = Buffer.alloc(5000, 1)
    const b = Buffer.alloc(5000, 2)
    out.writeRefPinned(a, 0, a.length, pin)
    const first = out.takeAll()!
    expect(first.some((x) => x.buffer === a.buffer)).toBe(true) // by reference, not a copy
    out.writeRefPinned(b, 0, b.length, pin)
    out.takeAll()
    expect([pin.live.get(a), pin.live.get(b)]).toEqual([1, 1])
    out.written()
    expect([pin.live.get(a), pin.live.get(b)]).toEqual([0, 1])
    out.written()
    expect(pin.live.get(b)).toBe(0)
  })

  it("releases at once what clear() drops, and nothing already taken", () => {
    const pin = counting()
    const out = new OutBuf(64)
    const taken = Buffer.alloc(5000, 1)
    const dropped = Buffer.alloc(5000, 2)
    out.writeRefPinned(taken, 0, taken.length, pin)
    out.takeAll()
    out.writeRefPinned(dropped, 0, dropped.length, pin)
    out.clear()
    expect([pin.live.get(taken), pin.live.get(dropped)]).toEqual([1, 0])
    out.written()
    expect(pin.live.get(taken)).toBe(0)
  })

  it("copies a payload of another owner instead of pinning it", () => {
    const mine = counting()
    const other = counting()
    const out = new OutBuf(64)
    const a = Buffer.alloc(5000, 1)
    const b = Buffer.alloc(5000, 2)
    out.writeRefPinned(a, 0, a.length, mine)
    out.writeRefPinned(b, 0, b.length, other)
    const bufs = out.takeAll()!
    expect(bufs.some((x) => x.buffer === b.buffer)).toBe(false)
    expect(Buffer.concat(bufs).equals(Buffer.concat([a, b]))).toBe(true)
    expect(other.live.size).toBe(0)
  })

  it("stops tracking (never releases) past a bound when the transport does not report writes", () => {
    const pin = counting()
    const out = new OutBuf(64)
    const a = Buffer.alloc(5000, 1)
    for (let i = 0; i < 20_000; i++) {
      out.writeRefPinned(a, 0, a.length, pin)
      out.takeAll()
    }
    // every retain still stands: nothing was released early
    expect(pin.live.get(a)).toBe(20_000)
    expect((out as unknown as { pinned: Array<unknown> }).pinned.length).toBeLessThanOrEqual(8192)
  })
})
