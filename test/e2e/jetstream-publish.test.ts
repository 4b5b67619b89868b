// Publishing into streams: capture, PubAcks, Nats-Msg-Id de-duplication, the
// Nats-Expected-* headers, rollups and discard-new errors, through @nats-io/jetstream.
import { describe, expect, it } from "vitest"
import { headers } from "@nats-io/transport-node"
import { apiError, useJsServer } from "../helpers/jetstream.js"

describe("publishing into streams", () => {
  const t = useJsServer()

  it("stores publishes to the stream's subjects and acknowledges with stream and sequence", async () => {
    await t.jsm.streams.add({ name: "CAP", subjects: ["cap.*", "cap2.>"] })
    expect(await t.js.publish("cap.a", "one")).toMatchObject({ stream: "CAP", seq: 1, duplicate: false })
    expect(await t.js.publish("cap2.x.y", "two")).toMatchObject({ stream: "CAP", seq: 2 })
    // A plain publish (no reply) is stored too; other subjects are not.
    t.nc.publish("cap.b", "three")
    t.nc.publish("other", "x")
    await t.nc.flush()
    expect(await t.js.publish("cap.c", "four")).toMatchObject({ seq: 4 })
    const si = await t.jsm.streams.info("CAP", { subjects_filter: ">" })
    expect(si.state).toMatchObject({ messages: 4, first_seq: 1, last_seq: 4, num_subjects: 4 })
    expect(si.state.subjects).toEqual({ "cap.a": 1, "cap2.x.y": 1, "cap.b": 1, "cap.c": 1 })
  })

  it("acknowledges every one of many concurrent publishes, in order", async () => {
    await t.jsm.streams.add({ name: "MANY", subjects: ["many"] })
    const acks = await Promise.all(Array.from({ length: 200 }, (_, i) => t.js.publish("many", `${i}`)))
    expect(acks.map((a) => a.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
    expect((await t.jsm.streams.info("MANY")).state.messages).toBe(200)
  })

  it("de-duplicates on Nats-Msg-Id within the duplicate window", async () => {
    await t.jsm.streams.add({ name: "DUP", subjects: ["dup"] })
    expect(await t.js.publish("dup", "a", { msgID: "id-1" })).toMatchObject({ seq: 1, duplicate: false })
    expect(await t.js.publish("dup", "a again", { msgID: "id-1" })).toMatchObject({ seq: 1, duplicate: true })
    expect(await t.js.publish("dup", "b", { msgID: "id-2" })).toMatchObject({ seq: 2, duplicate: false })
    expect((await t.jsm.streams.info("DUP")).state.messages).toBe(2)
  })

  it("honours Nats-Expected-Stream, -Last-Sequence, -Last-Subject-Sequence and -Last-Msg-Id", async () => {
    await t.jsm.streams.add({ name: "EXP", subjects: ["exp.*"] })
    await t.js.publish("exp.a", "1", { msgID: "m1" })
    await t.js.publish("exp.b", "2", { msgID: "m2" })
    expect(await apiError(t.js.publish("exp.a", "x", { expect: { streamName: "OTHER" } }))).toMatchObject({ err_code: 10060 })
    expect(await t.js.publish("exp.a", "3", { expect: { streamName: "EXP", lastSequence: 2 } })).toMatchObject({ seq: 3 })
    expect(await apiError(t.js.publish("exp.a", "x", { expect: { lastSequence: 2 } }))).toMatchObject({
      err_code: 10071,
      description: "wrong last sequence: 3"
    })
    expect(await t.js.publish("exp.b", "4", { expect: { lastSubjectSequence: 2 } })).toMatchObject({ seq: 4 })
    expect((await apiError(t.js.publish("exp.b", "x", { expect: { lastSubjectSequence: 2 } }))).err_code).toBe(10071)
    expect(await t.js.publish("exp.a", "5", { msgID: "m5" })).toMatchObject({ seq: 5 })
    expect(await t.js.publish("exp.a", "6", { msgID: "m6", expect: { lastMsgID: "m5" } })).toMatchObject({ seq: 6 })
    expect(await apiError(t.js.publish("exp.a", "x", { expect: { lastMsgID: "m5" } }))).toMatchObject({
      err_code: 10070,
      description: "wrong last msg ID: m6"
    })
    expect((await t.jsm.streams.info("EXP")).state.messages).toBe(6)
  })

  it("rolls up a subject or the whole stream with Nats-Rollup, only where allowed", async () => {
    await t.jsm.streams.add({ name: "ROLL", subjects: ["roll.*"], allow_rollup_hdrs: true })
    for (let i = 0; i < 3; i++) {
      await t.js.publish("roll.a", `${i}`)
      await t.js.publish("roll.b", `${i}`)
    }
    const sub = headers()
    sub.set("Nats-Rollup", "sub")
    expect(await t.js.publish("roll.a", "a-rolled", { headers: sub })).toMatchObject({ seq: 7 })
    let si = await t.jsm.streams.info("ROLL", { subjects_filter: ">" })
    expect(si.state.subjects).toEqual({ "roll.a": 1, "roll.b": 3 })
    const all = headers()
    all.set("Nats-Rollup", "all")
    await t.js.publish("roll.b", "everything", { headers: all })
    si = await t.jsm.streams.info("ROLL")
    expect(si.state).toMatchObject({ messages: 1, first_seq: 8, last_seq: 8 })

    await t.jsm.streams.add({ name: "NOROLL", subjects: ["noroll"] })
    expect(await apiError(t.js.publish("noroll", "x", { headers: sub }))).toMatchObject({ err_code: 10111, description: "rollup not permitted" })
  })

  it("answers discard-new rejections and oversize messages as JetStream errors", async () => {
    await t.jsm.streams.add({ name: "FULL", subjects: ["full"], max_msgs: 2, discard: "new" as never, max_msg_size: 100 })
    await t.js.publish("full", "1")
    await t.js.publish("full", "2")
    expect(await apiError(t.js.publish("full", "3"))).toMatchObject({ code: 503, err_code: 10077, description: "maximum messages exceeded" })
    expect(await apiError(t.js.publish("full", new Uint8Array(200)))).toMatchObject({ err_code: 10054 })
    expect((await t.jsm.streams.info("FULL")).state.messages).toBe(2)
  })
})
