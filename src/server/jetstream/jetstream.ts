// The stream subsystem of a server: per-account stream registries on top of the
// Store, recovery of stored streams at start, the `$JS.API.>` subscriptions (each
// request is queued for the API layer above, which start.ts runs), the work of the
// subsystem's timer (max_age and per-message TTL expiry, consumer deadlines,
// sync_interval, compaction), and what /jsz and /healthz report.
import { Effect } from "effect"
import type { JetStreamOptions } from "../../config/options.js"
import type { JetStreamSnapshot, StreamSnapshot } from "../../core/monitor/source.js"
import { type ApiError, JsErr } from "../../core/jetstream/errors.js"
import { type StreamConfig } from "../../core/jetstream/stream-config.js"
import type { GroupCommitService } from "../../services/group-commit.js"
import type { LogService } from "../../services/log.js"
import type { StoreError, StoreService, StreamStore } from "../../services/store.js"
import type { Alarm } from "../alarm.js"
import type { InternalPrincipal } from "../../engine/principal.js"
import type { Server } from "../server.js"
import type { StreamHost } from "./host.js"
import { JsStream } from "./stream.js"

/** How long after the first write since the last compaction removed messages' space is reclaimed. */
export const COMPACT_AFTER_MS = 60_000

export const STREAM_META = "jetstream.stream"

/** A `$JS.API` request of an account, waiting for the API layer (answered one at a time, in arrival order). */
export interface ApiRequest {
  readonly acc: JsAccount
  readonly subject: string
  /** Where the response goes ("" when nobody waits for it). */
  readonly reply: string
  readonly body: string
  /** A request of the server's own (`JetStream.call`), not a client's. */
  readonly internal?: InternalApiCall
}

/** A `$JS.API` response (or error response), as JSON would carry it. */
export type ApiResponse = Record<string, unknown>

/** What an internal caller of the API gets and may ask beyond what a client can. */
export interface InternalApiCall {
  /** Takes the response (undefined: none, or the subsystem stopped first). Called once. */
  readonly respond: (response: ApiResponse | undefined) => void
  /**
   * A STREAM.CREATE may take up a stream whose records are stored but whose configuration
   * could not be read at recovery: the configuration is written again, the records kept.
   */
  readonly adopt?: boolean
}

export interface StoredStreamMeta {
  readonly account: string
  readonly created: number
  readonly config: StreamConfig
}

const decodeMeta = (raw: Uint8Array): StoredStreamMeta | undefined => {
  try {
    const m = JSON.parse(Buffer.from(raw).toString("utf8")) as StoredStreamMeta
    if (typeof m.account !== "string" || typeof m.config?.name !== "string" || !Array.isArray(m.config.subjects)) return undefined
    // Stored before the field existed: the default, so the same create request still matches it.
    return m.config.allow_msg_ttl === undefined ? { ...m, config: { ...m.config, allow_msg_ttl: false } } : m
  } catch {
    return undefined
  }
}

export class JsAccount implements StreamHost {
  readonly streams = new Map<string, JsStream>()
  apiTotal = 0
  apiErrors = 0
  constructor(
    readonly js: JetStream,
    readonly name: string,
    readonly principal: InternalPrincipal,
    readonly api: InternalPrincipal,
    readonly enabled: boolean
  ) {}

  get domain(): string | undefined {
    return this.js.options.domain
  }

  get server(): Server {
    return this.js.server
  }

  get groupCommit(): GroupCommitService {
    return this.js.groupCommit
  }

  get syncAlways(): boolean {
    return this.js.syncIntervalMs === undefined
  }

  wakeAt = (at: number): void => this.js.wakeAt(at)

  watchInterest = (delta: 1 | -1): void => {
    this.js.pushConsumers += delta
  }

  usage(storage: "file" | "memory"): number {
    let n = 0
    for (const s of this.streams.values()) if (s.config.storage === storage) n += s.store.state().bytes
    return n
  }

  reserved(storage: "file" | "memory", except?: string): number {
    let n = 0
    for (const s of this.streams.values())
      if (s.config.storage === storage && s.name !== except && s.config.max_bytes > 0) n += s.config.max_bytes
    return n
  }

