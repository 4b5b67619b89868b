// The Store port: per-stream message storage. A stream store appends messages
// (synchronously, into memory), makes them durable on `sync()` (group commit: one
// fsync covers every append before it), loads them for consumers, and applies the
// stream's limits through the pure rules in core/stream, shared by every backend.
// It also keeps a small crash-safe key/value area per stream for metadata.
//
// Durability (file store): stores, removes, purges, expiry and limit discards take
// effect in memory at once and reach stable storage when a later `sync()` completes;
// an acknowledged publish waits for that. `flush()` only hands bytes to the OS.
// create, delete, updateConfig's config and the meta calls are durable on return.
import { Context, Data, Effect } from "effect"
import { msgSize, utf8Length, type StoreConfig } from "../core/stream/config.js"
import { admit, enforceAll, enforceOnStore, expire, nextExpiry, purge, type PurgeOptions, type Rejection } from "../core/stream/retention.js"
import type { IndexEntry, StreamIndex, SubjectState } from "../core/stream/stream-index.js"
import { MessageTtls } from "../core/stream/ttl.js"

export type { PurgeOptions, StoreConfig, SubjectState }

export type StoreErrorReason =
  | "NotFound"
  | "Exists"
  | "Corrupt"
  | "NoSpace"
  | "Io"
  | "Closed"
  | "BadArgument"
  | Rejection

/**
 * `message` may reach clients (JetStream API error descriptions), so it never names a
 * file: the file goes in `path`, and log lines use `detail`, which has both.
 */
export class StoreError extends Data.TaggedError("StoreError")<{
  readonly reason: StoreErrorReason
  readonly message: string
  readonly path?: string | undefined
}> {
  /** For the server log: the message and, when there is one, the file it is about. */
  get detail(): string {
    return this.path === undefined ? this.message : `${this.message} (${this.path})`
  }
}

export interface StoredMsg {
  readonly seq: number
  readonly subject: string
  /** Milliseconds since the epoch, as given to `store`. */
  readonly ts: number
  /** Read-only views: they may share memory with the store. */
  readonly headers: Uint8Array | undefined
  readonly payload: Uint8Array
}

/** What the index knows of a stored message without reading it. */
export interface MsgEntry {
  readonly seq: number
  readonly subject: string
  readonly ts: number
  /** Stored size, as counted against `max_bytes` (see `msgSize`). */
  readonly size: number
}

/** Stream state in JetStream's field names; times in ms, 0 for "none". */
export interface StreamState {
  readonly messages: number
  readonly bytes: number
  readonly first_seq: number
  readonly first_ts: number
  readonly last_seq: number
  readonly last_ts: number
  readonly num_subjects: number
  readonly num_deleted: number
}

export interface StoreProblem {
  /**
   * TornTail: an unfinished write at the end, truncated (normal after a crash).
   * LostData: messages that were on stable storage are gone (found at recovery).
   * NoSpace, WriteFailed: writes fail now (the disk is full, or an I/O error); they
   * last until a write succeeds again.
   */
  readonly kind: "TornTail" | "Corrupt" | "MetaCorrupt" | "WriteFailed" | "NoSpace" | "LostData"
  readonly file: string
  readonly offset?: number
  readonly length?: number
  readonly message: string
}

export interface StoreHealth {
  /** False when data is damaged or cannot be written; torn tails alone keep it true. */
  readonly ok: boolean
  readonly problems: ReadonlyArray<StoreProblem>
}

export interface MsgInput {
  readonly subject: string
  readonly headers: Uint8Array | undefined
  readonly payload: Uint8Array
  readonly timestampMs: number
}

