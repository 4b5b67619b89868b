// Process signals and the files a server leaves on disk, against the real server
// process (bin/switchyard.js), signals sent with process.kill as an operator's `kill`
// would: SIGUSR1 reopens the log (and never opens Node's inspector), SIGHUP reloads the
// configuration file, SIGUSR2 is lame duck mode, SIGQUIT stops at once, SIGTERM stops
// gracefully; `--signal` sends them; pid_file, ports_file_dir and log rotation.
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"
import { afterEach, describe, expect, it } from "vitest"
import { connect, ErrorCode, Events, type NatsConnection, type NatsError, StringCodec } from "nats"
import { killProcess, loggedPort, type ServerProcess, type StartOptions, startServerProcess } from "../helpers/process.js"
import { eventually } from "../helpers/server.js"
import { request } from "../helpers/monitor.js"
import { useTempDirs } from "../helpers/tmp.js"
import { MMAP_THRESHOLD, YOUNG_FLOOR_MIB } from "../../src/malloc-tuning.js"

const run = promisify(execFile)
const bin = path.resolve("bin/switchyard.js")
const sc = StringCodec()

const started: Array<ServerProcess> = []
const conns: Array<NatsConnection> = []
const tmp = useTempDirs("sy-signals-")

afterEach(async () => {
  await Promise.all(conns.splice(0).map((c) => c.close().catch(() => {})))
  for (const p of started.splice(0)) await killProcess(p)
})

/** A configuration file in a fresh directory (loopback, random ports, nothing else on unless asked). */
const confFile = (body: string): { dir: string; file: string; write: (body: string) => void } => {
  const dir = tmp()
  const file = path.join(dir, "switchyard.conf")
  const write = (b: string) => fs.writeFileSync(file, `host: 127.0.0.1\nport: -1\nhttp: "127.0.0.1:-1"\njetstream: disabled\nmqtt: disabled\n${b}\n`)
  write(body)
  return { dir, file, write }
}

const start = async (args: ReadonlyArray<string>, o: StartOptions = {}): Promise<ServerProcess> => {
  const p = await startServerProcess(args, o)
  started.push(p)
  return p
}

/** Started once its log file (or a rotation of it) says it is ready. */
const startLoggingTo = (logFile: string, args: ReadonlyArray<string>, cwd?: string): Promise<ServerProcess> => {
  const dir = path.dirname(logFile)
  const ready = () =>
    fs.existsSync(dir) &&
    fs.readdirSync(dir).some((n) => n.startsWith(path.basename(logFile)) && fs.readFileSync(path.join(dir, n), "utf8").includes("Server is ready"))
  return start(args, { cwd, ready })
}

const natsPort = (p: ServerProcess) => loggedPort(p, /client connections on [^ ]*:(\d+)/)
const monitorPort = (p: ServerProcess) => loggedPort(p, /http monitor on [^ ]*:(\d+)/)

const exitOf = (p: ServerProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    if (p.child.exitCode !== null || p.child.signalCode !== null) res({ code: p.child.exitCode, signal: p.child.signalCode })
    else p.child.once("exit", (code, signal) => res({ code, signal }))
  })

const natsAs = async (port: number, user?: string, pass?: string) => {
  const nc = await connect({ servers: `127.0.0.1:${port}`, user, pass, reconnect: false })
  conns.push(nc)
  return nc
}

describe("SIGUSR1", () => {
  it("never opens Node's inspector, and the server keeps serving", async () => {
    const p = await start(["-a", "127.0.0.1", "-p", "-1"])
    // Logging to stderr: Node announces an opened inspector there ("Debugger listening on ws://…").
    p.child.kill("SIGUSR1")
    p.child.kill("SIGUSR1")
    // The process must still be there after the signals; a later SIGTERM proves it handled them.
    const exited = exitOf(p)
    await new Promise((res) => setImmediate(res))
    p.child.kill("SIGTERM")
    expect((await exited).code).toBe(0)
    expect(p.log()).not.toMatch(/Debugger listening|inspector/i)
  })

  it("reopens log_file: after a rotation the server writes to a new file at the same path", async () => {
    const dir = tmp()
    const logFile = path.join(dir, "switchyard.log")
    const p = await startLoggingTo(logFile, ["-a", "127.0.0.1", "-p", "-1", "-l", logFile])
    const rotated = `${logFile}.1`
    fs.renameSync(logFile, rotated)
    p.child.kill("SIGUSR1")
    await eventually(() => fs.existsSync(logFile) && fs.readFileSync(logFile, "utf8").includes("File log re-opened"), "a new log file")
    expect(fs.readFileSync(rotated, "utf8")).toContain("Server is ready")
    expect(fs.readFileSync(logFile, "utf8")).not.toContain("Server is ready")
    expect(p.log()).not.toMatch(/Debugger listening/)
  })
})