  limit(storage: "file" | "memory"): number {
    return storage === "memory" ? this.js.options.maxMemory : this.js.options.maxStorage
  }

  admit = (storage: "file" | "memory", bytes: number): ApiError | undefined => {
    const limit = this.limit(storage)
    return limit > 0 && this.usage(storage) + bytes > limit ? JsErr.accountResourcesExceeded : undefined
  }

  /** Whether a stream reserving `maxBytes` fits next to the others' reservations. */
  reserve(cfg: StreamConfig): ApiError | undefined {
    const limit = this.limit(cfg.storage)
    if (limit <= 0) return undefined
    const want = cfg.max_bytes > 0 ? cfg.max_bytes : 0
    if (this.reserved(cfg.storage, cfg.name) + want > limit || (want === 0 && this.usage(cfg.storage) >= limit))
      return cfg.storage === "memory" ? JsErr.memoryResourcesExceeded : JsErr.storageResourcesExceeded
    return undefined
  }
}

export class JetStream {
  readonly accounts = new Map<string, JsAccount>()
  apiTotal = 0
  apiErrors = 0
  /** Streams that could not be recovered, in nats-server's words; the first one fails /healthz. */
  readonly problems: string[] = []
  /** The subsystem's timer (set by startJetStream); undefined until then. */
  alarm: Alarm | undefined
  /** When the `sync_interval` fsync is due (written since the last one); undefined: nothing to sync. */
  private syncAt: number | undefined
  /** When compaction is due (written or removed since the last one); undefined: nothing to reclaim. */
  private compactAt: number | undefined
  /** Push consumers running: while there are any, subscription changes wake the timer. */
  pushConsumers = 0

  constructor(
    readonly server: Server,
    readonly options: JetStreamOptions,
    readonly store: StoreService,
    readonly log: LogService,
    /** Whose rounds the streams' PubAcks wait for. */
    readonly groupCommit: GroupCommitService,
    /** Queues a request for the API layer, which answers it after those before it. */
    private readonly request: (r: ApiRequest) => void
  ) {}

  wakeAt(at: number): void {
    this.alarm?.wakeAt(at)
  }

  /**
   * A `$JS.API` request of the server itself (the MQTT bridge's streams): queued behind
   * the clients' requests and answered by the same handlers, one at a time, the response
   * handed back here instead of published to a reply subject. Not counted in /jsz's api totals.
   */
  call(account: string, subject: string, body: string, opts: { readonly adopt?: boolean } = {}): Promise<ApiResponse | undefined> {
    return new Promise((respond) => this.request({ acc: this.account(account), subject, reply: "", body, internal: { respond, adopt: opts.adopt } }))
  }

  /** A stream that could not be recovered was taken up again (see `InternalApiCall.adopt`): /healthz no longer reports it. */
  recovered(storeName: string): void {
    const i = this.problems.findIndex((p) => p.includes(`'${storeName}'`))
    if (i >= 0) this.problems.splice(i, 1)
  }

  /**
   * A stream's store changed (stored, removed, expired, purged): arm the sync_interval
   * fsync and the compaction after it, and the stream's next max_age expiry.
   */
  noteWrite(store: StreamStore): void {
    const now = this.server.now()
    const interval = this.syncIntervalMs
    if (interval !== undefined && this.syncAt === undefined) {
      this.syncAt = now + interval
      this.wakeAt(this.syncAt)
    }
    if (this.compactAt === undefined) {
      this.compactAt = now + COMPACT_AFTER_MS
      this.wakeAt(this.compactAt)
    }
    const expiry = store.nextExpiry()
    if (expiry !== undefined) this.wakeAt(expiry)
  }

