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
    proc.execve!(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], env)
  } catch {
    // e.g. a sandbox that forbids execve: glibc's defaults it is
  }
}
