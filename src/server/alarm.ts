// A timer armed only on demand. The engine's deadlines (pings, auth and write
// deadlines, MQTT keep-alives and redeliveries, consumer ack waits, max_age, the
// sync_interval fsync, compaction) each ask to be woken by a time; the alarm sleeps
// until the earliest and then runs its subsystem's tick, which does what is due and
// says when it next needs to run. With nothing asked for, nothing runs: an idle
// server has no timer armed. Time is Effect's Clock, so tests drive it with TestClock.
import { Deferred, Effect, Exit, type Scope } from "effect"

export interface Alarm {
  /**
   * Run no later than `at` (the clock's milliseconds; anything at or before now means
   * as soon as allowed). Synchronous and cheap: a comparison unless `at` is earlier
   * than what the alarm is armed for.
   */
  readonly wakeAt: (at: number) => void
  /** When the alarm will next run, Infinity when nothing is asked for (tests, diagnostics). */
  readonly armedAt: () => number
  /** How many times it has run (tests, diagnostics). */
  readonly runs: () => number
}

/**
 * The next time to run: the earliest time asked for, but not sooner than `minGapMs`
 * after the last run (so many nearby deadlines are served by one run). Infinity: none.
 */
export const nextRunAt = (armed: number, lastRun: number, minGapMs: number): number =>
  armed === Infinity ? Infinity : Math.max(armed, lastRun + minGapMs)

/**
 * Starts an alarm for the life of the scope. `tick(now)` does what is due and returns
 * the next time it needs to run (undefined: nothing timed); it may also call `wakeAt`.
 * `minGap` may be read anew each time (a reload can change it).
 */
export const startAlarm = (
  tick: (now: number) => Effect.Effect<number | undefined> | number | undefined,
  minGap: number | (() => number) = 0
): Effect.Effect<Alarm, never, Scope.Scope> =>
  Effect.gen(function*() {
    const gap = typeof minGap === "number" ? () => minGap : minGap
    const clock = yield* Effect.clock
    let armed = Infinity
    let lastRun = -Infinity
    let runs = 0
    let signal = yield* Deferred.make<void>()
    const alarm: Alarm = {
      wakeAt: (at) => {
        if (!(at < armed)) return
        armed = at
        Deferred.unsafeDone(signal, Exit.void)
      },
      armedAt: () => nextRunAt(armed, lastRun, gap()),
      runs: () => runs
    }
    const runDue = Effect.suspend(() => {
      const now = clock.unsafeCurrentTimeMillis()
      if (now < nextRunAt(armed, lastRun, gap())) return Effect.void
      armed = Infinity
      lastRun = now
      runs++
      const r = tick(now)
      const next = Effect.isEffect(r) ? r : Effect.succeed(r)
      return Effect.map(next, (at) => {
        if (at !== undefined) alarm.wakeAt(at)
      })
    })
    const wait = Effect.suspend(() => {
      const at = nextRunAt(armed, lastRun, gap())
      const awaited = Deferred.await(signal)
      if (at === Infinity) return awaited
      const ms = at - clock.unsafeCurrentTimeMillis()
      return ms <= 0 ? Effect.void : Effect.raceFirst(Effect.sleep(ms), awaited)
    })
    const loop = Effect.gen(function*() {
      for (;;) {
        yield* wait
        // A new signal before running, so a wakeAt during the run is not lost.
        signal = yield* Deferred.make<void>()
        yield* runDue
      }
    })
    yield* Effect.forkScoped(loop)
    return alarm
  })
