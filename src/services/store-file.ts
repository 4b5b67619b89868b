// The file store: each stream is a folder of append-only block files of
// checksummed records (core/stream/record.ts) plus crash-safe small files for its
// config and meta. Indexes live in memory and are rebuilt by scanning the blocks
// on open. Appends go to an in-memory tail; `sync()` writes and fsyncs it under a
// lock, so publishes that arrive during one fsync share the next (group commit, the
// GroupCommit service's rounds).
//   <dir>/<stream>/config         store config (JSON, checksummed)
//   <dir>/<stream>/msgs/<n>.blk   blocks, rolled at `blockSize`
//   <dir>/<stream>/meta/<key>     meta values (checksummed)
import { createHash } from "node:crypto"
import { Deferred, Effect, Exit, Layer, Option } from "effect"
import { makeStoreConfig, msgSize, type StoreConfig } from "../core/stream/config.js"
import {
  decodeMeta,
  decodeState,
  DEL_LEN,
  encodeDel,
  encodeFloor,
  encodeMeta,
  encodeMsg,
  encodeState,
  FLOOR_LEN,
  msgBody,
  msgHead,
  msgRecordLen,
  recordAt,
  recordSeq,
  RecordType,
  scanRecords,
  STATE_LEN,
  SYNC_MARK_SLOT,
  type SyncMark,
  decodeSyncMark,
  encodeSyncMark,
  recordType
} from "../core/stream/record.js"
import { StreamIndex, type IndexEntry } from "../core/stream/stream-index.js"
import { MessageTtls } from "../core/stream/ttl.js"
import { ttlOfHeaders } from "../core/jetstream/headers.js"
import { Disk, type DiskError, type DiskFile, type DiskService, joinPath } from "./disk.js"
import { GroupCommit, type GroupCommitService } from "./group-commit.js"
import { Log, type LogService } from "./log.js"
import {
  decodeName,
  encodeName,
  makeStreamStore,
  Store,
  StoreError,
  storeError,
  type StoreHealth,
  type StoreProblem,
  type StoreService,
  type StoredMsg,
  type StreamStore
} from "./store.js"
import { makeMemoryStore } from "./store-memory.js"

export interface FileStoreOptions {
  /** A block is sealed once it reaches this size (a single larger record gets its own). */
  readonly blockSize?: number
  /**
   * Sealed blocks kept in memory after a read of them, per stream. A block is not kept
   * after it is written: a backlog nobody reads costs only the block being filled.
   */
  readonly cacheBlocks?: number
}

interface Block {
  readonly id: number
  readonly path: string
  file: DiskFile | undefined
  /** Bytes [0, size) when held in memory: always for the active block and unflushed ones. */
  buf: Buffer | undefined
  /** Whether `buf` was checked (written by us or scanned); otherwise check each record read. */
  trusted: boolean
  size: number
  /** Bytes handed to the OS. */
  flushed: number
  /** Written since the last fsync. */
  dirty: boolean
  /** File created since the folder was last fsynced: its name is not durable yet. */
  fresh: boolean
  live: number
  liveBytes: number
  /** Bytes of removed messages still in the file: what compaction would reclaim. */
  deadBytes: number
  /** Sequence range of the MSG records physically present (removed or not). */
  minSeq: number
  maxSeq: number
  /** Bumped when compaction rewrites the file, so a read racing it retries. */
  gen: number
  /** Compaction epoch when last rewritten (a block of tombstones only is revisited once others change). */
  epoch: number
  /** Recovery found unreadable bytes in it: compaction leaves it alone, keeping the evidence. */
  damaged: boolean
  /**
   * Offset of the last record read alone while `buf` was not held, -1 for none. A
   * read further on means a scan, which then reads the whole block once.
   */
  readAt: number
}

interface Loc {
  readonly blk: Block
  off: number
  readonly len: number
}

const BLOCK_EXT = ".blk"
const TMP_EXT = ".tmp"
const TRASH_EXT = ".deleted"
const FIRST_BUF = 64 * 1024
/**
 * A record this large is read alone even in a scan: a whole-block read saves a read per
 * record only when records are small, and would hold (and churn) a block's worth of
 * memory for a few large messages.
 */
const READ_ALONE = 64 * 1024
const NEW_EXT = ".new"
/** Problems kept for health(); a disk that keeps failing must not grow this forever. */
const MAX_PROBLEMS = 100

const fromDisk = (e: DiskError): StoreError =>
  storeError(e.reason === "NoSpace" ? "NoSpace" : e.reason === "NotFound" ? "NotFound" : "Io", e.message, e.path)

const asBuffer = (u: Uint8Array): Buffer => (Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.length))

const io = <A>(eff: Effect.Effect<A, DiskError>): Effect.Effect<A, StoreError> => Effect.mapError(eff, fromDisk)

const warn = (msg: string) =>
  Effect.flatMap(Effect.serviceOption(Log), (log) =>
    Option.isSome(log) ? Effect.sync(() => log.value.warn(msg)) : Effect.logWarning(msg)
  )


/** Write a small file so that a crash leaves either the old or the new content. */
const writeAtomic = (disk: DiskService, dir: string, name: string, data: Uint8Array, tmpId: number) =>
  Effect.gen(function*() {
    const tmp = joinPath(dir, `${name}.${tmpId}${TMP_EXT}`)
    const f = yield* disk.open(tmp, true)
    yield* Effect.ensuring(
      Effect.zipRight(Effect.zipRight(f.truncate(0), f.write(data, 0)), f.sync()),
      Effect.ignore(f.close())
    )
    yield* disk.rename(tmp, joinPath(dir, name))
    yield* disk.syncDir(dir)
  })

/**
 * What a dead process wrote may sit unsynced in the OS: a config or meta file renamed
 * into place whose folder was never synced is there after a crash and gone after a
 * later power loss. Sync every file and folder recovery is about to trust, once, at open.
 */
const makeMetaDurable = (disk: DiskService, streamDir: string) =>
  Effect.gen(function*() {
    const metaDir = joinPath(streamDir, "meta")
    for (const n of yield* disk.list(metaDir)) {
      if (n.endsWith(TMP_EXT)) yield* disk.unlink(joinPath(metaDir, n))
      else yield* syncFile(disk, joinPath(metaDir, n))
    }
    yield* disk.syncDir(metaDir)
    yield* syncFile(disk, joinPath(streamDir, "config"))
    yield* disk.syncDir(streamDir)
  })

