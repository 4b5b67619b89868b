// End-to-end stream tests: the whole server (`serve()`) with streams on a file store
// in a fresh temporary directory, the monitor on an ephemeral port, and real
// @nats-io clients. `restart()` stops the server and starts a new one on the same
// store directory.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream"
import { Effect, Layer } from "effect"
import type { ServerOptions } from "../../src/config/options.js"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { serve } from "../../src/server/serve.js"
import { testOptions } from "./server.js"
import { type MonitoredServer, startMonitoredServer } from "./monitor.js"

export interface JsTestServer {
  srv: MonitoredServer
  readonly storeDir: string
  /** Open a client connection (closed by `close()`). */
  client(auth?: { user: string; pass: string }): Promise<{ nc: NatsConnection; jsm: JetStreamManager; js: JetStreamClient }>
  /** Stop, run `whileDown` (e.g. to damage the store), start again. */
  restart(whileDown?: () => void | Promise<void>): Promise<void>
  close(): Promise<void>
}

export const startJsServer = async (over: Partial<ServerOptions> = {}, js: Partial<NonNullable<ServerOptions["jetstream"]>> = {}): Promise<JsTestServer> => {
  const storeDir = mkdtempSync(join(tmpdir(), "switchyard-js-"))
  const start = () => startMonitoredServer({ jetstream: { storeDir, maxMemory: -1, maxStorage: -1, ...js }, ...over })
  const conns: NatsConnection[] = []
  const closeConns = async () => {
    for (const nc of conns.splice(0)) await nc.close().catch(() => {})
  }
  const t: JsTestServer = {
    srv: await start(),
    storeDir,
    client: async (auth) => {
      const nc = await connect({ servers: t.srv.url, reconnect: false, ...auth })
      conns.push(nc)
      return { nc, jsm: await jetstreamManager(nc, { timeout: 10_000, checkAPI: false }), js: jetstream(nc, { timeout: 10_000 }) }
    },
    restart: async (whileDown) => {
      await closeConns()
      await t.srv.close()
      await whileDown?.()
      t.srv = await start()
    },
    close: async () => {
      await closeConns()
      await t.srv.close()
      rmSync(storeDir, { recursive: true, force: true })
    }
  }
  return t
}

/** The JetStream API error a client call failed with: `{ code, err_code, description }` as the server sent it. */
export const apiError = async (p: Promise<unknown>): Promise<{ code: number; err_code: number; description: string }> => {
  try {
    await p
  } catch (e) {
    const err = e as { api_error?: { code: number; err_code: number; description: string }; apiError?: () => { code: number; err_code: number; description: string } }
    const api = err.apiError?.() ?? err.api_error
    if (api !== undefined) return api
    throw e
  }
  throw new Error("expected the call to fail with a JetStream API error")
}

/** Poll an asynchronous condition until it holds (the bound is generous; only a failure waits it out). */
export const eventuallyAsync = async (check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/**
 * The whole server with streams in a fresh temporary directory, inside the caller's
 * Effect scope — so under @effect/vitest's TestClock the subsystem's timers follow the
 * test's clock — with one connected client.
 */
export const serveJsScoped = Effect.gen(function*() {
  const storeDir = mkdtempSync(join(tmpdir(), "switchyard-js-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(storeDir, { recursive: true, force: true })))
  const running = yield* serve(testOptions({ jetstream: { storeDir, maxMemory: -1, maxStorage: -1 } })).pipe(
    Effect.provide(Layer.merge(layerNode, layerMemoryLog([])))
  )
  const nc = yield* Effect.acquireRelease(
    Effect.promise(() => connect({ servers: `127.0.0.1:${running.port}`, reconnect: false })),
    (nc) => Effect.promise(() => nc.close())
  )
  const jsm = yield* Effect.promise(() => jetstreamManager(nc, { checkAPI: false }))
  return { running, storeDir, nc, jsm, js: jetstream(nc) }
})
