// The server's side of monitoring: snapshots of the live engine in the shapes the
// monitoring builders read. Only names, counters and settings cross this line —
// never a password, token or key (the snapshot types have no field for them).
import type {
  AccountSnapshot,
  HealthSnapshot,
  MonitorSource,
  QueueSnapshot,
  ServerSnapshot,
  SublistSnapshot
} from "../core/monitor/source.js"
import { X509Certificate } from "node:crypto"
import { readFileSync } from "node:fs"
import { DEFAULT_MQTT_PROTOCOL_VERSIONS, type ServerOptions, type WebsocketOptions } from "../config/options.js"
import type { Listener } from "../services/transport.js"
import type { Sublist } from "../core/subject/sublist.js"
import { VERSION } from "../version.js"
import type { Account, Subscription } from "../engine/principal.js"
import { accountSharing } from "./imports.js"
import type { Server } from "./server.js"
import type { JetStreamMonitor } from "./jetstream/monitor.js"
import type { MqttBridge } from "./mqtt/bridge.js"
import { mqttConnSnapshot } from "./mqtt/connection.js"
import { WS_HANDSHAKE_TIMEOUT_MS } from "./mqtt/websocket.js"

/** The configured limits as /varz reports them (the authorization block's timeout wins). */
const limitsFromOptions = (o: ServerOptions): ServerSnapshot["limits"] => ({
  maxConnections: o.maxConnections,
  maxSubscriptions: o.maxSubscriptions,
  maxPayload: o.maxPayload,
  maxControlLine: o.maxControlLine,
  maxPending: o.maxPending,
  pingIntervalMs: o.pingIntervalMs,
  pingMax: o.pingMax,
  authTimeoutMs: o.authorization?.timeoutMs ?? o.authTimeoutMs,
  tlsTimeoutMs: o.tls?.timeoutMs ?? 2000,
  writeDeadlineMs: o.writeDeadlineMs
})

export interface MonitorSourceExtras {
  /** Whether the stream subsystem is running. */
  readonly jetstreamConfigured: boolean
  /** The running stream subsystem, when configured. */
  readonly jetstream?: JetStreamMonitor | undefined
  /** The running MQTT bridge, when configured. */
  readonly mqtt?: MqttBridge | undefined
  /** The running MQTT-over-WebSocket listener and its settings, when configured. */
  readonly websocket?: { readonly options: WebsocketOptions; readonly listener: Listener } | undefined
}

export const sublistSnapshot = (sl: Sublist<Subscription>): SublistSnapshot => {
  const s = sl.stats()
  return {
    subscriptions: s.numSubs,
    cacheEntries: s.numCache,
    inserts: s.numInserts,
    removes: s.numRemoves,
    matches: s.numMatches,
    cacheHits: Math.round(s.cacheHitRate * s.numMatches),
    maxFanout: s.maxFanout,
    totalFanout: Math.round(s.avgFanout * s.numCache)
  }
}

/**
 * An account's subscriptions counted as nats-server counts them: with the interest other
 * servers announced on routes and leaf connections (each subject or queue group a peer
 * asked for is one), which nats-server keeps in the same sublist as its clients'.
 */
const withRemoteInterest = (local: SublistSnapshot, server: Server, account: string): SublistSnapshot => {
  const remote = (server.cluster?.interest.countIn(account) ?? 0) + (server.leafnodes?.interest.countIn(account) ?? 0)
  return remote === 0 ? local : { ...local, subscriptions: local.subscriptions + remote }
}

const accountSnapshot = (server: Server, a: Account, extras: MonitorSourceExtras): AccountSnapshot => ({
  name: a.name,
  isSystem: a.name === server.options.systemAccount,
  updated: server.startTime,
  jetstreamEnabled: extras.jetstream?.enabledFor(a.name) ?? false,
  clientConnections: a.numConnections,
  leafConnections: [...(server.leafnodes?.leafs.values() ?? [])].filter((l) => l.registered && l.account === a).length,
  slowConsumers: a.slowConsumers,
  sent: { msgs: a.inMsgs, bytes: a.inBytes },
  received: { msgs: a.outMsgs, bytes: a.outBytes },
  sublist: withRemoteInterest(sublistSnapshot(a.sublist), server, a.name),
  ...accountSharing(server.options, a.name)
})

/** When the client port's certificate expires (ms since the epoch); read once, only the date. */
const certNotAfter = (certFile: string | undefined): number | undefined => {
  if (certFile === undefined) return undefined
  try {
    const t = Date.parse(new X509Certificate(readFileSync(certFile)).validTo)
    return Number.isNaN(t) ? undefined : t
  } catch {
    return undefined
  }
}

