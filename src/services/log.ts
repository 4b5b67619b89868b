// The server log, in nats-server's shape: `[pid] 2006/01/02 15:04:05.000000 [INF] text`.
// It is a synchronous port (the hot path may log at trace level) with a layer that
// writes to stderr or a file (rotated by size when asked) and a layer that collects
// lines in memory for tests. A reload may change its levels, timestamps and file.
import * as fs from "node:fs"
import * as path from "node:path"
import { Context, Effect, Layer } from "effect"
import type { LogOptions } from "../config/options.js"

export type LogLevel = "FTL" | "ERR" | "WRN" | "INF" | "DBG" | "TRC"

export interface LogService {
  /** Read on the hot path before building a trace line: one boolean, nothing else, when tracing is off. */
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
  /**
   * Levels, timestamps, file and rotation from now on (a configuration reload). A new
   * file is opened before the old one is let go: when it cannot be, this throws and
   * nothing changes.
   */
  readonly reconfigure: (options: LogOptions) => void
}

export class Log extends Context.Tag("switchyard/Log")<Log, LogService>() {}

const pad = (n: number, w: number): string => String(n).padStart(w, "0")

/** nats-server's timestamp layout (local time, or UTC with `logtime_utc`), microsecond field from the millisecond clock. */
export const formatLogTime = (ms: number, utc = false): string => {
  const d = new Date(ms)
  return utc
    ? `${d.getUTCFullYear()}/${pad(d.getUTCMonth() + 1, 2)}/${pad(d.getUTCDate(), 2)} ` +
        `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(d.getUTCMilliseconds() * 1000, 6)}`
    : `${d.getFullYear()}/${pad(d.getMonth() + 1, 2)}/${pad(d.getDate(), 2)} ` +
        `${pad(d.getHours(), 2)}:${pad(d.getMinutes(), 2)}:${pad(d.getSeconds(), 2)}.${pad(d.getMilliseconds() * 1000, 6)}`
}

/** Where formatted lines go. */
export interface LogSink {
  write(line: string): void
  /** Reopen the same file (logrotate); false when there is none. */
  reopen(): boolean
  /** The sink for `options` from now on: this one adjusted, or a new one (this one is then closed). May throw, changing nothing. */
  retarget(options: LogOptions): LogSink
  close(): void
}

const noop = (): void => {}

class Logger implements LogService {
  debugEnabled = false
  traceEnabled = false
  debug: (msg: string) => void = noop
  trace: (msg: string) => void = noop
  private prefix = `[${process.pid}] `
  private options: LogOptions

  constructor(options: LogOptions, private sink: LogSink, private readonly now: () => number) {
    this.options = options
    this.apply(options)
  }

  private line(level: LogLevel, msg: string): void {
    const o = this.options
    this.sink.write(o.logtime ? `${this.prefix}${formatLogTime(this.now(), o.logtimeUtc === true)} [${level}] ${msg}\n` : `${this.prefix}[${level}] ${msg}\n`)
  }

  private apply(o: LogOptions): void {
    this.options = o
    this.debugEnabled = o.debug || o.trace
    this.traceEnabled = o.trace
    this.debug = this.debugEnabled ? (m) => this.line("DBG", m) : noop
    this.trace = this.traceEnabled ? (m) => this.line("TRC", m) : noop
  }

  fatal = (m: string): void => this.line("FTL", m)
  error = (m: string): void => this.line("ERR", m)
  warn = (m: string): void => this.line("WRN", m)
  info = (m: string): void => this.line("INF", m)
  reopen = (): boolean => this.sink.reopen()

  reconfigure = (o: LogOptions): void => {
    this.sink = this.sink.retarget(o)
    this.apply(o)
  }

  close(): void {
    this.sink.close()
  }
}

/** A sink that only writes (tests, the simulation): a reload changes levels and timestamps, never where lines go. */
const plainSink = (write: (line: string) => void, reopen: () => boolean = () => false): LogSink => {
  const sink: LogSink = { write, reopen, retarget: () => sink, close: noop }
  return sink
}

export const makeLog = (
  options: LogOptions,
  write: (line: string) => void,
  now: () => number = Date.now,
  reopen: () => boolean = () => false
): LogService => new Logger(options, plainSink(write, reopen), now)

