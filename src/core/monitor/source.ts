// What the monitoring layer reads from the running server: plain snapshots the
// server fills in on request. The builders turn them into nats-server's JSON.
// Nothing here may carry a secret (password, token, private key, JWT): what is
// not in these types cannot leak through a monitoring response.
//
// Conventions: times are milliseconds since the epoch (fractions allowed for
// sub-millisecond precision); counters are cumulative since server start unless
// said otherwise; sizes are bytes.

/** Where the monitoring layer gets everything it reports. Implemented by the server. */
export interface MonitorSource {
  /** Wall-clock time, ms since the epoch. The only clock the builders see. */
  now(): number
  /** Identity, settings and server-wide counters. */
  server(): ServerSnapshot
  /**
   * Open connections as /connz lists them: clients (NATS, MQTT, WebSocket); the server
   * lists its leaf connections in `leafs` only, as nats-server's /connz lists clients
   * only. Internal clients (system, JetStream) are left out.
   */
  connections(): ReadonlyArray<ConnSnapshot>
  /** Recently closed connections, oldest first, bounded by `max_closed_clients`. */
  closed(): ReadonlyArray<ClosedConnSnapshot>
  /** Every account, including the global account `$G` and the system account. */
  accounts(): ReadonlyArray<AccountSnapshot>
  /** The stream subsystem; undefined when it is disabled (or not running). */
  jetstream(): JetStreamSnapshot | undefined
  /** Readiness and stream-subsystem health, for /healthz. */
  health(): HealthSnapshot
  /** Internal queues beyond the per-connection outbound buffers (e.g. store write queues). */
  queues?(): ReadonlyArray<QueueSnapshot>
  /** Route connections (clustering); absent or empty until routes exist. */
  routes?(): ReadonlyArray<RouteSnapshot>
  /** Leaf-node connections (both roles), as /leafz lists them; absent or empty without leaf nodes. */
  leafs?(): ReadonlyArray<ConnSnapshot>
  /** Gateway state (superclusters); absent until gateways exist. */
  gateways?(): GatewaySnapshot | undefined
}

export type ConnKind = "Client" | "Router" | "Gateway" | "Leafnode" | "JetStream" | "Account" | "System"
export type ClientType = "nats" | "mqtt" | "websocket"

/** One subscription of a connection. */
export interface SubSnapshot {
  readonly subject: string
  /** Queue group, if any. */
  readonly queue: string | undefined
  /** The client's subscription id (for MQTT, the server-assigned one). */
  readonly sid: string
  /** Messages delivered on this subscription. */
  readonly msgs: number
  /** Auto-unsubscribe limit; 0 = none. */
  readonly max: number
  /** The account it is in, where a list mixes accounts (a route's interest). */
  readonly account?: string
}

/** One open connection. */
export interface ConnSnapshot {
  readonly cid: number
  readonly kind: ConnKind
  /** Protocol of a client connection; undefined for non-clients (leafnodes). */
  readonly type: ClientType | undefined
  /** Remote address and port. */
  readonly ip: string
  readonly port: number
  /** When the connection was accepted. */
  readonly start: number
  /** Last time anything was read from or written to it. */
  readonly lastActivity: number
  /** Last measured round-trip time, nanoseconds; 0 = not measured yet. */
  readonly rttNs: number
  /** Bytes queued for this connection and not yet written to the socket. */
  readonly pendingBytes: number
  /** Messages/bytes received from (in) and delivered to (out) this connection. */
  readonly inMsgs: number
  readonly outMsgs: number
  readonly inBytes: number
  readonly outBytes: number
  readonly subs: ReadonlyArray<SubSnapshot>
  /** From CONNECT: client name, library language and version ("" when not given). */
  readonly name: string
  readonly lang: string
  readonly version: string
  /** Negotiated TLS version (e.g. "1.3") and cipher suite; undefined on plain connections. */
  readonly tlsVersion: string | undefined
  readonly tlsCipher: string | undefined
  /**
   * Who authenticated: the user name or nkey public key. Never a password or a
   * token; for token authentication leave it undefined.
   */
  readonly user: string | undefined
  /** Account name (`$G` when no accounts are configured). */
  readonly account: string
  /** MQTT client id, for MQTT connections. */
  readonly mqttClient: string | undefined
  /** For kind "Leafnode": what /leafz shows about the remote side. */
  readonly leaf?: LeafSnapshot
}

