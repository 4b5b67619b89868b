// Per-message TTL (JetStream ADR-43, nats-server 2.11), the pure parts: which `Nats-TTL`
// values are TTLs (core/stream/ttl.ts), how a stored header block gives its TTL back
// (core/jetstream/headers.ts), the deadline index over a StreamIndex, and
// `allow_msg_ttl` in the stream configuration. The publish rules: stream-publish.test.ts.
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { readPublishHeaders, ttlOfHeaders } from "../../src/core/jetstream/headers.js"
import { checkUpdate, normalizeStreamConfig, type StreamConfig, toStoreConfig } from "../../src/core/jetstream/stream-config.js"
import { type IndexEntry, StreamIndex } from "../../src/core/stream/stream-index.js"
import { MessageTtls, parseGoDuration, parseTtl, TTL_EXPIRIES_PER_TICK, TTL_NEVER } from "../../src/core/stream/ttl.js"

describe("Nats-TTL values", () => {
  it.each([
    ["1", 1],
    ["60", 60],
    ["+60", 60],
    ["060", 60],
    ["1s", 1],
    ["30s", 30],
    ["1m30s", 90],
    ["1h", 3600],
    ["1.5h", 5400],
    ["1500ms", 1],
    ["1000ms", 1],
    ["2000000us", 2],
    ["2000000\u00b5s", 2],
    ["2000000\u03bcs", 2],
    ["3000000000ns", 3],
    [".5m", 30],
    ["2.s", 2],
    ["1h0m0.9s", 3600],
    ["never", TTL_NEVER],
    ["Never", TTL_NEVER]
  ])("%j is a TTL of %d", (value, ttl) => {
    expect(parseTtl(value)).toBe(ttl)
  })

  it.each([
    ["0"],
    ["0s"],
    ["-0"],
    ["500ms"],
    ["999ms"],
    ["-5"],
    ["-1s"],
    ["-1"],
    [""],
    ["s"],
    ["."],
    [".s"],
    ["1.5"],
    ["1h30"],
    ["1d"],
    ["1S"],
    ["1 s"],
    ["1e3s"],
    ["ten"],
    ["nevermore"],
    ["9223372036854775808"],
    ["3000000h"]
  ])("%j is refused", (value) => {
    expect(parseTtl(value)).toBeUndefined()
  })

  it("reads Go durations in nanoseconds, signs included", () => {
    expect(parseGoDuration("1h2m3s4ms5us6ns")).toBe(3723004005006)
    expect(parseGoDuration("-1.5s")).toBe(-1.5e9)
    expect(parseGoDuration("+0")).toBe(0)
    expect(parseGoDuration("1")).toBeUndefined()
  })
})

const block = (s: string) => Buffer.from(s, "utf8")

describe("the TTL of a header block", () => {
  it("is its first Nats-TTL, any case, trimmed, as the publish path reads it", () => {
    const h = block("NATS/1.0\r\nA: b\r\nNATS-ttl:  90 \r\nNats-TTL: 5\r\n\r\n")
    expect(ttlOfHeaders(h, 0, h.length)).toBe(90)
    expect(readPublishHeaders(h, 0, h.length)?.ttl).toBe("90")
    const micro = block("NATS/1.0\r\nNats-TTL: 2000000\u00b5s\r\n\r\n")
    expect(readPublishHeaders(micro, 0, micro.length)?.ttl).toBe("2000000\u00b5s")
    expect(ttlOfHeaders(micro, 0, micro.length)).toBe(2)
  })

  it("is 0 without one or with one that is not valid; never is TTL_NEVER", () => {
    for (const s of ["NATS/1.0\r\nA: b\r\n\r\n", "NATS/1.0\r\nNats-TTL: 0\r\n\r\n", "NATS/1.0\r\nNats-Msg-Id: x\r\n\r\n"]) {
      const h = block(s)
      expect(ttlOfHeaders(h, 0, h.length)).toBe(0)
    }
    const never = block("NATS/1.0\r\nNats-TTL: never\r\n\r\n")
    expect(ttlOfHeaders(never, 0, never.length)).toBe(TTL_NEVER)
  })
})

