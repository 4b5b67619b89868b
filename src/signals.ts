// The process signals the server answers. Node opens its inspector (a debugger any
// local user can attach to and run code in) on SIGUSR1 unless the process listens for
// that signal itself, so main.ts installs the listeners before the rest of the server
// loads; the running server then says what each signal does (`onSignal`).
// Dependency-free on purpose: it must load in the first milliseconds of the process.

/** Signals the process always listens for, whether or not a handler is registered yet. */
export const GUARDED_SIGNALS = ["SIGUSR1"] as const

export type GuardedSignal = (typeof GUARDED_SIGNALS)[number]

const handlers = new Map<GuardedSignal, () => void>()
let installed = false

/** Listen for every guarded signal now; until a handler is registered, the signal is ignored. */
export const installSignalGuard = (): void => {
  if (installed) return
  installed = true
  for (const sig of GUARDED_SIGNALS) process.on(sig, () => handlers.get(sig)?.())
}

/** What `sig` does from now on; the returned function takes it back. */
export const onSignal = (sig: GuardedSignal, handler: () => void): (() => void) => {
  handlers.set(sig, handler)
  return () => {
    if (handlers.get(sig) === handler) handlers.delete(sig)
  }
}
