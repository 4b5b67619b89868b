// Command-line flags: every flag, every spelling, and the errors.
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import type { ConfigError } from "../../src/config/errors.js"
import { helpText, parseArgs, type FlagsResult } from "../../src/config/flags.js"
import type { OptionsPatch } from "../../src/config/patch.js"

const run = (...argv: Array<string>): Extract<FlagsResult, { kind: "run" }> => {
  const r = parseArgs(argv)
  if (Either.isLeft(r)) throw new Error(`unexpected error: ${r.left.message}`)
  if (r.right.kind !== "run") throw new Error(`unexpected ${r.right.kind}`)
  return r.right
}

const overrides = (...argv: Array<string>): OptionsPatch => run(...argv).overrides

const flagError = (...argv: Array<string>): ConfigError => {
  const r = parseArgs(argv)
  if (Either.isRight(r)) throw new Error(`expected an error, got ${JSON.stringify(r.right)}`)
  return r.left
}

describe("no flags", () => {
  it("runs with no overrides and no file", () => {
    expect(run()).toEqual({ kind: "run", overrides: {}, configFile: undefined, checkOnly: false })
  })
})

describe("every spelling of a value flag", () => {
  for (const argv of [
    ["-p", "4333"],
    ["-p=4333"],
    ["--p", "4333"],
    ["--port", "4333"],
    ["--port=4333"],
    ["-port", "4333"],
    ["-port=4333"]
  ]) {
    it(argv.join(" "), () => {
      expect(overrides(...argv)).toEqual({ port: 4333 })
    })
  }
})

describe("server flags", () => {
  it("-c/--config names the file", () => {
    expect(run("-c", "nats.conf")).toMatchObject({ configFile: "nats.conf", overrides: { configFile: "nats.conf" } })
    expect(run("--config=/etc/s.conf").configFile).toBe("/etc/s.conf")
  })

  it("-p/--port follows the port conventions", () => {
    expect(overrides("-p", "-1")).toEqual({ port: 0 })
    expect(overrides("-p", "0")).toEqual({ port: 4222 })
    expect(overrides("--port", "5000")).toEqual({ port: 5000 })
  })

  it("-a/--addr/--net sets the host", () => {
    for (const f of ["-a", "--addr", "--net", "-net"]) expect(overrides(f, "127.0.0.1")).toEqual({ host: "127.0.0.1" })
  })

  it("-n/--name/--server_name sets the server name", () => {
    for (const f of ["-n", "--name", "--server_name"]) expect(overrides(f, "hub")).toEqual({ serverName: "hub" })
  })

  it("-m/--http_port takes a port or host:port; 0 disables, -1 is ephemeral", () => {
    expect(overrides("-m", "8300")).toEqual({ httpPort: 8300 })
    expect(overrides("--http_port=127.0.0.1:8301")).toEqual({ httpHost: "127.0.0.1", httpPort: 8301 })
    expect(overrides("-m", "0")).toEqual({ httpPort: null })
    expect(overrides("-m", "-1")).toEqual({ httpPort: 0 })
  })

  it("-ms/--https_port takes a port or host:port", () => {
    expect(overrides("-ms", "8443")).toEqual({ httpsPort: 8443 })
    expect(overrides("--https_port", "0.0.0.0:8444")).toEqual({ httpHost: "0.0.0.0", httpsPort: 8444 })
  })

  it("--busy_poll takes a duration in microseconds or 0", () => {
    expect(overrides("--busy_poll", "50us")).toEqual({ busyPollUs: 50 })
    expect(overrides("--busy_poll=0")).toEqual({ busyPollUs: 0 })
    expect(flagError("--busy_poll", "soon").message).toBe('invalid value "soon" for --busy_poll: expected a duration like "200us" or 0')
  })

  it("-t asks for a strict check", () => {
    expect(run("-t", "-c", "x.conf")).toMatchObject({ checkOnly: true, configFile: "x.conf" })
  })
})

describe("logging flags", () => {
  it("-D/--debug, -V/--trace, -DV, -VV, -DVV", () => {
    expect(overrides("-D")).toEqual({ log: { debug: true } })
    expect(overrides("--debug")).toEqual({ log: { debug: true } })
    expect(overrides("-V")).toEqual({ log: { trace: true } })
    expect(overrides("--trace")).toEqual({ log: { trace: true } })
    expect(overrides("-DV")).toEqual({ log: { debug: true, trace: true } })
    expect(overrides("-VV")).toEqual({ log: { trace: true } })
    expect(overrides("-DVV")).toEqual({ log: { debug: true, trace: true } })
  })

  it("-T/--logtime, with -T=false to turn it off", () => {
    expect(overrides("-T")).toEqual({ log: { logtime: true } })
    expect(overrides("-T=false")).toEqual({ log: { logtime: false } })
    expect(overrides("--logtime=0")).toEqual({ log: { logtime: false } })
    expect(overrides("-D=false")).toEqual({ log: { debug: false } })
  })

  it("-l/--log sets the log file", () => {
    expect(overrides("-l", "/tmp/s.log")).toEqual({ log: { logFile: "/tmp/s.log" } })
    expect(overrides("--log=/tmp/t.log")).toEqual({ log: { logFile: "/tmp/t.log" } })
  })
})

