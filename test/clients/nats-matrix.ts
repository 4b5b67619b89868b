// The NATS client matrix: the same cases for every library (Go, C, Python, JavaScript),
// each run by the library itself against a real Switchyard, and checked against what the
// library reported — message contents, sequence numbers, its own error types. A library
// runs a case as `run(case, url, args)` and answers with the JSON object the case defines
// (see test/clients/go/main.go for the reference implementation of every case).
import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventuallyAsync, startJsServer, type JsTestServer } from "../helpers/jetstream.js"
import { makeTestCerts, serverTls, type TestCerts } from "../helpers/certs.js"
import { getJson, type MonitoredServer, startMonitoredServer } from "../helpers/monitor.js"
import { authorization, userEntry } from "../helpers/server.js"
import { type Json, type RestartableServer, type RunOptions, startRestartable } from "./run.js"

export type NatsCase =
  | "connect" | "pubsub" | "queue" | "request" | "no_responders" | "autounsub" | "payload"
  | "drain" | "reconnect" | "jetstream" | "kv" | "objstore"

export interface NatsLibrary {
  /** As the README's compatibility table names it, with the version tested. */
  readonly name: string
  /** The `name` the case programs give their connections (shown in /connz). */
  readonly connName: string
  /** What the library sends as `lang` in CONNECT. */
  readonly lang: string
  /** Build or check the library; throws with the install command when it is missing. */
  prepare(): Promise<void>
  run(c: NatsCase, url: string, args?: Record<string, string>, opts?: RunOptions): Promise<Json>
  /** The library's own names for the errors the matrix provokes. */
  readonly errors: {
    readonly authorization: string
    readonly noResponders: string
    readonly maxPayload: string
    readonly keyExists: string
    readonly keyNotFound: string
  }
  readonly objectStore: boolean
  cleanup?(): void
}

/** The 512 KiB payload every program sends: byte i is (i * 7) mod 256. */
const payloadSha256 = (() => {
  const b = Buffer.alloc(512 * 1024)
  for (let i = 0; i < b.length; i++) b[i] = (i * 7) & 0xff
  return createHash("sha256").update(b).digest("hex")
})()

