// Durations and timestamps exactly as nats-server prints them.
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { formatGoDuration, formatRtt, formatTimestamp, formatUptime } from "../../src/core/monitor/format.js"

const GoDurationPattern = /^-?(0s|\d+(\.\d+)?(ns|µs|ms)|(\d+h)?(\d+m)?\d+(\.\d+)?s)$/
const UptimePattern = /^(\d+y)?(\d+d)?(\d+h)?(\d+m)?\d+s$/

/** Parse Go's duration text back to nanoseconds (exact for what formatGoDuration emits). */
const parseGo = (s: string): number => {
  const neg = s.startsWith("-")
  let rest = neg ? s.slice(1) : s
  let total = 0
  const unit: Record<string, number> = { ns: 1, "µs": 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 }
  while (rest.length > 0) {
    const m = /^(\d+)(?:\.(\d+))?(ns|µs|ms|s|m|h)/.exec(rest)
    if (m === null) throw new Error(`bad duration ${s}`)
    const scale = unit[m[3]]
    const frac = m[2] ?? ""
    total += Number(m[1]) * scale + (frac === "" ? 0 : Math.round((Number(frac) * scale) / 10 ** frac.length))
    rest = rest.slice(m[0].length)
  }
  return neg ? -total : total
}

describe("formatGoDuration (Go time.Duration.String)", () => {
  it.each([
    [0, "0s"],
    [1, "1ns"],
    [999, "999ns"],
    [1_000, "1µs"],
    [1_500, "1.5µs"],
    [350_000, "350µs"],
    [1_000_000, "1ms"],
    [1_500_000, "1.5ms"],
    [999_999_999, "999.999999ms"],
    [1e9, "1s"],
    [1.5e9, "1.5s"],
    [60e9, "1m0s"],
    [123.4e9, "2m3.4s"],
    [3600e9, "1h0m0s"],
    [3661e9 + 1, "1h1m1.000000001s"],
    [100 * 3600e9, "100h0m0s"],
    [-1_500_000, "-1.5ms"],
    [-61e9, "-1m1s"]
  ])("%d ns -> %s", (ns, text) => {
    expect(formatGoDuration(ns)).toBe(text)
  })

  it("round-trips every duration up to a year and always matches the published pattern", () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 52), max: 2 ** 52 }), (ns) => {
        const text = formatGoDuration(ns)
        expect(text).toMatch(GoDurationPattern)
        expect(parseGo(text)).toBe(ns)
      }),
      { numRuns: 2000 }
    )
  })
})

describe("formatRtt", () => {
  it("truncates to whole microseconds between 1µs and 1ms, like nats-server", () => {
    expect(formatRtt(0)).toBe("0s")
    expect(formatRtt(999)).toBe("999ns")
    expect(formatRtt(1_000)).toBe("1µs")
    expect(formatRtt(123_456)).toBe("123µs")
    expect(formatRtt(1_234_567)).toBe("1.234567ms")
    expect(formatRtt(2.5e9)).toBe("2.5s")
  })
})

describe("formatUptime (nats-server myUptime)", () => {
  it.each([
    [0, "0s"],
    [999, "0s"],
    [59_999, "59s"],
    [60_000, "1m0s"],
    [3_723_000, "1h2m3s"],
    [93_784_000, "1d2h3m4s"],
    [366 * 86_400_000, "1y1d0h0m0s"],
    [-5_000, "0s"]
  ])("%d ms -> %s", (ms, text) => {
    expect(formatUptime(ms)).toBe(text)
  })

  it("always matches the published pattern", () => {
    fc.assert(fc.property(fc.double({ min: -1e6, max: 1e13, noNaN: true }), (ms) => {
      expect(formatUptime(ms)).toMatch(UptimePattern)
    }))
  })
})

describe("formatTimestamp (RFC 3339 UTC with fractional seconds)", () => {
  it("prints milliseconds always and microseconds when present", () => {
    expect(formatTimestamp(0)).toBe("1970-01-01T00:00:00.000Z")
    expect(formatTimestamp(1.5)).toBe("1970-01-01T00:00:00.0015Z")
    expect(formatTimestamp(0.9999999)).toBe("1970-01-01T00:00:00.001Z")
    expect(formatTimestamp(1700000000123.456)).toBe("2023-11-14T22:13:20.123456Z")
    expect(formatTimestamp(-62135596800000)).toBe("0001-01-01T00:00:00.000Z")
  })

  it("never throws and always parses back to the same millisecond", () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 4e12, noNaN: true }), (ms) => {
        const text = formatTimestamp(ms)
        expect(text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3,6}Z$/)
        expect(Math.abs(Date.parse(text) - ms)).toBeLessThanOrEqual(1)
      })
    )
    expect(formatTimestamp(Number.NaN)).toBe("1970-01-01T00:00:00.000Z")
    expect(formatTimestamp(1e300)).toBe("1970-01-01T00:00:00.000Z")
  })
})
