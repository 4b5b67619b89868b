// Reading a server's CPU time and memory from /proc (Linux), by process id.
import { execFileSync } from "node:child_process"
import { closeSync, openSync, readFileSync, readSync } from "node:fs"

let clkTck: number | undefined

/** Kernel clock ticks per second (USER_HZ), for /proc/<pid>/stat times. */
export const clockTicks = (): number => {
  if (clkTck === undefined) {
    try {
      clkTck = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
    } catch {
      clkTck = 100
    }
  }
  return clkTck
}

/** utime + stime of the whole process (all threads), in microseconds; undefined if gone. */
export const processCpuMicros = (pid: number): number | undefined => {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "latin1")
    // fields after "(comm)" start at field 3 (state); utime is field 14, stime 15
    const rest = s.slice(s.lastIndexOf(")") + 2).split(" ")
    const ticks = Number(rest[11]) + Number(rest[12])
    return (ticks * 1e6) / clockTicks()
  } catch {
    return undefined
  }
}

/** A `VmXXX:` field of /proc/<pid>/status, in bytes (VmRSS, VmHWM, ...). */
export const processStatusBytes = (pid: number, field: "VmRSS" | "VmHWM"): number | undefined => {
  try {
    const s = readFileSync(`/proc/${pid}/status`, "latin1")
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(s)
    return m === null ? undefined : Number(m[1]) * 1024
  } catch {
    return undefined
  }
}

/**
 * The same readings through file descriptors opened up front, so they keep working
 * when this process has used up its descriptor limit (the idle-connections scenario).
 */
export class ProcWatch {
  private readonly statFd: number | undefined
  private readonly statusFd: number | undefined
  private readonly buf = Buffer.allocUnsafe(8192)

  constructor(readonly pid: number) {
    clockTicks()
    this.statFd = tryOpen(`/proc/${pid}/stat`)
    this.statusFd = tryOpen(`/proc/${pid}/status`)
  }

  private read(fd: number | undefined): string | undefined {
    if (fd === undefined) return undefined
    try {
      const n = readSync(fd, this.buf, 0, this.buf.length, 0)
      return this.buf.toString("latin1", 0, n)
    } catch {
      return undefined
    }
  }

  cpuMicros(): number | undefined {
    return this.cpuTimes()?.total
  }

  /** User and system (kernel) CPU time of the whole process, in microseconds. */
  cpuTimes(): { readonly total: number; readonly system: number } | undefined {
    const s = this.read(this.statFd)
    if (s === undefined) return undefined
    const rest = s.slice(s.lastIndexOf(")") + 2).split(" ")
    const us = 1e6 / clockTicks()
    const system = Number(rest[12]) * us
    return { total: Number(rest[11]) * us + system, system }
  }

  statusBytes(field: "VmRSS" | "VmHWM"): number | undefined {
    const s = this.read(this.statusFd)
    if (s === undefined) return undefined
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(s)
    return m === null ? undefined : Number(m[1]) * 1024
  }

  close(): void {
    for (const fd of [this.statFd, this.statusFd]) if (fd !== undefined) closeSync(fd)
  }
}

const tryOpen = (p: string): number | undefined => {
  try {
    return openSync(p, "r")
  } catch {
    return undefined
  }
}
