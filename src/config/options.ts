// The server's resolved configuration: what the config file, the flags and the
// embedded defaults add up to. Everything downstream (listeners, limits, the
// monitoring endpoints) reads this shape and nothing else.
import { DEFAULT_MAX_TOPIC_LEVELS } from "../core/mqtt/topic.js"

export interface TlsOptions {
  readonly certFile: string
  readonly keyFile: string
  readonly caFile: string | undefined
  /** Require and verify client certificates. */
  readonly verify: boolean
  /** Handshake timeout, milliseconds (nats-server `timeout`, seconds in the file; default 2s). */
  readonly timeoutMs: number
}

export interface SubjectPermission {
  readonly allow: ReadonlyArray<string> | undefined
  readonly deny: ReadonlyArray<string> | undefined
}

export interface Permissions {
  readonly publish: SubjectPermission | undefined
  readonly subscribe: SubjectPermission | undefined
  /** `allow_responses`: true, or a bound on responses and their lifetime. */
  readonly allowResponses: { readonly maxMsgs: number; readonly expiresMs: number } | undefined
}

export interface UserEntry {
  readonly user: string | undefined
  /** Plain text or a bcrypt hash (`$2a$…`). Never logged, never served. */
  readonly password: string | undefined
  readonly nkey: string | undefined
  readonly permissions: Permissions | undefined
  /** The account the user belongs to; the global account `$G` when undefined. */
  readonly account: string | undefined
}

export interface AuthorizationOptions {
  readonly user: string | undefined
  readonly password: string | undefined
  readonly token: string | undefined
  readonly users: ReadonlyArray<UserEntry>
  /** Auth timeout, milliseconds (nats-server `timeout`, seconds in the file). */
  readonly timeoutMs: number | undefined
  /** Default permissions for users without their own. */
  readonly defaultPermissions: Permissions | undefined
}

export interface AccountExport {
  readonly stream: string | undefined
  readonly service: string | undefined
  readonly accounts: ReadonlyArray<string> | undefined
}

export interface AccountImport {
  readonly stream: { readonly account: string; readonly subject: string } | undefined
  readonly service: { readonly account: string; readonly subject: string } | undefined
  readonly prefix: string | undefined
  readonly to: string | undefined
}

export interface AccountOptions {
  readonly name: string
  readonly users: ReadonlyArray<UserEntry>
  readonly exports: ReadonlyArray<AccountExport>
  readonly imports: ReadonlyArray<AccountImport>
  /** Per-account JetStream enablement/limits (`jetstream: enabled` or a limits map). */
  readonly jetstream: boolean
}

export interface JetStreamOptions {
  readonly storeDir: string
  /** Bytes; -1 = unlimited (nats-server default: 75% of memory, here unlimited). */
  readonly maxMemory: number
  /** Bytes; -1 = unlimited. */
  readonly maxStorage: number
  /**
   * `sync_interval`: "always" (the default when absent) acknowledges a publish only
   * after an fsync covering it; a number of milliseconds acknowledges once the write
   * is handed to the OS and fsyncs on a timer with that period.
   */
  readonly syncInterval?: "always" | number
  /**
   * `domain`: this node's streams are reachable from other servers (routes, leaf
   * connections) as `$JS.<domain>.API.>`; without it they serve this node's clients only.
   */
  readonly domain?: string
}

/** mqtt.max_queued_messages / max_queued_bytes defaults: 65,536 messages, 1 GiB. */
export const DEFAULT_MAX_QUEUED_MESSAGES = 65_536
export const DEFAULT_MAX_QUEUED_BYTES = 1024 * 1024 * 1024

