// Command-line flags, as nats-server spells them (`-p 4222`, `-p=4222`,
// `--port=4222`; one or two dashes alike, booleans as `-D` or `-T=false`), plus
// `--mqtt_port` of our own. Flags override the configuration file.
import { Either } from "effect"
import { ConfigError, configError } from "./errors.js"
import {
  clientPort,
  clusterPort,
  listenerPort,
  monitorPort,
  type AuthorizationPatch,
  type ClusterPatch,
  type JetStreamPatch,
  type MqttPatch,
  type OptionsPatch
} from "./patch.js"
import type { LogOptions } from "./options.js"
import { parseDurationMicros, parseHostPort } from "./schema.js"
import { parseRouteUrl } from "./route-url.js"
import { parseSignalRequest, SignalCommands, type SignalRequest } from "./signal.js"

export type FlagsResult =
  | {
      readonly kind: "run"
      readonly overrides: OptionsPatch
      readonly configFile: string | undefined
      /** `-t`: check the configuration (strictly: warnings are errors) and exit. */
      readonly checkOnly: boolean
      /** `--signal`: send this signal to a running server and exit. */
      readonly signal?: SignalRequest | undefined
    }
  | { readonly kind: "help" }
  | { readonly kind: "version" }

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** What the flags seen so far say. */
interface State {
  configFile: string | undefined
  checkOnly: boolean
  signal: SignalRequest | undefined
  top: Mutable<OptionsPatch>
  authorization: Mutable<AuthorizationPatch>
  jetstream: Mutable<JetStreamPatch>
  mqtt: Mutable<MqttPatch>
  cluster: Mutable<ClusterPatch>
  log: Mutable<Partial<LogOptions>>
  tls: { enabled?: boolean; verify?: boolean; certFile?: string; keyFile?: string; caFile?: string }
}

type Group = "Server" | "Logging" | "JetStream" | "Authorization" | "TLS" | "Cluster" | "MQTT" | "Common"

interface FlagDef {
  /** Without dashes; the short ones are listed with one dash, the long ones with two. */
  readonly names: ReadonlyArray<string>
  /** The value's placeholder; undefined for a boolean flag. */
  readonly arg: string | undefined
  readonly group: Group
  readonly help: string
  /** Applies the value (a string, or a boolean for boolean flags); a string on failure says what was expected. */
  readonly apply: (s: State, value: string | boolean) => string | undefined
  /** For `-h`/`-v`: stop and answer this. */
  readonly answer?: "help" | "version"
  /** Never show this flag's value in an error. */
  readonly secret?: boolean
  /** nats-server has this flag and Switchyard does not do what it asks: naming it (turned on) is this error. */
  readonly refused?: string
}

const int = (v: string): number | undefined => (/^[+-]?\d+$/.test(v) ? Number(v) : undefined)

const portValue = (v: string): number | undefined => {
  const n = int(v)
  return n !== undefined && n >= -1 && n <= 65535 ? n : undefined
}

const PORT = "a port number (-1 to 65535)"

