// Consumer config defaults and validation with JetStream's err_codes, and the
// ack reply subject / ack payload wire forms.
import { describe, expect, it } from "vitest"
import { ackReplySubject, parseAckPayload, parseAckReply } from "../../src/core/consumer/ack.js"
import { applyConsumerDefaults, type ConsumerConfig, validateConsumerConfig } from "../../src/core/consumer/config.js"
import { goDuration } from "../../src/core/consumer/machine.js"

const code = (cfg: ConsumerConfig, ctx = {}) => validateConsumerConfig(cfg, ctx)?.err_code

describe("consumer config validation", () => {
  it("accepts the common pull, push and ordered shapes", () => {
    expect(code({ durable_name: "d", ack_policy: "explicit" })).toBeUndefined()
    expect(code({ deliver_subject: "in.x", ack_policy: "explicit", idle_heartbeat: 5e9 })).toBeUndefined()
    // ordered push consumer as nats.js creates it
    expect(
      code({ deliver_subject: "_INBOX.o", ack_policy: "none", max_deliver: 1, flow_control: true, idle_heartbeat: 5e9, mem_storage: true, num_replicas: 1, deliver_policy: "all" })
    ).toBeUndefined()
    // ordered pull consumer (@nats-io/jetstream)
    expect(code({ name: "o1", ack_policy: "none", max_deliver: 1, mem_storage: true, num_replicas: 1, inactive_threshold: 5e9 })).toBeUndefined()
  })

  it("flow control needs push and heartbeats", () => {
    expect(code({ flow_control: true })).toBe(10089)
    expect(code({ deliver_subject: "d", flow_control: true })).toBe(10108)
    expect(validateConsumerConfig({ deliver_subject: "d", flow_control: true })?.description).toBe("consumer with flow control also needs heartbeats")
  })

  it("pull-only and push-only settings", () => {
    expect(code({ idle_heartbeat: 5e9 })).toBe(10088)
    expect(code({ deliver_subject: "d", max_waiting: 10 })).toBe(10080)
    expect(code({ deliver_subject: "d.*" })).toBe(10079)
    expect(code({ deliver_subject: "d", idle_heartbeat: 50 * 1e6 })).toBe(10083)
    expect(code({ max_waiting: -1 })).toBe(10087)
    expect(code({ max_batch: -1 })).toBe(10114)
    expect(code({ max_expires: 500_000 })).toBe(10115)
  })

  it("ack policy combinations", () => {
    expect(code({ ack_policy: "none", max_ack_pending: 10 })).toBe(10082)
    expect(code({ ack_policy: "explicit", backoff: [1e9, 2e9], max_deliver: 2 })).toBe(10116)
    expect(code({ ack_policy: "explicit", backoff: [1e9, 2e9], max_deliver: 3 })).toBeUndefined()
    expect(code({ ack_policy: "explicit", backoff: [0] })).toBe(10184)
    expect(code({ ack_policy: "bogus" as never })).toBe(10181)
    expect(code({ ack_policy: "explicit", max_ack_pending: 5000 }, { maxAckPendingLimit: 1000 })).toBe(10121)
  })

  it("deliver policy start options", () => {
    expect(validateConsumerConfig({ deliver_policy: "by_start_sequence" })?.description).toBe(
      "consumer delivery policy is deliver by start sequence, but optional start sequence is not set"
    )
    expect(code({ deliver_policy: "by_start_time" })).toBe(10094)
    expect(code({ deliver_policy: "all", opt_start_seq: 4 })).toBe(10094)
    expect(code({ deliver_policy: "by_start_sequence", opt_start_seq: 4 })).toBeUndefined()
    expect(code({ deliver_policy: "by_start_time", opt_start_time: "2024-01-01T00:00:00Z" })).toBeUndefined()
  })

  it("names and filters", () => {
    expect(code({ durable_name: "a", name: "b" })).toBe(10132)
    expect(code({ durable_name: "a.b" })).toBe(10103)
    // nats-server's rules: at most 255 bytes, no path separator, none of " \t\r\n\f.*>".
    expect(code({ durable_name: "d".repeat(255) })).toBeUndefined()
    expect(code({ durable_name: "€".repeat(85) })).toBeUndefined()
    expect(code({ durable_name: "d".repeat(256) })).toBe(10102)
    expect(code({ name: "€".repeat(86) })).toBe(10102)
    for (const c of ["/", "\\"]) expect(code({ durable_name: `a${c}b` })).toBe(10127)
    for (const c of [" ", "\t", "\r", "\n", "\f", "*", ">"]) expect(code({ durable_name: `a${c}b` })).toBe(10103)
    expect(code({ durable_name: "~!@#$%^&()+=-_,;'{}[]|?<é" })).toBeUndefined()
    expect(code({ filter_subject: "a", filter_subjects: ["b"] })).toBe(10136)
    expect(code({ filter_subjects: ["a.*", "a.b"] })).toBe(10138)
    expect(code({ filter_subjects: ["a", ""] })).toBe(10139)
    expect(code({ filter_subject: "x.y" }, { streamSubjects: ["a.>"] })).toBe(10093)
    expect(code({ filter_subject: "a.b" }, { streamSubjects: ["a.>"] })).toBeUndefined()
  })

  it("workqueue streams need explicit ack and deliver all", () => {
    expect(code({ ack_policy: "all" }, { retention: "workqueue" })).toBe(10098)
    expect(code({ ack_policy: "explicit", deliver_policy: "new" }, { retention: "workqueue" })).toBe(10101)
  })

  it("fills nats-server defaults", () => {
    const d = applyConsumerDefaults({ durable_name: "d", ack_policy: "explicit" })
    expect(d).toMatchObject({ deliver_policy: "all", ack_wait: 30e9, max_deliver: -1, max_ack_pending: 1000, max_waiting: 512, replay_policy: "instant", inactive_threshold: 0 })
    expect(applyConsumerDefaults({ ack_policy: "explicit", backoff: [2e9, 4e9] }).ack_wait).toBe(2e9)
    expect(applyConsumerDefaults({ name: "eph" }).inactive_threshold).toBe(5e9)
    expect(applyConsumerDefaults({ deliver_subject: "x" }).max_waiting).toBe(0)
    expect(applyConsumerDefaults({ filter_subjects: ["a"] })).toMatchObject({ filter_subject: "a", filter_subjects: undefined })
  })
})

