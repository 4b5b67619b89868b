// The systems table: every server the harness knows how to start, which protocols
// it speaks, and how to tell whether it is installed. Switchyard is the subject;
// the others are peers it is compared with.
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import type { Readiness } from "./proc.js"

/** The protocols a scenario speaks and a system serves. */
export type Protocol = "nats" | "mqtt" | "mqtt-qos2" | "mqtt5" | "bridge" | "jetstream" | "cluster"

export interface Ports {
  readonly nats: number
  readonly mqtt: number
  /** A cluster run (`cluster`): the second server's client port, and both route ports. */
  readonly nats2?: number
  readonly route?: number
  readonly route2?: number
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
  /**
   * Why this system, though it lists `protocol`, cannot run it in the installed
   * version (printed as a skip note); undefined when it can.
   */
  readonly lacks?: (protocol: Protocol, version: string) => string | undefined
  /** Left out of the default selection (and of --list) while unavailable: an opt-in system. */
  readonly optIn?: boolean
  /** Bar colour in the chart. */
  readonly color: string
  readonly available: (root: string) => Availability
  /**
   * Command and arguments for a fresh instance on the given loopback ports; `workDir`
   * is an empty directory of its own (stream store, config files), removed afterwards;
   * `protocol` is the scenario's (a peer enables its MQTT or JetStream only when asked).
   */
  readonly command: (
    root: string,
    ports: Ports,
    workDir: string,
    protocol: Protocol
  ) => { readonly cmd: string; readonly args: ReadonlyArray<string>; readonly env?: Readonly<Record<string, string>> }
  /**
   * A cluster run: the second server, routed to the first (which `command` starts with
   * its route listener on `ports.route`), serving clients on `ports.nats2`.
   */
  readonly clusterPeer?: (root: string, ports: Ports, workDir: string) => { readonly cmd: string; readonly args: ReadonlyArray<string>; readonly env?: Readonly<Record<string, string>> }
  /** What to probe before the instance counts as started. */
  readonly ready: (ports: Ports, protocols: ReadonlyArray<Protocol>) => ReadonlyArray<Readiness>
  /** The line it logs once ready, if it logs one (the time to ready waits for it too). */
  readonly readyLine?: RegExp
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

/** Whether a scenario of this protocol talks to the NATS port, the MQTT port, or both. */
export const usesNats = (p: Protocol): boolean => p === "nats" || p === "jetstream" || p === "bridge" || p === "cluster"
export const usesMqtt = (p: Protocol): boolean => p === "mqtt" || p === "mqtt-qos2" || p === "mqtt5" || p === "bridge"

const natsReady = (ports: Ports, protocols: ReadonlyArray<Protocol>): ReadonlyArray<Readiness> => {
  const r: Array<Readiness> = []
  if (protocols.some(usesNats)) r.push({ port: ports.nats, kind: "nats-info" })
  if (protocols.some(usesMqtt)) r.push({ port: ports.mqtt, kind: "tcp" })
  return r
}

const mqttReady = (ports: Ports): ReadonlyArray<Readiness> => [{ port: ports.mqtt, kind: "tcp" }]

const versionAtLeast = (v: string, major: number, minor: number): boolean => {
  const m = /^(\d+)\.(\d+)/.exec(v)
  if (m === null) return true
  return Number(m[1]) > major || (Number(m[1]) === major && Number(m[2]) >= minor)
}

/** The installed package.json of an npm package (works when its "exports" hide it). */
const packageJson = (root: string, name: string): { version: string } | undefined => {
  try {
    const req = createRequire(path.join(root, "package.json"))
    let dir = path.dirname(req.resolve(name))
    for (let i = 0; i < 6; i++) {
      const p = path.join(dir, "package.json")
      if (existsSync(p)) {
        const pkg = JSON.parse(readFileSync(p, "utf8")) as { name?: string; version: string }
        if (pkg.name === name) return pkg
      }
      dir = path.dirname(dir)
    }
  } catch {
    // not installed
  }
  return undefined
}

/**
 * Switchyard's entry point; SWITCHYARD_ENTRY=/path/to/main.js benchmarks another
 * build (an older checkout's dist, say) with the same flags.
 */
const switchyardEntry = (root: string): string => process.env.SWITCHYARD_ENTRY ?? path.join(root, "dist/switchyard/main.js")

/** The version line of a Switchyard build at `entry` (another checkout's dist, or this one's). */
const switchyardDetail = (root: string, entry: string, other: boolean): Availability => {
  if (!existsSync(entry)) return { ok: false, detail: `${path.relative(root, entry)} not built` }
  if (other) {
    // another build: its own package.json (dist/switchyard/main.js or dist/src/main.js -> ../../package.json), not this checkout's rev
    const pkgFile = path.resolve(path.dirname(entry), "../../package.json")
    const v = existsSync(pkgFile) ? (JSON.parse(readFileSync(pkgFile, "utf8")) as { version: string }).version : "?"
    return { ok: true, detail: `${v} on Node ${process.version} via ${entry}` }
  }
  const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }
  return { ok: true, detail: `${pkg.version} (${gitRev(root)}) on Node ${process.version}` }
}

