// The `switchyard` command as a user runs it: help, version, config checks, start-up
// log, serving a real client, and a graceful stop on SIGTERM.
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { connect, StringCodec } from "nats"
import { VERSION } from "../../src/version.js"
import { eventually } from "../helpers/server.js"

const bin = path.resolve("bin/switchyard.js")
const run = (...args: Array<string>) => spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", timeout: 30_000 })

describe("switchyard command", () => {
  const children: Array<ChildProcess> = []
  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL")
  })

  it("npm start runs the built bundle and compiles nothing (the build is npm install's prepare)", () => {
    const pkg = JSON.parse(fs.readFileSync("package.json", "utf8")) as { scripts: Record<string, string>; bin: Record<string, string> }
    expect(pkg.scripts.start).toBe("node bin/switchyard.js")
    expect(pkg.scripts.prepare).toBe("npm run build")
    expect(fs.readFileSync(pkg.bin.switchyard, "utf8")).toContain('import "../dist/switchyard/main.js"')
    // The entry stays tiny: it installs the signal guard, then loads the program chunk.
    expect(fs.statSync("dist/switchyard/main.js").size).toBeLessThan(2048)
    // No chunk near the size whose compilation left ~12 MiB of memory behind (scripts/bundle.mjs).
    for (const f of fs.readdirSync("dist/switchyard").filter((n) => n.endsWith(".js"))) {
      expect([f, fs.statSync(`dist/switchyard/${f}`).size < 800_000]).toEqual([f, true])
    }
  })

  it("the bundle loads node:http and node:https with require(), never as ES modules", () => {
    // An ES import reads every export of the module, lazy ones too: on Node 22 `node:http`
    // would load undici, http2 and worker_threads, 3.5 MiB of idle RSS for nothing
    // (scripts/bundle.mjs).
    for (const f of fs.readdirSync("dist/switchyard").filter((n) => n.endsWith(".js"))) {
      const src = fs.readFileSync(`dist/switchyard/${f}`, "utf8")
      const esImports = [...src.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["'](node:https?)["']/g)].map((m) => m[1])
      expect([f, esImports]).toEqual([f, []])
    }
  })

  it("--version prints the version", () => {
    const r = run("--version")
    expect(r.status).toBe(0)
    expect(r.stdout).toContain(VERSION)
  })

  it("--help lists the flags", () => {
    const r = run("--help")
    expect(r.status).toBe(0)
    for (const f of ["--port", "--http_port", "--config", "--jetstream", "--store_dir", "--user", "--pass", "--auth", "-DV"]) {
      expect(r.stdout).toContain(f)
    }
  })

  it("an unknown flag is a clear error", () => {
    const r = run("--no-such-flag")
    expect(r.status).toBe(1)
    expect(r.stderr).toMatch(/switchyard: .*no-such-flag/)
  })

  it("-t checks a configuration: valid, and broken with file:line:column", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sy-cli-"))
    const good = path.join(dir, "good.conf")
    fs.writeFileSync(good, "port: 4333\nmax_payload: 2MB\n")
    const ok = run("-t", "-c", good)
    expect(ok.status).toBe(0)
    expect(ok.stdout).toContain("valid")
    const bad = path.join(dir, "bad.conf")
    fs.writeFileSync(bad, "port: 4333\nmax_payload: {\n")
    const r = run("-t", "-c", bad)
    expect(r.status).toBe(1)
    expect(r.stderr).toContain(`${bad}:`)
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("an MQTT TLS certificate that cannot be loaded is a clear start-up error", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sy-cli-"))
    const conf = path.join(dir, "tls.conf")
    fs.writeFileSync(conf, `port: -1\nhttp_port: 0\njetstream { store_dir: "${dir}/store" }\nmqtt { port: -1, tls { cert_file: "a.pem", key_file: "b.pem" } }\n`)
    const r = run("-c", conf)
    expect(r.status).toBe(1)
    expect(r.stderr + r.stdout).toMatch(/mqtt tls: cannot load the certificate or key/)
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("a TLS certificate that cannot be loaded is a clear start-up error", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sy-cli-"))
    const conf = path.join(dir, "tls.conf")
    fs.writeFileSync(conf, 'port: -1\nhttp_port: 0\ntls { cert_file: "missing.pem", key_file: "missing-key.pem" }\n')
    const r = run("-c", conf)
    expect(r.status).toBe(1)
    expect(r.stderr + r.stdout).toMatch(/tls: cannot load/)
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("two servers started with only -p and -m run side by side: no MQTT, no JetStream, no ./data", async () => {
    // What client test harnesses (nats.py, nats.js) do: several servers with nothing but -p N -m M.
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "sy-cli-named-"))
    const start = async () => {
      const child = spawn(process.execPath, [bin, "-a", "127.0.0.1", "-p", "-1", "-m", "-1"], { cwd, stdio: ["ignore", "pipe", "pipe"] })
      children.push(child)
      let log = ""
      child.stderr!.on("data", (d) => (log += d))
      child.stdout!.on("data", (d) => (log += d))
      await eventually(() => log.includes("Server is ready") || child.exitCode !== null, "the server to be ready", 20_000)
      return { child, log: () => log }
    }
    const [a, b] = [await start(), await start()]
    for (const s of [a, b]) {
      expect(s.child.exitCode).toBe(null)
      expect(s.log()).toMatch(/Starting http monitor on 127\.0\.0\.1:\d+/)
      expect(s.log()).not.toMatch(/MQTT|JetStream/)
      const http = Number(/Starting http monitor on 127\.0\.0\.1:(\d+)/.exec(s.log())?.[1])
      const varz = (await (await fetch(`http://127.0.0.1:${http}/varz`)).json()) as { mqtt?: { port: number }; jetstream?: { config?: unknown } }
      expect(varz.mqtt?.port ?? 0).toBe(0)
      expect(varz.jetstream?.config).toBeUndefined()
    }
    expect(fs.existsSync(path.join(cwd, "data"))).toBe(false)
    fs.rmSync(cwd, { recursive: true, force: true })
  })

  it("-t refuses what would be accepted but not acted on, with file:line:column", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sy-cli-"))
    const check = (name: string, text: string) => {
      const file = path.join(dir, name)
      fs.writeFileSync(file, text)
      const r = run("-t", "-c", file)
      expect(r.status).toBe(1)
      return { file, stderr: r.stderr }
    }
    const imports = check("imports.conf", "port: 4333\naccounts { A: { imports: [ { stream: { account: NOPE, subject: x } } ] } }\n")
    expect(imports.stderr).toContain(`${imports.file}:2:28: accounts.A: stream import of "x" from "NOPE": no such account`)
    const tls = check("tls.conf", 'port: 4333\ntls {\n  cert_file: "nope.pem"\n  key_file: "nope-key.pem"\n}\n')
    expect(tls.stderr).toContain(`${tls.file}:2:1: tls: cannot load the certificate or key: cert_file "nope.pem" cannot be read`)
    const gateway = check("gateway.conf", 'port: 4333\ngateway { name: c, listen: "0.0.0.0:7222" }\n')
    expect(gateway.stderr).toContain(`${gateway.file}:2:1: gateway is not implemented by this version and has no effect`)
    // Routes are served; what a cluster block asks for that is not is refused at its place.
    const cluster = check("cluster.conf", 'port: 4333\ncluster {\n  name: c\n  compression: s2_fast\n}\n')
    expect(cluster.stderr).toContain(`${cluster.file}:4:3: cluster.compression: route compression is not supported by this version yet`)
    // Leaf nodes are served: a leafnodes block checks, and what it asks for that is not served is refused at its place.
    const leafFile = path.join(dir, "leaf.conf")
    fs.writeFileSync(leafFile, 'port: 4333\nleafnodes { listen: "127.0.0.1:7433", remotes: [ { url: "nats-leaf://h:7422" } ] }\n')
    expect(run("-t", "-c", leafFile).status).toBe(0)
    // TLS and credentials files are checked by -t, each at its place.
    const leafTls = check("leaftls.conf", 'port: 4333\nleafnodes {\n  remotes: [ { url: "nats-leaf://h:7422", tls: { cert_file: a, key_file: b } } ]\n}\n')
    expect(leafTls.stderr).toContain(`leafnodes remote tls: cannot load the certificate or key: cert_file "a" cannot be read`)
    expect(leafTls.stderr).toContain(`${leafTls.file}:3:`)
    const clusterTls = check("clustertls.conf", 'port: 4333\ncluster {\n  name: c\n  tls { cert_file: "nope.pem", key_file: "nope.key" }\n}\n')
    expect(clusterTls.stderr).toContain(`${clusterTls.file}:4:3: cluster tls: cannot load the certificate or key: cert_file "nope.pem" cannot be read`)
    const leafListenTls = check("leaflistentls.conf", 'port: 4333\nleafnodes {\n  port: 7433\n  tls { cert_file: "nope.pem", key_file: "nope.key" }\n}\n')
    expect(leafListenTls.stderr).toContain(`${leafListenTls.file}:4:3: leafnodes tls: cannot load the certificate or key: cert_file "nope.pem" cannot be read`)
    const creds = check("creds.conf", 'port: 4333\nleafnodes {\n  remotes: [\n    { url: "nats-leaf://h:7422", credentials: "/nope.creds" }\n  ]\n}\n')
    expect(creds.stderr).toContain(`${creds.file}:4:34: leafnodes remote credentials "/nope.creds": cannot be read`)
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("starts, logs one line per listener, serves clients and stops gracefully on SIGTERM", async () => {
    const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), "sy-cli-js-"))
    const child = spawn(process.execPath, [bin, "-a", "127.0.0.1", "-p", "-1", "-m", "-1", "-js", "-sd", storeDir], { stdio: ["ignore", "pipe", "pipe"] })
    children.push(child)
    let log = ""
    child.stderr!.on("data", (d) => (log += d))
    child.stdout!.on("data", (d) => (log += d))
    await eventually(() => log.includes("Server is ready"), "the server to be ready", 20_000)
    const port = Number(/Listening for client connections on 127\.0\.0\.1:(\d+)/.exec(log)?.[1])
    const http = Number(/Starting http monitor on 127\.0\.0\.1:(\d+)/.exec(log)?.[1])
    expect(port).toBeGreaterThan(0)
    expect(http).toBeGreaterThan(0)
    const varz = (await (await fetch(`http://127.0.0.1:${http}/varz`)).json()) as { port: number }
    expect(varz.port).toBe(port)

    const sc = StringCodec()
    const nc = await connect({ servers: `127.0.0.1:${port}`, reconnect: false })
    const sub = nc.subscribe("cli.test", { max: 1 })
    await nc.flush()
    nc.publish("cli.test", sc.encode("over the wire"))
    for await (const m of sub) expect(sc.decode(m.data)).toBe("over the wire")
    const closed = nc.closed()

    child.kill("SIGTERM")
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)))
    expect(code).toBe(0)
    await closed
    expect(log).toContain("Initiating Shutdown")
    fs.rmSync(storeDir, { recursive: true, force: true })
  })
})
