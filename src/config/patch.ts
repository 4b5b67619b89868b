// What one source of configuration (the file, the flags) says, before defaults:
// every field optional, `null` where "disabled" must differ from "not said".
// Sources are merged in order (later wins) and laid over `defaultOptions`.
import { DEFAULT_MAX_TOPIC_LEVELS } from "../core/mqtt/topic.js"
import { DEFAULT_MAX_QUEUED_BYTES, DEFAULT_MAX_QUEUED_MESSAGES } from "./options.js"
import { DEFAULT_CLUSTER_PORT } from "./options.js"
import type {
  AccountOptions,
  AuthorizationOptions,
  ClusterAuthorization,
  ClusterOptions,
  LeafNodeOptions,
  JetStreamOptions,
  LogOptions,
  MqttOptions,
  MqttProtocolLevel,
  Permissions,
  ServerOptions,
  TlsOptions,
  UserEntry,
  WebsocketOptions
} from "./options.js"

export const DEFAULT_PORT = 4222
export const DEFAULT_MQTT_PORT = 1883

export interface AuthorizationPatch {
  readonly user?: string
  readonly password?: string
  readonly token?: string
  readonly users?: ReadonlyArray<UserEntry>
  readonly timeoutMs?: number
  readonly defaultPermissions?: Permissions
}

export interface JetStreamPatch {
  readonly enabled?: boolean
  readonly storeDir?: string
  readonly maxMemory?: number
  readonly maxStorage?: number
  readonly syncInterval?: "always" | number
  readonly domain?: string
}

export interface MqttPatch {
  readonly enabled?: boolean
  readonly host?: string
  readonly port?: number
  readonly ackWaitMs?: number
  readonly maxAckPending?: number
  readonly maxTopicLevels?: number
  readonly maxQueuedMessages?: number
  readonly maxQueuedBytes?: number
  readonly tls?: TlsOptions
  readonly authorization?: AuthorizationOptions
  readonly noAuthUser?: string
  readonly protocolVersions?: ReadonlyArray<MqttProtocolLevel>
  readonly receiveMaximum?: number
  readonly topicAliasMaximum?: number
  readonly maxKeepAlive?: number
  readonly responseInformation?: string
}

export interface WebsocketPatch {
  readonly enabled?: boolean
  readonly host?: string
  readonly port?: number
  readonly noTls?: boolean
  readonly tls?: TlsOptions
  readonly compression?: boolean
  readonly handshakeTimeoutMs?: number
  readonly protocolVersions?: ReadonlyArray<MqttProtocolLevel>
}

export interface ClusterPatch {
  readonly enabled?: boolean
  readonly name?: string
  readonly host?: string
  readonly port?: number
  readonly advertise?: string
  readonly noAdvertise?: boolean
  readonly routes?: ReadonlyArray<string>
  readonly authorization?: ClusterAuthorization
  readonly connectRetries?: number
  readonly tls?: TlsOptions
}

export interface OptionsPatch {
  readonly configFile?: string
  readonly serverName?: string
  readonly host?: string
  /** Final meaning: 0 = ephemeral. */
  readonly port?: number
  readonly httpHost?: string
  /** null = disabled, 0 = ephemeral. */
  readonly httpPort?: number | null
  readonly httpsPort?: number | null
  readonly httpBasePath?: string
  /** The spec's `http { tls {} }`: the HTTPS monitoring certificate, apart from the client port's. */
  readonly httpTls?: TlsOptions
  readonly maxConnections?: number
  readonly maxPayload?: number
  readonly maxControlLine?: number
  readonly maxPending?: number
  readonly maxSubscriptions?: number
  readonly writeDeadlineMs?: number
  readonly pingIntervalMs?: number
  readonly busyPollUs?: number
  readonly pingMax?: number
  readonly maxClosedClients?: number
  readonly noHeaderSupport?: boolean
  /** Complete from the file's `tls` block; only the given fields from the `--tls*` flags (merged field by field). */
  readonly tls?: Partial<TlsOptions>
  readonly authorization?: AuthorizationPatch
  readonly noAuthUser?: string
  readonly accounts?: ReadonlyArray<AccountOptions>
  readonly systemAccount?: string
  readonly jetstream?: JetStreamPatch
  readonly mqtt?: MqttPatch
  readonly websocket?: WebsocketPatch
  readonly cluster?: ClusterPatch
  /** The whole `leafnodes` block (no flag sets part of it). */
  readonly leafnodes?: LeafNodeOptions
  readonly log?: Partial<LogOptions>
  readonly pidFile?: string
  readonly portsFileDir?: string
  readonly lameDuckDurationMs?: number
  readonly lameDuckGracePeriodMs?: number
}

// ---- the port conventions, shared by the file and the flags ---------------

