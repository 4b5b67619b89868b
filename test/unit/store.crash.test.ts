// Power loss: the file store on a test disk that forgets whatever was not synced
// (file bytes past the last fsync, names created or renamed since the folder's
// last fsync) and keeps a random part of the unsynced tail of each file, as a
// torn write does. After every crash, every message that a completed sync() made
// durable must be back, byte for byte, and nothing may appear that was removed
// before that sync or never stored.
import fc from "fast-check"
import { Context, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { makeStoreConfig } from "../../src/core/stream/config.js"
import { Disk, DiskError, type DiskFile, type DiskService } from "../../src/services/disk.js"
import { Store, type StreamStore } from "../../src/services/store.js"
import { layerFile } from "../../src/services/store-file.js"

interface FileObj {
  data: Buffer
  synced: Buffer
}

/** Files by name, with the names as last synced per folder; folders themselves are always durable. */
class ForgetfulDisk {
  private current = new Map<string, FileObj>()
  private durable = new Map<string, FileObj>()
  private dirs = new Set<string>(["/"])
  private epoch = 0
  private fuse = Number.POSITIVE_INFINITY
  private rand: () => number = Math.random

  private parent = (p: string) => p.slice(0, p.lastIndexOf("/")) || "/"
  private err = (reason: DiskError["reason"], path: string) => new DiskError({ reason, path, message: reason })

  /** Crash in the middle of the `ops`-th disk operation from now. */
  crashAfter(ops: number, rand: () => number): void {
    this.fuse = ops
    this.rand = rand
  }

  /** The power goes: names and bytes revert to what was synced, plus a torn prefix of the rest. */
  crash(rand: () => number): void {
    this.epoch++
    for (const f of new Set([...this.current.values(), ...this.durable.values()])) {
      const extra = Math.max(0, f.data.length - f.synced.length)
      const keep = Math.floor(rand() * (extra + 1))
      f.data = Buffer.concat([f.synced, f.data.subarray(f.synced.length, f.synced.length + keep)])
    }
    this.current = new Map(this.durable)
  }

  /** The disk as one process sees it: after a crash every call fails, as the process is gone. */
  service(): DiskService {
    const epoch = this.epoch
    const alive = <A>(path: string, eff: () => Effect.Effect<A, DiskError>): Effect.Effect<A, DiskError> =>
      Effect.zipRight(
        Effect.yieldNow(),
        Effect.suspend(() => {
          if (epoch !== this.epoch) return Effect.fail(this.err("Io", path))
          if (--this.fuse <= 0) {
            this.fuse = Number.POSITIVE_INFINITY
            this.crash(this.rand)
            return Effect.fail(this.err("Io", path))
          }
          return eff()
        })
      )
    const raw = this.rawService()
    const wrapFile = (path: string, f: DiskFile): DiskFile => ({
      write: (d, pos) => alive(path, () => f.write(d, pos)),
      read: (pos, len) => alive(path, () => f.read(pos, len)),
      size: () => alive(path, f.size),
      truncate: (len) => alive(path, () => f.truncate(len)),
      sync: () => alive(path, f.sync),
      close: () => Effect.void
    })
    return {
      mkdirp: (p) => alive(p, () => raw.mkdirp(p)),
      list: (p) => alive(p, () => raw.list(p)),
      readFile: (p) => alive(p, () => raw.readFile(p)),
      open: (p, create) => alive(p, () => Effect.map(raw.open(p, create), (f) => wrapFile(p, f))),
      rename: (a, b) => alive(a, () => raw.rename(a, b)),
      unlink: (p) => alive(p, () => raw.unlink(p)),
      removeAll: (p) => alive(p, () => raw.removeAll(p)),
      syncDir: (p) => alive(p, () => raw.syncDir(p))
    }
  }

  private rawService(): DiskService {
    const handle = (path: string, f: FileObj, epoch: number): DiskFile => {
      const live = <A>(run: () => A) =>
        Effect.suspend(() => (epoch === this.epoch ? Effect.sync(run) : Effect.fail(this.err("Io", path))))
      return {
        write: (data, pos) =>
          live(() => {
            const end = pos + data.length
            if (f.data.length < end) f.data = Buffer.concat([f.data, Buffer.alloc(end - f.data.length)])
            f.data.set(data, pos)
          }),
        read: (pos, len) => live(() => Buffer.from(f.data.subarray(pos, pos + len))),
        size: () => live(() => f.data.length),
        truncate: (len) => live(() => void (f.data = Buffer.from(f.data.subarray(0, len)))),
        sync: () => live(() => void (f.synced = Buffer.from(f.data))),
        close: () => Effect.void
      }
    }
    const under = (p: string) => (k: string) => k === p || k.startsWith(p + "/")
    return {
      mkdirp: (p) =>
        Effect.sync(() => {
          for (let d = p; d !== "/" && d !== ""; d = this.parent(d)) this.dirs.add(d)
        }),
      list: (p) =>
        Effect.suspend(() => {
          if (!this.dirs.has(p)) return Effect.fail(this.err("NotFound", p))
          const names = new Set<string>()
          for (const k of [...this.current.keys(), ...this.dirs]) if (this.parent(k) === p && k !== p) names.add(k.slice(p.length + 1))
          return Effect.succeed([...names].sort())
        }),
      readFile: (p) =>
        Effect.suspend(() => {
          const f = this.current.get(p)
          return f === undefined ? Effect.fail(this.err("NotFound", p)) : Effect.succeed(Buffer.from(f.data))
        }),
      open: (p, create) =>
        Effect.suspend(() => {
          let f = this.current.get(p)
          if (f === undefined) {
            if (!create) return Effect.fail(this.err("NotFound", p))
            f = { data: Buffer.alloc(0), synced: Buffer.alloc(0) }
            this.current.set(p, f)
          }
          return Effect.succeed(handle(p, f, this.epoch))
        }),
      rename: (from, to) =>
        Effect.suspend(() => {
          if (this.dirs.has(from)) {
            // Folder renames are taken as durable at once (all of it moves).
            for (const m of [this.current, this.durable]) {
              for (const [k, v] of [...m]) {
                if (under(from)(k)) {
                  m.delete(k)
                  m.set(to + k.slice(from.length), v)
                }
              }
            }
            for (const d of [...this.dirs]) {
              if (under(from)(d)) {
                this.dirs.delete(d)
                this.dirs.add(to + d.slice(from.length))
              }
            }
            return Effect.void
          }
          const f = this.current.get(from)
          if (f === undefined) return Effect.fail(this.err("NotFound", from))
          this.current.delete(from)
          this.current.set(to, f)
          return Effect.void
        }),
      unlink: (p) =>
        Effect.suspend(() => (this.current.delete(p) ? Effect.void : Effect.fail(this.err("NotFound", p)))),
      removeAll: (p) =>
        Effect.sync(() => {
          for (const m of [this.current, this.durable]) for (const k of [...m.keys()]) if (under(p)(k)) m.delete(k)
          for (const d of [...this.dirs]) if (under(p)(d)) this.dirs.delete(d)
        }),
      syncDir: (p) =>
        Effect.sync(() => {
          for (const k of [...this.durable.keys()]) if (this.parent(k) === p) this.durable.delete(k)
          for (const [k, v] of this.current) if (this.parent(k) === p) this.durable.set(k, v)
        })
    }
  }
}

interface M {
  readonly seq: number
  readonly subject: string
  readonly payload: string
}

type Op =
  | { readonly op: "store"; readonly subject: string; readonly size: number }
  | { readonly op: "remove"; readonly pick: number }
  | { readonly op: "purge"; readonly keep: number }
  | { readonly op: "sync" }
  /** Written to the disk but not synced: what a crash tears. */
  | { readonly op: "flush" }
  | { readonly op: "compact" }
  | { readonly op: "crash"; readonly seed: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ op: fc.constant("store" as const), subject: fc.constantFrom("a", "b", "c.d"), size: fc.nat(40) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("remove" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("purge" as const), keep: fc.nat(5) }) },
  { weight: 3, arbitrary: fc.constant({ op: "sync" as const }) },
  { weight: 3, arbitrary: fc.constant({ op: "flush" as const }) },
  { weight: 2, arbitrary: fc.constant({ op: "compact" as const }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("crash" as const), seed: fc.nat() }) }
)