describe("operations flags", () => {
  it("-P/--pid names the pid file, --ports_file_dir the ports file's directory", () => {
    expect(overrides("-P", "/run/s.pid", "--ports_file_dir", "/tmp")).toEqual({ pidFile: "/run/s.pid", portsFileDir: "/tmp" })
    expect(overrides("--pid=/run/t.pid").pidFile).toBe("/run/t.pid")
  })

  it("-sl/--signal takes nats-server's commands, with a pid or a pid file after =", () => {
    expect(run("--signal", "reload").signal).toEqual({ command: "reload", signal: "SIGHUP", target: undefined })
    expect(run("-sl", "ldm=4242").signal).toEqual({ command: "ldm", signal: "SIGUSR2", target: "4242" })
    expect(run("--signal=reopen=/run/s.pid").signal).toEqual({ command: "reopen", signal: "SIGUSR1", target: "/run/s.pid" })
    expect(run("-sl", "stop").signal?.signal).toBe("SIGKILL")
    expect(run("-sl", "quit").signal?.signal).toBe("SIGINT")
    expect(run("-sl", "term").signal?.signal).toBe("SIGTERM")
    expect(flagError("--signal", "hup").message).toBe(
      'invalid value "hup" for --signal: expected one of stop, quit, term, reopen, reload, ldm, optionally followed by =<pid> or =<pid file>'
    )
    expect(flagError("--signal", "reload=").message).toMatch(/^invalid value "reload=" for --signal/)
  })

  it("-s/--syslog and -r/--remote_syslog are refused, saying why", () => {
    expect(flagError("-s").message).toBe("-s: syslog is not supported by Switchyard; log to stderr (journald collects it) or to a file (-l)")
    expect(flagError("--remote_syslog", "udp://h:514").message).toBe(
      "--remote_syslog: remote syslog is not supported by Switchyard; log to stderr (journald collects it) or to a file (-l)"
    )
    expect(run("-s=false").overrides).toEqual({})
  })
})

describe("jetstream, authorization and mqtt flags", () => {
  it("-js/--jetstream and -sd/--store_dir", () => {
    expect(overrides("-js")).toEqual({ jetstream: { enabled: true } })
    expect(overrides("--jetstream=false")).toEqual({ jetstream: { enabled: false } })
    expect(overrides("-sd", "/data")).toEqual({ jetstream: { storeDir: "/data" } })
    expect(overrides("-js", "--store_dir=/d")).toEqual({ jetstream: { enabled: true, storeDir: "/d" } })
  })

  it("--user, --pass and --auth", () => {
    expect(overrides("--user", "u", "--pass", "p")).toEqual({ authorization: { user: "u", password: "p" } })
    expect(overrides("--auth=tok")).toEqual({ authorization: { token: "tok" } })
  })

  it("--tls/--tlsverify with --tlscert, --tlskey and --tlscacert", () => {
    // Only the fields given: they are laid over the file's tls block field by field.
    expect(overrides("--tls", "--tlscert", "s.pem", "--tlskey=s.key")).toEqual({ tls: { certFile: "s.pem", keyFile: "s.key" } })
    expect(overrides("--tlsverify", "--tlscert", "s.pem", "--tlskey", "s.key", "--tlscacert", "ca.pem")).toEqual({
      tls: { certFile: "s.pem", keyFile: "s.key", caFile: "ca.pem", verify: true }
    })
    expect(overrides("--tls=false")).toEqual({})
    expect(flagError("--tlscert", "s.pem", "--tlskey", "s.key").message).toBe("--tlscert, --tlskey and --tlscacert need --tls or --tlsverify")
  })

  it("--mqtt_port: 0 disables, -1 is ephemeral", () => {
    expect(overrides("--mqtt_port", "1884")).toEqual({ mqtt: { enabled: true, port: 1884 } })
    expect(overrides("--mqtt_port=0")).toEqual({ mqtt: { enabled: false } })
    expect(overrides("--mqtt_port", "-1")).toEqual({ mqtt: { enabled: true, port: 0 } })
  })

  it("cluster flags: --cluster listens, --routes solicits, with name, advertise and no_advertise", () => {
    expect(overrides("--cluster", "nats://127.0.0.1:6333", "--routes", "nats-route://a:6222, nats://b:6222", "--cluster_name", "C1",
      "--cluster_advertise", "203.0.113.9:6333", "--no_advertise")).toEqual({
      cluster: {
        enabled: true,
        host: "127.0.0.1",
        port: 6333,
        routes: ["nats-route://a:6222", "nats://b:6222"],
        name: "C1",
        advertise: "203.0.113.9:6333",
        noAdvertise: true
      }
    })
    expect(overrides("--cluster", "nats://0.0.0.0:-1")).toEqual({ cluster: { enabled: true, host: "0.0.0.0", port: 0 } })
    expect(overrides("--cluster_listen=localhost:7000")).toEqual({ cluster: { enabled: true, host: "localhost", port: 7000 } })
    expect(flagError("--routes", "tls://u:hidden@a:6222").message).not.toContain("hidden")
    expect(flagError("--routes", "a:6222").message).toMatch(/route URLs/)
    expect(flagError("--cluster", "nowhere").message).toMatch(/--cluster/)
    expect(flagError("--cluster_name", "a b").message).toMatch(/without spaces/)
  })

  it("combines many flags", () => {
    expect(run("-c", "a.conf", "-p", "1", "-a", "h", "-n", "s", "-m", "2", "-DV", "-js", "-sd", "d", "--user", "u")).toEqual({
      kind: "run",
      configFile: "a.conf",
      checkOnly: false,
      overrides: {
        configFile: "a.conf",
        port: 1,
        host: "h",
        serverName: "s",
        httpPort: 2,
        log: { debug: true, trace: true },
        jetstream: { enabled: true, storeDir: "d" },
        authorization: { user: "u" }
      }
    })
  })

  it("lets a later flag win", () => {
    expect(overrides("-p", "1", "--port", "2")).toEqual({ port: 2 })
  })
})

