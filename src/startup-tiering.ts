// V8's optimizing compiler (TurboFan) held back until the server does real work. Start-up
// runs the Effect runtime hot for a few hundred milliseconds, so V8 optimizes a dozen of
// its functions (measured on Node 22: 14, one taking 46 ms to compile) for code that
// never runs hot again; and any later call of them (one health check) finishes the job.
// Compiling reads 5-6 MiB of the compiler's own code out of the node executable, which
// then stays resident: an idle Node 22 server measured 69-70 MiB with it, 63.5 without.
//
// So the compiler is off from the start and comes back once the server is busy: when
// RELEASE_BYTES were read from its sockets since it was ready, or it spent RELEASE_CPU_MS
// of CPU time since then (checked as it reads), or start-up itself takes longer than
// RELEASE_AFTER_MS (a large store's recovery is not run unoptimized). A busy server gets
// it within its first megabyte; one that only answers probes and health checks never
// needs it. Only on V8 12 (Node 22) and later, whose idle trim returns the rest
// (server/gc-pacer.ts), and never when the operator set V8's tiering flags.
// Dependency-free: it runs before anything loads.
import * as v8 from "node:v8"
import { setsNodeOption, trimsMemory } from "./v8-runtime.js"

/** Start-up that takes longer than this gets the compiler back. */
export const RELEASE_AFTER_MS = 1000
/** Bytes read from sockets, once ready, that bring the compiler back. */
export const RELEASE_BYTES = 1024 * 1024
/** CPU time (user + system) spent once ready that brings the compiler back. */
export const RELEASE_CPU_MS = 100

/** Node or V8 options that decide tiering themselves: then it is left alone. */
const TIERING_FLAG = /(^|\s)--(no-)?(turbofan|opt|max-opt|jitless|maglev|sparkplug)(=|\s|$)/

/**
 * Whether to hold the optimizing compiler back: on V8 12 and later, when none of the
 * process's Node options (command line or NODE_OPTIONS) touch tiering.
 */
export const holdsOptimizer = (v8Version: string, execArgv: ReadonlyArray<string>, nodeOptions: string | undefined): boolean =>
  trimsMemory(v8Version) && !setsNodeOption(TIERING_FLAG, execArgv, nodeOptions)

/** When the compiler comes back, as readings arrive (pure: the shell feeds it bytes and CPU time). */
export class ReleasePolicy {
  private ready = false
  private bytes = 0
  private cpuAtReady = 0

  /** The server is up; `cpuMs` the process's CPU time then. */
  serverReady(cpuMs: number): void {
    this.ready = true
    this.cpuAtReady = cpuMs
  }

  /** Start-up ran RELEASE_AFTER_MS: release unless the server is already up. */
  startupTimedOut(): boolean {
    return !this.ready
  }

  /** `n` bytes were read; `cpuMs` reads the CPU time when asked. Release? */
  read(n: number, cpuMs: () => number): boolean {
    if (!this.ready) return false
    this.bytes += n
    return this.bytes >= RELEASE_BYTES || cpuMs() - this.cpuAtReady >= RELEASE_CPU_MS
  }
}

let policy: ReleasePolicy | undefined

const cpuMs = (): number => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** Hold the optimizing compiler back until the server is busy (see above). */
export const holdOptimizer = (): void => {
  if (policy !== undefined || !holdsOptimizer(process.versions.v8, process.execArgv, process.env.NODE_OPTIONS)) return
  try {
    v8.setFlagsFromString("--no-turbofan")
  } catch {
    return // a runtime that refuses flags at run time: optimized as usual
  }
  const p = new ReleasePolicy()
  policy = p
  setTimeout(() => {
    if (policy === p && p.startupTimedOut()) releaseOptimizer()
  }, RELEASE_AFTER_MS).unref()
}

/** The server is up: from now on traffic decides. */
export const optimizerServerReady = (): void => policy?.serverReady(cpuMs())

/** `n` bytes were read from a socket (clients, routes, leaf connections). */
export const optimizerRead = (n: number): void => {
  if (policy !== undefined && policy.read(n, cpuMs)) releaseOptimizer()
}

/** The optimizing compiler back, for good. */
export const releaseOptimizer = (): void => {
  if (policy === undefined) return
  policy = undefined
  v8.setFlagsFromString("--turbofan")
}

/** Is it held back now? */
export const optimizerHeld = (): boolean => policy !== undefined