export interface LeafSnapshot {
  /** Remote server name (or id). */
  readonly remoteServer: string
  /** This server is the spoke of this connection: it solicited it (a remote of ours), the other side is its hub. */
  readonly isSpoke: boolean
  readonly compression: string | undefined
}

/** A connection from the closed-connection ring: the last snapshot plus why and when it ended. */
export interface ClosedConnSnapshot extends ConnSnapshot {
  readonly stop: number
  /** nats-server's reason text: "Client Closed", "Stale Connection", "Slow Consumer (Pending Bytes)", … */
  readonly reason: string
}

/** Identity, settings and counters of the server. Only safe-to-publish settings. */
export interface ServerSnapshot {
  readonly serverId: string
  /** Configured name; the server id when none is configured. */
  readonly serverName: string
  readonly version: string
  /** Client protocol number (nats-server: 1). */
  readonly proto: number
  readonly gitCommit: string
  /** Client listener address and the port actually bound. */
  readonly host: string
  readonly port: number
  /** URLs clients may reconnect to (cluster gossip); empty when standalone. */
  readonly connectUrls: ReadonlyArray<string>
  readonly start: number
  /** When the configuration was (re)loaded. */
  readonly configLoadTime: number
  readonly authRequired: boolean
  readonly tlsRequired: boolean
  readonly tlsVerify: boolean
  /** Expiry of the client-listener certificate, when TLS is configured. */
  readonly tlsCertNotAfter: number | undefined
  readonly systemAccount: string
  readonly limits: LimitsSnapshot
  readonly counters: ServerCounters
  /** MQTT listener settings; undefined when MQTT is off. */
  readonly mqtt: MqttSnapshot | undefined
  /** WebSocket listener settings; undefined when off. */
  readonly websocket: WebsocketSnapshot | undefined
  /** Cluster (routes) settings; undefined until clustering exists. */
  readonly cluster: ClusterSnapshot | undefined
  /** Leaf-node settings; undefined without a leafnodes block. */
  readonly leaf?: LeafNodesSnapshot | undefined
}

/** The `leafnodes` block as /varz shows it (never a credential). */
export interface LeafNodesSnapshot {
  /** The leaf listener; undefined when there is none (only remotes). */
  readonly host: string | undefined
  readonly port: number | undefined
  /** How long an accepted leaf connection has to authenticate, milliseconds. */
  readonly authTimeoutMs: number
  readonly remotes: ReadonlyArray<{ readonly localAccount: string; readonly urls: ReadonlyArray<string> }>
}

export interface LimitsSnapshot {
  readonly maxConnections: number
  /** 0 = unlimited. */
  readonly maxSubscriptions: number
  readonly maxPayload: number
  readonly maxControlLine: number
  readonly maxPending: number
  readonly pingIntervalMs: number
  readonly pingMax: number
  readonly authTimeoutMs: number
  readonly tlsTimeoutMs: number
  readonly writeDeadlineMs: number
}

export interface ServerCounters {
  /** Open client connections (what /varz `connections` reports). */
  readonly connections: number
  /** Connections accepted since start. */
  readonly totalConnections: number
  readonly routes: number
  /** Configured route remotes. */
  readonly remotes: number
  readonly leafnodes: number
  readonly inMsgs: number
  readonly outMsgs: number
  readonly inBytes: number
  readonly outBytes: number
  /** Slow-consumer disconnections, total and by connection kind. */
  readonly slowConsumers: number
  readonly slowConsumersByKind: { readonly clients: number; readonly routes: number; readonly gateways: number; readonly leafs: number }
  readonly staleConnections: number
  readonly stalledClients: number
  /** Subscriptions across all accounts. */
  readonly subscriptions: number
}

export interface MqttSnapshot {
  readonly host: string
  readonly port: number
  readonly ackWaitMs: number
  readonly maxAckPending: number
  /** mqtt.max_queued_messages / max_queued_bytes (0: no bound). */
  readonly maxQueuedMessages?: number | undefined
  readonly maxQueuedBytes?: number | undefined
  /** Messages dropped at sessions' queue bounds since start. */
  readonly queueDropped?: number | undefined
  /** MQTT 5.0 deliveries dropped for exceeding the client's Maximum Packet Size since start. */
  readonly packetTooLargeDropped?: number | undefined
  /** `protocol_versions`: the MQTT protocol levels the listener accepts (4: 3.1.1, 5: 5.0). */
  readonly protocolVersions?: ReadonlyArray<number> | undefined
  readonly tlsTimeoutMs: number | undefined
  readonly authTimeoutMs: number | undefined
  /** The user unauthenticated MQTT clients are bound to (a name, never a password). */
  readonly noAuthUser: string | undefined
}

