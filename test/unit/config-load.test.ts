// Loading end to end: flags, the file they name (from disk or memory), the
// environment and the defaults; precedence, strict mode, and secrets kept out
// of every message.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { ConfigFiles, load, loadOptions, type LoadOutcome } from "../../src/config/load.js"
import { defaultOptions, MiB, type ServerOptions } from "../../src/config/options.js"

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "config")
const fixture = (name: string) => path.join(fixtures, name)

const runOptions = (outcome: LoadOutcome): ServerOptions => {
  if (outcome.kind !== "run") throw new Error(`unexpected ${outcome.kind}`)
  return outcome.options
}

describe("load from disk", () => {
  it.effect("with no flags runs the embedded defaults", () =>
    Effect.gen(function* () {
      const outcome = yield* load([], {})
      expect(outcome).toEqual({
        kind: "run",
        options: defaultOptions,
        warnings: [],
        checkOnly: false,
        signal: undefined,
        source: { configFile: undefined, overrides: {}, env: {}, base: defaultOptions }
      })
    }).pipe(Effect.provide(ConfigFiles.layerNode))
  )

  it.effect("reads a full nats-server style configuration", () =>
    Effect.gen(function* () {
      const outcome = yield* load(["-c", fixture("full.conf")], {})
      if (outcome.kind !== "run") throw new Error("expected run")
      expect(outcome.warnings).toEqual([])
      const o = outcome.options
      expect(o).toMatchObject({
        configFile: fixture("full.conf"),
        serverName: "switchyard-1",
        host: "127.0.0.1",
        port: 4333,
        httpHost: "127.0.0.1",
        httpPort: 8333,
        httpsPort: undefined,
        httpBasePath: "/monitor",
        maxConnections: 1000,
        maxPayload: 2 * MiB,
        maxControlLine: 8192,
        maxPending: 128 * MiB,
        maxSubscriptions: 500,
        writeDeadlineMs: 5000,
        pingIntervalMs: 30_000,
        pingMax: 3,
        authTimeoutMs: 3000,
        maxClosedClients: 100,
        noHeaderSupport: false,
        noAuthUser: "app",
        systemAccount: "SYS",
        log: { debug: true, trace: false, logtime: false, logFile: "/var/log/switchyard.log" },
        tls: { certFile: "test/fixtures/config/certs/server.pem", keyFile: "test/fixtures/config/certs/server-key.pem", caFile: "test/fixtures/config/certs/ca.pem", verify: true, timeoutMs: 1500 },
        jetstream: { storeDir: "/var/lib/switchyard", maxMemory: 1024 ** 3, maxStorage: 10 * 1024 ** 3 },
        mqtt: { host: "0.0.0.0", port: 1884, ackWaitMs: 60_000, maxAckPending: 100, noAuthUser: "svc" },
        // no host of its own: where clients are (the file's host)
        websocket: { host: "127.0.0.1", port: 8080, noTls: true, compression: true, tls: undefined }
      })
      const users = o.authorization!.users
      expect(users.map((u) => u.user)).toEqual(["admin", "app", "svc"])
      expect(users[0].password).toMatch(/^\$2a\$11\$/)
      expect(users[1].password).toBe("s3cret-app")
      expect(users[1].permissions).toEqual({
        publish: { allow: ["orders.>"], deny: ["orders.secret"] },
        subscribe: { allow: ["replies.>"], deny: undefined },
        allowResponses: { maxMsgs: 5, expiresMs: 60_000 }
      })
      expect(o.authorization!.defaultPermissions?.subscribe?.allow).toEqual(["public.>", "_INBOX.>"])
      expect(o.accounts.map((a) => [a.name, a.users.length, a.exports.length, a.imports.length, a.jetstream])).toEqual([
        ["SYS", 1, 0, 0, false],
        ["ORDERS", 1, 2, 0, true],
        ["SHIPPING", 1, 0, 2, true]
      ])
    }).pipe(Effect.provide(ConfigFiles.layerNode))
  )

  it.effect("resolves includes from disk", () =>
    Effect.gen(function* () {
      const o = runOptions(yield* load(["--config", fixture("main.conf")], {}))
      expect(o).toMatchObject({ port: 4300, maxPayload: 512 * 1024, maxConnections: 50 })
      expect(o.authorization?.users.map((u) => [u.user, u.password])).toEqual([
        ["alice", "alice-secret"],
        ["bob", "bob-secret"]
      ])
    }).pipe(Effect.provide(ConfigFiles.layerNode))
  )

  it.effect("fails when the file does not exist", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip(load(["-c", fixture("nope.conf")], {}))
      expect([e.reason, e.message]).toEqual(["File", `cannot read configuration file "${fixture("nope.conf")}"`])
    }).pipe(Effect.provide(ConfigFiles.layerNode))
  )

  it.effect("reports an include error from disk with its place", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip(load(["-c", fixture("bad-include.conf")], {}))
      expect([e.reason, e.file, e.line]).toEqual(["Include", fixture("bad-include.conf"), 2])
    }).pipe(Effect.provide(ConfigFiles.layerNode))
  )
})

