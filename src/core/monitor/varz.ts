// /varz from the server snapshot, the process readings, the stream subsystem
// and the monitoring listener's own facts (bound ports, request counts).
import type { Varz } from "../../schema/monitor.js"
import { formatTimestamp, formatUptime } from "./format.js"
import { jetStreamConfig, jetStreamStats, metaClusterInfo } from "./jsz.js"
import type { JetStreamSnapshot, ProcessSnapshot, ServerSnapshot } from "./source.js"

/** What the monitoring listener knows about itself. */
export interface HttpInfo {
  readonly host: string
  /** Bound ports; 0 when that listener is not running. */
  readonly port: number
  readonly httpsPort: number
  readonly basePath: string
  /** Requests served per endpoint path (nats-server's http_req_stats). */
  readonly reqStats: Readonly<Record<string, number>>
}

const seconds = (ms: number): number => ms / 1000
const nanos = (ms: number): number => Math.round(ms * 1_000_000)

const mqttBlock = (s: ServerSnapshot): Varz["mqtt"] => {
  const m = s.mqtt
  if (m === undefined) return {}
  return {
    host: m.host,
    port: m.port,
    ...(m.noAuthUser ? { no_auth_user: m.noAuthUser } : {}),
    ...(m.authTimeoutMs ? { auth_timeout: seconds(m.authTimeoutMs) } : {}),
    ...(m.tlsTimeoutMs ? { tls_timeout: seconds(m.tlsTimeoutMs) } : {}),
    ack_wait: nanos(m.ackWaitMs),
    max_ack_pending: m.maxAckPending,
    ...(m.maxQueuedMessages === undefined ? {} : { max_queued_messages: m.maxQueuedMessages, max_queued_bytes: m.maxQueuedBytes ?? 0 }),
    ...(m.queueDropped === undefined ? {} : { queue_dropped: m.queueDropped }),
    ...(m.protocolVersions === undefined ? {} : { protocol_versions: [...m.protocolVersions] }),
    ...(m.packetTooLargeDropped === undefined ? {} : { packet_too_large_dropped: m.packetTooLargeDropped })
  }
}

const websocketBlock = (s: ServerSnapshot): Varz["websocket"] => {
  const w = s.websocket
  if (w === undefined) return {}
  return {
    host: w.host,
    port: w.port,
    ...(w.noAuthUser ? { no_auth_user: w.noAuthUser } : {}),
    ...(w.handshakeTimeoutMs ? { handshake_timeout: nanos(w.handshakeTimeoutMs) } : {}),
    ...(w.noTls ? { no_tls: true } : {}),
    ...(w.compression ? { compression: true } : {}),
    ...(w.protocolVersions === undefined ? {} : { protocol_versions: [...w.protocolVersions] })
  }
}

const clusterBlock = (s: ServerSnapshot): Varz["cluster"] => {
  const c = s.cluster
  if (c === undefined) return {}
  return {
    ...(c.name ? { name: c.name } : {}),
    ...(c.host ? { addr: c.host } : {}),
    ...(c.port ? { cluster_port: c.port } : {}),
    ...(c.authTimeoutMs !== undefined ? { auth_timeout: c.authTimeoutMs / 1000 } : {}),
    ...(c.urls.length > 0 ? { urls: [...c.urls] } : {}),
    ...(c.tlsRequired ? { tls_required: true, tls_verify: c.tlsVerify === true } : {}),
    ...(c.poolSize ? { pool_size: c.poolSize } : {})
  }
}

const leafBlock = (s: ServerSnapshot): Varz["leaf"] => {
  const l = s.leaf
  if (l === undefined) return {}
  return {
    ...(l.host !== undefined ? { host: l.host } : {}),
    ...(l.port !== undefined ? { port: l.port } : {}),
    auth_timeout: l.authTimeoutMs / 1000,
    ...(l.remotes.length > 0 ? { remotes: l.remotes.map((r) => ({ local_account: r.localAccount, urls: [...r.urls] })) } : {})
  }
}

const jetstreamBlock = (js: JetStreamSnapshot | undefined): Varz["jetstream"] => {
  if (js === undefined) return {}
  const meta = metaClusterInfo(js)
  return { config: jetStreamConfig(js), stats: jetStreamStats(js), ...(meta !== undefined ? { meta } : {}) }
}

export const buildVarz = (
  s: ServerSnapshot,
  p: ProcessSnapshot,
  js: JetStreamSnapshot | undefined,
  http: HttpInfo,
  now: number
): Varz => {
  const l = s.limits
  const c = s.counters
  return {
    server_id: s.serverId,
    server_name: s.serverName,
    version: s.version,
    proto: s.proto,
    git_commit: s.gitCommit,
    go: p.runtime,
    host: s.host,
    port: s.port,
    auth_required: s.authRequired,
    tls_required: s.tlsRequired,
    tls_verify: s.tlsVerify,
    ...(s.connectUrls.length > 0 ? { connect_urls: [...s.connectUrls] } : {}),
    max_connections: l.maxConnections,
    max_subscriptions: l.maxSubscriptions,
    ping_interval: nanos(l.pingIntervalMs),
    ping_max: l.pingMax,
    http_host: http.host,
    http_port: http.port,
    http_base_path: http.basePath,
    https_port: http.httpsPort,
    auth_timeout: seconds(l.authTimeoutMs),
    max_control_line: l.maxControlLine,
    max_payload: l.maxPayload,
    max_pending: l.maxPending,
    cluster: clusterBlock(s),
    gateway: {},
    leaf: leafBlock(s),
    mqtt: mqttBlock(s),
    websocket: websocketBlock(s),
    jetstream: jetstreamBlock(js),
    tls_timeout: seconds(l.tlsTimeoutMs),
    write_deadline: nanos(l.writeDeadlineMs),
    start: formatTimestamp(s.start),
    now: formatTimestamp(now),
    uptime: formatUptime(now - s.start),
    mem: Math.max(0, Math.round(p.rssBytes)),
    cores: p.cores,
    gomaxprocs: p.maxProcs,
    cpu: Math.round(p.cpuPercent * 100) / 100,
    connections: c.connections,
    total_connections: c.totalConnections,
    routes: c.routes,
    remotes: c.remotes,
    leafnodes: c.leafnodes,
    in_msgs: c.inMsgs,
    out_msgs: c.outMsgs,
    in_bytes: c.inBytes,
    out_bytes: c.outBytes,
    slow_consumers: c.slowConsumers,
    stale_connections: c.staleConnections,
    stalled_clients: c.stalledClients,
    subscriptions: c.subscriptions,
    http_req_stats: { ...http.reqStats },
    config_load_time: formatTimestamp(s.configLoadTime),
    ...(s.systemAccount ? { system_account: s.systemAccount } : {}),
    slow_consumer_stats: {
      clients: c.slowConsumersByKind.clients,
      routes: c.slowConsumersByKind.routes,
      gateways: c.slowConsumersByKind.gateways,
      leafs: c.slowConsumersByKind.leafs
    },
    ...(s.tlsCertNotAfter !== undefined ? { tls_cert_not_after: formatTimestamp(s.tlsCertNotAfter) } : {})
  }
}
