// Running the client-matrix programs of other languages: a missing tool or library is a
// failure that names its install command (never a skip), a program's output is JSON
// lines (events, then one result), and a server can be restarted on the same port so a
// client's own reconnect logic finds it again.
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ServerOptions } from "../../src/config/options.js"
import { type MonitoredServer, startMonitoredServer } from "../helpers/monitor.js"

/** What `.ci/run` installs; a test that misses one of them fails with this. */
export const INSTALL = {
  go: "apt-get install -y golang-go golang-github-nats-io-go-nats-dev",
  c: "apt-get install -y gcc libnats-dev libssl-dev",
  python: "pip install nats-py==2.15.0 paho-mqtt==2.1.0",
  mosquitto: "apt-get install -y mosquitto-clients"
} as const

/** Throw, with the install command, unless `check` holds. */
export const requireInstalled = (what: string, check: () => boolean, install: string): void => {
  if (!check()) throw new Error(`${what} is not installed. Install it with:\n  ${install}\n(or run .ci/run, which installs every client library the matrix needs)`)
}

export const hasCommand = (cmd: string): boolean => {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "pipe" })
    return true
  } catch {
    return false
  }
}

/** The installed version of a pip package, or undefined. */
export const pipVersion = (name: string): string | undefined => {
  try {
    return execFileSync("python3", ["-c", `import importlib.metadata as m; print(m.version(${JSON.stringify(name)}))`], { stdio: "pipe" }).toString().trim()
  } catch {
    return undefined
  }
}

/** A directory for build outputs, removed with `remove()`. */
export const buildDir = (): { dir: string; remove(): void } => {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-matrix-"))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

export const fileExists = existsSync

export type Json = Record<string, any>

export interface RunOptions {
  /** Called for each {"event": …} line as it arrives. */
  readonly onEvent?: (event: string, line: Json) => void
  readonly timeoutMs?: number
  readonly env?: NodeJS.ProcessEnv
}

/**
 * Run `argv` and resolve with its {"result": …}; reject with its {"fatal": …}, a non-zero
 * exit or a timeout, quoting what it printed.
 */
export const runProgram = (argv: ReadonlyArray<string>, opts: RunOptions = {}): Promise<Json> =>
  new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...opts.env } })
    let out = ""
    let err = ""
    let pending = ""
    let result: Json | undefined
    let fatal: string | undefined
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${argv.join(" ")} timed out\nstdout: ${out}\nstderr: ${err}`))
    }, opts.timeoutMs ?? 90_000)
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d
      pending += d
      let nl: number
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl).trim()
        pending = pending.slice(nl + 1)
        if (!line.startsWith("{")) continue
        const j = JSON.parse(line) as Json
        if (typeof j.event === "string") opts.onEvent?.(j.event, j)
        if (j.result !== undefined) result = j.result
        if (j.fatal !== undefined) fatal = String(j.fatal)
      }
    })
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (err += d))
    child.on("error", (e) => {
      clearTimeout(timer)
      reject(e)
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      if (fatal !== undefined) reject(new Error(`${argv.slice(0, 2).join(" ")}: ${fatal}\nstderr: ${err}`))
      else if (code !== 0 || result === undefined) reject(new Error(`${argv.join(" ")} exited ${code} without a result\nstdout: ${out}\nstderr: ${err}`))
      else resolve(result)
    })
  })

/** Run one case of a matrix program: `<program…> <case> <url> key=value…`. */
export const runCase = (program: ReadonlyArray<string>, c: string, url: string, args: Record<string, string> = {}, opts?: RunOptions): Promise<Json> =>
  runProgram([...program, c, url, ...Object.entries(args).map(([k, v]) => `${k}=${v}`)], opts)

/** A free port outside the ephemeral range (so no outgoing connection takes it while the server is down). */
/**
 * A port for a server a test starts, free when asked. A port is checked free and
 * released before the server binds it, so two test files running at once must not draw
 * from the same ports: each vitest worker (VITEST_POOL_ID) has its own slice of
 * 20000-31999, below the kernel's ephemeral range, and a worker does not hand out a port
 * again while it is among its last RECENT ones (a port drawn twice by chance made
 * leaf-nodes.test.ts fail with EADDRINUSE once).
 */
const SLICE = 1000
const RECENT = 400
const recent: Array<number> = []
export const freePort = async (): Promise<number> => {
  const worker = Number(process.env.VITEST_POOL_ID ?? 1)
  const base = 20_000 + (((Number.isInteger(worker) && worker > 0 ? worker : 1) - 1) % 12) * SLICE
  for (let i = 0; i < 200; i++) {
    const port = base + Math.floor(Math.random() * SLICE)
    if (recent.includes(port)) continue
    const free = await new Promise<boolean>((res) => {
      const s = net.createServer()
      s.once("error", () => res(false))
      s.listen(port, "127.0.0.1", () => s.close(() => res(true)))
    })
    if (free) {
      recent.push(port)
      if (recent.length > RECENT) recent.shift()
      return port
    }
  }
  throw new Error("no free port found")
}

export interface RestartableServer {
  srv: MonitoredServer
  readonly port: number
  /** Stop the server and start a new one on the same ports, with the same store. */
  restart(): Promise<void>
  close(): Promise<void>
}

/**
 * The whole server in process on fixed ports (NATS, and MQTT when `over.mqtt` is set),
 * so a client keeps the same URL across `restart()`. A port another socket grabbed in
 * between is waited for, within a bound.
 */
export const startRestartable = async (over: (ports: { nats: number; mqtt: number }) => Partial<ServerOptions>): Promise<RestartableServer> => {
  const ports = { nats: await freePort(), mqtt: await freePort() }
  const start = async () => {
    const deadline = Date.now() + 20_000
    for (;;) {
      try {
        return await startMonitoredServer({ port: ports.nats, ...over(ports) })
      } catch (e) {
        if (!String(e).includes("EADDRINUSE") || Date.now() > deadline) throw e
        await new Promise((r) => setTimeout(r, 100))
      }
    }
  }
  const t: RestartableServer = {
    srv: await start(),
    port: ports.nats,
    restart: async () => {
      await t.srv.close()
      t.srv = await start()
    },
    close: () => t.srv.close()
  }
  return t
}
