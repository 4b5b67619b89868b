// The Disk port in memory, for the deterministic simulation: it keeps exactly what
// disk.ts promises and no more. Every write lands in its file's unsynced layer and
// `sync` makes it durable; names live in their folder's entries and `syncDir` makes
// them durable. A process crash keeps everything the OS was handed; a power loss keeps
// only what was made durable, plus (when tearing) an in-order prefix of each file's
// unsynced writes, the last one cut at a seeded byte. Fsyncs complete after a delay
// the caller schedules (`later`), so a crash can land while one is in flight.
import { Effect, Layer } from "effect"
import { Disk, DiskError, type DiskFile, type DiskService } from "./disk.js"

type Op = { readonly id: number; readonly pos: number; readonly data: Buffer } | { readonly id: number; readonly truncate: number }

interface FileNode {
  readonly kind: "file"
  /** What reads see (OS page cache), bytes [0, size). */
  buf: Buffer
  size: number
  /** What survives a power loss. */
  durable: Buffer
  /** Writes and truncates since the last completed sync, oldest first. */
  unsynced: Array<Op>
  /** Op id the durable image covers up to (fsyncs may complete out of order). */
  syncedUpTo: number
}

interface DirNode {
  readonly kind: "dir"
  entries: Map<string, Node>
  /** The entries as of the last completed `syncDir`. */
  durable: Map<string, Node>
  /** Op id of the `syncDir` whose image `durable` is. */
  syncedUpTo: number
}

type Node = FileNode | DirNode

export interface SimDiskEnv {
  /** [0, 1): every fault choice (tear points) is drawn from it. */
  readonly random: () => number
  /** Run `f` when an fsync issued now completes (e.g. a few simulated ms later); immediately when absent. */
  readonly later?: (f: () => void) => void
}

export interface SimDiskStats {
  syncs: number
  dirSyncs: number
  crashes: number
  powerLosses: number
  /** Unsynced bytes a power loss discarded. */
  bytesLost: number
  /** Writes a power loss left half-done. */
  tornWrites: number
  /** Writes and fsyncs failed on purpose (`errorRate`). */
  ioErrors: number
  /** Writes (in part or whole) and file creations refused for want of space (`capacity`). */
  noSpace: number
}

const dirNode = (): DirNode => ({ kind: "dir", entries: new Map(), durable: new Map(), syncedUpTo: 0 })

const split = (path: string): Array<string> => path.split("/").filter((p) => p !== "" && p !== ".")

const err = (reason: DiskError["reason"], path: string, message: string) => new DiskError({ reason, path, message })

/** Never completes, like a call into a dead process (Effect.never would keep Node alive with a timer). */
const hang: Effect.Effect<never> = Effect.async<never>(() => {})

export class SimDisk {
  private readonly root: DirNode = dirNode()
  private epoch = 0
  private nextOp = 1
  /** Fsyncs (of files and folders) issued and not yet completed. */
  inFlight = 0
  /** Chance that a write (after landing a prefix) or an fsync fails with an I/O error. */
  errorRate = 0
  /** Planted fault: fsync reports success without making anything durable. */
  lyingSync = false
  /**
   * Bytes the files may hold in all (undefined: no limit). A write that would grow them
   * past it lands what fits and fails with NoSpace (ENOSPC), as does creating a file or
   * folder; overwriting, truncating, renaming and removing still work. `fill()` and
   * `free()` play "disk full, then space freed".
   */
  capacity: number | undefined = undefined
  readonly stats: SimDiskStats = { syncs: 0, dirSyncs: 0, crashes: 0, powerLosses: 0, bytesLost: 0, tornWrites: 0, ioErrors: 0, noSpace: 0 }

  constructor(private readonly env: SimDiskEnv) {}

  /** The disk is full from now on: no file may grow (beyond `slack` more bytes in all). */
  fill(slack = 0): void {
    this.capacity = this.used() + slack
  }

  /** Space is freed: files may grow again. */
  free(): void {
    this.capacity = undefined
  }

