// The stream management API ($JS.API.INFO, STREAM.CREATE/UPDATE/DELETE/INFO/LIST/NAMES/PURGE)
// through the real @nats-io/jetstream client, with nats-server's error codes.
import { describe, expect, it } from "vitest"
import { apiError, startJsServer, useJsServer } from "../helpers/jetstream.js"

describe("stream management API", () => {
  const t = useJsServer()

  it("advertises streams in INFO and answers account info", async () => {
    expect(t.nc.info?.jetstream).toBe(true)
    const info = await t.jsm.getAccountInfo()
    expect(info.limits.max_memory).toBe(-1)
    expect(info.api.total).toBeGreaterThanOrEqual(0)
    expect(typeof info.streams).toBe("number")
  })

  it("creates a stream with nats-server's defaults and reports it", async () => {
    const si = await t.jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"] })
    expect(si.config).toMatchObject({
      name: "ORDERS",
      subjects: ["orders.>"],
      retention: "limits",
      storage: "file",
      discard: "old",
      max_msgs: -1,
      max_bytes: -1,
      num_replicas: 1,
      duplicate_window: 120_000_000_000
    })
    expect(si.state.messages).toBe(0)
    expect(Date.parse(si.created)).toBeGreaterThan(0)
    // Same config again: idempotent. A different one: name in use (10058).
    expect((await t.jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"] })).config.name).toBe("ORDERS")
    expect((await apiError(t.jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"], max_msgs: 5 }))).err_code).toBe(10058)
    const account = await t.jsm.getAccountInfo()
    expect(account.streams).toBeGreaterThanOrEqual(1)
  })

  it("rejects overlapping subjects, replicas, bad names and unknown streams with nats-server's codes", async () => {
    await t.jsm.streams.add({ name: "OVL1", subjects: ["ovl.a.*"] })
    expect(await apiError(t.jsm.streams.add({ name: "OVL2", subjects: ["ovl.>"] }))).toMatchObject({ code: 400, err_code: 10065 })
    expect(await apiError(t.jsm.streams.add({ name: "R3", subjects: ["r3"], num_replicas: 3 }))).toMatchObject({ err_code: 10074 })
    expect((await apiError(t.jsm.streams.add({ name: "BAD", subjects: ["a..b"] }))).err_code).toBe(10052)
    expect(await apiError(t.jsm.streams.info("NOPE"))).toMatchObject({ code: 404, err_code: 10059 })
    expect((await apiError(t.jsm.streams.delete("NOPE"))).err_code).toBe(10059)
    const r = await t.nc.request("$JS.API.STREAM.CREATE.X", "{not json", { timeout: 10_000 })
    expect(r.json<{ type: string; error: { err_code: number } }>()).toMatchObject({
      type: "io.nats.jetstream.api.v1.stream_create_response",
      error: { code: 400, err_code: 10025 }
    })
    const m = await t.nc.request("$JS.API.STREAM.CREATE.X", JSON.stringify({ name: "Y", subjects: ["y"] }), { timeout: 10_000 })
    expect(m.json<{ error: { err_code: number } }>().error.err_code).toBe(10056)
  })

  it("updates, lists, names and deletes streams", async () => {
    await t.jsm.streams.add({ name: "UPD", subjects: ["upd.a"] })
    const up = await t.jsm.streams.update("UPD", { subjects: ["upd.a", "upd.b"], max_msgs: 10 })
    expect(up.config.subjects).toEqual(["upd.a", "upd.b"])
    expect(up.config.max_msgs).toBe(10)
    await t.js.publish("upd.b", "x")
    expect((await t.jsm.streams.info("UPD")).state.messages).toBe(1)
    expect((await apiError(t.jsm.streams.update("UPD", { storage: "memory" } as never))).err_code).toBe(10069)

    const names: string[] = []
    for await (const n of t.jsm.streams.names()) names.push(n)
    expect(names).toEqual(expect.arrayContaining(["ORDERS", "UPD"]))
    const filtered: string[] = []
    for await (const n of t.jsm.streams.names("upd.b")) filtered.push(n)
    expect(filtered).toEqual(["UPD"])
    const infos: string[] = []
    for await (const si of t.jsm.streams.list()) infos.push(si.config.name)
    expect(infos.sort()).toEqual([...names].sort())

    expect(await t.jsm.streams.delete("UPD")).toBe(true)
    expect((await apiError(t.jsm.streams.info("UPD"))).err_code).toBe(10059)
    // Its subjects are free again, and no longer captured.
    await t.jsm.streams.add({ name: "UPD2", subjects: ["upd.>"] })
    await t.jsm.streams.delete("UPD2")
  })

  it("purges all, by subject, keeping some, and up to a sequence", async () => {
    await t.jsm.streams.add({ name: "PRG", subjects: ["prg.*"] })
    for (let i = 0; i < 10; i++) await t.js.publish(`prg.${i % 2 === 0 ? "even" : "odd"}`, `${i}`)
    expect(await t.jsm.streams.purge("PRG", { filter: "prg.even", keep: 2 })).toMatchObject({ success: true, purged: 3 })
    expect(await t.jsm.streams.purge("PRG", { seq: 4 })).toMatchObject({ success: true, purged: 1 })
    let si = await t.jsm.streams.info("PRG")
    expect(si.state.messages).toBe(6)
    expect(si.state.first_seq).toBe(4)
    expect(await t.jsm.streams.purge("PRG", { filter: "prg.odd" })).toMatchObject({ purged: 4 })
    expect(await t.jsm.streams.purge("PRG")).toMatchObject({ purged: 2 })
    si = await t.jsm.streams.info("PRG")
    expect(si.state).toMatchObject({ messages: 0, first_seq: 11, last_seq: 10 })
  })

  it("enforces the account's storage limit on create", async () => {
    const small = await startJsServer({}, { maxStorage: 1000 })
    try {
      const { jsm: m, js: j } = await small.client()
      expect(await apiError(m.streams.add({ name: "BIG", subjects: ["big"], max_bytes: 5000 }))).toMatchObject({ err_code: 10047 })
      await m.streams.add({ name: "FIT", subjects: ["fit"], max_bytes: 800 })
      expect((await m.getAccountInfo()).limits.max_storage).toBe(1000)
      // Within max_bytes the stream drops old messages; the account never exceeds its limit.
      for (let i = 0; i < 20; i++) await j.publish("fit", new Uint8Array(50))
      expect((await m.streams.info("FIT")).state.bytes).toBeLessThanOrEqual(800)
    } finally {
      await small.close()
    }
  })

  it("creates a stream of 20,000 subjects and checks other streams against all of them (regression: quadratic check)", async () => {
    const subjects = Array.from({ length: 20_000 }, (_, i) => `big.region${i % 50}.item${i}`)
    const si = await t.jsm.streams.add({ name: "BIG", subjects })
    expect(si.config.subjects).toHaveLength(20_000)
    const ack = await t.js.publish("big.region49.item19999", "last")
    expect(ack).toMatchObject({ stream: "BIG", seq: 1 })
    // Overlapping the last of them, by wildcard: nats-server's 10065.
    expect((await apiError(t.jsm.streams.add({ name: "OTHER", subjects: ["other.x", "big.*.item19999"] }))).err_code).toBe(10065)
    // Colliding with each other at the very end: refused as a whole.
    const dup = await apiError(t.jsm.streams.add({ name: "DUP", subjects: [...subjects.map((s) => `dup.${s}`), "dup.big.region3.*"] }))
    expect(dup).toMatchObject({ err_code: 10052, description: "duplicate subjects detected" })
    await t.jsm.streams.delete("BIG")
    expect((await t.jsm.streams.add({ name: "OTHER", subjects: ["big.*.item19999"] })).config.name).toBe("OTHER")
    await t.jsm.streams.delete("OTHER")
  })

  it("answers requests one at a time in arrival order, even while one is checked across event-loop turns", async () => {
    // The create checks its 20,000 subjects a slice per turn; the requests sent right
    // behind it wait for it, so they see the stream it made and cannot make one that
    // overlaps it.
    const subjects = Array.from({ length: 20_000 }, (_, i) => `turns.s${i}`)
    const replies = await Promise.all([
      t.nc.request("$JS.API.STREAM.CREATE.TURNS", JSON.stringify({ name: "TURNS", subjects }), { timeout: 20_000 }),
      t.nc.request("$JS.API.STREAM.CREATE.LATE", JSON.stringify({ name: "LATE", subjects: ["turns.s19999"] }), { timeout: 20_000 }),
      t.nc.request("$JS.API.STREAM.INFO.TURNS", "", { timeout: 20_000 })
    ])
    const [created, late, info] = replies.map((m) => m.json<Record<string, any>>())
    expect(created.config.name).toBe("TURNS")
    expect(late.error).toMatchObject({ err_code: 10065 })
    expect(info.config?.name).toBe("TURNS")
    await t.jsm.streams.delete("TURNS")
  })
})