const flags: ReadonlyArray<FlagDef> = [
  // Server
  {
    names: ["a", "addr", "net"],
    arg: "<host>",
    group: "Server",
    help: "Bind to host address (default: 0.0.0.0)",
    apply: (s, v) => {
      s.top.host = String(v)
      return undefined
    }
  },
  {
    names: ["p", "port"],
    arg: "<port>",
    group: "Server",
    help: "Use port for clients (default: 4222; -1 for a random port)",
    apply: (s, v) => {
      const n = portValue(String(v))
      if (n === undefined) return PORT
      s.top.port = clientPort(n)
      return undefined
    }
  },
  {
    names: ["n", "name", "server_name"],
    arg: "<server_name>",
    group: "Server",
    help: "Server name (default: auto)",
    apply: (s, v) => {
      const name = String(v)
      if (name === "" || /\s/.test(name)) return "a name without spaces"
      s.top.serverName = name
      return undefined
    }
  },
  {
    names: ["m", "http_port"],
    arg: "<port>",
    group: "Server",
    help: "Use port (or host:port) for http monitoring (-1 for a random port; 0 disables)",
    apply: (s, v) => {
      const hp = parseHostPort(String(v))
      if (hp === undefined || hp.port === undefined) return `${PORT} or host:port`
      if (hp.host !== undefined) s.top.httpHost = hp.host
      s.top.httpPort = monitorPort(hp.port)
      return undefined
    }
  },
  {
    names: ["ms", "https_port"],
    arg: "<port>",
    group: "Server",
    help: "Use port (or host:port) for https monitoring (needs a tls block)",
    apply: (s, v) => {
      const hp = parseHostPort(String(v))
      if (hp === undefined || hp.port === undefined) return `${PORT} or host:port`
      if (hp.host !== undefined) s.top.httpHost = hp.host
      s.top.httpsPort = monitorPort(hp.port)
      return undefined
    }
  },
  {
    names: ["busy_poll"],
    arg: "<duration>",
    group: "Server",
    help: "Keep polling sockets this long after request-reply traffic instead of sleeping (default: 200us; 0 disables)",
    apply: (s, v) => {
      const us = parseDurationMicros(String(v).trim())
      if (us === undefined) return 'a duration like "200us" or 0'
      s.top.busyPollUs = us
      return undefined
    }
  },
  {
    names: ["c", "config"],
    arg: "<file>",
    group: "Server",
    help: "Configuration file",
    apply: (s, v) => {
      s.configFile = String(v)
      return undefined
    }
  },
  {
    names: ["P", "pid"],
    arg: "<file>",
    group: "Server",
    help: "File to store the process id in (removed at a clean stop)",
    apply: (s, v) => {
      s.top.pidFile = String(v)
      return undefined
    }
  },
  {
    names: ["ports_file_dir"],
    arg: "<dir>",
    group: "Server",
    help: "Write <exe>_<pid>.ports (the listeners' URLs, JSON) in this directory",
    apply: (s, v) => {
      s.top.portsFileDir = String(v)
      return undefined
    }
  },
  {
    names: ["sl", "signal"],
    arg: "<signal>[=<pid>]",
    group: "Server",
    help: `Send a signal to a running server and exit: ${Object.keys(SignalCommands).join(", ")}; ` +
      "<pid> is a process id or a pid file (default: the configuration's pid_file)",
    apply: (s, v) => {
      const r = parseSignalRequest(String(v))
      if (r === undefined) return `one of ${Object.keys(SignalCommands).join(", ")}, optionally followed by =<pid> or =<pid file>`
      s.signal = r
      return undefined
    }
  },
  {
    names: ["t"],
    arg: undefined,
    group: "Server",
    help: "Test configuration and exit (unknown keys are errors)",
    apply: (s, v) => {
      s.checkOnly = v === true
      return undefined
    }
  },
  // Logging
  {
    names: ["l", "log", "log_file"],
    arg: "<file>",
    group: "Logging",
    help: "File to redirect log output",
    apply: (s, v) => {
      s.log.logFile = String(v)
      return undefined
    }
  },
  {
    names: ["T", "logtime"],
    arg: undefined,
    group: "Logging",
    help: "Timestamp log entries (default: true; -T=false turns it off)",
    apply: (s, v) => {
      s.log.logtime = v === true
      return undefined
    }
  },
  {
    names: ["D", "debug"],
    arg: undefined,
    group: "Logging",
    help: "Enable debugging output",
    apply: (s, v) => {
      s.log.debug = v === true
      return undefined
    }
  },
  {
    names: ["V", "trace"],
    arg: undefined,
    group: "Logging",
    help: "Trace the raw protocol",
    apply: (s, v) => {
      s.log.trace = v === true
      return undefined
    }
  },
  {
    names: ["VV"],
    arg: undefined,
    group: "Logging",
    help: "Verbose trace (same as -V here)",
    apply: (s, v) => {
      s.log.trace = v === true
      return undefined
    }
  },
  {
    names: ["DV"],
    arg: undefined,
    group: "Logging",
    help: "Debug and trace",
    apply: (s, v) => {
      s.log.debug = v === true
      s.log.trace = v === true
      return undefined
    }
  },
  {
    names: ["DVV"],
    arg: undefined,
    group: "Logging",
    help: "Debug and verbose trace (same as -DV here)",
    apply: (s, v) => {
      s.log.debug = v === true
      s.log.trace = v === true
      return undefined
    }
  },
  {
    names: ["s", "syslog"],
    arg: undefined,
    group: "Logging",
    help: "Not supported: log to stderr (journald collects it) or to a file (-l)",
    refused: "syslog is not supported by Switchyard; log to stderr (journald collects it) or to a file (-l)",
    apply: () => undefined
  },
  {
    names: ["r", "remote_syslog"],
    arg: "<addr>",
    group: "Logging",
    help: "Not supported: log to stderr (journald collects it) or to a file (-l)",
    refused: "remote syslog is not supported by Switchyard; log to stderr (journald collects it) or to a file (-l)",
    apply: () => undefined
  },
  // JetStream
  {
    names: ["js", "jetstream"],
    arg: undefined,
    group: "JetStream",
    help: "Enable JetStream functionality",
    apply: (s, v) => {
      s.jetstream.enabled = v === true
      return undefined
    }
  },
  {
    names: ["sd", "store_dir"],
    arg: "<dir>",
    group: "JetStream",
    help: "Set the JetStream storage directory (default: ./data; needs -js or a jetstream block)",
    apply: (s, v) => {
      s.jetstream.storeDir = String(v)
      return undefined
    }
  },
  // Authorization
  {
    names: ["user"],
    arg: "<user>",
    group: "Authorization",
    help: "User required for connections",
    apply: (s, v) => {
      s.authorization.user = String(v)
      return undefined
    }
  },
  {
    names: ["pass"],
    arg: "<password>",
    group: "Authorization",
    help: "Password required for connections",
    secret: true,
    apply: (s, v) => {
      s.authorization.password = String(v)
      return undefined
    }
  },
  {
    names: ["auth"],
    arg: "<token>",
    group: "Authorization",
    help: "Authorization token required for connections",
    secret: true,
    apply: (s, v) => {
      s.authorization.token = String(v)
      return undefined
    }
  },
  // TLS on the client port, as nats-server's flags: --tls or --tlsverify turn it on.
  {
    names: ["tls"],
    arg: undefined,
    group: "TLS",
    help: "Enable TLS, do not verify clients (default: false)",
    apply: (s, v) => {
      s.tls.enabled = v === true
      return undefined
    }
  },
  {
    names: ["tlscert"],
    arg: "<file>",
    group: "TLS",
    help: "Server certificate file",
    apply: (s, v) => {
      s.tls.certFile = String(v)
      return undefined
    }
  },
  {
    names: ["tlskey"],
    arg: "<file>",
    group: "TLS",
    help: "Private key for server certificate",
    apply: (s, v) => {
      s.tls.keyFile = String(v)
      return undefined
    }
  },
  {
    names: ["tlsverify"],
    arg: undefined,
    group: "TLS",
    help: "Enable TLS, verify client certificates",
    apply: (s, v) => {
      s.tls.verify = v === true
      return undefined
    }
  },
  {
    names: ["tlscacert"],
    arg: "<file>",
    group: "TLS",
    help: "Client certificate CA for verification",
    apply: (s, v) => {
      s.tls.caFile = String(v)
      return undefined
    }
  },
  // Cluster
  {
    names: ["routes"],
    arg: "<rurl-1, rurl-2>",
    group: "Cluster",
    help: "Routes to solicit and connect (nats-route://host:port, comma separated)",
    secret: true,
    apply: (s, v) => {
      const urls = String(v).split(",").map((u) => u.trim()).filter((u) => u !== "")
      if (urls.length === 0 || urls.some((u) => parseRouteUrl(u) === undefined)) return "route URLs like nats-route://host:6222, comma separated"
      s.cluster.routes = urls
      return undefined
    }
  },
  {
    names: ["cluster", "cluster_listen"],
    arg: "<cluster-url>",
    group: "Cluster",
    help: "Cluster URL for solicited routes (nats://host:port; -1 as the port for a random one)",
    apply: (s, v) => {
      const text = String(v).trim()
      const m = /^(?:(?:nats|nats-route|route):\/\/)?(.*)$/.exec(text)
      const hp = m === null ? undefined : parseHostPort(m[1])
      if (hp === undefined || hp.port === undefined) return "a URL like nats://0.0.0.0:6222 or host:port"
      s.cluster.enabled = true
      if (hp.host !== undefined) s.cluster.host = hp.host
      s.cluster.port = clusterPort(hp.port)
      return undefined
    }
  },
  {
    names: ["cluster_name"],
    arg: "<string>",
    group: "Cluster",
    help: "Cluster name; a route from a server with another name is refused",
    apply: (s, v) => {
      const name = String(v)
      if (name === "" || /\s/.test(name)) return "a name without spaces"
      s.cluster.name = name
      return undefined
    }
  },
  {
    names: ["cluster_advertise"],
    arg: "<host:port>",
    group: "Cluster",
    help: "Cluster URL to advertise to other servers",
    apply: (s, v) => {
      const hp = parseHostPort(String(v).trim())
      if (hp === undefined || hp.host === undefined || hp.port === undefined || hp.port <= 0) return "host:port"
      s.cluster.advertise = String(v).trim()
      return undefined
    }
  },
  {
    names: ["no_advertise"],
    arg: undefined,
    group: "Cluster",
    help: "Do not advertise known cluster information to clients",
    apply: (s, v) => {
      s.cluster.noAdvertise = v === true
      return undefined
    }
  },
  // MQTT (Switchyard's own; nats-server has no MQTT flag)
  {
    names: ["mqtt_port"],
    arg: "<port>",
    group: "MQTT",
    help: "Enable MQTT on this port (1883 is the standard one; -1 for a random port, 0 disables)",
    apply: (s, v) => {
      const n = portValue(String(v))
      if (n === undefined) return PORT
      const p = listenerPort(n)
      s.mqtt.enabled = p.enabled
      if (p.port !== undefined) s.mqtt.port = p.port
      return undefined
    }
  },
  // Common
  {
    names: ["h", "help"],
    arg: undefined,
    group: "Common",
    help: "Show this message",
    answer: "help",
    apply: () => undefined
  },
  {
    names: ["v", "version"],
    arg: undefined,
    group: "Common",
    help: "Show version",
    answer: "version",
    apply: () => undefined
  }
]