  /**
   * Damage from outside the server (a bad copy, a failing disk, an operator): the file
   * keeps only its first `length` bytes, durably. No write or fsync of ours does this.
   */
  cut(path: string, length: number): void {
    const f = this.lookup(path)
    if (f === undefined || f.kind !== "file") throw new Error(`${path}: no such file`)
    f.size = Math.min(f.size, length)
    f.durable = Buffer.from(f.buf.subarray(0, f.size))
    f.unsynced = []
  }

  /** Bytes the files hold now (as the running process sees them). */
  used(): number {
    let n = 0
    const seen = new Set<Node>()
    const walk = (dir: DirNode): void => {
      for (const node of dir.entries.values()) {
        if (seen.has(node)) continue
        seen.add(node)
        if (node.kind === "dir") walk(node)
        else n += node.size
      }
    }
    walk(this.root)
    return n
  }

  /** A folder that exists durably before any process runs (the data directory). */
  provision(path: string): void {
    let dir = this.root
    for (const name of split(path)) {
      let next = dir.entries.get(name)
      if (next === undefined) {
        next = dirNode()
        dir.entries.set(name, next)
      }
      if (next.kind !== "dir") throw new Error(`${path}: not a folder`)
      dir.durable.set(name, next)
      dir = next
    }
  }

  /** The process dies; the OS keeps what it was handed. Its handles and in-flight fsyncs die with it. */
  crash(): void {
    this.epoch++
    this.inFlight = 0
    this.stats.crashes++
  }

  /** The power goes: only durable names and bytes stay, plus, with `tear`, a torn prefix of unsynced writes. */
  powerLoss(tear: boolean): void {
    this.epoch++
    this.inFlight = 0
    this.stats.powerLosses++
    const seen = new Set<Node>()
    const revert = (dir: DirNode): void => {
      dir.entries = new Map(dir.durable)
      for (const n of dir.entries.values()) {
        if (seen.has(n)) continue
        seen.add(n)
        if (n.kind === "dir") revert(n)
        else this.revertFile(n, tear)
      }
    }
    revert(this.root)
  }

  private revertFile(f: FileNode, tear: boolean): void {
    const lostBefore = f.unsynced.reduce((n, op) => n + ("data" in op ? op.data.length : 0), 0)
    let buf = Buffer.from(f.durable)
    let size = buf.length
    const apply = (op: Op, len: number) => {
      if ("truncate" in op) {
        size = op.truncate
        if (buf.length < size) buf = Buffer.concat([buf, Buffer.alloc(size - buf.length)])
        return
      }
      const end = op.pos + len
      if (buf.length < end) buf = Buffer.concat([buf, Buffer.alloc(end - buf.length)])
      op.data.copy(buf, op.pos, 0, len)
      if (end > size) size = end
    }
    let kept = 0
    if (tear && f.unsynced.length > 0) {
      const k = Math.floor(this.env.random() * (f.unsynced.length + 1))
      for (let i = 0; i < k; i++) {
        const op = f.unsynced[i]
        apply(op, "data" in op ? op.data.length : 0)
        if ("data" in op) kept += op.data.length
      }
      const torn = f.unsynced[k]
      if (torn !== undefined && "data" in torn && torn.data.length > 1) {
        const cut = Math.floor(this.env.random() * torn.data.length)
        apply(torn, cut)
        kept += cut
        this.stats.tornWrites++
      }
    }
    this.stats.bytesLost += Math.max(0, lostBefore - kept)
    f.buf = buf
    f.size = size
    f.durable = Buffer.from(buf.subarray(0, size))
    f.unsynced = []
  }

