// The text forms nats-server prints: Go's time.Duration.String() (rtt), its
// own whole-second "uptime" form (uptime, idle), and RFC 3339 UTC timestamps.
// Pure functions of their arguments.

const fraction = (value: number, digits: number): string => {
  // value < 10^digits; render as ".ddd" without trailing zeros, or "" when zero.
  if (value === 0) return ""
  return "." + String(value).padStart(digits, "0").replace(/0+$/, "")
}

/**
 * Go's `time.Duration.String()` for a duration in nanoseconds: "0s", "350ns",
 * "1.5µs", "1.5ms", "2m3.4s", "1h0m0s", with a leading "-" when negative.
 */
export const formatGoDuration = (ns: number): string => {
  const n = Math.trunc(ns)
  if (n === 0 || !Number.isFinite(n)) return "0s"
  const neg = n < 0
  const u = Math.abs(n)
  const sign = neg ? "-" : ""
  if (u < 1_000) return `${sign}${u}ns`
  if (u < 1_000_000) return `${sign}${Math.floor(u / 1_000)}${fraction(u % 1_000, 3)}µs`
  if (u < 1_000_000_000) return `${sign}${Math.floor(u / 1_000_000)}${fraction(u % 1_000_000, 6)}ms`
  const totalSeconds = Math.floor(u / 1_000_000_000)
  const secondsText = `${totalSeconds % 60}${fraction(u % 1_000_000_000, 9)}s`
  const totalMinutes = Math.floor(totalSeconds / 60)
  if (totalMinutes === 0) return `${sign}${secondsText}`
  const hours = Math.floor(totalMinutes / 60)
  if (hours === 0) return `${sign}${totalMinutes}m${secondsText}`
  return `${sign}${hours}h${totalMinutes % 60}m${secondsText}`
}

/**
 * The round-trip time as nats-server prints it: truncated to whole microseconds
 * when between 1µs and 1ms, then Go's duration form.
 */
export const formatRtt = (ns: number): string => {
  const n = Math.max(0, Math.trunc(ns))
  return formatGoDuration(n > 1_000 && n < 1_000_000 ? n - (n % 1_000) : n)
}

/**
 * nats-server's uptime form over whole seconds: "45s", "5m0s", "3h2m1s",
 * "1d2h3m4s", "1y2d3h4m5s". Negative spans print as "0s".
 */
export const formatUptime = (ms: number): string => {
  const secs = Math.max(0, Math.floor(ms / 1000))
  const mins = Math.floor(secs / 60)
  const hrs = Math.floor(mins / 60)
  const days = Math.floor(hrs / 24)
  const years = Math.floor(days / 365)
  const s = secs % 60
  if (years > 0) return `${years}y${days % 365}d${hrs % 24}h${mins % 60}m${s}s`
  if (days > 0) return `${days}d${hrs % 24}h${mins % 60}m${s}s`
  if (hrs > 0) return `${hrs}h${mins % 60}m${s}s`
  if (mins > 0) return `${mins}m${s}s`
  return `${s}s`
}

/**
 * RFC 3339 UTC with fractional seconds: milliseconds always, microseconds when
 * the input has them (trailing zeros beyond milliseconds dropped).
 * `2024-05-01T12:00:00.000Z`, `2024-05-01T12:00:00.123456Z`.
 */
export const formatTimestamp = (ms: number): string => {
  // Outside Date's range (±8.64e15 ms) fall back to the epoch rather than throw.
  const safe = Number.isFinite(ms) && Math.abs(ms) < 8.64e15 ? ms : 0
  let whole = Math.floor(safe)
  let micros = Math.round((safe - whole) * 1000)
  if (micros === 1000) {
    whole += 1
    micros = 0
  }
  const iso = new Date(whole).toISOString() // YYYY-MM-DDTHH:MM:SS.mmmZ
  if (micros === 0) return iso
  return `${iso.slice(0, -1)}${String(micros).padStart(3, "0").replace(/0+$/, "")}Z`
}
