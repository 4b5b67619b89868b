// The simulated disk keeps exactly the Disk port's promises: unsynced bytes and names
// survive a process crash but not a power cut (bar a torn prefix of the writes), a dead
// process's calls never return, and the file store recovers on it.
import { Effect, Exit, Layer, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { makeStoreConfig } from "../../src/core/stream/config.js"
import { layerSim, SimDisk } from "../../src/services/disk-sim.js"
import { Store } from "../../src/services/store.js"
import { layerFile } from "../../src/services/store-file.js"

const run = <A, E>(eff: Effect.Effect<A, E>): A => Effect.runSync(eff)
const text = (b: Uint8Array): string => Buffer.from(b).toString("latin1")
/** A scripted source of "random" choices. */
const script = (...xs: Array<number>) => () => xs.shift() ?? 0

/** One process life on `disk`: its scope is never closed (a dead process runs no finalizers). */
const lifeOn = (disk: SimDisk) => <A>(eff: Effect.Effect<A, unknown, Store>) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const ctx = yield* Layer.buildWithScope(layerFile("/js").pipe(Layer.provide(layerSim(disk))), yield* Scope.make())
      return yield* Effect.provide(eff, ctx)
    }).pipe(Effect.orDie)
  )

describe("SimDisk", () => {
  it("a power cut forgets unsynced bytes and names; synced ones stay", () => {
    const disk = new SimDisk({ random: script() })
    disk.provision("/d")
    const p = disk.service()
    const kept = run(p.open("/d/kept", true))
    run(kept.write(Buffer.from("durable"), 0))
    run(kept.sync())
    run(p.syncDir("/d"))
    run(kept.write(Buffer.from("+lost"), 7))
    const gone = run(p.open("/d/gone", true))
    run(gone.write(Buffer.from("x"), 0))
    run(gone.sync())
    disk.powerLoss(false)
    const q = disk.service()
    expect(run(q.list("/d"))).toEqual(["kept"])
    expect(text(run(q.readFile("/d/kept")))).toBe("durable")
    expect(disk.stats.bytesLost).toBe(5)
  })

  it("a process crash keeps everything handed to the OS, and the dead process's calls never return", () => {
    const disk = new SimDisk({ random: script() })
    disk.provision("/d")
    const p = disk.service()
    const f = run(p.open("/d/f", true))
    run(f.write(Buffer.from("written"), 0))
    disk.crash()
    expect(text(run(disk.service().readFile("/d/f")))).toBe("written")
    expect(Exit.isSuccess(Effect.runSyncExit(f.write(Buffer.from("late"), 0)))).toBe(false)
    expect(text(run(disk.service().readFile("/d/f")))).toBe("written")
  })

  it("a torn power cut keeps an in-order prefix of the unsynced writes, the last one cut", () => {
    // 0.4 → keep 1 of 2 unsynced writes; 0.5 → the next one cut at half its length.
    const disk = new SimDisk({ random: script(0.4, 0.5) })
    disk.provision("/d")
    const p = disk.service()
    const f = run(p.open("/d/f", true))
    run(f.write(Buffer.from("AAAA"), 0))
    run(f.sync())
    run(p.syncDir("/d"))
    run(f.write(Buffer.from("BBBB"), 4))
    run(f.write(Buffer.from("CCCCCCCC"), 8))
    disk.powerLoss(true)
    expect(text(run(disk.service().readFile("/d/f")))).toBe("AAAABBBBCCCC")
    expect(disk.stats.tornWrites).toBe(1)
  })

  it("a rename is durable only once its folder is synced", () => {
    const disk = new SimDisk({ random: script() })
    disk.provision("/d")
    const p = disk.service()
    for (const [name, body] of [["cfg", "old"], ["cfg.tmp", "new"]]) {
      const f = run(p.open(`/d/${name}`, true))
      run(f.write(Buffer.from(body), 0))
      run(f.sync())
    }
    run(p.syncDir("/d"))
    run(p.rename("/d/cfg.tmp", "/d/cfg"))
    expect(text(run(p.readFile("/d/cfg")))).toBe("new")
    disk.powerLoss(false)
    expect(text(run(disk.service().readFile("/d/cfg")))).toBe("old")
    const q = disk.service()
    run(q.rename("/d/cfg.tmp", "/d/cfg"))
    run(q.syncDir("/d"))
    disk.powerLoss(false)
    expect(run(disk.service().list("/d"))).toEqual(["cfg"])
    expect(text(run(disk.service().readFile("/d/cfg")))).toBe("new")
  })

  it("the file store recovers synced messages after a power cut", async () => {
    const disk = new SimDisk({ random: script(0.9, 0.3) })
    disk.provision("/js")
    // One process life: its scope is never closed (a dead process runs no finalizers).
    const life = (eff: Effect.Effect<void, unknown, Store>) =>
      Effect.runPromise(
        Effect.gen(function*() {
          const ctx = yield* Layer.buildWithScope(layerFile("/js", { blockSize: 256 }).pipe(Layer.provide(layerSim(disk))), yield* Scope.make())
          yield* Effect.provide(eff, ctx)
        }).pipe(Effect.orDie)
      )
    await life(
      Effect.gen(function*() {
        const s = yield* (yield* Store).create("S", makeStoreConfig())
        for (let i = 0; i < 20; i++) yield* s.store("a", undefined, Buffer.from(`msg ${i}`), i)
        yield* s.sync()
        for (let i = 20; i < 25; i++) yield* s.store("a", undefined, Buffer.from(`msg ${i}`), i)
        yield* s.flush()
        disk.powerLoss(true)
      })
    )
    await life(
      Effect.gen(function*() {
        const s = yield* (yield* Store).open("S")
        expect(s.state().last_seq).toBeGreaterThanOrEqual(20)
        for (let seq = 1; seq <= 20; seq++) expect(text((yield* s.load(seq)).payload)).toBe(`msg ${seq - 1}`)
        expect(s.health().problems.every((p) => p.kind === "TornTail")).toBe(true)
      })
    )
  })

  // Seed 59 of the simulation: a crash between a meta file's rename and its folder's fsync
  // left the file in the OS cache only; the next process read it and never made it durable.
  it("meta a dead process left unsynced is made durable by the next open", async () => {
    const pending: Array<() => void> = []
    let defer = false
    const disk = new SimDisk({ random: script(), later: (f) => (defer ? pending.push(f) : f()) })
    disk.provision("/js")
    const life = lifeOn(disk)
    const metaNames = () => [...disk.files().keys()].filter((p) => p.includes("/meta/") && !p.endsWith(".tmp"))
    await life(
      Effect.gen(function*() {
        const s = yield* (yield* Store).create("S", makeStoreConfig(), [["first", Buffer.from("1")]])
        defer = true
        yield* Effect.fork(s.writeMeta("second", Buffer.from("2")))
        // Complete fsyncs one by one until the rename happened; the folder's fsync stays in flight.
        for (let i = 0; i < 1000; i++) {
          yield* Effect.yieldNow()
          if (metaNames().length === 2) break
          pending.shift()?.()
        }
        expect(pending).toHaveLength(1)
        expect(metaNames()).toHaveLength(2)
        defer = false
        disk.crash()
      })
    )
    const read = (key: string) => Effect.flatMap(Effect.flatMap(Store, (st) => st.open("S")), (s) => s.readMeta(key))
    expect(text((await life(read("second")))!)).toBe("2")
    disk.powerLoss(false)
    expect(text((await life(read("first")))!)).toBe("1")
    expect(text((await life(read("second")))!)).toBe("2")
  })

  it("a stream is created with its meta in one step: a power cut right after leaves both", async () => {
    const disk = new SimDisk({ random: script() })
    disk.provision("/js")
    const life = lifeOn(disk)
    await life(Effect.asVoid(Effect.flatMap(Store, (st) => st.create("S", makeStoreConfig(), [["config", Buffer.from("c")]]))))
    disk.powerLoss(true)
    const meta = await life(Effect.flatMap(Effect.flatMap(Store, (st) => st.open("S")), (s) => s.readMeta("config")))
    expect(text(meta!)).toBe("c")
  })
})
