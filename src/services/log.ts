// The server log, in nats-server's shape: `[pid] 2006/01/02 15:04:05.000000 [INF] text`.
// It is a synchronous port (the hot path may log at trace level) with a layer that
// writes to stderr or a file and a layer that collects lines in memory for tests.
import * as fs from "node:fs"
import { Context, Effect, Layer } from "effect"
import type { LogOptions } from "../config/options.js"

export type LogLevel = "FTL" | "ERR" | "WRN" | "INF" | "DBG" | "TRC"

export interface LogService {
  readonly debugEnabled: boolean
  readonly traceEnabled: boolean
  readonly fatal: (msg: string) => void
  readonly error: (msg: string) => void
  readonly warn: (msg: string) => void
  readonly info: (msg: string) => void
  readonly debug: (msg: string) => void
  readonly trace: (msg: string) => void
  /** Close and open `log_file` again (logrotate moved it away: SIGUSR1). False when logging to stderr. */
  readonly reopen: () => boolean
}

export class Log extends Context.Tag("switchyard/Log")<Log, LogService>() {}

const pad = (n: number, w: number): string => String(n).padStart(w, "0")

/** nats-server's timestamp layout (local time), microsecond field from the millisecond clock. */
export const formatLogTime = (ms: number): string => {
  const d = new Date(ms)
  return `${d.getFullYear()}/${pad(d.getMonth() + 1, 2)}/${pad(d.getDate(), 2)} ` +
    `${pad(d.getHours(), 2)}:${pad(d.getMinutes(), 2)}:${pad(d.getSeconds(), 2)}.${pad(d.getMilliseconds() * 1000, 6)}`
}

export const makeLog = (
  options: LogOptions,
  write: (line: string) => void,
  now: () => number = Date.now,
  reopen: () => boolean = () => false
): LogService => {
  const prefix = `[${process.pid}] `
  const line = (level: LogLevel, msg: string) =>
    write(options.logtime ? `${prefix}${formatLogTime(now())} [${level}] ${msg}\n` : `${prefix}[${level}] ${msg}\n`)
  const noop = () => {}
  return {
    debugEnabled: options.debug || options.trace,
    traceEnabled: options.trace,
    fatal: (m) => line("FTL", m),
    error: (m) => line("ERR", m),
    warn: (m) => line("WRN", m),
    info: (m) => line("INF", m),
    debug: options.debug || options.trace ? (m) => line("DBG", m) : noop,
    trace: options.trace ? (m) => line("TRC", m) : noop,
    reopen
  }
}

/** Log to stderr, or append to `log_file` when one is configured. */
export const layerLog = (options: LogOptions): Layer.Layer<Log> =>
  Layer.scoped(
    Log,
    Effect.gen(function*() {
      if (options.logFile === undefined) {
        return makeLog(options, (l) => process.stderr.write(l))
      }
      const file = options.logFile
      // Reopened in place: lines written before and after a rotation all reach a file.
      const fd = yield* Effect.acquireRelease(
        Effect.sync(() => ({ current: fs.openSync(file, "a") })),
        (fd) => Effect.sync(() => fs.closeSync(fd.current))
      )
      const reopen = (): boolean => {
        const next = fs.openSync(file, "a")
        const old = fd.current
        fd.current = next
        fs.closeSync(old)
        return true
      }
      return makeLog(options, (l) => fs.writeSync(fd.current, l), Date.now, reopen)
    })
  )

/** Collects every line (tests assert on log output and on what never appears in it). */
export const layerMemoryLog = (
  lines: Array<string>,
  options: Partial<LogOptions> = {}
): Layer.Layer<Log> =>
  Layer.succeed(
    Log,
    makeLog({ debug: true, trace: true, logtime: false, logFile: undefined, ...options }, (l) => lines.push(l))
  )
