// /metrics: the same snapshots in the Prometheus text exposition format
// (version 0.0.4), so no exporter sidecar is needed. Switchyard's own series
// (`switchyard_*`): counters end in `_total`, sizes in `_bytes`, times in `_seconds`;
// per-account, per-stream and per-consumer series are labelled. Beside them, the
// series prometheus-nats-exporter makes from /varz, /connz and /jsz, under its names
// (exporter-metrics.ts), for the dashboards written for nats-server.
import type { Jsz, Varz } from "../../schema/monitor.js"
import { connzFamilies, jszFamilies, varzFamilies } from "./exporter-metrics.js"
import { type Family, one, render } from "./prometheus.js"
import type { AccountSnapshot, ConnSnapshot, JetStreamSnapshot, ProcessSnapshot, ServerSnapshot } from "./source.js"

export interface MetricsInput {
  readonly server: ServerSnapshot
  readonly process: ProcessSnapshot
  readonly connections: ReadonlyArray<ConnSnapshot>
  readonly accounts: ReadonlyArray<AccountSnapshot>
  readonly jetstream: JetStreamSnapshot | undefined
  readonly httpReqStats: Readonly<Record<string, number>>
  readonly now: number
  /** /varz, /jsz (with every detail) and /connz's default page size, for the exporter's series. */
  readonly varz: Varz
  readonly jsz: Jsz
  readonly connzLimit: number
}

const serverFamilies = (i: MetricsInput): Array<Family> => {
  const s = i.server
  const c = s.counters
  const byKind = new Map<string, { kind: string; type: string; n: number }>()
  let pending = 0
  for (const conn of i.connections) {
    const key = `${conn.kind}/${conn.type ?? ""}`
    const e = byKind.get(key) ?? { kind: conn.kind, type: conn.type ?? "", n: 0 }
    e.n++
    byKind.set(key, e)
    pending += conn.pendingBytes
  }
  return [
    {
      name: "switchyard_info",
      type: "gauge",
      help: "Server identity; always 1.",
      samples: [[{ server_id: s.serverId, server_name: s.serverName, version: s.version }, 1]]
    },
    one("switchyard_start_time_seconds", "gauge", "When the server started, seconds since the epoch.", s.start / 1000),
    one("switchyard_uptime_seconds", "gauge", "Seconds since the server started.", Math.max(0, (i.now - s.start) / 1000)),
    one("switchyard_connections", "gauge", "Open client connections.", c.connections),
    {
      name: "switchyard_connections_by_kind",
      type: "gauge",
      help: "Open connections by kind (Client, Leafnode, …) and protocol type (nats, mqtt, websocket).",
      samples: [...byKind.values()]
        .sort((a, b) => (a.kind + a.type < b.kind + b.type ? -1 : 1))
        .map((e) => [{ kind: e.kind, type: e.type }, e.n] as const)
    },
    one("switchyard_accepted_connections_total", "counter", "Connections accepted since start.", c.totalConnections),
    one("switchyard_subscriptions", "gauge", "Subscriptions across all accounts.", c.subscriptions),
    one("switchyard_routes", "gauge", "Route connections.", c.routes),
    one("switchyard_remotes", "gauge", "Configured route remotes.", c.remotes),
    one("switchyard_leafnodes", "gauge", "Leafnode connections.", c.leafnodes),
    one("switchyard_pending_bytes", "gauge", "Bytes queued for delivery across all connections.", pending),
    one("switchyard_in_msgs_total", "counter", "Messages received from clients, routes, gateways and leafnodes.", c.inMsgs),
    one("switchyard_out_msgs_total", "counter", "Messages delivered to clients, routes, gateways and leafnodes.", c.outMsgs),
    one("switchyard_in_bytes_total", "counter", "Payload bytes received.", c.inBytes),
    one("switchyard_out_bytes_total", "counter", "Payload bytes delivered.", c.outBytes),
    one("switchyard_slow_consumers_total", "counter", "Connections closed as slow consumers.", c.slowConsumers),
    one("switchyard_stale_connections_total", "counter", "Connections closed as stale (unanswered pings).", c.staleConnections),
    one("switchyard_stalled_clients_total", "counter", "Times a producer was stalled by a slow consumer.", c.stalledClients),
    ...(s.mqtt?.queueDropped === undefined
      ? []
      : [one("switchyard_mqtt_queue_dropped_total", "counter", "MQTT messages dropped (oldest first) at a session's max_queued_messages / max_queued_bytes.", s.mqtt.queueDropped)]),
    one("switchyard_cpu_percent", "gauge", "CPU use over the recent sampling interval, percent of one core.", i.process.cpuPercent),
    one("process_cpu_seconds_total", "counter", "User and system CPU time spent, seconds.", i.process.cpuSeconds),
    one("process_resident_memory_bytes", "gauge", "Resident memory size, bytes.", i.process.rssBytes),
    {
      name: "switchyard_http_requests_total",
      type: "counter",
      help: "Monitoring requests served, by endpoint path.",
      samples: Object.keys(i.httpReqStats)
        .sort()
        .map((path) => [{ path }, i.httpReqStats[path]] as const)
    }
  ]
}

