// The records' checksum: the word-at-a-time CRC-32C must equal the byte-at-a-time
// definition for every length, alignment and split, or stored data would read as damaged.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { crc32c } from "../../src/core/stream/crc32c.js"

/** CRC-32C one bit at a time, straight from the definition. */
const reference = (buf: Uint8Array, start: number, end: number): number => {
  let c = 0xffffffff
  for (let i = start; i < end; i++) {
    c ^= buf[i]
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
  }
  return ~c >>> 0
}

describe("crc32c over stored records", () => {
  it("equals the bitwise definition at any offset, length and split", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 700 }), fc.nat(), fc.nat(), fc.nat(), (bytes, a, b, s) => {
        // A view at an odd place in a larger buffer, as records sit in a block.
        const pad = a % 7
        const buf = Buffer.alloc(bytes.length + pad + 3)
        buf.set(bytes, pad)
        const view = buf.subarray(1)
        const start = Math.min(b % 9, view.length)
        const end = view.length - (pad > 0 ? 1 : 0)
        if (end < start) return
        const want = reference(view, start, end)
        expect(crc32c(view, start, end)).toBe(want)
        const mid = start + (s % (end - start + 1))
        expect(crc32c(view, mid, end, crc32c(view, start, mid))).toBe(want)
      }),
      { numRuns: 500 }
    )
  })

  it("matches the check value on a large buffer", () => {
    const big = Buffer.alloc(1 << 16)
    for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 13
    expect(crc32c(big, 5, big.length - 3)).toBe(reference(big, 5, big.length - 3))
  })
})
