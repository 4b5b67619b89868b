// Starting and stopping servers under test, by process id only, and forking the
// load generator.
import { type ChildProcess, spawn } from "node:child_process"
import * as net from "node:net"
import { fileURLToPath } from "node:url"
import type { Job, JobResult } from "./loadgen/jobs.js"

/** Every process this harness started and has not yet seen exit. */
const live = new Set<ChildProcess>()

/** Kill whatever we started (by pid) when the harness itself is interrupted. */
export const installCleanup = (): void => {
  const reap = (): void => {
    for (const c of live) {
      if (c.pid !== undefined && c.exitCode === null) {
        try {
          process.kill(c.pid, "SIGKILL")
        } catch {
          // already gone
        }
      }
    }
  }
  process.on("exit", reap)
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(sig, () => {
      reap()
      process.exit(130)
    })
  }
}

/** A loopback port nobody is listening on right now. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.unref()
    srv.on("error", reject)
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address()
      const port = typeof addr === "object" && addr !== null ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Connect once and see whether the first bytes are a NATS `INFO`. */
const probeNats = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port })
    let buf = ""
    const done = (ok: boolean): void => {
      sock.destroy()
      resolve(ok)
    }
    sock.setTimeout(1000, () => done(false))
    sock.on("data", (b: Buffer) => {
      buf += b.toString("latin1")
      if (buf.length >= 4) done(buf.startsWith("INFO"))
    })
    sock.on("error", () => done(false))
    sock.on("close", () => done(false))
  })

/** Connect once and see whether the port accepts a connection at all. */
const probeTcp = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port })
    sock.on("connect", () => {
      sock.destroy()
      resolve(true)
    })
    sock.on("error", () => resolve(false))
  })

export type Readiness = { readonly port: number; readonly kind: "nats-info" | "tcp" }

export interface Server {
  readonly pid: number
  /** Milliseconds from spawn until it was ready (its ready line, if it has one, and every probe). */
  readonly readyMs: number
  /** Last lines the server printed (for failure reports). */
  readonly logTail: () => string
  readonly exited: () => boolean
  readonly stop: () => Promise<void>
}

/** Spawn a server, wait until every readiness probe passes (or fail with its output). */
export const startServer = async (
  cmd: string,
  args: ReadonlyArray<string>,
  ready: ReadonlyArray<Readiness>,
  opts: {
    readonly cwd: string
    readonly timeoutMs?: number
    readonly env?: Readonly<Record<string, string>>
    /** A line the server logs once it is ready ("Server is ready"), waited for besides the probes. */
    readonly readyLine?: RegExp
  }
): Promise<Server> => {
  const env = opts.env === undefined ? process.env : { ...process.env, ...opts.env }
  const spawnedAt = performance.now()
  const child = spawn(cmd, args, { cwd: opts.cwd, env, stdio: ["ignore", "pipe", "pipe"] })
  live.add(child)
  let tail = ""
  let lineAt: number | undefined
  const keep = (b: Buffer): void => {
    tail = (tail + b.toString("utf8")).slice(-4000)
    if (lineAt === undefined && opts.readyLine?.test(tail) === true) lineAt = performance.now()
  }
  child.stdout!.on("data", keep)
  child.stderr!.on("data", keep)
  let exitedFlag = false
  let spawnError: Error | undefined
  const exit = new Promise<void>((resolve) => {
    child.on("exit", () => {
      exitedFlag = true
      live.delete(child)
      resolve()
    })
    child.on("error", (e) => {
      spawnError = e
      exitedFlag = true
      live.delete(child)
      resolve()
    })
  })
  const stop = async (): Promise<void> => {
    if (exitedFlag || child.pid === undefined) return
    process.kill(child.pid, "SIGTERM")
    const t = setTimeout(() => {
      if (!exitedFlag && child.pid !== undefined) process.kill(child.pid, "SIGKILL")
    }, 5000)
    await exit
    clearTimeout(t)
  }
  const deadline = Date.now() + (opts.timeoutMs ?? 15000)
  const checks: ReadonlyArray<Readiness | "line"> = opts.readyLine === undefined ? ready : [...ready, "line"]
  let probedAt = spawnedAt
  for (const r of checks) {
    for (;;) {
      if (exitedFlag) {
        throw new Error(
          `${cmd} exited before it was ready${spawnError ? `: ${spawnError.message}` : ""}\n${tail.trim()}`
        )
      }
      const ok = r === "line" ? lineAt !== undefined : r.kind === "nats-info" ? await probeNats(r.port) : await probeTcp(r.port)
      if (ok) {
        if (r !== "line") probedAt = performance.now()
        break
      }
      if (Date.now() > deadline) {
        await stop()
        const what = r === "line" ? `its "${opts.readyLine!.source}" line` : `port ${r.port}`
        throw new Error(`${cmd} not ready (${what}) within ${opts.timeoutMs ?? 15000} ms\n${tail.trim()}`)
      }
      // Fine-grained: the time to ready is measured with this resolution.
      await sleep(5)
    }
  }
  return {
    pid: child.pid!,
    readyMs: Math.max(probedAt, lineAt ?? spawnedAt) - spawnedAt,
    logTail: () => tail,
    exited: () => exitedFlag,
    stop
  }
}

const workerPath = fileURLToPath(new URL("./loadgen/worker.js", import.meta.url))

/**
 * Run one job in a fresh load-generator process (pinned to `cpu` through taskset when
 * given; taskset execs node, so the IPC channel and the pid carry over).
 */
export const runJob = (job: Job, timeoutMs: number, cpu?: number): Promise<JobResult> =>
  new Promise((resolve) => {
    const [cmd, args] =
      cpu === undefined
        ? [process.execPath, [workerPath]]
        : ["taskset", ["-c", String(cpu), process.execPath, workerPath]]
    const child = spawn(cmd, args, { stdio: ["ignore", "inherit", "inherit", "ipc"] })
    live.add(child)
    let settled = false
    const finish = (r: JobResult): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(r)
    }
    const fail = (error: string): JobResult => ({ ok: false, error, metrics: {}, loss: 0, excess: 0, errors: [] })
    const timer = setTimeout(() => {
      if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, "SIGKILL")
      finish(fail(`load generator timed out after ${timeoutMs} ms`))
    }, timeoutMs)
    child.on("message", (r: JobResult) => finish(r))
    child.on("exit", (code) => {
      live.delete(child)
      finish(fail(`load generator exited (code ${code}) without a result`))
    })
    child.send(job)
  })
