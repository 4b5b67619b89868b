// The NATS client matrix's cases for the JavaScript libraries, in process: the core cases
// are the same calls in `nats` (v2) and `@nats-io/transport-node` (v3); JetStream, KV and
// object store differ between the two and have one implementation each. Each case
// answers with the object test/clients/go/main.go defines for it.
import { createHash } from "node:crypto"
import type { Json, RunOptions } from "../run.js"
import type { NatsCase } from "../nats-matrix.js"

const WAIT = 10_000

/* eslint-disable @typescript-eslint/no-explicit-any -- two libraries' structurally equal APIs */
export interface CoreLib {
  connect(opts: Record<string, unknown>): Promise<any>
  headers(): any
}

/** A library's error as its user would test it: the class name, with nats v2's `code` or v3's `cause`. */
export const errorType = (e: unknown): string => {
  const err = e as { name?: string; code?: string; cause?: { name?: string } }
  if (err.code !== undefined) return `${err.name}:${err.code}`
  return err.cause?.name !== undefined ? `${err.name}:${err.cause.name}` : String(err.name)
}

const connectOptions = (name: string, url: string, args: Record<string, string>) => ({
  servers: url,
  name,
  timeout: WAIT,
  ...(args.user !== undefined ? { user: args.user, pass: args.pass } : {}),
  ...(args.token !== undefined ? { token: args.token } : {}),
  ...(args.ca !== undefined ? { tls: { caFile: args.ca } } : {})
})

/** Subscribe with a callback; `until(n)` waits for n messages (or the wait), returns them. */
const collector = (nc: any, subject: string, opts: Record<string, unknown> = {}) => {
  const got: Array<any> = []
  const sub = nc.subscribe(subject, { ...opts, callback: (_e: unknown, m: any) => got.push(m) })
  const until = async (n: number) => {
    const deadline = Date.now() + WAIT
    while (got.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5))
    return got
  }
  return { sub, got, until }
}

export const coreCases = (lib: CoreLib, name: string): Partial<Record<NatsCase, (url: string, args: Record<string, string>, opts: RunOptions) => Promise<Json>>> => {
  const connect = (url: string, args: Record<string, string>, extra: Record<string, unknown> = {}) =>
    lib.connect({ ...connectOptions(name, url, args), ...extra })
  return {
    connect: async (url, args) => {
      let nc: any
      try {
        nc = await connect(url, args, { reconnect: false })
      } catch (e) {
        return { connected: false, error_type: errorType(e), error: String((e as Error).message) }
      }
      await nc.flush()
      const r = { connected: true, server_id: nc.info.server_id, max_payload: nc.info.max_payload, tls: nc.protocol.transport.isEncrypted() }
      await nc.close()
      return r
    },
    pubsub: async (url, args) => {
      const nc = await connect(url, args)
      const star = collector(nc, "greet.*")
      const gt = collector(nc, "greet.>")
      await nc.flush()
      nc.publish("greet.joe", "hello joe")
      nc.publish("greet.joe.smith", "hello smith")
      nc.publish("other.joe", "not for us")
      await nc.flush()
      const show = (ms: Array<any>) => ms.map((m) => `${m.subject}=${m.string()}`).sort()
      const r = { star: show(await star.until(1)), gt: show(await gt.until(2)) }
      await nc.close()
      return r
    },
    queue: async (url, args) => {
      const nc = await connect(url, args)
      const members = [0, 1, 2].map(() => collector(nc, "work", { queue: "workers" }))
      const plain = collector(nc, "work")
      await nc.flush()
      for (let i = 0; i < 30; i++) nc.publish("work", String(i))
      await nc.flush()
      const r = { plain: (await plain.until(30)).length, members: members.map((m) => m.got.length) }
      await nc.close()
      return r
    },
    request: async (url, args) => {
      const nc = await connect(url, args)
      nc.subscribe("svc.echo", {
        callback: (_e: unknown, m: any) => {
          const h = lib.headers()
          h.set("X-Trace", m.headers?.get("X-Trace") ?? "")
          m.respond(m.string().toUpperCase(), { headers: h })
        }
      })
      await nc.flush()
      const h = lib.headers()
      h.set("X-Trace", "trace-42")
      const resp = await nc.request("svc.echo", "hello", { timeout: WAIT, headers: h })
      const r = { reply: resp.string(), trace: resp.headers?.get("X-Trace") ?? "" }
      await nc.close()
      return r
    },
    no_responders: async (url, args) => {
      const nc = await connect(url, args)
      try {
        await nc.request("nobody.home", "anyone?", { timeout: WAIT })
      } catch (e) {
        await nc.close()
        return { error_type: errorType(e), error: String((e as Error).message) }
      }
      throw new Error("a request without responders got an answer")
    },
    autounsub: async (url, args) => {
      const nc = await connect(url, args)
      const c = collector(nc, "auto", { max: 3 })
      await nc.flush()
      for (let i = 0; i < 10; i++) nc.publish("auto", String(i))
      await nc.flush()
      await c.until(3)
      await nc.flush()
      const r = { received: c.got.length }
      await nc.close()
      return r
    },
    payload: async (url, args) => {
      const nc = await connect(url, args)
      const c = collector(nc, "big")
      await nc.flush()
      const data = new Uint8Array(512 * 1024).map((_, i) => (i * 7) & 0xff)
      nc.publish("big", data)
      const [m] = await c.until(1)
      if (m === undefined) throw new Error("the 512 KiB message did not come back")
      const r: Json = { size: m.data.length, sha256: createHash("sha256").update(m.data).digest("hex") }
      try {
        nc.publish("big", new Uint8Array(nc.info.max_payload + 1))
      } catch (e) {
        r.over_error_type = errorType(e)
        r.over_error = String((e as Error).message)
      }
      await nc.close()
      return r
    },
    drain: async (url, args) => {
      const nc = await connect(url, args)
      let processed = 0
      nc.subscribe("drain.me", {
        callback: () => {
          // a slow handler, so messages are still pending at drain
          const until = Date.now() + 2
          while (Date.now() < until);
          processed++
        }
      })
      await nc.flush()
      for (let i = 0; i < 50; i++) nc.publish("drain.me", String(i))
      await nc.flush()
      await nc.drain()
      await nc.closed()
      return { processed, closed: nc.isClosed() }
    },
    reconnect: async (url, args, opts) => {
      const nc = await connect(url, args, { reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 100 })
      let reconnects = 0
      let reconnected!: () => void
      const isReconnected = new Promise<void>((r) => (reconnected = r))
      void (async () => {
        for await (const s of nc.status()) {
          if (s.type === "reconnect") {
            reconnects++
            reconnected()
          }
        }
      })()
      const c = collector(nc, "rc.>")
      await nc.flush()
      opts.onEvent?.("ready", { event: "ready" })
      await isReconnected
      nc.publish("rc.after", "after restart")
      const [m] = await c.until(1)
      const r = { reconnected: true, received: m?.string() ?? "", reconnects }
      await nc.close()
      return r
    }
  }
}

/** The JetStream cases' data, as the other languages send it. */
export const objectData = (): Uint8Array => new Uint8Array(300 * 1024).map((_, i) => i % 251)

/** Read `n` messages of an async iterator of messages, acknowledging each. */
export const takeAcked = async (iter: AsyncIterable<any>, n: number, show: (m: any) => string): Promise<Array<string>> => {
  const out: Array<string> = []
  for await (const m of iter) {
    out.push(show(m))
    if ("ackAck" in m) await m.ackAck()
    else m.ack()
    if (out.length === n) break
  }
  return out
}