export interface StreamStore {
  readonly name: string
  readonly config: () => StoreConfig
  /**
   * Append a message; returns its sequence or the limit that rejected it. Plain
   * and synchronous for the publish loop: visible to loads at once, durable only
   * after a later `sync()` completes. Buffers are copied.
   *
   * `refusable`: the caller answers "refused" when the sync covering the message fails.
   * Then the message must never be stored: a failed round takes it back out (it is
   * removed, its sequence stays used) instead of writing it with a later round, and
   * `takeRefused` tells so. Without it, a failed write is retried by the next round.
   *
   * `ttl`: the message's per-message TTL in seconds, or TTL_NEVER, as its `Nats-TTL` header
   * says (the caller read it; 0: none). Only for a store with `allow_msg_ttl`, which reads
   * the header again when it recovers.
   */
  readonly storeSync: (
    subject: string,
    headers: Uint8Array | undefined,
    payload: Uint8Array,
    timestampMs: number,
    refusable?: boolean,
    ttl?: number
  ) => number | StoreError
  /**
   * Whether a failed write took back the refusable message `seq` (see `storeSync`), so
   * its publisher must hear "refused" even if a later sync succeeded. Answers true once.
   */
  readonly takeRefused: (seq: number) => boolean
  /**
   * Every sequence up to this one is on stable storage (`durableSeq`, by a completed
   * `sync()`) or handed to the OS (`writtenSeq`, by a `flush()` or a sync): after a failed
   * sync, a message at or below it was written by an earlier round and stays.
   */
  readonly durableSeq: () => number
  readonly writtenSeq: () => number
  /** Writes fail for want of space now (until one succeeds again). */
  readonly outOfSpace: () => boolean
  /** Try to write again after a failure (what is waiting, or a small record); clears `outOfSpace` when it works. */
  readonly probe: () => Effect.Effect<void, StoreError>
  /**
   * Use up the next sequence without storing anything (interest retention when no
   * consumer wants the message): `last_seq` moves, `messages` does not. Durable, like
   * `storeSync`, after a later `sync()`.
   */
  readonly skipSync: (timestampMs: number) => number | StoreError
  /** The subject of stored message `seq`, from the in-memory index; undefined when absent. */
  readonly subjectOf: (seq: number) => string | undefined
  /** `storeSync` as an Effect (not yet durable). */
  readonly store: (
    subject: string,
    headers: Uint8Array | undefined,
    payload: Uint8Array,
    timestampMs: number
  ) => Effect.Effect<number, StoreError>
  /** Append each message, then `sync()`: every sequence returned is durable. */
  readonly storeBatch: (msgs: ReadonlyArray<MsgInput>) => Effect.Effect<ReadonlyArray<number | StoreError>, StoreError>
  /** Completes when everything appended or removed before the call is on stable storage. */
  readonly sync: () => Effect.Effect<void, StoreError>
  /** Hand pending writes to the OS (survives a process crash, not a power loss). */
  readonly flush: () => Effect.Effect<void, StoreError>
  readonly load: (seq: number) => Effect.Effect<StoredMsg, StoreError>
  /**
   * `load` for synchronous callers that must not wait: the message when it is in
   * memory; undefined when it is absent or only a disk read (`load`) can tell.
   */
  readonly loadCached: (seq: number) => StoredMsg | undefined
  /** The newest message whose subject matches `filter`; NotFound when none. */
  readonly loadLastForSubject: (filter: string) => Effect.Effect<StoredMsg, StoreError>
  /** The first message at or after `fromSeq` matching any filter (none = all); undefined when none. */
  readonly loadNextMatching: (
    filters: string | ReadonlyArray<string>,
    fromSeq: number
  ) => Effect.Effect<StoredMsg | undefined, StoreError>
  /** `loadNextMatching` from the in-memory index alone: no bytes, never the disk. */
  readonly nextMatchingEntry: (filters: string | ReadonlyArray<string>, fromSeq: number) => MsgEntry | undefined
  /** False when there was no such message. */
  readonly remove: (seq: number) => Effect.Effect<boolean, StoreError>
  /**
   * `remove` for synchronous callers, many at once (one tombstone write for the lot):
   * the number removed; sequences already gone are skipped. Durable after a later `sync()`.
   */
  readonly removeSync: (seqs: ReadonlyArray<number>) => number | StoreError
  /** Number of messages removed. */
  readonly purge: (opts?: PurgeOptions) => Effect.Effect<number, StoreError>
  /**
   * Drop messages past max_age and those whose TTL ended at `nowMs` (a bounded batch of
   * those: `nextExpiry` is then already due); number removed.
   */
  readonly expire: (nowMs: number) => Effect.Effect<number, StoreError>
  /** When `expire` next has work, in ms; undefined when never. */
  readonly nextExpiry: () => number | undefined
  /** New limits, applied at once (and persisted); number of messages removed. */
  readonly updateConfig: (config: StoreConfig) => Effect.Effect<number, StoreError>
  readonly state: () => StreamState
  readonly subjectsState: (filter: string) => Map<string, SubjectState>
  readonly numPending: (filters: string | ReadonlyArray<string>, fromSeq: number) => number
  /** Interior removed sequences, at most `limit`. */
  readonly deleted: (limit?: number) => ReadonlyArray<number>
  /** Reclaim space of removed messages; number of bytes reclaimed. */
  readonly compact: () => Effect.Effect<number, StoreError>
  readonly health: () => StoreHealth
  /** Crash-safe: durable when the Effect completes. */
  readonly writeMeta: (key: string, value: Uint8Array) => Effect.Effect<void, StoreError>
  /** Undefined when absent; Corrupt when the stored value is damaged. */
  readonly readMeta: (key: string) => Effect.Effect<Uint8Array | undefined, StoreError>
  readonly deleteMeta: (key: string) => Effect.Effect<void, StoreError>
  readonly listMeta: () => Effect.Effect<ReadonlyArray<string>, StoreError>
  /** Sync and release; later calls fail with Closed. */
  readonly close: () => Effect.Effect<void, StoreError>
}