describe("a file or flags run only what they name (as nats-server)", () => {
  const files = ConfigFiles.layerMemory({
    "/plain.conf": "port: 4333\nhttp: 8333\n",
    "/sd.conf": "port: 4333\nstore_dir: /srv/js\n",
    "/mqtt.conf": "host: 127.0.0.1\nmqtt { port: 1884 }\njetstream: enabled\n"
  })

  it.effect("a file with port and http starts no MQTT, no JetStream, and monitoring only where it says", () =>
    Effect.gen(function* () {
      const o = runOptions(yield* load(["-c", "/plain.conf"], {}))
      expect([o.port, o.httpPort, o.mqtt, o.jetstream, o.websocket]).toEqual([4333, 8333, undefined, undefined, undefined])
    }).pipe(Effect.provide(files))
  )

  it.effect("a reload reads the file again from the same base: only what is named", () =>
    Effect.gen(function* () {
      const outcome = yield* load(["-c", "/plain.conf"], {})
      if (outcome.kind !== "run") throw new Error("expected run")
      const again = yield* loadOptions(outcome.source)
      expect([again.options.mqtt, again.options.jetstream, again.options.httpPort]).toEqual([undefined, undefined, 8333])
    }).pipe(Effect.provide(files))
  )

  it.effect("any flag alone (-p, -m, even -D) starts the client listener and what the flags name", () =>
    Effect.gen(function* () {
      const pm = runOptions(yield* load(["-p", "4555", "-m", "8555"], {}))
      expect([pm.port, pm.httpPort, pm.mqtt, pm.jetstream]).toEqual([4555, 8555, undefined, undefined])
      const d = runOptions(yield* load(["-D"], {}))
      expect([d.port, d.httpPort, d.mqtt, d.jetstream, d.log.debug]).toEqual([4222, undefined, undefined, undefined, true])
      const js = runOptions(yield* load(["-js"], {}))
      expect(js.jetstream).toEqual({ storeDir: "./data", maxMemory: -1, maxStorage: -1 })
      const mqtt = runOptions(yield* load(["--mqtt_port", "1884"], {}))
      expect(mqtt.mqtt).toMatchObject({ host: "0.0.0.0", port: 1884 })
    }).pipe(Effect.provide(files))
  )

  it.effect("cluster flags need a cluster: --cluster or a cluster block", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip(load(["--routes", "nats-route://127.0.0.1:6222"], {}))
      expect(e.message).toMatch(/need a cluster: --cluster <url> or a cluster block/)
      const flags = runOptions(yield* load(["--cluster", "nats://127.0.0.1:-1", "--routes", "nats-route://127.0.0.1:6222", "--cluster_name", "C"], {}))
      expect(flags.cluster).toMatchObject({ host: "127.0.0.1", port: 0, name: "C", routes: ["nats-route://127.0.0.1:6222"] })
    }).pipe(Effect.provide(files))
  )

  it.effect("MQTT binds the client host unless its block names one", () =>
    Effect.gen(function* () {
      const flags = runOptions(yield* load(["-a", "127.0.0.1", "--mqtt_port", "1884", "-m", "8222"], {}))
      expect([flags.mqtt?.host, flags.httpHost]).toEqual(["127.0.0.1", "127.0.0.1"])
      const file = runOptions(yield* load(["-c", "/mqtt.conf"], {}))
      expect([file.mqtt?.host, file.mqtt?.port, file.jetstream?.storeDir]).toEqual(["127.0.0.1", 1884, "./data"])
      const own = runOptions(yield* load(["-c", "/mqtt.conf", "-a", "10.1.2.3"], {}))
      expect(own.mqtt?.host).toBe("10.1.2.3")
    }).pipe(Effect.provide(files))
  )

  it.effect("a store directory without JetStream is a warning where it was set, an error under -t", () =>
    Effect.gen(function* () {
      const sd = yield* load(["-p", "4333", "-sd", "/srv/js"], {})
      if (sd.kind !== "run") throw new Error("expected run")
      expect([sd.options.jetstream, sd.warnings]).toEqual([
        undefined,
        ["-sd: JetStream is not enabled (jetstream {} or -js), so the store directory is not used"]
      ])
      const file = yield* load(["-c", "/sd.conf"], {})
      if (file.kind !== "run") throw new Error("expected run")
      expect(file.warnings).toEqual(["/sd.conf:2:1: store_dir: JetStream is not enabled (jetstream {} or -js), so the store directory is not used"])
      const e = yield* Effect.flip(load(["-t", "-c", "/sd.conf"], {}))
      expect([e.line, e.column]).toEqual([2, 1])
      const on = runOptions(yield* load(["-c", "/sd.conf", "-js"], {}))
      expect(on.jetstream?.storeDir).toBe("/srv/js")
    }).pipe(Effect.provide(files))
  )
})

