// The configuration schema: each block and key, the port conventions, aliases,
// errors that name the key path and place, secrets kept out of messages, and
// unknown-key warnings.
import { parseLeafUrl } from "../../src/config/route-url.js"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { parseConfig } from "../../src/config/conf-parser.js"
import { checkOptions, decodeConfig, formatPath, formatWarning } from "../../src/config/decode.js"
import type { ConfigError } from "../../src/config/errors.js"
import { defaultOptions, MiB, type ServerOptions } from "../../src/config/options.js"
import { applyPatch } from "../../src/config/patch.js"
import { notImplementedKeys, refusedKeys } from "../../src/config/not-implemented.js"
import { parseDurationText, parseHostPort } from "../../src/config/schema.js"

type Result = Either.Either<{ options: ServerOptions; warnings: Array<string> }, ConfigError>

const resolve = (text: string, env: Record<string, string> = {}): Result => {
  const parsed = parseConfig(text, "t.conf", { readFile: () => undefined, env })
  if (Either.isLeft(parsed)) return Either.left(parsed.left)
  const decoded = decodeConfig(parsed.right)
  if (Either.isLeft(decoded)) return Either.left(decoded.left)
  return Either.map(checkOptions(applyPatch(defaultOptions, decoded.right.patch), parsed.right), (options) => ({
    options,
    warnings: decoded.right.warnings.map(formatWarning)
  }))
}

const options = (text: string, env: Record<string, string> = {}): ServerOptions => {
  const r = resolve(text, env)
  if (Either.isLeft(r)) throw new Error(`unexpected error: ${r.left.message}`)
  return r.right.options
}

const warnings = (text: string): Array<string> => {
  const r = resolve(text)
  if (Either.isLeft(r)) throw new Error(`unexpected error: ${r.left.message}`)
  return r.right.warnings
}

const failure = (text: string): ConfigError => {
  const r = resolve(text)
  if (Either.isRight(r)) throw new Error("expected an error")
  return r.left
}

describe("an empty file", () => {
  it("gives the embedded defaults, with the file recorded", () => {
    expect(options("")).toEqual({ ...defaultOptions, configFile: "t.conf" })
  })
})

describe("client listener", () => {
  it("follows the port conventions: absent/0 = 4222, -1 = ephemeral", () => {
    expect(options("").port).toBe(4222)
    expect(options("port: 0").port).toBe(4222)
    expect(options("port: -1").port).toBe(0)
    expect(options("port: 5222").port).toBe(5222)
  })

  it("reads listen as host:port or a port, host and net as the host", () => {
    expect(options("listen: 127.0.0.1:4333")).toMatchObject({ host: "127.0.0.1", port: 4333 })
    expect(options("listen: 4334")).toMatchObject({ host: "0.0.0.0", port: 4334 })
    expect(options('listen: "[::1]:4335"')).toMatchObject({ host: "::1", port: 4335 })
    expect(options("listen: -1").port).toBe(0)
    expect(options("host: 10.0.0.1").host).toBe("10.0.0.1")
    expect(options("net: 10.0.0.2").host).toBe("10.0.0.2")
  })

  it("lets host and port win over listen", () => {
    expect(options("listen: 127.0.0.1:4333\nport: 4444\nhost: 10.0.0.1")).toMatchObject({ host: "10.0.0.1", port: 4444 })
  })

  it("rejects ports out of range and malformed listen values", () => {
    expect(failure("port: 70000").detail).toBe("port: expected a port number (-1 to 65535), got 70000")
    expect(failure('port: "abc"').detail).toBe('port: expected a port number (-1 to 65535), got "abc"')
    expect(failure("listen: localhost").detail).toBe('listen: expected "host:port" or a port number, got "localhost"')
  })
})

describe("monitoring", () => {
  it("serves http on 8222 unless told: 0 disables, -1 is ephemeral", () => {
    expect(options("").httpPort).toBe(8222)
    expect(options("http_port: 0").httpPort).toBeUndefined()
    expect(options("http_port: -1").httpPort).toBe(0)
    expect(options("http_port: 8000").httpPort).toBe(8000)
    expect(options("monitor_port: 8001").httpPort).toBe(8001)
  })

  it("reads http as host:port", () => {
    expect(options('http: "127.0.0.1:8333"')).toMatchObject({ httpHost: "127.0.0.1", httpPort: 8333 })
    expect(options("http: 8334")).toMatchObject({ httpHost: "0.0.0.0", httpPort: 8334 })
  })

  it("listens where clients do unless told otherwise (nats-server)", () => {
    expect(options("host: 127.0.0.1").httpHost).toBe("127.0.0.1")
    expect(options('host: 127.0.0.1\nhttp: "10.0.0.1:8222"').httpHost).toBe("10.0.0.1")
  })

  it("serves https instead of http when only https_port is given, with the tls block", () => {
    const o = options("https_port: 8443\ntls { cert_file: c.pem, key_file: k.pem }")
    expect(o.httpsPort).toBe(8443)
    expect(o.httpPort).toBeUndefined()
    expect(o.httpTls).toEqual(o.tls)
    const both = options("http_port: 8222\nhttps_port: 8443\ntls { cert_file: c.pem, key_file: k.pem }")
    expect([both.httpPort, both.httpsPort]).toEqual([8222, 8443])
  })

  it("needs a tls block for https", () => {
    const e = failure("port: 4222\nhttps_port: 8443")
    expect([e.reason, e.line, e.column, e.detail]).toEqual(["Invalid", 2, 1, "https_port: https monitoring needs a tls block (in http { tls {…} } or at the top level)"])
  })

  it("reads http_base_path", () => {
    expect(options('http_base_path: "/mon"').httpBasePath).toBe("/mon")
  })
})

