// The systems table: every server the harness knows how to start, which protocols
// it speaks, and how to tell whether it is installed. Switchyard is the subject;
// the others are peers it is compared with.
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import type { Readiness } from "./proc.js"
import type { Protocol } from "./scenarios.js"

export interface Ports {
  readonly nats: number
  readonly mqtt: number
}

export interface Availability {
  readonly ok: boolean
  /** Version string when available, reason when not. */
  readonly detail: string
}

export interface SystemDef {
  readonly name: string
  readonly subject: boolean
  readonly protocols: ReadonlyArray<Protocol>
  /** Bar colour in the chart. */
  readonly color: string
  readonly available: (root: string) => Availability
  /**
   * Command and arguments for a fresh instance on the given loopback ports; `workDir`
   * is an empty directory of its own (stream store, config files), removed afterwards.
   */
  readonly command: (
    root: string,
    ports: Ports,
    workDir: string
  ) => { readonly cmd: string; readonly args: ReadonlyArray<string> }
  /** What to probe before the instance counts as started. */
  readonly ready: (ports: Ports, protocols: ReadonlyArray<Protocol>) => ReadonlyArray<Readiness>
}

const which = (bin: string): string | undefined => {
  for (const dir of (process.env.PATH ?? "").split(":").concat(["/usr/sbin", "/usr/local/sbin", "/sbin"])) {
    const p = path.join(dir, bin)
    if (dir !== "" && existsSync(p)) return p
  }
  return undefined
}

const versionOf = (cmd: string, args: ReadonlyArray<string>, pattern: RegExp): string => {
  try {
    const out = execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 5000 })
    return pattern.exec(out)?.[1] ?? out.trim().split("\n")[0] ?? "?"
  } catch (e) {
    // mosquitto -h exits non-zero but still prints its version
    const out = String((e as { stdout?: string }).stdout ?? "") + String((e as { stderr?: string }).stderr ?? "")
    return pattern.exec(out)?.[1] ?? "?"
  }
}

const gitRev = (root: string): string => {
  try {
    const rev = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim()
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { cwd: root, encoding: "utf8" }).trim()
    return dirty === "" ? rev : `${rev}+dirty`
  } catch {
    return "?"
  }
}

const natsReady = (ports: Ports, protocols: ReadonlyArray<Protocol>): ReadonlyArray<Readiness> => {
  const r: Array<Readiness> = []
  if (protocols.includes("nats") || protocols.includes("jetstream")) r.push({ port: ports.nats, kind: "nats-info" })
  if (protocols.includes("mqtt")) r.push({ port: ports.mqtt, kind: "tcp" })
  return r
}

/**
 * Switchyard's entry point; SWITCHYARD_ENTRY=/path/to/main.js benchmarks another
 * build (an older checkout's dist, say) with the same flags.
 */
const switchyardEntry = (root: string): string => process.env.SWITCHYARD_ENTRY ?? path.join(root, "dist/src/main.js")

export const SYSTEMS: ReadonlyArray<SystemDef> = [
  {
    name: "switchyard",
    subject: true,
    protocols: ["nats"], // add "mqtt", "jetstream" as they land
    color: "#2b7bb9",
    available: (root) => {
      const entry = switchyardEntry(root)
      if (!existsSync(entry)) return { ok: false, detail: `${path.relative(root, entry)} not built` }
      const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }
      const custom = process.env.SWITCHYARD_ENTRY !== undefined ? ` via ${entry}` : ""
      return { ok: true, detail: `${pkg.version} (${gitRev(root)}) on Node ${process.version}${custom}` }
    },
    // MQTT on a port of its own and the stream store in the run's directory, so that
    // neither 1883 nor ./data of the checkout is touched
    command: (root, ports, workDir) => ({
      cmd: process.execPath,
      args: [
        switchyardEntry(root),
        "-a",
        "127.0.0.1",
        "-p",
        String(ports.nats),
        "-m",
        "0",
        "--mqtt_port",
        String(ports.mqtt),
        "-sd",
        path.join(workDir, "store")
      ]
    }),
    ready: natsReady
  },
  {
    name: "nats-server",
    subject: false,
    protocols: ["nats"], // its MQTT and JetStream need a config file: add with those scenarios
    color: "#8c8c8c",
    available: () => {
      const bin = which("nats-server")
      if (bin === undefined) return { ok: false, detail: "not installed (apt-get install -y nats-server)" }
      return { ok: true, detail: versionOf(bin, ["--version"], /v(\d+\.\d+\.\d+\S*)/) }
    },
    command: (_root, ports) => ({
      cmd: which("nats-server") ?? "nats-server",
      args: ["-a", "127.0.0.1", "-p", String(ports.nats)]
    }),
    ready: natsReady
  },
  {
    name: "mosquitto",
    subject: false,
    protocols: ["mqtt"],
    color: "#d98c1f",
    available: () => {
      const bin = which("mosquitto")
      if (bin === undefined) return { ok: false, detail: "not installed (apt-get install -y mosquitto)" }
      return { ok: true, detail: versionOf(bin, ["-h"], /mosquitto version (\S+)/) }
    },
    // mosquitto 2 without a config file listens on the loopback interface only
    command: (_root, ports) => ({ cmd: which("mosquitto") ?? "mosquitto", args: ["-p", String(ports.mqtt)] }),
    ready: natsReady
  },
  {
    name: "aedes",
    subject: false,
    protocols: ["mqtt"],
    color: "#4a9c5d",
    available: (root) => {
      try {
        const req = createRequire(path.join(root, "package.json"))
        const pkgPath = req.resolve("aedes/package.json")
        const pkg = JSON.parse(readFileSync(pkgPath, "utf8")) as { version: string }
        return { ok: true, detail: `${pkg.version} on Node ${process.version}` }
      } catch {
        return { ok: false, detail: "npm package aedes not installed" }
      }
    },
    command: (root, ports) => ({
      cmd: process.execPath,
      args: [path.join(root, "dist/bench/servers/aedes.js"), String(ports.mqtt)]
    }),
    ready: natsReady
  }
]