describe("unknown keys and strict mode", () => {
  it.effect("warns about unknown keys and runs", () =>
    Effect.gen(function* () {
      const outcome = yield* load(["-c", fixture("unknown.conf")], {})
      if (outcome.kind !== "run") throw new Error("expected run")
      expect(outcome.warnings).toEqual([
        `${fixture("unknown.conf")}:2:1: unknown key "colour" in the top level`,
        `${fixture("unknown.conf")}:6:3: unknown key "shoe_size" in authorization`
      ])
      expect(outcome.options.port).toBe(4222)
    }).pipe(Effect.provide(ConfigFiles.layerNode))
  )

  it.effect("-t turns warnings into an error at the first one, listing the rest", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip(load(["-t", "-c", fixture("unknown.conf")], {}))
      expect([e.reason, e.file, e.line, e.column]).toEqual(["UnknownKey", fixture("unknown.conf"), 2, 1])
      expect(e.message).toBe(
        `${fixture("unknown.conf")}:2:1: unknown key "colour" in the top level\n` +
          `${fixture("unknown.conf")}:6:3: unknown key "shoe_size" in authorization`
      )
    }).pipe(Effect.provide(ConfigFiles.layerNode))
  )

  it.effect("warns about each key it does not act on, at its place, and -t refuses them all", () =>
    Effect.gen(function* () {
      const file = fixture("not-implemented.conf")
      const outcome = yield* load(["-c", file], {})
      if (outcome.kind !== "run") throw new Error("expected run")
      const expected = [
        `${file}:4:1: gateway is not implemented by this version and has no effect`,
        `${file}:13:3: jetstream.unique_tag is not implemented by this version and has no effect`,
        `${file}:15:1: mappings is not implemented by this version and has no effect`
      ]
      expect(outcome.warnings).toEqual(expected)
      const e = yield* Effect.flip(load(["-t", "-c", file], {}))
      expect([e.file, e.line, e.column, e.message]).toEqual([file, 4, 1, expected.join("\n")])
    }).pipe(Effect.provide(ConfigFiles.layerNode))
  )

  it.effect("-t passes a clean file and says so", () =>
    Effect.gen(function* () {
      const outcome = yield* load(["-t", "-c", fixture("full.conf")], {})
      expect(outcome.kind === "run" && outcome.checkOnly).toBe(true)
    }).pipe(Effect.provide(ConfigFiles.layerNode))
  )
})