describe("limits", () => {
  it("reads every limit, with aliases, sizes and durations", () => {
    const o = options(`
      max_connections: 100
      max_payload: 2MB
      max_control_line: 8KB
      max_pending: 128MB
      max_subscriptions: 10
      write_deadline: "3s"
      ping_interval: "1m30s"
      ping_max: 5
      max_closed_clients: 7
      no_header_support: true
    `)
    expect(o).toMatchObject({
      maxConnections: 100,
      maxPayload: 2 * MiB,
      maxControlLine: 8192,
      maxPending: 128 * MiB,
      maxSubscriptions: 10,
      writeDeadlineMs: 3000,
      pingIntervalMs: 90_000,
      pingMax: 5,
      maxClosedClients: 7,
      noHeaderSupport: true
    })
    expect(options("max_conn: 5\nmax_subs: 6")).toMatchObject({ maxConnections: 5, maxSubscriptions: 6 })
  })

  it("reads durations as strings, bare words, or whole seconds", () => {
    expect(options("ping_interval: 30s").pingIntervalMs).toBe(30_000)
    expect(options("ping_interval: 2m").pingIntervalMs).toBe(120_000)
    expect(options("ping_interval: 45").pingIntervalMs).toBe(45_000)
    expect(options("write_deadline: 500ms").writeDeadlineMs).toBe(500)
    expect(options('write_deadline: "1h30m"').writeDeadlineMs).toBe(5_400_000)
    expect(options("write_deadline: 1.5").writeDeadlineMs).toBe(1500)
  })

  it("reads busy_poll in microseconds: below a millisecond, 0 to turn it off, 200us by default", () => {
    expect(options("").busyPollUs).toBe(200)
    expect(options("busy_poll: 50us").busyPollUs).toBe(50)
    expect(options("busy_poll: 50µs").busyPollUs).toBe(50)
    expect(options('busy_poll: "1.5ms"').busyPollUs).toBe(1500)
    expect(options("busy_poll: 0").busyPollUs).toBe(0)
    expect(options("busy_poll: 0.0002").busyPollUs).toBe(200)
    expect(failure("busy_poll: fast").detail).toBe(
      'busy_poll: expected a duration (like "200us" or "1ms") or a number of seconds, got "fast"'
    )
  })

  it("accepts a size as a quoted string", () => {
    expect(options('max_payload: "64KB"').maxPayload).toBe(65536)
  })

  it("says what it expected and where", () => {
    const e = failure('port: 4222\nmax_payload: "abc"')
    expect([e.reason, e.file, e.line, e.column]).toEqual(["Invalid", "t.conf", 2, 1])
    expect(e.message).toBe('t.conf:2:1: max_payload: expected a size (like 1MB), got "abc"')
    expect(failure("max_payload: 0").detail).toBe("max_payload: expected a size (like 1MB), got 0")
    expect(failure('ping_interval: "soon"').detail).toBe(
      'ping_interval: expected a duration (like "30s" or "2m") or a number of seconds, got "soon"'
    )
    expect(failure("max_connections: -5").detail).toBe("max_connections: expected a non-negative integer, got -5")
    expect(failure("no_header_support: maybe").detail).toBe('no_header_support: expected true or false, got "maybe"')
    expect(failure("ping_max: [1]").detail).toBe("ping_max: expected a non-negative integer, got a list")
  })

  it("lists every problem, each with its place", () => {
    const e = failure("max_payload: abc\nport: x\nping_max: {}")
    expect(e.message).toBe(
      [
        't.conf:1:1: max_payload: expected a size (like 1MB), got "abc"',
        't.conf:2:1: port: expected a port number (-1 to 65535), got "x"',
        "t.conf:3:1: ping_max: expected a non-negative integer, got a map"
      ].join("\n")
    )
  })

  it("refuses a max_payload larger than max_pending", () => {
    const e = failure("max_pending: 1MB\nmax_payload: 2MB")
    expect([e.line, e.detail]).toEqual([2, "max_payload: 2097152 must not be larger than max_pending (1048576)"])
  })
})

describe("server identity and logging", () => {
  it("reads server_name and its alias name", () => {
    expect(options("server_name: hub-1").serverName).toBe("hub-1")
    expect(options("name: hub-2").serverName).toBe("hub-2")
    expect(failure('server_name: "a b"').detail).toBe('server_name: expected a name without spaces, got "a b"')
  })

  it("reads debug, trace, logtime and log_file (or logfile)", () => {
    expect(options("debug: true\ntrace: on\nlogtime: false\nlog_file: /tmp/s.log").log).toEqual({
      debug: true,
      trace: true,
      logtime: false,
      logFile: "/tmp/s.log"
    })
    expect(options("logfile: a.log").log.logFile).toBe("a.log")
  })

  it("reads system_account", () => {
    expect(options("").systemAccount).toBe("$SYS")
    expect(options("system_account: SYS").systemAccount).toBe("SYS")
  })
})

describe("operations: log rotation, pid and ports files, lame duck, syslog", () => {
  it("reads logtime_utc, log_size_limit and logfile_max_num under their names and aliases", () => {
    expect(options("log_file: s.log\nlogtime_utc: true\nlog_size_limit: 10MB\nlogfile_max_num: 5").log).toMatchObject({
      logFile: "s.log",
      logtimeUtc: true,
      logSizeLimit: 10 * MiB,
      logMaxNum: 5
    })
    expect(options("logfile_size_limit: 1000\nlog_max_num: 2").log).toMatchObject({ logSizeLimit: 1000, logMaxNum: 2 })
    expect(failure("log_size_limit: -5").detail).toBe("log_size_limit: expected a size (like 10MB) or 0, got -5")
  })

  it("reads pid_file (or pidfile) and ports_file_dir", () => {
    expect(options("pid_file: /run/s.pid\nports_file_dir: /tmp")).toMatchObject({ pidFile: "/run/s.pid", portsFileDir: "/tmp" })
    expect(options("pidfile: a.pid").pidFile).toBe("a.pid")
  })

  it("reads the lame duck timings: 2m and 10s by default; at least 30s, and the grace period shorter", () => {
    expect(options("")).toMatchObject({ lameDuckDurationMs: 120_000, lameDuckGracePeriodMs: 10_000 })
    expect(options('lame_duck_duration: "45s"\nlame_duck_grace_period: 0')).toMatchObject({ lameDuckDurationMs: 45_000, lameDuckGracePeriodMs: 0 })
    expect(failure("lame_duck_duration: 10s").message).toBe("t.conf:1:1: lame_duck_duration: must be at least 30s (got 10000ms)")
    expect(failure("lame_duck_duration: 30s\nlame_duck_grace_period: 30s").message).toMatch(
      /^t\.conf:2:1: lame_duck_grace_period: must be shorter than lame_duck_duration/
    )
  })

  it("refuses syslog and remote_syslog unless they are turned off, saying so where they are written", () => {
    expect(failure("port: 1\nsyslog: true").message).toMatch(/^t\.conf:2:1: syslog: is not supported by Switchyard: it logs to stderr/)
    expect(failure('remote_syslog: "udp://127.0.0.1:514"').message).toMatch(/^t\.conf:1:1: remote_syslog: is not supported/)
    expect(options('syslog: false\nremote_syslog: ""').port).toBe(4222)
  })
})