export interface MqttOptions {
  readonly host: string
  /** 0 = ephemeral port chosen by the OS (config value -1). */
  readonly port: number
  readonly ackWaitMs: number
  readonly maxAckPending: number
  /** Deepest topic name or filter a client may send, in levels (`max_topic_levels`); deeper closes the connection. */
  readonly maxTopicLevels: number
  /**
   * QoS 1/2 messages a session holds beyond its in-flight window, connected or away
   * (`max_queued_messages`); past it the oldest gives way, logged and counted.
   */
  readonly maxQueuedMessages: number
  /** Their payload bytes (`max_queued_bytes`; 0: no bound), same policy. */
  readonly maxQueuedBytes: number
  readonly tls: TlsOptions | undefined
  readonly authorization: AuthorizationOptions | undefined
  readonly noAuthUser: string | undefined
  /**
   * `protocol_versions`: the MQTT protocol levels this listener accepts (4: 3.1.1, 5: 5.0).
   * Undefined = [4]: a level-5 CONNECT is refused with CONNACK 1, as the specification's
   * default says.
   */
  readonly protocolVersions?: ReadonlyArray<MqttProtocolLevel> | undefined
  /**
   * MQTT 5.0 `receive_maximum`: QoS 1/2 PUBLISHes a client may have unacknowledged towards
   * the server (announced in CONNACK; more is DISCONNECT 0x93). Undefined = 65,535, not announced.
   */
  readonly receiveMaximum?: number | undefined
  /** MQTT 5.0 `topic_alias_maximum`: Topic Aliases a client may set (announced in CONNACK). Undefined = 10; 0: none. */
  readonly topicAliasMaximum?: number | undefined
  /**
   * MQTT 5.0 `max_keepalive` (seconds): the longest Keep Alive a client may use. One asking
   * for more, or for 0 (none), is given this as the Server Keep Alive in CONNACK. Undefined:
   * the client's own Keep Alive.
   */
  readonly maxKeepAlive?: number | undefined
  /**
   * MQTT 5.0 `response_information`: the topic prefix a client that asks for Response
   * Information is given, followed by `/` and a level of its own (its Client Identifier when
   * that is a plain word, else a hash of it). Undefined = `_INBOX/mqtt`; "": none offered.
   */
  readonly responseInformation?: string | undefined
}

/** Response Information's prefix when `response_information` is not given: NATS's inbox space. */
export const DEFAULT_RESPONSE_INFORMATION = "_INBOX/mqtt"

/** Topic Aliases an MQTT 5.0 client may set when `topic_alias_maximum` is not given (mosquitto's default too). */
export const DEFAULT_TOPIC_ALIAS_MAXIMUM = 10

/** MQTT protocol levels the server speaks: 4 (3.1.1) and 5 (5.0). */
export type MqttProtocolLevel = 4 | 5

/** The levels a listener accepts when its block does not say. */
export const DEFAULT_MQTT_PROTOCOL_VERSIONS: ReadonlyArray<MqttProtocolLevel> = [4]

export interface WebsocketOptions {
  readonly host: string
  /** 0 = ephemeral port chosen by the OS (config value -1). */
  readonly port: number
  readonly noTls: boolean
  readonly tls: TlsOptions | undefined
  readonly compression: boolean
  /**
   * `handshake_timeout`: how long a connection may take, after any TLS handshake, to
   * complete its WebSocket upgrade, milliseconds. Undefined = the default (2s).
   */
  readonly handshakeTimeoutMs?: number | undefined
  /** `protocol_versions` of MQTT over this listener; undefined = [4] (whatever the `mqtt` block says). */
  readonly protocolVersions?: ReadonlyArray<MqttProtocolLevel> | undefined
}

/** A route's credentials and what the servers of the cluster may send and ask for (`cluster.authorization`). */
export interface ClusterAuthorization {
  readonly user: string | undefined
  /** Plain text or a bcrypt hash. Never logged, never served. */
  readonly password: string | undefined
  /** How long an accepted route has to send CONNECT, milliseconds. */
  readonly timeoutMs: number | undefined
  /**
   * `permissions { import, export }`: the subjects other servers may send us messages on
   * (import) and ask us for (export); undefined = everything.
   */
  readonly import: SubjectPermission | undefined
  readonly export: SubjectPermission | undefined
}

/** The `cluster` block: routes to the other servers of a NATS cluster. */
export interface ClusterOptions {
  /** The cluster's name; a route from a server with another name is refused. */
  readonly name: string
  /** The route listener; port 0 = ephemeral (config value -1). */
  readonly host: string
  readonly port: number
  /** `advertise` / `cluster_advertise`: the host:port other servers are told to reach this one at. */
  readonly advertise: string | undefined
  /** Do not tell other servers our client URLs, nor our clients theirs. */
  readonly noAdvertise: boolean
  /** Route URLs to connect to (`nats-route://[user:pass@]host:port`), retried for ever. */
  readonly routes: ReadonlyArray<string>
  readonly authorization: ClusterAuthorization | undefined
  /** Attempts at a route learned from another server (implicit) before giving up; 0 = one attempt. */
  readonly connectRetries: number
  /**
   * TLS on every route, both ways, from the first byte (as nats-server does): the
   * certificate serves accepted routes and is presented on solicited ones; `verify`
   * demands one from the servers that connect here; `ca_file` checks both.
   */
  readonly tls?: TlsOptions | undefined
}

export const DEFAULT_CLUSTER_PORT = 6222

/** One user a leaf node may connect as (`leafnodes.authorization.users`), bound to an account. */
export interface LeafNodeUser {
  readonly user: string
  /** Plain text or a bcrypt hash. Never logged, never served. */
  readonly password: string | undefined
  /** The account its leaf connection is bound to; undefined = the global account. */
  readonly account: string | undefined
}

