// The stores against a plain in-memory model over random sequences of stores,
// removes, purges, compactions, clean restarts and crashes (the process dies
// without closing: everything up to the last completed sync must be there, and
// nothing after it). State is compared after every step, every message after
// each restart. Tiny blocks so that rolling, tombstones and compaction all occur.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import fc from "fast-check"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { makeStoreConfig, msgSize, type StoreConfig } from "../../src/core/stream/config.js"
import { layerNode } from "../../src/services/disk-node.js"
import { Store, type StoreError, type StreamStore } from "../../src/services/store.js"
import { layerFile } from "../../src/services/store-file.js"
import { makeMemoryStore } from "../../src/services/store-memory.js"

interface MMsg {
  readonly seq: number
  readonly subject: string
  readonly payload: string
  readonly hdr: boolean
  readonly ts: number
}

const matches = (subject: string, filter: string): boolean => {
  const l = subject.split(".")
  const f = filter.split(".")
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return l.length > i
    if (i >= l.length || (f[i] !== "*" && f[i] !== l[i])) return false
  }
  return l.length === f.length
}

/** The obvious implementation: an array of messages and the last sequence. */
class Model {
  msgs: MMsg[] = []
  last = 0
  constructor(readonly cfg: StoreConfig) {}
  clone(): Model {
    const m = new Model(this.cfg)
    m.msgs = [...this.msgs]
    m.last = this.last
    return m
  }
  store(subject: string, payload: string, hdr: boolean, ts: number): number {
    const seq = ++this.last
    this.msgs.push({ seq, subject, payload, hdr, ts })
    const per = this.cfg.max_msgs_per_subject
    if (per > 0) {
      const same = this.msgs.filter((m) => m.subject === subject)
      const drop = new Set(same.slice(0, Math.max(0, same.length - per)).map((m) => m.seq))
      this.msgs = this.msgs.filter((m) => !drop.has(m.seq))
    }
    if (this.cfg.max_msgs > 0 && this.msgs.length > this.cfg.max_msgs) this.msgs = this.msgs.slice(-this.cfg.max_msgs)
    return seq
  }
  remove(seq: number): boolean {
    const n = this.msgs.length
    this.msgs = this.msgs.filter((m) => m.seq !== seq)
    return this.msgs.length < n
  }
  purge(subject: string | undefined, seq: number, keep: number): number {
    const n = this.msgs.length
    if (subject === undefined) {
      if (seq > 0) {
        this.msgs = this.msgs.filter((m) => m.seq >= seq)
        this.last = Math.max(this.last, seq - 1)
      } else if (keep > 0) this.msgs = this.msgs.slice(Math.max(0, this.msgs.length - keep))
      else this.msgs = []
    } else {
      const hit = this.msgs.filter((m) => matches(m.subject, subject) && (seq === 0 || m.seq < seq))
      const drop = new Set(hit.slice(0, Math.max(0, hit.length - keep)).map((m) => m.seq))
      this.msgs = this.msgs.filter((m) => !drop.has(m.seq))
    }
    return n - this.msgs.length
  }
  state() {
    const first = this.msgs.length > 0 ? this.msgs[0].seq : this.last + 1
    return {
      messages: this.msgs.length,
      bytes: this.msgs.reduce((n, m) => n + msgSize(this.cfg.storage, m.subject.length, m.hdr ? 4 : 0, m.payload.length), 0),
      first_seq: first,
      last_seq: this.last,
      num_subjects: new Set(this.msgs.map((m) => m.subject)).size,
      num_deleted: this.msgs.length === 0 ? 0 : this.last - first + 1 - this.msgs.length
    }
  }
}

type Op =
  | { readonly op: "store"; readonly subject: string; readonly size: number; readonly hdr: boolean }
  /** `recent`: one of the last few sequences; otherwise anywhere in the history. */
  | { readonly op: "remove"; readonly pick: number; readonly recent: boolean }
  | { readonly op: "purge"; readonly subject: string | undefined; readonly seq: number; readonly keep: number }
  /** Remove the newest `count` messages: leaves old blocks live and new ones dead. */
  | { readonly op: "removeNewest"; readonly count: number }
  | { readonly op: "sync" }
  | { readonly op: "compact" }
  | { readonly op: "restart" }
  | { readonly op: "crash" }

const subject = fc.constantFrom("a.1", "a.2", "b.1", "b.2", "c")
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ op: fc.constant("store" as const), subject, size: fc.nat(60), hdr: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("remove" as const), pick: fc.nat(), recent: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.record({ op: fc.constant("purge" as const), subject: fc.constant(undefined), seq: fc.constant(0), keep: fc.nat(6) }),
      fc.record({ op: fc.constant("purge" as const), subject: fc.constant(undefined), seq: fc.nat(80), keep: fc.constant(0) }),
      fc.record({
        op: fc.constant("purge" as const),
        subject: fc.constantFrom("a.*", "b.1", ">", "c"),
        seq: fc.constant(0),
        keep: fc.nat(3)
      }),
      fc.record({ op: fc.constant("purge" as const), subject: fc.constantFrom("a.>", "*.2"), seq: fc.nat(60), keep: fc.constant(0) })
    )
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("removeNewest" as const), count: fc.integer({ min: 1, max: 12 }) }) },
  { weight: 2, arbitrary: fc.constant({ op: "sync" as const }) },
  { weight: 2, arbitrary: fc.constant({ op: "compact" as const }) },
  { weight: 2, arbitrary: fc.constant({ op: "restart" as const }) },
  { weight: 1, arbitrary: fc.constant({ op: "crash" as const }) }
)
const cfgArb = fc.record({
  max_msgs: fc.constantFrom(-1, 6, 25),
  max_msgs_per_subject: fc.constantFrom(-1, 1, 3),
  blockSize: fc.constantFrom(150, 400, 1000)
})