describe("tls", () => {
  it("reads cert, key, ca, verify and timeout (seconds)", () => {
    expect(options("tls { cert_file: c.pem, key_file: k.pem, ca_file: ca.pem, verify: true, timeout: 0.5 }").tls).toEqual({
      certFile: "c.pem",
      keyFile: "k.pem",
      caFile: "ca.pem",
      verify: true,
      timeoutMs: 500
    })
    expect(options("tls { cert_file: c.pem, key_file: k.pem }").tls).toEqual({
      certFile: "c.pem",
      keyFile: "k.pem",
      caFile: undefined,
      verify: false,
      timeoutMs: 2000
    })
  })

  it("requires cert_file and key_file", () => {
    const e = failure("\ntls {\n  cert_file: c.pem\n}")
    expect([e.line, e.column, e.detail]).toEqual([2, 1, "tls: cert_file and key_file are both required"])
  })

  it("warns, with its place, about a nats-server tls key it does not act on", () => {
    expect(warnings("tls { cert_file: c, key_file: k, handshake_first: true }")).toEqual([
      "t.conf:1:34: tls.handshake_first is not implemented by this version and has no effect"
    ])
  })

  it("refuses to start with a tls key whose absence would weaken it (pinned_certs, cipher_suites, …)", () => {
    const e = failure("tls {\n  cert_file: c, key_file: k\n  pinned_certs: [abc]\n  cipher_suites: [a]\n}")
    expect([e.line, e.column]).toEqual([3, 3])
    expect(e.message).toBe(
      "t.conf:3:3: tls.pinned_certs is not implemented by this version, and running without it would be less secure than the configuration asks\n" +
        "t.conf:4:3: tls.cipher_suites is not implemented by this version, and running without it would be less secure than the configuration asks"
    )
  })
})

describe("authorization", () => {
  it("reads a single user, pass alias, token and timeout", () => {
    const o = options("authorization { user: a, pass: b, token: t, timeout: 1.5 }")
    expect(o.authorization).toEqual({
      user: "a",
      password: "b",
      token: "t",
      users: [],
      timeoutMs: 1500,
      defaultPermissions: undefined
    })
    expect(o.authTimeoutMs).toBe(1500)
    expect(options("").authTimeoutMs).toBe(2000)
  })

  it("reads users with permissions in every form", () => {
    const o = options(`
      authorization {
        default_permissions { publish: "public.>", subscribe: ["public.>", "_INBOX.>"] }
        users: [
          { user: a, password: pa }
          { user: b, password: pb, account: B, permissions: {
              publish: { allow: ["orders.>"], deny: "orders.secret" }
              sub: "replies.>"
              allow_responses: { max: 5, expires: "1m" }
          } }
          { nkey: UABC, permissions: { pub: [x, y], allow_responses: true } }
          { user: d, permissions: { allow_responses: false } }
        ]
      }
      accounts { B: {} }
    `)
    const auth = o.authorization!
    expect(auth.defaultPermissions).toEqual({
      publish: { allow: ["public.>"], deny: undefined },
      subscribe: { allow: ["public.>", "_INBOX.>"], deny: undefined },
      allowResponses: undefined
    })
    expect(auth.users).toEqual([
      { user: "a", password: "pa", nkey: undefined, permissions: undefined, account: undefined },
      {
        user: "b",
        password: "pb",
        nkey: undefined,
        account: "B",
        permissions: {
          publish: { allow: ["orders.>"], deny: ["orders.secret"] },
          subscribe: { allow: ["replies.>"], deny: undefined },
          allowResponses: { maxMsgs: 5, expiresMs: 60_000 }
        }
      },
      {
        user: undefined,
        password: undefined,
        nkey: "UABC",
        account: undefined,
        permissions: {
          publish: { allow: ["x", "y"], deny: undefined },
          subscribe: undefined,
          allowResponses: { maxMsgs: 1, expiresMs: 120_000 }
        }
      },
      {
        user: "d",
        password: undefined,
        nkey: undefined,
        account: undefined,
        permissions: { publish: undefined, subscribe: undefined, allowResponses: undefined }
      }
    ])
  })

  it("takes permissions as the default permissions too", () => {
    expect(options("authorization { permissions { publish: a } }").authorization?.defaultPermissions?.publish).toEqual({
      allow: ["a"],
      deny: undefined
    })
  })

  it("reports the path of a bad user entry", () => {
    const e = failure("authorization {\n  users: [\n    { user: a }\n    { password: x }\n  ]\n}")
    expect([e.line, e.column, e.detail]).toEqual([4, 5, "authorization.users[1]: a user needs user or nkey"])
    expect(failure("authorization { users: { user: a } }").detail).toBe(
      "authorization.users: expected a list of users, got a map"
    )
    expect(failure("authorization { permissions { publish: [1] } }").detail).toBe(
      "authorization.permissions.publish[0]: expected a string, got 1"
    )
  })

  it("never shows a password or token value in an error", () => {
    for (const text of [
      "authorization { password: 123456 }",
      "authorization { pass: [hunter2] }",
      "authorization { token: { t: hunter2 } }",
      "authorization { users: [ { user: a, password: 987654 } ] }",
      "accounts { A { users: [ { user: a, password: true } ] } }",
      "mqtt { authorization { token: 555555 } }"
    ]) {
      const e = failure(text)
      expect(e.reason).toBe("Invalid")
      expect(e.message).toMatch(/(password|pass|token): expected a string \(quote the value\)$/)
      expect(e.message).not.toMatch(/123456|hunter2|987654|555555|true/)
    }
  })

  it("checks that a user's account is defined", () => {
    const e = failure("authorization {\n  users: [ { user: a, password: p, account: NOPE } ]\n}")
    expect([e.line, e.column, e.detail]).toEqual([2, 36, 'authorization.users[0]: account "NOPE" is not defined in accounts'])
  })

  it("checks that no_auth_user names a defined user", () => {
    expect(options("authorization { users: [ { user: guest } ] }\nno_auth_user: guest").noAuthUser).toBe("guest")
    expect(options("accounts { A { users: [ { user: guest } ] } }\nno_auth_user: guest").noAuthUser).toBe("guest")
    const e = failure("authorization { users: [ { user: a } ] }\nno_auth_user: nobody")
    expect([e.line, e.detail]).toEqual([2, 'no_auth_user: no user "nobody" is defined in authorization or accounts'])
    expect(failure("mqtt { no_auth_user: ghost }").detail).toBe(
      'mqtt.no_auth_user: no user "ghost" is defined in authorization or accounts'
    )
  })
})

