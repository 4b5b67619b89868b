// The file store on a simulated disk that fills up and gets space back, and one whose
// block files lose their synced tail: a publish refused for want of space is never
// stored, never readable and holds no memory; the stream takes writes again by itself
// once space returns; and synced messages that vanish are reported as lost, with their
// sequences never handed out again.
import { Effect, Layer, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { makeStoreConfig } from "../../src/core/stream/config.js"
import { Disk, DiskError, type DiskService } from "../../src/services/disk.js"
import { layerSim, SimDisk } from "../../src/services/disk-sim.js"
import { Store, type StreamStore } from "../../src/services/store.js"
import { layerFile } from "../../src/services/store-file.js"

const text = (b: Uint8Array): string => Buffer.from(b).toString("latin1")
const payload = (i: number, size = 64): Buffer => Buffer.concat([Buffer.from(`msg ${i} `), Buffer.alloc(size, 0x61)])

/** One process life on `disk`, through `wrap` (its scope never closes: a dead process runs no finalizers). */
const lifeOn = (disk: SimDisk, wrap: (d: DiskService) => DiskService = (d) => d) => <A>(eff: Effect.Effect<A, unknown, Store>) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const wrapped = Layer.effect(Disk, Effect.map(Disk, wrap)).pipe(Layer.provide(layerSim(disk)))
      const ctx = yield* Layer.buildWithScope(layerFile("/js", { blockSize: 4096 }).pipe(Layer.provide(wrapped)), yield* Scope.make())
      return yield* Effect.provide(eff, ctx)
    }).pipe(Effect.orDie)
  )

/** A disk whose block files call `hook` on each write, fail `failSyncs` fsyncs, and fail the `failWrite`th write. */
const hooked = (hook: { onWrite: () => void; failSyncs: number; failWrite?: number }) => (d: DiskService): DiskService => ({
  ...d,
  open: (path, create) =>
    Effect.map(d.open(path, create), (f) =>
      path.endsWith(".blk")
        ? {
          ...f,
          write: (data, position) =>
            Effect.zipRight(
              Effect.sync(hook.onWrite),
              hook.failWrite !== undefined && --hook.failWrite === 0 ? Effect.fail(new DiskError({ reason: "NoSpace", path, message: "simulated ENOSPC" })) : f.write(data, position)
            ),
          sync: () => (hook.failSyncs > 0 && hook.failSyncs-- > 0 ? Effect.fail(new DiskError({ reason: "Io", path, message: "simulated fsync failure" })) : f.sync())
        }
        : f
    )
})

const put = (s: StreamStore, i: number, refusable = true, size = 64): number => {
  const r = s.storeSync("a", undefined, payload(i, size), i, refusable)
  if (typeof r !== "number") throw r
  return r
}