describe("help and version", () => {
  it("-h/--help and -v/--version answer at once", () => {
    for (const f of ["-h", "--help", "-help"]) expect(Either.getOrThrow(parseArgs([f]))).toEqual({ kind: "help" })
    for (const f of ["-v", "--version"]) expect(Either.getOrThrow(parseArgs([f]))).toEqual({ kind: "version" })
    expect(Either.getOrThrow(parseArgs(["-p", "1", "-h", "--bogus"]))).toEqual({ kind: "help" })
  })

  it("lists every flag in the help text", () => {
    for (const f of [
      "-a, --addr, --net <host>",
      "-p, --port <port>",
      "-n, --name, --server_name <server_name>",
      "-m, --http_port <port>",
      "-ms, --https_port <port>",
      "-c, --config <file>",
      "-t ",
      "-l, --log, --log_file <file>",
      "-T, --logtime",
      "-D, --debug",
      "-V, --trace",
      "-VV",
      "-DV",
      "-DVV",
      "-js, --jetstream",
      "-sd, --store_dir <dir>",
      "--user <user>",
      "--pass <password>",
      "--auth <token>",
      "--mqtt_port <port>",
      "--tls ",
      "--tlscert <file>",
      "--tlskey <file>",
      "--tlsverify",
      "--tlscacert <file>",
      "-P, --pid <file>",
      "--ports_file_dir <dir>",
      "-sl, --signal <signal>[=<pid>]",
      "-h, --help",
      "-v, --version"
    ]) {
      expect(helpText).toContain(f)
    }
    expect(helpText.startsWith("Usage: switchyard [options]")).toBe(true)
  })
})

describe("errors", () => {
  it("names an unknown flag", () => {
    const e = flagError("--bogus=1")
    expect([e.reason, e.message]).toEqual(["Flag", "unknown flag --bogus (see --help)"])
  })

  it("needs a value for a value flag", () => {
    expect(flagError("-p").message).toBe("flag -p needs a value <port>")
    expect(flagError("--config").message).toBe("flag --config needs a value <file>")
  })

  it("checks values", () => {
    expect(flagError("-p", "abc").message).toBe('invalid value "abc" for -p: expected a port number (-1 to 65535)')
    expect(flagError("--port=70000").message).toBe('invalid value "70000" for --port: expected a port number (-1 to 65535)')
    expect(flagError("-m", "host").message).toBe('invalid value "host" for -m: expected a port number (-1 to 65535) or host:port')
    expect(flagError("-n", "a b").message).toBe('invalid value "a b" for -n: expected a name without spaces')
    expect(flagError("-T=maybe").message).toBe("invalid value for -T: expected true or false")
    expect(flagError("--mqtt_port", "x").reason).toBe("Flag")
  })

  it("refuses arguments that are not flags", () => {
    expect(flagError("nats.conf").message).toBe('unexpected argument "nats.conf" (flags start with \'-\')')
    expect(flagError("--").reason).toBe("Flag")
  })

  it("never echoes a password or token", () => {
    expect(flagError("--pass").message).toBe("flag --pass needs a value <password>")
    expect(flagError("--auth").message).not.toContain("=")
  })
})