/** What leaf nodes must present to connect here (`leafnodes.authorization`). */
export interface LeafNodeAuthorization {
  /** One user for every leaf node (with `account` its binding), or none. */
  readonly user: string | undefined
  readonly password: string | undefined
  readonly account: string | undefined
  readonly users: ReadonlyArray<LeafNodeUser>
  /** How long an accepted leaf connection has to send CONNECT, milliseconds. */
  readonly timeoutMs: number | undefined
}

/** The client side of TLS to a hub (`remotes: [ { tls {...} } ]`). */
export interface RemoteTlsOptions {
  /** Presented to a hub that asks for a certificate (both or neither). */
  readonly certFile: string | undefined
  readonly keyFile: string | undefined
  /** The CAs the hub's certificate must chain to; undefined = the system's. */
  readonly caFile: string | undefined
  /** Handshake timeout, milliseconds. */
  readonly timeoutMs: number
}

/** One hub this server connects to as a leaf node (`leafnodes.remotes`). */
export interface LeafRemote {
  /** `nats-leaf://[user:pass@]host:port` (also `nats://`, `tls://`); tried in turn. */
  readonly urls: ReadonlyArray<string>
  /** The local account the connection is bound to (the hub's is the one its user is in). */
  readonly account: string
  /**
   * TLS to the hub: required with this block or a `tls://` URL (a hub that does not
   * offer it is refused); without either, used when the hub's INFO requires it.
   */
  readonly tls?: RemoteTlsOptions | undefined
  /** A NATS credentials file (user JWT and nkey seed): the CONNECT carries the JWT and signs the hub's nonce. */
  readonly credentials?: string | undefined
  /** Subjects not taken from the hub: its messages on them are dropped, and no interest in them is sent (`deny_imports`). */
  readonly denyImports?: ReadonlyArray<string> | undefined
  /** Subjects not sent to the hub: its interest in them is ignored, and messages on them are withheld (`deny_exports`). */
  readonly denyExports?: ReadonlyArray<string> | undefined
}

/** The `leafnodes` block: a listener for leaf nodes (this server as a hub) and hubs to connect to (as a leaf). */
export interface LeafNodeOptions {
  readonly host: string
  /** The leaf-node listener; undefined = none (only remotes), 0 = ephemeral (config value -1). */
  readonly port: number | undefined
  /** `advertise`: the host:port leaf nodes are told to reach this one at. */
  readonly advertise: string | undefined
  /** Do not tell leaf nodes our leaf URL (`leafnode_urls` stays empty). */
  readonly noAdvertise: boolean
  readonly authorization: LeafNodeAuthorization | undefined
  /** TLS on the leaf listener: INFO in the clear, then the upgrade (as nats-server does); `verify` demands leaf certificates. */
  readonly tls?: TlsOptions | undefined
  readonly remotes: ReadonlyArray<LeafRemote>
  /** The first wait before connecting to a remote again (it doubles, up to 8 times this); milliseconds. */
  readonly reconnectMs: number
}

export const DEFAULT_LEAFNODE_PORT = 7422

export interface LogOptions {
  readonly debug: boolean
  readonly trace: boolean
  /** Prefix each line with a timestamp (nats-server `logtime`, default true). */
  readonly logtime: boolean
  /** Write the log to this file instead of stderr. */
  readonly logFile: string | undefined
  /** `logtime_utc`: timestamps in UTC instead of local time. */
  readonly logtimeUtc?: boolean | undefined
  /** `log_size_limit` (alias `logfile_size_limit`): rotate `log_file` once it reaches this many bytes; 0 = never. */
  readonly logSizeLimit?: number | undefined
  /** `logfile_max_num` (alias `log_max_num`): log files kept, the live one included; 0 = every one. */
  readonly logMaxNum?: number | undefined
}

export interface ServerOptions {
  /** The configuration file this was loaded from, if any. */
  readonly configFile: string | undefined
  readonly serverName: string
  /** Client listener. */
  readonly host: string
  /** 0 = ephemeral port chosen by the OS (config/flag value -1). */
  readonly port: number

  /** Monitoring; undefined = disabled (config value 0). */
  readonly httpHost: string
  readonly httpPort: number | undefined
  readonly httpsPort: number | undefined
  readonly httpBasePath: string
  readonly httpTls: TlsOptions | undefined

