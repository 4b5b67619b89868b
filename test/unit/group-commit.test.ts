// The GroupCommit service (services/group-commit.ts): who shares a round, what each
// member is told, and that nothing stops the rounds. A round's work here waits for the
// test to release it, so "while a round runs" can be observed.
import { describe, expect, it } from "vitest"
import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer, Option, Runtime } from "effect"
import { GroupCommit, makeGroupCommit, type Round } from "../../src/services/group-commit.js"
import { layerMemoryLog } from "../../src/services/log.js"
import { eventually } from "../helpers/server.js"

/** Rounds that record their batches and finish when the test says, failing when told to. */
const gated = <A>() => {
  const batches: A[][] = []
  const settled: Array<{ batch: A[]; ok: boolean }> = []
  let idle = 0
  let release: Array<(ok: boolean) => void> = []
  const round: Round<A, string> = {
    commit: (batch) =>
      Effect.async<void, string>((resume) => {
        batches.push([...batch])
        release.push((ok) => resume(ok ? Effect.void : Effect.fail("disk on fire")))
      }),
    settle: (batch, outcome) => settled.push({ batch: [...batch], ok: Exit.isSuccess(outcome) }),
    idle: () => void idle++
  }
  return {
    round,
    batches,
    settled,
    idle: () => idle,
    /** End the round in flight. */
    finish: (ok = true) => {
      const r = release.shift()
      if (r === undefined) throw new Error("no round is running")
      r(ok)
    }
  }
}

const service = makeGroupCommit(Runtime.defaultRuntime, Option.none())

describe("GroupCommit", () => {
  it("members of one turn share the first round; those that join while it runs share the next", async () => {
    const g = gated<number>()
    const group = service.group(g.round)
    group.join(1)
    group.join(2)
    // Nothing runs within the turn the members joined in.
    expect(g.batches).toEqual([])
    await eventually(() => g.batches.length === 1, "the first round")
    for (let i = 3; i <= 6; i++) group.join(i)
    expect(g.batches).toEqual([[1, 2]])
    g.finish()
    await eventually(() => g.batches.length === 2, "the second round")
    expect(g.batches[1]).toEqual([3, 4, 5, 6])
    expect(g.settled).toEqual([{ batch: [1, 2], ok: true }])
    expect(g.idle()).toBe(0)
    g.finish()
    await eventually(() => g.idle() === 1, "the rounds to stop")
    expect(g.batches).toHaveLength(2)
    expect(g.settled[1]).toEqual({ batch: [3, 4, 5, 6], ok: true })
  })

  it("tells a failed round's members it failed, and the next round still runs", async () => {
    const g = gated<string>()
    const group = service.group(g.round)
    group.join("a")
    await eventually(() => g.batches.length === 1, "the first round")
    group.join("b")
    g.finish(false)
    await eventually(() => g.batches.length === 2, "the second round")
    g.finish(true)
    await eventually(() => g.idle() === 1, "the rounds to stop")
    expect(g.settled).toEqual([
      { batch: ["a"], ok: false },
      { batch: ["b"], ok: true }
    ])
  })

  it("starts again when a member joins after the rounds stopped", async () => {
    const g = gated<number>()
    const group = service.group(g.round)
    group.join(1)
    await eventually(() => g.batches.length === 1, "the first round")
    g.finish()
    await eventually(() => g.idle() === 1, "the rounds to stop")
    group.join(2)
    await eventually(() => g.batches.length === 2, "a new round")
    g.finish()
    await eventually(() => g.idle() === 2, "the rounds to stop again")
    expect(g.batches).toEqual([[1], [2]])
  })

  it("logs a settle that throws and goes on with the next round", async () => {
    const lines: string[] = []
    const logged = await Effect.runPromise(
      Effect.map(Layer.build(GroupCommit.layer), (ctx) => Context.get(ctx, GroupCommit)).pipe(
        Effect.provide(layerMemoryLog(lines)),
        Effect.scoped
      )
    )
    const told: number[][] = []
    let n = 0
    const group = logged.group<number, never>({
      commit: () => Effect.void,
      settle: (batch) => {
        told.push([...batch])
        if (n++ === 0) throw new Error("the reply could not be sent")
      }
    })
    group.join(1)
    await eventually(() => told.length === 1, "the first round")
    group.join(2)
    await eventually(() => told.length === 2, "the second round")
    expect(told).toEqual([[1], [2]])
    expect(lines.join("\n")).toMatch(/\[ERR\] group commit: settling a round failed: Error: the reply could not be sent/)
  })

  it("a barrier completes only after a round that began after it was run, sharing rounds with the others", async () => {
    let commits = 0
    const gates: Array<Deferred.Deferred<void>> = []
    const commit = Effect.flatMap(Deferred.make<void>(), (d) => {
      commits++
      gates.push(d)
      return Deferred.await(d)
    })
    const barrier = service.barrier(commit)
    const first = Effect.runFork(barrier)
    await eventually(() => gates.length === 1, "the first round")
    const later = [Effect.runFork(barrier), Effect.runFork(barrier), Effect.runFork(barrier)]
    Effect.runSync(Deferred.succeed(gates[0], undefined))
    expect(Exit.isSuccess(await Effect.runPromise(Fiber.await(first)))).toBe(true)
    // The three that came while the first round ran wait for the next one, together.
    await eventually(() => gates.length === 2, "the second round")
    for (const f of later) expect(f.unsafePoll()).toBeNull()
    Effect.runSync(Deferred.succeed(gates[1], undefined))
    for (const f of later) expect(Exit.isSuccess(await Effect.runPromise(Fiber.await(f)))).toBe(true)
    expect(commits).toBe(2)
  })

  it("a barrier fails with its round", async () => {
    const barrier = service.barrier(Effect.fail("no space" as const))
    const exit = await Effect.runPromiseExit(barrier)
    expect(Exit.isFailure(exit) && Cause.failureOption(exit.cause)).toEqual(Option.some("no space"))
  })

  it("is a default service, so stores and streams run without a layer providing it", async () => {
    const s = await Effect.runPromise(GroupCommit)
    expect(typeof s.group).toBe("function")
  })
})