describe("precedence: flags over the file over the defaults", () => {
  const files = ConfigFiles.layerMemory({
    "/etc/s.conf": `
      port: 4000
      server_name: from-file
      http_port: 8000
      debug: false
      logtime: true
      authorization { user: fileuser, password: filepass, timeout: 5 }
      jetstream { store_dir: /file/js, max_mem: 1MB }
      mqtt { port: 1900, ack_wait: "10s" }
    `
  })

  it.effect("takes the file's values where no flag is given", () =>
    Effect.gen(function* () {
      const o = runOptions(yield* load(["-c", "/etc/s.conf"], {}))
      expect(o).toMatchObject({ port: 4000, serverName: "from-file", httpPort: 8000, maxPayload: defaultOptions.maxPayload })
      expect(o.mqtt).toMatchObject({ port: 1900, ackWaitMs: 10_000, maxAckPending: 1024 })
    }).pipe(Effect.provide(files))
  )

  it.effect("lets each flag override its key, keeping the rest of the block", () =>
    Effect.gen(function* () {
      const o = runOptions(
        yield* load(
          ["-c", "/etc/s.conf", "-p", "5000", "-n", "from-flag", "-m", "0", "-DV", "-T=false", "--pass", "flagpass", "-sd", "/flag/js", "--mqtt_port", "1999"],
          {}
        )
      )
      expect(o).toMatchObject({ port: 5000, serverName: "from-flag", httpPort: undefined })
      expect(o.log).toEqual({ debug: true, trace: true, logtime: false, logFile: undefined })
      expect(o.authorization).toMatchObject({ user: "fileuser", password: "flagpass", timeoutMs: 5000 })
      expect(o.jetstream).toEqual({ storeDir: "/flag/js", maxMemory: MiB, maxStorage: -1 })
      expect(o.mqtt).toMatchObject({ port: 1999, ackWaitMs: 10_000 })
    }).pipe(Effect.provide(files))
  )

  it.effect("turns blocks off and on from the flags", () =>
    Effect.gen(function* () {
      const off = runOptions(yield* load(["-c", "/etc/s.conf", "--mqtt_port", "0", "-js=false"], {}))
      expect([off.mqtt, off.jetstream]).toEqual([undefined, undefined])
    }).pipe(Effect.provide(files))
  )

  it.effect("applies flags with no file", () =>
    Effect.gen(function* () {
      const o = runOptions(yield* load(["-p", "-1", "-m", "-1", "--auth", "tok"], {}))
      expect(o).toMatchObject({ port: 0, httpPort: 0, configFile: undefined })
      expect(o.authorization).toEqual({
        user: undefined,
        password: undefined,
        token: "tok",
        users: [],
        timeoutMs: undefined,
        defaultPermissions: undefined
      })
    }).pipe(Effect.provide(ConfigFiles.layerMemory({})))
  )

  it.effect("checks the combined result", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip(load(["-ms", "8443"], {}))
      expect([e.reason, e.file, e.detail]).toEqual(["Invalid", undefined, "https_port: https monitoring needs a tls block (in http { tls {…} } or at the top level)"])
    }).pipe(Effect.provide(ConfigFiles.layerMemory({})))
  )
})

