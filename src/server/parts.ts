// The parts of the server that load only when the configuration uses them: routes,
// leaf nodes, monitoring, the WebSocket support and bcrypt. Each is a dynamic import, so
// the bundle keeps it in a chunk of its own that a server without that block never reads
// or compiles (README, "Footprint"). A part that cannot be loaded stops the start with an
// error naming it.
import { Effect } from "effect"

export class StartupError extends Error {
  readonly _tag = "StartupError"
}

/** `load` (a dynamic import), failing with a StartupError that names `part`. */
export const loadPart = <A>(part: string, load: () => Promise<A>): Effect.Effect<A, StartupError> =>
  Effect.tryPromise({
    try: load,
    catch: (e) => new StartupError(`Could not load the ${part}: ${e instanceof Error ? e.message : String(e)}`)
  })