describe("accounts", () => {
  it("reads users, exports, imports and jetstream per account, in order", () => {
    const o = options(`
      accounts {
        ORDERS: {
          users: [ { user: o, password: p } ]
          jetstream: enabled
          exports: [
            { stream: "orders.>" }
            { service: "orders.lookup", accounts: [SHIPPING] }
          ]
        }
        SHIPPING {
          jetstream: { max_mem: 1G }
          imports: [
            { stream: { account: ORDERS, subject: "orders.>" }, prefix: from }
            { service: { account: ORDERS, subject: "orders.lookup" }, to: lookup }
          ]
        }
        EMPTY: {}
      }
    `)
    expect(o.accounts).toEqual([
      {
        name: "ORDERS",
        users: [{ user: "o", password: "p", nkey: undefined, permissions: undefined, account: undefined }],
        jetstream: true,
        exports: [
          { stream: "orders.>", service: undefined, accounts: undefined },
          { stream: undefined, service: "orders.lookup", accounts: ["SHIPPING"] }
        ],
        imports: []
      },
      {
        name: "SHIPPING",
        users: [],
        jetstream: true,
        exports: [],
        imports: [
          { stream: { account: "ORDERS", subject: "orders.>" }, service: undefined, prefix: "from", to: undefined },
          { stream: undefined, service: { account: "ORDERS", subject: "orders.lookup" }, prefix: undefined, to: "lookup" }
        ]
      },
      { name: "EMPTY", users: [], jetstream: false, exports: [], imports: [] }
    ])
  })

  it("skips variables defined among the accounts", () => {
    const r = resolve("accounts {\n  PASS: hidden\n  A { users: [ { user: a, password: $PASS } ] }\n}")
    const o = Either.getOrThrow(r)
    expect(o.options.accounts.map((a) => a.name)).toEqual(["A"])
    expect(o.warnings).toEqual([])
  })

  it("reports bad exports and imports with their path", () => {
    expect(failure("accounts { A { exports: [ { accounts: [B] } ] } }").detail).toBe(
      "accounts.A.exports[0]: an export needs exactly one of stream or service"
    )
    expect(failure("accounts { A { imports: [ { stream: { account: B } } ] } }").detail).toBe(
      "accounts.A.imports[0].stream: account and subject are both required"
    )
    expect(failure("accounts { A: 1 }").detail).toBe("accounts.A: expected a map, got 1")
    expect(failure('accounts { "my acct": { jetstream: maybe } }').detail).toBe(
      'accounts["my acct"].jetstream: expected enabled, disabled or a map of limits, got "maybe"'
    )
  })
})

describe("jetstream", () => {
  it("is on by default with ./data", () => {
    expect(options("").jetstream).toEqual({ storeDir: "./data", maxMemory: -1, maxStorage: -1 })
  })

  it("turns off with disabled, false or off, and on with enabled or true", () => {
    for (const v of ["disabled", "false", "off", "Disabled"]) expect(options(`jetstream: ${v}`).jetstream).toBeUndefined()
    for (const v of ["enabled", "true", "on"]) expect(options(`jetstream: ${v}`).jetstream).toEqual(defaultOptions.jetstream)
    expect(options("jetstream { enabled: false, store_dir: /x }").jetstream).toBeUndefined()
  })

  it("reads store_dir and limits under each of their names", () => {
    expect(options("jetstream { store_dir: /js, max_memory_store: 1GiB, max_file_store: 10GiB }").jetstream).toEqual({
      storeDir: "/js",
      maxMemory: 1024 ** 3,
      maxStorage: 10 * 1024 ** 3
    })
    expect(options("jetstream { max_mem: 1MB, max_file: 2MB }").jetstream).toMatchObject({ maxMemory: MiB, maxStorage: 2 * MiB })
    expect(options("jetstream { max_memory: 1MB, max_storage: -1 }").jetstream).toMatchObject({ maxMemory: MiB, maxStorage: -1 })
    expect(options('jetstream { max_mem_store: "4KB", storedir: /s }').jetstream).toMatchObject({ maxMemory: 4096, storeDir: "/s" })
  })

  it("reads a top-level store_dir", () => {
    expect(options("store_dir: /top").jetstream?.storeDir).toBe("/top")
    expect(options("store_dir: /top\njetstream: disabled").jetstream).toBeUndefined()
    expect(options("store_dir: /top\njetstream { store_dir: /inner }").jetstream?.storeDir).toBe("/inner")
  })

  it("rejects other words", () => {
    expect(failure("jetstream: maybe").detail).toBe('jetstream: expected enabled, disabled, true, false or a map, got "maybe"')
  })

  it("reads sync_interval as a duration or always (the default when absent)", () => {
    expect(options("jetstream {}").jetstream?.syncInterval).toBeUndefined()
    expect(options("jetstream { sync_interval: 2m }").jetstream?.syncInterval).toBe(120_000)
    expect(options('jetstream { sync_interval: "10s" }').jetstream?.syncInterval).toBe(10_000)
    expect(options('jetstream { sync_interval: "1m30s" }').jetstream?.syncInterval).toBe(90_000)
    expect(options("jetstream { sync_interval: 5 }").jetstream?.syncInterval).toBe(5_000)
    expect(options("jetstream { sync_interval: always }").jetstream?.syncInterval).toBe("always")
    expect(options('jetstream { sync_interval: "Always" }').jetstream?.syncInterval).toBe("always")
    expect(warnings("jetstream { sync_interval: 2m }")).toEqual([])
  })

  it("reads a domain (one subject token), warning no more that it is not implemented", () => {
    expect(options("jetstream {}").jetstream?.domain).toBeUndefined()
    expect(options("jetstream { domain: hub-1 }").jetstream?.domain).toBe("hub-1")
    expect(warnings("jetstream { domain: HUB }")).toEqual([])
  })

  it("rejects a domain that is not a single subject token, saying where", () => {
    const expected = "expected a single subject token (no '.', '*', '>' or spaces)"
    expect(failure("jetstream {\n  domain: a.b\n}").message).toBe(`t.conf:2:3: jetstream.domain: ${expected}, got "a.b"`)
    expect(failure('jetstream { domain: "a b" }').detail).toBe(`jetstream.domain: ${expected}, got "a b"`)
    expect(failure('jetstream { domain: "" }').detail).toBe(`jetstream.domain: ${expected}, got ""`)
    expect(failure('jetstream { domain: ">" }').detail).toBe(`jetstream.domain: ${expected}, got ">"`)
    expect(failure("jetstream { domain: 5 }").detail).toBe(`jetstream.domain: ${expected}, got 5`)
  })

  it("rejects a sync_interval that is not a positive duration or always, saying where", () => {
    const expected = 'expected a positive duration (like "2m" or "10s") or always'
    const e = failure("jetstream {\n  sync_interval: sometimes\n}")
    expect(e.message).toBe(`t.conf:2:3: jetstream.sync_interval: ${expected}, got "sometimes"`)
    expect(failure("jetstream { sync_interval: 0 }").detail).toBe(`jetstream.sync_interval: ${expected}, got 0`)
    expect(failure('jetstream { sync_interval: "-1s" }').detail).toBe(`jetstream.sync_interval: ${expected}, got "-1s"`)
    expect(failure("jetstream { sync_interval: 2d }").detail).toContain(`jetstream.sync_interval: ${expected}`)
    expect(failure("jetstream { sync_interval: [1] }").detail).toBe(`jetstream.sync_interval: ${expected}, got a list`)
  })
})