export const describeNatsMatrix = (lib: NatsLibrary): void => {
  describe(`NATS client matrix: ${lib.name}`, () => {
    let js: JsTestServer
    let users: MonitoredServer
    let token: MonitoredServer
    let tls: MonitoredServer
    let certs: TestCerts
    const url = (s: MonitoredServer) => `nats://${s.url}`

    beforeAll(async () => {
      await lib.prepare()
      certs = makeTestCerts()
      js = await startJsServer()
      users = await startMonitoredServer({ authorization: authorization({ users: [userEntry("alice", "alice-secret")] }) })
      token = await startMonitoredServer({ authorization: authorization({ token: "t0k3n-matrix" }) })
      tls = await startMonitoredServer({ tls: serverTls(certs) })
    })
    afterAll(async () => {
      await Promise.all([js?.close(), users?.close(), token?.close(), tls?.close()])
      certs?.remove()
      lib.cleanup?.()
    })

    it("connects (plain) and reports the server's id and max_payload from INFO", async () => {
      const r = await lib.run("connect", url(js.srv))
      expect(r).toEqual({ connected: true, server_id: js.srv.serving.server.serverId, max_payload: 1048576, tls: false })
    })

    it(`connects with user and password; a wrong password is ${lib.errors.authorization}`, async () => {
      expect(await lib.run("connect", url(users), { user: "alice", pass: "alice-secret" })).toMatchObject({ connected: true })
      expect(await lib.run("connect", url(users), { user: "alice", pass: "wrong" })).toMatchObject({
        connected: false,
        error_type: lib.errors.authorization
      })
    })

    it(`connects with a token; a wrong token is ${lib.errors.authorization}`, async () => {
      expect(await lib.run("connect", url(token), { token: "t0k3n-matrix" })).toMatchObject({ connected: true })
      expect(await lib.run("connect", url(token), { token: "wrong" })).toMatchObject({ connected: false, error_type: lib.errors.authorization })
    })

    it("connects over TLS, verifying the server's certificate with the CA", async () => {
      expect(await lib.run("connect", url(tls), { ca: certs.caFile })).toMatchObject({ connected: true, tls: true })
    })

    it("delivers by * and > wildcards, and not to other subjects", async () => {
      const r = await lib.run("pubsub", url(js.srv))
      expect(r.star).toEqual(["greet.joe=hello joe"])
      expect([...r.gt].sort()).toEqual(["greet.joe.smith=hello smith", "greet.joe=hello joe"])
    })

    it("gives each message to one member of a queue group, and to every plain subscriber", async () => {
      const r = await lib.run("queue", url(js.srv))
      expect(r.plain).toBe(30)
      expect(r.members).toHaveLength(3)
      expect(r.members.reduce((a: number, b: number) => a + b, 0)).toBe(30)
      // Members are picked at random: all 30 on one member has a probability of 3^-29.
      expect(r.members.filter((n: number) => n > 0).length).toBeGreaterThanOrEqual(2)
    })

    it("answers a request with headers, the responder's headers coming back", async () => {
      expect(await lib.run("request", url(js.srv))).toEqual({ reply: "HELLO", trace: "trace-42" })
    })

    it(`fails a request nobody answers with ${lib.errors.noResponders}`, async () => {
      expect(await lib.run("no_responders", url(js.srv))).toMatchObject({ error_type: lib.errors.noResponders })
    })

    it("stops delivering after auto-unsubscribe's maximum", async () => {
      expect(await lib.run("autounsub", url(js.srv))).toMatchObject({ received: 3 })
    })

    it(`round-trips a 512 KiB payload intact; one over max_payload is ${lib.errors.maxPayload}`, async () => {
      expect(await lib.run("payload", url(js.srv))).toMatchObject({
        size: 512 * 1024,
        sha256: payloadSha256,
        over_error_type: lib.errors.maxPayload
      })
    })

    it("drains: every message already sent is processed, then the connection closes", async () => {
      expect(await lib.run("drain", url(js.srv))).toEqual({ processed: 50, closed: true })
    })

    describe("across a server restart", () => {
      let rs: RestartableServer
      beforeAll(async () => {
        rs = await startRestartable(() => ({}))
      })
      afterAll(async () => {
        await rs?.close()
      })

      it("answers the server's RTT PING (rtt in /connz), reconnects, resubscribes and receives", async () => {
        let ready!: () => void
        const isReady = new Promise<void>((r) => (ready = r))
        const done = lib.run("reconnect", `nats://127.0.0.1:${rs.port}`, {}, { onEvent: (e) => e === "ready" && ready() })
        await Promise.race([isReady, done])
        // The library's CONNECT and its answer to the server's first PING, seen in /connz.
        const conn = async () =>
          ((await getJson(rs.srv.base, "/connz")).json.connections as Array<Json>).find((c) => c.name === lib.connName)
        let row: Json | undefined
        await eventuallyAsync(async () => (row = await conn()) !== undefined && row.rtt !== "0s", `a measured rtt for ${lib.connName}`)
        expect(row).toMatchObject({ lang: lib.lang, subscriptions: 1 })
        await rs.restart()
        const r = await done
        expect(r).toMatchObject({ reconnected: true, received: "after restart" })
        expect(r.reconnects).toBeGreaterThanOrEqual(1)
      })
    })

    it("JetStream: publishes with acks, de-duplicates by Nats-Msg-Id, serves pull and push consumers", async () => {
      expect(await lib.run("jetstream", url(js.srv))).toEqual({
        stream: "ORDERS",
        first: { stream: "ORDERS", seq: 1, duplicate: false },
        dedup: [{ seq: 2, duplicate: false }, { seq: 2, duplicate: true }].map((d) => expect.objectContaining(d)),
        pull: ["order 1", "order 2", "order 3"],
        pull_acked: 3,
        push: ["1:order 1", "2:order 2", "3:order 3"]
      })
    })

    it(`KV: put, get, update with revision (stale: ${lib.errors.keyExists}), delete (${lib.errors.keyNotFound}), keys, history, watch`, async () => {
      expect(await lib.run("kv", url(js.srv))).toEqual({
        put_rev: 1,
        get: "red",
        update_rev: 2,
        stale_update_error_type: lib.errors.keyExists,
        deleted_get_error_type: lib.errors.keyNotFound,
        keys: ["color"],
        history: ["red", "blue"],
        watch: ["PUT:color=red", "PUT:color=blue", "PUT:size=xl", "DEL:size="]
      })
    })

    if (lib.objectStore) {
      it("object store: a 300 KiB object in 128 KiB chunks, read back intact, listed", async () => {
        expect(await lib.run("objstore", url(js.srv))).toEqual({ size: 300 * 1024, chunks: 3, intact: true, listed: ["report.bin"] })
      })
    }
  })
}