describe("disk full, then space freed (simulated disk)", () => {
  it("a refused publish is never stored, never readable and frees its memory; writes resume by themselves", async () => {
    const disk = new SimDisk({ random: () => 0.5 })
    disk.provision("/js")
    const life = lifeOn(disk)
    const out = await life(
      Effect.gen(function*() {
        const s = yield* (yield* Store).create("S", makeStoreConfig())
        for (let i = 1; i <= 3; i++) put(s, i)
        yield* s.sync()
        const bytesBefore = s.state().bytes
        disk.fill()
        const refusedSeqs = [put(s, 4, true, 5000), put(s, 5, true, 5000)]
        const failed = yield* Effect.either(s.sync())
        const whileFull = {
          failed: failed._tag === "Left" ? failed.left.reason : "ok",
          refused: refusedSeqs.map((seq) => s.takeRefused(seq)),
          again: s.takeRefused(4),
          state: s.state(),
          load4: (yield* Effect.either(s.load(4)))._tag,
          bytesSame: s.state().bytes === bytesBefore,
          outOfSpace: s.outOfSpace(),
          health: s.health()
        }
        // Still full: a probe fails and changes nothing.
        const probeFull = (yield* Effect.either(s.probe()))._tag
        disk.free()
        yield* s.probe()
        const afterFree = { outOfSpace: s.outOfSpace(), ok: s.health().ok, next: put(s, 6) }
        yield* s.sync()
        return { whileFull, probeFull, afterFree, okAfterWrite: s.health().ok, state: s.state() }
      })
    )
    expect(out.whileFull.failed).toBe("NoSpace")
    expect(out.whileFull.refused).toEqual([true, true])
    expect(out.whileFull.again).toBe(false)
    // Sequences stay used (a consumer may have seen them); the messages are gone.
    expect(out.whileFull.state).toMatchObject({ messages: 3, last_seq: 5 })
    expect(out.whileFull.load4).toBe("Left")
    expect(out.whileFull.bytesSame).toBe(true)
    expect(out.whileFull.outOfSpace).toBe(true)
    expect(out.whileFull.health.ok).toBe(false)
    expect(out.whileFull.health.problems.map((p) => p.kind)).toEqual(["NoSpace"])
    expect(out.probeFull).toBe("Left")
    expect(out.afterFree).toEqual({ outOfSpace: false, ok: true, next: 6 })
    expect(out.okAfterWrite).toBe(true)
    expect(out.state).toMatchObject({ messages: 4, last_seq: 6 })
    expect(disk.stats.noSpace).toBeGreaterThan(0)
    // After a power cut: what was synced is there, what was refused is not, nothing is reused.
    disk.powerLoss(true)
    const after = await life(
      Effect.gen(function*() {
        const s = yield* (yield* Store).open("S")
        const got: Array<string> = []
        for (let seq = 1; seq <= s.state().last_seq; seq++) {
          const m = yield* Effect.either(s.load(seq))
          if (m._tag === "Right") got.push(text(m.right.payload).split(" ").slice(0, 2).join(" "))
        }
        return { got, last: s.state().last_seq, ok: s.health().ok }
      })
    )
    expect(after).toEqual({ got: ["msg 1", "msg 2", "msg 3", "msg 6"], last: 6, ok: true })
  })

  it("a message appended while a round fails is not refused with it: the next round writes it", async () => {
    const disk = new SimDisk({ random: () => 0.5 })
    disk.provision("/js")
    let stream: StreamStore | undefined
    let late: number | undefined
    const hook = {
      failSyncs: 0,
      onWrite: () => {
        // The round has begun (it is writing): what is appended now belongs to the next one.
        if (stream !== undefined && late === undefined) late = put(stream, 2)
      }
    }
    const out = await lifeOn(disk, hooked(hook))(
      Effect.gen(function*() {
        const s = yield* (yield* Store).create("S", makeStoreConfig())
        const first = put(s, 1)
        // Room for the block file, not for the message.
        disk.fill(8)
        stream = s
        const failed = yield* Effect.either(s.sync())
        stream = undefined
        disk.free()
        const second = yield* Effect.either(s.sync())
        return { failed: failed._tag, second: second._tag, refused1: s.takeRefused(first), refused2: s.takeRefused(late!), msgs: s.state().messages, load2: text((yield* s.load(late!)).payload) }
      })
    )
    expect(out).toEqual({ failed: "Left", second: "Right", refused1: true, refused2: false, msgs: 1, load2: payload(2).toString("latin1") })
  })

  it("a sync that fails after an earlier round wrote a message does not refuse that message (it stays: durableSeq covers it)", async () => {
    const disk = new SimDisk({ random: () => 0.5 })
    disk.provision("/js")
    let stream: StreamStore | undefined
    let second: Effect.Effect<unknown, unknown> | undefined
    const hook = {
      failSyncs: 0,
      failWrite: undefined as number | undefined,
      onWrite: () => {
        // Round 1 is writing message 1: message 2 comes, and its sync waits for round 2, which fails.
        if (stream === undefined || second !== undefined) return
        put(stream, 2)
        second = Effect.either(stream.sync())
        hook.failWrite = 1
      }
    }
    const out = await lifeOn(disk, hooked(hook))(
      Effect.gen(function*() {
        const s = yield* (yield* Store).create("S", makeStoreConfig())
        put(s, 1)
        stream = s
        const first = yield* Effect.either(s.sync())
        const later = (yield* (second as Effect.Effect<{ _tag: string }>))._tag
        return { first: first._tag, later, durable: s.durableSeq(), refused1: s.takeRefused(1), refused2: s.takeRefused(2), msgs: s.state().messages }
      })
    )
    expect(out).toEqual({ first: "Right", later: "Left", durable: 1, refused1: false, refused2: true, msgs: 1 })
  })

  it("a failed fsync takes the round back off the disk: the refused message is gone after a power cut", async () => {
    const disk = new SimDisk({ random: () => 0.5 })
    disk.provision("/js")
    const hook = { failSyncs: 0, onWrite: () => {} }
    const out = await lifeOn(disk, hooked(hook))(
      Effect.gen(function*() {
        const s = yield* (yield* Store).create("S", makeStoreConfig())
        put(s, 1)
        yield* s.sync()
        const seq = put(s, 2)
        hook.failSyncs = 1
        const r = yield* Effect.either(s.sync())
        return { failed: r._tag, refused: s.takeRefused(seq), ok: s.health().ok, problems: s.health().problems.map((p) => p.kind) }
      })
    )
    expect(out).toEqual({ failed: "Left", refused: true, ok: false, problems: ["WriteFailed"] })
    disk.powerLoss(false)
    const after = await lifeOn(disk)(Effect.map(Effect.flatMap(Store, (st) => st.open("S")), (s) => s.state()))
    expect(after).toMatchObject({ messages: 1 })
  })
})

