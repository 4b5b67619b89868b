// The publish-time rules of a stream (core/stream/publish.ts), tested directly:
// de-duplication within the window, the expected-* checks, rollups, per-message TTLs,
// and the order nats-server applies them in; then properties over random histories
// of publishes.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  decidePublish,
  makePublishState,
  published,
  type PublishDecision,
  type PublishHeaders,
  type PublishRules,
  type PublishState,
  type PublishView,
  restoreMsgIds,
  unpublished
} from "../../src/core/stream/publish.js"
import { publishRefused } from "../../src/core/jetstream/errors.js"
import { TTL_NEVER } from "../../src/core/stream/ttl.js"

const SECOND_NS = 1_000_000_000

const makeRules = (over: Partial<PublishRules> = {}): PublishRules => ({
  name: "S",
  duplicate_window: 2 * SECOND_NS,
  sealed: false,
  allow_rollup_hdrs: true,
  allow_msg_ttl: false,
  ...over
})

const hdrs = (over: Partial<PublishHeaders>): PublishHeaders => ({
  msgId: undefined,
  expectedStream: undefined,
  expectedLastSeq: undefined,
  expectedLastSubjSeq: undefined,
  expectedLastMsgId: undefined,
  rollup: undefined,
  ttl: undefined,
  ...over
})

/** A stream in miniature: the sequences and subjects it stored, and whether it has space. */
class Stream {
  readonly subjects: string[] = []
  full = false
  readonly view: PublishView = {
    outOfSpace: () => this.full,
    lastSeq: () => this.subjects.length,
    lastSeqOf: (subject) => this.subjects.lastIndexOf(subject) + 1
  }
  readonly state: PublishState = makePublishState()
  constructor(readonly rules: PublishRules = makeRules()) {}

  /** Decide, and store what the decision says to store (as the shell does). */
  publish(subject: string, h: PublishHeaders | undefined, now: number): PublishDecision {
    const d = decidePublish(this.state, this.rules, this.view, subject, h, now)
    if (d.type === "store") {
      this.subjects.push(subject)
      published(this.state, d.msgId, this.subjects.length, now)
    }
    return d
  }
}

describe("de-duplication", () => {
  it("acknowledges a repeated Nats-Msg-Id within the window as a duplicate of the first", () => {
    const s = new Stream()
    expect(s.publish("a", hdrs({ msgId: "x" }), 1000)).toEqual({ type: "store", msgId: "x", rollup: undefined, ttl: 0 })
    s.publish("a", undefined, 1100)
    expect(s.publish("b", hdrs({ msgId: "x" }), 2999)).toEqual({ type: "duplicate", seq: 1, msgId: "x" })
    expect(s.subjects).toHaveLength(2)
  })

  it("stores the id again once the window has passed (the window is open at its end)", () => {
    const s = new Stream()
    s.publish("a", hdrs({ msgId: "x" }), 1000)
    expect(s.publish("a", hdrs({ msgId: "x" }), 3000).type).toBe("store")
    expect(s.publish("a", hdrs({ msgId: "x" }), 3001)).toEqual({ type: "duplicate", seq: 2, msgId: "x" })
  })

  it("forgets ids as they leave the window, oldest first", () => {
    const s = new Stream()
    s.publish("a", hdrs({ msgId: "old" }), 0)
    s.publish("a", hdrs({ msgId: "new" }), 1500)
    s.publish("a", hdrs({ msgId: "other" }), 2500)
    expect([...s.state.ids.keys()]).toEqual(["new", "other"])
  })

  it("a refused message is no duplicate: its id may come again, and the last id falls back", () => {
    const s = new Stream()
    s.publish("a", hdrs({ msgId: "x" }), 0)
    s.publish("a", hdrs({ msgId: "y" }), 10)
    unpublished(s.state, "y", 2)
    expect(s.state.lastMsgId).toBe("x")
    expect(s.publish("a", hdrs({ msgId: "y" }), 20).type).toBe("store")
    // Only the message that holds the id gives it up.
    unpublished(s.state, "x", 7)
    expect(s.publish("a", hdrs({ msgId: "x" }), 30).type).toBe("duplicate")
  })

  it("restores ids found newest first after a restart", () => {
    const state = makePublishState()
    restoreMsgIds(state, [
      { msgId: "c", seq: 9, ts: 90 },
      { msgId: "b", seq: 8, ts: 80 },
      { msgId: "c", seq: 7, ts: 70 }
    ])
    expect([...state.ids.entries()]).toEqual([
      ["c", { seq: 7, ts: 70 }],
      ["b", { seq: 8, ts: 80 }]
    ])
    expect(state.lastMsgId).toBe("c")
  })
})

