// The series prometheus-nats-exporter makes out of /varz, /connz and /jsz, under its
// names, so Grafana dashboards and alerts written for nats-server work against
// /metrics with no exporter in between. The values come from the same builders as
// the JSON endpoints, so the two never disagree:
// - `gnatsd_varz_<field>`: every number of /varz, nested objects joined with `_`
//   (`gnatsd_varz_jetstream_stats_storage`, `gnatsd_varz_slow_consumer_stats_clients`),
//   times as epoch milliseconds, server_id / server_name / version as `{value="…"} 1`;
// - `gnatsd_connz_<field>`: the page /connz answers by default, with its connections' sums;
// - `jetstream_server_*`, `jetstream_account_*`, `jetstream_stream_*`, `jetstream_consumer_*`:
//   /jsz with accounts, streams and consumers (the exporter's `-jsz=all`).
// Every series is a gauge labelled `server_id`, as the exporter makes them, except the
// connz message and byte sums, which it types as counters.
import type { Jsz, Varz } from "../../schema/monitor.js"
import type { Family, Labels } from "./prometheus.js"
import type { ConnSnapshot } from "./source.js"

/** /varz string fields the exporter turns into `{value="…"} 1` gauges. */
const LABEL_KEYS = new Set(["server_id", "server_name", "version", "name", "leader", "domain"])
/** /varz timestamps the exporter turns into epoch milliseconds. */
const TIME_KEYS = new Set(["start", "config_load_time"])

/** A JSON key as a metric name part: `/varz` (an http_req_stats key) becomes `varz`. */
const namePart = (key: string): string => key.replace(/^\/+/, "").replace(/[^A-Za-z0-9_]/g, "_")

const gauge = (name: string, samples: ReadonlyArray<readonly [Labels, number]>, help: string): Family => ({
  name,
  type: "gauge",
  help,
  samples
})

/** `gnatsd_varz_*`: the numbers of /varz, nested objects flattened, by field name. */
export const varzFamilies = (varz: Varz): Array<Family> => {
  const server = { server_id: varz.server_id }
  const out: Array<Family> = []
  const walk = (prefix: string, obj: Readonly<Record<string, unknown>>): void => {
    for (const key of Object.keys(obj).sort()) {
      const v = obj[key]
      const part = namePart(key)
      if (part === "") continue
      const name = `${prefix}_${part}`
      if (typeof v === "number" && Number.isFinite(v)) out.push(gauge(name, [[server, v]], name.slice("gnatsd_varz_".length)))
      else if (typeof v === "string" && TIME_KEYS.has(key) && prefix === "gnatsd_varz") {
        const ms = Date.parse(v)
        if (!Number.isNaN(ms)) out.push(gauge(name, [[server, ms]], name.slice("gnatsd_varz_".length)))
      } else if (typeof v === "string" && LABEL_KEYS.has(key)) {
        out.push(gauge(name, [[{ ...server, value: v }, 1]], name.slice("gnatsd_varz_".length)))
      } else if (typeof v === "object" && v !== null && !Array.isArray(v)) walk(name, v as Record<string, unknown>)
    }
  }
  walk("gnatsd_varz", varz as unknown as Record<string, unknown>)
  return out
}

/** `gnatsd_connz_*`: the default /connz page (open connections by cid, `limit` of them) and its sums. */
export const connzFamilies = (serverId: string, open: ReadonlyArray<ConnSnapshot>, limit: number): Array<Family> => {
  const page = [...open].sort((a, b) => a.cid - b.cid).slice(0, limit)
  const sum = (f: (c: ConnSnapshot) => number) => page.reduce((n, c) => n + f(c), 0)
  const s = { server_id: serverId }
  const counter = (name: string, v: number): Family => ({ name, type: "counter", help: name.slice("gnatsd_connz_".length), samples: [[s, v]] })
  return [
    gauge("gnatsd_connz_num_connections", [[s, page.length]], "num_connections"),
    gauge("gnatsd_connz_total", [[s, open.length]], "total"),
    gauge("gnatsd_connz_offset", [[s, 0]], "offset"),
    gauge("gnatsd_connz_limit", [[s, limit]], "limit"),
    gauge("gnatsd_connz_pending_bytes", [[s, sum((c) => c.pendingBytes)]], "pending_bytes"),
    gauge("gnatsd_connz_subscriptions", [[s, sum((c) => c.subs.length)]], "subscriptions"),
    counter("gnatsd_connz_in_msgs", sum((c) => c.inMsgs)),
    counter("gnatsd_connz_out_msgs", sum((c) => c.outMsgs)),
    counter("gnatsd_connz_in_bytes", sum((c) => c.inBytes)),
    counter("gnatsd_connz_out_bytes", sum((c) => c.outBytes))
  ]
}

const num = (o: unknown, key: string): number => {
  const v = typeof o === "object" && o !== null ? (o as Record<string, unknown>)[key] : undefined
  return typeof v === "number" ? v : 0
}
const str = (o: unknown, key: string): string => {
  const v = typeof o === "object" && o !== null ? (o as Record<string, unknown>)[key] : undefined
  return typeof v === "string" ? v : ""
}