export interface WebsocketSnapshot {
  readonly host: string
  readonly port: number
  readonly noTls: boolean
  readonly compression: boolean
  readonly handshakeTimeoutMs: number | undefined
  readonly noAuthUser: string | undefined
  /** `protocol_versions` of MQTT over this listener. */
  readonly protocolVersions?: ReadonlyArray<number> | undefined
}

export interface ClusterSnapshot {
  readonly name: string
  readonly host: string
  readonly port: number
  /** Route URLs as host:port, without credentials. */
  readonly urls: ReadonlyArray<string>
  readonly tlsRequired: boolean
  /** Routes must present a certificate (`cluster.tls.verify`). */
  readonly tlsVerify?: boolean
  readonly poolSize: number
  /** How long an accepted route has to authenticate, milliseconds. */
  readonly authTimeoutMs?: number
}

/** Sublist counters of one account (nats-server's SublistStats inputs). */
export interface SublistSnapshot {
  readonly subscriptions: number
  /** Entries in the match cache. */
  readonly cacheEntries: number
  readonly inserts: number
  readonly removes: number
  /** Match operations, and how many were answered from the cache. */
  readonly matches: number
  readonly cacheHits: number
  /** Largest and summed fan-out over the cached results (avg = total / cacheEntries). */
  readonly maxFanout: number
  readonly totalFanout: number
}

export interface AccountExportSnapshot {
  readonly subject: string
  readonly type: "stream" | "service"
  /** Accounts allowed to import it; undefined = public. */
  readonly approvedAccounts: ReadonlyArray<string> | undefined
}

export interface AccountImportSnapshot {
  readonly subject: string
  /** The exporting account. */
  readonly account: string
  readonly type: "stream" | "service"
  /** Local subject (prefix/`to` applied), when it differs. */
  readonly localSubject: string | undefined
  /** Could not be bound (exporting account or export missing). */
  readonly invalid: boolean
}

export interface AccountSnapshot {
  readonly name: string
  readonly isSystem: boolean
  /** When the account was created or last updated. */
  readonly updated: number
  readonly jetstreamEnabled: boolean
  /** Open client and leafnode connections bound to the account. */
  readonly clientConnections: number
  readonly leafConnections: number
  readonly slowConsumers: number
  /** Messages/bytes the account's clients sent (published) and received (were delivered). */
  readonly sent: { readonly msgs: number; readonly bytes: number }
  readonly received: { readonly msgs: number; readonly bytes: number }
  readonly sublist: SublistSnapshot
  readonly exports: ReadonlyArray<AccountExportSnapshot>
  readonly imports: ReadonlyArray<AccountImportSnapshot>
}

/** /healthz inputs. */
export interface HealthSnapshot {
  /** Undefined when the server accepts connections; otherwise why it does not (yet). */
  readonly notReady: string | undefined
  /** Streams are enabled in the configuration. */
  readonly jetstreamConfigured: boolean
  /**
   * When configured: undefined if the subsystem is running and every stream and
   * consumer recovered; otherwise the first problem, in nats-server's words
   * ("JetStream not enabled", "JetStream stream 'ACC > S' could not be recovered", …).
   */
  readonly jetstreamError: string | undefined
}

export interface JetStreamSnapshot {
  readonly config: {
    /** Bytes; -1 = unlimited. */
    readonly maxMemory: number
    readonly maxStorage: number
    readonly storeDir: string
    readonly syncIntervalMs: number | undefined
    readonly syncAlways: boolean | undefined
    readonly domain: string | undefined
  }
  /** Bytes used in memory and file storage, and reserved by account limits. */
  readonly memory: number
  readonly storage: number
  readonly reservedMemory: number
  readonly reservedStorage: number
  /** Replicated streams and consumers (0 standalone). */
  readonly haAssets: number
  readonly api: { readonly total: number; readonly errors: number; readonly inflight: number | undefined }
  /** This server leads the stream subsystem (always true standalone). */
  readonly isLeader: boolean
  /** Consensus metadata; undefined standalone. */
  readonly meta: JetStreamMetaSnapshot | undefined
  /** Accounts with streams enabled, in any order (the builder sorts by name). */
  readonly accounts: ReadonlyArray<JetStreamAccountSnapshot>
}