describe("the expected-* checks", () => {
  it("compares Nats-Expected-Stream with the stream's name", () => {
    const s = new Stream()
    expect(s.publish("a", hdrs({ expectedStream: "T" }), 0)).toEqual({ type: "wrongStream" })
    expect(s.publish("a", hdrs({ expectedStream: "S" }), 0).type).toBe("store")
  })

  it("compares Nats-Expected-Last-Sequence with the stream's last sequence", () => {
    const s = new Stream()
    s.publish("a", undefined, 0)
    s.publish("b", undefined, 0)
    expect(s.publish("a", hdrs({ expectedLastSeq: "1" }), 0)).toEqual({ type: "wrongLastSeq", last: 2 })
    expect(s.publish("a", hdrs({ expectedLastSeq: "2" }), 0).type).toBe("store")
  })

  it("compares Nats-Expected-Last-Subject-Sequence with the last sequence on that subject (0: none)", () => {
    const s = new Stream()
    expect(s.publish("a", hdrs({ expectedLastSubjSeq: "0" }), 0).type).toBe("store")
    s.publish("b", undefined, 0)
    expect(s.publish("a", hdrs({ expectedLastSubjSeq: "2" }), 0)).toEqual({ type: "wrongLastSeq", last: 1 })
    expect(s.publish("a", hdrs({ expectedLastSubjSeq: "1" }), 0).type).toBe("store")
  })

  it("compares Nats-Expected-Last-Msg-Id with the id of the last message stored with one", () => {
    const s = new Stream()
    expect(s.publish("a", hdrs({ expectedLastMsgId: "" }), 0).type).toBe("store")
    s.publish("a", hdrs({ msgId: "m1" }), 0)
    s.publish("a", undefined, 0)
    expect(s.publish("a", hdrs({ expectedLastMsgId: "m0" }), 0)).toEqual({ type: "wrongLastMsgId", last: "m1" })
    expect(s.publish("a", hdrs({ expectedLastMsgId: "m1", msgId: "m2" }), 0).type).toBe("store")
    expect(s.state.lastMsgId).toBe("m2")
  })
})

describe("rollups", () => {
  it("purge the subject (sub) or the whole stream (all), keeping the new message", () => {
    const s = new Stream()
    expect(s.publish("a.1", hdrs({ rollup: "sub" }), 0)).toEqual({ type: "store", msgId: "", rollup: { subject: "a.1", keep: 1 }, ttl: 0 })
    expect(s.publish("a.1", hdrs({ rollup: "all", msgId: "r" }), 0)).toEqual({ type: "store", msgId: "r", rollup: { keep: 1 }, ttl: 0 })
  })

  it("are refused where the stream does not allow them, and for any other value", () => {
    expect(new Stream(makeRules({ allow_rollup_hdrs: false })).publish("a", hdrs({ rollup: "sub" }), 0)).toEqual({ type: "rollupNotPermitted" })
    expect(new Stream().publish("a", hdrs({ rollup: "some" }), 0)).toEqual({ type: "rollupInvalid", value: "some" })
  })
})

