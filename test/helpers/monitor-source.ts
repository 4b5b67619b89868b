// A synthetic MonitorSource: deterministic snapshots of a busy server (clients
// of every protocol, a leafnode, closed connections, accounts, streams incl. the
// MQTT ones). Used by the monitoring tests (builders, /connz, the HTTP listener);
// `extra` is merged into every snapshot object to prove that the
// builders copy fields one by one (secrets planted there must never show up).
import type {
  AccountSnapshot,
  ClosedConnSnapshot,
  ConnSnapshot,
  HealthSnapshot,
  JetStreamSnapshot,
  MonitorSource,
  ProcessProbe,
  ServerSnapshot,
  StreamSnapshot,
  SubSnapshot
} from "../../src/core/monitor/source.js"

export interface SyntheticOptions {
  /** Open client connections (a leafnode is added on top). Default 50. */
  readonly connections?: number
  /** Closed connections in the ring. Default 12. */
  readonly closed?: number
  /** Streams enabled. Default true. */
  readonly jetstream?: boolean
  /** The fixed wall clock. */
  readonly now?: number
  /** Merged into every snapshot object (e.g. planted secrets). */
  readonly extra?: Readonly<Record<string, unknown>>
  /** Health overrides. */
  readonly health?: Partial<HealthSnapshot>
}

export const SyntheticNow = Date.UTC(2024, 4, 1, 12, 0, 0) + 0.25

const Reasons = ["Client Closed", "Stale Connection", "Slow Consumer (Pending Bytes)", "Authentication Timeout", "Read Error"]

const subsFor = (i: number): Array<SubSnapshot> =>
  Array.from({ length: i % 5 }, (_, k) => ({
    subject: k === 0 ? `orders.${i}.>` : k === 1 ? `orders.*.created` : k === 2 ? `telemetry.${i}` : `_INBOX.${i}.${k}`,
    queue: k === 1 ? "workers" : undefined,
    sid: String(k + 1),
    msgs: (i * 13 + k) % 50,
    max: k === 3 ? 10 : 0
  }))

const client = (i: number, now: number, extra: Readonly<Record<string, unknown>>): ConnSnapshot => {
  const type = i % 10 === 0 ? "mqtt" : i % 7 === 0 ? "websocket" : "nats"
  return {
    ...extra,
    cid: i,
    kind: "Client",
    type,
    ip: `10.0.${i % 4}.${i}`,
    port: 50_000 + i,
    start: now - i * 61_000 - ((i * 7919) % 1000),
    lastActivity: now - ((i * 37) % 500) * 1000 - 0.5,
    rttNs: (i * 123_457) % 5_000_000,
    pendingBytes: (i * 97) % 1000,
    inMsgs: (i * 31) % 211,
    outMsgs: (i * 17) % 199,
    inBytes: ((i * 31) % 211) * 64,
    outBytes: ((i * 17) % 199) * 48,
    subs: subsFor(i).map((s) => ({ ...extra, ...s })),
    name: i % 6 === 0 ? "" : `client-${i}`,
    lang: type === "mqtt" ? "mqtt" : i % 2 === 0 ? "nats.js" : "go",
    version: type === "mqtt" ? "3.1.1" : "2.29.3",
    tlsVersion: i % 4 === 0 ? "1.3" : undefined,
    tlsCipher: i % 4 === 0 ? "TLS_AES_128_GCM_SHA256" : undefined,
    user: i % 3 === 0 ? "alice" : i % 3 === 1 ? "bob" : undefined,
    account: i % 2 === 0 ? "ACME" : "$G",
    mqttClient: type === "mqtt" ? `sensor-${i}` : undefined
  }
}

const leaf = (now: number, extra: Readonly<Record<string, unknown>>): ConnSnapshot => ({
  ...client(1000, now, extra),
  kind: "Leafnode",
  type: undefined,
  name: "edge-1",
  lang: "",
  version: "",
  user: "leafuser",
  mqttClient: undefined,
  leaf: { remoteServer: "edge-1", isSpoke: true, compression: "off" }
})