describe("ack reply subject", () => {
  const fields = { stream: "ORDERS", consumer: "proc", deliveryCount: 2, streamSeq: 41, consumerSeq: 17, timestampMs: 1_700_000_000_123, pending: 5 }

  it("v1 round trip with a ns timestamp", () => {
    const s = ackReplySubject(fields)
    expect(s).toBe("$JS.ACK.ORDERS.proc.2.41.17.1700000000123000000.5")
    expect(parseAckReply(s)).toEqual({ ...fields, timestampNs: "1700000000123000000" })
  })

  it("v2 form with domain, account hash and token", () => {
    const s = ackReplySubject({ ...fields, domain: "", accountHash: "ACCHASH", token: "r4nd" })
    expect(s).toBe("$JS.ACK._.ACCHASH.ORDERS.proc.2.41.17.1700000000123000000.5.r4nd")
    expect(parseAckReply(s)).toMatchObject({ ...fields, domain: "", accountHash: "ACCHASH", token: "r4nd" })
    expect(parseAckReply("$JS.ACK.hub.H.ORDERS.proc.1.2.3.0.0")).toMatchObject({ domain: "hub", streamSeq: 2, consumerSeq: 3 })
  })

  it("rejects what is not an ack reply", () => {
    expect(parseAckReply("$JS.ACK.S.C.1.x.3.4.5")).toBeUndefined()
    expect(parseAckReply("$JS.ACK.S.C.1.2")).toBeUndefined()
    expect(parseAckReply("foo.bar")).toBeUndefined()
  })

  it("parses ack payloads", () => {
    expect(parseAckPayload("")).toEqual({ kind: "ack" })
    expect(parseAckPayload(new TextEncoder().encode("+ACK"))).toEqual({ kind: "ack" })
    expect(parseAckPayload("-NAK")).toEqual({ kind: "nak" })
    expect(parseAckPayload('-NAK {"delay": 2000000000}')).toEqual({ kind: "nak", delayMs: 2000 })
    expect(parseAckPayload("+WPI")).toEqual({ kind: "progress" })
    expect(parseAckPayload("+TERM bad data")).toEqual({ kind: "term", reason: "bad data" })
    expect(parseAckPayload("+NXT")).toEqual({ kind: "next", request: { batch: 1 } })
    expect(parseAckPayload('+NXT {"batch":3,"expires":1000000000}')).toEqual({ kind: "next", request: { batch: 3, expires: 1e9 } })
    expect(parseAckPayload("+NXT 4")).toEqual({ kind: "next", request: { batch: 4 } })
    expect(parseAckPayload("?huh")).toEqual({ kind: "unknown" })
  })

  it("formats durations like Go", () => {
    expect(goDuration(1000)).toBe("1s")
    expect(goDuration(500)).toBe("500ms")
    expect(goDuration(90_000)).toBe("1m30s")
  })
})
