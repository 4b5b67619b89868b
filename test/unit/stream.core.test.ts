// The pure pieces under the stores: the checksum, the record scan's recovery
// promises, and the sequence array against a plain Map.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { crc32c } from "../../src/core/stream/crc32c.js"
import { decodeMsg, encodeDel, encodeMsg, encodeState, msgRecordLen, recordSeq, scanRecords } from "../../src/core/stream/record.js"
import { SeqArray } from "../../src/core/stream/seq-array.js"
import { StreamIndex } from "../../src/core/stream/stream-index.js"

describe("crc32c", () => {
  it("matches the standard check value and continues across chunks", () => {
    const data = Buffer.from("123456789")
    expect(crc32c(data)).toBe(0xe3069283)
    expect(crc32c(data, 4, 9, crc32c(data, 0, 4))).toBe(0xe3069283)
    expect(crc32c(Buffer.alloc(32))).toBe(0x8a9136aa)
  })
})

/** A block of `n` MSG records (and a DEL after every fifth) with their offsets. */
const block = (n: number) => {
  const buf = Buffer.alloc(64 * 1024)
  const starts: Array<{ off: number; len: number; seq: number }> = []
  let off = encodeState(buf, 0, 1, 0, 0)
  for (let seq = 1; seq <= n; seq++) {
    const payload = Buffer.from(`payload ${seq} `.repeat(seq % 4))
    const len = encodeMsg(buf, off, seq, seq * 10, `s.${seq}`, `s.${seq}`.length, seq % 2 ? undefined : Buffer.from("h"), payload)
    starts.push({ off, len, seq })
    off += len
    if (seq % 5 === 0) off += encodeDel(buf, off, seq - 1)
  }
  return { buf: buf.subarray(0, off), starts }
}

const seqsFound = (buf: Buffer, end = buf.length) => {
  const seqs: number[] = []
  const r = scanRecords(buf, end, (type, off) => {
    if (type === 1) seqs.push(recordSeq(buf, off))
  })
  return { seqs, ...r }
}

describe("record scan", () => {
  it("round-trips messages", () => {
    const { buf, starts } = block(6)
    const m = decodeMsg(buf, starts[1].off, starts[1].len)
    expect(m).toMatchObject({ seq: 2, ts: 20, subject: "s.2" })
    expect(Buffer.from(m.headers!).toString()).toBe("h")
    expect(Buffer.from(m.payload).toString()).toBe("payload 2 payload 2 ")
    expect(starts[0].len).toBe(msgRecordLen(3, 0, 10))
  })

  it("a cut anywhere loses only the record it cuts, reported as a torn tail", () => {
    const { buf, starts } = block(20)
    fc.assert(
      fc.property(fc.integer({ min: 1, max: buf.length - 1 }), (cut) => {
        const r = seqsFound(buf, cut)
        const whole = starts.filter((s) => s.off + s.len <= cut).map((s) => s.seq)
        expect(r.seqs).toEqual(whole)
        expect(r.bad).toEqual([])
      })
    )
  })

  it("damage in one record costs that record only; the scan resynchronises after it", () => {
    const { buf, starts } = block(30)
    fc.assert(
      fc.property(fc.integer({ min: 0, max: buf.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, x) => {
        const copy = Buffer.from(buf)
        copy[at] ^= x
        const r = seqsFound(copy)
        const hit = starts.find((s) => at >= s.off && at < s.off + s.len)
        expect(r.seqs).toEqual(starts.map((s) => s.seq).filter((s) => s !== hit?.seq))
        if (at < starts[starts.length - 1].off) expect(r.bad.length).toBe(1)
      }),
      { numRuns: 300 }
    )
  })
})

describe("SeqArray", () => {
  type Op = { push: number } | { del: number }
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ push: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 3000 })) }) },
    { weight: 3, arbitrary: fc.record({ del: fc.nat() }) }
  )

  it("agrees with a Map, including when survivors are moved aside", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400, size: "max" }), (ops) => {
        const a = new SeqArray<number>()
        const m = new Map<number, number>()
        let last = 0
        for (const o of ops) {
          if ("push" in o) {
            last += o.push
            a.push(last, last * 2)
            m.set(last, last * 2)
          } else {
            const keys = [...m.keys()]
            // Mostly delete existing keys (front-heavy, as streams do), sometimes missing ones.
            const seq = keys.length > 0 && o.del % 4 !== 0 ? keys[o.del % Math.min(keys.length, 1 + (o.del % 7))] : o.del % (last + 2)
            expect(a.delete(seq)).toBe(m.get(seq))
            m.delete(seq)
          }
          const sorted = [...m.keys()].sort((x, y) => x - y)
          expect(a.size).toBe(m.size)
          expect(a.firstSeq()).toBe(sorted[0])
          const probe = sorted.length > 0 ? sorted[Math.floor(sorted.length / 2)] - 1 : 0
          expect(a.nextFrom(probe)).toBe(m.get(sorted.find((k) => k >= probe) ?? -1))
        }
        expect([...a.values()]).toEqual([...m.keys()].sort((x, y) => x - y).map((k) => k * 2))
        for (const k of m.keys()) expect(a.get(k)).toBe(k * 2)
      }),
      { numRuns: 80 }
    )
  })
})

describe("StreamIndex", () => {
  it("a survivor far behind many removed messages keeps queries exact", () => {
    const ix = new StreamIndex<null>()
    ix.add(1, "kv.a", 0, 10, null)
    for (let seq = 2; seq <= 50_000; seq++) {
      ix.add(seq, "kv.b", seq, 10, null)
      ix.remove(seq - 1 === 1 ? -1 : seq - 1)
    }
    expect(ix.count).toBe(2)
    expect(ix.first).toBe(1)
    expect(ix.nextMatching([], 2)?.seq).toBe(50_000)
    expect(ix.nextMatching(["kv.b"], 0)?.seq).toBe(50_000)
    expect(ix.numPending([], 2)).toBe(1)
    expect(ix.numDeleted).toBe(49_998)
    expect(ix.remove(1)?.subject).toBe("kv.a")
    expect(ix.first).toBe(50_000)
  })
})
