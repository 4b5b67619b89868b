// The pure parts of the stream API: config defaults and validation, update rules,
// subject overlap, header parsing and building, and the error shape.
import { describe, expect, it } from "vitest"
import { Either } from "effect"
import { errorResponse, JsErr, publishRefused } from "../../src/core/jetstream/errors.js"
import { buildHeaders, Hdr, parseHeaders, readPublishHeaders } from "../../src/core/jetstream/headers.js"
import {
  checkUpdate,
  normalizeStreamConfig,
  overlaps,
  sameConfig,
  type StreamConfig,
  toStoreConfig
} from "../../src/core/jetstream/stream-config.js"

const ok = (body: unknown, name = "S", create = true): StreamConfig => {
  const r = normalizeStreamConfig(body, name, create)
  if (Either.isLeft(r)) throw new Error(r.left.description)
  return r.right
}
const err = (body: unknown, name = "S", create = true) => {
  const r = normalizeStreamConfig(body, name, create)
  if (Either.isRight(r)) throw new Error("expected an error")
  return r.left
}

describe("stream config", () => {
  it("fills nats-server's defaults, capturing the stream's name when no subjects are given", () => {
    const c = ok({ name: "S" })
    expect(c).toMatchObject({
      subjects: ["S"],
      retention: "limits",
      storage: "file",
      discard: "old",
      max_msgs: -1,
      max_bytes: -1,
      max_age: 0,
      max_msg_size: -1,
      max_msgs_per_subject: -1,
      num_replicas: 1,
      duplicate_window: 120_000_000_000,
      sealed: false,
      allow_direct: false
    })
  })

  it("keeps fields it does not act on and clamps the duplicate window to max_age", () => {
    const c = ok({ name: "S", description: "d", metadata: { a: "b" }, max_age: 1_000_000_000 })
    expect(c.description).toBe("d")
    expect(c.metadata).toEqual({ a: "b" })
    expect(c.duplicate_window).toBe(1_000_000_000)
    expect(toStoreConfig(c).max_age_ms).toBe(1000)
  })

  it("rejects what nats-server rejects, with its codes", () => {
    expect(err({ name: "T" }).err_code).toBe(10056)
    expect(err({ name: "a.b" }, "a.b").err_code).toBe(10052)
    expect(err({ name: "a/b" }, "a/b").err_code).toBe(10128)
    expect(err({ name: "S", num_replicas: 3 }).err_code).toBe(10074)
    expect(err({ name: "S", subjects: ["a.*", "a.>", "b"] }).description).toBe("duplicate subjects detected")
    expect(err({ name: "S", subjects: ["a..b"] }).err_code).toBe(10052)
    expect(err({ name: "S", max_age: 1_000, duplicate_window: 2_000 }).err_code).toBe(10052)
    expect(err({ name: "S", retention: "bogus" }).err_code).toBe(10052)
    expect(err({ name: "S", sealed: true }).err_code).toBe(10052)
    expect(err({ name: "S", subjects: [">"] }).description).toContain("jetstream api")
    expect(err({ name: "S", subjects: ["$JS.*.INFO"] }).err_code).toBe(10052)
    expect(err("nope").err_code).toBe(10025)
    expect(ok({ name: "S", sealed: true }, "S", false).sealed).toBe(true)
  })

  it("allows only the updates nats-server allows", () => {
    const cur = ok({ name: "S", deny_delete: true })
    expect(checkUpdate(cur, ok({ name: "S", deny_delete: true, max_msgs: 5 }))).toBeUndefined()
    expect(checkUpdate(cur, ok({ name: "S", deny_delete: true, storage: "memory" }))?.err_code).toBe(10069)
    expect(checkUpdate(cur, ok({ name: "S" }))?.err_code).toBe(10069)
  })

  it("compares configurations regardless of key order", () => {
    expect(sameConfig(ok({ name: "S", subjects: ["a"], max_msgs: 3 }), ok({ max_msgs: 3, subjects: ["a"], name: "S" }))).toBe(true)
    expect(sameConfig(ok({ name: "S" }), ok({ name: "S", max_msgs: 3 }))).toBe(false)
  })

  it("finds overlapping subjects between streams", () => {
    expect(overlaps(["orders.*"], ["orders.new"])).toBe(true)
    expect(overlaps(["orders.>"], ["billing.>"])).toBe(false)
    expect(overlaps(["a.*.c"], ["a.b.*"])).toBe(true)
  })
})

describe("headers", () => {
  it("reads JetStream headers case-insensitively, the first value winning", () => {
    const block = Buffer.from("NATS/1.0\r\nNats-Msg-Id: abc\r\nnats-expected-last-sequence: 4\r\nNats-Msg-Id: other\r\n\r\n")
    const framed = Buffer.concat([Buffer.from("xx"), block, Buffer.from("payload")])
    const h = parseHeaders(framed, 2, 2 + block.length)
    expect(h.get(Hdr.msgId)).toBe("abc")
    expect(h.get(Hdr.expectedLastSeq)).toBe("4")
    expect(h.get(Hdr.rollup)).toBeUndefined()
  })

  it("picks a publish's JetStream headers for the stream's rules; none when the block names none", () => {
    const block = Buffer.from("NATS/1.0\r\nNATS-MSG-ID: m\r\nNats-Expected-Last-Subject-Sequence: 3\r\nNats-Rollup: sub\r\n\r\n")
    expect(readPublishHeaders(block, 0, block.length)).toEqual({
      msgId: "m",
      expectedStream: undefined,
      expectedLastSeq: undefined,
      expectedLastSubjSeq: "3",
      expectedLastMsgId: undefined,
      rollup: "sub"
    })
    const plain = Buffer.from("NATS/1.0\r\nX-Trace: 1\r\n\r\n")
    expect(readPublishHeaders(plain, 0, plain.length)).toBeUndefined()
  })

  it("builds status and field blocks, appending a stored message's own headers", () => {
    expect(buildHeaders("404 Message Not Found", []).toString()).toBe("NATS/1.0 404 Message Not Found\r\n\r\n")
    const own = Buffer.from("NATS/1.0\r\nX-A: 1\r\n\r\n")
    expect(buildHeaders("", [["Nats-Stream", "S"]], own).toString()).toBe("NATS/1.0\r\nNats-Stream: S\r\nX-A: 1\r\n\r\n")
  })
})

describe("errors", () => {
  it("have the JetStream error shape", () => {
    expect(errorResponse("stream_info", JsErr.streamNotFound)).toEqual({
      type: "io.nats.jetstream.api.v1.stream_info_response",
      error: { code: 404, err_code: 10059, description: "stream not found" }
    })
    expect(JsErr.streamWrongLastSequence(7).description).toBe("wrong last sequence: 7")
  })

  it("answer a refused publish in nats-server's codes and words", () => {
    expect(publishRefused({ type: "sealed" })).toEqual({ code: 400, err_code: 10109, description: "invalid operation on sealed stream" })
    expect(publishRefused({ type: "wrongStream" }).err_code).toBe(10060)
    expect(publishRefused({ type: "wrongLastSeq", last: 3 })).toEqual({ code: 400, err_code: 10071, description: "wrong last sequence: 3" })
    expect(publishRefused({ type: "wrongLastMsgId", last: "a" })).toEqual({ code: 400, err_code: 10070, description: "wrong last msg ID: a" })
    expect(publishRefused({ type: "rollupNotPermitted" }).description).toBe("rollup not permitted")
    expect(publishRefused({ type: "rollupInvalid", value: "x" })).toEqual({ code: 500, err_code: 10111, description: "rollup value invalid: x" })
  })
})