  /** The store, telling the subsystem about every change (so its timers are armed on demand). */
  private watched(store: StreamStore): StreamStore {
    const touched = <F extends (...args: never[]) => unknown>(f: F): F =>
      ((...args: Parameters<F>) => {
        const r = f(...args)
        this.noteWrite(store)
        return r
      }) as F
    return {
      ...store,
      storeSync: touched(store.storeSync),
      skipSync: touched(store.skipSync),
      removeSync: touched(store.removeSync),
      store: (...a) => Effect.tap(store.store(...a), () => this.noteWrite(store)),
      storeBatch: (...a) => Effect.tap(store.storeBatch(...a), () => this.noteWrite(store)),
      remove: (...a) => Effect.tap(store.remove(...a), () => this.noteWrite(store)),
      purge: (...a) => Effect.tap(store.purge(...a), () => this.noteWrite(store)),
      expire: (...a) => Effect.tap(store.expire(...a), () => this.noteWrite(store)),
      updateConfig: (...a) => Effect.tap(store.updateConfig(...a), () => this.noteWrite(store))
    }
  }

  /**
   * The timer's run: consumers' deadlines, max_age expiry, the sync_interval fsync and
   * compaction, whichever are due; returns when the next of them is.
   */
  runDue(now: number): Effect.Effect<number | undefined> {
    return Effect.suspend(() => {
      let next = Infinity
      for (const a of this.accounts.values())
        for (const s of a.streams.values()) {
          const at = s.consumers.tick(now)
          if (at !== undefined) next = Math.min(next, at)
        }
      const work: Array<Effect.Effect<void>> = [this.expireDue(now)]
      if (this.syncAt !== undefined && this.syncAt <= now) {
        this.syncAt = undefined
        work.push(this.syncAll())
      }
      if (this.compactAt !== undefined && this.compactAt <= now) {
        this.compactAt = undefined
        work.push(this.compactAll())
      }
      const probeAt = this.probeFull()
      if (probeAt !== undefined) next = Math.min(next, probeAt)
      return Effect.map(Effect.all(work, { discard: true }), () => {
        for (const a of this.accounts.values())
          for (const s of a.streams.values()) {
            const at = s.closed ? undefined : s.store.nextExpiry()
            if (at !== undefined) next = Math.min(next, at)
          }
        for (const at of [this.syncAt, this.compactAt]) if (at !== undefined) next = Math.min(next, at)
        return next === Infinity ? undefined : next
      })
    })
  }

  /** The `sync_interval` period in ms; undefined when every PubAck waits for its fsync. */
  get syncIntervalMs(): number | undefined {
    const v = this.options.syncInterval
    return typeof v === "number" ? v : undefined
  }

  /** Fsync every open stream (the `sync_interval` timer); a failure is logged and retried next round. */
  syncAll(): Effect.Effect<void> {
    const streams: JsStream[] = []
    for (const a of this.accounts.values()) for (const s of a.streams.values()) if (!s.closed) streams.push(s)
    return Effect.forEach(
      streams,
      (s) => Effect.catchAll(s.store.sync(), (e) => Effect.sync(() => this.log.error(`JetStream stream '${s.name}': sync failed: ${e.detail}`))),
      { discard: true }
    )
  }

  /** Accounts using streams: every account when none are configured, else those with `jetstream: enabled`. */
  enabledFor(name: string): boolean {
    const o = this.server.options
    if (name === o.systemAccount) return false
    const acc = o.accounts.find((a) => a.name === name)
    return acc === undefined ? o.accounts.length === 0 : acc.jetstream
  }