describe("mqtt", () => {
  it("is on 1883 without a block", () => {
    expect(options("").mqtt).toEqual(defaultOptions.mqtt)
  })

  it("turns off with port 0, false or disabled", () => {
    expect(options("mqtt { port: 0 }").mqtt).toBeUndefined()
    expect(options("mqtt: false").mqtt).toBeUndefined()
    expect(options("mqtt: disabled").mqtt).toBeUndefined()
    expect(options("mqtt: enabled").mqtt).toEqual(defaultOptions.mqtt)
  })

  it("reads every key", () => {
    const o = options(`
      authorization { users: [ { user: guest } ] }
      mqtt {
        host: 127.0.0.1
        port: 1884
        ack_wait: "1m"
        max_ack_pending: 100
        max_topic_levels: 50
        max_queued_messages: 5000
        max_queued_bytes: 64MB
        tls { cert_file: c, key_file: k }
        authorization { user: m, password: p, timeout: 2 }
        no_auth_user: guest
      }
    `)
    expect(o.mqtt).toEqual({
      host: "127.0.0.1",
      port: 1884,
      ackWaitMs: 60_000,
      maxAckPending: 100,
      maxTopicLevels: 50,
      maxQueuedMessages: 5000,
      maxQueuedBytes: 64 * 1024 * 1024,
      tls: { certFile: "c", keyFile: "k", caFile: undefined, verify: false, timeoutMs: 2000 },
      authorization: { user: "m", password: "p", token: undefined, users: [], timeoutMs: 2000, defaultPermissions: undefined },
      noAuthUser: "guest"
    })
  })

  it("max_queued_bytes -1 means no bound; a bad max_queued_messages is an error with its place", () => {
    expect(options("mqtt { max_queued_bytes: -1 }").mqtt?.maxQueuedBytes).toBe(0)
    expect(options("mqtt {}").mqtt).toMatchObject({ maxQueuedMessages: 65_536, maxQueuedBytes: 1024 * 1024 * 1024 })
    expect(() => options("mqtt { max_queued_messages: 0 }")).toThrow(/max_queued_messages/)
  })

  it("reads tls with verify, ca_file and timeout, and a token-only authorization", () => {
    const m = options(`mqtt {
      tls { cert_file: c, key_file: k, ca_file: ca, verify: true, timeout: "1s" }
      authorization { token: "t0k3n" }
    }`).mqtt
    expect(m?.tls).toEqual({ certFile: "c", keyFile: "k", caFile: "ca", verify: true, timeoutMs: 1000 })
    expect(m?.authorization).toMatchObject({ user: undefined, token: "t0k3n", users: [] })
    expect(failure("mqtt { tls { key_file: k } }").detail).toBe("mqtt.tls: cert_file and key_file are both required")
  })

  it("reads listen, an ephemeral port and a host alone", () => {
    expect(options('mqtt { listen: "127.0.0.1:1999" }').mqtt).toMatchObject({ host: "127.0.0.1", port: 1999 })
    expect(options("mqtt { port: -1 }").mqtt?.port).toBe(0)
    expect(options("mqtt { host: 10.0.0.1 }").mqtt).toMatchObject({ host: "10.0.0.1", port: 1883 })
  })

  it("bounds max_ack_pending", () => {
    expect(failure("mqtt { max_ack_pending: 70000 }").detail).toBe(
      "mqtt.max_ack_pending: expected an integer from 1 to 65535, got 70000"
    )
  })

  it("bounds max_topic_levels (default 200, as mosquitto)", () => {
    expect(options("mqtt {}").mqtt?.maxTopicLevels).toBe(200)
    expect(failure("mqtt { max_topic_levels: 0 }").detail).toBe(
      "mqtt.max_topic_levels: expected an integer from 1 to 32768, got 0"
    )
    expect(failure("mqtt { max_topic_levels: 40000 }").detail).toMatch(/expected an integer from 1 to 32768/)
  })

  it("reads protocol_versions (MQTT 3.1.1 only unless it says 5), in mqtt and websocket", () => {
    expect(options("mqtt {}").mqtt?.protocolVersions).toBeUndefined()
    expect(options("mqtt { protocol_versions: [4, 5] }").mqtt?.protocolVersions).toEqual([4, 5])
    expect(options("mqtt { protocol_versions: [5, 4] }").mqtt?.protocolVersions).toEqual([4, 5])
    expect(options("mqtt { protocol_versions: [5] }").mqtt?.protocolVersions).toEqual([5])
    const ws = options("websocket { port: 8080, no_tls: true, protocol_versions: [4, 5] }").websocket
    expect(ws?.protocolVersions).toEqual([4, 5])
    // each listener opts in on its own
    expect(options("mqtt { protocol_versions: [4, 5] }\nwebsocket { port: 8080, no_tls: true }").websocket?.protocolVersions).toBeUndefined()
  })

  it("reads receive_maximum (1 to 65535) and topic_alias_maximum (0 to 65535) for MQTT 5.0 clients", () => {
    const m = options("mqtt { receive_maximum: 100, topic_alias_maximum: 0 }").mqtt
    expect([m?.receiveMaximum, m?.topicAliasMaximum]).toEqual([100, 0])
    expect(options("mqtt {}").mqtt?.topicAliasMaximum).toBeUndefined()
    expect(failure("mqtt { receive_maximum: 0 }").detail).toBe("mqtt.receive_maximum: expected an integer from 1 to 65535, got 0")
    expect(failure("mqtt { topic_alias_maximum: 70000 }").detail).toBe("mqtt.topic_alias_maximum: expected an integer from 0 to 65535, got 70000")
  })

  it("reads max_keepalive (seconds) and response_information (a topic prefix, or false) for MQTT 5.0 clients", () => {
    const m = options('mqtt { max_keepalive: 120, response_information: "replies/here" }').mqtt
    expect([m?.maxKeepAlive, m?.responseInformation]).toEqual([120, "replies/here"])
    expect(options("mqtt { response_information: false }").mqtt?.responseInformation).toBe("")
    expect(options("mqtt {}").mqtt?.maxKeepAlive).toBeUndefined()
    expect(failure("mqtt { max_keepalive: 0 }").detail).toBe("mqtt.max_keepalive: expected an integer from 1 to 65535 (seconds), got 0")
    for (const bad of ['"a/+"', '"a/"', '""', '"a/#"']) {
      expect(failure(`mqtt { response_information: ${bad} }`).detail).toMatch(/^mqtt.response_information: expected a topic name without wildcards, or false/)
    }
  })

  it("refuses bad protocol_versions with the place of the value", () => {
    const three = failure("mqtt {\n  protocol_versions: [4, 3]\n}")
    expect(three.detail).toBe("mqtt.protocol_versions[1]: expected 4 (MQTT 3.1.1) or 5 (MQTT 5.0), got 3")
    expect([three.line, three.column]).toEqual([2, 26])
    expect(failure("mqtt { protocol_versions: [] }").detail).toBe("mqtt.protocol_versions: expected at least one MQTT protocol level (4, 5)")
    expect(failure("mqtt { protocol_versions: [5, 5] }").detail).toBe("mqtt.protocol_versions: expected each protocol level once, got [5, 5]")
    expect(failure("mqtt { protocol_versions: 5 }").detail).toBe("mqtt.protocol_versions: expected a list of MQTT protocol levels like [4, 5], got 5")
    expect(failure("websocket { port: 1, no_tls: true, protocol_versions: [\"5\"] }").detail).toMatch(/^websocket.protocol_versions\[0\]: expected 4 \(MQTT 3.1.1\) or 5/)
  })
})