describe("per-message TTL (Nats-TTL)", () => {
  const ttlRules = makeRules({ allow_msg_ttl: true })
  it("a valid TTL is stored with the message, in seconds or as never", () => {
    expect(new Stream(ttlRules).publish("a", hdrs({ ttl: "1m" }), 0)).toEqual({ type: "store", msgId: "", rollup: undefined, ttl: 60 })
    expect(new Stream(ttlRules).publish("a", hdrs({ ttl: "never", msgId: "m" }), 0)).toEqual({ type: "store", msgId: "m", rollup: undefined, ttl: TTL_NEVER })
    expect(new Stream(ttlRules).publish("a", hdrs({}), 0)).toMatchObject({ type: "store", ttl: 0 })
    expect(new Stream(ttlRules).publish("a", undefined, 0)).toMatchObject({ type: "store", ttl: 0 })
  })

  it("an invalid TTL is refused with 10165, also on a stream without allow_msg_ttl; a valid one there with 10166", () => {
    const refusal = (rules: PublishRules, ttl: string) => {
      const d = new Stream(rules).publish("a", hdrs({ ttl }), 0)
      if (d.type === "store" || d.type === "duplicate" || d.type === "noSpace") throw new Error(`not refused: ${d.type}`)
      return publishRefused(d)
    }
    expect(refusal(ttlRules, "0")).toEqual({ code: 400, err_code: 10165, description: "invalid per-message TTL" })
    expect(refusal(makeRules(), "0").err_code).toBe(10165)
    expect(refusal(makeRules(), "5s")).toEqual({ code: 400, err_code: 10166, description: "per-message TTL is disabled" })
  })

  it("a duplicate is acknowledged before its TTL is looked at; the expectations come first", () => {
    const s = new Stream(ttlRules)
    s.publish("a", hdrs({ msgId: "m" }), 0)
    expect(s.publish("a", hdrs({ ttl: "bad", msgId: "m" }), 1)).toEqual({ type: "duplicate", seq: 1, msgId: "m" })
    expect(s.publish("a", hdrs({ ttl: "bad", expectedStream: "T" }), 1)).toEqual({ type: "wrongStream" })
  })
})

describe("the order of the rules", () => {
  it("acknowledges a duplicate even when the disk is full or the stream sealed since", () => {
    const s = new Stream()
    s.publish("a", hdrs({ msgId: "x" }), 0)
    s.full = true
    expect(s.publish("a", hdrs({ msgId: "x", expectedLastSeq: "9" }), 1).type).toBe("duplicate")
    const sealed = new Stream(makeRules({ sealed: true }))
    restoreMsgIds(sealed.state, [{ msgId: "x", seq: 4, ts: 0 }])
    expect(sealed.publish("a", hdrs({ msgId: "x" }), 1)).toEqual({ type: "duplicate", seq: 4, msgId: "x" })
  })

  it("refuses for want of space before any expectation is looked at, then for a sealed stream", () => {
    const s = new Stream(makeRules({ sealed: true }))
    s.full = true
    expect(s.publish("a", hdrs({ expectedStream: "T" }), 0)).toEqual({ type: "noSpace" })
    s.full = false
    expect(s.publish("a", hdrs({ expectedStream: "T" }), 0)).toEqual({ type: "sealed" })
    expect(s.publish("a", undefined, 0)).toEqual({ type: "sealed" })
  })

  it("checks the stream, then the last sequence, the subject's, the last id, then the rollup", () => {
    const s = new Stream(makeRules({ allow_rollup_hdrs: false }))
    const all = { expectedStream: "T", expectedLastSeq: "5", expectedLastSubjSeq: "5", expectedLastMsgId: "z", rollup: "sub" }
    expect(s.publish("a", hdrs(all), 0).type).toBe("wrongStream")
    expect(s.publish("a", hdrs({ ...all, expectedStream: undefined }), 0)).toEqual({ type: "wrongLastSeq", last: 0 })
    expect(s.publish("a", hdrs({ ...all, expectedStream: undefined, expectedLastSeq: "0" }), 0)).toEqual({ type: "wrongLastSeq", last: 0 })
    expect(s.publish("a", hdrs({ ...all, expectedStream: undefined, expectedLastSeq: "0", expectedLastSubjSeq: "0" }), 0).type).toBe("wrongLastMsgId")
    expect(s.publish("a", hdrs({ rollup: "sub" }), 0).type).toBe("rollupNotPermitted")
  })

  it("decides a publish without JetStream headers without allocating a decision", () => {
    const s = new Stream()
    expect(s.publish("a", undefined, 0)).toBe(s.publish("b", undefined, 1))
    expect(s.publish("a", hdrs({}), 2)).toBe(s.publish("a", undefined, 3))
  })
})

