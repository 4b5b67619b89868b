// The Dockerfile's steps, run without Docker (CI has no container engine): each stage's
// filesystem is a temporary directory, its COPY, WORKDIR, ENV and RUN steps are carried
// out there (absolute paths of the stage mapped into it), then the final stage's
// ENTRYPOINT + CMD starts as the image's USER (uid 1000 when run as root, as `node` is in
// the node image) with fresh ports in the port variables (as `docker run -e` would set),
// and the HEALTHCHECK command must pass, a stream must land on the VOLUME, and SIGTERM
// must stop it cleanly. What it cannot check is the base image itself: it uses the
// `node` on PATH (CI runs it under Node 22, the image's).
//
//   node scripts/docker-steps.mjs [Dockerfile]
import { execFileSync, spawn } from "node:child_process"
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { dirname, isAbsolute, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const context = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const dockerfile = resolve(context, process.argv[2] ?? "Dockerfile")
const IMAGE_UID = { node: 1000, root: 0 }

const fail = (msg) => {
  console.error(`docker-steps: ${msg}`)
  process.exitCode = 1
  throw new Error(msg)
}

/** Instructions, with continuation lines joined and comments dropped. */
const parse = (text) => {
  const out = []
  let pending = ""
  for (const raw of text.split("\n")) {
    const line = raw.trimEnd()
    if (pending === "" && (line.trim() === "" || line.trim().startsWith("#"))) continue
    if (line.endsWith("\\")) {
      pending += line.slice(0, -1) + " "
      continue
    }
    const full = (pending + line).trim()
    pending = ""
    const m = /^(\w+)\s+(.*)$/.exec(full)
    if (m !== null) out.push({ op: m[1].toUpperCase(), args: m[2].trim() })
  }
  return out
}

/** `["a", "b"]` (exec form) or a shell string. */
const words = (args) => (args.startsWith("[") ? JSON.parse(args) : ["sh", "-c", args])

const freePort = () =>
  new Promise((res, rej) => {
    const s = net.createServer()
    s.on("error", rej)
    s.listen(0, "127.0.0.1", () => {
      const p = s.address().port
      s.close(() => res(p))
    })
  })

const stages = []
let stage
const tmp = mkdtempSync(join(tmpdir(), "docker-steps-"))
chmodSync(tmp, 0o755)

/** A stage's absolute path, inside its root. */
const inRoot = (st, p) => join(st.root, p)
const abs = (st, p) => (isAbsolute(p) ? p : join(st.workdir, p))
/**
 * Every absolute path in a RUN command is the stage's, never the host's: mapped into
 * the stage root (a host tool named by its absolute path fails loudly instead of
 * anything outside the stage being touched).
 */
const mapPaths = (st, s) => s.replace(/(?<![\w.:-])\/[\w.\/-]*/g, (p) => inRoot(st, p))
/** In ENTRYPOINT and CMD, the absolute paths that exist in the stage. */
const mapExisting = (st, w) => (isAbsolute(w) && existsSync(inRoot(st, w)) ? inRoot(st, w) : w)
const mapUsers = (s) => s.replace(/\bnode:node\b/g, `${IMAGE_UID.node}:${IMAGE_UID.node}`)
const expand = (st, s) => s.replace(/\$\{?(\w+)\}?/g, (m, k) => st.env[k] ?? m)

try {
  for (const { op, args } of parse(readFileSync(dockerfile, "utf8"))) {
    switch (op) {
      case "FROM": {
        const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args)
        const root = join(tmp, `stage${stages.length}`)
        mkdirSync(root, { recursive: true, mode: 0o755 })
        stage = { name: m?.[2], image: m?.[1], root, workdir: "/", env: {}, user: "root", exposed: [], volumes: [] }
        stages.push(stage)
        console.log(`== stage ${stages.length - 1}${stage.name ? ` (${stage.name})` : ""} from ${stage.image}`)
        break
      }
      case "WORKDIR":
        stage.workdir = abs(stage, args)
        mkdirSync(inRoot(stage, stage.workdir), { recursive: true, mode: 0o755 })
        break
      case "ENV":
        for (const m of args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) stage.env[m[1]] = m[2].replace(/^"|"$/g, "")
        break
      case "COPY": {
        const parts = args.split(/\s+/)
        const from = parts[0].startsWith("--from=") ? stages.find((s) => s.name === parts.shift().slice(7)) : undefined
        const dest = abs(stage, parts.pop())
        for (const src of parts) {
          const source = from === undefined ? join(context, src) : inRoot(from, src)
          if (!existsSync(source)) fail(`COPY: ${src} does not exist${from ? ` in stage ${from.name}` : " in the build context"}`)
          const target = dest.endsWith("/") || parts.length > 1 ? join(dest, src.split("/").pop()) : dest
          mkdirSync(dirname(inRoot(stage, target)), { recursive: true, mode: 0o755 })
          cpSync(source, inRoot(stage, target), { recursive: true })
          console.log(`COPY ${from ? `--from=${from.name} ` : ""}${src} -> ${target}`)
        }
        break
      }
      case "RUN": {
        const cmd = mapUsers(mapPaths(stage, args))
        console.log(`RUN ${args}`)
        execFileSync("sh", ["-c", cmd], { cwd: inRoot(stage, stage.workdir), env: { ...process.env, ...stage.env }, stdio: "inherit" })
        break
      }
      case "USER":
        if (!(args in IMAGE_UID)) fail(`USER ${args}: unknown to this script`)
        stage.user = args
        break
      case "VOLUME":
        for (const v of words(args).filter((w) => w !== "sh" && w !== "-c")) stage.volumes.push(v)
        break
      case "EXPOSE":
        stage.exposed.push(...args.split(/\s+/).map(Number))
        break
      case "HEALTHCHECK":
        stage.healthcheck = words(args.replace(/^(--\S+\s+)*CMD\s+/, ""))
        break
      case "ENTRYPOINT":
        stage.entrypoint = words(args)
        break
      case "CMD":
        stage.cmd = words(args)
        break
      default:
        fail(`${op}: not understood by this script`)
    }
  }

  const final = stages.at(-1)
  if (final.user === "root") fail("the image runs as root: it must name an unprivileged USER")
  for (const v of final.volumes) {
    const st = statSync(inRoot(final, v))
    if (process.getuid?.() === 0 && st.uid !== IMAGE_UID[final.user]) fail(`VOLUME ${v} is not owned by ${final.user}`)
  }
  for (const p of [4222, 1883, 8222, 8080]) if (!final.exposed.includes(p)) fail(`port ${p} is not exposed`)
  if (final.healthcheck === undefined) fail("no HEALTHCHECK")

  // docker run -e: fresh ports for the port variables, so the run never collides with anything.
  const env = { ...process.env, ...final.env }
  for (const k of Object.keys(final.env)) if (/_PORT$/.test(k)) env[k] = String(await freePort())
  // docker run -v: a path in the environment (the store directory) is the stage's.
  for (const k of Object.keys(final.env)) env[k] = mapExisting(final, env[k])
  const asUser = process.getuid?.() === 0 ? { uid: IMAGE_UID[final.user], gid: IMAGE_UID[final.user] } : {}
  const argv = [...final.entrypoint, ...final.cmd].map((w) => mapExisting(final, w))
  console.log(`== run: ${[...final.entrypoint, ...final.cmd].join(" ")} (as uid ${asUser.uid ?? process.getuid?.()}, ports ${Object.keys(final.env).filter((k) => /_PORT$/.test(k)).map((k) => `${k}=${env[k]}`).join(" ")})`)
  const child = spawn(argv[0], argv.slice(1), { cwd: inRoot(final, final.workdir), env, ...asUser, stdio: ["ignore", "pipe", "pipe"] })
  let log = ""
  child.stdout.on("data", (d) => (log += d))
  child.stderr.on("data", (d) => (log += d))
  const exited = new Promise((res) => child.on("exit", (code, signal) => res({ code, signal })))
  const deadline = Date.now() + 30_000
  while (!log.includes("Server is ready")) {
    if (child.exitCode !== null || Date.now() > deadline) fail(`the server did not start:\n${log}`)
    await new Promise((r) => setTimeout(r, 20))
  }

  const health = spawnSync(final.healthcheck, env, asUser)
  if ((await health) !== 0) fail(`HEALTHCHECK failed:\n${log}`)
  console.log("HEALTHCHECK passed")

  // A stream lands on the volume, written by the image's user.
  const created = await natsRequest(Number(env.SWITCHYARD_PORT), "$JS.API.STREAM.CREATE.DOCKER", JSON.stringify({ name: "DOCKER", subjects: ["docker.>"] }))
  if (!created.includes('"DOCKER"') || created.includes('"error"')) fail(`creating a stream failed: ${created}`)
  const volume = inRoot(final, final.volumes[0])
  const entries = readdirSync(volume)
  if (entries.length === 0) fail(`nothing was written to the volume ${final.volumes[0]}`)
  console.log(`the volume holds ${entries.join(", ")}`)

  child.kill("SIGTERM")
  const { code } = await exited
  if (code !== 0) fail(`SIGTERM: exit code ${code}\n${log}`)
  console.log("stopped cleanly on SIGTERM\ndocker-steps: ok")
} finally {
  rmSync(tmp, { recursive: true, force: true })
}

function spawnSync(argv, env, asUser) {
  return new Promise((res) => {
    const c = spawn(argv[0], argv.slice(1), { env, ...asUser, stdio: "inherit" })
    c.on("exit", (code) => res(code))
  })
}

/** One request over the NATS protocol, by hand: the reply's payload. */
function natsRequest(port, subject, body) {
  return new Promise((res, rej) => {
    const s = net.connect({ host: "127.0.0.1", port })
    let buf = ""
    const timer = setTimeout(() => (s.destroy(), rej(new Error("no reply"))), 10_000)
    s.on("error", rej)
    s.on("data", (d) => {
      buf += d.toString("latin1")
      const m = /MSG \S+ 1 (\d+)\r\n/.exec(buf)
      if (m === null) return
      const start = m.index + m[0].length
      if (buf.length < start + Number(m[1])) return
      clearTimeout(timer)
      s.destroy()
      res(buf.slice(start, start + Number(m[1])))
    })
    s.write(`CONNECT {"verbose":false}\r\nSUB _INBOX.docker 1\r\nPUB ${subject} _INBOX.docker ${Buffer.byteLength(body)}\r\n${body}\r\n`)
  })
}
