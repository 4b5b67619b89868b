// Starting a real server on loopback port 0 for end-to-end tests, with its log
// captured in memory; and a raw-socket client for byte-level protocol tests.
import * as net from "node:net"
import { Effect, Exit, Layer, Scope } from "effect"
import { type AccountOptions, type AuthorizationOptions, defaultOptions, type ServerOptions, type UserEntry } from "../../src/config/options.js"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { type RunningServer, startNatsServer } from "../../src/server/run.js"

export const testOptions = (over: Partial<ServerOptions> = {}): ServerOptions => ({
  ...defaultOptions,
  host: "127.0.0.1",
  port: 0,
  httpPort: undefined,
  mqtt: undefined,
  jetstream: undefined,
  ...over
})

export interface TestServer extends RunningServer {
  readonly lines: Array<string>
  readonly url: string
  close(): Promise<void>
}

export const startTestServer = async (over: Partial<ServerOptions> = {}): Promise<TestServer> => {
  const lines: Array<string> = []
  const scope = Effect.runSync(Scope.make())
  const layer = Layer.merge(layerNode, layerMemoryLog(lines))
  const running = await Effect.runPromise(
    startNatsServer(testOptions(over)).pipe(Effect.provide(layer), Scope.extend(scope))
  )
  return {
    ...running,
    lines,
    url: `127.0.0.1:${running.port}`,
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** Poll until `check` holds (events, not sleeps: the bound is generous and only a failure waits it out). */
export const eventually = async (check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

/** A client speaking the wire protocol by hand. */
export class RawClient {
  data = ""
  closed = false
  private readonly socket: net.Socket

  private constructor(socket: net.Socket) {
    this.socket = socket
    socket.setEncoding("latin1")
    socket.on("data", (d: string) => {
      this.data += d
    })
    socket.on("close", () => {
      this.closed = true
    })
    socket.on("error", () => {})
  }

  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", port }, () => resolve(new RawClient(s)))
      s.once("error", reject)
    })
  }

  send(s: string | Buffer): void {
    this.socket.write(s)
  }

  /** Wait for `text` to appear in what was received; returns everything received so far. */
  async waitFor(text: string | RegExp, timeoutMs = 10_000): Promise<string> {
    const has = () => (typeof text === "string" ? this.data.includes(text) : text.test(this.data))
    await eventually(has, `${String(text)} (have ${JSON.stringify(this.data.slice(-300))})`, timeoutMs)
    return this.data
  }

  async waitClosed(timeoutMs = 10_000): Promise<void> {
    await eventually(() => this.closed, "the server to close the connection", timeoutMs)
  }

  /** Connect, read INFO, send CONNECT and round-trip a PING so the server has processed it. */
  static async ready(port: number, connect: Record<string, unknown> = { verbose: false }): Promise<RawClient> {
    const c = await RawClient.connect(port)
    await c.waitFor("\r\n")
    c.send(`CONNECT ${JSON.stringify(connect)}\r\nPING\r\n`)
    await c.waitFor("PONG\r\n")
    c.data = ""
    return c
  }

  close(): void {
    this.socket.destroy()
  }

  pause(): void {
    this.socket.pause()
  }
}

// ---- configuration shapes ----

export const userEntry = (name: string, password: string, account?: string): UserEntry => ({
  user: name,
  password,
  nkey: undefined,
  permissions: undefined,
  account
})

/** A user `name` with password `<name>-pw`, limited to `publish`/`subscribe` subjects when given. */
export const limitedUser = (name: string, publish?: ReadonlyArray<string>, subscribe?: ReadonlyArray<string>): UserEntry => ({
  user: name,
  password: `${name}-pw`,
  nkey: undefined,
  permissions: publish === undefined && subscribe === undefined ? undefined : {
    publish: publish === undefined ? undefined : { allow: publish, deny: undefined },
    subscribe: subscribe === undefined ? undefined : { allow: subscribe, deny: undefined },
    allowResponses: undefined
  },
  account: undefined
})

export const authorization = (over: Partial<AuthorizationOptions>): AuthorizationOptions => ({
  user: undefined,
  password: undefined,
  token: undefined,
  users: [],
  timeoutMs: undefined,
  defaultPermissions: undefined,
  ...over
})

export const account = (name: string, users: ReadonlyArray<UserEntry>): AccountOptions => ({
  name,
  users,
  exports: [],
  imports: [],
  jetstream: false
})