// Like nats-server, Switchyard started with flags runs only what they name, so each
// scenario asks for what it uses: MQTT on a port of its own and JetStream with its store
// in the run's directory (neither 1883 nor ./data of the checkout is touched). MQTT runs
// with JetStream on (QoS 1/2 state lives in streams), with the default sync_interval
// "always": a PubAck / PUBACK only after the fsync. Core NATS scenarios run NATS alone.
const switchyardArgs = (entry: string, ports: Ports, workDir: string, protocol: Protocol, extra: ReadonlyArray<string>): Array<string> => [
  entry,
  ...(protocol === "mqtt5" ? ["-c", mqtt5Conf(workDir)] : []),
  "-a",
  "127.0.0.1",
  "-p",
  String(ports.nats),
  ...(usesMqtt(protocol) ? ["--mqtt_port", String(ports.mqtt)] : []),
  ...(protocol === "nats" || protocol === "cluster" ? [] : ["-js", "-sd", path.join(workDir, "store")]),
  ...(protocol === "cluster" ? clusterArgs(ports, 1) : []),
  ...extra
]

/** MQTT 5.0 is opt-in per listener (`protocol_versions`, a config key): a file with that alone, the flags give the rest. */
const mqtt5Conf = (workDir: string): string => {
  const conf = path.join(workDir, "switchyard-mqtt5.conf")
  writeFileSync(conf, "mqtt { protocol_versions: [4, 5] }\n")
  return conf
}

/**
 * The cluster flags of the first (1) or second (2) server of a cluster run, the same for
 * Switchyard and nats-server: a route listener each, the second naming the first.
 */
const clusterArgs = (ports: Ports, node: 1 | 2): Array<string> => [
  "-n",
  `bench-${node}`,
  "--cluster_name",
  "BENCH",
  "--cluster",
  `nats://127.0.0.1:${node === 1 ? ports.route : ports.route2}`,
  ...(node === 2 ? ["--routes", `nats-route://127.0.0.1:${ports.route}`] : [])
]

/** The second server of a cluster run (see clusterArgs): its own client port. */
const secondNode = (ports: Ports): Ports => ({ ...ports, nats: ports.nats2! })

/**
 * An A/B variant of Switchyard, run as a peer of its own so that a change is measured
 * against the code before it in the same run, alternating: SWITCHYARD_B_ENTRY=<main.js>
 * (another build), SWITCHYARD_B_ARGS="--flag value" (extra flags), SWITCHYARD_B_ENV="K=V K2=V2".
 */
const variantB = {
  entry: process.env.SWITCHYARD_B_ENTRY,
  args: (process.env.SWITCHYARD_B_ARGS ?? "").split(" ").filter((a) => a !== ""),
  env: Object.fromEntries(
    (process.env.SWITCHYARD_B_ENV ?? "").split(" ").filter((kv) => kv.includes("=")).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)])
  )
}
const variantBSet = variantB.entry !== undefined || variantB.args.length > 0 || Object.keys(variantB.env).length > 0