/** A new stream of `n` messages, each synced by a round of its own. */
const syncedOneByOne = (n: number) =>
  Effect.gen(function*() {
    const s = yield* (yield* Store).create("S", makeStoreConfig())
    for (let i = 1; i <= n; i++) {
      put(s, i)
      yield* s.sync()
    }
    return s
  })

describe("lost synced data (simulated disk)", () => {
  it("a block cut to half its synced length is reported as lost data, and its sequences are not reused (regression: a torn write)", async () => {
    const disk = new SimDisk({ random: () => 0.5 })
    disk.provision("/js")
    const life = lifeOn(disk)
    await life(Effect.asVoid(syncedOneByOne(120)))
    const blocks = [...disk.files().keys()].filter((p) => p.endsWith(".blk"))
    const last = blocks[blocks.length - 1]
    disk.cut(last, Math.floor(disk.files().get(last)!.size / 2))
    const after = await life(
      Effect.gen(function*() {
        const s = yield* (yield* Store).open("S")
        return { st: s.state(), health: s.health(), next: put(s, 121) }
      })
    )
    expect(after.health.ok).toBe(false)
    expect(after.health.problems.map((p) => p.kind)).toContain("LostData")
    expect(after.st.last_seq).toBeLessThan(120)
    expect(after.st.messages).toBe(after.st.last_seq)
    expect(after.next).toBe(121)
  })

  it("a power cut that tears the last write is still a torn tail, not lost data", async () => {
    // The power cut keeps none of the unsynced writes whole and cuts the first one in half.
    const draws = [0, 0.5]
    const disk = new SimDisk({ random: () => draws.shift() ?? 0.5 })
    disk.provision("/js")
    const life = lifeOn(disk)
    await life(
      Effect.gen(function*() {
        const s = yield* syncedOneByOne(10)
        put(s, 11)
        yield* s.flush()
        disk.powerLoss(true)
      })
    )
    const after = await life(Effect.map(Effect.flatMap(Store, (st) => st.open("S")), (s) => ({ st: s.state(), health: s.health() })))
    expect(after.health.ok).toBe(true)
    expect(after.health.problems.every((p) => p.kind === "TornTail")).toBe(true)
    // Message 11 was never synced (nor acknowledged): its sequence may be taken again.
    expect(after.st).toMatchObject({ messages: 10, last_seq: 10 })
  })
})
