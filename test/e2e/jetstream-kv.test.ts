// The key/value client (@nats-io/kv) on Switchyard streams: the parts that need no
// consumers (bucket create, put/get/create/update/delete/purge, status), plus the
// expiry of max_age and de-duplication across a restart.
import { describe, expect, it } from "vitest"
import { Kvm } from "@nats-io/kv"
import { eventuallyAsync, useJsServer } from "../helpers/jetstream.js"

describe("key/value buckets and stream housekeeping", () => {
  const t = useJsServer({ client: false })

  it("puts, gets, creates, updates by revision, deletes and purges keys", async () => {
    const { nc } = await t.client()
    // INFO carries the nats-server version Switchyard speaks, so the client enables KV as is.
    const kv = await new Kvm(nc).create("config", { history: 3 })
    expect(await kv.put("a", "1")).toBe(1)
    expect(await kv.put("a", "2")).toBe(2)
    const e = await kv.get("a")
    expect([e?.string(), e?.revision, e?.operation]).toEqual(["2", 2, "PUT"])
    expect(await kv.create("b", "new")).toBe(3)
    await expect(kv.create("b", "again")).rejects.toThrow()
    expect(await kv.update("b", "next", 3)).toBe(4)
    await expect(kv.update("b", "stale", 3)).rejects.toThrow(/wrong last sequence/)
    await kv.delete("a")
    expect((await kv.get("a"))?.operation).toBe("DEL")
    await kv.purge("b")
    expect((await kv.get("b"))?.operation).toBe("PURGE")
    expect(await kv.get("missing")).toBeNull()
    const st = await kv.status()
    expect(st.bucket).toBe("config")
    expect(st.history).toBe(3)
  })

  // Regression: wildcard publish subjects were refused, so every consumer with a wildcard
  // filter ($JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>) failed and keys() timed out.
  it("lists keys and watches the whole bucket (consumers with wildcard filters)", async () => {
    const { nc } = await t.client()
    const kv = await new Kvm(nc).create("fleet")
    await kv.put("dev.1", "on")
    await kv.put("dev.2", "off")
    const keys: Array<string> = []
    for await (const k of await kv.keys()) keys.push(k)
    expect(keys.sort()).toEqual(["dev.1", "dev.2"])
    const seen: Array<string> = []
    const w = await kv.watch()
    const done = (async () => {
      for await (const e of w) {
        seen.push(`${e.key}=${e.string()}`)
        if (seen.length === 3) break
      }
    })()
    await kv.put("dev.3", "new")
    await done
    expect(seen).toEqual(["dev.1=on", "dev.2=off", "dev.3=new"])
  })

  it("drops messages past max_age", async () => {
    const { jsm, js } = await t.client()
    await jsm.streams.add({ name: "AGE", subjects: ["age"], max_age: 300_000_000 })
    await js.publish("age", "soon gone")
    expect((await jsm.streams.info("AGE")).state.messages).toBe(1)
    await eventuallyAsync(async () => (await jsm.streams.info("AGE")).state.messages === 0, "max_age to remove the message")
    const si = await jsm.streams.info("AGE")
    expect(si.state).toMatchObject({ messages: 0, first_seq: 2, last_seq: 1 })
  })

  it("still de-duplicates a Nats-Msg-Id published before a restart", async () => {
    const { jsm, js } = await t.client()
    await jsm.streams.add({ name: "DEDUP", subjects: ["dedup"] })
    expect(await js.publish("dedup", "x", { msgID: "retry-me" })).toMatchObject({ seq: 1, duplicate: false })
    await t.restart()
    const again = await t.client()
    expect(await again.js.publish("dedup", "x", { msgID: "retry-me" })).toMatchObject({ seq: 1, duplicate: true })
    expect(await again.js.publish("dedup", "y", { msgID: "other", expect: { lastMsgID: "retry-me" } })).toMatchObject({ seq: 2 })
  })
})