/** `jetstream_*` from /jsz with account, stream and consumer detail (and their configurations). */
export const jszFamilies = (jsz: Jsz, serverName: string): Array<Family> => {
  const meta = jsz.meta_cluster
  const server: Labels = {
    server_id: jsz.server_id,
    server_name: serverName,
    cluster: meta?.name ?? "",
    domain: jsz.config.domain ?? "",
    meta_leader: meta?.leader ?? "",
    is_meta_leader: meta === undefined || meta.leader === serverName ? "true" : "false"
  }
  const accounts = jsz.account_details ?? []
  const streams = accounts.flatMap((a) => (a.stream_detail ?? []).map((s) => ({ a, s })))
  const consumers = streams.flatMap(({ a, s }) => (s.consumer_detail ?? []).map((c) => ({ a, s, c })))
  const accountLabels = (a: (typeof accounts)[number]): Labels => ({ ...server, account: a.name, account_name: a.name, account_id: a.id })
  const streamLabels = (a: (typeof accounts)[number], s: (typeof streams)[number]["s"]): Labels => ({
    ...accountLabels(a),
    stream_name: s.name,
    stream_leader: s.cluster?.leader ?? "",
    is_stream_leader: s.cluster?.leader === undefined || s.cluster.leader === serverName ? "true" : "false",
    stream_raft_group: ""
  })
  const one = (name: string, v: number, help: string) => gauge(name, [[server, v]], help)
  const perAccount = (name: string, help: string, f: (a: (typeof accounts)[number]) => number) =>
    gauge(name, accounts.map((a) => [accountLabels(a), f(a)] as const), help)
  const perStream = (name: string, help: string, f: (s: (typeof streams)[number]["s"]) => number) =>
    gauge(name, streams.map(({ a, s }) => [streamLabels(a, s), f(s)] as const), help)
  const perConsumer = (name: string, help: string, f: (c: (typeof consumers)[number]["c"]) => number) =>
    gauge(name, consumers.map(({ a, s, c }) => [{
      ...streamLabels(a, s),
      consumer_name: c.name,
      consumer_leader: c.cluster?.leader ?? "",
      is_consumer_leader: c.cluster?.leader === undefined || c.cluster.leader === serverName ? "true" : "false",
      consumer_desc: str(c.config, "description")
    }, f(c)] as const), help)
  return [
    one("jetstream_server_jetstream_disabled", jsz.disabled === true ? 1 : 0, "1 when the stream subsystem is off"),
    one("jetstream_server_max_memory", jsz.config.max_memory, "Memory the stream subsystem may use, bytes (-1 unlimited)"),
    one("jetstream_server_max_storage", jsz.config.max_storage, "Storage the stream subsystem may use, bytes (-1 unlimited)"),
    one("jetstream_server_total_streams", jsz.streams, "Streams on this server"),
    one("jetstream_server_total_consumers", jsz.consumers, "Consumers on this server"),
    one("jetstream_server_total_messages", jsz.messages, "Messages stored in every stream"),
    one("jetstream_server_total_message_bytes", jsz.bytes, "Bytes stored in every stream"),
    perAccount("jetstream_account_max_memory", "Memory reserved by the account's streams, bytes", (a) => a.reserved_memory),
    perAccount("jetstream_account_max_storage", "Storage reserved by the account's streams, bytes", (a) => a.reserved_storage),
    perAccount("jetstream_account_memory_used", "Memory the account's streams use, bytes", (a) => a.memory),
    perAccount("jetstream_account_storage_used", "Storage the account's streams use, bytes", (a) => a.storage),
    perStream("jetstream_stream_total_messages", "Messages in the stream", (s) => s.state.messages),
    perStream("jetstream_stream_total_bytes", "Bytes in the stream", (s) => s.state.bytes),
    perStream("jetstream_stream_first_seq", "The stream's first sequence", (s) => s.state.first_seq),
    perStream("jetstream_stream_last_seq", "The stream's last sequence", (s) => s.state.last_seq),
    perStream("jetstream_stream_consumer_count", "The stream's consumers", (s) => s.state.consumer_count),
    perStream("jetstream_stream_subject_count", "Distinct subjects in the stream", (s) => s.state.num_subjects ?? 0),
    perStream("jetstream_stream_limit_messages", "max_msgs of the stream (-1 unlimited)", (s) => num(s.config, "max_msgs")),
    perStream("jetstream_stream_limit_bytes", "max_bytes of the stream (-1 unlimited)", (s) => num(s.config, "max_bytes")),
    perConsumer("jetstream_consumer_delivered_consumer_seq", "Consumer sequence of the last delivery", (c) => c.delivered.consumer_seq),
    perConsumer("jetstream_consumer_delivered_stream_seq", "Stream sequence of the last delivery", (c) => c.delivered.stream_seq),
    perConsumer("jetstream_consumer_num_ack_pending", "Delivered messages not yet acknowledged", (c) => c.num_ack_pending),
    perConsumer("jetstream_consumer_num_redelivered", "Outstanding messages delivered more than once", (c) => c.num_redelivered),
    perConsumer("jetstream_consumer_num_waiting", "Pull requests waiting for messages", (c) => c.num_waiting),
    perConsumer("jetstream_consumer_num_pending", "Messages not yet delivered", (c) => c.num_pending),
    perConsumer("jetstream_consumer_ack_floor_stream_seq", "Stream sequence of the acknowledgement floor", (c) => c.ack_floor.stream_seq),
    perConsumer("jetstream_consumer_ack_floor_consumer_seq", "Consumer sequence of the acknowledgement floor", (c) => c.ack_floor.consumer_seq)
  ]
}
