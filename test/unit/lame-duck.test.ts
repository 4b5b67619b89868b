// Lame duck mode's pacing (pure) and its run under TestClock: the listeners close and
// the clients are told at once, nothing is closed during the grace period, then the
// clients go one by one, spread over the rest of lame_duck_duration.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { lameDuckPacing, type LameDuckTarget, runLameDuck } from "../../src/server/lame-duck.js"
import { makeLog } from "../../src/services/log.js"

describe("lameDuckPacing", () => {
  it("spreads the closes evenly over the duration left after the grace period", () => {
    expect(lameDuckPacing(200, 120_000, 10_000)).toEqual({ batch: 1, intervalMs: 550 })
  })

  it("never waits more than a second between two clients", () => {
    expect(lameDuckPacing(3, 120_000, 10_000)).toEqual({ batch: 1, intervalMs: 1_000 })
  })

  it("closes in batches when there are more clients than milliseconds", () => {
    expect(lameDuckPacing(250_000, 60_000, 10_000)).toEqual({ batch: 5, intervalMs: 1 })
  })

  it("spreads over at least a second, and has nothing to do without clients", () => {
    expect(lameDuckPacing(4, 30_000, 29_900)).toEqual({ batch: 1, intervalMs: 250 })
    expect(lameDuckPacing(0, 30_000, 10_000)).toEqual({ batch: 0, intervalMs: 0 })
  })
})

const fakeTarget = (clients: number) => {
  const events: Array<string> = []
  const target: LameDuckTarget = {
    stopAccepting: () => events.push("stop accepting"),
    announce: () => events.push("announce"),
    connections: () => Array.from({ length: clients }, (_, i) => () => void events.push(`close ${i}`))
  }
  return { events, target }
}

const quietLog = makeLog({ debug: false, trace: false, logtime: false, logFile: undefined }, () => {})

describe("runLameDuck", () => {
  it.effect("stops accepting and announces at once, waits the grace period, then closes one client per interval", () =>
    Effect.gen(function*() {
      const { events, target } = fakeTarget(3)
      const fiber = yield* Effect.fork(runLameDuck(target, { durationMs: 30_000, graceMs: 10_000 }, quietLog))
      yield* TestClock.adjust("1 millis")
      expect(events).toEqual(["stop accepting", "announce"])
      yield* TestClock.adjust("9998 millis")
      expect(events).toHaveLength(2)
      yield* TestClock.adjust("1 millis")
      // Grace over: 3 clients over 20s would be 6.6s apart; capped at a second.
      expect(events.slice(2)).toEqual(["close 0"])
      yield* TestClock.adjust("999 millis")
      expect(events.slice(2)).toEqual(["close 0"])
      yield* TestClock.adjust("1 millis")
      expect(events.slice(2)).toEqual(["close 0", "close 1"])
      yield* TestClock.adjust("1 seconds")
      expect(events.slice(2)).toEqual(["close 0", "close 1", "close 2"])
      // Done right after the last client, not a full interval later.
      expect(fiber.unsafePoll()).not.toBeNull()
      yield* Fiber.join(fiber)
    }))

  it.effect("with no grace period starts closing at once; with no clients it is over at once", () =>
    Effect.gen(function*() {
      const { events, target } = fakeTarget(2)
      const fiber = yield* Effect.fork(runLameDuck(target, { durationMs: 30_000, graceMs: 0 }, quietLog))
      yield* TestClock.adjust("1 millis")
      expect(events).toEqual(["stop accepting", "announce", "close 0"])
      yield* TestClock.adjust("1 seconds")
      expect(events).toEqual(["stop accepting", "announce", "close 0", "close 1"])
      yield* Fiber.join(fiber)
      const empty = fakeTarget(0)
      yield* runLameDuck(empty.target, { durationMs: 30_000, graceMs: 0 }, quietLog)
      expect(empty.events).toEqual(["stop accepting", "announce"])
    }))
})