const stream = (name: string, created: number, messages: number, consumers: number, extra: Readonly<Record<string, unknown>>): StreamSnapshot => ({
  name,
  created,
  config: { name, subjects: [`${name.toLowerCase()}.>`], retention: "limits", storage: "file", num_replicas: 1 },
  state: {
    messages,
    bytes: messages * 128,
    firstSeq: messages > 0 ? 1 : 0,
    firstTs: messages > 0 ? created + 1000 : 0,
    lastSeq: messages,
    lastTs: messages > 0 ? created + 2000 : 0,
    numSubjects: messages > 0 ? 3 : undefined,
    numDeleted: undefined,
    consumerCount: consumers
  },
  consumers: Array.from({ length: consumers }, (_, k) => ({
    ...extra,
    name: `${name}-c${k}`,
    created: created + 500,
    config: { durable_name: `${name}-c${k}`, ack_policy: "explicit", ack_wait: 30_000_000_000 },
    delivered: { consumerSeq: messages, streamSeq: messages, lastActive: created + 3000 },
    ackFloor: { consumerSeq: messages - k, streamSeq: messages - k, lastActive: undefined },
    numAckPending: k,
    numRedelivered: 0,
    numWaiting: k % 2,
    numPending: 0,
    pushBound: k === 0 ? true : undefined
  })),
  ...extra
})

export interface SyntheticSource extends MonitorSource {
  setNow(now: number): void
  setHealth(h: Partial<HealthSnapshot>): void
}

