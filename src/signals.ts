// The process signals the server answers. Node opens its inspector (a debugger any
// local user can attach to and run code in) on SIGUSR1 unless the process listens for
// that signal itself, and SIGHUP and SIGUSR2 would kill it; so main.ts installs the
// listeners before the rest of the server loads, and the running server then says what
// each signal does (`onSignal`). One that arrives before that is kept and handed to
// the handler once it is registered (a reload or lame duck mode asked for during start).
// Dependency-free on purpose: it must load in the first milliseconds of the process.

/** Signals the process always listens for, whether or not a handler is registered yet. */
export const GUARDED_SIGNALS = ["SIGUSR1", "SIGHUP", "SIGUSR2"] as const

export type GuardedSignal = (typeof GUARDED_SIGNALS)[number]

/**
 * Signals with a handler only while the server runs; without one Node's default applies
 * (SIGQUIT: the process ends at once, as nats-server's does).
 */
export type RunningSignal = GuardedSignal | "SIGQUIT"

const handlers = new Map<RunningSignal, () => void>()
const pending = new Set<GuardedSignal>()
let installed = false

const isGuarded = (sig: RunningSignal): sig is GuardedSignal => (GUARDED_SIGNALS as ReadonlyArray<string>).includes(sig)

/** Listen for every guarded signal now; until a handler is registered, the signal waits for it. */
export const installSignalGuard = (): void => {
  if (installed) return
  installed = true
  for (const sig of GUARDED_SIGNALS) {
    process.on(sig, () => {
      const h = handlers.get(sig)
      if (h !== undefined) h()
      else pending.add(sig)
    })
  }
}

/** What `sig` does from now on; the returned function takes it back. */
export const onSignal = (sig: RunningSignal, handler: () => void): (() => void) => {
  handlers.set(sig, handler)
  let listener: (() => void) | undefined
  if (!isGuarded(sig)) {
    listener = () => handlers.get(sig)?.()
    process.on(sig, listener)
  } else if (pending.delete(sig)) {
    queueMicrotask(() => handlers.get(sig)?.())
  }
  return () => {
    if (handlers.get(sig) === handler) handlers.delete(sig)
    if (listener !== undefined) process.removeListener(sig, listener)
  }
}