  account(name: string): JsAccount {
    let a = this.accounts.get(name)
    if (a === undefined) {
      const router = this.server.router
      const domain = this.options.domain
      // Streams and consumers (captures, acks) are this node's own, not announced to other
      // servers, unless the node has a domain: then other servers' clients reach them too.
      const principal = router.internal(name, "JetStream")
      principal.announce = domain !== undefined
      // `$JS.API` is always this node's own: other servers have theirs (two nodes must never
      // both answer one request), and reach this one's as `$JS.<domain>.API`.
      const api = router.internal(name, "JetStream API")
      api.announce = false
      const enabled = this.enabledFor(name)
      a = new JsAccount(this, name, principal, api, enabled)
      this.accounts.set(name, a)
      // Push consumers learn of subscribers on their deliver subject from this, not by polling.
      principal.account.onInterestChange = () => {
        if (this.pushConsumers > 0) this.wakeAt(0)
      }
      for (const subject of ["$JS.API.INFO", "$JS.API.STREAM.>", "$JS.API.CONSUMER.>"]) {
        const acc = a
        router.subscribe(api, subject, undefined, (d) => {
          // Answered here: not sent on to another server's JetStream (nats-server in a mixed cluster).
          if (enabled) d.origin.local = true
          this.request({ acc, subject: d.subject, reply: d.reply, body: d.buf.toString("utf8", d.payloadStart, d.end) })
        })
      }
      if (domain !== undefined && enabled) {
        // `$JS.<domain>.API.>` is `$JS.API.>` here, as nats-server maps it; announced, so
        // that clients of every server of the cluster and of leaf nodes reach this node.
        const prefix = `$JS.${domain}.API.`
        router.subscribe(principal, `${prefix}>`, undefined, (d) => {
          router.forward(api, d, `$JS.API.${d.subject.slice(prefix.length)}`, d.reply, true)
        })
      }
    }
    return a
  }

  makeStream(acc: JsAccount, meta: StoredStreamMeta, raw: JsStream["store"]): JsStream {
    const store = this.watched(raw)
    const expiry = store.nextExpiry()
    if (expiry !== undefined) this.wakeAt(expiry)
    const s = new JsStream(acc, meta.config, meta.created, store)
    acc.streams.set(s.name, s)
    s.subscribe()
    return s
  }

  /** Reopen every stored stream; a stream whose metadata cannot be read stays on disk and is reported. */
  recover(): Effect.Effect<void, StoreError> {
    const js = this
    return Effect.gen(function*() {
      for (const name of yield* js.store.list()) {
        const r = yield* Effect.either(Effect.flatMap(js.store.open(name), (st) => Effect.map(st.readMeta(STREAM_META), (m) => [st, m] as const)))
        if (r._tag === "Left" || r.right[1] === undefined) {
          const why = r._tag === "Left" ? r.left.detail : "its stream configuration is missing"
          js.problems.push(`JetStream stream '${name}' could not be recovered: ${why}`)
          js.log.error(`Error recovering stream '${name}': ${why}`)
          continue
        }
        const [st, raw] = r.right
        const meta = decodeMeta(raw!)
        if (meta === undefined) {
          js.problems.push(`JetStream stream '${name}' could not be recovered: its stream configuration is damaged`)
          js.log.error(`Error recovering stream '${name}': its stream configuration is damaged`)
          continue
        }
        const stream = js.makeStream(js.account(meta.account), meta, st)
        // What max_age or a message's TTL ended while the server was down is gone before anyone looks.
        yield* js.expireAll(stream, js.server.now())
        yield* stream.restoreDedup(js.server.now())
        yield* stream.consumers.restore(js.log, () => js.server.now())
        const state = st.state()
        js.log.info(`  Restored ${state.messages} messages for stream '${meta.account} > ${meta.config.name}'`)
      }
    })
  }

  /** Compact every open stream's store; a failure is logged and left for the next round. */
  compactAll(): Effect.Effect<void> {
    const streams: JsStream[] = []
    for (const a of this.accounts.values()) for (const s of a.streams.values()) if (!s.closed) streams.push(s)
    return Effect.forEach(
      streams,
      (s) =>
        s.store.compact().pipe(
          Effect.tap((bytes) => Effect.sync(() => bytes > 0 && this.log.debug(`JetStream stream '${s.name}': compaction reclaimed ${bytes} bytes`))),
          Effect.catchAll((e) => Effect.sync(() => this.log.warn(`JetStream stream '${s.name}': compaction failed: ${e.detail}`)))
        ),
      { discard: true }
    )
  }

  /**
   * Streams whose disk was full try a write now and then, so they take publishes again
   * once space is back; returns when the next probe is due.
   */
  probeFull(): number | undefined {
    let next: number | undefined
    for (const a of this.accounts.values())
      for (const s of a.streams.values()) {
        if (s.closed || !s.store.outOfSpace()) continue
        s.probeSpace()
        const at = s.nextProbeAt()
        if (at !== undefined && (next === undefined || at < next)) next = at
      }
    return next
  }

