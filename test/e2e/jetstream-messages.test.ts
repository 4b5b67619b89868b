// Reading and removing single messages: STREAM.MSG.GET (by sequence, last and next
// for a subject), STREAM.MSG.DELETE, DIRECT.GET, and the deny_delete / deny_purge /
// sealed guards, through @nats-io/jetstream.
import { beforeAll, describe, expect, it } from "vitest"
import { headers } from "@nats-io/transport-node"
import { apiError, useJsServer } from "../helpers/jetstream.js"

describe("single messages", () => {
  const t = useJsServer()
  beforeAll(async () => {
    await t.jsm.streams.add({ name: "MSGS", subjects: ["msgs.*"], allow_direct: true })
    const h = headers()
    h.set("X-Kind", "first")
    await t.js.publish("msgs.a", "a1", { headers: h })
    await t.js.publish("msgs.b", "b1")
    await t.js.publish("msgs.a", "a2")
  })

  it("gets a message by sequence, last for a subject and next for a subject", async () => {
    const m1 = await t.jsm.streams.getMessage("MSGS", { seq: 1 })
    expect(m1?.subject).toBe("msgs.a")
    expect(m1?.string()).toBe("a1")
    expect(m1?.header.get("X-Kind")).toBe("first")
    expect(m1?.time.getTime()).toBeGreaterThan(0)
    const last = await t.jsm.streams.getMessage("MSGS", { last_by_subj: "msgs.a" })
    expect([last?.seq, last?.string()]).toEqual([3, "a2"])
    const next = await t.jsm.streams.getMessage("MSGS", { next_by_subj: "msgs.b", seq: 1 } as never)
    expect(next?.seq).toBe(2)
    expect(await t.jsm.streams.getMessage("MSGS", { seq: 99 })).toBeNull()
    expect(await t.jsm.streams.getMessage("MSGS", { last_by_subj: "msgs.none" })).toBeNull()
    // Malformed requests: nats-server's "bad request" (10003).
    const bad = await t.nc.request("$JS.API.STREAM.MSG.GET.MSGS", JSON.stringify({ seq: "one" }), { timeout: 10_000 })
    expect(bad.json<{ type: string; error: { err_code: number } }>()).toMatchObject({
      type: "io.nats.jetstream.api.v1.stream_msg_get_response",
      error: { code: 400, err_code: 10003 }
    })
    const both = await t.nc.request("$JS.API.STREAM.PURGE.MSGS", JSON.stringify({ seq: 2, keep: 1 }), { timeout: 10_000 })
    expect(both.json<{ error: { err_code: number } }>().error.err_code).toBe(10003)
  })

  it("answers DIRECT.GET with the message and its coordinates in headers, 404 when absent", async () => {
    const d = await t.jsm.direct.getMessage("MSGS", { seq: 1 })
    expect(d?.subject).toBe("msgs.a")
    expect(d?.seq).toBe(1)
    expect(d?.string()).toBe("a1")
    expect(d?.header.get("X-Kind")).toBe("first")
    expect((d as unknown as { stream: string }).stream).toBe("MSGS")
    const last = await t.jsm.direct.getMessage("MSGS", { last_by_subj: "msgs.b" })
    expect([last?.seq, last?.string()]).toEqual([2, "b1"])
    expect(await t.jsm.direct.getMessage("MSGS", { seq: 50 })).toBeNull()
  })

  it("does not answer DIRECT.GET for a stream without allow_direct (no responders)", async () => {
    await t.jsm.streams.add({ name: "NODIRECT", subjects: ["nodirect"] })
    await expect(t.nc.request("$JS.API.DIRECT.GET.NODIRECT", JSON.stringify({ seq: 1 }), { timeout: 10_000 })).rejects.toThrow()
  })

  it("deletes a message, and reports a missing sequence", async () => {
    await t.jsm.streams.add({ name: "DEL", subjects: ["del"] })
    for (let i = 0; i < 3; i++) await t.js.publish("del", `${i}`)
    expect(await t.jsm.streams.deleteMessage("DEL", 2)).toBe(true)
    expect(await t.jsm.streams.getMessage("DEL", { seq: 2 })).toBeNull()
    const si = await t.jsm.streams.info("DEL", { deleted_details: true })
    expect(si.state).toMatchObject({ messages: 2, num_deleted: 1, deleted: [2] })
    expect((await apiError(t.jsm.streams.deleteMessage("DEL", 2))).err_code).toBe(10043)
  })

  it("refuses deletes and purges where denied, and every change on a sealed stream", async () => {
    await t.jsm.streams.add({ name: "DENY", subjects: ["deny"], deny_delete: true, deny_purge: true })
    await t.js.publish("deny", "x")
    expect(await apiError(t.jsm.streams.deleteMessage("DENY", 1))).toMatchObject({ err_code: 10057, description: "message delete not permitted" })
    expect(await apiError(t.jsm.streams.purge("DENY"))).toMatchObject({ err_code: 10110, description: "stream purge not permitted" })
    expect((await apiError(t.jsm.streams.update("DENY", { deny_delete: false }))).err_code).toBe(10069)

    await t.jsm.streams.add({ name: "SEAL", subjects: ["seal"] })
    await t.js.publish("seal", "kept")
    const sealed = await t.jsm.streams.update("SEAL", { sealed: true } as never)
    expect(sealed.config.sealed).toBe(true)
    expect(await apiError(t.js.publish("seal", "x"))).toMatchObject({ err_code: 10109 })
    expect((await apiError(t.jsm.streams.purge("SEAL"))).err_code).toBe(10109)
    expect((await apiError(t.jsm.streams.deleteMessage("SEAL", 1))).err_code).toBe(10109)
    expect((await apiError(t.jsm.streams.update("SEAL", { sealed: false } as never))).err_code).toBe(10069)
    expect((await t.jsm.streams.getMessage("SEAL", { seq: 1 }))?.string()).toBe("kept")
    // A stream cannot be created sealed.
    expect((await apiError(t.jsm.streams.add({ name: "SEAL2", subjects: ["seal2"], sealed: true }))).err_code).toBe(10052)
  })
})