const syncFile = (disk: DiskService, path: string) =>
  disk.open(path, false).pipe(
    Effect.flatMap((f) => Effect.ensuring(f.sync(), Effect.ignore(f.close()))),
    Effect.catchIf((e) => e.reason === "NotFound", () => Effect.void)
  )

const readConfig = (disk: DiskService, streamDir: string): Effect.Effect<StoreConfig | undefined, DiskError> =>
  Effect.map(disk.readFile(joinPath(streamDir, "config")), (raw) => {
    const data = decodeMeta(raw)
    if (data === undefined) return undefined
    try {
      return makeStoreConfig(JSON.parse(Buffer.from(data).toString("utf8")) as Partial<StoreConfig>)
    } catch {
      return undefined
    }
  })

const encodeConfig = (cfg: StoreConfig): Uint8Array => encodeMeta(Buffer.from(JSON.stringify(cfg), "utf8"))

/**
 * The longest meta file name written as the encoded key. File systems take 255 bytes;
 * the temporary name of an atomic write adds a suffix. A longer key (a consumer name of
 * 255 bytes, %-encoded, is up to 765) gets a name from its hash, and its file carries
 * the key itself, so any key survives a restart.
 */
const MAX_META_NAME = 200
const HASHED = "~"

const metaFileName = (key: string): string => {
  const plain = encodeName(key)
  return plain.length <= MAX_META_NAME ? plain : HASHED + createHash("sha256").update(key, "utf8").digest("hex")
}

/** A meta file's content: the value, after the key itself when the file name is a hash. */
const encodeMetaFile = (key: string, value: Uint8Array): Uint8Array => {
  if (!metaFileName(key).startsWith(HASHED)) return encodeMeta(value)
  const k = Buffer.from(key, "utf8")
  const head = Buffer.alloc(2)
  head.writeUInt16BE(k.length)
  return encodeMeta(Buffer.concat([head, k, value]))
}

/** The key and value of a meta file, or undefined when damaged (or, for a hashed name, another key's). */
const decodeMetaFile = (file: string, raw: Uint8Array): { key: string; value: Uint8Array } | undefined => {
  const data = decodeMeta(raw)
  if (data === undefined) return undefined
  if (!file.startsWith(HASHED)) {
    const key = decodeName(file)
    return key === undefined ? undefined : { key, value: data }
  }
  const b = asBuffer(data)
  if (b.length < 2 || b.length < 2 + b.readUInt16BE(0)) return undefined
  const end = 2 + b.readUInt16BE(0)
  return { key: b.toString("utf8", 2, end), value: b.subarray(end) }
}

interface StreamCtx {
  readonly disk: DiskService
  readonly name: string
  readonly dir: string
  readonly blockSize: number
  readonly cacheBlocks: number
  readonly tmpId: () => number
  /** The log the store was made with: rounds run in whatever fiber asked for them, which may have none. */
  readonly log: Option.Option<LogService>
  /** Whose rounds `sync()` joins. */
  readonly commits: GroupCommitService
}

/** A warning or an error of a running stream store, to the log it was made with. */
const say = (ctx: StreamCtx, level: "warn" | "error", msg: string): Effect.Effect<void> => {
  const log = ctx.log
  if (Option.isSome(log)) return Effect.sync(() => log.value[level](msg))
  return level === "warn" ? Effect.logWarning(msg) : Effect.logError(msg)
}

const newBlock = (ctx: StreamCtx, id: number): Block => ({
  id,
  path: joinPath(ctx.dir, "msgs", `${id}${BLOCK_EXT}`),
  file: undefined,
  buf: undefined,
  trusted: true,
  size: 0,
  flushed: 0,
  dirty: false,
  fresh: false,
  live: 0,
  liveBytes: 0,
  deadBytes: 0,
  minSeq: Number.POSITIVE_INFINITY,
  maxSeq: 0,
  gen: 0,
  epoch: 0,
  damaged: false,
  readAt: -1
})

interface Recovered {
  readonly index: StreamIndex<Loc>
  /** The TTLs the live messages' headers give them (streams with `allow_msg_ttl`). */
  readonly ttls: MessageTtls
  readonly blocks: Block[]
  readonly problems: StoreProblem[]
  /** The sync mark as recovery left it (written back, durable; -1s when it could not be). */
  readonly mark: SyncMark
  /** The sync mark's file, open (undefined when recovery could not write it). */
  readonly markFile: DiskFile | undefined
}

/** The stream's sync mark file (see `encodeSyncMark`). */
const SYNC_MARK = "synced"

/** A fresh sync mark file: slot 0 holds `mark`, slot 1 nothing yet. */
const syncMarkFile = (mark: SyncMark): Buffer => Buffer.concat([encodeSyncMark(mark), Buffer.alloc(SYNC_MARK_SLOT)])

