// Publishing into streams: capture, PubAcks, Nats-Msg-Id de-duplication, the
// Nats-Expected-* headers, rollups and discard-new errors, through @nats-io/jetstream.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream"
import { headers, type NatsConnection } from "@nats-io/transport-node"
import { apiError, type JsTestServer, startJsServer } from "../helpers/jetstream.js"

describe("publishing into streams", () => {
  let t: JsTestServer
  let nc: NatsConnection
  let jsm: JetStreamManager
  let js: JetStreamClient
  beforeAll(async () => {
    t = await startJsServer()
    ;({ nc, jsm, js } = await t.client())
  })
  afterAll(async () => {
    await t.close()
  })

  it("stores publishes to the stream's subjects and acknowledges with stream and sequence", async () => {
    await jsm.streams.add({ name: "CAP", subjects: ["cap.*", "cap2.>"] })
    expect(await js.publish("cap.a", "one")).toMatchObject({ stream: "CAP", seq: 1, duplicate: false })
    expect(await js.publish("cap2.x.y", "two")).toMatchObject({ stream: "CAP", seq: 2 })
    // A plain publish (no reply) is stored too; other subjects are not.
    nc.publish("cap.b", "three")
    nc.publish("other", "x")
    await nc.flush()
    expect(await js.publish("cap.c", "four")).toMatchObject({ seq: 4 })
    const si = await jsm.streams.info("CAP", { subjects_filter: ">" })
    expect(si.state).toMatchObject({ messages: 4, first_seq: 1, last_seq: 4, num_subjects: 4 })
    expect(si.state.subjects).toEqual({ "cap.a": 1, "cap2.x.y": 1, "cap.b": 1, "cap.c": 1 })
  })

  it("acknowledges every one of many concurrent publishes, in order", async () => {
    await jsm.streams.add({ name: "MANY", subjects: ["many"] })
    const acks = await Promise.all(Array.from({ length: 200 }, (_, i) => js.publish("many", `${i}`)))
    expect(acks.map((a) => a.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
    expect((await jsm.streams.info("MANY")).state.messages).toBe(200)
  })

  it("de-duplicates on Nats-Msg-Id within the duplicate window", async () => {
    await jsm.streams.add({ name: "DUP", subjects: ["dup"] })
    expect(await js.publish("dup", "a", { msgID: "id-1" })).toMatchObject({ seq: 1, duplicate: false })
    expect(await js.publish("dup", "a again", { msgID: "id-1" })).toMatchObject({ seq: 1, duplicate: true })
    expect(await js.publish("dup", "b", { msgID: "id-2" })).toMatchObject({ seq: 2, duplicate: false })
    expect((await jsm.streams.info("DUP")).state.messages).toBe(2)
  })

  it("honours Nats-Expected-Stream, -Last-Sequence, -Last-Subject-Sequence and -Last-Msg-Id", async () => {
    await jsm.streams.add({ name: "EXP", subjects: ["exp.*"] })
    await js.publish("exp.a", "1", { msgID: "m1" })
    await js.publish("exp.b", "2", { msgID: "m2" })
    expect(await apiError(js.publish("exp.a", "x", { expect: { streamName: "OTHER" } }))).toMatchObject({ err_code: 10060 })
    expect(await js.publish("exp.a", "3", { expect: { streamName: "EXP", lastSequence: 2 } })).toMatchObject({ seq: 3 })
    expect(await apiError(js.publish("exp.a", "x", { expect: { lastSequence: 2 } }))).toMatchObject({
      err_code: 10071,
      description: "wrong last sequence: 3"
    })
    expect(await js.publish("exp.b", "4", { expect: { lastSubjectSequence: 2 } })).toMatchObject({ seq: 4 })
    expect((await apiError(js.publish("exp.b", "x", { expect: { lastSubjectSequence: 2 } }))).err_code).toBe(10071)
    expect(await js.publish("exp.a", "5", { msgID: "m5" })).toMatchObject({ seq: 5 })
    expect(await js.publish("exp.a", "6", { msgID: "m6", expect: { lastMsgID: "m5" } })).toMatchObject({ seq: 6 })
    expect(await apiError(js.publish("exp.a", "x", { expect: { lastMsgID: "m5" } }))).toMatchObject({
      err_code: 10070,
      description: "wrong last msg ID: m6"
    })
    expect((await jsm.streams.info("EXP")).state.messages).toBe(6)
  })

  it("rolls up a subject or the whole stream with Nats-Rollup, only where allowed", async () => {
    await jsm.streams.add({ name: "ROLL", subjects: ["roll.*"], allow_rollup_hdrs: true })
    for (let i = 0; i < 3; i++) {
      await js.publish("roll.a", `${i}`)
      await js.publish("roll.b", `${i}`)
    }
    const sub = headers()
    sub.set("Nats-Rollup", "sub")
    expect(await js.publish("roll.a", "a-rolled", { headers: sub })).toMatchObject({ seq: 7 })
    let si = await jsm.streams.info("ROLL", { subjects_filter: ">" })
    expect(si.state.subjects).toEqual({ "roll.a": 1, "roll.b": 3 })
    const all = headers()
    all.set("Nats-Rollup", "all")
    await js.publish("roll.b", "everything", { headers: all })
    si = await jsm.streams.info("ROLL")
    expect(si.state).toMatchObject({ messages: 1, first_seq: 8, last_seq: 8 })

    await jsm.streams.add({ name: "NOROLL", subjects: ["noroll"] })
    expect(await apiError(js.publish("noroll", "x", { headers: sub }))).toMatchObject({ err_code: 10111, description: "rollup not permitted" })
  })

  it("answers discard-new rejections and oversize messages as JetStream errors", async () => {
    await jsm.streams.add({ name: "FULL", subjects: ["full"], max_msgs: 2, discard: "new" as never, max_msg_size: 100 })
    await js.publish("full", "1")
    await js.publish("full", "2")
    expect(await apiError(js.publish("full", "3"))).toMatchObject({ code: 503, err_code: 10077, description: "maximum messages exceeded" })
    expect(await apiError(js.publish("full", new Uint8Array(200)))).toMatchObject({ err_code: 10054 })
    expect((await jsm.streams.info("FULL")).state.messages).toBe(2)
  })
})
