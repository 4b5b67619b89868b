// Process signals against the real server process. SIGUSR1 is nats-server's "reopen the
// log file" (logrotate); to Node it means "open the inspector on 127.0.0.1:9229", which
// would let any local user run code in the server. It must never do that.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { killProcess, type ServerProcess, startServerProcess } from "../helpers/process.js"
import { eventually } from "../helpers/server.js"

const started: Array<ServerProcess> = []
const dirs: Array<string> = []

afterEach(async () => {
  for (const p of started.splice(0)) await killProcess(p)
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

const tmp = (): string => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "sy-signals-"))
  dirs.push(d)
  return d
}

describe("SIGUSR1", () => {
  it("never opens Node's inspector, and the server keeps serving", async () => {
    const p = await startServerProcess(["-a", "127.0.0.1", "-p", "-1"])
    started.push(p)
    // Logging to stderr: Node announces an opened inspector there ("Debugger listening on ws://…").
    await eventually(() => p.log().includes("Server is ready"), "the server to start")
    p.child.kill("SIGUSR1")
    p.child.kill("SIGUSR1")
    // The process must still be there after the signals; a later SIGTERM proves it handled them.
    const exited = new Promise<number | null>((res) => p.child.once("exit", (code) => res(code)))
    await new Promise((res) => setImmediate(res))
    p.child.kill("SIGTERM")
    expect(await exited).toBe(0)
    expect(p.log()).not.toMatch(/Debugger listening|inspector/i)
  })

  it("reopens log_file: after a rotation the server writes to a new file at the same path", async () => {
    const dir = tmp()
    const logFile = path.join(dir, "switchyard.log")
    const p = await startServerProcessLogging(["-a", "127.0.0.1", "-p", "-1", "-l", logFile], logFile)
    started.push(p)
    const rotated = `${logFile}.1`
    fs.renameSync(logFile, rotated)
    p.child.kill("SIGUSR1")
    await eventually(() => fs.existsSync(logFile) && fs.readFileSync(logFile, "utf8").includes("File log re-opened"), "a new log file")
    expect(fs.readFileSync(rotated, "utf8")).toContain("Server is ready")
    expect(fs.readFileSync(logFile, "utf8")).not.toContain("Server is ready")
    expect(p.log()).not.toMatch(/Debugger listening/)
  })
})

/** Like startServerProcess, for a server whose log goes to `logFile` rather than stderr. */
const startServerProcessLogging = async (args: ReadonlyArray<string>, logFile: string): Promise<ServerProcess> => {
  const { spawn } = await import("node:child_process")
  const child = spawn(process.execPath, [path.resolve("bin/switchyard.js"), ...args], { stdio: ["ignore", "pipe", "pipe"] })
  let out = ""
  child.stdout!.on("data", (d) => (out += d))
  child.stderr!.on("data", (d) => (out += d))
  const ready = () => fs.existsSync(logFile) && fs.readFileSync(logFile, "utf8").includes("Server is ready")
  await eventually(() => ready() || child.exitCode !== null, "the server to start", 30_000)
  if (child.exitCode !== null) throw new Error(`server did not start:\n${out}`)
  return { child, log: () => out }
}