describe("properties over random histories", () => {
  const WINDOW_MS = 1000
  const ids = ["a", "b", "c", "d"]

  it("a publish is a duplicate exactly when an unrefused message with its id was stored less than a window ago", () => {
    const step = fc.record({
      msgId: fc.option(fc.constantFrom(...ids), { nil: undefined }),
      dt: fc.integer({ min: 0, max: 700 }),
      refuse: fc.boolean()
    })
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), (steps) => {
        const s = new Stream(makeRules({ duplicate_window: WINDOW_MS * 1_000_000 }))
        /** The model: every message stored, newest last, with its id and time, and whether it was taken back. */
        const stored: Array<{ msgId: string; seq: number; ts: number; refused: boolean }> = []
        let now = 0
        let lastWithId = 0
        for (const { msgId, dt, refuse } of steps) {
          now += dt
          if (msgId !== undefined) lastWithId = now
          const first = msgId === undefined ? undefined : stored.find((m) => m.msgId === msgId && !m.refused && now - m.ts < WINDOW_MS)
          const d = s.publish("s", msgId === undefined ? undefined : hdrs({ msgId }), now)
          if (first !== undefined) {
            expect(d).toEqual({ type: "duplicate", seq: first.seq, msgId })
            continue
          }
          expect(d.type).toBe("store")
          const seq = s.subjects.length
          stored.push({ msgId: msgId ?? "", seq, ts: now, refused: false })
          // Its write failed and its publisher was refused.
          if (refuse) {
            unpublished(s.state, msgId ?? "", seq)
            stored[stored.length - 1].refused = true
          }
        }
        // Ids are let go as they leave the window (looked at when a publish carries one).
        for (const { ts } of s.state.ids.values()) expect(lastWithId - ts).toBeLessThan(WINDOW_MS)
      })
    )
  })

  it("the expected-* checks pass exactly when what they expect is the stream's state, in nats-server's order", () => {
    const subjects = ["x", "y", "z"]
    const expect_ = (gen: fc.Arbitrary<string>) => fc.option(gen, { nil: undefined, freq: 3 })
    const step = fc.record({
      subject: fc.constantFrom(...subjects),
      msgId: expect_(fc.constantFrom(...ids)),
      expectedStream: expect_(fc.constantFrom("S", "T")),
      expectedLastSeq: expect_(fc.integer({ min: 0, max: 30 }).map(String)),
      expectedLastSubjSeq: expect_(fc.integer({ min: 0, max: 30 }).map(String)),
      expectedLastMsgId: expect_(fc.constantFrom("", ...ids)),
      rollup: expect_(fc.constantFrom("sub", "all", "no")),
      full: fc.boolean()
    })
    fc.assert(
      fc.property(fc.boolean(), fc.array(step, { maxLength: 60 }), (allowRollup, steps) => {
        // A window wider than the run: every id stays a duplicate.
        const s = new Stream(makeRules({ allow_rollup_hdrs: allowRollup, duplicate_window: 3600 * SECOND_NS }))
        let lastId = ""
        const seqOf = new Map<string, number>()
        for (const [i, st] of steps.entries()) {
          const { subject, full, ...h } = st
          s.full = full && i % 5 === 0
          const last = s.subjects.length
          const lastOnSubject = s.subjects.lastIndexOf(subject) + 1
          const expected: PublishDecision =
            h.msgId !== undefined && seqOf.has(h.msgId)
              ? { type: "duplicate", seq: seqOf.get(h.msgId)!, msgId: h.msgId }
              : s.full
              ? { type: "noSpace" }
              : h.expectedStream !== undefined && h.expectedStream !== "S"
              ? { type: "wrongStream" }
              : h.expectedLastSeq !== undefined && Number(h.expectedLastSeq) !== last
              ? { type: "wrongLastSeq", last }
              : h.expectedLastSubjSeq !== undefined && Number(h.expectedLastSubjSeq) !== lastOnSubject
              ? { type: "wrongLastSeq", last: lastOnSubject }
              : h.expectedLastMsgId !== undefined && h.expectedLastMsgId !== lastId
              ? { type: "wrongLastMsgId", last: lastId }
              : h.rollup !== undefined && !allowRollup
              ? { type: "rollupNotPermitted" }
              : h.rollup !== undefined && h.rollup !== "sub" && h.rollup !== "all"
              ? { type: "rollupInvalid", value: h.rollup }
              : {
                type: "store",
                msgId: h.msgId ?? "",
                rollup: h.rollup === undefined ? undefined : h.rollup === "all" ? { keep: 1 } : { subject, keep: 1 },
                ttl: 0
              }
          expect(s.publish(subject, hdrs(h), i)).toEqual(expected)
          if (expected.type === "store" && expected.msgId !== "") {
            seqOf.set(expected.msgId, s.subjects.length)
            lastId = expected.msgId
          }
        }
      })
    )
  })
})