/** Rebuild the index from the blocks; truncate a torn tail of the last one. */
const recover = (ctx: StreamCtx, cfg: StoreConfig) =>
  Effect.gen(function*() {
    const { disk } = ctx
    const msgsDir = joinPath(ctx.dir, "msgs")
    yield* disk.mkdirp(msgsDir)
    const names = yield* disk.list(msgsDir)
    for (const n of names) if (n.endsWith(TMP_EXT)) yield* Effect.ignore(disk.unlink(joinPath(msgsDir, n)))
    const ids = names
      .filter((n) => n.endsWith(BLOCK_EXT) && /^\d+$/.test(n.slice(0, -BLOCK_EXT.length)))
      .map((n) => Number(n.slice(0, -BLOCK_EXT.length)))
      .sort((a, b) => a - b)
    const index = new StreamIndex<Loc>()
    const ttls = new MessageTtls()
    const blocks: Block[] = []
    const problems: StoreProblem[] = []
    const markPath = joinPath(ctx.dir, SYNC_MARK)
    const markRead = yield* Effect.either(disk.readFile(markPath))
    const mark = markRead._tag === "Right" ? decodeSyncMark(markRead.right) : undefined
    if (markRead._tag === "Right" && mark === undefined) {
      const message = `sync mark of stream '${ctx.name}' is damaged: lost messages cannot be told from an unfinished write this time`
      problems.push({ kind: "MetaCorrupt", file: markPath, message })
      yield* warn(message)
    } else if (markRead._tag === "Left" && markRead.left.reason !== "NotFound") {
      const message = `sync mark of stream '${ctx.name}' cannot be read (${markRead.left.message}): lost messages cannot be told from an unfinished write this time`
      problems.push({ kind: "MetaCorrupt", file: markPath, message })
      yield* warn(message)
    }
    let floor = 0
    let last = 0
    let lastTs = 0
    /** The partial record cut off the end of the last block. */
    let torn: { readonly file: string; readonly offset: number; readonly length: number } | undefined
    const kill = (e: IndexEntry<Loc>) => {
      if (ttls.size > 0) ttls.forget(e.seq)
      e.loc.blk.live--
      e.loc.blk.liveBytes -= e.loc.len
      e.loc.blk.deadBytes += e.loc.len
    }
    for (let i = 0; i < ids.length; i++) {
      const blk = newBlock(ctx, ids[i])
      const buf = asBuffer(yield* disk.readFile(blk.path))
      const isLast = i === ids.length - 1
      const scan = scanRecords(buf, buf.length, (type, off, len) => {
        if (type === RecordType.Msg) {
          const h = msgHead(buf, off, len)
          if (h.seq <= index.last) {
            problems.push({ kind: "Corrupt", file: blk.path, offset: off, length: len, message: `message ${h.seq} out of order` })
            return
          }
          const size = msgSize(cfg.storage, h.subjectLen, h.hdrLen, h.payloadLen)
          index.add(h.seq, h.subject, h.ts, size, { blk, off, len })
          if (cfg.allow_msg_ttl && h.hdrLen > 0) {
            const ttl = ttlOfHeaders(buf, h.hdrAt, h.hdrAt + h.hdrLen)
            if (ttl !== 0) ttls.add(h.seq, h.ts, ttl)
          }
          blk.live++
          blk.liveBytes += len
          if (h.seq < blk.minSeq) blk.minSeq = h.seq
          if (h.seq > blk.maxSeq) blk.maxSeq = h.seq
          if (h.seq >= last) {
            last = h.seq
            lastTs = h.ts
          }
        } else if (type === RecordType.Del) {
          const seq = recordSeq(buf, off)
          const e = index.remove(seq)
          if (e !== undefined) kill(e)
          if (seq > last) last = seq
        } else if (type === RecordType.Floor) {
          const seq = recordSeq(buf, off)
          if (seq > floor) floor = seq
          if (seq - 1 > last) last = seq - 1
        } else {
          const st = decodeState(buf, off)
          if (st.floor > floor) floor = st.floor
          if (st.last >= last) {
            last = st.last
            lastTs = st.lastTs
          }
        }
      })
      blk.size = buf.length
      blk.damaged = scan.bad.length > 0 || (scan.tornAt !== undefined && !isLast)
      for (const b of scan.bad) {
        problems.push({
          kind: "Corrupt",
          file: blk.path,
          offset: b.offset,
          length: b.length,
          message: `${b.length} unreadable bytes at offset ${b.offset}; later records recovered`
        })
      }
      if (scan.tornAt !== undefined) {
        const cut = buf.length - scan.tornAt
        if (isLast) {
          const f = yield* disk.open(blk.path, true)
          yield* f.truncate(scan.tornAt)
          yield* f.sync()
          blk.file = f
          blk.size = scan.tornAt
          torn = { file: blk.path, offset: scan.tornAt, length: cut }
        } else {
          problems.push({
            kind: "Corrupt",
            file: blk.path,
            offset: scan.tornAt,
            length: cut,
            message: `${cut} unreadable bytes at the end of a sealed block`
          })
        }
      }
      blk.flushed = blk.size
      blk.buf = buf
      blocks.push(blk)
    }
    // What we read may be a dead process's unsynced writes: make it durable before
    // anyone sees it, or a later power loss could take back a sequence already served.
    for (const blk of blocks) {
      const f = blk.file ?? (yield* disk.open(blk.path, false))
      yield* f.sync()
      if (blk !== blocks[blocks.length - 1]) yield* f.close()
      else blk.file = f
    }
    if (blocks.length > 0) yield* disk.syncDir(msgsDir)
    // Less than the mark says was synced: acknowledged messages are gone (a truncated or
    // deleted block file), which a torn write cannot do. Said loudly, and the sequences
    // handed out stay used: new messages never take the number of an acknowledged one.
    const lost = mark !== undefined && last < mark.synced
    if (torn !== undefined) {
      const message = lost
        ? `truncated ${torn.length} bytes of a damaged record at offset ${torn.offset}`
        : `truncated ${torn.length} bytes of an unfinished write at offset ${torn.offset}`
      problems.push({ kind: "TornTail", ...torn, message })
      if (!lost) yield* warn(`stream '${ctx.name}': ${torn.file}: ${message}`)
    }
    if (lost) {
      const message = `lost acknowledged messages: sequences ${last + 1} to ${mark.synced} were on stable storage and are gone (the end of the stream's files was lost, not an unfinished write); new messages continue after ${Math.max(mark.reserved, mark.synced)}`
      problems.push({ kind: "LostData", file: blocks[blocks.length - 1]?.path ?? msgsDir, message })
      yield* say(ctx, "error", `stream '${ctx.name}': ${message}`)
    }
    // Without lost data every acknowledged sequence is on disk, so the tail may be taken
    // again (what a crash cut was never acknowledged); with it, none up to the mark's reserved.
    index.restoreLast(last, lastTs)
    // What was lost may have been acknowledged: its sequences, and any a mark already kept, stay unused.
    index.reserveUpTo(lost ? Math.max(mark.reserved, mark.synced, mark.floor) : (mark?.floor ?? 0))
    // The mark starts again from what is on disk now (a stream from before marks gets one).
    // Best effort: without it the next rounds write one (a full disk must not keep a stream from opening).
    const markNow: SyncMark = { gen: (mark?.gen ?? 0) + 1, synced: last, reserved: last, floor: index.reserved }
    const markWritten = yield* Effect.either(
      Effect.gen(function*() {
        const f = yield* disk.open(markPath, true)
        yield* f.write(encodeSyncMark(markNow), (markNow.gen % 2) * SYNC_MARK_SLOT)
        yield* f.truncate(2 * SYNC_MARK_SLOT)
        yield* f.sync()
        if (markRead._tag === "Left") yield* disk.syncDir(ctx.dir)
        return f
      })
    )
    if (markWritten._tag === "Left") yield* warn(`stream '${ctx.name}': sync mark not written: ${markWritten.left.message}`)
    const dropped: IndexEntry<Loc>[] = []
    index.setFloor(floor, dropped)
    dropped.forEach(kill)
    for (const p of problems) {
      if (p.kind === "Corrupt") yield* warn(`stream '${ctx.name}': ${p.file}: ${p.message}`)
    }
    // Only the active block stays in memory (it must); sealed ones are read back when asked for.
    for (let i = 0; i < blocks.length - 1; i++) blocks[i].buf = undefined
    return {
      index,
      ttls,
      blocks,
      problems,
      mark: markWritten._tag === "Right" ? markNow : { gen: markNow.gen, synced: -1, reserved: -1, floor: index.reserved },
      markFile: markWritten._tag === "Right" ? markWritten.right : undefined
    } satisfies Recovered
  })