const stderrSink = (): LogSink => ({
  write: (l) => {
    process.stderr.write(l)
  },
  reopen: () => false,
  retarget(o) {
    return o.logFile === undefined ? this : new FileSink(o)
  },
  close: noop
})

/** The suffix a rotated log file gets, as nats-server names its backups: `.YYYY.MM.DD.hh.mm.ss.micros`. */
export const rotatedSuffix = (ms: number): string => {
  const d = new Date(ms)
  return `.${d.getFullYear()}.${pad(d.getMonth() + 1, 2)}.${pad(d.getDate(), 2)}.` +
    `${pad(d.getHours(), 2)}.${pad(d.getMinutes(), 2)}.${pad(d.getSeconds(), 2)}.${pad(d.getMilliseconds() * 1000, 6)}`
}

const ROTATED = /^\.\d{4}\.\d{2}\.\d{2}\.\d{2}\.\d{2}\.\d{2}\.\d{6}(-\d+)?$/

/**
 * `log_file`, appended to. With `log_size_limit` it is rotated once it reaches the
 * limit: renamed with a timestamp suffix and started afresh; with `logfile_max_num`
 * only that many files (the live one included) are kept, the oldest backups deleted.
 */
export class FileSink implements LogSink {
  private fd: number
  private size: number
  private sizeLimit: number
  private maxNum: number
  private readonly file: string
  private failed = false

  constructor(o: LogOptions, private readonly now: () => number = Date.now) {
    this.file = o.logFile!
    this.fd = fs.openSync(this.file, "a")
    this.size = fs.fstatSync(this.fd).size
    this.sizeLimit = o.logSizeLimit ?? 0
    this.maxNum = o.logMaxNum ?? 0
  }

  write(line: string): void {
    try {
      this.size += fs.writeSync(this.fd, line)
      if (this.sizeLimit > 0 && this.size >= this.sizeLimit) this.rotate()
      this.failed = false
    } catch (e) {
      // A full disk must not take the server down with it; the operator hears once per episode.
      if (!this.failed) process.stderr.write(`switchyard: cannot write the log file ${this.file}: ${(e as Error).message}\n`)
      this.failed = true
    }
  }

  reopen(): boolean {
    const next = fs.openSync(this.file, "a")
    fs.closeSync(this.fd)
    this.fd = next
    this.size = fs.fstatSync(next).size
    return true
  }

  retarget(o: LogOptions): LogSink {
    if (o.logFile === this.file) {
      this.sizeLimit = o.logSizeLimit ?? 0
      this.maxNum = o.logMaxNum ?? 0
      if (this.sizeLimit > 0 && this.size >= this.sizeLimit) this.rotate()
      return this
    }
    const next = o.logFile === undefined ? stderrSink() : new FileSink(o, this.now)
    this.close()
    return next
  }

  close(): void {
    try {
      fs.closeSync(this.fd)
    } catch {
      // already closed
    }
  }

  private rotate(): void {
    let backup = `${this.file}${rotatedSuffix(this.now())}`
    for (let n = 1; fs.existsSync(backup); n++) backup = `${this.file}${rotatedSuffix(this.now())}-${n}`
    fs.renameSync(this.file, backup)
    const next = fs.openSync(this.file, "a")
    fs.closeSync(this.fd)
    this.fd = next
    this.size = 0
    if (this.maxNum > 0) this.prune()
  }

  /** Keep the newest `maxNum - 1` backups (the live file is the last of `maxNum`). */
  private prune(): void {
    const dir = path.dirname(this.file)
    const base = path.basename(this.file)
    const backups = fs.readdirSync(dir)
      .filter((n) => n.startsWith(base) && ROTATED.test(n.slice(base.length)))
      .sort()
    for (const old of backups.slice(0, Math.max(0, backups.length - (this.maxNum - 1)))) {
      fs.rmSync(path.join(dir, old), { force: true })
    }
  }
}

/** Log to stderr, or append to `log_file` when one is configured. */
export const layerLog = (options: LogOptions): Layer.Layer<Log> =>
  Layer.scoped(
    Log,
    Effect.acquireRelease(
      Effect.sync(() => new Logger(options, options.logFile === undefined ? stderrSink() : new FileSink(options), Date.now)),
      (log) => Effect.sync(() => log.close())
    )
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