const byName = new Map<string, FlagDef>(flags.flatMap((f) => f.names.map((n) => [n, f] as const)))

/** Go's strconv.ParseBool, which is what `-T=false` goes through in nats-server. */
const parseBool = (v: string): boolean | undefined => {
  if (["1", "t", "T", "true", "TRUE", "True"].includes(v)) return true
  if (["0", "f", "F", "false", "FALSE", "False"].includes(v)) return false
  return undefined
}

const flagError = (detail: string): ConfigError => configError("Flag", detail)

const dashed = (name: string) =>
  name.length <= 3 && name !== "log" && name !== "net" && name !== "tls" && name !== "pid" ? `-${name}` : `--${name}`

/**
 * TLS from the flags: on with --tls or --tlsverify. Only the fields given are set, so
 * they override the configuration file's `tls` block field by field (as nats-server's
 * flags do); the certificate and key may come from either (checked once merged).
 */
const tlsFromFlags = (t: State["tls"]): Either.Either<OptionsPatch["tls"], ConfigError> => {
  const on = t.enabled === true || t.verify === true
  if (!on) {
    return t.certFile !== undefined || t.keyFile !== undefined || t.caFile !== undefined
      ? Either.left(flagError("--tlscert, --tlskey and --tlscacert need --tls or --tlsverify"))
      : Either.right(undefined)
  }
  return Either.right({
    ...(t.certFile !== undefined && { certFile: t.certFile }),
    ...(t.keyFile !== undefined && { keyFile: t.keyFile }),
    ...(t.caFile !== undefined && { caFile: t.caFile }),
    ...(t.verify === true && { verify: true })
  })
}

