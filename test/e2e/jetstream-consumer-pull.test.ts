// Pull consumers through @nats-io/jetstream: fetch, next and consume with acks, naks,
// progress, terminate and redelivery after ack_wait, plus the 404/408/409 status
// replies raw pull requests get. Redelivery waits for the event, never a fixed sleep.
import { describe, expect, it } from "vitest"
import { AckPolicy, type JsMsg } from "@nats-io/jetstream"
import { createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node"
import { useJsServer } from "../helpers/jetstream.js"

const NS = 1_000_000

/** Collects messages on an inbox until `n` arrived (generous bound). */
const collect = (nc: NatsConnection, subject: string, n: number): Promise<Msg[]> =>
  new Promise((resolve, reject) => {
    const got: Msg[] = []
    const timer = setTimeout(() => reject(new Error(`only ${got.length} of ${n} messages arrived`)), 20_000)
    nc.subscribe(subject, {
      max: n,
      callback: (_e, m) => {
        got.push(m)
        if (got.length === n) {
          clearTimeout(timer)
          resolve(got)
        }
      }
    })
  })

const status = (m: Msg): string | undefined => (m.headers ? `${m.headers.code} ${m.headers.description}` : undefined)

describe("pull consumers", () => {
  const t = useJsServer()

  it("fetches a batch with ack replies, and acks move the ack floor", async () => {
    await t.jsm.streams.add({ name: "P1", subjects: ["p1.>"] })
    for (let i = 1; i <= 5; i++) await t.js.publish(`p1.${i}`, `m${i}`)
    await t.jsm.consumers.add("P1", { durable_name: "c", ack_policy: AckPolicy.Explicit })
    const c = await t.js.consumers.get("P1", "c")
    const got: JsMsg[] = []
    for await (const m of await c.fetch({ max_messages: 3, expires: 5_000 })) {
      got.push(m)
      m.ack()
    }
    expect(got.map((m) => m.string())).toEqual(["m1", "m2", "m3"])
    expect(got.map((m) => m.seq)).toEqual([1, 2, 3])
    expect(got[0].subject).toBe("p1.1")
    expect(got[0].info.stream).toBe("P1")
    expect(got[0].info.consumer).toBe("c")
    expect(got[0].info.deliveryCount).toBe(1)
    expect(got[0].info.redelivered).toBe(false)
    expect(got[0].info.pending).toBe(4)
    expect(got[2].info.pending).toBe(2)
    // A double ack answers once the ack is applied.
    const m4 = await c.next({ expires: 5_000 })
    expect(m4?.string()).toBe("m4")
    expect(await m4!.ackAck()).toBe(true)
    const info = await t.jsm.consumers.info("P1", "c")
    expect(info.ack_floor.stream_seq).toBe(4)
    expect(info.delivered.stream_seq).toBe(4)
    expect(info.num_ack_pending).toBe(0)
    expect(info.num_pending).toBe(1)
  })

  it("fetch ends early when the stream runs out (the request expires with 408)", async () => {
    await t.jsm.streams.add({ name: "P2", subjects: ["p2"] })
    await t.js.publish("p2", "only")
    await t.jsm.consumers.add("P2", { durable_name: "c", ack_policy: AckPolicy.Explicit })
    const c = await t.js.consumers.get("P2", "c")
    const got: string[] = []
    for await (const m of await c.fetch({ max_messages: 10, expires: 1_000 })) {
      got.push(m.string())
      m.ack()
    }
    expect(got).toEqual(["only"])
    expect(await c.next({ expires: 1_000 })).toBeNull()
  })

  it("redelivers after a nak and after ack_wait, marked redelivered", async () => {
    await t.jsm.streams.add({ name: "P3", subjects: ["p3"] })
    await t.js.publish("p3", "x")
    await t.jsm.consumers.add("P3", { durable_name: "c", ack_policy: AckPolicy.Explicit, ack_wait: 500 * NS })
    const c = await t.js.consumers.get("P3", "c")
    const first = await c.next({ expires: 5_000 })
    expect(first?.info.redelivered).toBe(false)
    first!.nak()
    const second = await c.next({ expires: 10_000 })
    expect(second?.string()).toBe("x")
    expect(second?.info.redelivered).toBe(true)
    expect(second?.info.deliveryCount).toBe(2)
    // Not acked: ack_wait (500ms) runs out and the message comes again.
    const third = await c.next({ expires: 20_000 })
    expect(third?.info.deliveryCount).toBe(3)
    third!.ack()
    const info = await t.jsm.consumers.info("P3", "c")
    expect(info.num_ack_pending).toBe(0)
    expect(info.ack_floor.stream_seq).toBe(1)
  })

  it("+WPI keeps a message, +TERM stops its redelivery", async () => {
    await t.jsm.streams.add({ name: "P4", subjects: ["p4"] })
    await t.js.publish("p4", "a")
    await t.js.publish("p4", "b")
    await t.jsm.consumers.add("P4", { durable_name: "c", ack_policy: AckPolicy.Explicit, ack_wait: 60_000 * NS })
    const c = await t.js.consumers.get("P4", "c")
    const a = await c.next({ expires: 5_000 })
    a!.working()
    a!.term()
    const b = await c.next({ expires: 5_000 })
    expect(b?.string()).toBe("b")
    await b!.ackAck()
    const info = await t.jsm.consumers.info("P4", "c")
    expect(info.num_ack_pending).toBe(0)
    expect(info.num_redelivered).toBe(0)
  })

  it("consume() receives messages published after it started", async () => {
    await t.jsm.streams.add({ name: "P5", subjects: ["p5"] })
    await t.jsm.consumers.add("P5", { durable_name: "c", ack_policy: AckPolicy.Explicit })
    const c = await t.js.consumers.get("P5", "c")
    const iter = await c.consume({ max_messages: 10 })
    const done = (async () => {
      const got: string[] = []
      for await (const m of iter) {
        got.push(m.string())
        m.ack()
        if (got.length === 20) break
      }
      return got
    })()
    for (let i = 0; i < 20; i++) await t.js.publish("p5", `n${i}`)
    expect(await done).toEqual(Array.from({ length: 20 }, (_, i) => `n${i}`))
    await iter.close()
  })

  it("+NXT acks and asks for the next message", async () => {
    await t.jsm.streams.add({ name: "P6", subjects: ["p6"] })
    await t.js.publish("p6", "1")
    await t.js.publish("p6", "2")
    await t.jsm.consumers.add("P6", { durable_name: "c", ack_policy: AckPolicy.Explicit })
    const inbox = createInbox()
    const firstP = collect(t.nc, inbox, 1)
    t.nc.publish("$JS.API.CONSUMER.MSG.NEXT.P6.c", JSON.stringify({ batch: 1 }), { reply: inbox })
    const [first] = await firstP
    expect(first.string()).toBe("1")
    const inbox2 = createInbox()
    const nextP = collect(t.nc, inbox2, 1)
    t.nc.publish(first.reply!, "+NXT", { reply: inbox2 })
    const [next] = await nextP
    expect(next.string()).toBe("2")
    const info = await t.jsm.consumers.info("P6", "c")
    expect(info.ack_floor.stream_seq).toBe(1)
    expect(info.num_ack_pending).toBe(1)
  })

  it("answers raw pull requests with 404 No Messages, 408 Request Timeout and 409 statuses", async () => {
    await t.jsm.streams.add({ name: "P7", subjects: ["p7"] })
    await t.jsm.consumers.add("P7", { durable_name: "c", ack_policy: AckPolicy.Explicit, max_batch: 5 })
    const pull = async (body: unknown) => {
      const inbox = createInbox()
      const p = collect(t.nc, inbox, 1)
      t.nc.publish("$JS.API.CONSUMER.MSG.NEXT.P7.c", JSON.stringify(body), { reply: inbox })
      return (await p)[0]
    }
    expect(status(await pull({ batch: 1, no_wait: true }))).toBe("404 No Messages")
    const timeout = await pull({ batch: 2, expires: 200 * NS })
    expect(status(timeout)).toBe("408 Request Timeout")
    expect(timeout.headers?.get("Nats-Pending-Messages")).toBe("2")
    expect(status(await pull({ batch: 10, expires: 1_000 * NS }))).toBe("409 Exceeded MaxRequestBatch of 5")
    // A waiting request is told when its consumer goes away.
    const inbox = createInbox()
    const p = collect(t.nc, inbox, 1)
    t.nc.publish("$JS.API.CONSUMER.MSG.NEXT.P7.c", JSON.stringify({ batch: 1, expires: 30_000 * NS }), { reply: inbox })
    await t.nc.flush()
    await t.jsm.consumers.delete("P7", "c")
    expect(status((await p)[0])).toBe("409 Consumer Deleted")
  })

  it("removes acked messages from a workqueue stream", async () => {
    await t.jsm.streams.add({ name: "WQ", subjects: ["wq"], retention: "workqueue" as never })
    for (let i = 0; i < 3; i++) await t.js.publish("wq", `w${i}`)
    await t.jsm.consumers.add("WQ", { durable_name: "w", ack_policy: AckPolicy.Explicit })
    const c = await t.js.consumers.get("WQ", "w")
    for await (const m of await c.fetch({ max_messages: 2, expires: 5_000 })) await m.ackAck()
    expect((await t.jsm.streams.info("WQ")).state.messages).toBe(1)
  })

  it("removes from an interest stream what every consumer acked", async () => {
    await t.jsm.streams.add({ name: "INT", subjects: ["int"], retention: "interest" as never })
    await t.jsm.consumers.add("INT", { durable_name: "a", ack_policy: AckPolicy.Explicit })
    await t.jsm.consumers.add("INT", { durable_name: "b", ack_policy: AckPolicy.Explicit })
    for (let i = 0; i < 3; i++) await t.js.publish("int", `i${i}`)
    const a = await t.js.consumers.get("INT", "a")
    for await (const m of await a.fetch({ max_messages: 3, expires: 5_000 })) await m.ackAck()
    expect((await t.jsm.streams.info("INT")).state.messages).toBe(3)
    const b = await t.js.consumers.get("INT", "b")
    for await (const m of await b.fetch({ max_messages: 2, expires: 5_000 })) await m.ackAck()
    expect((await t.jsm.streams.info("INT")).state.messages).toBe(1)
  })

  it("gives up after max_deliver and says so in an advisory", async () => {
    await t.jsm.streams.add({ name: "MD", subjects: ["md"] })
    await t.js.publish("md", "x")
    await t.jsm.consumers.add("MD", { durable_name: "c", ack_policy: AckPolicy.Explicit, max_deliver: 2 })
    const advisory = new Promise<Msg>((resolve) => t.nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.MD.c", { max: 1, callback: (_e, m) => resolve(m) }))
    await t.nc.flush()
    const c = await t.js.consumers.get("MD", "c")
    ;(await c.next({ expires: 5_000 }))!.nak()
    const second = await c.next({ expires: 5_000 })
    expect(second?.info.deliveryCount).toBe(2)
    second!.nak()
    const adv = (await advisory).json<{ type: string; stream_seq: number; deliveries: number }>()
    expect(adv).toMatchObject({ type: "io.nats.jetstream.advisory.v1.max_deliver", stream_seq: 1, deliveries: 2 })
    expect(await c.next({ expires: 1_000 })).toBeNull()
    expect((await t.jsm.consumers.info("MD", "c")).num_ack_pending).toBe(0)
  })

  it("an ordered pull consumer (no name) reads the stream in order", async () => {
    await t.jsm.streams.add({ name: "ORD", subjects: ["ord.>"] })
    for (let i = 0; i < 4; i++) await t.js.publish(`ord.${i}`, `o${i}`)
    const c = await t.js.consumers.get("ORD")
    const got: string[] = []
    for await (const m of await c.fetch({ max_messages: 4, expires: 5_000 })) got.push(m.string())
    expect(got).toEqual(["o0", "o1", "o2", "o3"])
    expect((await t.jsm.getAccountInfo()).consumers).toBeGreaterThan(0)
  })
})
