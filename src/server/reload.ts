// SIGHUP: read the configuration file again (under the same flags) and apply what can
// change while the server runs: authorization (users, passwords, tokens, permissions,
// accounts, no_auth_user), logging, limits, MQTT ack_wait / max_ack_pending / auth,
// lame duck timings, pid and ports files. A change to anything else (a listener, TLS,
// JetStream, …) refuses the whole reload with a log line per key: all or nothing, the
// running configuration stays as it was.
import type { AccountOptions, ServerOptions } from "../config/options.js"
import type { LogService } from "../services/log.js"
import { importProblems } from "../config/account-checks.js"
import { wireImports } from "./imports.js"
import { mqttAuthenticator } from "./mqtt/auth.js"
import { bcryptLoaded, holdsBcrypt } from "./nats/bcrypt.js"
import { reloadMqtt } from "./mqtt/reload.js"
import { reauthorizeClients } from "./reauthorize.js"
import type { Serving } from "./serve.js"

/** A part of the configuration and the key an operator knows it by. */
interface Part {
  readonly key: string
  readonly read: (o: ServerOptions) => unknown
}

const part = (key: string, read: (o: ServerOptions) => unknown): Part => ({ key, read })

/** What a reload applies. */
const RELOADABLE: ReadonlyArray<Part> = [
  part("authorization", (o) => o.authorization),
  part("no_auth_user", (o) => o.noAuthUser),
  part("accounts", (o) => o.accounts),
  part("debug", (o) => o.log.debug),
  part("trace", (o) => o.log.trace),
  part("logtime", (o) => o.log.logtime),
  part("logtime_utc", (o) => o.log.logtimeUtc ?? false),
  part("log_file", (o) => o.log.logFile),
  part("log_size_limit", (o) => o.log.logSizeLimit ?? 0),
  part("logfile_max_num", (o) => o.log.logMaxNum ?? 0),
  part("max_connections", (o) => o.maxConnections),
  part("max_payload", (o) => o.maxPayload),
  part("max_control_line", (o) => o.maxControlLine),
  part("max_pending", (o) => o.maxPending),
  part("max_subscriptions", (o) => o.maxSubscriptions),
  part("write_deadline", (o) => o.writeDeadlineMs),
  part("ping_interval", (o) => o.pingIntervalMs),
  part("ping_max", (o) => o.pingMax),
  part("max_closed_clients", (o) => o.maxClosedClients),
  part("mqtt.ack_wait", (o) => o.mqtt?.ackWaitMs),
  part("mqtt.max_ack_pending", (o) => o.mqtt?.maxAckPending),
  part("mqtt.max_queued_messages", (o) => o.mqtt?.maxQueuedMessages),
  part("mqtt.max_queued_bytes", (o) => o.mqtt?.maxQueuedBytes),
  // New connections decode with the new bound; open ones keep theirs.
  part("mqtt.max_topic_levels", (o) => o.mqtt?.maxTopicLevels),
  part("mqtt.authorization", (o) => o.mqtt?.authorization),
  part("mqtt.no_auth_user", (o) => o.mqtt?.noAuthUser),
  // New connections speak the new levels; open ones keep theirs.
  part("mqtt.protocol_versions", (o) => o.mqtt?.protocolVersions),
  part("mqtt.receive_maximum", (o) => o.mqtt?.receiveMaximum),
  part("mqtt.topic_alias_maximum", (o) => o.mqtt?.topicAliasMaximum),
  part("mqtt.max_keepalive", (o) => o.mqtt?.maxKeepAlive),
  part("mqtt.response_information", (o) => o.mqtt?.responseInformation),
  part("lame_duck_duration", (o) => o.lameDuckDurationMs),
  part("lame_duck_grace_period", (o) => o.lameDuckGracePeriodMs),
  part("pid_file", (o) => o.pidFile),
  part("ports_file_dir", (o) => o.portsFileDir)
]

/** What only a restart changes. */
const FIXED: ReadonlyArray<Part> = [
  part("server_name", (o) => o.serverName),
  part("host", (o) => o.host),
  part("port", (o) => o.port),
  part("http", (o) => o.httpHost),
  part("http_port", (o) => o.httpPort),
  part("https_port", (o) => o.httpsPort),
  part("http_base_path", (o) => o.httpBasePath),
  part("http.tls", (o) => o.httpTls),
  part("tls", (o) => o.tls),
  part("no_header_support", (o) => o.noHeaderSupport),
  part("busy_poll", (o) => o.busyPollUs),
  part("system_account", (o) => o.systemAccount),
  part("jetstream", (o) => o.jetstream === undefined ? "disabled" : "enabled"),
  part("jetstream.store_dir", (o) => o.jetstream?.storeDir),
  part("jetstream.max_memory_store", (o) => o.jetstream?.maxMemory),
  part("jetstream.max_file_store", (o) => o.jetstream?.maxStorage),
  part("jetstream.sync_interval", (o) => o.jetstream?.syncInterval),
  part("jetstream.domain", (o) => o.jetstream?.domain),
  part("mqtt", (o) => o.mqtt === undefined ? "disabled" : "enabled"),
  part("mqtt.host", (o) => o.mqtt?.host),
  part("mqtt.port", (o) => o.mqtt?.port),
  part("mqtt.tls", (o) => o.mqtt?.tls),
  part("websocket", (o) => o.websocket),
  part("cluster", (o) => o.cluster),
  part("leafnodes", (o) => o.leafnodes)
]