/** Parses the arguments after the program name. */
export const parseArgs = (argv: ReadonlyArray<string>): Either.Either<FlagsResult, ConfigError> => {
  const s: State = {
    configFile: undefined,
    checkOnly: false,
    signal: undefined,
    top: {},
    authorization: {},
    jetstream: {},
    mqtt: {},
    cluster: {},
    log: {},
    tls: {}
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (!arg.startsWith("-") || arg === "-" || arg === "--") {
      return Either.left(flagError(`unexpected argument ${JSON.stringify(arg)} (flags start with '-')`))
    }
    const body = arg.slice(arg.startsWith("--") ? 2 : 1)
    const eq = body.indexOf("=")
    const name = eq < 0 ? body : body.slice(0, eq)
    const def = byName.get(name)
    if (def === undefined) return Either.left(flagError(`unknown flag ${dashed(name)} (see --help)`))
    if (def.answer !== undefined) return Either.right({ kind: def.answer })
    let value: string | boolean
    if (def.arg === undefined) {
      if (eq < 0) value = true
      else {
        const b = parseBool(body.slice(eq + 1))
        if (b === undefined) return Either.left(flagError(`invalid value for ${dashed(name)}: expected true or false`))
        value = b
      }
    } else if (eq >= 0) {
      value = body.slice(eq + 1)
    } else {
      if (i + 1 >= argv.length) return Either.left(flagError(`flag ${dashed(name)} needs a value ${def.arg}`))
      value = argv[++i]
    }
    if (def.refused !== undefined && value !== false && value !== "") return Either.left(flagError(`${dashed(name)}: ${def.refused}`))
    const expected = def.apply(s, value)
    if (expected !== undefined) {
      const shown = def.secret === true ? "" : ` ${JSON.stringify(value)}`
      return Either.left(flagError(`invalid value${shown} for ${dashed(name)}: expected ${expected}`))
    }
  }
  const nonEmpty = <T extends object>(o: T): T | undefined => (Object.keys(o).length === 0 ? undefined : o)
  const tls = tlsFromFlags(s.tls)
  if (Either.isLeft(tls)) return Either.left(tls.left)
  return Either.right({
    kind: "run",
    configFile: s.configFile,
    checkOnly: s.checkOnly,
    ...(s.signal !== undefined && { signal: s.signal }),
    overrides: {
      ...s.top,
      ...(s.configFile === undefined ? {} : { configFile: s.configFile }),
      ...(nonEmpty(s.authorization) && { authorization: s.authorization }),
      ...(nonEmpty(s.jetstream) && { jetstream: s.jetstream }),
      ...(nonEmpty(s.mqtt) && { mqtt: s.mqtt }),
      ...(nonEmpty(s.cluster) && { cluster: s.cluster }),
      ...(nonEmpty(s.log) && { log: s.log }),
      ...(tls.right !== undefined && { tls: tls.right })
    }
  })
}