describe("websocket", () => {
  it("is off without a block", () => {
    expect(options("").websocket).toBeUndefined()
  })

  it("reads a block with a port", () => {
    expect(options("websocket { port: 8080, no_tls: true, compression: true, host: 127.0.0.1 }").websocket).toEqual({
      host: "127.0.0.1",
      port: 8080,
      noTls: true,
      tls: undefined,
      compression: true
    })
    expect(options("ws { listen: 0.0.0.0:-1, no_tls: true }").websocket?.port).toBe(0)
    expect(options("websocket { port: 443, tls { cert_file: c, key_file: k } }").websocket?.tls?.certFile).toBe("c")
  })

  it("needs tls unless no_tls is set (nats-server)", () => {
    expect(failure("websocket { port: 8080 }").detail).toBe("websocket: tls is required unless no_tls is true")
  })

  it("reads tls with client verification and the handshake timeout", () => {
    const w = options(`websocket {
      port: 8443
      tls { cert_file: c, key_file: k, ca_file: ca, verify: true, timeout: 0.5 }
      handshake_timeout: "3s"
    }`).websocket
    expect(w).toMatchObject({
      port: 8443,
      noTls: false,
      tls: { certFile: "c", keyFile: "k", caFile: "ca", verify: true, timeoutMs: 500 },
      handshakeTimeoutMs: 3000
    })
    expect(options("websocket { port: 1, no_tls: true }").websocket?.handshakeTimeoutMs).toBeUndefined()
  })

  it("needs both cert_file and key_file in its tls block", () => {
    expect(failure("websocket { port: 8443, tls { cert_file: c } }").detail).toBe(
      "websocket.tls: cert_file and key_file are both required"
    )
  })

  it("warns about nats-server's websocket keys it does not act on, and about unknown ones", () => {
    expect(warnings("websocket { port: 1, no_tls: true, same_origin: true, jwt_cookie: c }")).toEqual([
      "t.conf:1:36: websocket.same_origin is not implemented by this version and has no effect",
      "t.conf:1:55: websocket.jwt_cookie is not implemented by this version and has no effect"
    ])
    expect(warnings("websocket { port: 1, no_tls: true, path: /x }")).toEqual([
      't.conf:1:36: unknown key "path" in websocket'
    ])
  })

  it("stays off with port 0, and warns when no port is given", () => {
    expect(options("websocket { port: 0 }").websocket).toBeUndefined()
    const r = Either.getOrThrow(resolve("websocket { no_tls: true }"))
    expect(r.options.websocket).toBeUndefined()
    expect(r.warnings).toEqual(["t.conf:1:1: websocket: no port is set, so the WebSocket listener stays off"])
  })
})

describe("cluster (routes)", () => {
  it("is off without a block; a block takes name, listen, routes, advertise and credentials", () => {
    expect(options("").cluster).toBeUndefined()
    const o = options(`cluster {
      name: C1
      listen: 127.0.0.1:6333
      routes: [ nats-route://ruser:s3cret@10.0.0.2:6222, "nats://10.0.0.3:6222" ]
      cluster_advertise: "203.0.113.9:6333"
      no_advertise: true
      connect_retries: 5
      authorization { user: ruser, password: s3cret, timeout: 3, permissions { import: "a.>", export: { deny: "secret.>" } } }
    }`)
    expect(o.cluster).toEqual({
      name: "C1",
      host: "127.0.0.1",
      port: 6333,
      advertise: "203.0.113.9:6333",
      noAdvertise: true,
      routes: ["nats-route://ruser:s3cret@10.0.0.2:6222", "nats://10.0.0.3:6222"],
      authorization: {
        user: "ruser",
        password: "s3cret",
        timeoutMs: 3000,
        import: { allow: ["a.>"], deny: undefined },
        export: { allow: undefined, deny: ["secret.>"] }
      },
      connectRetries: 5
    })
  })

  it("follows the port conventions (absent/0 = 6222, -1 = ephemeral) and the client host", () => {
    expect(options("host: 127.0.0.2\ncluster { name: c }").cluster).toMatchObject({ host: "127.0.0.2", port: 6222, name: "c", routes: [] })
    expect(options("cluster { port: -1 }").cluster).toMatchObject({ port: 0, name: "" })
    expect(options("cluster { host: 127.0.0.1, port: 7000 }").cluster).toMatchObject({ host: "127.0.0.1", port: 7000 })
  })

  it("refuses, at its place, what routes do not do yet instead of ignoring it", () => {
    const cases: ReadonlyArray<[string, RegExp]> = [
      ["cluster {\n  tls { cert_file: a }\n}", /t\.conf:2:3: .*cert_file and key_file are both required/],
      ["cluster {\n  pool_size: 3\n}", /t\.conf:2:3: .*route pooling is not supported/],
      ["cluster {\n  accounts: [A]\n}", /t\.conf:2:3: .*per account is not supported/],
      ["cluster {\n  compression: s2_auto\n}", /t\.conf:2:3: .*compression is not supported/]
    ]
    for (const [text, re] of cases) expect(`${failure(text).file}:${failure(text).line}:${failure(text).column}: ${failure(text).message}`).toMatch(re)
    // What turns those off is accepted, as nats-server files write it.
    expect(options("cluster { pool_size: -1, compression: off }").cluster).toBeDefined()
  })

  it("reads route permissions with the user permissions decoder: publish/subscribe are import/export; allow_responses is refused", () => {
    expect(options("cluster { permissions { publish: a.>, sub: { deny: b.> } } }").cluster?.authorization).toMatchObject({
      import: { allow: ["a.>"], deny: undefined },
      export: { allow: undefined, deny: ["b.>"] }
    })
    // And a user's permissions take nats-server's import/export words too.
    expect(options("authorization { users: [ { user: u, password: p, permissions: { import: x.>, export: y.> } } ] }").authorization?.users[0].permissions).toMatchObject({
      publish: { allow: ["x.>"] },
      subscribe: { allow: ["y.>"] }
    })
    const e = failure("cluster {\n  authorization {\n    permissions { import: a, allow_responses: true }\n  }\n}")
    expect(`${e.line}:${e.column}: ${e.message}`).toMatch(/^3:5: .*allow_responses has no meaning on routes/)
  })

  it("takes a tls block for routes, with verify and the handshake timeout", () => {
    expect(options("cluster { tls { cert_file: c.pem, key_file: k.pem, ca_file: ca.pem, verify: true, timeout: 0.5 } }").cluster?.tls).toEqual({
      certFile: "c.pem",
      keyFile: "k.pem",
      caFile: "ca.pem",
      verify: true,
      timeoutMs: 500
    })
  })

  it("refuses a route URL it cannot use, without echoing it (it may carry a password)", () => {
    for (const bad of ["tls://u:pw@h:6222", "nats-route://h", "h:6222"]) {
      const e = failure(`cluster { routes: [ "${bad}" ] }`)
      expect(e.message).toMatch(/route URL/)
      expect(e.message).not.toContain("pw")
    }
  })
})

