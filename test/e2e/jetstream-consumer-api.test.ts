// Consumer management through @nats-io/jetstream: CONSUMER.CREATE (named, durable,
// ephemeral, filter in the subject), DURABLE.CREATE, INFO, DELETE, LIST, NAMES, the
// JetStream error codes clients switch on, and consumer_count in stream info.
import { beforeAll, describe, expect, it } from "vitest"
import { AckPolicy, DeliverPolicy } from "@nats-io/jetstream"
import type { NatsConnection } from "@nats-io/transport-node"
import { apiError, useJsServer } from "../helpers/jetstream.js"
import { getJson } from "../helpers/monitor.js"

const api = async (nc: NatsConnection, subject: string, body: unknown): Promise<Record<string, any>> => {
  const r = await nc.request(subject, JSON.stringify(body), { timeout: 10_000 })
  return r.json()
}

describe("consumer management", () => {
  const t = useJsServer()
  beforeAll(async () => {
    await t.jsm.streams.add({ name: "ORDERS", subjects: ["orders.*"] })
    for (let i = 0; i < 3; i++) await t.js.publish(`orders.${i % 2 === 0 ? "new" : "old"}`, `o${i}`)
  })

  it("creates a durable consumer and reports its info as clients parse it", async () => {
    const ci = await t.jsm.consumers.add("ORDERS", { durable_name: "dur", ack_policy: AckPolicy.Explicit })
    expect(ci.name).toBe("dur")
    expect(ci.stream_name).toBe("ORDERS")
    expect(ci.config.durable_name).toBe("dur")
    expect(ci.config.ack_policy).toBe("explicit")
    expect(ci.config.deliver_policy).toBe("all")
    expect(ci.config.ack_wait).toBe(30_000_000_000)
    expect(ci.config.max_ack_pending).toBe(1000)
    expect(ci.num_pending).toBe(3)
    expect(ci.num_ack_pending).toBe(0)
    expect(ci.delivered).toEqual({ consumer_seq: 0, stream_seq: 0 })
    expect(ci.ack_floor).toEqual({ consumer_seq: 0, stream_seq: 0 })
    expect(new Date(ci.created).getTime()).toBeGreaterThan(0)
    const again = await t.jsm.consumers.info("ORDERS", "dur")
    expect(again.name).toBe("dur")
    expect(again.num_pending).toBe(3)
    // The same config again is not an error: it answers with the existing consumer.
    expect((await t.jsm.consumers.add("ORDERS", { durable_name: "dur", ack_policy: AckPolicy.Explicit })).name).toBe("dur")
    expect((await t.jsm.streams.info("ORDERS")).state.consumer_count).toBeGreaterThanOrEqual(1)
  })

  it("creates named consumers with the filter in the subject, and ephemeral ones with a generated name", async () => {
    const ci = await t.jsm.consumers.add("ORDERS", { name: "news", filter_subject: "orders.new", ack_policy: AckPolicy.Explicit })
    expect(ci.config.filter_subject).toBe("orders.new")
    expect(ci.num_pending).toBe(2)
    const raw = await api(t.nc, "$JS.API.CONSUMER.CREATE.ORDERS.olds.orders.old", { stream_name: "ORDERS", config: { name: "olds", ack_policy: "none" } })
    expect(raw.type).toBe("io.nats.jetstream.api.v1.consumer_create_response")
    expect(raw.config.filter_subject).toBe("orders.old")
    expect(raw.num_pending).toBe(1)
    const eph = await api(t.nc, "$JS.API.CONSUMER.CREATE.ORDERS", { stream_name: "ORDERS", config: { deliver_policy: "last" } })
    expect(typeof eph.name).toBe("string")
    expect(eph.name.length).toBeGreaterThan(0)
    expect(eph.config.inactive_threshold).toBeGreaterThan(0)
    expect(eph.num_pending).toBe(1)
    const dur = await api(t.nc, "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.legacy", { stream_name: "ORDERS", config: { durable_name: "legacy", deliver_policy: DeliverPolicy.New } })
    expect(dur.name).toBe("legacy")
    expect(dur.num_pending).toBe(0)
  })

  it("answers with the JetStream error codes", async () => {
    expect((await apiError(t.jsm.consumers.add("NOPE", { durable_name: "x" }))).err_code).toBe(10059)
    expect((await apiError(t.jsm.consumers.info("ORDERS", "missing"))).err_code).toBe(10014)
    expect((await apiError(t.jsm.consumers.info("NOPE", "dur"))).err_code).toBe(10059)
    expect((await apiError(t.jsm.consumers.delete("ORDERS", "missing"))).err_code).toBe(10014)
    const mismatch = await api(t.nc, "$JS.API.CONSUMER.CREATE.ORDERS.one", { stream_name: "ORDERS", config: { name: "two" } })
    expect(mismatch.error.err_code).toBe(10017)
    const badFilter = await api(t.nc, "$JS.API.CONSUMER.CREATE.ORDERS.f.orders.new", { stream_name: "ORDERS", config: { name: "f", filter_subject: "orders.old" } })
    expect(badFilter.error.err_code).toBe(10131)
    const outside = await api(t.nc, "$JS.API.CONSUMER.CREATE.ORDERS.g", { stream_name: "ORDERS", config: { name: "g", filter_subject: "other.x" } })
    expect(outside.error.err_code).toBe(10093)
    const exists = await api(t.nc, "$JS.API.CONSUMER.CREATE.ORDERS.dur", { stream_name: "ORDERS", action: "create", config: { durable_name: "dur", ack_policy: "none" } })
    expect(exists.error.err_code).toBe(10148)
    const noSuch = await api(t.nc, "$JS.API.CONSUMER.CREATE.ORDERS.zzz", { stream_name: "ORDERS", action: "update", config: { durable_name: "zzz" } })
    expect(noSuch.error.err_code).toBe(10149)
  })

  it("lists, names and deletes consumers", async () => {
    await t.jsm.consumers.add("ORDERS", { durable_name: "tmp", ack_policy: AckPolicy.Explicit })
    const names: string[] = []
    for await (const n of t.jsm.consumers.list("ORDERS")) names.push(n.name)
    expect(names).toContain("tmp")
    expect(names).toContain("dur")
    const raw = await api(t.nc, "$JS.API.CONSUMER.NAMES.ORDERS", {})
    expect(raw.consumers).toContain("tmp")
    expect(raw.total).toBe(names.length)
    expect((await t.jsm.streams.info("ORDERS")).state.consumer_count).toBe(names.length)
    expect(await t.jsm.consumers.delete("ORDERS", "tmp")).toBe(true)
    expect((await apiError(t.jsm.consumers.info("ORDERS", "tmp"))).err_code).toBe(10014)
    expect((await t.jsm.streams.info("ORDERS")).state.consumer_count).toBe(names.length - 1)
  })

  it("deleting a stream deletes its consumers", async () => {
    await t.jsm.streams.add({ name: "GONE", subjects: ["gone.>"] })
    await t.jsm.consumers.add("GONE", { durable_name: "c", ack_policy: AckPolicy.Explicit })
    await t.jsm.streams.delete("GONE")
    await t.jsm.streams.add({ name: "GONE", subjects: ["gone.>"] })
    expect((await apiError(t.jsm.consumers.info("GONE", "c"))).err_code).toBe(10014)
    expect((await t.jsm.streams.info("GONE")).state.consumer_count).toBe(0)
  })

  it("shows consumers in /jsz stream detail", async () => {
    const jsz = (await getJson(t.srv.base, "/jsz?accounts=true&streams=true&consumers=true")).json
    const streams = jsz.account_details.flatMap((a: any) => a.stream_detail ?? [])
    const orders = streams.find((s: any) => s.name === "ORDERS")
    expect(orders.state.consumer_count).toBeGreaterThan(0)
    const dur = orders.consumer_detail.find((c: any) => c.name === "dur")
    expect(dur).toMatchObject({ stream_name: "ORDERS", name: "dur", num_pending: 3 })
  })
})