  // Limits, with nats-server's keys and defaults.
  readonly maxConnections: number
  readonly maxPayload: number
  readonly maxControlLine: number
  readonly maxPending: number
  /** 0 = unlimited. */
  readonly maxSubscriptions: number
  readonly writeDeadlineMs: number
  readonly pingIntervalMs: number
  readonly pingMax: number
  /**
   * `busy_poll`: after small chunks of client I/O arriving close together, keep polling
   * the sockets this long instead of sleeping (microseconds; 0 = never). See busy-poll.ts.
   */
  readonly busyPollUs: number
  readonly authTimeoutMs: number
  readonly maxClosedClients: number
  /** `no_header_support`: advertise `headers: false` and refuse HPUB. */
  readonly noHeaderSupport: boolean

  readonly tls: TlsOptions | undefined
  readonly authorization: AuthorizationOptions | undefined
  readonly noAuthUser: string | undefined
  readonly accounts: ReadonlyArray<AccountOptions>
  readonly systemAccount: string

  /** Persistent streams; undefined = disabled. */
  readonly jetstream: JetStreamOptions | undefined
  /** MQTT listener; undefined = disabled. */
  readonly mqtt: MqttOptions | undefined
  /** WebSocket listener (MQTT over WebSocket); undefined = disabled. */
  readonly websocket: WebsocketOptions | undefined
  /** Routes to the other servers of a cluster; undefined = a server on its own. */
  readonly cluster?: ClusterOptions | undefined
  /** Leaf-node connections (a listener for leaf nodes, hubs to connect to); undefined = none. */
  readonly leafnodes?: LeafNodeOptions | undefined

  readonly log: LogOptions

  /** `pid_file`: the process id is written there at start and the file removed at a clean stop. */
  readonly pidFile: string | undefined
  /** `ports_file_dir`: where `<exe>_<pid>.ports` (the listeners' URLs, as JSON) is written. */
  readonly portsFileDir: string | undefined
  /** `lame_duck_duration`: how long lame duck mode takes to close every client (SIGUSR2). */
  readonly lameDuckDurationMs: number
  /** `lame_duck_grace_period`: how long lame duck mode waits before it starts closing clients. */
  readonly lameDuckGracePeriodMs: number
}

export const MiB = 1024 * 1024

/**
 * The embedded defaults: what `npm start` / `switchyard` with no flags and no
 * config file runs with. nats-server's defaults where it has them; the spec's
 * where it differs (MQTT on 1883, monitoring on 8222, streams under ./data).
 * A configuration file or any flag starts from `bareOptions` instead.
 */
export const defaultOptions: ServerOptions = {
  configFile: undefined,
  serverName: "",
  host: "0.0.0.0",
  port: 4222,
  httpHost: "0.0.0.0",
  httpPort: 8222,
  httpsPort: undefined,
  httpBasePath: "",
  httpTls: undefined,
  maxConnections: 64 * 1024,
  maxPayload: 1 * MiB,
  maxControlLine: 4096,
  maxPending: 64 * MiB,
  maxSubscriptions: 0,
  writeDeadlineMs: 10_000,
  pingIntervalMs: 2 * 60_000,
  pingMax: 2,
  busyPollUs: 200,
  authTimeoutMs: 2_000,
  maxClosedClients: 10_000,
  noHeaderSupport: false,
  tls: undefined,
  authorization: undefined,
  noAuthUser: undefined,
  accounts: [],
  systemAccount: "$SYS",
  jetstream: { storeDir: "./data", maxMemory: -1, maxStorage: -1 },
  mqtt: {
    host: "0.0.0.0",
    port: 1883,
    ackWaitMs: 30_000,
    maxAckPending: 1024,
    maxTopicLevels: DEFAULT_MAX_TOPIC_LEVELS,
    maxQueuedMessages: DEFAULT_MAX_QUEUED_MESSAGES,
    maxQueuedBytes: DEFAULT_MAX_QUEUED_BYTES,
    tls: undefined,
    authorization: undefined,
    noAuthUser: undefined
  },
  websocket: undefined,
  log: { debug: false, trace: false, logtime: true, logFile: undefined },
  pidFile: undefined,
  portsFileDir: undefined,
  lameDuckDurationMs: 2 * 60_000,
  lameDuckGracePeriodMs: 10_000
}

/**
 * What a configuration file or flags start from, as in nats-server: the client
 * listener and nothing else. MQTT, WebSocket, JetStream and monitoring run only
 * when the file or the flags name them (`mqtt`, `websocket`, `jetstream`/`-js`,
 * `http`/`http_port`/`https_port`/`-m`/`-ms`).
 */
export const bareOptions: ServerOptions = {
  ...defaultOptions,
  httpPort: undefined,
  jetstream: undefined,
  mqtt: undefined,
  websocket: undefined
}