  /** The disk as the running process sees it; after a crash or power loss its calls never return. */
  service(): DiskService {
    const epoch = this.epoch
    const self = this
    const live = <A>(f: () => A | DiskError): Effect.Effect<A, DiskError> =>
      Effect.suspend(() => {
        if (epoch !== self.epoch) return hang
        const r = f()
        return r instanceof DiskError ? Effect.fail(r) : Effect.succeed(r)
      })
    /** Completes after the env's delay, unless the process died meanwhile. */
    const durably = (commit: () => void): Effect.Effect<void, DiskError> =>
      Effect.async<void, DiskError>((resume) => {
        if (epoch !== self.epoch) return
        self.inFlight++
        const done = () => {
          if (epoch !== self.epoch) return
          self.inFlight--
          if (!self.lyingSync) commit()
          resume(Effect.void)
        }
        if (self.env.later === undefined) done()
        else self.env.later(done)
      })

    const file = (path: string, f: FileNode): DiskFile => ({
      write: (data, position) =>
        live(() => {
          const room = self.capacity === undefined ? Infinity : Math.max(0, self.capacity - self.used())
          if (position + data.length - f.size > room) {
            // ENOSPC: what fits in the file's size and the space left lands, the rest does not.
            self.stats.noSpace++
            const fits = Math.max(0, Math.min(data.length, f.size + room - position))
            if (fits > 0) self.write(f, Buffer.from(data.subarray(0, fits)), position)
            return err("NoSpace", path, `no space left on device after ${fits} of ${data.length} bytes`)
          }
          if (!self.fails()) return self.write(f, Buffer.from(data), position)
          // A failed write may still have landed a prefix (ENOSPC mid-way, EIO on a later page).
          const landed = Math.floor(self.env.random() * data.length)
          if (landed > 0) self.write(f, Buffer.from(data.subarray(0, landed)), position)
          return err(self.env.random() < 0.5 ? "NoSpace" : "Io", path, `simulated write failure after ${landed} of ${data.length} bytes`)
        }),
      read: (position, length) => live(() => Buffer.from(f.buf.subarray(Math.min(position, f.size), Math.min(position + length, f.size)))),
      size: () => live(() => f.size),
      truncate: (length) => live(() => self.truncate(f, length)),
      sync: () =>
        Effect.suspend(() => {
          if (epoch !== self.epoch) return hang
          self.stats.syncs++
          if (self.fails()) return Effect.fail(err("Io", path, "simulated fsync failure"))
          const upTo = self.nextOp
          const image = Buffer.from(f.buf.subarray(0, f.size))
          return durably(() => {
            if (upTo <= f.syncedUpTo) return
            f.syncedUpTo = upTo
            f.durable = image
            f.unsynced = f.unsynced.filter((op) => op.id >= upTo)
          })
        }),
      close: () => live(() => undefined)
    })

    return {
      mkdirp: (path) => live(() => (this.lookup(path) === undefined && this.isFull() ? this.noSpace(path) : this.mkdirp(path))),
      list: (path) =>
        live(() => {
          const d = this.lookup(path)
          if (d === undefined) return err("NotFound", path, "no such folder")
          if (d.kind !== "dir") return err("Io", path, "not a folder")
          return [...d.entries.keys()].sort()
        }),
      readFile: (path) =>
        live(() => {
          const f = this.lookup(path)
          if (f === undefined) return err("NotFound", path, "no such file")
          if (f.kind !== "file") return err("Io", path, "is a folder")
          return Buffer.from(f.buf.subarray(0, f.size))
        }),
      open: (path, create) =>
        live(() => {
          const at = this.parentOf(path)
          if (at instanceof DiskError) return at
          let n = at.dir.entries.get(at.name)
          if (n === undefined) {
            if (!create) return err("NotFound", path, "no such file")
            if (this.isFull()) return this.noSpace(path)
            n = { kind: "file", buf: Buffer.alloc(0), size: 0, durable: Buffer.alloc(0), unsynced: [], syncedUpTo: 0 }
            at.dir.entries.set(at.name, n)
          }
          if (n.kind !== "file") return err("Io", path, "is a folder")
          return file(path, n)
        }),
      rename: (from, to) =>
        live(() => {
          const a = this.parentOf(from)
          if (a instanceof DiskError) return a
          const n = a.dir.entries.get(a.name)
          if (n === undefined) return err("NotFound", from, "no such file")
          const b = this.parentOf(to)
          if (b instanceof DiskError) return b
          a.dir.entries.delete(a.name)
          b.dir.entries.set(b.name, n)
          return undefined
        }),
      unlink: (path) =>
        live(() => {
          const at = this.parentOf(path)
          if (at instanceof DiskError) return at
          const n = at.dir.entries.get(at.name)
          if (n === undefined) return err("NotFound", path, "no such file")
          if (n.kind !== "file") return err("Io", path, "is a folder")
          at.dir.entries.delete(at.name)
          return undefined
        }),
      removeAll: (path) =>
        live(() => {
          const at = this.parentOf(path)
          if (!(at instanceof DiskError)) at.dir.entries.delete(at.name)
          return undefined
        }),
      syncDir: (path) =>
        Effect.suspend(() => {
          const d = this.lookup(path)
          if (epoch !== self.epoch) return hang
          if (d === undefined) return Effect.fail(err("NotFound", path, "no such folder"))
          if (d.kind !== "dir") return Effect.fail(err("Io", path, "not a folder"))
          self.stats.dirSyncs++
          const image = new Map(d.entries)
          const upTo = self.nextOp++
          return durably(() => {
            if (upTo <= d.syncedUpTo) return
            d.syncedUpTo = upTo
            d.durable = image
          })
        })
    }
  }

