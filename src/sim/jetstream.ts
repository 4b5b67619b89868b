// The stream subsystem of one server life in the simulation, started as production
// starts it (the file store's layer, whose opening recovers every stream from its
// blocks, then `startJetStream`, whose `recover` reopens them), but on the simulated
// disk and with Effect's Clock and scheduler driven by the simulation's event queue.
import { Clock, Context, Duration, Effect, Exit, Layer, Scope } from "effect"
import { defaultScheduler } from "effect/Scheduler"
import type { JetStreamOptions } from "../config/options.js"
import { layerSim as layerDiskSim, type SimDisk } from "../services/disk-sim.js"
import { Log, type LogService } from "../services/log.js"
import { Store, type StoreService, type StreamStore } from "../services/store.js"
import { type FileStoreOptions, layerFile } from "../services/store-file.js"
import { GLOBAL_ACCOUNT } from "../engine/principal.js"
import type { JetStream } from "../server/jetstream/jetstream.js"
import { startJetStream } from "../server/jetstream/start.js"
import type { Server } from "../server/server.js"
import { SIM_STREAM } from "./js-client.js"
import type { EventQueue } from "./network.js"

/** A broken store, to prove the simulator catches it: PubAcks go out once written, before the fsync. */
export type StorePlant = "ack-before-sync" | "keep-refused"

/** Effect's Clock on the event queue; a dead server's sleeps never wake. */
export const simClock = (q: EventQueue, alive: () => boolean): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => q.now,
  unsafeCurrentTimeNanos: () => BigInt(q.now) * 1_000_000n,
  currentTimeMillis: Effect.sync(() => q.now),
  currentTimeNanos: Effect.sync(() => BigInt(q.now) * 1_000_000n),
  sleep: (d) =>
    Effect.async<void>((resume) => {
      q.schedule(q.now + Duration.toMillis(d), () => {
        if (alive()) resume(Effect.void)
      })
    })
})

/**
 * Every stream store's `sync` only hands the bytes to the OS (`flush`), without the fsync:
 * the stream acks what a process crash keeps but a power cut may not.
 */
const ackBeforeSync = (svc: StoreService): StoreService => {
  const patch = (st: StreamStore): StreamStore => {
    ;(st as { sync: StreamStore["sync"] }).sync = st.flush
    return st
  }
  return { ...svc, create: (n, c, m) => Effect.map(svc.create(n, c, m), patch), open: (n) => Effect.map(svc.open(n), patch) }
}

/** The bug issue #15 found: a publish refused for a failed write stays queued and is written later. */
const keepRefused = (svc: StoreService): StoreService => {
  const patch = (st: StreamStore): StreamStore => {
    const storeSync = st.storeSync
    ;(st as { storeSync: StreamStore["storeSync"] }).storeSync = (subject, headers, payload, ts) => storeSync(subject, headers, payload, ts, false)
    return st
  }
  return { ...svc, create: (n, c, m) => Effect.map(svc.create(n, c, m), patch), open: (n) => Effect.map(svc.open(n), patch) }
}

export interface SimJetStream {
  readonly js: JetStream
  readonly scope: Scope.CloseableScope
}

export const startSimJetStream = (
  server: Server,
  options: JetStreamOptions,
  disk: SimDisk,
  fileOptions: FileStoreOptions,
  log: LogService,
  clock: Clock.Clock,
  plant: StorePlant | undefined
): Effect.Effect<SimJetStream, unknown> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const ctx = yield* Layer.buildWithScope(layerFile(options.storeDir, fileOptions).pipe(Layer.provide(layerDiskSim(disk))), scope)
    const plain = Context.get(ctx, Store)
    const store = plant === "ack-before-sync" ? ackBeforeSync(plain) : plant === "keep-refused" ? keepRefused(plain) : plain
    const js = yield* startJetStream(server, options).pipe(Effect.provideService(Store, store), Scope.extend(scope))
    return { js, scope }
  }).pipe(Effect.provideService(Log, log), Effect.withClock(clock))

/** Graceful stop: JetStream's and the file store's finalizers run (consumers saved, stores synced and closed). */
export const stopSimJetStream = (s: SimJetStream): Effect.Effect<void> => Scope.close(s.scope, Exit.void)

export const simStreamStore = (js: JetStream | undefined): StreamStore | undefined =>
  js?.accounts.get(GLOBAL_ACCOUNT)?.streams.get(SIM_STREAM)?.store

/**
 * Effect runs fibers on microtasks, falling back to a timer after 2048 rounds in a row;
 * a timer would race the simulation, so while it runs every round is a microtask and one
 * `setImmediate` turn settles all Effect and Promise work.
 */
export const withMicrotaskScheduler = async <A>(f: () => Promise<A>): Promise<A> => {
  const s = defaultScheduler as unknown as { maxNextTickBeforeTimer: number }
  const was = s.maxNextTickBeforeTimer
  s.maxNextTickBeforeTimer = Number.POSITIVE_INFINITY
  try {
    return await f()
  } finally {
    s.maxNextTickBeforeTimer = was
  }
}

export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
