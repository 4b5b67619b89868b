// The log service: levels and timestamps a reload may change, the file it writes to
// (switched by a reload, reopened by SIGUSR1), and rotation by size with a bound on the
// number of files kept.
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import type { LogOptions } from "../../src/config/options.js"
import { FileSink, formatLogTime, makeLog, rotatedSuffix } from "../../src/services/log.js"
import { useTempDirs } from "../helpers/tmp.js"

const tmp = useTempDirs("sy-log-")

const base: LogOptions = { debug: false, trace: false, logtime: false, logFile: undefined }

describe("levels and timestamps", () => {
  it("a reconfigure turns debug and trace on and off, and their flags follow", () => {
    const lines: Array<string> = []
    const log = makeLog(base, (l) => lines.push(l))
    log.trace("t1")
    log.debug("d1")
    expect(log.traceEnabled).toBe(false)
    log.reconfigure({ ...base, trace: true })
    expect([log.traceEnabled, log.debugEnabled]).toEqual([true, true])
    log.trace("t2")
    log.debug("d2")
    log.reconfigure(base)
    log.trace("t3")
    log.info("i")
    expect(lines.map((l) => l.replace(/^\[\d+\] /, ""))).toEqual(["[TRC] t2\n", "[DBG] d2\n", "[INF] i\n"])
  })

  it("logtime_utc prints UTC, logtime local time", () => {
    const ms = Date.UTC(2026, 10, 24, 23, 59, 58, 123)
    expect(formatLogTime(ms, true)).toBe("2026/11/24 23:59:58.123000")
    const lines: Array<string> = []
    const log = makeLog({ ...base, logtime: true, logtimeUtc: true }, (l) => lines.push(l), () => ms)
    log.info("x")
    expect(lines[0]).toContain("2026/11/24 23:59:58.123000 [INF] x")
  })
})

describe("log_file", () => {
  const read = (f: string) => fs.readFileSync(f, "utf8")

  it("rotates at log_size_limit: the full file gets a timestamp suffix and a new one starts", () => {
    const dir = tmp()
    const file = path.join(dir, "s.log")
    let now = Date.UTC(2026, 0, 1, 0, 0, 0)
    const sink = new FileSink({ ...base, logFile: file, logSizeLimit: 100 }, () => now)
    const line = `${"x".repeat(59)}\n` // 60 bytes: the second line crosses 100
    sink.write(line)
    expect(fs.readdirSync(dir)).toEqual(["s.log"])
    sink.write(line)
    now += 1
    const backups = fs.readdirSync(dir).filter((n) => n !== "s.log")
    expect(backups).toEqual([`s.log${rotatedSuffix(Date.UTC(2026, 0, 1, 0, 0, 0))}`])
    expect(read(path.join(dir, backups[0]))).toBe(line + line)
    expect(read(file)).toBe("")
    sink.write("after\n")
    expect(read(file)).toBe("after\n")
    sink.close()
  })

  it("keeps logfile_max_num files, the live one included, deleting the oldest backups", () => {
    const dir = tmp()
    const file = path.join(dir, "s.log")
    let now = Date.UTC(2026, 0, 1, 0, 0, 0)
    const sink = new FileSink({ ...base, logFile: file, logSizeLimit: 10, logMaxNum: 3 }, () => now)
    for (let i = 0; i < 5; i++) {
      sink.write(`line ${i} is long\n`)
      now += 1000
    }
    const names = fs.readdirSync(dir).sort()
    expect(names).toHaveLength(3)
    expect(names).toContain("s.log")
    // The two newest backups are what is left: lines 3 and 4.
    const kept = names.filter((n) => n !== "s.log").map((n) => read(path.join(dir, n)))
    expect(kept).toEqual(["line 3 is long\n", "line 4 is long\n"])
    sink.close()
  })

  it("a backup name that exists already is not overwritten", () => {
    const dir = tmp()
    const file = path.join(dir, "s.log")
    const now = Date.UTC(2026, 0, 1)
    const sink = new FileSink({ ...base, logFile: file, logSizeLimit: 5 }, () => now)
    sink.write("first\n")
    sink.write("second\n")
    const backups = fs.readdirSync(dir).filter((n) => n !== "s.log").sort()
    expect(backups).toEqual([`s.log${rotatedSuffix(now)}`, `s.log${rotatedSuffix(now)}-1`])
    expect(backups.map((n) => read(path.join(dir, n)))).toEqual(["first\n", "second\n"])
    sink.close()
  })

  it("a reload moves the log to another file, and back to stderr; an unopenable file changes nothing", () => {
    const dir = tmp()
    const a = path.join(dir, "a.log")
    const b = path.join(dir, "b.log")
    let sink = new FileSink({ ...base, logFile: a })
    sink.write("one\n")
    sink = sink.retarget({ ...base, logFile: b }) as FileSink
    sink.write("two\n")
    expect([read(a), read(b)]).toEqual(["one\n", "two\n"])
    expect(() => sink.retarget({ ...base, logFile: path.join(dir, "missing", "c.log") })).toThrow(/ENOENT/)
    sink.write("three\n")
    expect(read(b)).toBe("two\nthree\n")
    const stderr = sink.retarget(base)
    expect(stderr).not.toBeInstanceOf(FileSink)
  })

  it("reopen follows the path after a rotation by another tool (logrotate)", () => {
    const dir = tmp()
    const file = path.join(dir, "s.log")
    const sink = new FileSink({ ...base, logFile: file })
    sink.write("before\n")
    fs.renameSync(file, `${file}.1`)
    expect(sink.reopen()).toBe(true)
    sink.write("after\n")
    expect([read(`${file}.1`), read(file)]).toEqual(["before\n", "after\n"])
    sink.close()
  })
})
