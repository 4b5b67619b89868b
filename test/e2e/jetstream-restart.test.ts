// Streams survive a restart (config, created time, messages, sequence numbers), and
// monitoring reports the subsystem: /jsz with account and stream detail, /healthz.
import { readdirSync, statSync, truncateSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { makeStoreConfig } from "../../src/core/stream/config.js"
import { layerNode as diskNode } from "../../src/services/disk-node.js"
import { Store } from "../../src/services/store.js"
import { layerFile } from "../../src/services/store-file.js"
import { getJson } from "../helpers/monitor.js"
import { startJsServer, useJsServer } from "../helpers/jetstream.js"

describe("streams across a restart, and in monitoring", () => {
  const t = useJsServer({ client: false })

  it("brings back stream configs, created times and messages after a restart", async () => {
    const { jsm, js } = await t.client()
    const created = await jsm.streams.add({ name: "KEEP", subjects: ["keep.*"], max_msgs_per_subject: 5, allow_direct: true, description: "kept" } as never)
    await jsm.streams.add({ name: "OTHER", subjects: ["other"] })
    for (let i = 0; i < 4; i++) await js.publish(`keep.${i % 2}`, `m${i}`)
    await jsm.streams.deleteMessage("KEEP", 2)

    await t.restart()
    expect(t.srv.lines.some((l) => l.includes("Starting JetStream"))).toBe(true)
    const again = await t.client()
    const si = await again.jsm.streams.info("KEEP")
    expect(si.config).toEqual(created.config)
    expect(si.created).toBe(created.created)
    expect(si.state).toMatchObject({ messages: 3, first_seq: 1, last_seq: 4, num_deleted: 1 })
    expect((await again.jsm.streams.getMessage("KEEP", { seq: 4 }))?.string()).toBe("m3")
    expect((await again.jsm.direct.getMessage("KEEP", { last_by_subj: "keep.0" }))?.string()).toBe("m2")
    // Capture resumes where the stream left off.
    expect(await again.js.publish("keep.1", "after")).toMatchObject({ stream: "KEEP", seq: 5 })
    const names: string[] = []
    for await (const n of again.jsm.streams.names()) names.push(n)
    expect(names.sort()).toEqual(["KEEP", "OTHER"])
    // A deleted stream stays deleted.
    await again.jsm.streams.delete("OTHER")
    await t.restart()
    const third = await t.client()
    const left: string[] = []
    for await (const n of third.jsm.streams.names()) left.push(n)
    expect(left).toEqual(["KEEP"])
  })

  it("reports config, stats, meta and stream detail in /jsz, and healthz js-enabled-only 200", async () => {
    const { jsm, js } = await t.client()
    await jsm.streams.add({ name: "MON", subjects: ["mon"] })
    await js.publish("mon", "hello")
    const jsz = (await getJson(t.srv.base, "/jsz?accounts=true&streams=true&config=true")).json
    expect(jsz.disabled).toBeUndefined()
    expect(jsz.config).toMatchObject({ max_memory: -1, max_storage: -1, store_dir: t.storeDir })
    expect(jsz.streams).toBeGreaterThanOrEqual(2)
    expect(jsz.messages).toBeGreaterThanOrEqual(1)
    expect(jsz.meta_cluster).toMatchObject({ leader: t.srv.serving.server.serverName, cluster_size: 1 })
    const acc = jsz.account_details.find((a: { name: string }) => a.name === "$G")
    const mon = acc.stream_detail.find((s: { name: string }) => s.name === "MON")
    expect(mon).toMatchObject({ name: "MON", config: { name: "MON", subjects: ["mon"] }, state: { messages: 1, first_seq: 1, last_seq: 1 } })
    expect(jsz.api.total).toBeGreaterThan(0)
    const health = await getJson(t.srv.base, "/healthz?js-enabled-only=true")
    expect(health.json).toEqual({ status: "ok" })
    const accountz = (await getJson(t.srv.base, "/accountz?acc=$G")).json
    expect(accountz.account_detail?.jetstream_enabled ?? true).toBe(true)
  })

  it("keeps a stored stream it cannot recover, and says so in /healthz instead of failing to start", async () => {
    const u = await startJsServer()
    try {
      const { jsm } = await u.client()
      await jsm.streams.add({ name: "FINE", subjects: ["fine"] })
      await u.srv.close()
      // A stream in the store without its JetStream configuration (as after damage).
      await Effect.runPromise(
        Effect.scoped(
          Effect.flatMap(Store, (store) => Effect.flatMap(store.create("$G/ORPHAN", makeStoreConfig({ subjects: ["orphan"] })), (s) => s.close()))
        ).pipe(Effect.provide(layerFile(u.storeDir).pipe(Layer.provide(diskNode))))
      )
      await u.restart()
      // js-enabled-only asks only whether streams run (they do); the full check reports the stream.
      expect((await getJson(u.srv.base, "/healthz?js-enabled-only=true")).json).toEqual({ status: "ok" })
      const health = await getJson(u.srv.base, "/healthz", 503)
      expect(health.json.error).toContain("ORPHAN")
      expect(u.srv.lines.some((l) => l.includes("Error recovering stream '$G/ORPHAN'"))).toBe(true)
      const again = await u.client()
      expect((await again.jsm.streams.info("FINE")).config.name).toBe("FINE")
      // Not deleted: it is still in the store after the restart.
      await u.srv.close()
      const names = await Effect.runPromise(
        Effect.scoped(Effect.flatMap(Store, (store) => store.list())).pipe(Effect.provide(layerFile(u.storeDir).pipe(Layer.provide(diskNode))))
      )
      expect(names).toEqual(expect.arrayContaining(["$G/FINE", "$G/ORPHAN"]))
    } finally {
      await u.close()
    }
  })

  it("a block file cut to half loses acknowledged messages: said in the log and /healthz, their sequences never reused (regression: reported as a torn write)", async () => {
    const u = await startJsServer()
    try {
      const { jsm, js } = await u.client()
      await jsm.streams.add({ name: "LOSS", subjects: ["loss.>"] })
      let last = 0
      for (let i = 0; i < 2000; i++) last = (await js.publish("loss.x", `acknowledged ${i}`)).seq
      await u.restart(() => {
        const dir = join(u.storeDir, "%24G%2FLOSS", "msgs")
        const block = join(dir, readdirSync(dir).filter((n) => n.endsWith(".blk")).sort((a, b) => parseInt(a) - parseInt(b)).at(-1)!)
        truncateSync(block, Math.floor(statSync(block).size / 2))
      })
      const health = await getJson(u.srv.base, "/healthz", 503)
      expect(health.json.error).toMatch(/LOSS.*lost acknowledged messages/)
      expect(u.srv.lines.some((l) => l.includes("[ERR]") && l.includes("lost acknowledged messages"))).toBe(true)
      expect(u.srv.lines.some((l) => l.includes("of an unfinished write"))).toBe(false)
      const again = await u.client()
      const info = await again.jsm.streams.info("LOSS")
      expect(info.state.messages).toBeLessThan(2000)
      expect(info.state.last_seq).toBe(info.state.messages)
      // The lost sequences may have been acknowledged: the next message does not take one.
      expect((await again.js.publish("loss.x", "after")).seq).toBe(last + 1)
      // And not after the next restart either.
      await u.restart()
      const third = await u.client()
      expect((await third.js.publish("loss.x", "later")).seq).toBe(last + 2)
    } finally {
      await u.close()
    }
  })
})

