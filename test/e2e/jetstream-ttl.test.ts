// Per-message TTL (nats-server 2.11, ADR-43) through @nats-io/jetstream: `allow_msg_ttl`
// on a stream, `js.publish(…, { ttl })`, the message leaving the stream when its TTL runs
// out (on the subsystem's one timer, so under TestClock), `never` outliving max_age, the
// PubAck errors 10165/10166, the update rules, a KV key with a TTL, and the deadlines
// rebuilt after a restart.
// The whole server on a file store; time moves only when the test moves it.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope, TestClock } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream"
import { Kvm } from "@nats-io/kv"
import { connect } from "@nats-io/transport-node"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { serve } from "../../src/server/serve.js"
import { apiError, eventuallyAsync } from "../helpers/jetstream.js"
import { testOptions } from "../helpers/server.js"

const storeDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "sy-ttl-"))),
  (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true }))
)

/** The server on `dir` with a connected client, until `stop` (a restart is `stop`, then `up` on the same folder). */
const up = (dir: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const running = yield* serve(testOptions({ jetstream: { storeDir: dir, maxMemory: -1, maxStorage: -1 } })).pipe(
      Effect.provide(Layer.merge(layerNode, layerMemoryLog([]))),
      Scope.extend(scope)
    )
    const nc = yield* Effect.promise(() => connect({ servers: `127.0.0.1:${running.port}`, reconnect: false }))
    const jsm = yield* Effect.promise(() => jetstreamManager(nc, { checkAPI: false }))
    const stop = Effect.zipRight(Effect.promise(() => nc.close()), Scope.close(scope, Exit.void))
    yield* Effect.addFinalizer(() => Effect.ignore(stop))
    return { running, nc, jsm, js: jetstream(nc), stop }
  })

type Up = Effect.Effect.Success<ReturnType<typeof up>>

const messages = (s: Up, stream: string) => Effect.promise(async () => (await s.jsm.streams.info(stream)).state.messages)
const until = (what: string, check: () => Promise<boolean>) => Effect.promise(() => eventuallyAsync(check, what))