/** Client port as written: -1 = ephemeral (0), 0 = the default 4222. */
export const clientPort = (written: number): number =>
  written === -1 ? 0 : written === 0 ? DEFAULT_PORT : written

/** Monitoring port as written: 0 = disabled (null), -1 = ephemeral (0). */
export const monitorPort = (written: number): number | null =>
  written === 0 ? null : written === -1 ? 0 : written

/** MQTT / WebSocket port as written: 0 = disabled, -1 = ephemeral (0). */
export const listenerPort = (written: number): { readonly enabled: boolean; readonly port: number | undefined } =>
  written === 0 ? { enabled: false, port: undefined } : { enabled: true, port: written === -1 ? 0 : written }

// ---- merging ----------------------------------------------------------------

/** Fields of `b` that are not undefined replace those of `a`. */
const over = <T extends object>(a: T | undefined, b: T | undefined): T | undefined => {
  if (a === undefined) return b
  if (b === undefined) return a
  const out: Record<string, unknown> = { ...(a as Record<string, unknown>) }
  for (const [k, v] of Object.entries(b)) if (v !== undefined) out[k] = v
  return out as T
}

/** Later patches win field by field; nested blocks merge field by field too. */
export const mergePatches = (patches: ReadonlyArray<OptionsPatch>): OptionsPatch =>
  patches.reduce<OptionsPatch>(
    (acc, p) => ({
      ...over(acc, p),
      authorization: over(acc.authorization, p.authorization),
      tls: over(acc.tls, p.tls),
      jetstream: over(acc.jetstream, p.jetstream),
      mqtt: over(acc.mqtt, p.mqtt),
      websocket: over(acc.websocket, p.websocket),
      cluster: over(acc.cluster, p.cluster),
      leafnodes: p.leafnodes ?? acc.leafnodes,
      log: over(acc.log, p.log)
    }),
    {}
  )

// ---- applying to the defaults ---------------------------------------------

const mqttDefaults: MqttOptions = {
  host: "0.0.0.0",
  port: DEFAULT_MQTT_PORT,
  ackWaitMs: 30_000,
  maxAckPending: 1024,
  maxTopicLevels: DEFAULT_MAX_TOPIC_LEVELS,
  maxQueuedMessages: DEFAULT_MAX_QUEUED_MESSAGES,
  maxQueuedBytes: DEFAULT_MAX_QUEUED_BYTES,
  tls: undefined,
  authorization: undefined,
  noAuthUser: undefined
}

const websocketDefaults: WebsocketOptions = {
  host: "0.0.0.0",
  port: 0,
  noTls: false,
  tls: undefined,
  compression: false
}

const clusterDefaults: ClusterOptions = {
  name: "",
  host: "0.0.0.0",
  port: DEFAULT_CLUSTER_PORT,
  advertise: undefined,
  noAdvertise: false,
  routes: [],
  authorization: undefined,
  connectRetries: 0
}

/** Cluster port as written: -1 = ephemeral (0), 0 = the default 6222. */
export const clusterPort = (written: number): number =>
  written === -1 ? 0 : written === 0 ? DEFAULT_CLUSTER_PORT : written

const jetstreamDefaults: JetStreamOptions = { storeDir: "./data", maxMemory: -1, maxStorage: -1 }

const pick = <T>(v: T | undefined, fallback: T): T => (v === undefined ? fallback : v)

const port = (v: number | null | undefined, fallback: number | undefined): number | undefined =>
  v === undefined ? fallback : v === null ? undefined : v

const applyAuthorization = (
  base: AuthorizationOptions | undefined,
  p: AuthorizationPatch | undefined
): AuthorizationOptions | undefined => {
  if (p === undefined) return base
  const b = base ?? {
    user: undefined,
    password: undefined,
    token: undefined,
    users: [],
    timeoutMs: undefined,
    defaultPermissions: undefined
  }
  return {
    user: pick(p.user, b.user),
    password: pick(p.password, b.password),
    token: pick(p.token, b.token),
    users: pick(p.users, b.users),
    timeoutMs: pick(p.timeoutMs, b.timeoutMs),
    defaultPermissions: pick(p.defaultPermissions, b.defaultPermissions)
  }
}

/** `enabled` says whether the block exists; its fields fill in the defaults. */
const applyBlock = <T extends object>(
  base: T | undefined,
  p: ({ readonly enabled?: boolean } & Partial<T>) | undefined,
  defaults: T
): T | undefined => {
  if (p === undefined) return base
  const enabled = p.enabled ?? base !== undefined
  if (!enabled) return undefined
  const { enabled: _enabled, ...fields } = p
  return over(base ?? defaults, fields as Partial<T> as T)
}