describe("environment and outcomes", () => {
  it.effect("resolves $VARS from the environment it is given", () =>
    Effect.gen(function* () {
      const o = runOptions(
        yield* load(["-c", "/c.conf"], { SWITCHYARD_PORT: "4555", SWITCHYARD_TOKEN: "t0k" }).pipe(
          Effect.provide(ConfigFiles.layerMemory({ "/c.conf": "port: $SWITCHYARD_PORT\nauthorization { token: $SWITCHYARD_TOKEN }" }))
        )
      )
      expect([o.port, o.authorization?.token]).toEqual([4555, "t0k"])
      const e = yield* Effect.flip(
        load(["-c", "/c.conf"], {}).pipe(Effect.provide(ConfigFiles.layerMemory({ "/c.conf": "port: $SWITCHYARD_PORT" })))
      )
      expect([e.reason, e.line, e.column]).toEqual(["Variable", 1, 7])
    })
  )

  it.effect("answers help and version, and fails on bad flags", () =>
    Effect.gen(function* () {
      expect(yield* load(["--help"], {})).toEqual({ kind: "help" })
      expect(yield* load(["-v"], {})).toEqual({ kind: "version" })
      const e = yield* Effect.flip(load(["--nope"], {}))
      expect(e.reason).toBe("Flag")
    }).pipe(Effect.provide(ConfigFiles.layerMemory({})))
  )

  it.effect("--tls* flags override the file's tls block field by field", () =>
    Effect.gen(function* () {
      const pem = (f: string) => readFileSync(fixture(`certs/${f}`), "utf8")
      const certs = { "f.pem": pem("server.pem"), "f.key": pem("server-key.pem"), "ca.pem": pem("ca.pem"), "flag.pem": pem("server.pem"), "s.pem": pem("server.pem"), "s.key": pem("server-key.pem") }
      const files = ConfigFiles.layerMemory({ "/s.conf": `tls { cert_file: "f.pem", key_file: "f.key", timeout: 3 }`, ...certs })
      const verify = yield* load(["-c", "/s.conf", "--tlsverify", "--tlscacert", "ca.pem"], {}).pipe(Effect.provide(files))
      expect(runOptions(verify).tls).toEqual({ certFile: "f.pem", keyFile: "f.key", caFile: "ca.pem", verify: true, timeoutMs: 3000 })
      const cert = yield* load(["-c", "/s.conf", "--tls", "--tlscert", "flag.pem"], {}).pipe(Effect.provide(files))
      expect(runOptions(cert).tls).toEqual({ certFile: "flag.pem", keyFile: "f.key", caFile: undefined, verify: false, timeoutMs: 3000 })
      // Without a file, the flags must name both the certificate and its key.
      const e = yield* Effect.flip(load(["--tls", "--tlscert", "s.pem"], {}).pipe(Effect.provide(ConfigFiles.layerMemory(certs))))
      expect(e.message).toContain("TLS needs a server certificate and key (--tlscert and --tlskey")
      const both = yield* load(["--tls", "--tlscert", "s.pem", "--tlskey", "s.key"], {}).pipe(Effect.provide(ConfigFiles.layerMemory(certs)))
      expect(runOptions(both).tls).toEqual({ certFile: "s.pem", keyFile: "s.key", caFile: undefined, verify: false, timeoutMs: 2_000 })
    })
  )

  it.effect("loadOptions takes a base and overrides directly", () =>
    Effect.gen(function* () {
      const loaded = yield* loadOptions({
        env: {},
        base: { ...defaultOptions, mqtt: undefined },
        overrides: { maxPayload: 1024 }
      })
      expect([loaded.options.mqtt, loaded.options.maxPayload, loaded.warnings]).toEqual([undefined, 1024, []])
    }).pipe(Effect.provide(ConfigFiles.layerMemory({})))
  )
})

describe("secrets stay out of errors and warnings", () => {
  const SECRET = "Zq9SecretValue"
  const texts = [
    `authorization { password: ${SECRET} ${SECRET} }`,
    `authorization { password: "${SECRET}`,
    `authorization { token: [${SECRET}] }`,
    `authorization { users: [ { user: a, password: { p: ${SECRET} } } ] }`,
    `authorization { password: $${SECRET}! }`,
    `password: ${SECRET}\nauthorization { password: $password, timeout: nope }`,
    `authorization { pass: ${SECRET}, users: 7 }`
  ]
  for (const [i, text] of texts.entries()) {
    it.effect(`case ${i}`, () =>
      Effect.gen(function* () {
        const r = yield* Effect.either(
          load(["-t", "-c", "/s.conf", "--pass", SECRET], {}).pipe(Effect.provide(ConfigFiles.layerMemory({ "/s.conf": text })))
        )
        const messages = Either.isLeft(r) ? [r.left.message] : r.right.kind === "run" ? r.right.warnings : []
        for (const m of messages) expect(m).not.toContain(SECRET)
      })
    )
  }
})
