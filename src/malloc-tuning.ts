// glibc's allocator, tuned for a server that handles large messages. Buffers of 128 KiB
// or more are mapped on their own and unmapped when freed, until one such buffer is
// freed: glibc then raises that threshold to its size (up to 32 MiB) and serves later
// large buffers from its heap, which keeps the freed memory resident. A server that
// writes 8 MiB store blocks and reads 500 KB MQTT payloads raises it within seconds,
// and a 1 GB MQTT backlog then left ~48 MiB behind that glibc never returned (issue
// #15: 115-139 MiB RSS with the backlog queued, 95-101 MiB with the threshold fixed).
// Setting the threshold fixes it and stops the raising; glibc reads it only from the
// environment at start, so the server starts itself again (same PID, same arguments)
// with MALLOC_MMAP_THRESHOLD_ set. Dependency-free: it runs before anything loads.
//
// The restart also gives V8's young generation a floor (YOUNG_FLOOR_MIB). The idle trim
// (server/gc-pacer.ts, V8 12 and later) shrinks it to V8's minimum, 1 MiB a semi-space,
// and traffic that leaves little alive never grows it back: a request-reply server then
// scavenged every ~17 ms, 0.3 ms each, and 1-2% of its requests waited for one (p99 on
// Node 22 1.2-1.5x nats-server's, against 0.8x on Node 20, whose young generation kept
// the 8 MiB start-up gave it). With the floor it scavenges a quarter as often; an idle
// server touches little of it (+0.5 MiB RSS measured).
import { setsNodeOption, trimsMemory } from "./v8-runtime.js"

/**
 * The threshold: glibc's own starting value, fixed (glibc raises it as large buffers are
 * freed; fixed, it stays). 256 KiB was used first: with the optimizing compiler held back
 * at start (startup-tiering.ts) it left 3 MiB more of V8's start-up allocations resident
 * in the heap of an idle Node 22 server than 128 KiB does (5.5 vs 2.4 MiB of `[heap]`),
 * and the 1 GB backlog measures the same with either.
 */
export const MMAP_THRESHOLD = "131072"

/** Set to anything to run with glibc's defaults (or set MALLOC_MMAP_THRESHOLD_ yourself). */
export const OPT_OUT = "SWITCHYARD_NO_MALLOC_TUNING"

/** V8's smallest young generation, per semi-space in MiB (`--min-semi-space-size`). */
export const YOUNG_FLOOR_MIB = 8

/** Node or V8 options that size the young generation themselves: then no floor is added. */
const SEMI_SPACE_FLAG = /(^|\s)--(min|max)[-_]semi[-_]space[-_]size(=|\s|$)/

/**
 * The Node options to start again with: the process's own, plus the young generation's
 * floor on V8 12 and later (whose idle trim shrinks it), unless the operator sized it
 * (command line or NODE_OPTIONS).
 */
export const tunedExecArgv = (
  execArgv: ReadonlyArray<string>,
  nodeOptions: string | undefined,
  v8Version: string
): ReadonlyArray<string> => {
  if (!trimsMemory(v8Version) || setsNodeOption(SEMI_SPACE_FLAG, execArgv, nodeOptions)) return execArgv
  return [...execArgv, `--min-semi-space-size=${YOUNG_FLOOR_MIB}`]
}

/**
 * The environment to start again with, or undefined to go on as is: on Linux, when the
 * runtime can replace the process (`process.execve`, Node 22.15 and later) and neither
 * the operator nor an earlier start set the threshold. Elsewhere (musl ignores these
 * variables; other systems have other allocators) nothing is done.
 */
export const tunedEnvironment = (
  env: NodeJS.ProcessEnv,
  platform: string,
  canExec: boolean
): NodeJS.ProcessEnv | undefined => {
  if (platform !== "linux" || !canExec) return undefined
  if (env.MALLOC_MMAP_THRESHOLD_ !== undefined || env[OPT_OUT] !== undefined) return undefined
  return { ...env, MALLOC_MMAP_THRESHOLD_: MMAP_THRESHOLD }
}

/**
 * Start again with the tuned environment when `tunedEnvironment` says so; does not return
 * then. If the runtime refuses, the server goes on with glibc's defaults.
 */
export const startTuned = (): void => {
  const proc = process as { execve?: (file: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv) => never }
  const env = tunedEnvironment(process.env, process.platform, typeof proc.execve === "function")
  if (env === undefined) return
  try {
    const execArgv = tunedExecArgv(process.execArgv, process.env.NODE_OPTIONS, process.versions.v8)
    proc.execve!(process.execPath, [process.execPath, ...execArgv, ...process.argv.slice(1)], env)
  } catch {
    // e.g. a sandbox that forbids execve: glibc's defaults it is
  }
}