/** The client port's TLS from a (merged) patch; without a certificate and key there is none (`loadOptions` refuses that). */
const completeTls = (p: Partial<TlsOptions> | undefined, base: TlsOptions | undefined): TlsOptions | undefined => {
  if (p === undefined) return base
  const t = over<Partial<TlsOptions>>(base, p)!
  if (t.certFile === undefined || t.keyFile === undefined) return undefined
  return { certFile: t.certFile, keyFile: t.keyFile, caFile: t.caFile, verify: t.verify ?? false, timeoutMs: t.timeoutMs ?? 2_000 }
}

/**
 * A listener block (MQTT, WebSocket) binds where clients do unless it names a host of its
 * own: `-a 127.0.0.1` (or `host`) keeps every listener on that interface, as monitoring.
 */
const followHost = <T extends { readonly host: string }>(
  block: T | undefined,
  blockPatch: { readonly host?: string } | undefined,
  base: ServerOptions,
  host: string
): T | undefined =>
  block === undefined || blockPatch?.host !== undefined || block.host !== base.host ? block : { ...block, host }

/** `base` overlaid with `patch`: the options the server runs with. */
export const applyPatch = (base: ServerOptions, patch: OptionsPatch): ServerOptions => {
  const host = pick(patch.host, base.host)
  const authorization = applyAuthorization(base.authorization, patch.authorization)
  const httpsPort = port(patch.httpsPort, base.httpsPort)
  // Serving https without saying anything about http means https instead of the default http.
  const httpPort =
    patch.httpPort === undefined && patch.httpsPort !== undefined && patch.httpsPort !== null
      ? undefined
      : port(patch.httpPort, base.httpPort)
  const tls = completeTls(patch.tls, base.tls)
  return {
    configFile: pick(patch.configFile, base.configFile),
    serverName: pick(patch.serverName, base.serverName),
    host,
    port: pick(patch.port, base.port),
    // nats-server: monitoring listens where clients do unless told otherwise.
    httpHost: patch.httpHost ?? patch.host ?? base.httpHost,
    httpPort,
    httpsPort,
    httpBasePath: pick(patch.httpBasePath, base.httpBasePath),
    httpTls: httpsPort === undefined ? undefined : (patch.httpTls ?? tls ?? base.httpTls),
    maxConnections: pick(patch.maxConnections, base.maxConnections),
    maxPayload: pick(patch.maxPayload, base.maxPayload),
    maxControlLine: pick(patch.maxControlLine, base.maxControlLine),
    maxPending: pick(patch.maxPending, base.maxPending),
    maxSubscriptions: pick(patch.maxSubscriptions, base.maxSubscriptions),
    writeDeadlineMs: pick(patch.writeDeadlineMs, base.writeDeadlineMs),
    pingIntervalMs: pick(patch.pingIntervalMs, base.pingIntervalMs),
    busyPollUs: pick(patch.busyPollUs, base.busyPollUs),
    pingMax: pick(patch.pingMax, base.pingMax),
    authTimeoutMs: pick(authorization?.timeoutMs, base.authTimeoutMs),
    maxClosedClients: pick(patch.maxClosedClients, base.maxClosedClients),
    noHeaderSupport: pick(patch.noHeaderSupport, base.noHeaderSupport),
    tls,
    authorization,
    noAuthUser: pick(patch.noAuthUser, base.noAuthUser),
    accounts: pick(patch.accounts, base.accounts),
    systemAccount: pick(patch.systemAccount, base.systemAccount),
    jetstream: applyBlock<JetStreamOptions>(base.jetstream, patch.jetstream, jetstreamDefaults),
    mqtt: followHost(applyBlock<MqttOptions>(base.mqtt, patch.mqtt, { ...mqttDefaults, host: base.host }), patch.mqtt, base, host),
    websocket: followHost(
      applyBlock<WebsocketOptions>(base.websocket, patch.websocket, { ...websocketDefaults, host: base.host }),
      patch.websocket,
      base,
      host
    ),
    cluster: followHost(
      applyBlock<ClusterOptions>(base.cluster, patch.cluster, { ...clusterDefaults, host: base.host }),
      patch.cluster,
      base,
      host
    ),
    leafnodes: patch.leafnodes === undefined ? base.leafnodes : { ...patch.leafnodes, host: patch.leafnodes.host === "" ? host : patch.leafnodes.host },
    log: over<Partial<LogOptions>>(base.log, patch.log) as LogOptions,
    pidFile: pick(patch.pidFile, base.pidFile),
    portsFileDir: pick(patch.portsFileDir, base.portsFileDir),
    lameDuckDurationMs: pick(patch.lameDuckDurationMs, base.lameDuckDurationMs),
    lameDuckGracePeriodMs: pick(patch.lameDuckGracePeriodMs, base.lameDuckGracePeriodMs)
  }
}
