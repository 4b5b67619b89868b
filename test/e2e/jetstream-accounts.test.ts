// Streams per account: each account is its own stream namespace and subject space,
// accounts without JetStream get nats-server's "not enabled" error, memory streams
// count against max_memory, and the account storage limit stops publishes.
import { describe, expect, it } from "vitest"
import { account, userEntry } from "../helpers/monitor.js"
import { apiError, useJsServer } from "../helpers/jetstream.js"

describe("streams in accounts", () => {
  const t = useJsServer({
    options: {
      accounts: [
        { ...account("A", [userEntry("a", "pa")]), jetstream: true },
        { ...account("B", [userEntry("b", "pb")]), jetstream: true },
        account("C", [userEntry("c", "pc")])
      ]
    },
    jetstream: { maxMemory: 10_000, maxStorage: 2_000 },
    client: false
  })

  it("keeps streams of different accounts apart, same names and subjects included", async () => {
    const a = await t.client({ user: "a", pass: "pa" })
    const b = await t.client({ user: "b", pass: "pb" })
    await a.jsm.streams.add({ name: "S", subjects: ["shared.>"] })
    await b.jsm.streams.add({ name: "S", subjects: ["shared.>"] })
    await a.js.publish("shared.x", "from a")
    await a.js.publish("shared.x", "from a again")
    expect(await b.js.publish("shared.x", "from b")).toMatchObject({ stream: "S", seq: 1 })
    expect((await a.jsm.streams.info("S")).state.messages).toBe(2)
    expect((await b.jsm.streams.info("S")).state.messages).toBe(1)
    expect((await a.jsm.getAccountInfo()).streams).toBe(1)
    await b.jsm.streams.delete("S")
    expect((await a.jsm.streams.info("S")).state.messages).toBe(2)
  })

  it("answers 'JetStream not enabled for account' where the account has no streams", async () => {
    const c = await t.client({ user: "c", pass: "pc" })
    const r = await c.nc.request("$JS.API.INFO", "", { timeout: 10_000 })
    expect(r.json<{ error: { code: number; err_code: number } }>().error).toMatchObject({ code: 503, err_code: 10039 })
  })

  it("counts memory streams as memory and stops publishes at the account storage limit", async () => {
    const a = await t.client({ user: "a", pass: "pa" })
    await a.jsm.streams.add({ name: "MEM", subjects: ["mem"], storage: "memory" as never })
    await a.js.publish("mem", new Uint8Array(100))
    const info = await a.jsm.getAccountInfo()
    expect(info.memory).toBeGreaterThanOrEqual(100)
    expect(info.limits).toMatchObject({ max_memory: 10_000, max_storage: 2_000 })

    await a.jsm.streams.add({ name: "DISK", subjects: ["disk"] })
    let err: { err_code: number } | undefined
    for (let i = 0; i < 50 && err === undefined; i++) {
      try {
        await a.js.publish("disk", new Uint8Array(100))
      } catch {
        err = await apiError(a.js.publish("disk", new Uint8Array(100)))
      }
    }
    expect(err?.err_code).toBe(10002)
    expect((await a.jsm.getAccountInfo()).storage).toBeLessThanOrEqual(2_000)
  })
})