const GROUP_ORDER: ReadonlyArray<Group> = ["Server", "Logging", "JetStream", "Authorization", "TLS", "Cluster", "MQTT", "Common"]
const GROUP_TITLE: Record<Group, string> = {
  Server: "Server Options",
  Logging: "Logging Options",
  JetStream: "JetStream Options",
  Authorization: "Authorization Options",
  TLS: "TLS Options",
  Cluster: "Cluster Options",
  MQTT: "MQTT Options (Switchyard)",
  Common: "Common Options"
}

const usageLine = (f: FlagDef): string => {
  const names = f.names.map(dashed)
  const shortNames = names.filter((n) => !n.startsWith("--"))
  const longNames = names.filter((n) => n.startsWith("--"))
  const left = (shortNames.length > 0 ? "" : "    ") + [...shortNames, ...longNames].join(", ")
  const withArg = f.arg === undefined ? left : `${left} ${f.arg}`
  const width = 33
  return withArg.length > width
    ? `    ${withArg}\n    ${"".padEnd(width)} ${f.help}`
    : `    ${withArg.padEnd(width)} ${f.help}`
}

/** The full usage text, nats-server style. */
export const helpText: string = [
  "Usage: switchyard [options]",
  "",
  ...GROUP_ORDER.flatMap((g) => [`${GROUP_TITLE[g]}:`, ...flags.filter((f) => f.group === g).map(usageLine), ""]),
  "Flags take one or two dashes and their value as the next argument or after '='",
  "(-p 4222, -p=4222, --port=4222); boolean flags accept -flag=false. Flags override",
  "the configuration file.",
  "",
  "With no file and no flags at all, every listener runs (clients 4222, MQTT 1883,",
  "monitoring 8222, JetStream under ./data). With a file or any flag, only the client",
  "listener runs unless MQTT (--mqtt_port, mqtt {}), JetStream (-js, jetstream {}) or",
  "monitoring (-m, -ms, http_port) is named."
].join("\n")