const load = (s: StreamStore) =>
  Effect.gen(function*() {
    const out: M[] = []
    for (let m = yield* s.loadNextMatching([], 0); m !== undefined; m = yield* s.loadNextMatching([], m.seq + 1)) {
      out.push({ seq: m.seq, subject: m.subject, payload: Buffer.from(m.payload).toString() })
    }
    return out
  })

const run = (maxPerSubject: number, ops: ReadonlyArray<Op>) =>
  Effect.gen(function*() {
    const disk = new ForgetfulDisk()
    const cfg = makeStoreConfig({ max_msgs_per_subject: maxPerSubject })
    let scope = yield* Scope.make()
    const session = (create: boolean) =>
      Effect.gen(function*() {
        const layer = layerFile("/data", { blockSize: 300, cacheBlocks: 1 }).pipe(Layer.provide(Layer.succeed(Disk, disk.service())))
        const store = Context.get(yield* Layer.buildWithScope(layer, scope), Store)
        return create ? yield* store.create("S", cfg) : yield* store.open("S")
      })
    let s = yield* session(true)
    yield* s.sync()
    // What the store holds now, and what a completed sync last promised.
    let now: M[] = []
    let promised: M[] = []
    let promisedLast = 0
    const stored = new Map<number, M>()
    let n = 0
    for (const op of ops) {
      switch (op.op) {
        case "store": {
          const payload = `${op.subject}#${++n}:${"z".repeat(op.size)}`
          const seq = yield* s.store(op.subject, undefined, Buffer.from(payload), n)
          stored.set(seq, { seq, subject: op.subject, payload })
          break
        }
        case "remove":
          if (now.length > 0) yield* s.remove(now[op.pick % now.length].seq)
          break
        case "purge":
          yield* s.purge({ keep: op.keep })
          break
        case "flush":
          yield* s.flush()
          break
        case "sync":
        case "compact":
          yield* op.op === "sync" ? s.sync() : Effect.asVoid(s.compact())
          promised = yield* load(s)
          promisedLast = s.state().last_seq
          break
        case "crash": {
          let x = op.seed || 1
          disk.crash(() => ((x = (x * 48271) % 2147483647) / 2147483647))
          scope = yield* Scope.make() // the old one dies with the process
          s = yield* session(false)
          const back = yield* load(s)
          const stillWanted = promised.filter((m) => now.some((x) => x.seq === m.seq))
          const got = new Map(back.map((m) => [m.seq, m]))
          for (const m of stillWanted) expect(got.get(m.seq)).toEqual(m)
          // Anything else back must have been stored, and not removed by the last sync.
          for (const m of back) {
            expect(stored.get(m.seq)).toEqual(m)
            if (m.seq <= promisedLast) expect(promised.some((p) => p.seq === m.seq)).toBe(true)
          }
          expect(s.state().last_seq).toBeGreaterThanOrEqual(promisedLast)
          expect(s.health().ok).toBe(true)
          promised = back
          promisedLast = s.state().last_seq
          break
        }
      }
      now = yield* load(s)
    }
    yield* Scope.close(scope, Exit.void)
  })