export const makeMonitorSource = (server: Server, extras: MonitorSourceExtras): MonitorSource => {
  // TLS is fixed for the life of the process (a reload refuses to change it).
  const tlsCertNotAfter = certNotAfter(server.options.tls?.certFile)
  const mqttSnapshot = (): ServerSnapshot["mqtt"] => {
    const m = extras.mqtt
    if (m === undefined) return undefined
    // What a reload may have changed is read from the options in force.
    const mo = server.options.mqtt ?? m.options
    return {
      host: m.host,
      port: m.port,
      ackWaitMs: mo.ackWaitMs,
      maxAckPending: mo.maxAckPending,
      maxQueuedMessages: mo.maxQueuedMessages,
      maxQueuedBytes: mo.maxQueuedBytes,
      queueDropped: m.queueDrops,
      protocolVersions: m.mqttLevels,
      packetTooLargeDropped: m.tooLargeDrops,
      tlsTimeoutMs: mo.tls?.timeoutMs,
      authTimeoutMs: mo.authorization?.timeoutMs,
      noAuthUser: mo.noAuthUser
    }
  }
  const websocketSnapshot = (): ServerSnapshot["websocket"] => {
    const w = extras.websocket
    if (w === undefined) return undefined
    return {
      host: w.listener.host,
      port: w.listener.port,
      noTls: w.options.noTls,
      compression: w.options.compression,
      handshakeTimeoutMs: w.options.handshakeTimeoutMs ?? WS_HANDSHAKE_TIMEOUT_MS,
      noAuthUser: undefined,
      protocolVersions: w.options.protocolVersions ?? DEFAULT_MQTT_PROTOCOL_VERSIONS
    }
  }
  const serverSnapshot = (): ServerSnapshot => {
    const o = server.options
    return {
      serverId: server.serverId,
      serverName: server.serverName,
      version: VERSION,
      proto: 1,
      gitCommit: "",
      host: server.host,
      port: server.port,
      connectUrls: server.cluster?.connectUrls() ?? [],
      start: server.startTime,
      configLoadTime: server.configLoadTime,
      authRequired: server.authRequired,
      tlsRequired: o.tls !== undefined,
      tlsVerify: o.tls?.verify ?? false,
      tlsCertNotAfter,
      systemAccount: o.systemAccount,
      limits: limitsFromOptions(o),
      counters: {
        // Every client connection counts, whichever protocol it speaks.
        connections: server.clients.size + (extras.mqtt?.connections.size ?? 0),
        totalConnections: server.totalConnections + (extras.mqtt?.totalConnections ?? 0),
        routes: server.cluster?.byId.size ?? 0,
        remotes: server.cluster?.solicits.filter((s) => s.configured).length ?? 0,
        leafnodes: server.leafnodes?.count ?? 0,
        inMsgs: server.inMsgs,
        outMsgs: server.outMsgs,
        inBytes: server.inBytes,
        outBytes: server.outBytes,
        slowConsumers: server.slowConsumers,
        slowConsumersByKind: {
          clients: server.slowConsumers - (server.cluster?.slowConsumers ?? 0) - (server.leafnodes?.slowConsumers ?? 0),
          routes: server.cluster?.slowConsumers ?? 0,
          gateways: 0,
          leafs: server.leafnodes?.slowConsumers ?? 0
        },
        staleConnections: server.staleConnections,
        stalledClients: 0,
        subscriptions: server.numSubscriptions
      },
      mqtt: mqttSnapshot(),
      websocket: websocketSnapshot(),
      cluster: server.cluster?.snapshot(),
      leaf: server.leafnodes?.snapshot()
    }
  }

  const health = (): HealthSnapshot => ({
    // Lame duck mode is a server on its way out: load balancers should stop sending clients.
    notReady: server.shuttingDown ? "server is shutting down" : server.lameDuck ? "server is in lame duck mode" : undefined,
    jetstreamConfigured: extras.jetstreamConfigured,
    jetstreamError: extras.jetstream?.healthError()
  })

  const queues = (): ReadonlyArray<QueueSnapshot> => {
    let pending = 0
    let bytes = 0
    for (const c of server.clients.values()) {
      if (c.pendingBytes > 0) pending++
      bytes += c.pendingBytes
    }
    const out: Array<QueueSnapshot> = [
      { name: "client_outbound_connections", pending, inProgress: 0 },
      { name: "client_outbound_bytes", pending: bytes, inProgress: 0 }
    ]
    // Inbound MQTT packets that span reads: the memory they hold, accounted like pending bytes.
    const mqtt = extras.mqtt
    if (mqtt !== undefined) {
      out.push(
        { name: "mqtt_inbound_partial_connections", pending: mqtt.partialPackets, inProgress: 0 },
        { name: "mqtt_inbound_partial_bytes", pending: mqtt.partialBytes, inProgress: 0 }
      )
    }
    return out
  }

  return {
    now: () => server.now(),
    server: serverSnapshot,
    connections: () => [
      ...[...server.clients.values()].map((c) => c.snapshot()),
      ...(extras.mqtt === undefined ? [] : [...extras.mqtt.connections.values()].map(mqttConnSnapshot))
    ],
    closed: () => server.closed.toArray(),
    accounts: () => [...server.accounts.values()].map((a) => accountSnapshot(server, a, extras)),
    jetstream: () => extras.jetstream?.snapshot(),
    health,
    queues,
    routes: () => server.cluster?.snapshots() ?? [],
    leafs: () => server.leafnodes?.snapshots() ?? []
  }
}