export const SYSTEMS: ReadonlyArray<SystemDef> = [
  {
    name: "switchyard",
    subject: true,
    protocols: ["nats", "mqtt", "mqtt-qos2", "mqtt5", "bridge", "jetstream", "cluster"],
    color: "#2b7bb9",
    available: (root) => switchyardDetail(root, switchyardEntry(root), process.env.SWITCHYARD_ENTRY !== undefined),
    command: (root, ports, workDir, protocol) => ({ cmd: process.execPath, args: switchyardArgs(switchyardEntry(root), ports, workDir, protocol, []) }),
    clusterPeer: (root, ports, workDir) => ({
      cmd: process.execPath,
      args: [...switchyardArgs(switchyardEntry(root), secondNode(ports), workDir, "nats", []), ...clusterArgs(ports, 2)]
    }),
    ready: natsReady,
    readyLine: /Server is ready/
  },
  {
    name: "switchyard-b",
    subject: false,
    optIn: true,
    protocols: ["nats", "mqtt", "mqtt-qos2", "mqtt5", "bridge", "jetstream", "cluster"],
    color: "#7fb3dc",
    available: (root) => {
      if (!variantBSet) return { ok: false, detail: "no variant (set SWITCHYARD_B_ENTRY, SWITCHYARD_B_ARGS or SWITCHYARD_B_ENV)" }
      const a = switchyardDetail(root, variantB.entry ?? switchyardEntry(root), variantB.entry !== undefined)
      const how = [...variantB.args, ...Object.entries(variantB.env).map(([k, v]) => `${k}=${v}`)].join(" ")
      return a.ok && how !== "" ? { ok: true, detail: `${a.detail} with ${how}` } : a
    },
    command: (root, ports, workDir, protocol) => ({
      cmd: process.execPath,
      args: switchyardArgs(variantB.entry ?? switchyardEntry(root), ports, workDir, protocol, variantB.args),
      env: variantB.env
    }),
    clusterPeer: (root, ports, workDir) => ({
      cmd: process.execPath,
      args: [...switchyardArgs(variantB.entry ?? switchyardEntry(root), secondNode(ports), workDir, "nats", variantB.args), ...clusterArgs(ports, 2)],
      env: variantB.env
    }),
    ready: natsReady,
    readyLine: /Server is ready/
  },
  {
    name: "nats-server",
    subject: false,
    protocols: ["nats", "mqtt", "mqtt-qos2", "bridge", "jetstream", "cluster"],
    lacks: (p, version) =>
      p === "mqtt-qos2" && !versionAtLeast(version, 2, 11)
        ? `nats-server ${version} has no MQTT QoS 2 (added in 2.11; before, a QoS 2 PUBLISH closes the connection)`
        : undefined,
    color: "#8c8c8c",
    available: () => {
      const bin = which("nats-server")
      if (bin === undefined) return { ok: false, detail: "not installed (apt-get install -y nats-server)" }
      return { ok: true, detail: versionOf(bin, ["--version"], /v(\d+\.\d+\.\d+\S*)/) }
    },
    // core NATS scenarios: flags only, JetStream off; MQTT and JetStream scenarios: a
    // config file (its MQTT needs server_name and JetStream), file store in workDir
    command: (_root, ports, workDir, protocol) => {
      const cmd = which("nats-server") ?? "nats-server"
      if (protocol === "nats") return { cmd, args: ["-a", "127.0.0.1", "-p", String(ports.nats)] }
      if (protocol === "cluster") return { cmd, args: ["-a", "127.0.0.1", "-p", String(ports.nats), ...clusterArgs(ports, 1)] }
      const conf = path.join(workDir, "nats-server.conf")
      writeFileSync(
        conf,
        [
          `host: "127.0.0.1"`,
          `port: ${ports.nats}`,
          `server_name: bench`,
          `jetstream { store_dir: ${JSON.stringify(path.join(workDir, "js"))} }`,
          ...(usesMqtt(protocol) ? [`mqtt { host: "127.0.0.1", port: ${ports.mqtt} }`] : [])
        ].join("\n") + "\n"
      )
      return { cmd, args: ["-c", conf] }
    },
    clusterPeer: (_root, ports) => ({
      cmd: which("nats-server") ?? "nats-server",
      args: ["-a", "127.0.0.1", "-p", String(ports.nats2), ...clusterArgs(ports, 2)]
    }),
    ready: natsReady,
    readyLine: /Server is ready/
  },
  {
    name: "mosquitto",
    subject: false,
    protocols: ["mqtt", "mqtt-qos2", "mqtt5"],
    color: "#d98c1f",
    available: () => {
      const bin = which("mosquitto")
      if (bin === undefined) return { ok: false, detail: "not installed (apt-get install -y mosquitto)" }
      return { ok: true, detail: versionOf(bin, ["-h"], /mosquitto version (\S+)/) }
    },
    // in memory (persistence false), one loopback listener. max_inflight_messages is
    // raised from its default 20 to the load generator's window: mosquitto 2 applies it
    // to incoming QoS 2 too and silently drops (PUBREC with reason 151, invisible in
    // 3.1.1) whatever a publisher sends beyond it. Switchyard and nats-server allow
    // 1024 unacknowledged messages per client by default (max_ack_pending).
    command: (_root, ports, workDir) => {
      const conf = path.join(workDir, "mosquitto.conf")
      writeFileSync(
        conf,
        [
          `listener ${ports.mqtt} 127.0.0.1`,
          "allow_anonymous true",
          "persistence false",
          "max_inflight_messages 1000",
          "max_queued_messages 10000"
        ].join("\n") + "\n"
      )
      return { cmd: which("mosquitto") ?? "mosquitto", args: ["-c", conf] }
    },
    ready: mqttReady
  },
  {
    name: "aedes",
    subject: false,
    protocols: ["mqtt", "mqtt-qos2"],
    color: "#4a9c5d",
    available: (root) => {
      // aedes 1.x "exports" hide package.json from require.resolve
      const pkg = packageJson(root, "aedes")
      if (pkg === undefined) return { ok: false, detail: "npm package aedes not installed (npm i -D aedes)" }
      return { ok: true, detail: `${pkg.version} on Node ${process.version}` }
    },
    command: (root, ports) => ({
      cmd: process.execPath,
      args: [path.join(root, "dist/bench/servers/aedes.js"), String(ports.mqtt)]
    }),
    ready: mqttReady
  }
]