describe("leafnodes", () => {
  it("is off without a block; takes a listener, users bound to accounts, and remotes with their local account", () => {
    expect(options("").leafnodes).toBeUndefined()
    const o = options(`accounts { ACC { users: [ { user: a, password: a } ] }, EDGE {} }
leafnodes {
  listen: 127.0.0.1:7433
  advertise: "203.0.113.9:7433"
  no_advertise: true
  reconnect: "2s"
  authorization { timeout: 3, users: [ { user: l1, password: p1, account: ACC }, { user: l2, password: p2 } ] }
  remotes: [
    { url: "nats-leaf://u:secret@hub.example:7422", account: EDGE }
    { urls: [ "nats://10.0.0.1", "nats-leaf://10.0.0.2:7000" ] }
  ]
}`)
    expect(o.leafnodes).toEqual({
      host: "127.0.0.1",
      port: 7433,
      advertise: "203.0.113.9:7433",
      noAdvertise: true,
      reconnectMs: 2000,
      authorization: {
        user: undefined,
        password: undefined,
        timeoutMs: 3000,
        account: undefined,
        users: [{ user: "l1", password: "p1", account: "ACC" }, { user: "l2", password: "p2", account: undefined }]
      },
      tls: undefined,
      remotes: [
        { urls: ["nats-leaf://u:secret@hub.example:7422"], account: "EDGE", tls: undefined, credentials: undefined },
        { urls: ["nats://10.0.0.1", "nats-leaf://10.0.0.2:7000"], account: "$G", tls: undefined, credentials: undefined }
      ]
    })
    // TLS: the listener's block, and a remote's client side (a certificate optional) with tls:// URLs; credentials files.
    const t = options(`leafnodes {
  port: 7433
  tls { cert_file: c.pem, key_file: k.pem, verify: true }
  remotes: [ { url: "tls://hub:7422", tls { ca_file: ca.pem, timeout: 1 } }, { url: "nats-leaf://hub:7423", credentials: "/u.creds" } ]
}`).leafnodes
    // WebSocket remotes: ws:// (port 80 by default) and wss:// (443, TLS required).
    expect(["ws://h", "wss://h", "ws://h:8080"].map((u) => parseLeafUrl(u))).toMatchObject([
      { host: "h", port: 80, ws: true, tls: false },
      { host: "h", port: 443, ws: true, tls: true },
      { host: "h", port: 8080, ws: true, tls: false }
    ])
    expect(t?.tls).toEqual({ certFile: "c.pem", keyFile: "k.pem", caFile: undefined, verify: true, timeoutMs: 2000 })
    expect(t?.remotes).toEqual([
      { urls: ["tls://hub:7422"], account: "$G", tls: { certFile: undefined, keyFile: undefined, caFile: "ca.pem", timeoutMs: 1000 }, credentials: undefined },
      { urls: ["nats-leaf://hub:7423"], account: "$G", tls: undefined, credentials: "/u.creds" }
    ])
    // No port: remotes only, no listener; -1: a port the system picks; the client host by default.
    expect(options("leafnodes { remotes: [ { url: nats-leaf://h:1 } ] }").leafnodes).toMatchObject({ port: undefined })
    expect(options("host: 127.0.0.2\nleafnodes { port: -1 }").leafnodes).toMatchObject({ host: "127.0.0.2", port: 0 })
  })

  it("refuses, at its place, what leaf connections do not do yet instead of ignoring it", () => {
    const cases: ReadonlyArray<[string, RegExp]> = [
      ["leafnodes {\n  remotes: [\n    { url: nats-leaf://u:p@h:1, credentials: /x.creds }\n  ]\n}", /^3:5: .*either credentials or user:password/],
      ["leafnodes {\n  remotes: [\n    { url: nats-leaf://h:1, tls: { cert_file: a } }\n  ]\n}", /^3:29: .*cert_file and key_file go together/],
      ["leafnodes {\n  remotes: [\n    { url: nats-leaf://h:1, nkey: SUA }\n  ]\n}", /^3:29: .*nkey seed on leaf-node remotes/],
      ["leafnodes {\n  remotes: [ { url: \"ws://h:1\", ws_compression: true } ]\n}", /^2:33: .*compression on WebSocket leaf-node connections/],
      ["leafnodes {\n  remotes: [ { url: nats-leaf://h:1, hub: true } ]\n}", /^2:38: .*hub: true/],
      ["leafnodes {\n  compression: s2_auto\n}", /^2:3: .*compression is not supported/],
      ["leafnodes {\n  authorization { user: a, users: [ { user: b } ] }\n}", /^2:3: .*either user\/password or users/],
      ["leafnodes {\n  remotes: [ {} ]\n}", /^2:14: .*a remote needs url or urls/]
    ]
    for (const [text, re] of cases) {
      const e = failure(text)
      expect(`${e.line}:${e.column}: ${e.message}`).toMatch(re)
    }
  })

  it("refuses a remote URL it cannot use without echoing it (it may carry a password)", () => {
    for (const bad of ["http://u:pw@h:7422", "nats-route://u:pw@h:7422", "h:7422"]) {
      const e = failure(`leafnodes { remotes: [ { url: "${bad}" } ] }`)
      expect(e.message).toMatch(/leaf URL/)
      expect(e.message).not.toContain("pw")
    }
  })

  it("refuses accounts nobody defined, at their place", () => {
    expect(failure("leafnodes {\n  remotes: [ { url: nats-leaf://h:1, account: NOPE } ]\n}").message).toMatch(/leafnodes.remotes\[0\]: account "NOPE" is not defined/)
    expect(failure("leafnodes { authorization { users: [ { user: u, account: NOPE } ] } }").message).toMatch(/leafnodes.authorization.users\[0\]: account "NOPE"/)
    // A server with routes may have leaf nodes too.
    expect(options("cluster { name: C }\nleafnodes { port: -1 }").leafnodes).toMatchObject({ port: 0 })
  })
})

