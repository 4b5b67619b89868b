// Group commit: callers that need the same durability (a stream store's fsync, the
// PubAcks of a stream, MQTT's state) join the next round; one round runs at a time,
// and each covers every member that joined before it began. A burst of N callers
// therefore costs one or two rounds, not N: while a round runs, the next one fills.
//
// Joining is synchronous and allocates nothing beyond the member itself, so the
// publish path may join once per message. Effects run per round, in one fiber per
// busy period: it starts on the scheduler's next turn (so that callers of the same
// turn share the first round), runs rounds back to back while members keep joining,
// and ends when none is waiting. (A lock taken per caller would not do: Effect's
// semaphore lets a releasing fiber barge back in, and a looping publisher would get
// an fsync per message.)
import { Context, Deferred, Effect, type Exit, Layer, Option, Runtime } from "effect"
import { Log, type LogService } from "./log.js"

/** What one group's rounds do. */
export interface Round<A, E> {
  /** The round's work: make durable what every member of `batch` needs. */
  readonly commit: (batch: ReadonlyArray<A>) => Effect.Effect<void, E>
  /** Tell the members how it went. Synchronous; should it throw, that is logged and the rounds go on. */
  readonly settle: (batch: ReadonlyArray<A>, outcome: Exit.Exit<void, E>) => void
  /** The last round settled and nobody joined meanwhile: the rounds stop until the next join. */
  readonly idle?: () => void
}

export interface Group<A> {
  /** Join the next round (it starts if none is running). */
  readonly join: (member: A) => void
}

export interface GroupCommitService {
  /** A new group, its rounds described by `round`. */
  readonly group: <A, E>(round: Round<A, E>) => Group<A>
  /**
   * A group whose members are fibers: the Effect returned joins the next round and
   * completes with its outcome, so it completes only after a `commit` that began after
   * it was run.
   */
  readonly barrier: <E>(commit: Effect.Effect<void, E>) => Effect.Effect<void, E>
}

/** The rounds run in `runtime`; a settle that throws is reported to `log` (Effect's logger without one). */
export const makeGroupCommit = (runtime: Runtime.Runtime<never>, log: Option.Option<LogService>): GroupCommitService => {
  const fork = Runtime.runFork(runtime)
  const report = (err: unknown): Effect.Effect<void> => {
    const msg = `group commit: settling a round failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`
    return Option.isSome(log) ? Effect.sync(() => log.value.error(msg)) : Effect.logError(msg)
  }
  const group = <A, E>(round: Round<A, E>): Group<A> => {
    let waiting: A[] = []
    let running = false
    const settle = (batch: ReadonlyArray<A>, exit: Exit.Exit<void, E>) =>
      Effect.suspend(() => {
        try {
          round.settle(batch, exit)
          return Effect.void
        } catch (err) {
          return report(err)
        }
      })
    const rounds: Effect.Effect<void> = Effect.suspend(() => {
      if (waiting.length === 0) {
        running = false
        round.idle?.()
        return Effect.void
      }
      const batch = waiting
      waiting = []
      return Effect.exit(Effect.suspend(() => round.commit(batch))).pipe(
        Effect.flatMap((exit) => settle(batch, exit)),
        Effect.zipRight(rounds)
      )
    })
    return {
      join: (member) => {
        waiting.push(member)
        if (running) return
        running = true
        fork(rounds, { immediate: false })
      }
    }
  }
  return {
    group,
    barrier: <E>(commit: Effect.Effect<void, E>) => {
      const g = group<Deferred.Deferred<void, E>, E>({
        commit: () => commit,
        settle: (batch, exit) => {
          for (const d of batch) Deferred.unsafeDone(d, exit)
        }
      })
      return Effect.flatMap(Deferred.make<void, E>(), (d) => {
        g.join(d)
        return Deferred.await(d)
      })
    }
  }
}

/**
 * The group-commit service. Unless a layer provides it, rounds run in Effect's default
 * runtime and report to Effect's logger; `GroupCommit.layer` runs them in the runtime
 * it is built in, reporting to its Log.
 */
export class GroupCommit extends Context.Reference<GroupCommit>()("switchyard/GroupCommit", {
  defaultValue: (): GroupCommitService => makeGroupCommit(Runtime.defaultRuntime, Option.none())
}) {
  static readonly layer: Layer.Layer<GroupCommit> = Layer.effect(
    GroupCommit,
    Effect.gen(function*() {
      const runtime = yield* Effect.runtime<never>()
      const log = yield* Effect.serviceOption(Log)
      return makeGroupCommit(runtime, log)
    })
  )
}