const HDR = new Uint8Array([1, 2, 3, 4])

const allMsgs = (s: StreamStore) =>
  Effect.gen(function*() {
    const out: MMsg[] = []
    for (let m = yield* s.loadNextMatching([], 0); m !== undefined; m = yield* s.loadNextMatching([], m.seq + 1)) {
      out.push({ seq: m.seq, subject: m.subject, payload: Buffer.from(m.payload).toString(), hdr: m.headers !== undefined, ts: m.ts })
    }
    return out
  })

/** Run `ops` against a store and the model; `durable` is true for the file store (crashes lose unsynced work). */
const check = (layer: (blockSize: number) => { layer: Layer.Layer<Store, StoreError>; cleanup: () => void }, durable: boolean) =>
  (
    { blockSize, ...limits }: { max_msgs: number; max_msgs_per_subject: number; blockSize: number },
    ops: ReadonlyArray<Op>
  ) => {
    const { layer: storeLayer, cleanup } = layer(blockSize)
    const cfg = makeStoreConfig({ ...limits, storage: durable ? "file" : "memory" })
    const program = Effect.gen(function*() {
      let model = new Model(cfg)
      let synced = model.clone()
      let scope = yield* Scope.make()
      const abandoned: Scope.CloseableScope[] = []
      const session = (create: boolean) =>
        Effect.gen(function*() {
          const store = Context.get(yield* Layer.buildWithScope(storeLayer, scope), Store)
          return create ? yield* store.create("P", cfg) : yield* store.open("P")
        })
      let s = yield* session(true)
      let ts = 0
      for (const op of ops) {
        switch (op.op) {
          case "store": {
            const payload = `${op.subject}:${"x".repeat(op.size)}`
            const seq = yield* s.store(op.subject, op.hdr ? HDR : undefined, Buffer.from(payload), ++ts)
            expect(seq).toBe(model.store(op.subject, payload, op.hdr, ts))
            break
          }
          case "remove": {
            const seq = op.recent ? model.last - (op.pick % 8) : 1 + (op.pick % (model.last + 1))
            expect(yield* s.remove(seq)).toBe(model.remove(seq))
            break
          }
          case "removeNewest":
            for (const m of model.msgs.slice(-op.count)) {
              expect(yield* s.remove(m.seq)).toBe(model.remove(m.seq))
            }
            break
          case "purge":
            expect(yield* s.purge({ subject: op.subject, seq: op.seq, keep: op.keep })).toBe(
              model.purge(op.subject, op.seq, op.keep)
            )
            break
          case "sync":
          case "compact":
            yield* op.op === "sync" ? s.sync() : Effect.asVoid(s.compact())
            synced = model.clone()
            break
          case "restart":
          case "crash":
            if (op.op === "restart") {
              yield* Scope.close(scope, Exit.void)
              synced = model.clone()
            } else {
              abandoned.push(scope) // the process dies: no close, no sync
              if (durable) model = synced.clone()
            }
            scope = yield* Scope.make()
            s = yield* session(false)
            expect(s.health().ok).toBe(true)
            expect(yield* allMsgs(s)).toEqual(model.msgs)
            break
        }
        expect(s.state()).toMatchObject(model.state())
      }
      expect(yield* allMsgs(s)).toEqual(model.msgs)
      yield* Scope.close(scope, Exit.void)
      // Only to release their file handles; the folder is deleted next.
      for (const dead of abandoned) yield* Scope.close(dead, Exit.void)
    })
    return Effect.runPromise(program).finally(cleanup)
  }

describe("stores agree with a model over random operations", () => {
  it("file store, with restarts and crashes", async () => {
    await fc.assert(
      fc.asyncProperty(
        cfgArb,
        fc.array(opArb, { minLength: 10, maxLength: Number(process.env.OPS ?? 120), size: "max" }),
        check((blockSize) => {
          const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-prop-"))
          return {
            layer: layerFile(dir, { blockSize, cacheBlocks: 1 }).pipe(Layer.provide(layerNode)),
            cleanup: () => fs.rmSync(dir, { recursive: true, force: true })
          }
        }, true)
      ),
      { numRuns: Number(process.env.RUNS ?? 40), endOnFailure: process.env.RUNS !== undefined }
    )
  })

  it("memory store", async () => {
    // One layer for the whole case: a "restart" there is close and reopen.
    await fc.assert(
      fc.asyncProperty(
        cfgArb,
        fc.array(opArb, { minLength: 10, maxLength: 120, size: "max" }),
        (limits, ops) => {
          const shared = Layer.succeed(Store, makeMemoryStore())
          return check(() => ({ layer: shared, cleanup: () => {} }), false)(limits, ops)
        }
      ),
      { numRuns: 40 }
    )
  })
})
