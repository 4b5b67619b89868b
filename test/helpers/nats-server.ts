// A real nats-server process for interoperability tests: started from a configuration
// file on loopback ephemeral ports (`-1`: it picks them and logs them), ready once it
// logs every listener the configuration asks for, stopped with SIGTERM.
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { eventually } from "./server.js"

const INSTALL = "apt-get install -y nats-server"

/**
 * The version of the nats-server on PATH. A missing binary fails the calling test with the
 * command that installs it (.ci/run installs it): these tests never skip.
 */
export const natsServerVersion = (): string => {
  const r = spawnSync("nats-server", ["--version"], { encoding: "utf8" })
  if (r.error !== undefined || r.status !== 0) {
    throw new Error(`nats-server is not installed (the interop tests run the real one): ${INSTALL}`)
  }
  const v = /v?(\d+\.\d+\.\d+)/.exec(r.stdout)
  if (v === null) throw new Error(`nats-server --version said ${JSON.stringify(r.stdout)}`)
  return v[1]
}

export interface NatsServerProcess {
  readonly child: ChildProcess
  /** Everything it logged so far. */
  readonly log: () => string
  readonly clientPort: number
  /** Ports of the listeners the configuration has (undefined otherwise). */
  readonly routePort: number | undefined
  readonly leafPort: number | undefined
  readonly httpPort: number | undefined
  /** GET a monitoring endpoint (`/routez?subs=1`) as JSON. */
  monitor<T = unknown>(pathAndQuery: string): Promise<T>
  stop(): Promise<void>
}

const LISTENERS = {
  client: /Listening for client connections on [^\s]+:(\d+)/,
  route: /Listening for route connections on [^\s]+:(\d+)/,
  leaf: /Listening for leafnode connections on [^\s]+:(\d+)/,
  http: /Starting http monitor on [^\s]+:(\d+)/
} as const

/** Starts nats-server with this configuration text (written to a temporary file). */
export const spawnNatsServer = async (config: string): Promise<NatsServerProcess> => {
  natsServerVersion()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nats-server-"))
  const file = path.join(dir, "server.conf")
  fs.writeFileSync(file, config)
  const child = spawn("nats-server", ["-c", file], { stdio: ["ignore", "pipe", "pipe"] })
  let log = ""
  child.stdout!.on("data", (d) => (log += d))
  child.stderr!.on("data", (d) => (log += d))
  const wanted = [LISTENERS.client]
  if (/^\s*cluster\s*[{:]/m.test(config)) wanted.push(LISTENERS.route)
  if (/^\s*leafnodes\s*[{:][\s\S]*\blisten\b/m.test(config)) wanted.push(LISTENERS.leaf)
  if (/^\s*http\s*:/m.test(config)) wanted.push(LISTENERS.http)
  try {
    await eventually(() => child.exitCode !== null || wanted.every((re) => re.test(log)), "nats-server to listen", 30_000)
  } catch (e) {
    child.kill("SIGKILL")
    throw new Error(`nats-server did not start: ${String(e)}\n${log}`)
  }
  if (child.exitCode !== null) throw new Error(`nats-server exited with ${child.exitCode}:\n${log}`)
  const port = (re: RegExp): number | undefined => {
    const m = re.exec(log)
    return m === null ? undefined : Number(m[1])
  }
  const httpPort = port(LISTENERS.http)
  return {
    child,
    log: () => log,
    clientPort: port(LISTENERS.client)!,
    routePort: port(LISTENERS.route),
    leafPort: port(LISTENERS.leaf),
    httpPort,
    monitor: async <T>(pathAndQuery: string): Promise<T> => {
      if (httpPort === undefined) throw new Error("this nats-server has no http monitor")
      const res = await fetch(`http://127.0.0.1:${httpPort}${pathAndQuery}`)
      return (await res.json()) as T
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((res) => child.once("exit", () => res()))
        child.kill("SIGTERM")
        await exited
      }
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}