describe("unknown keys", () => {
  it("warns with the block path and position", () => {
    expect(
      warnings(`
port: 4222
colour: blue
authorization {
  users: [ { user: a, shoe: 42 } ]
}
accounts { A { users: [ { user: b, hat: 1 } ], nope: 1 } }
mqtt { colour: red }
tls { cert_file: c, key_file: k, extra: 1 }
jetstream { store_dir: x, turbo: true }
`)
    ).toEqual([
      't.conf:3:1: unknown key "colour" in the top level',
      't.conf:5:23: unknown key "shoe" in authorization.users[0]',
      't.conf:7:36: unknown key "hat" in accounts.A.users[0]',
      't.conf:7:48: unknown key "nope" in accounts.A',
      't.conf:8:8: unknown key "colour" in mqtt',
      't.conf:9:34: unknown key "extra" in tls',
      't.conf:10:27: unknown key "turbo" in jetstream'
    ])
  })

  it("warns about every nats-server key this version does not act on, each at its place", () => {
    const keys = notImplementedKeys.top.filter((k) => !(refusedKeys.top ?? []).includes(k))
    expect(warnings(keys.map((k) => `${k}: 1`).join("\n"))).toEqual(
      keys.map((k, i) => `t.conf:${i + 1}:1: ${k} is not implemented by this version and has no effect`)
    )
    expect(warnings("gateway { name: c, listen: 0.0.0.0:7222, gateways: [ { name: d, url: nats://a:7222 } ] }")).toEqual([
      "t.conf:1:1: gateway is not implemented by this version and has no effect"
    ])
    // Routes are implemented: a cluster block decodes without a warning.
    expect(warnings("cluster { name: c, listen: 0.0.0.0:6222, routes: [ nats://a:6222 ] }")).toEqual([])
    // Implemented now, so they left the list; syslog is refused rather than ignored.
    for (const k of ["pid_file", "ports_file_dir", "lame_duck_duration", "log_size_limit", "logfile_max_num", "syslog", "remote_syslog"]) {
      expect(notImplementedKeys.top).not.toContain(k)
    }
  })

  it("refuses the keys whose absence would leave the server open (operator, resolver, …)", () => {
    for (const k of refusedKeys.top ?? []) {
      expect(failure(`port: 4222\n${k}: x`).message).toBe(
        `t.conf:2:1: ${k} is not implemented by this version, and running without it would be less secure than the configuration asks`
      )
    }
    expect(failure("authorization { users: [ { user: a, allowed_connection_types: [MQTT] } ] }").message).toContain(
      "authorization.users[0].allowed_connection_types is not implemented by this version"
    )
  })

  it("says account JetStream limits are not enforced", () => {
    expect(warnings("accounts { A { jetstream { max_memory: 1GB, max_streams: 3 } } }")).toEqual([
      "t.conf:1:28: accounts.A.jetstream.max_memory: account JetStream limits are not enforced by this version",
      "t.conf:1:45: accounts.A.jetstream.max_streams: account JetStream limits are not enforced by this version"
    ])
    expect(warnings("accounts { A { jetstream: enabled } }")).toEqual([])
  })

  it("does not warn about keys used as variables", () => {
    expect(warnings("TOKEN: abc\nauthorization { token: $TOKEN }\nUNUSED: 1")).toEqual([
      't.conf:3:1: unknown key "UNUSED" in the top level'
    ])
  })
})

describe("helpers", () => {
  it("formats paths", () => {
    expect(formatPath([])).toBe("the top level")
    expect(formatPath(["a", "b", 0, "c"])).toBe("a.b[0].c")
    expect(formatPath(["accounts", "my acct"])).toBe('accounts["my acct"]')
  })

  it("parses Go durations", () => {
    expect(parseDurationText("1h30m")).toBe(5_400_000)
    expect(parseDurationText("1.5s")).toBe(1500)
    expect(parseDurationText("250ms")).toBe(250)
    expect(parseDurationText("100us")).toBe(0)
    expect(parseDurationText("0")).toBe(0)
    expect(parseDurationText("10")).toBeUndefined()
    expect(parseDurationText("1d")).toBeUndefined()
    expect(parseDurationText("")).toBeUndefined()
  })

  it("parses host:port", () => {
    expect(parseHostPort("127.0.0.1:4222")).toEqual({ host: "127.0.0.1", port: 4222 })
    expect(parseHostPort(":4222")).toEqual({ host: undefined, port: 4222 })
    expect(parseHostPort("4222")).toEqual({ host: undefined, port: 4222 })
    expect(parseHostPort("[::]:4222")).toEqual({ host: "::", port: 4222 })
    expect(parseHostPort("host")).toBeUndefined()
    expect(parseHostPort("host:99999")).toBeUndefined()
  })
})

describe("http block (the spec's form for HTTPS monitoring)", () => {
  it("takes host, port and a tls block of its own for https_port", async () => {
    const { loadOptions, ConfigFiles } = await import("../../src/config/load.js")
    const { Effect } = await import("effect")
    const { readFileSync } = await import("node:fs")
    const pem = (f: string) => readFileSync(`test/fixtures/config/certs/${f}`, "utf8")
    const conf = 'http { host: "127.0.0.1", port: 8300, tls { cert_file: "c.pem", key_file: "k.pem" } }\nhttps_port: 8443\n'
    const loaded = await Effect.runPromise(
      loadOptions({ configFile: "/x.conf", env: {} }).pipe(
        Effect.provide(ConfigFiles.layerMemory({ "/x.conf": conf, "c.pem": pem("server.pem"), "k.pem": pem("server-key.pem") }))
      )
    )
    expect(loaded.options.httpHost).toBe("127.0.0.1")
    expect(loaded.options.httpPort).toBe(8300)
    expect(loaded.options.httpsPort).toBe(8443)
    expect(loaded.options.httpTls?.certFile).toBe("c.pem")
    expect(loaded.options.tls).toBeUndefined()
    expect(loaded.warnings).toEqual([])
  })
})