describe("SIGHUP", () => {
  it("reloads the configuration file: a client whose password changed is closed, logging changes at once", async () => {
    const conf = confFile('authorization { users: [ { user: alice, password: pa }, { user: bob, password: pb } ] }')
    const p = await start(["-c", conf.file])
    const port = natsPort(p)
    const alice = await natsAs(port, "alice", "pa")
    const bob = await natsAs(port, "bob", "pb")
    bob.subscribe("before.reload")
    await bob.flush()
    conf.write('trace: true\nauthorization { users: [ { user: alice, password: changed }, { user: bob, password: pb }, { user: carol, password: pc } ] }')
    p.child.kill("SIGHUP")
    const err = (await alice.closed()) as NatsError | undefined
    expect(err?.code).toBe(ErrorCode.AuthorizationViolation)
    await eventually(() => p.log().includes("Reloaded server configuration"), "the reload")
    expect(p.log()).toContain("Reloaded: trace = true")
    expect(p.log()).toContain("Reloaded: authorization")
    // bob stays; what he does now is traced (it was not before the reload).
    bob.subscribe("after.reload")
    await bob.flush()
    await eventually(() => /<<- \[SUB after\.reload \d+\]/.test(p.log()), "the SUB traced")
    expect(p.log()).not.toMatch(/<<- \[SUB before\.reload/)
    expect(bob.isClosed()).toBe(false)
    await natsAs(port, "carol", "pc")
    expect(p.log()).not.toContain("changed")
  })

  it("on a server started without a configuration file, says there is nothing to read again and keeps serving", async () => {
    const p = await start(["-a", "127.0.0.1", "-p", "-1"])
    p.child.kill("SIGHUP")
    await eventually(() => p.log().includes("Configuration reload failed: there is no configuration file to read again"), "the reload failure")
    const nc = await natsAs(natsPort(p))
    await nc.flush()
  })

  it("refuses, as a whole, a change only a restart can apply, and a file that does not parse", async () => {
    const conf = confFile("max_payload: 1MB")
    const p = await start(["-c", conf.file])
    const port = natsPort(p)
    conf.write("max_payload: 2KB\nserver_name: renamed")
    p.child.kill("SIGHUP")
    await eventually(() => p.log().includes("the running configuration is unchanged"), "the refusal")
    expect(p.log()).toContain("Reloading the configuration refused: server_name: cannot be changed while the server runs")
    const varz = JSON.parse((await request(`http://127.0.0.1:${monitorPort(p)}/varz`)).body)
    expect(varz.max_payload).toBe(1024 * 1024)
    fs.writeFileSync(conf.file, "port: -1\nmax_payload: {\n")
    p.child.kill("SIGHUP")
    await eventually(() => (p.log().match(/Configuration reload failed/g) ?? []).length === 2, "the second failure")
    expect(p.log()).toMatch(new RegExp(`Configuration reload failed: ${conf.file.replace(/[.]/g, "\\.")}:\\d+:\\d+: `))
    const nc = await natsAs(port)
    await nc.flush()
  })
})

describe("SIGUSR2", () => {
  it("lame duck mode: clients hear ldm, no new connection is accepted, the clients are closed, then the process stops", async () => {
    const conf = confFile("lame_duck_duration: 30s\nlame_duck_grace_period: 2s")
    const p = await start(["-c", conf.file, "-P", path.join(conf.dir, "s.pid")])
    const port = natsPort(p)
    const clients = [await natsAs(port), await natsAs(port)]
    const ldm = clients.map(async (nc) => {
      for await (const s of nc.status()) if (s.type === Events.LDM) return true
      return false
    })
    const exited = exitOf(p)
    p.child.kill("SIGUSR2")
    expect(await Promise.all(ldm)).toEqual([true, true])
    // During the grace period: the listener is closed, monitoring answers that the server is going.
    await expect(connect({ servers: `127.0.0.1:${port}`, reconnect: false })).rejects.toThrow()
    const health = await request(`http://127.0.0.1:${monitorPort(p)}/healthz`)
    expect(health.status).toBe(503)
    await Promise.all(clients.map((nc) => nc.closed()))
    expect(await exited).toEqual({ code: 0, signal: null })
    expect(p.log()).toContain("Entering lame duck mode, stop accepting new clients")
    expect(p.log()).toContain("Closing 2 existing clients")
    expect(fs.existsSync(path.join(conf.dir, "s.pid"))).toBe(false)
  })
})

describe("SIGQUIT and SIGTERM", () => {
  it("SIGQUIT stops the process at once, without the graceful shutdown", async () => {
    const p = await start(["-a", "127.0.0.1", "-p", "-1"])
    await natsAs(natsPort(p))
    const exited = exitOf(p)
    p.child.kill("SIGQUIT")
    expect(await exited).toEqual({ code: null, signal: "SIGQUIT" })
    expect(p.log()).toContain("Received SIGQUIT: stopping at once")
    expect(p.log()).not.toContain("Initiating Shutdown")
  })

  it("SIGTERM stops gracefully: clients are closed, the pid and ports files removed, exit 0", async () => {
    const conf = confFile(`pid_file: s.pid\nports_file_dir: "."`)
    const p = await start(["-c", conf.file], { cwd: conf.dir })
    const pidFile = path.join(conf.dir, "s.pid")
    const portsFile = path.join(conf.dir, `switchyard_${p.child.pid}.ports`)
    expect([fs.existsSync(pidFile), fs.existsSync(portsFile)]).toEqual([true, true])
    const nc = await natsAs(natsPort(p))
    const exited = exitOf(p)
    p.child.kill("SIGTERM")
    await nc.closed()
    expect(await exited).toEqual({ code: 0, signal: null })
    expect(p.log()).toContain("Initiating Shutdown")
    expect([fs.existsSync(pidFile), fs.existsSync(portsFile)]).toEqual([false, false])
  })
})

describe("pid_file and ports_file_dir", () => {
  it("hold the process id and every listener's URLs; a client finds the server through the ports file", async () => {
    const conf = confFile("")
    conf.write(`pid_file: "${path.join(conf.dir, "s.pid")}"\nports_file_dir: "${conf.dir}"\nmqtt { host: 127.0.0.1, port: -1 }`)
    const p = await start(["-c", conf.file])
    expect(fs.readFileSync(path.join(conf.dir, "s.pid"), "utf8")).toBe(String(p.child.pid))
    const ports = JSON.parse(fs.readFileSync(path.join(conf.dir, `switchyard_${p.child.pid}.ports`), "utf8"))
    expect(ports).toEqual({
      nats: [`nats://127.0.0.1:${natsPort(p)}`],
      monitoring: [`http://127.0.0.1:${monitorPort(p)}`],
      mqtt: [`mqtt://127.0.0.1:${loggedPort(p, /MQTT clients on [^ ]*:(\d+)/)}`]
    })
    const nc = await connect({ servers: ports.nats[0], reconnect: false })
    conns.push(nc)
    const sub = nc.subscribe("ping")
    nc.publish("ping", sc.encode("pong"))
    expect(sc.decode((await sub[Symbol.asyncIterator]().next()).value!.data)).toBe("pong")
    expect((await request(`${ports.monitoring[0]}/healthz`)).status).toBe(200)
  })

  it("refuses to start when the pid file cannot be written", async () => {
    const conf = confFile(`pid_file: "/nonexistent-dir-for-switchyard/s.pid"`)
    const out = await run(process.execPath, [bin, "-c", conf.file]).catch((e: { code: number; stderr: string }) => e)
    expect(out).toMatchObject({ code: 1 })
    expect((out as { stderr: string }).stderr).toMatch(/Could not write the pid or ports file: .*ENOENT/)
  })
})

describe("--signal", () => {
  it("sends reload, reopen and ldm to the process named by pid_file, a pid or a pid file", async () => {
    const conf = confFile(`log_file: s.log\npid_file: s.pid\nlame_duck_duration: 30s\nlame_duck_grace_period: 0s`)
    const logFile = path.join(conf.dir, "s.log")
    const p = await startLoggingTo(logFile, ["-c", conf.file], conf.dir)
    const log = () => fs.readFileSync(logFile, "utf8")
    await run(process.execPath, [bin, "-c", conf.file, "--signal", "reload"], { cwd: conf.dir })
    await eventually(() => log().includes("Reloaded server configuration"), "the reload")
    await run(process.execPath, [bin, "-sl", `reopen=${p.child.pid}`])
    await eventually(() => log().includes("File log re-opened"), "the reopen")
    const exited = exitOf(p)
    await run(process.execPath, [bin, `--signal=ldm=${path.join(conf.dir, "s.pid")}`])
    expect(await exited).toEqual({ code: 0, signal: null })
    expect(log()).toContain("Entering lame duck mode")
  })

  it("says why when there is no process to signal", async () => {
    const none = await run(process.execPath, [bin, "--signal", "reload"]).catch((e: { code: number; stderr: string }) => e)
    expect(none).toMatchObject({ code: 1 })
    expect((none as { stderr: string }).stderr).toContain("cannot send reload (SIGHUP): no process to signal")
    const gone = await run(process.execPath, [bin, "--signal", "reload=999999999"]).catch((e: { code: number; stderr: string }) => e)
    expect((gone as { stderr: string }).stderr).toContain("no process with id 999999999")
  })
})

describe("log_size_limit", () => {
  it("rotates log_file at the limit and keeps logfile_max_num files", async () => {
    const conf = confFile("trace: true\nlog_file: s.log\nlog_size_limit: 2KB\nlogfile_max_num: 3")
    const logFile = path.join(conf.dir, "s.log")
    const p = await startLoggingTo(logFile, ["-c", conf.file], conf.dir)
    const nc = await natsAs(await portFromLogDir(conf.dir))
    const rotated = () => fs.readdirSync(conf.dir).filter((n) => /^s\.log\.\d{4}\.\d{2}\.\d{2}\.\d{2}\.\d{2}\.\d{2}\.\d{6}(-\d+)?$/.test(n))
    for (let i = 0; rotated().length < 2 || i < 200; i++) {
      nc.publish(`traffic.${i}`, sc.encode("x"))
      if (i % 20 === 0) await nc.flush()
      if (i > 100_000) throw new Error("the log never rotated")
    }
    await nc.flush()
    await eventually(() => rotated().length === 2, "two rotated files")
    for (const n of rotated()) expect(fs.statSync(path.join(conf.dir, n)).size).toBeLessThan(2048 + 400)
    // Never more than the three files, however long the traffic runs.
    expect(fs.readdirSync(conf.dir).filter((n) => n.startsWith("s.log"))).toHaveLength(3)
    expect(p.child.exitCode).toBeNull()
  })
})

/** The client port, read from the log file of a server that logs to `dir/s.log` (and its rotations). */
const portFromLogDir = async (dir: string): Promise<number> => {
  let port = 0
  await eventually(() => {
    for (const n of fs.readdirSync(dir).filter((f) => f.startsWith("s.log"))) {
      const m = /client connections on [^ ]*:(\d+)/.exec(fs.readFileSync(path.join(dir, n), "utf8"))
      if (m !== null) port = Number(m[1])
    }
    return port > 0
  }, "the client port in the log")
  return port
}

describe("glibc allocator tuning at start", () => {
  const environOf = (pid: number): Map<string, string> =>
    new Map(fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter((kv) => kv.includes("=")).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]))
  const canExec = typeof (process as { execve?: unknown }).execve === "function"

  it.runIf(process.platform === "linux")(
    canExec
      ? "the server starts itself again (same pid) with MALLOC_MMAP_THRESHOLD_ set and V8's young-generation floor, and serves"
      : "without process.execve (Node before 22.15) the server runs with glibc's defaults",
    async () => {
      const conf = confFile("")
      conf.write(`pid_file: "${path.join(conf.dir, "s.pid")}"`)
      const p = await start(["-c", conf.file])
      expect(fs.readFileSync(path.join(conf.dir, "s.pid"), "utf8")).toBe(String(p.child.pid))
      expect(environOf(p.child.pid!).get("MALLOC_MMAP_THRESHOLD_")).toBe(canExec ? MMAP_THRESHOLD : undefined)
      const args = fs.readFileSync(`/proc/${p.child.pid}/cmdline`, "utf8").split("\0")
      expect(args.includes(`--min-semi-space-size=${YOUNG_FLOOR_MIB}`)).toBe(canExec)
      const nc = await natsAs(natsPort(p))
      await nc.flush()
    }
  )

  it.runIf(process.platform === "linux")("keeps the operator's own MALLOC_MMAP_THRESHOLD_, and SWITCHYARD_NO_MALLOC_TUNING opts out", async () => {
    const own = await start(["-c", confFile("").file], { env: { MALLOC_MMAP_THRESHOLD_: "65536" } })
    expect(environOf(own.child.pid!).get("MALLOC_MMAP_THRESHOLD_")).toBe("65536")
    const out = await start(["-c", confFile("").file], { env: { SWITCHYARD_NO_MALLOC_TUNING: "1" } })
    expect(environOf(out.child.pid!).has("MALLOC_MMAP_THRESHOLD_")).toBe(false)
  })
})