const openFileStream = (ctx: StreamCtx, cfg: StoreConfig, rec: Recovered, extraProblems: StoreProblem[], onClose: () => void) => {
  const { disk, index, blocks } = { disk: ctx.disk, index: rec.index, blocks: rec.blocks }
  const msgsDir = joinPath(ctx.dir, "msgs")
  const metaDir = joinPath(ctx.dir, "meta")
  const problems: StoreProblem[] = [...extraProblems, ...rec.problems]
  const lock = Effect.unsafeMakeSemaphore(1)
  let appended = 0
  let durable = 0
  let recordedFloor = index.first
  // The floor known to be on disk: a DEL below it may be dropped by compaction.
  let syncedFloor = index.first
  let epoch = 1
  /** Sealed blocks held because they were read (at most `cacheBlocks`, least recently loaded first out). */
  const cached: Block[] = []
  /** Blocks sealed by writing whose bytes may not all be written out yet: let go once they are. */
  let sealing: Block[] = []

  const active = (): Block | undefined => blocks[blocks.length - 1]

  const reserve = (blk: Block, len: number) => {
    const need = blk.size + len
    const have = blk.buf === undefined ? 0 : blk.buf.length
    if (need <= have) return
    const next = Buffer.allocUnsafe(Math.max(need, Math.min(Math.max(have * 2, FIRST_BUF), ctx.blockSize + len)))
    if (blk.buf !== undefined) blk.buf.copy(next, 0, 0, blk.size)
    blk.buf = next
  }

  /** A round is writing: blocks stay in memory, as a failed round rewrites them from there. */
  let writing = false

  const evict = () => {
    if (writing) return
    if (sealing.length > 0) {
      sealing = sealing.filter((b) => {
        if (b.flushed !== b.size || b === active()) return true
        if (!cached.includes(b)) {
          b.buf = undefined
          b.readAt = -1
        }
        return false
      })
    }
    while (cached.length > ctx.cacheBlocks) {
      const i = cached.findIndex((b) => b.flushed === b.size && b !== active())
      if (i < 0) return
      cached[i].buf = undefined
      cached[i].readAt = -1
      cached.splice(i, 1)
    }
  }

  /** The block to append `len` bytes to, rolling to a new one (opened by a STATE record) when full. */
  const room = (len: number): Block => {
    let blk = active()
    if (blk === undefined || (blk.size > 0 && blk.size + len > ctx.blockSize)) {
      if (blk !== undefined) {
        sealing.push(blk)
        evict()
      }
      // A stream that filled a block will likely fill this one: size its buffer once
      // rather than grow it by copies.
      const full = blk !== undefined
      blk = newBlock(ctx, blk === undefined ? 1 : blk.id + 1)
      blocks.push(blk)
      reserve(blk, full ? Math.max(ctx.blockSize, STATE_LEN + len) : STATE_LEN + len)
      blk.size += encodeState(blk.buf!, 0, index.first, index.last, index.lastTs)
      appended++
    }
    reserve(blk, len)
    return blk
  }

  const writeTombstone = (len: number, encode: (buf: Buffer, off: number) => number) => {
    const blk = room(len)
    blk.size += encode(blk.buf!, blk.size)
    appended++
  }

  const append = (seq: number, subject: string, subjectLen: number, headers: Uint8Array | undefined, payload: Uint8Array, ts: number, refusable: boolean): Loc => {
    const len = msgRecordLen(subjectLen, headers === undefined ? 0 : headers.length, payload.length)
    const blk = room(len)
    const off = blk.size
    encodeMsg(blk.buf!, off, seq, ts, subject, subjectLen, headers, payload)
    blk.size += len
    blk.live++
    blk.liveBytes += len
    if (seq < blk.minSeq) blk.minSeq = seq
    if (seq > blk.maxSeq) blk.maxSeq = seq
    appended++
    if (refusable) refusables.push(seq)
    return { blk, off, len }
  }

  // FLOOR(first) is always true, so it records every removal below the new first
  // in one record; only removals above it need a DEL each.
  const removed = (entries: ReadonlyArray<IndexEntry<Loc>>) => {
    const first = index.first
    for (const e of entries) {
      const blk = e.loc.blk
      blk.live--
      blk.liveBytes -= e.loc.len
      blk.deadBytes += e.loc.len
      if (e.seq >= first) writeTombstone(DEL_LEN, (b, o) => encodeDel(b, o, e.seq))
    }
    if (first > recordedFloor) {
      recordedFloor = first
      writeTombstone(FLOOR_LEN, (b, o) => encodeFloor(b, o, first))
    }
  }

  // A STATE record carries the new last (and first): recovery takes the newest.
  const skipped = () => writeTombstone(STATE_LEN, (b, o) => encodeState(b, o, index.first, index.last, index.lastTs))

  /** A sealed block's bytes from disk, as laid out now (retried if compaction rewrote it meanwhile). */
  const readBlock = (blk: Block): Effect.Effect<Buffer, StoreError> =>
    Effect.gen(function*() {
      const gen = blk.gen
      const data = asBuffer(yield* io(disk.readFile(blk.path)))
      if (blk.gen !== gen) return yield* readBlock(blk)
      if (blk.buf !== undefined) return blk.buf
      // Checked once here, so the reads of a replay (often several per message) need not.
      const scan = scanRecords(data, data.length, () => {})
      blk.buf = data
      blk.trusted = scan.bad.length === 0 && scan.tornAt === undefined
      cached.push(blk)
      evict()
      return data
    })

  // Readers of a block that is being read wait for that read rather than start another.
  const loading = new Map<Block, Deferred.Deferred<Buffer, StoreError>>()
  const loadBlock = (blk: Block): Effect.Effect<Buffer, StoreError> =>
    Effect.suspend(() => {
      if (blk.buf !== undefined) return Effect.succeed(blk.buf)
      const inFlight = loading.get(blk)
      if (inFlight !== undefined) return Deferred.await(inFlight)
      return Effect.flatMap(Deferred.make<Buffer, StoreError>(), (d) => {
        loading.set(blk, d)
        return readBlock(blk).pipe(
          Effect.exit,
          Effect.flatMap((exit) => {
            loading.delete(blk)
            return Effect.zipRight(Deferred.done(d, exit), exit)
          }),
          Effect.uninterruptible
        )
      })
    })

  /** The message in `e` from `buf`, where its record starts at `off`. */
  const decode = (e: IndexEntry<Loc>, buf: Buffer, off: number, trusted: boolean): StoredMsg | StoreError => {
    const len = e.loc.len
    if ((!trusted && recordAt(buf, off, off + len) !== len) || recordSeq(buf, off) !== e.seq) {
      return storeError("Corrupt", `message ${e.seq} is damaged`, e.loc.blk.path)
    }
    const m = msgBody(buf, off, len)
    return { seq: e.seq, subject: e.subject, ts: m.ts, headers: m.headers, payload: m.payload }
  }

  const decodeEffect = (e: IndexEntry<Loc>, buf: Buffer, off: number, trusted: boolean): Effect.Effect<StoredMsg, StoreError> => {
    const m = decode(e, buf, off, trusted)
    return m instanceof StoreError ? Effect.fail(m) : Effect.succeed(m)
  }

  /** Just the record of `e`, by a positioned read (retried if compaction moved it meanwhile). */
  const readRecord = (e: IndexEntry<Loc>): Effect.Effect<StoredMsg, StoreError> =>
    Effect.suspend(() => {
      const blk = e.loc.blk
      const { gen, file } = blk
      const { off, len } = e.loc
      const got = file !== undefined
        ? file.read(off, len)
        : Effect.acquireUseRelease(disk.open(blk.path, false), (f) => f.read(off, len), (f) => Effect.ignore(f.close()))
      return Effect.flatMap(Effect.exit(io(got)), (exit) => {
        if (blk.gen !== gen) return read(e)
        return Exit.isSuccess(exit) ? decodeEffect(e, asBuffer(exit.value), 0, false) : Effect.failCause(exit.cause)
      })
    })

  const read = (e: IndexEntry<Loc>): Effect.Effect<StoredMsg, StoreError> =>
    Effect.suspend(() => {
      const blk = e.loc.blk
      if (blk.buf !== undefined) return decodeEffect(e, blk.buf, e.loc.off, blk.trusted)
      if (loading.has(blk) || (blk.readAt >= 0 && e.loc.off > blk.readAt && e.loc.len < READ_ALONE)) {
        return Effect.flatMap(loadBlock(blk), (buf) => decodeEffect(e, buf, e.loc.off, false))
      }
      blk.readAt = e.loc.off
      return readRecord(e)
    })

  const readCached = (e: IndexEntry<Loc>): StoredMsg | undefined => {
    const buf = e.loc.blk.buf
    if (buf === undefined) return undefined
    const m = decode(e, buf, e.loc.off, e.loc.blk.trusted)
    return m instanceof StoreError ? undefined : m
  }

  // ---- rounds: writing out (and syncing) what was appended, or taking it back ----

  /** What one round writes: each block's bytes [from, to) as they were when it began. */
  interface Round {
    readonly parts: ReadonlyArray<{ readonly blk: Block; readonly from: number; readonly to: number }>
    /** `index.last` when it began: every sequence up to it is in `parts` or written before. */
    readonly last: number
  }

  const beginRound = (): Round => {
    writing = true
    return { parts: blocks.map((blk) => ({ blk, from: blk.flushed, to: blk.size })), last: index.last }
  }

  /** Every round ends here, written or not. */
  const endRound = Effect.sync(() => {
    writing = false
    evict()
  })

  const writeOut = (round: Round) =>
    Effect.gen(function*() {
      for (const { blk, from, to } of round.parts) {
        if (to <= from) continue
        if (blk.file === undefined) {
          blk.file = yield* io(disk.open(blk.path, true))
          blk.fresh = true
        }
        yield* io(blk.file.write(blk.buf!.subarray(from, to), from))
        blk.flushed = to
        blk.dirty = true
      }
    })

  const syncFiles = Effect.gen(function*() {
    for (const blk of blocks.slice()) {
      if (blk.dirty) {
        yield* io(blk.file!.sync())
        blk.dirty = false
      }
    }
    // Only names created before this folder sync become durable by it.
    const fresh = blocks.filter((b) => b.fresh)
    if (fresh.length > 0) {
      yield* io(disk.syncDir(msgsDir))
      for (const blk of fresh) blk.fresh = false
    }
  })

  // The sync mark, written with every fsync round beside the blocks (see record.ts): what
  // the rounds before made durable, and the sequences this one may acknowledge.
  const markPath = joinPath(ctx.dir, SYNC_MARK)
  let mark: SyncMark = rec.mark
  let markFile = rec.markFile
  /** `index.last` of the last round whose fsync completed: every message up to it is durable. */
  let syncedLast = Math.max(0, rec.mark.synced)
  const writeMark = (round: Round) =>
    Effect.suspend(() => {
      if (mark.synced === syncedLast && mark.reserved >= round.last) return Effect.void
      const next: SyncMark = { gen: mark.gen + 1, synced: syncedLast, reserved: round.last, floor: index.reserved }
      return Effect.gen(function*() {
        const fresh = markFile === undefined
        const f = markFile ?? (yield* io(disk.open(markPath, true)))
        markFile = f
        yield* io(f.write(encodeSyncMark(next), (next.gen % 2) * SYNC_MARK_SLOT))
        yield* io(f.sync())
        if (fresh) yield* io(disk.syncDir(ctx.dir))
        mark = next
      })
    })

  /** Messages stored `refusable` and not yet written out, in sequence order (see `storeSync`). */
  let refusables: number[] = []
  /** Refusable messages a failed round took back, until their publisher is told (`takeRefused`). */
  const refused = new Set<number>()
  /** Why writes fail now: cleared by the next round that succeeds. */
  let failing: StoreProblem | undefined

  /** Writes fail for want of space: publishes are refused up front (until a write, even a probe's, works). */
  let noSpace = false

  /** `index.last` of the last round that handed its bytes to the OS (a flush's or a sync's). */
  let writtenLast = index.last

  const roundDone = (round: Round) =>
    Effect.gen(function*() {
      if (round.last > writtenLast) writtenLast = round.last
      if (refusables.length > 0) refusables = refusables.filter((seq) => seq > round.last)
      noSpace = false
      if (failing === undefined) return
      if (failing.kind === "NoSpace") yield* say(ctx, "warn", `stream '${ctx.name}': writes succeed again: space was freed`)
      failing = undefined
    })

  /**
   * A round failed: what it wrote is cut off the files again (a write that failed may
   * have landed a part, an fsync that failed left its fate unknown), so those bytes are
   * unwritten and appended as before. The refusable messages among them are taken out —
   * their publishers are told they were refused, so they must never be stored — and the
   * rest is written by the next round.
   */
  const roundFailed = (round: Round, e: StoreError) =>
    Effect.gen(function*() {
      // Nothing to refuse (MQTT's state, tombstones): what was written stays with the OS,
      // only a partly landed write is cut, and the next round writes and syncs it again.
      if (!refusables.some((seq) => seq <= round.last)) {
        for (const { blk } of round.parts) if (blk.file !== undefined && blk.flushed < blk.size) yield* Effect.ignore(blk.file.truncate(blk.flushed))
        return yield* condition(e)
      }
      let rewound = true
      for (const { blk, from, to } of round.parts) {
        if (to <= from || blk.file === undefined) continue
        const cut = yield* Effect.either(io(blk.file.truncate(from)))
        if (cut._tag === "Left") {
          rewound = false
          continue
        }
        blk.flushed = from
        // The cut must be durable before anyone hears "refused": a power cut could otherwise
        // keep the write it cuts and lose the cut (a few tries; then the next fsync takes it).
        let synced = false
        for (let i = 0; i < 5 && !synced; i++) synced = (yield* Effect.either(io(blk.file.sync())))._tag === "Right"
        blk.dirty = !synced
      }
      if (!rewound) yield* say(ctx, "error", `stream '${ctx.name}': a failed write could not be taken back: ${e.message}`)
      discard(round.last)
      return yield* condition(e)
    })

  /** After a failed round: what /healthz and the log say, and whether publishes are refused up front. */
  const condition = (e: StoreError) =>
    Effect.gen(function*() {
      const full = e.reason === "NoSpace"
      if (full && failing?.kind !== "NoSpace") {
        yield* say(ctx, "error", `stream '${ctx.name}': no space left on the device: publishes are refused (503 insufficient resources) until space is freed`)
      }
      // While space is short, an I/O error does not hide it.
      if (full || failing?.kind !== "NoSpace") {
        failing = full
          ? { kind: "NoSpace", file: ctx.dir, message: "no space left on the device: publishes are refused until space is freed" }
          : { kind: "WriteFailed", file: ctx.dir, message: `writes fail: ${e.message}` }
      }
      if (full) noSpace = true
      return yield* Effect.fail(e)
    })

  /**
   * Takes the refusable messages up to sequence `upTo` out of the unwritten bytes (freeing
   * their memory) and out of the index. Their sequences stay used — a consumer may have
   * seen one — and a STATE record says so on disk.
   */
  const discard = (upTo: number) => {
    const gone = refusables.filter((seq) => seq <= upTo)
    if (gone.length === 0) return
    refusables = refusables.filter((seq) => seq > upTo)
    const cuts = new Map<Block, Set<number>>()
    for (const seq of gone) {
      refused.add(seq)
      const e = index.get(seq)
      // Already removed (limits, a rollup): its record and tombstone go to disk as they are.
      if (e === undefined) continue
      index.remove(seq)
      const blk = e.loc.blk
      blk.live--
      blk.liveBytes -= e.loc.len
      if (e.loc.off < blk.flushed) {
        // Still in the file (it could not be cut): removed like any other message.
        blk.deadBytes += e.loc.len
        writeTombstone(DEL_LEN, (b, o) => encodeDel(b, o, seq))
        continue
      }
      let set = cuts.get(blk)
      if (set === undefined) cuts.set(blk, (set = new Set()))
      set.add(e.loc.off)
    }
    for (const [blk, offsets] of cuts) cutRecords(blk, offsets)
    skipped()
  }

  /**
   * Removes the records at `offsets` from a block's unwritten bytes, the later ones moving
   * down — into a new buffer: messages already read are views of the old one, which must
   * not change under them.
   */
  const cutRecords = (blk: Block, offsets: ReadonlySet<number>) => {
    const buf = blk.buf!
    const out = Buffer.allocUnsafe(buf.length)
    buf.copy(out, 0, 0, blk.flushed)
    let w = blk.flushed
    for (let r = blk.flushed; r < blk.size; ) {
      const len = buf.readUInt32LE(r + 2)
      if (!offsets.has(r)) {
        if (recordType(buf, r) === RecordType.Msg) {
          const e = index.get(recordSeq(buf, r))
          if (e !== undefined && e.loc.blk === blk && e.loc.off === r) e.loc.off = w
        }
        buf.copy(out, w, r, r + len)
        w += len
      }
      r += len
    }
    blk.buf = out
    blk.size = w
  }

  const syncNow = Effect.suspend(() => {
    const end = appended
    const floor = recordedFloor
    const round = beginRound()
    return Effect.all([Effect.zipRight(writeOut(round), syncFiles), writeMark(round)], { concurrency: "unbounded", discard: true }).pipe(
      Effect.either,
      Effect.flatMap((r) => {
        if (r._tag === "Left") return roundFailed(round, r.left)
        durable = end
        syncedFloor = floor
        syncedLast = round.last
        return roundDone(round)
      }),
      Effect.ensuring(endRound)
    )
  })

  /** Hands what was appended to the OS (no fsync: a `sync_interval` acknowledges at this point). */
  const flushNow = Effect.suspend(() => {
    const round = beginRound()
    return Effect.either(writeOut(round)).pipe(
      Effect.flatMap((r) => (r._tag === "Left" ? roundFailed(round, r.left) : roundDone(round))),
      Effect.ensuring(endRound)
    )
  })

  // Group commit (group-commit.ts): callers of sync() share rounds, each a single write
  // + fsync under the lock covering everything appended before it started, so every
  // caller waits for at most the round in flight and its own.
  const rounds = ctx.commits.barrier(lock.withPermits(1)(Effect.uninterruptible(syncNow)))
  const sync = () => Effect.suspend(() => (durable >= appended ? Effect.void : rounds))

  const flush = () => lock.withPermits(1)(Effect.uninterruptible(flushNow))

  /** After a failure: try writing again, with a small record when nothing is waiting. */
  const probe = () =>
    Effect.suspend(() => {
      if (durable >= appended) skipped()
      return sync()
    })

  /** Does an older block still physically hold message `seq` (so a DEL for it must stay)? */
  const heldBefore = (blk: Block, seq: number) => {
    for (const b of blocks) {
      if (b === blk) return false
      if (seq >= b.minSeq && seq <= b.maxSeq) return true
    }
    return false
  }

  /** Rewrite a sealed block with only what still matters; unlink it when nothing does. */
  const rewrite = (blk: Block) =>
    Effect.gen(function*() {
      const before = blk.size
      // Held afterwards only if it was held for reads before: compaction is no reason to keep a block.
      const wasHeld = blk.buf !== undefined && cached.includes(blk)
      const src = blk.buf ?? (yield* loadBlock(blk))
      const out = Buffer.allocUnsafe(blk.size)
      const moves: Array<[IndexEntry<Loc>, number]> = []
      let o = 0
      let minSeq = Number.POSITIVE_INFINITY
      let maxSeq = 0
      scanRecords(src, blk.size, (type, off, len) => {
        const seq = recordSeq(src, off)
        if (type === RecordType.Msg) {
          const e = index.get(seq)
          if (e === undefined || e.loc.blk !== blk || e.loc.off !== off) return
          moves.push([e, o])
          minSeq = Math.min(minSeq, seq)
          maxSeq = Math.max(maxSeq, seq)
        } else if (type !== RecordType.Del || seq < syncedFloor || !heldBefore(blk, seq)) {
          return
        }
        src.copy(out, o, off, off + len)
        o += len
      })
      if (o === before) {
        // Nothing to drop (tombstones still needed): leave the file alone.
        blk.epoch = epoch
        return 0
      }
      if (o === 0) {
        if (blk.file !== undefined) yield* Effect.ignore(blk.file.close())
        yield* io(disk.unlink(blk.path))
        yield* io(disk.syncDir(msgsDir))
        blocks.splice(blocks.indexOf(blk), 1)
        const c = cached.indexOf(blk)
        if (c >= 0) cached.splice(c, 1)
        sealing = sealing.filter((b) => b !== blk)
        epoch++
        return before
      }
      yield* io(writeAtomic(disk, msgsDir, `${blk.id}${BLOCK_EXT}`, out.subarray(0, o), ctx.tmpId()))
      if (blk.file !== undefined) yield* Effect.ignore(blk.file.close())
      blk.file = undefined
      blk.buf = wasHeld ? out.subarray(0, o) : undefined
      if (!wasHeld && cached.includes(blk)) cached.splice(cached.indexOf(blk), 1)
      blk.readAt = -1
      blk.trusted = true
      blk.size = blk.flushed = o
      blk.gen++
      blk.live = blk.liveBytes = blk.deadBytes = 0
      for (const [e, at] of moves) {
        e.loc.off = at
        if (index.get(e.seq) === e) {
          blk.live++
          blk.liveBytes += e.loc.len
        } else blk.deadBytes += e.loc.len
      }
      blk.minSeq = minSeq
      blk.maxSeq = maxSeq
      blk.epoch = ++epoch
      evict()
      return before - o
    })

  // The lock is taken per block, so publishes waiting on sync() slip in between.
  const compact = () =>
    Effect.gen(function*() {
      // Only blocks sealed before this sync: then the block active now, durable after
      // it, holds a STATE at least as new as any FLOOR or STATE compaction drops.
      const sealed = blocks.slice(0, -1)
      yield* lock.withPermits(1)(Effect.uninterruptible(syncNow))
      let reclaimed = 0
      for (const blk of sealed) {
        reclaimed += yield* lock.withPermits(1)(
          Effect.uninterruptible(
            Effect.suspend(() => {
              if (!blocks.includes(blk) || blk.damaged) return Effect.succeed(0)
              const mostlyDead = blk.deadBytes > 0 && blk.deadBytes * 2 >= blk.size
              // Tombstones alone: worth a look again only once another block changed.
              const onlyTombstones = blk.live === 0 && blk.epoch !== epoch
              return mostlyDead || onlyTombstones ? rewrite(blk) : Effect.succeed(0)
            })
          )
        )
      }
      return reclaimed
    })

  const metaPath = (key: string) => joinPath(metaDir, metaFileName(key))

  const closeFiles = Effect.gen(function*() {
    if (markFile !== undefined) yield* Effect.ignore(markFile.close())
    markFile = undefined
    for (const blk of blocks) {
      if (blk.file !== undefined) yield* Effect.ignore(blk.file.close())
      blk.file = undefined
      blk.buf = undefined
    }
  })

  const health = (): StoreHealth => ({
    ok: failing === undefined && problems.every((p) => p.kind === "TornTail"),
    problems: failing === undefined ? [...problems] : [...problems, failing]
  })

  return makeStreamStore<Loc>(
    ctx.name,
    cfg,
    {
      index,
      ttls: rec.ttls,
      append,
      skipped,
      removed,
      read,
      readCached,
      persistConfig: (next) => io(writeAtomic(disk, ctx.dir, "config", encodeConfig(next), ctx.tmpId())),
      takeRefused: (seq) => refused.delete(seq),
      durableSeq: () => syncedLast,
      writtenSeq: () => writtenLast,
      outOfSpace: () => noSpace,
      probe,
      sync,
      flush,
      compact,
      health,
      writeMeta: (key, value) => io(writeAtomic(disk, metaDir, metaFileName(key), encodeMetaFile(key, value), ctx.tmpId())),
      readMeta: (key) =>
        disk.readFile(metaPath(key)).pipe(
          Effect.map((raw): Uint8Array | undefined => raw),
          Effect.catchTag("DiskError", (e) => (e.reason === "NotFound" ? Effect.succeed(undefined) : Effect.fail(fromDisk(e)))),
          Effect.flatMap((raw) => {
            if (raw === undefined) return Effect.succeed(undefined)
            const m = decodeMetaFile(metaFileName(key), raw)
            return m === undefined || m.key !== key
              ? Effect.fail(storeError("Corrupt", `meta '${key}' of stream '${ctx.name}' is damaged`))
              : Effect.succeed(m.value)
          })
        ),
      deleteMeta: (key) =>
        disk.unlink(metaPath(key)).pipe(
          Effect.zipRight(disk.syncDir(metaDir)),
          Effect.catchTag("DiskError", (e) => (e.reason === "NotFound" ? Effect.void : Effect.fail(fromDisk(e))))
        ),
      listMeta: () =>
        Effect.flatMap(io(disk.list(metaDir)), (names) =>
          Effect.map(
            Effect.forEach(names.filter((n) => !n.endsWith(TMP_EXT)), (n) => {
              if (!n.startsWith(HASHED)) return Effect.succeed(decodeName(n))
              // A hashed name: the key is in the file. One too damaged to tell its key is
              // reported (log, health), as a damaged config is, and kept on disk.
              const file = joinPath(metaDir, n)
              return Effect.flatMap(io(disk.readFile(file)), (raw) => {
                const key = decodeMetaFile(n, raw)?.key
                if (key !== undefined || problems.length >= MAX_PROBLEMS || problems.some((p) => p.file === file)) return Effect.succeed(key)
                const message = `meta file of stream '${ctx.name}' is damaged; its key is unknown`
                problems.push({ kind: "MetaCorrupt", file, message })
                return Effect.as(say(ctx, "warn", `${message}: ${file}`), undefined)
              })
            }),
            (keys) => keys.flatMap((k) => k ?? [])
          )
        ),
      close: () => Effect.ensuring(lock.withPermits(1)(Effect.uninterruptible(syncNow)), lock.withPermits(1)(closeFiles))
    },
    onClose
  )
}