/** Plain data (what the configuration decodes to) compared by value. */
export const sameValue = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined)
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined)
  if (ka.length !== kb.length) return false
  return ka.every((k) => sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
}

export interface ReloadPlan {
  /** Keys whose new value is applied. */
  readonly changed: ReadonlyArray<string>
  /** Why the reload is refused (a key that only a restart changes, or a new configuration that would not start). */
  readonly refused: ReadonlyArray<string>
}

/** JetStream enablement of an account that already exists cannot change while its streams are open. */
const accountJetStreamChanges = (prev: ReadonlyArray<AccountOptions>, next: ReadonlyArray<AccountOptions>): Array<string> => {
  const before = new Map(prev.map((a) => [a.name, a.jetstream]))
  return next.filter((a) => before.has(a.name) && before.get(a.name) !== a.jetstream).map((a) => `accounts.${a.name}.jetstream`)
}

/** What going from `prev` to `next` would change, and what forbids it. */
export const planReload = (prev: ServerOptions, next: ServerOptions): ReloadPlan => {
  const changed = RELOADABLE.filter((p) => !sameValue(p.read(prev), p.read(next))).map((p) => p.key)
  const refused = FIXED.filter((p) => !sameValue(p.read(prev), p.read(next))).map(
    (p) => `${p.key}: cannot be changed while the server runs (restart it to apply this)`
  )
  if (prev.jetstream !== undefined) {
    for (const key of accountJetStreamChanges(prev.accounts, next.accounts)) {
      refused.push(`${key}: cannot be changed while the server runs (restart it to apply this)`)
    }
  }
  // What would stop a start stops a reload too: an import nothing exports to the importer.
  refused.push(...importProblems(next).map((p) => p.message))
  return { changed, refused }
}

const LOG_KEYS = new Set(["debug", "trace", "logtime", "logtime_utc", "log_file", "log_size_limit", "logfile_max_num"])
const AUTH_KEYS = new Set(["authorization", "no_auth_user", "accounts", "mqtt.authorization", "mqtt.no_auth_user"])
/** Keys whose values may be shown in the log (nothing secret in them). */
const SHOWN = new Map(RELOADABLE.filter((p) => !AUTH_KEYS.has(p.key)).map((p) => [p.key, p]))

export interface ReloadOutcome {
  readonly applied: boolean
  readonly changed: ReadonlyArray<string>
  readonly refused: ReadonlyArray<string>
}

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/**
 * Apply `next` to the running server, all or nothing: refused as a whole when a key
 * only a restart changes differs, or when the new log file or pid/ports file cannot be
 * written (what was already switched is switched back). Everything is logged.
 */
export const applyReload = (s: Serving, next: ServerOptions, log: LogService): ReloadOutcome => {
  const server = s.server
  const prev = server.options
  const plan = planReload(prev, next)
  const refuse = (refused: ReadonlyArray<string>): ReloadOutcome => {
    for (const r of refused) log.error(`Reloading the configuration refused: ${r}`)
    log.error("Configuration reload failed: the running configuration is unchanged")
    return { applied: false, changed: plan.changed, refused }
  }
  if (plan.refused.length > 0) return refuse(plan.refused)
  // The caller loads bcrypt for a configuration that brings hashes (signals.ts).
  if (!bcryptLoaded() && holdsBcrypt(next)) return refuse(["authorization: bcrypt hashes, and bcrypt is not loaded"])
  // The changes that can fail come first, each undone if a later one fails.
  const logChanged = plan.changed.some((k) => LOG_KEYS.has(k))
  if (logChanged) {
    try {
      log.reconfigure(next.log)
    } catch (e) {
      return refuse([`log_file: ${message(e)}`])
    }
  }
  try {
    s.files.apply(next)
  } catch (e) {
    if (logChanged) log.reconfigure(prev.log)
    return refuse([`pid_file / ports_file_dir: ${message(e)}`])
  }
  const previousAuth = server.auth
  const previousMqttAuth = s.mqtt === undefined ? undefined : mqttAuthenticator(server)
  server.reconfigure(next)
  server.configLoadTime = server.now()
  if (plan.changed.some((k) => AUTH_KEYS.has(k))) reauthorizeClients(server, previousAuth)
  if (plan.changed.includes("accounts")) {
    s.imports.unwire()
    s.imports = wireImports(server)
    const js = s.jetstream
    if (js !== undefined) for (const a of next.accounts) if (!js.accounts.has(a.name)) js.account(a.name)
  }
  if (s.mqtt !== undefined && previousMqttAuth !== undefined) reloadMqtt(s.mqtt, previousMqttAuth, next)
  for (const key of plan.changed) {
    const shown = SHOWN.get(key)
    log.info(shown === undefined ? `Reloaded: ${key}` : `Reloaded: ${key} = ${JSON.stringify(shown.read(next)) ?? "(none)"}`)
  }
  log.info(plan.changed.length === 0 ? "Reloaded server configuration (nothing changed)" : "Reloaded server configuration")
  return { applied: true, changed: plan.changed, refused: [] }
}