export interface JetStreamMetaSnapshot {
  readonly name: string
  readonly leader: string
  readonly leaderId: string
  readonly clusterSize: number
  readonly peers: ReadonlyArray<{
    readonly name: string
    readonly id: string
    readonly current: boolean
    readonly offline: boolean
    /** Nanoseconds since last heard from. */
    readonly activeNs: number
    readonly lag: number
  }>
}

export interface JetStreamAccountSnapshot {
  readonly name: string
  readonly memory: number
  readonly storage: number
  readonly reservedMemory: number
  readonly reservedStorage: number
  readonly api: { readonly total: number; readonly errors: number }
  readonly streams: ReadonlyArray<StreamSnapshot>
}

export interface StreamSnapshot {
  readonly name: string
  readonly created: number
  /** The stream configuration in its JetStream-API JSON form (no secrets in it). */
  readonly config: Readonly<Record<string, unknown>>
  readonly state: {
    readonly messages: number
    readonly bytes: number
    readonly firstSeq: number
    /** Time of the first/last stored message; 0 when the stream is empty. */
    readonly firstTs: number
    readonly lastSeq: number
    readonly lastTs: number
    readonly numSubjects: number | undefined
    readonly numDeleted: number | undefined
    readonly consumerCount: number
  }
  readonly consumers: ReadonlyArray<ConsumerSnapshot>
}

export interface ConsumerSnapshot {
  readonly name: string
  readonly created: number
  /** The consumer configuration in its JetStream-API JSON form. */
  readonly config: Readonly<Record<string, unknown>>
  readonly delivered: { readonly consumerSeq: number; readonly streamSeq: number; readonly lastActive: number | undefined }
  readonly ackFloor: { readonly consumerSeq: number; readonly streamSeq: number; readonly lastActive: number | undefined }
  readonly numAckPending: number
  readonly numRedelivered: number
  readonly numWaiting: number
  readonly numPending: number
  readonly pushBound: boolean | undefined
}

/** An internal queue and its depth. */
export interface QueueSnapshot {
  readonly name: string
  /** Items waiting. */
  readonly pending: number
  /** Items taken but not yet finished. */
  readonly inProgress: number
}

export interface RouteSnapshot {
  readonly rid: number
  readonly remoteId: string
  readonly remoteName: string
  readonly didSolicit: boolean
  readonly isConfigured: boolean
  readonly ip: string
  readonly port: number
  readonly start: number
  readonly lastActivity: number
  readonly rttNs: number
  readonly pendingBytes: number
  readonly inMsgs: number
  readonly outMsgs: number
  readonly inBytes: number
  readonly outBytes: number
  readonly subs: ReadonlyArray<SubSnapshot>
  /** Pinned account of a per-account route. */
  readonly account: string | undefined
  readonly compression: string | undefined
}

export interface GatewaySnapshot {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly outbound: ReadonlyArray<{ readonly name: string; readonly configured: boolean; readonly conn: ConnSnapshot }>
  readonly inbound: ReadonlyArray<{ readonly name: string; readonly configured: boolean; readonly conn: ConnSnapshot }>
}

/** Process-level readings (memory, CPU, runtime). Provided by the shell, not the server. */
export interface ProcessSnapshot {
  /** Resident set size, bytes. */
  readonly rssBytes: number
  /** CPU use over the recent sampling interval, percent of one core (may exceed 100). */
  readonly cpuPercent: number
  /** CPU seconds used since process start (user + system). */
  readonly cpuSeconds: number
  /** CPU cores on the machine, and how many this process may use. */
  readonly cores: number
  readonly maxProcs: number
  /** Runtime version string, e.g. "node v20.11.1". */
  readonly runtime: string
}

/** The shell's view of the process: sampled on demand. */
export interface ProcessProbe {
  sample(): ProcessSnapshot
  /** The raw diagnostic report (`process.report.getReport()`); /stacksz keeps only its safe parts. */
  report(): Readonly<Record<string, unknown>>
}