describe("MessageTtls", () => {
  const indexOf = (n: number, ts = 0) => {
    const index = new StreamIndex<undefined>()
    for (let seq = 1; seq <= n; seq++) index.add(seq, "a", ts + seq, 10, undefined)
    return index
  }

  it("gives the ends earliest first and removes only what ran out", () => {
    const index = indexOf(3)
    const ttls = new MessageTtls()
    ttls.add(1, 1, 30)
    ttls.add(2, 2, 10)
    ttls.add(3, 3, 0)
    expect([ttls.size, ttls.nextEnd()]).toEqual([2, 10_002])
    const out: Array<IndexEntry<undefined>> = []
    expect(ttls.expire(index, 10_001, out)).toBe(true)
    expect(out).toEqual([])
    expect(ttls.expire(index, 30_001, out)).toBe(true)
    expect(out.map((e) => e.seq)).toEqual([2, 1])
    expect([index.count, ttls.size, ttls.nextEnd()]).toEqual([1, 0, undefined])
  })

  it("forgets a message removed otherwise; one already gone from the index is skipped when due", () => {
    const index = indexOf(2)
    const ttls = new MessageTtls()
    ttls.add(1, 1, 5)
    ttls.add(2, 2, 5)
    ttls.forget(1)
    index.remove(2)
    const out: Array<IndexEntry<undefined>> = []
    expect(ttls.expire(index, 1e9, out)).toBe(true)
    expect([out.length, ttls.size]).toEqual([0, 0])
  })

  it("removes at most TTL_EXPIRIES_PER_TICK at a time and says when some are left", () => {
    const n = TTL_EXPIRIES_PER_TICK * 2 + 1
    const index = indexOf(n)
    const ttls = new MessageTtls()
    for (let seq = 1; seq <= n; seq++) ttls.add(seq, seq, 1)
    const out: Array<IndexEntry<undefined>> = []
    expect(ttls.expire(index, 1e9, out)).toBe(false)
    expect(out.length).toBe(TTL_EXPIRIES_PER_TICK)
    expect(ttls.expire(index, 1e9, out)).toBe(false)
    expect(ttls.expire(index, 1e9, out)).toBe(true)
    expect([out.length, index.count]).toEqual([n, 0])
  })

  it("finds the oldest message max_age may take past those that never expire, whatever was removed meanwhile", () => {
    const index = indexOf(6)
    const ttls = new MessageTtls()
    for (const seq of [1, 2, 4]) ttls.add(seq, seq, TTL_NEVER)
    expect(ttls.firstAging(index)?.seq).toBe(3)
    index.remove(3)
    expect(ttls.firstAging(index)?.seq).toBe(5)
    index.remove(5)
    index.remove(6)
    expect(ttls.firstAging(index)).toBeUndefined()
    index.add(7, "a", 7, 10, undefined)
    expect(ttls.firstAging(index)?.seq).toBe(7)
    expect(new MessageTtls().firstAging(index)?.seq).toBe(1)
  })
})

const config = (body: Record<string, unknown>): Either.Either<StreamConfig, { err_code: number; description: string }> => normalizeStreamConfig({ name: "S", ...body }, "S", true)

describe("allow_msg_ttl in the stream configuration", () => {
  it("is false unless asked for, and reaches the store", () => {
    const off = Either.getOrThrow(config({}))
    const on = Either.getOrThrow(config({ allow_msg_ttl: true }))
    expect([off.allow_msg_ttl, on.allow_msg_ttl, toStoreConfig(on).allow_msg_ttl]).toEqual([false, true, true])
  })

  it("may be turned on by an update, never off (10052)", () => {
    const off = Either.getOrThrow(config({}))
    const on = Either.getOrThrow(config({ allow_msg_ttl: true }))
    expect(checkUpdate(off, on)).toBeUndefined()
    expect(checkUpdate(on, on)).toBeUndefined()
    expect(checkUpdate(on, off)).toEqual({ code: 500, err_code: 10052, description: "message TTL status can not be disabled" })
  })

  it("refuses subject delete markers rather than echo them back unenforced; 0 asks for none", () => {
    const refused = config({ allow_msg_ttl: true, subject_delete_marker_ttl: 60_000_000_000 })
    expect(Either.isLeft(refused) && refused.left).toMatchObject({ err_code: 10052, description: expect.stringContaining("not supported") })
    expect(Either.isRight(config({ subject_delete_marker_ttl: 0 }))).toBe(true)
  })
})
