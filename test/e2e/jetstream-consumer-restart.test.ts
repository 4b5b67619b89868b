// Consumer state survives a restart: a durable's delivered and ack floor, its
// unacknowledged messages (redelivered afterwards) and its config, on the file store.
import { describe, expect, it } from "vitest"
import { AckPolicy } from "@nats-io/jetstream"
import { type JsTestServer, useJsServer } from "../helpers/jetstream.js"

const NS = 1_000_000

describe("consumer state across restarts", () => {
  const t = useJsServer({ client: false })

  it("a durable resumes where it was: acked messages stay acked, unacked ones come again", async () => {
    {
      const { jsm, js } = await t.client()
      await jsm.streams.add({ name: "R", subjects: ["r.*"] })
      for (let i = 1; i <= 4; i++) await js.publish(`r.${i}`, `m${i}`)
      await jsm.consumers.add("R", { durable_name: "d", ack_policy: AckPolicy.Explicit, ack_wait: 1_000 * NS })
      const c = await js.consumers.get("R", "d")
      const got = []
      for await (const m of await c.fetch({ max_messages: 2, expires: 5_000 })) got.push(m)
      expect(got.map((m) => m.seq)).toEqual([1, 2])
      await got[0].ackAck()
      const info = await jsm.consumers.info("R", "d")
      expect([info.delivered.stream_seq, info.ack_floor.stream_seq, info.num_ack_pending]).toEqual([2, 1, 1])
    }
    await t.restart()
    const { jsm, js } = await t.client()
    const info = await jsm.consumers.info("R", "d")
    expect(info.config.ack_wait).toBe(1_000 * NS)
    expect(info.delivered.stream_seq).toBe(2)
    expect(info.delivered.consumer_seq).toBe(2)
    expect(info.ack_floor.stream_seq).toBe(1)
    expect(info.num_ack_pending).toBe(1)
    expect(info.num_pending).toBe(2)
    expect((await jsm.streams.info("R")).state.consumer_count).toBe(1)
    const c = await js.consumers.get("R", "d")
    const seen: Array<[number, boolean]> = []
    for await (const m of await c.fetch({ max_messages: 3, expires: 20_000 })) {
      seen.push([m.seq, m.info.redelivered])
      await m.ackAck()
    }
    // Message 2 was pending at the restart: it comes again (redelivered) alongside 3 and 4.
    expect(seen.map(([s]) => s).sort()).toEqual([2, 3, 4])
    expect(seen.find(([s]) => s === 2)?.[1]).toBe(true)
    const after = await jsm.consumers.info("R", "d")
    expect([after.ack_floor.stream_seq, after.num_ack_pending, after.num_pending]).toEqual([4, 0, 0])
  })

  it("a deleted consumer stays deleted after a restart", async () => {
    {
      const { jsm } = await t.client()
      await jsm.streams.add({ name: "R2", subjects: ["r2"] })
      await jsm.consumers.add("R2", { durable_name: "keep", ack_policy: AckPolicy.Explicit })
      await jsm.consumers.add("R2", { durable_name: "drop", ack_policy: AckPolicy.Explicit })
      await jsm.consumers.delete("R2", "drop")
    }
    await t.restart()
    const { jsm } = await t.client()
    const names: string[] = []
    for await (const ci of jsm.consumers.list("R2")) names.push(ci.name)
    expect(names).toEqual(["keep"])
  })

  it("every durable name nats-server accepts survives a restart: each length up to 255 bytes (regression: 240-300 lost)", async () => {
    const names: string[] = []
    for (let n = 1; n <= 255; n++) names.push(`${n}-`.padEnd(n, "x").slice(0, n))
    // Multi-byte and punctuation: what percent-encoding of a file name makes longest.
    names.push("€".repeat(85), "é".repeat(127), "🙂".repeat(63), "~!@#$%^&()+=,;'{}[]|?<".repeat(12).slice(0, 255))
    const request = async (nc: Awaited<ReturnType<JsTestServer["client"]>>["nc"], durable: string) => {
      const body = JSON.stringify({ stream_name: "NAMES", config: { durable_name: durable, ack_policy: "explicit" } })
      return JSON.parse(new TextDecoder().decode((await nc.request("$JS.API.CONSUMER.CREATE.NAMES", body, { timeout: 10_000 })).data))
    }
    {
      const { nc, jsm } = await t.client()
      await jsm.streams.add({ name: "NAMES", subjects: ["names.>"] })
      for (const name of names) {
        const r = await request(nc, name)
        expect(r.error).toBeUndefined()
        expect(r.name).toBe(name)
      }
      // Refused, in nats-server's codes: too long (bytes, not characters), a path separator, a forbidden character.
      expect((await request(nc, "x".repeat(256))).error).toMatchObject({ err_code: 10102, description: "consumer name is too long, maximum allowed is 255" })
      expect((await request(nc, "€".repeat(86))).error).toMatchObject({ err_code: 10102 })
      expect((await request(nc, "a/b")).error).toMatchObject({ err_code: 10127 })
      expect((await request(nc, "a\\b")).error).toMatchObject({ err_code: 10127 })
      expect((await request(nc, "a\nb")).error).toMatchObject({ err_code: 10103 })
    }
    await t.restart()
    const { jsm } = await t.client()
    const listed: string[] = []
    for await (const n of jsm.consumers.list("NAMES")) listed.push(n.name)
    expect(listed.sort()).toEqual([...names].sort())
    expect(t.srv.lines.filter((l) => l.includes("[ERR]"))).toEqual([])
    const info = await jsm.consumers.info("NAMES", names[254])
    expect(info.config.durable_name).toBe(names[254])
  })
})