describe("file store under power loss", () => {
  it("keeps every message a completed sync covered, and invents nothing", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(-1, 2), fc.array(opArb, { minLength: 10, maxLength: 100, size: "max" }), (per, ops) =>
        Effect.runPromise(run(per, ops))
      ),
      { numRuns: Number(process.env.RUNS ?? 60) }
    )
  })
})

describe("file store: acknowledged publishes under a crash mid-flight", () => {
  it("every publish whose sync() completed survives a crash at any disk operation, compaction running", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 150 }),
        fc.nat(),
        fc.array(fc.nat(5), { minLength: 40, maxLength: 40 }),
        (publishers, crashAt, seed, delays) =>
          Effect.runPromise(
            Effect.gen(function*() {
              const disk = new ForgetfulDisk()
              const open = (create: boolean) =>
                Effect.gen(function*() {
                  const layer = layerFile("/data", { blockSize: 160, cacheBlocks: 1 }).pipe(
                    Layer.provide(Layer.succeed(Disk, disk.service()))
                  )
                  const store = Context.get(yield* Layer.buildWithScope(layer, yield* Scope.make()), Store)
                  return create ? yield* store.create("S", makeStoreConfig()) : yield* store.open("S")
                })
              const s = yield* open(true)
              let x = seed || 1
              disk.crashAfter(crashAt, () => ((x = (x * 48271) % 2147483647) / 2147483647))
              const acked: Array<{ seq: number; payload: string }> = []
              const fibers = []
              for (let i = 0; i < publishers; i++) {
                const payload = `m${i}-${"p".repeat(i % 17)}`
                fibers.push(
                  yield* Effect.fork(
                    Effect.gen(function*() {
                      for (let d = 0; d < delays[i]; d++) yield* Effect.yieldNow()
                      const seq = yield* s.store("orders", undefined, Buffer.from(payload), i)
                      yield* s.sync()
                      acked.push({ seq, payload })
                    }).pipe(Effect.ignore)
                  )
                )
              }
              // Meanwhile: remove some acknowledged messages and compact, racing the publishers.
              const removed = new Set<number>()
              fibers.push(
                yield* Effect.fork(
                  Effect.gen(function*() {
                    for (let k = 0; k < 20; k++) {
                      for (let d = 0; d < delays[k]; d++) yield* Effect.yieldNow()
                      if (acked.length > 0) {
                        const victim = acked[(k * 7919) % acked.length].seq
                        removed.add(victim)
                        yield* s.remove(victim)
                      }
                      yield* s.compact()
                    }
                  }).pipe(Effect.ignore)
                )
              )
              yield* Fiber.joinAll(fibers)
              disk.crashAfter(0, Math.random) // whatever has not crashed yet crashes now
              yield* Effect.ignore(disk.service().list("/"))
              const back = yield* load(yield* open(false))
              const got = new Map(back.map((m) => [m.seq, m.payload]))
              for (const a of acked) if (!removed.has(a.seq)) expect(got.get(a.seq)).toBe(a.payload)
              for (const [seq, payload] of got) expect(acked.find((a) => a.seq === seq)?.payload ?? payload).toBe(payload)
            })
          )
      ),
      { numRuns: Number(process.env.RUNS ?? 60) }
    )
  })
})
