// Interest retention as nats-server 2.10 does it: a message stays while a consumer
// whose filter matches its subject has not acknowledged it (ack none: delivered), a
// message nobody's filter matches is answered but not kept, deleting a consumer lets
// go of what only it held, and all of it survives a restart on the file store.
import { describe, expect, it } from "vitest"
import { AckPolicy, type JetStreamClient, type JsMsg } from "@nats-io/jetstream"
import { eventuallyAsync, useJsServer } from "../helpers/jetstream.js"

const interest = (name: string, subjects: string[]) => ({ name, subjects, retention: "interest" as never })

const fetchAll = async (js: JetStreamClient, stream: string, consumer: string, n: number): Promise<JsMsg[]> => {
  const c = await js.consumers.get(stream, consumer)
  const got: JsMsg[] = []
  for await (const m of await c.fetch({ max_messages: n, expires: 20_000 })) got.push(m)
  return got
}

describe("interest retention", () => {
  const t = useJsServer()
  const state = async (stream: string) => (await t.jsm.streams.info(stream)).state
  const messages = async (stream: string) => (await state(stream)).messages

  it("removes a message once every consumer whose filter matches it acknowledged it", async () => {
    await t.jsm.streams.add(interest("TWO", ["two.>"]))
    await t.jsm.consumers.add("TWO", { durable_name: "a", filter_subject: "two.a", ack_policy: AckPolicy.Explicit })
    await t.jsm.consumers.add("TWO", { durable_name: "all", filter_subject: "two.>", ack_policy: AckPolicy.Explicit })
    await t.js.publish("two.a", "a1") // 1: held by a and all
    await t.js.publish("two.b", "b1") // 2: held by all only
    await t.js.publish("two.a", "a2") // 3
    await t.js.publish("two.b", "b2") // 4
    expect(await messages("TWO")).toBe(4)

    // `a` acknowledges everything it sees: `all` still holds those messages.
    for (const m of await fetchAll(t.js, "TWO", "a", 2)) await m.ackAck()
    expect(await messages("TWO")).toBe(4)

    // `all` acknowledges 2 and 3, out of order: 2 (only its filter matches) and 3 (a acked it) go.
    const seen = await fetchAll(t.js, "TWO", "all", 4)
    expect(seen.map((m) => m.seq)).toEqual([1, 2, 3, 4])
    await seen[1].ackAck()
    await seen[2].ackAck()
    const st = await state("TWO")
    expect([st.messages, st.first_seq, st.last_seq]).toEqual([2, 1, 4])
    // +TERM lets go too; then the last ack empties the stream.
    seen[3].term()
    await t.nc.flush()
    await eventuallyAsync(async () => (await messages("TWO")) === 1, "the terminated message to go")
    await seen[0].ackAck()
    expect(await messages("TWO")).toBe(0)
  })

  it("keeps a message only for consumers that have not acknowledged it yet, one filter at a time", async () => {
    await t.jsm.streams.add(interest("SPLIT", ["split.*"]))
    await t.jsm.consumers.add("SPLIT", { durable_name: "x", filter_subject: "split.x", ack_policy: AckPolicy.Explicit })
    await t.jsm.consumers.add("SPLIT", { durable_name: "y", filter_subject: "split.y", ack_policy: AckPolicy.Explicit })
    for (let i = 0; i < 3; i++) {
      await t.js.publish("split.x", `x${i}`)
      await t.js.publish("split.y", `y${i}`)
    }
    // Only x acknowledges: exactly its three messages go, y's three stay.
    for (const m of await fetchAll(t.js, "SPLIT", "x", 3)) await m.ackAck()
    expect(await messages("SPLIT")).toBe(3)
    const left = await t.jsm.streams.getMessage("SPLIT", { last_by_subj: "split.y" })
    expect(left?.string()).toBe("y2")
    expect((await t.jsm.consumers.info("SPLIT", "y")).num_pending).toBe(3)
  })

  it("ack policy none counts as acknowledged on delivery", async () => {
    await t.jsm.streams.add(interest("NONE", ["none"]))
    await t.jsm.consumers.add("NONE", { durable_name: "n", ack_policy: AckPolicy.None })
    for (let i = 0; i < 3; i++) await t.js.publish("none", `n${i}`)
    expect(await messages("NONE")).toBe(3)
    expect((await fetchAll(t.js, "NONE", "n", 2)).map((m) => m.string())).toEqual(["n0", "n1"])
    await eventuallyAsync(async () => (await messages("NONE")) === 1, "the delivered messages to go")
    expect((await state("NONE")).first_seq).toBe(3)
  })

  it("does not keep a message no consumer's filter matches, but answers it with its sequence", async () => {
    await t.jsm.streams.add(interest("NOONE", ["noone.*"]))
    const first = await t.js.publish("noone.a", "nobody")
    expect(first.seq).toBe(1)
    let st = await state("NOONE")
    expect([st.messages, st.last_seq, st.first_seq]).toEqual([0, 1, 2])

    await t.jsm.consumers.add("NOONE", { durable_name: "a", filter_subject: "noone.a", ack_policy: AckPolicy.Explicit })
    expect((await t.js.publish("noone.b", "not for a")).seq).toBe(2)
    expect((await t.js.publish("noone.a", "for a")).seq).toBe(3)
    st = await state("NOONE")
    expect([st.messages, st.first_seq, st.last_seq]).toEqual([1, 3, 3])
    // Dedup still sees a dropped message's id.
    const id = await t.js.publish("noone.b", "again", { msgID: "m-1" })
    const dup = await t.js.publish("noone.b", "again", { msgID: "m-1" })
    expect([id.seq, dup.seq, dup.duplicate]).toEqual([4, 4, true])

    // A new consumer does not bring dropped messages back.
    await t.jsm.consumers.add("NOONE", { durable_name: "late", ack_policy: AckPolicy.Explicit })
    expect((await t.jsm.consumers.info("NOONE", "late")).num_pending).toBe(1)
    expect((await fetchAll(t.js, "NOONE", "late", 1)).map((m) => m.seq)).toEqual([3])
  })

  it("deleting a consumer removes the messages only it was holding", async () => {
    await t.jsm.streams.add(interest("DEL", ["del.*"]))
    await t.jsm.consumers.add("DEL", { durable_name: "keep", filter_subject: "del.k", ack_policy: AckPolicy.Explicit })
    await t.jsm.consumers.add("DEL", { durable_name: "gone", ack_policy: AckPolicy.Explicit })
    await t.js.publish("del.k", "k1") // held by both
    await t.js.publish("del.o", "o1") // held by gone only
    await t.js.publish("del.k", "k2")
    await t.js.publish("del.o", "o2")
    const got = await fetchAll(t.js, "DEL", "gone", 1)
    await got[0].ackAck() // gone acked 1; keep still holds it
    expect(await messages("DEL")).toBe(4)
    await t.jsm.consumers.delete("DEL", "gone")
    const st = await state("DEL")
    expect([st.messages, st.first_seq, st.last_seq]).toEqual([2, 1, 4])
    expect((await t.jsm.streams.getMessage("DEL", { seq: 3 }))?.string()).toBe("k2")
    await t.jsm.consumers.delete("DEL", "keep")
    expect(await messages("DEL")).toBe(0)
  })

  it("survives a restart on the file store", async () => {
    await t.jsm.streams.add(interest("RST", ["rst.*"]))
    expect((await t.js.publish("rst.a", "before any consumer")).seq).toBe(1)
    await t.jsm.consumers.add("RST", { durable_name: "a", filter_subject: "rst.a", ack_policy: AckPolicy.Explicit })
    await t.jsm.consumers.add("RST", { durable_name: "b", filter_subjects: ["rst.a", "rst.b"], ack_policy: AckPolicy.Explicit })
    for (let i = 0; i < 3; i++) await t.js.publish("rst.a", `a${i}`) // 2, 3, 4
    await t.js.publish("rst.b", "b0") // 5
    for (const m of await fetchAll(t.js, "RST", "b", 4)) await m.ackAck()
    // b acknowledged everything: only a's three remain.
    expect(await messages("RST")).toBe(3)

    await t.restart()
    let st = await state("RST")
    expect([st.messages, st.first_seq, st.last_seq, st.consumer_count]).toEqual([3, 2, 5, 2])
    const got = await fetchAll(t.js, "RST", "a", 3)
    expect(got.map((m) => m.string())).toEqual(["a0", "a1", "a2"])
    for (const m of got) await m.ackAck()
    expect(await messages("RST")).toBe(0)
    // Still nobody for rst.c: answered, not kept, and the sequence survives another restart.
    expect((await t.js.publish("rst.c", "nobody")).seq).toBe(6)
    await t.restart()
    st = await state("RST")
    expect([st.messages, st.last_seq]).toEqual([0, 6])
    expect((await t.js.publish("rst.a", "after")).seq).toBe(7)
    expect(await messages("RST")).toBe(1)
  })
})
