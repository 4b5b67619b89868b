// The Store contract: every backend runs this same suite (memory, and the file
// store on a real temp folder with tiny blocks so rolling is exercised).
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { makeStoreConfig, msgSize, type StoreConfig } from "../../src/core/stream/config.js"
import { TTL_EXPIRIES_PER_TICK, TTL_NEVER } from "../../src/core/stream/ttl.js"
import { layerNode } from "../../src/services/disk-node.js"
import { Store, type StoreError, type StoreService, type StreamStore } from "../../src/services/store.js"
import { layerFile } from "../../src/services/store-file.js"
import { layerMemory } from "../../src/services/store-memory.js"

type MakeLayer = () => { readonly layer: Layer.Layer<Store, StoreError>; readonly cleanup: () => void }

const te = new TextEncoder()
const td = new TextDecoder()
const b = (s: string) => te.encode(s)
const str = (u: Uint8Array) => td.decode(u)

export const storeContract = (label: string, make: MakeLayer, storage: StoreConfig["storage"]) =>
  describe(`Store contract: ${label}`, () => {
    const run = <A>(f: (store: StoreService) => Effect.Effect<A, StoreError>): Promise<A> => {
      const { layer, cleanup } = make()
      return Effect.runPromise(Effect.provide(Effect.flatMap(Store, f), layer)).finally(cleanup)
    }
    const cfg = (c: Partial<StoreConfig> = {}) => makeStoreConfig({ subjects: [">"], storage, ...c })
    const withStream = <A>(c: Partial<StoreConfig>, f: (s: StreamStore) => Effect.Effect<A, StoreError>) =>
      run((store) => Effect.flatMap(store.create("S", cfg(c)), f))
    const put = (s: StreamStore, subject: string, data = "x", ts = 1000) => {
      const r = s.storeSync(subject, undefined, b(data), ts)
      if (typeof r !== "number") throw r
      return r
    }
    const size = (subject: string, data: string, hdr = 0) => msgSize(storage, subject.length, hdr, data.length)
    const reason = <A>(eff: Effect.Effect<A, StoreError>) =>
      Effect.match(eff, { onFailure: (e) => e.reason, onSuccess: () => "ok" })

    it("creates, lists, opens and deletes streams by name", async () => {
      const out = await run((store) =>
        Effect.gen(function*() {
          yield* store.create("ORDERS", cfg())
          yield* store.create("odd name/ü.x", cfg())
          const again = yield* reason(store.create("ORDERS", cfg()))
          const names = yield* store.list()
          const missing = yield* reason(store.open("NOPE"))
          yield* store.delete("ORDERS")
          return { again, names, missing, after: yield* store.list() }
        })
      )
      expect(out.again).toBe("Exists")
      expect(out.names).toEqual(["ORDERS", "odd name/ü.x"])
      expect(out.missing).toBe("NotFound")
      expect(out.after).toEqual(["odd name/ü.x"])
    })

    it("stores and loads subject, headers, payload and time byte for byte", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          const s1 = yield* s.store("a.b", undefined, b("hello"), 1000)
          const s2 = yield* s.store("a.c", b("NATS/1.0\r\nk: v\r\n\r\n"), b(""), 1001.5)
          const s3 = yield* s.store("a.d", new Uint8Array(0), new Uint8Array([0, 255, 1]), 1002)
          return { seqs: [s1, s2, s3], m1: yield* s.load(1), m2: yield* s.load(2), m3: yield* s.load(3) }
        })
      )
      expect(out.seqs).toEqual([1, 2, 3])
      expect(out.m1).toMatchObject({ seq: 1, subject: "a.b", ts: 1000, headers: undefined })
      expect(str(out.m1.payload)).toBe("hello")
      expect(str(out.m2.headers!)).toBe("NATS/1.0\r\nk: v\r\n\r\n")
      expect(out.m2.ts).toBe(1001.5)
      expect(out.m2.payload.length).toBe(0)
      expect(out.m3.headers?.length).toBe(0)
      expect([...out.m3.payload]).toEqual([0, 255, 1])
    })

    it("copies buffers it is given", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          const p = b("abc")
          yield* s.store("a", undefined, p, 1)
          p[0] = 0x7a
          return str((yield* s.load(1)).payload)
        })
      )
      expect(out).toBe("abc")
    })

    it("reports state: counts, bytes, first and last, subjects, deleted", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          const empty = s.state()
          put(s, "a", "1", 10)
          put(s, "b", "22", 20)
          put(s, "a", "333", 30)
          put(s, "c", "4", 40)
          const full = s.state()
          yield* s.remove(2)
          const gap = s.state()
          const deleted = s.deleted()
          yield* s.remove(1)
          yield* s.remove(4)
          return { empty, full, gap, deleted, after: s.state(), missing: yield* reason(s.load(1)) }
        })
      )
      expect(out.empty).toEqual({
        messages: 0, bytes: 0, first_seq: 1, first_ts: 0, last_seq: 0, last_ts: 0, num_subjects: 0, num_deleted: 0
      })
      expect(out.full).toEqual({
        messages: 4,
        bytes: size("a", "1") + size("b", "22") + size("a", "333") + size("c", "4"),
        first_seq: 1,
        first_ts: 10,
        last_seq: 4,
        last_ts: 40,
        num_subjects: 3,
        num_deleted: 0
      })
      expect(out.gap).toMatchObject({ messages: 3, num_deleted: 1, num_subjects: 2 })
      expect(out.deleted).toEqual([2])
      // Removing the last message keeps last_seq: sequences are never reused.
      expect(out.after).toMatchObject({ messages: 1, first_seq: 3, first_ts: 30, last_seq: 4, last_ts: 40, num_deleted: 1, num_subjects: 1 })
      expect(out.missing).toBe("NotFound")
    })

    it("skips a sequence without storing a message, and knows stored subjects", async () => {
      const out = await withStream({ max_msgs: 1 }, (s) =>
        Effect.gen(function*() {
          const skip = (ts: number) => {
            const r = s.skipSync(ts)
            if (typeof r !== "number") throw r
            return r
          }
          const first = skip(5000)
          const empty = s.state()
          const a = put(s, "a", "x", 6000)
          const skipped = skip(7000)
          return { first, empty, a, skipped, st: s.state(), deleted: s.deleted(), subjects: [s.subjectOf(a), s.subjectOf(skipped), s.subjectOf(99)] }
        })
      )
      expect([out.first, out.a, out.skipped]).toEqual([1, 2, 3])
      expect(out.empty).toMatchObject({ messages: 0, first_seq: 2, last_seq: 1, last_ts: 5000 })
      // A skip is not a message: max_msgs 1 still holds message 2.
      expect(out.st).toMatchObject({ messages: 1, first_seq: 2, last_seq: 3, last_ts: 7000, num_deleted: 1 })
      expect(out.deleted).toEqual([3])
      expect(out.subjects).toEqual(["a", undefined, undefined])
    })

    it("remove answers false for a missing message", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          put(s, "a")
          return [yield* s.remove(1), yield* s.remove(1), yield* s.remove(9)]
        })
      )
      expect(out).toEqual([true, false, false])
    })

    it("removeSync removes many at once, skips missing ones, and the removals survive a reopen", async () => {
      const out = await run((store) =>
        Effect.gen(function*() {
          const s = yield* store.create("S", cfg())
          for (const subject of ["a", "b", "a", "c", "a", "b"]) put(s, subject)
          // the first two (the floor moves past them), an interior one, one missing, one twice
          const n = s.removeSync([1, 2, 4, 9, 4])
          const none = s.removeSync([])
          const st = s.state()
          yield* s.sync()
          yield* s.close()
          const closed = s.removeSync([3])
          const again = yield* store.open("S")
          return {
            n,
            none,
            st,
            st2: again.state(),
            left: [3, 5, 6].map((seq) => again.subjectOf(seq)),
            gone: [1, 2, 4].map((seq) => again.subjectOf(seq)),
            closed: typeof closed === "object" ? closed.reason : closed
          }
        })
      )
      expect(out.n).toBe(3)
      expect(out.none).toBe(0)
      expect(out.st).toMatchObject({ messages: 3, first_seq: 3, last_seq: 6, num_deleted: 1 })
      expect(out.st2).toEqual(out.st)
      expect(out.left).toEqual(["a", "a", "b"])
      expect(out.gone).toEqual([undefined, undefined, undefined])
      expect(out.closed).toBe("Closed")
    })

    it("purges everything and continues the sequence", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          for (let i = 0; i < 5; i++) put(s, `s.${i}`)
          const n = yield* s.purge()
          const st = s.state()
          return { n, st, next: put(s, "x") }
        })
      )
      expect(out.n).toBe(5)
      expect(out.st).toMatchObject({ messages: 0, bytes: 0, first_seq: 6, last_seq: 5, num_subjects: 0 })
      expect(out.next).toBe(6)
    })

    it("purges by subject filter, with keep, and below a sequence", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          // 1 a.1, 2 a.2, 3 b.1, 4 a.1, 5 a.2, 6 b.1, 7 a.1
          for (const subj of ["a.1", "a.2", "b.1", "a.1", "a.2", "b.1", "a.1"]) put(s, subj)
          const bySeq = yield* s.purge({ subject: "a.*", seq: 3 })
          const afterSeq = [...s.subjectsState(">")].map(([k, v]) => [k, v.msgs])
          const keep = yield* s.purge({ subject: "a.*", keep: 2 })
          const left = s.deleted()
          const literal = yield* s.purge({ subject: "b.1" })
          const bad = yield* reason(s.purge({ seq: 2, keep: 1 }))
          return { bySeq, afterSeq, keep, left, literal, bad, st: s.state() }
        })
      )
      expect(out.bySeq).toBe(2)
      expect(out.afterSeq).toEqual([["a.1", 2], ["a.2", 1], ["b.1", 2]])
      expect(out.keep).toBe(1) // a.1@4 goes; a.2@5 and a.1@7 stay
      expect(out.left).toEqual([4])
      expect(out.literal).toBe(2)
      expect(out.bad).toBe("BadArgument")
      expect(out.st).toMatchObject({ messages: 2, first_seq: 5, last_seq: 7 })
    })

    it("purges without a subject: keep newest, below seq, and seq past the end", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          for (let i = 0; i < 10; i++) put(s, "a")
          const keep = yield* s.purge({ keep: 3 })
          const st1 = s.state()
          const seq = yield* s.purge({ seq: 9 })
          const st2 = s.state()
          const beyond = yield* s.purge({ seq: 100 })
          const st3 = s.state()
          return { keep, st1, seq, st2, beyond, st3, next: put(s, "a") }
        })
      )
      expect(out.keep).toBe(7)
      expect(out.st1).toMatchObject({ messages: 3, first_seq: 8 })
      expect(out.seq).toBe(1)
      expect(out.st2).toMatchObject({ messages: 2, first_seq: 9, last_seq: 10 })
      expect(out.beyond).toBe(2)
      expect(out.st3).toMatchObject({ messages: 0, first_seq: 100, last_seq: 99 })
      expect(out.next).toBe(100)
    })

    it("loads the last message for a subject or a wildcard", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          put(s, "kv.a", "1")
          put(s, "kv.b", "2")
          put(s, "kv.a", "3")
          put(s, "other", "4")
          return {
            a: (yield* s.loadLastForSubject("kv.a")).seq,
            star: (yield* s.loadLastForSubject("kv.*")).seq,
            all: (yield* s.loadLastForSubject(">")).seq,
            none: yield* reason(s.loadLastForSubject("kv.zz"))
          }
        })
      )
      expect(out).toEqual({ a: 3, star: 3, all: 4, none: "NotFound" })
    })

    it("finds the next message matching any of several filters", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          for (const subj of ["a.1", "b.1", "c.1", "a.2", "b.2", "c.2"]) put(s, subj)
          yield* s.remove(4)
          const next = (f: ReadonlyArray<string>, from: number) =>
            Effect.map(s.loadNextMatching(f, from), (m) => m?.seq)
          return [
            yield* next([], 1),
            yield* next([">"], 4),
            yield* next(["a.*"], 2),
            yield* next(["a.*", "c.2"], 2),
            yield* next(["b.*"], 6),
            yield* next(["c.1"], 0),
            (yield* s.loadNextMatching("b.*", 3))?.seq,
            yield* next(["a.*"], 99)
          ]
        })
      )
      expect(out).toEqual([1, 5, undefined, 6, undefined, 3, 5, undefined])
    })

    it("answers the next match from the index alone, and loads from memory without waiting", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          for (const subj of ["a.1", "b.1", "a.2"]) put(s, subj, `d-${subj}`, 2000)
          yield* s.remove(1)
          const cached = s.loadCached(3)
          return {
            entry: s.nextMatchingEntry("a.*", 1),
            none: s.nextMatchingEntry(["b.*"], 3),
            removed: s.loadCached(1),
            cached: cached === undefined ? "on disk" : { seq: cached.seq, subject: cached.subject, payload: str(cached.payload) },
            loaded: yield* s.load(3)
          }
        })
      )
      expect(out.entry).toMatchObject({ seq: 3, subject: "a.2", ts: 2000, size: size("a.2", "d-a.2") })
      expect(out.none).toBeUndefined()
      expect(out.removed).toBeUndefined()
      // The newest message is in memory in every backend.
      expect(out.cached).toEqual({ seq: 3, subject: "a.2", payload: "d-a.2" })
      expect(str(out.loaded.payload)).toBe("d-a.2")
    })

    it("counts pending messages and per-subject state", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          for (const subj of ["a.1", "b.1", "a.1", "a.2", "b.1"]) put(s, subj)
          yield* s.remove(2)
          return {
            all: s.numPending([], 1),
            from3: s.numPending([">"], 3),
            a: s.numPending(["a.*"], 2),
            ab: s.numPending(["a.1", "b.*"], 1),
            subjects: Object.fromEntries(s.subjectsState("a.*"))
          }
        })
      )
      expect(out).toEqual({
        all: 4,
        from3: 3,
        a: 2,
        ab: 3,
        subjects: { "a.1": { msgs: 2, first: 1, last: 3 }, "a.2": { msgs: 1, first: 4, last: 4 } }
      })
    })

    it("discard old: max_msgs, max_bytes and max_msgs_per_subject drop the oldest", async () => {
      const out = await run((store) =>
        Effect.gen(function*() {
          const m = yield* store.create("M", cfg({ max_msgs: 3 }))
          for (let i = 0; i < 5; i++) put(m, "a")
          const by = yield* store.create("B", cfg({ max_bytes: size("a", "xxxx") * 2 }))
          for (let i = 0; i < 4; i++) put(by, "a", "xxxx")
          const p = yield* store.create("P", cfg({ max_msgs_per_subject: 2 }))
          for (const subj of ["k.a", "k.b", "k.a", "k.a", "k.b", "k.a"]) put(p, subj)
          return { m: m.state(), by: by.state(), p: p.state(), pd: p.deleted(), ps: Object.fromEntries(p.subjectsState(">")) }
        })
      )
      expect(out.m).toMatchObject({ messages: 3, first_seq: 3, last_seq: 5 })
      expect(out.by).toMatchObject({ messages: 2, first_seq: 3, last_seq: 4 })
      expect(out.p).toMatchObject({ messages: 4, first_seq: 2, last_seq: 6 })
      expect(out.pd).toEqual([3])
      expect(out.ps).toEqual({ "k.a": { msgs: 2, first: 4, last: 6 }, "k.b": { msgs: 2, first: 2, last: 5 } })
    })

    it("discard new rejects with the limit's reason and stores nothing", async () => {
      const out = await run((store) =>
        Effect.gen(function*() {
          const m = yield* store.create("M", cfg({ discard: "new", max_msgs: 2 }))
          put(m, "a")
          put(m, "a")
          const rm = yield* reason(m.store("a", undefined, b("x"), 1))
          const by = yield* store.create("B", cfg({ discard: "new", max_bytes: size("a", "xx") * 2 }))
          put(by, "a", "xx")
          const rb = yield* reason(by.store("a", undefined, b("xxx"), 1))
          const okb = yield* reason(by.store("a", undefined, b("xx"), 1))
          const sz = yield* store.create("Z", cfg({ max_msg_size: 4 }))
          const rz = yield* reason(sz.store("a", b("12"), b("345"), 1))
          const okz = yield* reason(sz.store("a", b("12"), b("34"), 1))
          const ps = yield* store.create("P", cfg({ discard: "new", max_msgs_per_subject: 1, discard_new_per_subject: true }))
          put(ps, "k.a")
          const rp = yield* reason(ps.store("k.a", undefined, b("x"), 1))
          const okp = yield* reason(ps.store("k.b", undefined, b("x"), 1))
          return { rm, m: m.state(), rb, okb, rz, okz, rp, okp, p: ps.state() }
        })
      )
      expect(out.rm).toBe("MaxMsgs")
      expect(out.m).toMatchObject({ messages: 2, last_seq: 2 })
      expect(out.rb).toBe("MaxBytes")
      expect(out.okb).toBe("ok")
      expect(out.rz).toBe("MaxMsgSize")
      expect(out.okz).toBe("ok")
      expect(out.rp).toBe("MaxMsgsPerSubject")
      expect(out.okp).toBe("ok")
      expect(out.p).toMatchObject({ messages: 2, last_seq: 2 })
    })

    it("discard new with a per-subject limit that discards: the subject's oldest makes room", async () => {
      const out = await withStream({ discard: "new", max_msgs: 2, max_msgs_per_subject: 1 }, (s) =>
        Effect.gen(function*() {
          put(s, "k.a")
          put(s, "k.b")
          const sameSubject = yield* reason(s.store("k.a", undefined, b("x"), 1))
          const newSubject = yield* reason(s.store("k.c", undefined, b("x"), 1))
          return { sameSubject, newSubject, st: s.state(), subjects: [...s.subjectsState(">").keys()].sort() }
        })
      )
      expect(out.sameSubject).toBe("ok")
      expect(out.newSubject).toBe("MaxMsgs")
      expect(out.st).toMatchObject({ messages: 2, first_seq: 2, last_seq: 3 })
      expect(out.subjects).toEqual(["k.a", "k.b"])
    })

    it("max_msg_size applies under discard old too", async () => {
      const out = await withStream({ max_msg_size: 2 }, (s) => reason(s.store("a", undefined, b("xyz"), 1)))
      expect(out).toBe("MaxMsgSize")
    })

    it("expires by max_age at the time given, and says when next", async () => {
      const out = await withStream({ max_age_ms: 1000 }, (s) =>
        Effect.gen(function*() {
          put(s, "a", "1", 1000)
          put(s, "a", "2", 1500)
          put(s, "a", "3", 2500)
          const next0 = s.nextExpiry()
          const n1 = yield* s.expire(1999)
          const n2 = yield* s.expire(2000)
          const next1 = s.nextExpiry()
          const n3 = yield* s.expire(10_000)
          return { next0, n1, n2, next1, n3, st: s.state(), none: s.nextExpiry() }
        })
      )
      expect(out).toMatchObject({ next0: 2000, n1: 0, n2: 1, next1: 2500, n3: 2, none: undefined })
      expect(out.st).toMatchObject({ messages: 0, first_seq: 4, last_seq: 3 })
    })

    it("per-message TTL: a message goes when its own TTL ends, before max_age if sooner", async () => {
      const out = await withStream({ max_age_ms: 10_000, allow_msg_ttl: true }, (s) =>
        Effect.gen(function*() {
          put(s, "a", "plain", 1000)
          const short = s.storeSync("a", b("NATS/1.0\r\nNats-TTL: 2\r\n\r\n"), b("short"), 1500, false, 2)
          const long = s.storeSync("a", b("NATS/1.0\r\nNats-TTL: 60\r\n\r\n"), b("long"), 1600, false, 60)
          const next0 = s.nextExpiry()
          const early = yield* s.expire(3499)
          const due = yield* s.expire(3500)
          const next1 = s.nextExpiry()
          // max_age (10 s) takes the plain message and the one whose TTL (60 s) is longer
          const aged = yield* s.expire(11_600)
          return { short, long, next0, early, due, next1, aged, st: s.state(), none: s.nextExpiry() }
        })
      )
      expect(out).toMatchObject({ short: 2, long: 3, next0: 3500, early: 0, due: 1, next1: 11_000, aged: 2, none: undefined })
      expect(out.st).toMatchObject({ messages: 0, last_seq: 3 })
    })

    it("per-message TTL `never`: max_age passes it by, the limits do not", async () => {
      const out = await withStream({ max_age_ms: 1000, max_msgs: 3, allow_msg_ttl: true }, (s) =>
        Effect.gen(function*() {
          s.storeSync("a", b("NATS/1.0\r\nNats-TTL: never\r\n\r\n"), b("kept"), 1000, false, TTL_NEVER)
          put(s, "a", "aging", 1100)
          s.storeSync("a", b("NATS/1.0\r\nNats-TTL: never\r\n\r\n"), b("kept too"), 1200, false, TTL_NEVER)
          put(s, "a", "young", 5000)
          // max_msgs 3 discarded the oldest, a `never` one: discard is not expiry
          const afterLimit = s.state().first_seq
          const next0 = s.nextExpiry()
          const n = yield* s.expire(5500)
          const next1 = s.nextExpiry()
          const left = [(yield* Effect.either(s.load(3)))._tag, (yield* Effect.either(s.load(4)))._tag]
          const n2 = yield* s.expire(1e9)
          return { afterLimit, next0, n, next1, left, n2, st: s.state(), none: s.nextExpiry() }
        })
      )
      expect(out).toMatchObject({ afterLimit: 2, next0: 2100, n: 1, next1: 6000, left: ["Right", "Right"], n2: 1, none: undefined })
      expect(out.st).toMatchObject({ messages: 1, first_seq: 3 })
    })

    it("per-message TTL: a message removed otherwise leaves no end behind, and many ending together go in bounded batches", async () => {
      const out = await withStream({ allow_msg_ttl: true }, (s) =>
        Effect.gen(function*() {
          const hdr = b("NATS/1.0\r\nNats-TTL: 5\r\n\r\n")
          s.storeSync("gone", hdr, b("x"), 0, false, 5)
          yield* s.remove(1)
          const afterRemove = s.nextExpiry()
          const n = TTL_EXPIRIES_PER_TICK + 5
          for (let i = 0; i < n; i++) s.storeSync("a", hdr, b("x"), 1000, false, 5)
          const first = yield* s.expire(6000)
          const stillDue = s.nextExpiry()
          const second = yield* s.expire(6000)
          return { afterRemove, first, stillDue, second, st: s.state(), none: s.nextExpiry() }
        })
      )
      expect(out).toMatchObject({ afterRemove: undefined, first: TTL_EXPIRIES_PER_TICK, stillDue: 6000, second: 5, none: undefined })
      expect(out.st.messages).toBe(0)
    })

    it("updateConfig applies tighter limits at once", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          for (const subj of ["a", "b", "a", "a", "b"]) put(s, subj)
          const perSubject = yield* s.updateConfig(cfg({ max_msgs_per_subject: 1 }))
          const st1 = s.state()
          const msgs = yield* s.updateConfig(cfg({ max_msgs_per_subject: 1, max_msgs: 1 }))
          return { perSubject, st1, msgs, st2: s.state(), max: s.config().max_msgs }
        })
      )
      expect(out.perSubject).toBe(3)
      expect(out.st1).toMatchObject({ messages: 2, first_seq: 4, last_seq: 5 })
      expect(out.msgs).toBe(1)
      expect(out.st2).toMatchObject({ messages: 1, first_seq: 5 })
      expect(out.max).toBe(1)
    })

    it("storeBatch returns each sequence or rejection, durable on return", async () => {
      const out = await withStream({ discard: "new", max_msgs: 2 }, (s) =>
        Effect.gen(function*() {
          const m = (subject: string) => ({ subject, headers: undefined, payload: b("p"), timestampMs: 5 })
          const r = yield* s.storeBatch([m("a"), m("b"), m("c")])
          return r.map((x) => (typeof x === "number" ? x : x.reason))
        })
      )
      expect(out).toEqual([1, 2, "MaxMsgs"])
    })

    it("keeps a meta key/value area", async () => {
      const out = await withStream({}, (s) =>
        Effect.gen(function*() {
          yield* s.writeMeta("consumer/one.two", b("state-1"))
          yield* s.writeMeta("stream", b("cfg"))
          yield* s.writeMeta("consumer/one.two", b("state-2"))
          const one = str((yield* s.readMeta("consumer/one.two"))!)
          const list = yield* s.listMeta()
          yield* s.deleteMeta("stream")
          yield* s.deleteMeta("never-there")
          return { one, list, gone: yield* s.readMeta("stream"), after: yield* s.listMeta() }
        })
      )
      expect(out).toEqual({ one: "state-2", list: ["consumer/one.two", "stream"], gone: undefined, after: ["consumer/one.two"] })
    })

    it("keeps meta keys of any length a consumer name allows, across a reopen (regression: names over ~225 bytes lost)", async () => {
      const keys = [
        `jetstream.consumer.${"a".repeat(255)}`,
        `jetstream.consumer.${"€".repeat(85)}`,
        `jetstream.consumer.${"~!@#$%^&()+=,;'{}[]|?<".repeat(11).slice(0, 255)}`,
        `jetstream.consumer.${"é".repeat(127)}`
      ]
      const out = await run((store) =>
        Effect.gen(function*() {
          const s = yield* store.create("S", cfg(), [[keys[0], b("made with the stream")]])
          for (const [i, k] of keys.slice(1).entries()) yield* s.writeMeta(k, b(`value ${i + 1}`))
          yield* s.writeMeta(keys[3], b("value 3, again"))
          yield* s.close()
          const again = yield* store.open("S")
          const values: string[] = []
          for (const k of keys) values.push(str((yield* again.readMeta(k))!))
          const list = yield* again.listMeta()
          yield* again.deleteMeta(keys[2])
          return { values, list, gone: yield* again.readMeta(keys[2]), after: yield* again.listMeta() }
        })
      )
      expect(out.values).toEqual(["made with the stream", "value 1", "value 2", "value 3, again"])
      expect([...out.list].sort()).toEqual([...keys].sort())
      expect(out.gone).toBeUndefined()
      expect([...out.after].sort()).toEqual([keys[0], keys[1], keys[3]].sort())
    })

    it("a closed handle refuses work; reopening gives the same stream", async () => {
      const out = await run((store) =>
        Effect.gen(function*() {
          const s = yield* store.create("S", cfg({ max_msgs: 10 }))
          put(s, "a", "one")
          put(s, "b", "two")
          yield* s.remove(1)
          yield* s.writeMeta("k", b("v"))
          const st = s.state()
          yield* s.close()
          const closed = [s.storeSync("a", undefined, b("x"), 1), yield* reason(s.load(2)), yield* reason(s.sync())]
          const again = yield* store.open("S")
          return {
            closed: closed.map((c) => (typeof c === "object" ? c.reason : c)),
            st,
            st2: again.state(),
            msg: str((yield* again.load(2)).payload),
            meta: str((yield* again.readMeta("k"))!),
            cfg: again.config().max_msgs,
            next: put(again, "c")
          }
        })
      )
      expect(out.closed).toEqual(["Closed", "Closed", "Closed"])
      expect(out.st2).toEqual(out.st)
      expect(out.msg).toBe("two")
      expect(out.meta).toBe("v")
      expect(out.cfg).toBe(10)
      expect(out.next).toBe(3)
    })

    it("open while open returns the live handle; sync and compact succeed", async () => {
      const out = await run((store) =>
        Effect.gen(function*() {
          const s = yield* store.create("S", cfg())
          for (let i = 0; i < 50; i++) put(s, `s.${i % 7}`, "payload-" + i)
          yield* s.purge({ subject: "s.1" })
          yield* s.sync()
          const reclaimed = yield* s.compact()
          const same = (yield* store.open("S")) === s
          return { same, reclaimed, health: s.health(), m: str((yield* s.load(50)).payload) }
        })
      )
      expect(out.same).toBe(true)
      expect(out.reclaimed).toBeGreaterThanOrEqual(0)
      expect(out.health.ok).toBe(true)
      expect(out.m).toBe("payload-49")
    })
  })

storeContract("memory", () => ({ layer: layerMemory, cleanup: () => {} }), "memory")

storeContract(
  "file",
  () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-store-"))
    return {
      layer: layerFile(dir, { blockSize: 256, cacheBlocks: 1 }).pipe(Layer.provide(layerNode)),
      cleanup: () => fs.rmSync(dir, { recursive: true, force: true })
    }
  },
  "file"
)