export const syntheticSource = (o: SyntheticOptions = {}): SyntheticSource => {
  let now = o.now ?? SyntheticNow
  const extra = o.extra ?? {}
  const n = o.connections ?? 50
  const start = now - 93_784_000
  let health: HealthSnapshot = {
    notReady: undefined,
    jetstreamConfigured: o.jetstream ?? true,
    jetstreamError: undefined,
    ...o.health
  }
  const conns = (): Array<ConnSnapshot> => [...Array.from({ length: n }, (_, k) => client(k + 1, now, extra)), leaf(now, extra)]
  const closed = (): Array<ClosedConnSnapshot> =>
    Array.from({ length: o.closed ?? 12 }, (_, k) => {
      const c = client(n + 1 + k, now, extra)
      return { ...c, stop: now - (k + 1) * 1_000 - 0.125, lastActivity: now - (k + 2) * 1000, reason: Reasons[k % Reasons.length] }
    })
  const sublist = (subs: number) => ({
    ...extra,
    subscriptions: subs,
    cacheEntries: 7,
    inserts: subs + 4,
    removes: 4,
    matches: 120,
    cacheHits: 90,
    maxFanout: 5,
    totalFanout: 14
  })
  const accounts = (): Array<AccountSnapshot> => {
    const cs = conns()
    const of = (name: string) => cs.filter((c) => c.account === name)
    const account = (name: string, isSystem: boolean, js: boolean): AccountSnapshot => {
      const mine = of(name)
      return {
        ...extra,
        name,
        isSystem,
        updated: start,
        jetstreamEnabled: js,
        clientConnections: mine.filter((c) => c.kind === "Client").length,
        leafConnections: mine.filter((c) => c.kind === "Leafnode").length,
        slowConsumers: name === "ACME" ? 2 : 0,
        sent: { msgs: mine.reduce((a, c) => a + c.inMsgs, 0), bytes: mine.reduce((a, c) => a + c.inBytes, 0) },
        received: { msgs: mine.reduce((a, c) => a + c.outMsgs, 0), bytes: mine.reduce((a, c) => a + c.outBytes, 0) },
        sublist: sublist(mine.reduce((a, c) => a + c.subs.length, 0)),
        exports: name === "ACME" ? [{ subject: "acme.public.>", type: "stream", approvedAccounts: undefined }, { subject: "acme.api", type: "service", approvedAccounts: ["$G"] }] : [],
        imports: name === "$G" ? [{ subject: "acme.public.>", account: "ACME", type: "stream", localSubject: "from.acme.>", invalid: false }] : []
      }
    }
    return [account("ACME", false, true), account("$G", false, true), account("$SYS", true, false)]
  }
  const jetstream = (): JetStreamSnapshot | undefined =>
    (o.jetstream ?? true)
      ? {
          config: { maxMemory: -1, maxStorage: 10 * 1024 ** 3, storeDir: "/var/lib/switchyard/jetstream", syncIntervalMs: 120_000, syncAlways: false, domain: undefined },
          memory: 2048,
          storage: 1_048_576,
          reservedMemory: 0,
          reservedStorage: 0,
          haAssets: 0,
          api: { total: 42, errors: 1, inflight: undefined },
          isLeader: true,
          meta: undefined,
          accounts: [
            {
              name: "ACME",
              memory: 2048,
              storage: 786_432,
              reservedMemory: 0,
              reservedStorage: 0,
              api: { total: 30, errors: 1 },
              streams: [
                stream("ORDERS", start + 10_000, 120, 2, extra),
                stream("$MQTT_sess", start + 1_000, 3, 0, extra),
                stream("$MQTT_msgs", start + 1_000, 0, 1, extra),
                stream("$MQTT_rmsgs", start + 1_000, 2, 0, extra)
              ]
            },
            {
              name: "$G",
              memory: 0,
              storage: 262_144,
              reservedMemory: 0,
              reservedStorage: 0,
              api: { total: 12, errors: 0 },
              streams: [stream("EVENTS", start + 20_000, 40, 1, extra)]
            }
          ]
        }
      : undefined
  const server = (): ServerSnapshot => {
    const cs = conns()
    const accs = accounts()
    return {
      ...extra,
      serverId: "NDJWE4SO4EVEFHB6SW2TCNBBBUVVR5MUAMJWIGA3PHKAXHLE43XSKZEM",
      serverName: "switchyard-test",
      version: "0.1.0",
      proto: 1,
      gitCommit: "abcdef0",
      host: "0.0.0.0",
      port: 4222,
      connectUrls: [],
      start,
      configLoadTime: start + 5,
      authRequired: true,
      tlsRequired: false,
      tlsVerify: false,
      tlsCertNotAfter: undefined,
      systemAccount: "$SYS",
      limits: {
        maxConnections: 65_536,
        maxSubscriptions: 0,
        maxPayload: 1_048_576,
        maxControlLine: 4096,
        maxPending: 67_108_864,
        pingIntervalMs: 120_000,
        pingMax: 2,
        authTimeoutMs: 2000,
        tlsTimeoutMs: 2000,
        writeDeadlineMs: 10_000
      },
      counters: {
        connections: cs.filter((c) => c.kind === "Client").length,
        totalConnections: n + (o.closed ?? 12) + 1,
        routes: 0,
        remotes: 0,
        leafnodes: cs.filter((c) => c.kind === "Leafnode").length,
        inMsgs: cs.reduce((a, c) => a + c.inMsgs, 0),
        outMsgs: cs.reduce((a, c) => a + c.outMsgs, 0),
        inBytes: cs.reduce((a, c) => a + c.inBytes, 0),
        outBytes: cs.reduce((a, c) => a + c.outBytes, 0),
        slowConsumers: 2,
        slowConsumersByKind: { clients: 2, routes: 0, gateways: 0, leafs: 0 },
        staleConnections: 1,
        stalledClients: 0,
        subscriptions: accs.reduce((a, x) => a + x.sublist.subscriptions, 0)
      },
      mqtt: { host: "0.0.0.0", port: 1883, ackWaitMs: 30_000, maxAckPending: 1024, tlsTimeoutMs: undefined, authTimeoutMs: undefined, noAuthUser: undefined },
      websocket: { host: "0.0.0.0", port: 8080, noTls: true, compression: false, handshakeTimeoutMs: 2000, noAuthUser: undefined },
      cluster: undefined
    }
  }
  return {
    now: () => now,
    setNow: (t) => {
      now = t
    },
    setHealth: (h) => {
      health = { ...health, ...h }
    },
    server,
    connections: conns,
    leafs: () => conns().filter((c) => c.kind === "Leafnode"),
    closed,
    accounts,
    jetstream,
    health: () => ({ ...extra, ...health }),
    queues: () => [
      { ...extra, name: "store write queue ACME > ORDERS", pending: 3, inProgress: 1 },
      { ...extra, name: "jetstream api requests", pending: 0, inProgress: 0 }
    ]
  }
}

/** A process probe with fixed readings and a small synthetic report (with planted environment). */
export const syntheticProbe = (extra: Readonly<Record<string, unknown>> = {}): ProcessProbe => ({
  sample: () => ({ rssBytes: 83_886_080, cpuPercent: 3.5, cpuSeconds: 12.25, cores: 2, maxProcs: 2, runtime: "node v20.0.0" }),
  report: () => ({
    header: { reportVersion: 3, nodejsVersion: "v20.0.0", commandLine: ["node", "main.js", ...Object.values(extra).map(String)], cwd: "/srv", host: "box" },
    javascriptStack: { message: "Error [ERR_SYNTHETIC]: JavaScript Callstack", stack: ["at main (main.js:1:1)"] },
    nativeStack: [{ pc: "0x0001", symbol: "node::Start" }],
    javascriptHeap: { totalMemory: 1024 },
    resourceUsage: { rss: 1024 },
    libuv: [{ type: "tcp", is_active: true }],
    workers: [],
    environmentVariables: { ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k.toUpperCase(), String(v)])) }
  })
})