describe("per-message TTL (Nats-TTL) with nats.js", () => {
  it.scoped("a message leaves the stream when its TTL runs out; consumers skip it; `never` outlives max_age", () =>
    Effect.gen(function*() {
      const s = yield* up(yield* storeDir)
      yield* Effect.promise(() => s.jsm.streams.add({ name: "TTL", subjects: ["ttl.>"], allow_msg_ttl: true, max_age: 100_000_000_000 }))
      yield* Effect.promise(() => s.jsm.consumers.add("TTL", { durable_name: "c", ack_policy: AckPolicy.Explicit }))
      expect(yield* Effect.promise(() => s.js.publish("ttl.short", "short", { ttl: "5s" }))).toMatchObject({ seq: 1 })
      yield* Effect.promise(() => s.js.publish("ttl.never", "never", { ttl: "never" }))
      yield* Effect.promise(() => s.js.publish("ttl.plain", "plain"))
      const stored = yield* Effect.promise(() => s.jsm.streams.getMessage("TTL", { seq: 1 }))
      expect(stored?.header.get("Nats-TTL")).toBe("5s")
      expect(yield* messages(s, "TTL")).toBe(3)

      yield* TestClock.adjust("4 seconds")
      expect(yield* messages(s, "TTL")).toBe(3)
      yield* TestClock.adjust("1 second")
      yield* until("the message with a 5 s TTL to leave", async () => (await s.jsm.streams.info("TTL")).state.messages === 2)
      const info = yield* Effect.promise(() => s.jsm.streams.info("TTL"))
      expect(info.state).toMatchObject({ first_seq: 2, last_seq: 3 })
      const consumer = yield* Effect.promise(() => s.js.consumers.get("TTL", "c"))
      const first = yield* Effect.promise(() => consumer.next({ expires: 5_000 }))
      expect([first?.seq, first?.string()]).toEqual([2, "never"])
      first?.ack()

      // max_age (100 s) takes the plain message, not the one whose TTL is `never`
      yield* TestClock.adjust("100 seconds")
      yield* until("max_age to take the plain message", async () => (await s.jsm.streams.info("TTL")).state.messages === 1)
      yield* TestClock.adjust("1000 seconds")
      expect(yield* messages(s, "TTL")).toBe(1)
      const left = yield* Effect.promise(() => s.jsm.streams.getMessage("TTL", { seq: 2 }))
      expect(left?.string()).toBe("never")
    }))

  it.scoped("a KV key put with a TTL reads as gone once it runs out", () =>
    Effect.gen(function*() {
      const s = yield* up(yield* storeDir)
      const kv = yield* Effect.promise(() => new Kvm(s.nc).create("TTLKV"))
      // nats.js asks for delete markers with a KV TTL (not supported): the option is set on the bucket's stream itself
      yield* Effect.promise(() => s.jsm.streams.update("KV_TTLKV", { allow_msg_ttl: true }))
      yield* Effect.promise(() => kv.create("session", "token", "5s"))
      yield* Effect.promise(() => kv.put("kept", "value"))
      expect((yield* Effect.promise(() => kv.get("session")))?.string()).toBe("token")
      yield* TestClock.adjust("5 seconds")
      yield* until("the key to read as gone", async () => (await kv.get("session")) === null)
      expect((yield* Effect.promise(() => kv.get("kept")))?.string()).toBe("value")
    }))

  it.scoped("refuses a TTL that is not valid (10165) and one on a stream without allow_msg_ttl (10166); nothing is stored", () =>
    Effect.gen(function*() {
      const s = yield* up(yield* storeDir)
      yield* Effect.promise(() => s.jsm.streams.add({ name: "ON", subjects: ["on"], allow_msg_ttl: true }))
      yield* Effect.promise(() => s.jsm.streams.add({ name: "OFF", subjects: ["off"] }))
      for (const ttl of ["0", "500ms", "-1s", "1d", "soon"]) {
        expect(yield* Effect.promise(() => apiError(s.js.publish("on", "x", { ttl })))).toEqual({
          code: 400,
          err_code: 10165,
          description: "invalid per-message TTL"
        })
      }
      expect(yield* Effect.promise(() => apiError(s.js.publish("off", "x", { ttl: "1m" })))).toEqual({
        code: 400,
        err_code: 10166,
        description: "per-message TTL is disabled"
      })
      expect([yield* messages(s, "ON"), yield* messages(s, "OFF")]).toEqual([0, 0])
      expect(yield* Effect.promise(() => s.js.publish("on", "x", { ttl: "60" }))).toMatchObject({ stream: "ON", seq: 1 })
    }))

  it.scoped("allow_msg_ttl shows in INFO and LIST, may be turned on by an update and never off", () =>
    Effect.gen(function*() {
      const s = yield* up(yield* storeDir)
      const created = yield* Effect.promise(() => s.jsm.streams.add({ name: "UPD", subjects: ["upd"] }))
      expect(created.config.allow_msg_ttl).toBe(false)
      const on = yield* Effect.promise(() => s.jsm.streams.update("UPD", { allow_msg_ttl: true }))
      expect(on.config.allow_msg_ttl).toBe(true)
      const listed = yield* Effect.promise(() => s.jsm.streams.list().next())
      expect(listed.find((i) => i.config.name === "UPD")?.config.allow_msg_ttl).toBe(true)
      expect(yield* Effect.promise(() => s.js.publish("upd", "x", { ttl: "2s" }))).toMatchObject({ seq: 1 })
      expect(yield* Effect.promise(() => apiError(s.jsm.streams.update("UPD", { allow_msg_ttl: false })))).toEqual({
        code: 500,
        err_code: 10052,
        description: "message TTL status can not be disabled"
      })
      // the same create request again is the same stream; subject delete markers are refused, not ignored
      expect((yield* Effect.promise(() => s.jsm.streams.info("UPD"))).config.allow_msg_ttl).toBe(true)
      expect(yield* Effect.promise(() => apiError(s.jsm.streams.add({ name: "MARK", subjects: ["mark"], allow_msg_ttl: true, subject_delete_marker_ttl: 60_000_000_000 }))))
        .toMatchObject({ err_code: 10052, description: expect.stringContaining("not supported") })
      yield* TestClock.adjust("3 seconds")
      yield* until("the message to leave the updated stream", async () => (await s.jsm.streams.info("UPD")).state.messages === 0)
    }))

  it.scoped("after a restart: allow_msg_ttl kept, deadlines rebuilt from the stored headers, what ran out while down gone", () =>
    Effect.gen(function*() {
      const dir = yield* storeDir
      const first = yield* up(dir)
      yield* Effect.promise(() => first.jsm.streams.add({ name: "R", subjects: ["r.>"], allow_msg_ttl: true }))
      yield* Effect.promise(() => first.js.publish("r.down", "ends while down", { ttl: "10s" }))
      yield* Effect.promise(() => first.js.publish("r.later", "ends later", { ttl: "1m" }))
      yield* Effect.promise(() => first.js.publish("r.kept", "kept"))
      yield* first.stop

      yield* TestClock.adjust("20 seconds")
      const second = yield* up(dir)
      const info = yield* Effect.promise(() => second.jsm.streams.info("R"))
      expect(info.config.allow_msg_ttl).toBe(true)
      expect(info.state).toMatchObject({ messages: 2, first_seq: 2, last_seq: 3 })
      // the 1 m TTL counts from when the message was stored, not from the restart
      yield* TestClock.adjust("39 seconds")
      expect(yield* messages(second, "R")).toBe(2)
      yield* TestClock.adjust("2 seconds")
      yield* until("the 1 m message to leave after the restart", async () => (await second.jsm.streams.info("R")).state.messages === 1)
      expect((yield* Effect.promise(() => second.jsm.streams.getMessage("R", { seq: 3 })))?.string()).toBe("kept")
    }))
})
