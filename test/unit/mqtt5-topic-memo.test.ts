// The v5 decoder's memo of the last topic name: the same bytes give back the same string.
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { TopicMemo } from "../../src/core/mqtt/v5/reader.js"

describe("TopicMemo", () => {
  it("recalls the remembered text exactly when the bytes are the same, wherever they sit", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ maxLength: 40 }), fc.nat(8), (a, b, pad) => {
        const memo = new TopicMemo()
        const first = Buffer.concat([Buffer.alloc(pad), Buffer.from(a)])
        memo.remember("text", first, pad, first.length)
        const other = Buffer.concat([Buffer.alloc(3, 9), Buffer.from(b), Buffer.alloc(2, 9)])
        const same = a.length > 0 && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0
        expect(memo.recall(other, 3, 3 + b.length)).toBe(same ? "text" : undefined)
      })
    )
  })

  it("recalls nothing before anything was remembered, nor an empty topic", () => {
    const memo = new TopicMemo()
    expect(memo.recall(Buffer.from("a/b"), 0, 3)).toBeUndefined()
    memo.remember("", Buffer.alloc(0), 0, 0)
    expect(memo.recall(Buffer.alloc(4), 2, 2)).toBeUndefined()
  })
})