export interface StoreService {
  /**
   * Exists when a stream of that name is already stored. `meta` entries are stored with
   * the stream in one step: a crash leaves either no stream or the stream with its meta.
   */
  readonly create: (name: string, config: StoreConfig, meta?: ReadonlyArray<readonly [string, Uint8Array]>) => Effect.Effect<StreamStore, StoreError>
  /** Reopen a stored stream (after a restart); the same handle while it is open. */
  readonly open: (name: string) => Effect.Effect<StreamStore, StoreError>
  readonly delete: (name: string) => Effect.Effect<void, StoreError>
  /** Names of every stored stream. */
  readonly list: () => Effect.Effect<ReadonlyArray<string>, StoreError>
}

export class Store extends Context.Tag("switchyard/Store")<Store, StoreService>() {}

export const storeError = (reason: StoreErrorReason, message: string, path?: string): StoreError =>
  new StoreError({ reason, message, path })

const rejectionMessage: Record<Rejection, string> = {
  MaxMsgSize: "message size exceeds maximum allowed",
  MaxMsgs: "maximum messages exceeded",
  MaxBytes: "maximum bytes exceeded",
  MaxMsgsPerSubject: "maximum messages per subject exceeded"
}

/** Subjects are stored with a 16-bit length. */
const MAX_SUBJECT = 0xffff

/** What a storage backend provides under the shared bookkeeping of `makeStreamStore`. */
export interface StreamBackend<L> {
  readonly index: StreamIndex<L>
  /** The TTLs of the messages in `index` (recovery found them in their headers); none when absent. */
  readonly ttls?: MessageTtls
  /** Write the message (into memory); returns where it lives. */
  readonly append: (
    seq: number,
    subject: string,
    subjectLen: number,
    headers: Uint8Array | undefined,
    payload: Uint8Array,
    ts: number,
    refusable: boolean
  ) => L
  readonly takeRefused: (seq: number) => boolean
  readonly durableSeq: () => number
  readonly writtenSeq: () => number
  readonly outOfSpace: () => boolean
  readonly probe: () => Effect.Effect<void, StoreError>
  /** Record that `index.last` moved to a skipped sequence. */
  readonly skipped: () => void
  /** Called after every removal (possibly of nothing, when only the floor moved). */
  readonly removed: (entries: ReadonlyArray<IndexEntry<L>>) => void
  readonly read: (entry: IndexEntry<L>) => Effect.Effect<StoredMsg, StoreError>
  /** `read` when it needs no I/O; undefined otherwise (then `read` tells). */
  readonly readCached: (entry: IndexEntry<L>) => StoredMsg | undefined
  readonly persistConfig: (config: StoreConfig) => Effect.Effect<void, StoreError>
  readonly sync: () => Effect.Effect<void, StoreError>
  readonly flush: () => Effect.Effect<void, StoreError>
  readonly compact: () => Effect.Effect<number, StoreError>
  readonly health: () => StoreHealth
  readonly writeMeta: (key: string, value: Uint8Array) => Effect.Effect<void, StoreError>
  readonly readMeta: (key: string) => Effect.Effect<Uint8Array | undefined, StoreError>
  readonly deleteMeta: (key: string) => Effect.Effect<void, StoreError>
  readonly listMeta: () => Effect.Effect<ReadonlyArray<string>, StoreError>
  readonly close: () => Effect.Effect<void, StoreError>
}

