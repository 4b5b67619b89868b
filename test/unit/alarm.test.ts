// The demand-driven timer under TestClock: it runs only when asked, at the time asked,
// as often as its tick asks again, and never more often than its minimum gap.
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { nextRunAt, startAlarm } from "../../src/server/alarm.js"

/** Lets the alarm's fiber run what is due (it reacts to wakeAt on the scheduler). */
const settle = TestClock.adjust(0)

describe("alarm", () => {
  it.scoped("runs nothing while nothing is asked for", () =>
    Effect.gen(function*() {
      const alarm = yield* startAlarm(() => undefined)
      yield* TestClock.adjust("1 hour")
      expect(alarm.runs()).toBe(0)
      expect(alarm.armedAt()).toBe(Infinity)
    }))

  it.scoped("runs at the time asked, not before, and then rests", () =>
    Effect.gen(function*() {
      const at: Array<number> = []
      const alarm = yield* startAlarm((now) => void at.push(now))
      alarm.wakeAt(5_000)
      yield* TestClock.adjust("4999 millis")
      expect(at).toEqual([])
      yield* TestClock.adjust("1 millis")
      expect(at).toEqual([5_000])
      yield* TestClock.adjust("1 hour")
      expect(at).toEqual([5_000])
    }))

  it.scoped("runs again when its tick says so, until it says nothing", () =>
    Effect.gen(function*() {
      const at: Array<number> = []
      const alarm = yield* startAlarm((now) => {
        at.push(now)
        return at.length < 3 ? now + 1_000 : undefined
      })
      alarm.wakeAt(100)
      yield* TestClock.adjust("1 hour")
      expect(at).toEqual([100, 1_100, 2_100])
    }))

  it.scoped("an earlier request re-arms it; a later one changes nothing", () =>
    Effect.gen(function*() {
      const at: Array<number> = []
      const alarm = yield* startAlarm((now) => void at.push(now))
      alarm.wakeAt(10_000)
      yield* settle
      alarm.wakeAt(2_000)
      alarm.wakeAt(7_000)
      yield* settle
      expect(alarm.armedAt()).toBe(2_000)
      yield* TestClock.adjust("1 hour")
      expect(at).toEqual([2_000])
    }))

  it.scoped("a request at or before now runs at once", () =>
    Effect.gen(function*() {
      const at: Array<number> = []
      const alarm = yield* startAlarm((now) => void at.push(now))
      yield* TestClock.adjust("3 seconds")
      alarm.wakeAt(0)
      yield* settle
      expect(at).toEqual([3_000])
    }))

  it.scoped("keeps its minimum gap between runs, serving close deadlines together", () =>
    Effect.gen(function*() {
      const at: Array<number> = []
      const alarm = yield* startAlarm((now) => void at.push(now), 500)
      alarm.wakeAt(1_000)
      yield* TestClock.adjust("1 second")
      alarm.wakeAt(1_100)
      alarm.wakeAt(1_200)
      yield* TestClock.adjust("1 hour")
      expect(at).toEqual([1_000, 1_500])
    }))

  it.scoped("a request made while it runs is kept", () =>
    Effect.gen(function*() {
      const at: Array<number> = []
      const alarm = yield* startAlarm((now) => {
        at.push(now)
        if (at.length === 1) alarm.wakeAt(now + 250)
        return undefined
      })
      alarm.wakeAt(1_000)
      yield* TestClock.adjust("1 hour")
      expect(at).toEqual([1_000, 1_250])
    }))

  it("computes the next run from what is asked, the last run and the gap", () => {
    expect(nextRunAt(Infinity, 0, 500)).toBe(Infinity)
    expect(nextRunAt(100, 0, 500)).toBe(500)
    expect(nextRunAt(900, 0, 500)).toBe(900)
    expect(nextRunAt(100, -Infinity, 500)).toBe(100)
  })
})