  /** Every file's bytes as the running process sees them (for traces and tests). */
  files(): Map<string, { size: number; durable: number; unsyncedWrites: number }> {
    const out = new Map<string, { size: number; durable: number; unsyncedWrites: number }>()
    const walk = (dir: DirNode, at: string): void => {
      for (const [name, n] of [...dir.entries].sort(([a], [b]) => (a < b ? -1 : 1))) {
        const p = `${at}/${name}`
        if (n.kind === "dir") walk(n, p)
        else out.set(p, { size: n.size, durable: n.durable.length, unsyncedWrites: n.unsynced.length })
      }
    }
    walk(this.root, "")
    return out
  }

  /** No byte left: a new file or folder needs at least one block. */
  private isFull(): boolean {
    return this.capacity !== undefined && this.used() >= this.capacity
  }

  private noSpace(path: string): DiskError {
    this.stats.noSpace++
    return err("NoSpace", path, "no space left on device")
  }

  private fails(): boolean {
    if (this.errorRate <= 0 || this.env.random() >= this.errorRate) return false
    this.stats.ioErrors++
    return true
  }

  private write(f: FileNode, data: Buffer, pos: number): undefined {
    const end = pos + data.length
    if (end > f.buf.length) {
      const next = Buffer.alloc(Math.max(end, f.buf.length * 2))
      f.buf.copy(next, 0, 0, f.size)
      f.buf = next
    }
    if (pos > f.size) f.buf.fill(0, f.size, pos)
    data.copy(f.buf, pos)
    if (end > f.size) f.size = end
    f.unsynced.push({ id: this.nextOp++, pos, data })
    return undefined
  }

  private truncate(f: FileNode, length: number): undefined {
    if (length > f.size) {
      if (length > f.buf.length) {
        const next = Buffer.alloc(length)
        f.buf.copy(next, 0, 0, f.size)
        f.buf = next
      } else f.buf.fill(0, f.size, length)
    }
    f.size = length
    f.unsynced.push({ id: this.nextOp++, truncate: length })
    return undefined
  }

  private mkdirp(path: string): undefined | DiskError {
    let dir = this.root
    for (const name of split(path)) {
      let next = dir.entries.get(name)
      if (next === undefined) {
        next = dirNode()
        dir.entries.set(name, next)
      }
      if (next.kind !== "dir") return err("Io", path, `${name} is a file`)
      dir = next
    }
    return undefined
  }

  private lookup(path: string): Node | undefined {
    let n: Node = this.root
    for (const name of split(path)) {
      if (n.kind !== "dir") return undefined
      const next: Node | undefined = n.entries.get(name)
      if (next === undefined) return undefined
      n = next
    }
    return n
  }

  private parentOf(path: string): { dir: DirNode; name: string } | DiskError {
    const parts = split(path)
    const name = parts.pop()
    if (name === undefined) return err("Io", path, "is the root")
    const dir = this.lookup(parts.join("/"))
    if (dir === undefined) return err("NotFound", path, "no such folder")
    if (dir.kind !== "dir") return err("Io", path, "not a folder")
    return { dir, name }
  }
}

/** The Disk port on a simulated disk: one process's view (take a new one after `crash`/`powerLoss`). */
export const layerSim = (disk: SimDisk): Layer.Layer<Disk> => Layer.sync(Disk, () => disk.service())