/** The StreamStore every backend shares: limits, bookkeeping and the closed check. */
export const makeStreamStore = <L>(
  name: string,
  initial: StoreConfig,
  backend: StreamBackend<L>,
  onClose: () => void = () => {}
): StreamStore => {
  const index = backend.index
  const ttls = backend.ttls ?? new MessageTtls()
  let cfg = initial
  let closed = false
  const closedError = () => storeError("Closed", `stream store '${name}' is closed`)
  const open = <A>(f: () => Effect.Effect<A, StoreError>): Effect.Effect<A, StoreError> =>
    Effect.suspend(() => (closed ? Effect.fail(closedError()) : f()))
  /** Every removal goes through here: the backend's books, and the TTLs of what went (when any are kept). */
  const removed = (entries: ReadonlyArray<IndexEntry<L>>): void => {
    if (ttls.size > 0) for (let i = 0; i < entries.length; i++) ttls.forget(entries[i].seq)
    backend.removed(entries)
  }
  const applied = (entries: IndexEntry<L>[]): number => {
    removed(entries)
    return entries.length
  }

  const dropped: IndexEntry<L>[] = [] // reused: the publish path allocates no array per message
  const gone: IndexEntry<L>[] = [] // reused by removeSync
  const removeSync = (seqs: ReadonlyArray<number>): number | StoreError => {
    if (closed) return closedError()
    for (let i = 0; i < seqs.length; i++) {
      const e = index.remove(seqs[i])
      if (e !== undefined) gone.push(e)
    }
    const n = gone.length
    if (n > 0) removed(gone)
    gone.length = 0
    return n
  }
  const storeSync = (subject: string, headers: Uint8Array | undefined, payload: Uint8Array, ts: number, refusable = false, ttl = 0): number | StoreError => {
    if (closed) return closedError()
    const hdrLen = headers === undefined ? 0 : headers.length
    const subjectLen = utf8Length(subject)
    if (subjectLen > MAX_SUBJECT) return storeError("BadArgument", "subject too long")
    const size = msgSize(cfg.storage, subjectLen, hdrLen, payload.length)
    const rejected = admit(cfg, index, subject, size, hdrLen + payload.length)
    if (rejected !== undefined) return storeError(rejected, rejectionMessage[rejected])
    const seq = index.nextSeq
    index.add(seq, subject, ts, size, backend.append(seq, subject, subjectLen, headers, payload, ts, refusable))
    if (ttl !== 0) ttls.add(seq, ts, ttl)
    enforceOnStore(cfg, index, subject, dropped)
    if (dropped.length > 0) {
      removed(dropped)
      dropped.length = 0
    }
    return seq
  }

  const skipSync = (ts: number): number | StoreError => {
    if (closed) return closedError()
    const seq = index.skip(ts)
    backend.skipped()
    return seq
  }

  const store = (subject: string, headers: Uint8Array | undefined, payload: Uint8Array, ts: number) =>
    Effect.suspend(() => {
      const r = storeSync(subject, headers, payload, ts)
      return typeof r === "number" ? Effect.succeed(r) : Effect.fail(r)
    })

  const load = (seq: number) =>
    open(() => {
      const e = index.get(seq)
      return e === undefined ? Effect.fail(storeError("NotFound", `no message found`)) : backend.read(e)
    })

  const filterList = (filters: string | ReadonlyArray<string>) => (typeof filters === "string" ? [filters] : filters)

  return {
    name,
    config: () => cfg,
    storeSync,
    takeRefused: backend.takeRefused,
    durableSeq: backend.durableSeq,
    writtenSeq: backend.writtenSeq,
    outOfSpace: backend.outOfSpace,
    probe: () => open(backend.probe),
    skipSync,
    subjectOf: (seq) => index.get(seq)?.subject,
    store,
    storeBatch: (msgs) =>
      open(() => {
        const out = msgs.map((m) => storeSync(m.subject, m.headers, m.payload, m.timestampMs))
        return Effect.as(backend.sync(), out)
      }),
    sync: () => open(backend.sync),
    flush: () => open(backend.flush),
    load,
    loadCached: (seq) => {
      const e = closed ? undefined : index.get(seq)
      return e === undefined ? undefined : backend.readCached(e)
    },
    loadLastForSubject: (filter) =>
      open(() => {
        const seq = index.lastSeqFor(filter)
        return seq === undefined ? Effect.fail(storeError("NotFound", "no message found")) : load(seq)
      }),
    loadNextMatching: (filters, fromSeq) =>
      open(() => {
        const e = index.nextMatching(filterList(filters), fromSeq)
        return e === undefined ? Effect.succeed(undefined) : backend.read(e)
      }),
    nextMatchingEntry: (filters, fromSeq) => (closed ? undefined : index.nextMatching(filterList(filters), fromSeq)),
    removeSync,
    remove: (seq) =>
      Effect.suspend(() => {
        const r = removeSync([seq])
        return typeof r === "number" ? Effect.succeed(r > 0) : Effect.fail(r)
      }),
    purge: (opts) =>
      open(() => {
        const out = purge(index, opts)
        return out === "BadArgument"
          ? Effect.fail(storeError("BadArgument", "purge takes seq or keep, not both"))
          : Effect.succeed(applied(out))
      }),
    expire: (nowMs) => open(() => Effect.succeed(applied(expire(cfg, index, nowMs, ttls)))),
    nextExpiry: () => nextExpiry(cfg, index, ttls),
    updateConfig: (next) =>
      open(() =>
        Effect.map(backend.persistConfig(next), () => {
          cfg = next
          return applied(enforceAll(cfg, index))
        })
      ),
    state: () => {
      const first = index.firstEntry()
      return {
        messages: index.count,
        bytes: index.bytes,
        first_seq: index.first,
        first_ts: first === undefined ? 0 : first.ts,
        last_seq: index.last,
        last_ts: index.last === 0 ? 0 : index.lastTs,
        num_subjects: index.numSubjects,
        num_deleted: index.numDeleted
      }
    },
    subjectsState: (filter) => index.subjectsState(filter),
    numPending: (filters, fromSeq) => index.numPending(filterList(filters), fromSeq),
    deleted: (limit) => index.deleted(limit),
    compact: () => open(backend.compact),
    health: backend.health,
    writeMeta: (key, value) => open(() => backend.writeMeta(key, value)),
    readMeta: (key) => open(() => backend.readMeta(key)),
    deleteMeta: (key) => open(() => backend.deleteMeta(key)),
    listMeta: () => open(backend.listMeta),
    close: () =>
      Effect.suspend(() => {
        if (closed) return Effect.void
        closed = true
        return Effect.ensuring(backend.close(), Effect.sync(onClose))
      })
  }
}

/**
 * Stream names and meta keys as file names: letters, digits, `-` and `_` stay,
 * every other UTF-8 byte becomes `%HH` (so `.` and `/` never reach the file system).
 */
export const encodeName = (name: string): string => {
  let out = ""
  for (const b of Buffer.from(name, "utf8")) {
    const c = String.fromCharCode(b)
    out += /[A-Za-z0-9_-]/.test(c) ? c : "%" + b.toString(16).toUpperCase().padStart(2, "0")
  }
  return out
}

export const decodeName = (file: string): string | undefined => {
  try {
    return decodeURIComponent(file)
  } catch {
    return undefined
  }
}
