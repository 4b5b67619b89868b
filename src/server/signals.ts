// What the running server does on each process signal it listens for (the listeners
// themselves are installed at the very start of the process: src/signals.ts).
// SIGUSR1 reopens the log file, as nats-server does for logrotate.
import { Effect, type Scope } from "effect"
import { Log } from "../services/log.js"
import { onSignal } from "../signals.js"

export const handleSignals: Effect.Effect<void, never, Log | Scope.Scope> = Effect.gen(function*() {
  const log = yield* Log
  yield* Effect.acquireRelease(
    Effect.sync(() =>
      onSignal("SIGUSR1", () => {
        try {
          if (log.reopen()) log.info("File log re-opened")
        } catch (e) {
          // The old file stays open: nothing is lost, the operator is told why.
          log.error(`Could not re-open the log file: ${e instanceof Error ? e.message : String(e)}`)
        }
      })
    ),
    (off) => Effect.sync(off)
  )
})