/** Stream stores under `dir`; streams configured with `storage: "memory"` are kept in memory. */
export const makeFileStore = (dir: string, options: FileStoreOptions = {}) =>
  Effect.gen(function*() {
    const disk = yield* Disk
    const log = yield* Effect.serviceOption(Log)
    const commits = yield* GroupCommit
    const memory = makeMemoryStore()
    const open = new Map<string, StreamStore>()
    const lock = Effect.unsafeMakeSemaphore(1)
    let tmpCounter = 0
    yield* io(disk.mkdirp(dir))
    for (const n of yield* io(disk.list(dir))) {
      if (n.endsWith(TRASH_EXT) || n.endsWith(NEW_EXT)) yield* io(disk.removeAll(joinPath(dir, n)))
    }
    // A dead process may have renamed a stream into place without the folder's fsync.
    yield* io(disk.syncDir(dir))

    const ctxFor = (name: string): StreamCtx => ({
      disk,
      name,
      dir: joinPath(dir, encodeName(name)),
      blockSize: options.blockSize ?? 8 * 1024 * 1024,
      cacheBlocks: options.cacheBlocks ?? 4,
      tmpId: () => ++tmpCounter,
      log,
      commits
    })

    const onDisk = (name: string) =>
      Effect.map(io(disk.list(dir)), (names) => names.includes(encodeName(name)))

    const openStream = (name: string, cfg: StoreConfig | undefined) =>
      Effect.gen(function*() {
        const ctx = ctxFor(name)
        const extra: StoreProblem[] = []
        if (cfg === undefined) {
          const stored = yield* Effect.either(readConfig(disk, ctx.dir))
          cfg = stored._tag === "Right" ? stored.right : undefined
          if (cfg === undefined) {
            // Never lose a stream over its metadata: open it without limits and say so.
            const message = `config of stream '${name}' is missing or damaged; opened without limits`
            extra.push({ kind: "MetaCorrupt", file: joinPath(ctx.dir, "config"), message })
            yield* warn(message)
            cfg = makeStoreConfig()
          }
        }
        yield* disk.mkdirp(joinPath(ctx.dir, "meta"))
        yield* makeMetaDurable(disk, ctx.dir)
        const rec = yield* recover(ctx, cfg)
        const handle = openFileStream(ctx, cfg, rec, extra, () => {
          if (open.get(name) === handle) open.delete(name)
        })
        open.set(name, handle)
        return handle
      })

    const service: StoreService = {
      create: (name, config, meta = []) =>
        lock.withPermits(1)(
          Effect.gen(function*() {
            if (open.has(name) || (yield* onDisk(name)) || (yield* Effect.either(memory.open(name)))._tag === "Right") {
              return yield* Effect.fail(storeError("Exists", `stream '${name}' already exists`))
            }
            if (config.storage === "memory") return yield* memory.create(name, config, meta)
            // Built aside and renamed into place: a crash mid-create leaves no half stream.
            const ctx = ctxFor(name)
            const staging = `${ctx.dir}${NEW_EXT}`
            yield* io(disk.removeAll(staging))
            yield* io(disk.mkdirp(joinPath(staging, "msgs")))
            yield* io(disk.mkdirp(joinPath(staging, "meta")))
            yield* io(writeAtomic(disk, staging, "config", encodeConfig(config), ++tmpCounter))
            yield* io(writeAtomic(disk, staging, SYNC_MARK, syncMarkFile({ gen: 0, synced: 0, reserved: 0, floor: 0 }), ++tmpCounter))
            for (const [key, value] of meta) yield* io(writeAtomic(disk, joinPath(staging, "meta"), metaFileName(key), encodeMetaFile(key, value), ++tmpCounter))
            yield* io(disk.syncDir(staging))
            yield* io(disk.rename(staging, ctx.dir))
            yield* io(disk.syncDir(dir))
            return yield* io(openStream(name, config))
          })
        ),
      open: (name) =>
        lock.withPermits(1)(
          Effect.suspend(() => {
            const h = open.get(name)
            if (h !== undefined) return Effect.succeed(h)
            return Effect.flatMap(onDisk(name), (here) => (here ? io(openStream(name, undefined)) : memory.open(name)))
          })
        ),
      delete: (name) =>
        lock.withPermits(1)(
          Effect.gen(function*() {
            const h = open.get(name)
            if (h !== undefined) yield* Effect.ignore(h.close())
            if (!(yield* onDisk(name))) return yield* memory.delete(name)
            const ctx = ctxFor(name)
            // Rename first: a crash mid-removal must not leave a half stream that looks damaged.
            const trash = `${ctx.dir}${TRASH_EXT}`
            yield* io(disk.rename(ctx.dir, trash))
            yield* io(disk.syncDir(dir))
            yield* io(disk.removeAll(trash))
          })
        ),
      list: () =>
        Effect.gen(function*() {
          const names = (yield* io(disk.list(dir)))
            .filter((n) => !n.includes("."))
            .flatMap((n) => decodeName(n) ?? [])
          const mem = yield* memory.list()
          return [...new Set([...names, ...mem])].sort()
        })
    }

    yield* Effect.addFinalizer(() =>
      Effect.forEach([...open.values()], (h) => Effect.ignore(h.close()), { discard: true })
    )
    return service
  })

export const layerFile = (dir: string, options: FileStoreOptions = {}): Layer.Layer<Store, StoreError, Disk> =>
  Layer.scoped(Store, makeFileStore(dir, options))