  /** Everything that ran out in `s` by `now`, however many batches that takes (at start-up). */
  expireAll(s: JsStream, now: number): Effect.Effect<void> {
    return Effect.ignore(Effect.gen(function*() {
      for (;;) {
        const at = s.store.nextExpiry()
        if (at === undefined || at > now || (yield* s.store.expire(now)) === 0) return
      }
    }))
  }

  /** Apply max_age and per-message TTLs to every stream whose next expiry is due (a bounded batch of TTLs each). */
  expireDue(now: number): Effect.Effect<void> {
    const due: JsStream[] = []
    for (const a of this.accounts.values())
      for (const s of a.streams.values()) {
        const at = s.store.nextExpiry()
        if (at !== undefined && at <= now) due.push(s)
      }
    return Effect.forEach(due, (s) => Effect.ignore(Effect.tap(s.store.expire(now), () => s.consumers.notify(true))), { discard: true })
  }

  /** Server shutdown: every consumer's latest state saved (before the stores close), then every stream closed. */
  stop(): Effect.Effect<void> {
    return Effect.zipRight(
      Effect.promise(() => {
        const saves: Array<Promise<unknown>> = []
        for (const a of this.accounts.values()) for (const s of a.streams.values()) saves.push(...s.consumers.saveAll())
        return Promise.all(saves)
      }),
      Effect.sync(() => {
        for (const a of this.accounts.values()) for (const s of a.streams.values()) s.closed = true
      })
    )
  }

  healthError(): string | undefined {
    if (this.problems.length > 0) return this.problems[0]
    for (const a of this.accounts.values())
      for (const s of a.streams.values()) {
        const h = s.store.health()
        if (!h.ok) return `JetStream stream '${a.name} > ${s.name}' is not current: ${h.problems[0]?.message ?? "unhealthy"}`
      }
    return undefined
  }

  snapshot(): JetStreamSnapshot {
    const accounts = [...this.accounts.values()].filter((a) => a.enabled || a.streams.size > 0)
    const sum = (f: (a: JsAccount) => number) => accounts.reduce((n, a) => n + f(a), 0)
    const name = this.server.serverName
    return {
      config: {
        maxMemory: this.options.maxMemory,
        maxStorage: this.options.maxStorage,
        storeDir: this.options.storeDir,
        syncIntervalMs: this.syncIntervalMs,
        syncAlways: this.syncIntervalMs === undefined,
        domain: this.options.domain
      },
      memory: sum((a) => a.usage("memory")),
      storage: sum((a) => a.usage("file")),
      reservedMemory: sum((a) => a.reserved("memory")),
      reservedStorage: sum((a) => a.reserved("file")),
      haAssets: 0,
      api: { total: this.apiTotal, errors: this.apiErrors, inflight: undefined },
      isLeader: true,
      meta: {
        name,
        leader: name,
        leaderId: this.server.serverId,
        clusterSize: 1,
        peers: []
      },
      accounts: accounts.map((a) => ({
        name: a.name,
        memory: a.usage("memory"),
        storage: a.usage("file"),
        reservedMemory: a.reserved("memory"),
        reservedStorage: a.reserved("file"),
        api: { total: a.apiTotal, errors: a.apiErrors },
        streams: [...a.streams.values()].map(streamSnapshot)
      }))
    }
  }
}

const streamSnapshot = (s: JsStream): StreamSnapshot => {
  const st = s.store.state()
  return {
    name: s.name,
    created: s.created,
    config: s.config,
    state: {
      messages: st.messages,
      bytes: st.bytes,
      firstSeq: st.first_seq,
      firstTs: st.first_ts,
      lastSeq: st.last_seq,
      lastTs: st.last_ts,
      numSubjects: st.num_subjects,
      numDeleted: st.num_deleted,
      consumerCount: s.consumers.size
    },
    consumers: s.consumers.snapshots()
  }
}
