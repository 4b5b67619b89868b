// Push consumers: deliveries to `deliver_subject` once someone subscribes there, with
// the original subject and ack replies; the @nats-io/jetstream push consumer API; and
// the ordered push consumers @nats-io/kv watch() and @nats-io/obj get() create.
import { describe, expect, it } from "vitest"
import { AckPolicy } from "@nats-io/jetstream"
import { Kvm } from "@nats-io/kv"
import { Objm } from "@nats-io/obj"
import { createInbox, type Msg } from "@nats-io/transport-node"
import { eventuallyAsync, useJsServer } from "../helpers/jetstream.js"

describe("push consumers", () => {
  const t = useJsServer()

  it("delivers to deliver_subject once it has a subscriber, with the stored subject and ack replies", async () => {
    await t.jsm.streams.add({ name: "PU", subjects: ["pu.*"] })
    await t.js.publish("pu.a", "1")
    await t.js.publish("pu.b", "2")
    const deliver = createInbox()
    await t.jsm.consumers.add("PU", { durable_name: "p", deliver_subject: deliver, ack_policy: AckPolicy.Explicit })
    const got: Msg[] = []
    const all = new Promise<void>((resolve) => {
      t.nc.subscribe(deliver, {
        callback: (_e, m) => {
          if (m.headers?.code) return
          got.push(m)
          m.respond("+ACK")
          if (got.length === 3) resolve()
        }
      })
    })
    await t.js.publish("pu.a", "3")
    await all
    expect(got.map((m) => [m.subject, m.string()])).toEqual([["pu.a", "1"], ["pu.b", "2"], ["pu.a", "3"]])
    expect(got[0].reply?.startsWith("$JS.ACK.PU.p.1.1.1.")).toBe(true)
    await eventuallyAsync(async () => (await t.jsm.consumers.info("PU", "p")).num_ack_pending === 0, "acks to apply")
    const info = await t.jsm.consumers.info("PU", "p")
    expect(info.ack_floor.stream_seq).toBe(3)
    expect(info.push_bound).toBe(true)
  })

  it("consumes through the push consumer API with acks", async () => {
    await t.jsm.streams.add({ name: "PU2", subjects: ["pu2"] })
    for (let i = 0; i < 5; i++) await t.js.publish("pu2", `m${i}`)
    await t.jsm.consumers.add("PU2", { durable_name: "p", deliver_subject: createInbox(), ack_policy: AckPolicy.Explicit })
    const c = await t.js.consumers.getPushConsumer("PU2", "p")
    const iter = await c.consume()
    const got: string[] = []
    for await (const m of iter) {
      got.push(m.string())
      m.ack()
      if (got.length === 5) break
    }
    expect(got).toEqual(["m0", "m1", "m2", "m3", "m4"])
  })

  it("a KV watch sees the current value and later updates of a key", async () => {
    const kv = await new Kvm(t.nc).create("cfg", { history: 5 })
    await kv.put("color", "red")
    const w = await kv.watch({ key: "color" })
    const seen: string[] = []
    const done = (async () => {
      for await (const e of w) {
        seen.push(`${e.key}=${e.string()}`)
        if (seen.length === 3) break
      }
    })()
    await kv.put("color", "green")
    await kv.put("color", "blue")
    await done
    expect(seen).toEqual(["color=red", "color=green", "color=blue"])
    const hist: string[] = []
    for await (const e of await kv.history({ key: "color" })) hist.push(e.string())
    expect(hist).toEqual(["red", "green", "blue"])
  })

  it("an object put is read back byte-identical (large enough to need flow control)", async () => {
    const os = await new Objm(t.nc).create("files")
    const data = new Uint8Array(2_500_000)
    for (let i = 0; i < data.length; i++) data[i] = (i * 31) & 0xff
    const info = await os.putBlob({ name: "blob.bin" }, data)
    expect(info.size).toBe(data.length)
    const back = await os.getBlob("blob.bin")
    expect(back?.length).toBe(data.length)
    expect(Buffer.from(back!).equals(Buffer.from(data))).toBe(true)
  })

  it("splits deliveries over a deliver_group queue, each message once", async () => {
    await t.jsm.streams.add({ name: "PQ", subjects: ["pq"] })
    const deliver = createInbox()
    const got: string[] = []
    const all = new Promise<void>((resolve) => {
      for (let i = 0; i < 2; i++)
        t.nc.subscribe(deliver, {
          queue: "workers",
          callback: (_e, m) => {
            if (m.headers?.code) return
            got.push(m.string())
            m.respond()
            if (got.length === 10) resolve()
          }
        })
    })
    await t.nc.flush()
    await t.jsm.consumers.add("PQ", { durable_name: "q", deliver_subject: deliver, deliver_group: "workers", ack_policy: AckPolicy.Explicit })
    for (let i = 0; i < 10; i++) await t.js.publish("pq", `q${i}`)
    await all
    expect([...got].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `q${i}`).sort())
  })

  it("headers_only delivers the headers and Nats-Msg-Size without the payload", async () => {
    await t.jsm.streams.add({ name: "HO", subjects: ["ho"] })
    await t.js.publish("ho", "twelve bytes")
    await t.jsm.consumers.add("HO", { durable_name: "h", headers_only: true, ack_policy: AckPolicy.None })
    const c = await t.js.consumers.get("HO", "h")
    const m = await c.next({ expires: 5_000 })
    expect(m?.data.length).toBe(0)
    expect(m?.headers?.get("Nats-Msg-Size")).toBe("12")
  })

  it("an ephemeral consumer goes away after inactive_threshold", async () => {
    await t.jsm.streams.add({ name: "EPH", subjects: ["eph"] })
    const ci = await t.jsm.consumers.add("EPH", { ack_policy: AckPolicy.Explicit, inactive_threshold: 200_000_000 })
    await eventuallyAsync(async () => {
      const names: string[] = []
      for await (const n of t.jsm.consumers.list("EPH")) names.push(n.name)
      return !names.includes(ci.name)
    }, "the ephemeral consumer to be removed")
    // A push consumer nobody ever subscribes to goes away too.
    const push = await t.jsm.consumers.add("EPH", { deliver_subject: createInbox(), inactive_threshold: 200_000_000 })
    await eventuallyAsync(async () => {
      const names: string[] = []
      for await (const n of t.jsm.consumers.list("EPH")) names.push(n.name)
      return !names.includes(push.name)
    }, "the unbound push consumer to be removed")
  })
})
