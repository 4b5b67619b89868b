// End-to-end stream tests: the whole server (`serve()`) with streams on a file store
// in a fresh temporary directory, the monitor on an ephemeral port, and real
// @nats-io clients. `restart()` stops the server and starts a new one on the same
// store directory. `useJsServer()` is the usual set-up: one such server per describe
// block (or file), with a connected client.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream"
import { afterAll, beforeAll } from "vitest"
import { Effect, Layer } from "effect"
import type { JetStreamOptions, ServerOptions } from "../../src/config/options.js"
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

export const startJsServer = async (over: Partial<ServerOptions> = {}, js: Partial<JetStreamOptions> = {}): Promise<JsTestServer> => {
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

export interface JsServerFixture extends JsTestServer {
  /** The fixture's client: connected when the server starts, and again after each `restart()`. */
  readonly nc: NatsConnection
  readonly jsm: JetStreamManager
  readonly js: JetStreamClient
}

/**
 * The stream server of the enclosing describe block (or test file): started by a
 * `beforeAll` with these server and stream options and closed by an `afterAll`, with one
 * connected client (`nc`, `jsm`, `js`). `client: false` leaves that client out: for a
 * server whose users need credentials, or tests that open their own with `client(auth)`.
 * Its fields are read in tests and hooks, once the server is up, never while the block
 * is being defined.
 */
export const useJsServer = (
  { options = {}, jetstream: jsOptions = {}, client = true }: {
    readonly options?: Partial<ServerOptions>
    readonly jetstream?: Partial<JetStreamOptions>
    readonly client?: boolean
  } = {}
): JsServerFixture => {
  let server: JsTestServer | undefined
  let own: Awaited<ReturnType<JsTestServer["client"]>> | undefined
  const up = (): JsTestServer => {
    if (server === undefined) throw new Error("useJsServer: the server starts in beforeAll; read it inside a test or hook")
    return server
  }
  const connected = () => {
    if (own === undefined) throw new Error(client ? "useJsServer: the client connects in beforeAll" : "useJsServer: started with client: false")
    return own
  }
  beforeAll(async () => {
    server = await startJsServer(options, jsOptions)
    if (client) own = await server.client()
  })
  afterAll(async () => {
    await server?.close()
  })
  return {
    get srv() {
      return up().srv
    },
    get storeDir() {
      return up().storeDir
    },
    get nc() {
      return connected().nc
    },
    get jsm() {
      return connected().jsm
    },
    get js() {
      return connected().js
    },
    client: (auth) => up().client(auth),
    restart: async (whileDown) => {
      own = undefined
      await up().restart(whileDown)
      if (client) own = await up().client()
    },
    close: () => up().close()
  }
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
