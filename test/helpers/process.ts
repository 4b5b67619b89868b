// A real server process for crash tests: started from bin/switchyard.js with the given
// flags, ready once it logs so, and killed with SIGKILL (no shutdown, no final sync).
import { type ChildProcess, spawn } from "node:child_process"
import { resolve } from "node:path"
import { eventually } from "./server.js"

const bin = resolve("bin/switchyard.js")

export interface ServerProcess {
  readonly child: ChildProcess
  /** Everything it logged so far. */
  readonly log: () => string
}

export interface StartOptions {
  /** Working directory (relative paths in the configuration). */
  readonly cwd?: string
  /** When the server counts as started; default: its stdout/stderr says "Server is ready" (a server logging to a file says it there). */
  readonly ready?: (output: string) => boolean
  /** Environment variables set on top of this process's. */
  readonly env?: Readonly<Record<string, string>>
  /** The script to run instead of bin/switchyard.js (a copy of the bundle). */
  readonly main?: string
}

export const startServerProcess = async (args: ReadonlyArray<string>, o: StartOptions = {}): Promise<ServerProcess> => {
  const child = spawn(process.execPath, [o.main ?? bin, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    cwd: o.cwd,
    env: o.env === undefined ? undefined : { ...process.env, ...o.env }
  })
  let log = ""
  child.stdout!.on("data", (d) => (log += d))
  child.stderr!.on("data", (d) => (log += d))
  const ready = o.ready ?? ((out: string) => out.includes("Server is ready"))
  await eventually(() => ready(log) || child.exitCode !== null, "the server to start", 30_000)
  if (child.exitCode !== null) throw new Error(`server did not start:\n${log}`)
  return { child, log: () => log }
}

/** The port a "Listening for …" line names, or a clear failure with the log. */
export const loggedPort = (p: ServerProcess, pattern: RegExp): number => {
  const port = Number(pattern.exec(p.log())?.[1])
  if (!(port > 0)) throw new Error(`no port matching ${pattern} in the log:\n${p.log()}`)
  return port
}

export const killProcess = async (p: ServerProcess): Promise<void> => {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return
  const exited = new Promise<void>((res) => p.child.once("exit", () => res()))
  p.child.kill("SIGKILL")
  await exited
}