const accountFamilies = (accounts: ReadonlyArray<AccountSnapshot>): Array<Family> => {
  const sorted = [...accounts].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const fam = (name: string, type: Family["type"], help: string, f: (a: AccountSnapshot) => number): Family => ({
    name,
    type,
    help,
    samples: sorted.map((a) => [{ account: a.name }, f(a)] as const)
  })
  return [
    fam("switchyard_account_connections", "gauge", "Open client connections per account.", (a) => a.clientConnections),
    fam("switchyard_account_leafnodes", "gauge", "Open leafnode connections per account.", (a) => a.leafConnections),
    fam("switchyard_account_subscriptions", "gauge", "Subscriptions per account.", (a) => a.sublist.subscriptions),
    fam("switchyard_account_slow_consumers_total", "counter", "Slow consumers per account.", (a) => a.slowConsumers),
    fam("switchyard_account_sent_msgs_total", "counter", "Messages published by the account's clients.", (a) => a.sent.msgs),
    fam("switchyard_account_sent_bytes_total", "counter", "Bytes published by the account's clients.", (a) => a.sent.bytes),
    fam("switchyard_account_received_msgs_total", "counter", "Messages delivered to the account's clients.", (a) => a.received.msgs),
    fam("switchyard_account_received_bytes_total", "counter", "Bytes delivered to the account's clients.", (a) => a.received.bytes)
  ]
}

const jetstreamFamilies = (js: JetStreamSnapshot | undefined): Array<Family> => {
  const enabled = one("switchyard_jetstream_enabled", "gauge", "1 when the stream subsystem is running.", js === undefined ? 0 : 1)
  if (js === undefined) return [enabled]
  const streams = js.accounts.flatMap((a) => a.streams.map((s) => ({ account: a.name, s })))
  const consumers = streams.flatMap(({ account, s }) => s.consumers.map((c) => ({ account, stream: s.name, c })))
  const perStream = (name: string, help: string, f: (s: (typeof streams)[number]["s"]) => number): Family => ({
    name,
    type: "gauge",
    help,
    samples: streams.map(({ account, s }) => [{ account, stream: s.name }, f(s)] as const)
  })
  const perConsumer = (name: string, help: string, f: (c: (typeof consumers)[number]["c"]) => number): Family => ({
    name,
    type: "gauge",
    help,
    samples: consumers.map(({ account, stream, c }) => [{ account, stream, consumer: c.name }, f(c)] as const)
  })
  return [
    enabled,
    one("switchyard_jetstream_memory_bytes", "gauge", "Bytes stored in memory streams.", js.memory),
    one("switchyard_jetstream_storage_bytes", "gauge", "Bytes stored in file streams.", js.storage),
    one("switchyard_jetstream_reserved_memory_bytes", "gauge", "Memory reserved by account limits.", js.reservedMemory),
    one("switchyard_jetstream_reserved_storage_bytes", "gauge", "Storage reserved by account limits.", js.reservedStorage),
    one("switchyard_jetstream_streams", "gauge", "Streams.", streams.length),
    one("switchyard_jetstream_consumers", "gauge", "Consumers.", consumers.length),
    one("switchyard_jetstream_api_requests_total", "counter", "Stream API requests.", js.api.total),
    one("switchyard_jetstream_api_errors_total", "counter", "Stream API requests answered with an error.", js.api.errors),
    perStream("switchyard_stream_messages", "Messages stored per stream.", (s) => s.state.messages),
    perStream("switchyard_stream_bytes", "Bytes stored per stream.", (s) => s.state.bytes),
    perStream("switchyard_stream_first_seq", "First sequence per stream.", (s) => s.state.firstSeq),
    perStream("switchyard_stream_last_seq", "Last sequence per stream.", (s) => s.state.lastSeq),
    perStream("switchyard_stream_consumers", "Consumers per stream.", (s) => s.state.consumerCount),
    perConsumer("switchyard_consumer_num_pending", "Messages not yet delivered per consumer.", (c) => c.numPending),
    perConsumer("switchyard_consumer_ack_pending", "Delivered, unacknowledged messages per consumer.", (c) => c.numAckPending),
    perConsumer("switchyard_consumer_redelivered", "Messages redelivered per consumer.", (c) => c.numRedelivered),
    perConsumer("switchyard_consumer_waiting", "Waiting pull requests per consumer.", (c) => c.numWaiting)
  ]
}

export const buildMetrics = (i: MetricsInput): string =>
  render([
    ...serverFamilies(i),
    ...accountFamilies(i.accounts),
    ...jetstreamFamilies(i.jetstream),
    ...varzFamilies(i.varz),
    ...connzFamilies(i.server.serverId, i.connections, i.connzLimit),
    ...jszFamilies(i.jsz, i.server.serverName)
  ])
