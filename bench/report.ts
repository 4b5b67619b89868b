// Summaries, the printed table, the JSON file and the SVG chart.
import type { JobResult } from "./loadgen/jobs.js"
import type { Metric, Scenario } from "./scenarios.js"

export interface Stat {
  readonly median: number
  readonly min: number
  readonly max: number
}

export interface Cell {
  readonly scenario: string
  readonly size: number
  readonly system: string
  readonly runs: Array<JobResult & { readonly serverPeakRssMB?: number }>
}

export interface CellSummary {
  readonly scenario: string
  readonly size: number
  readonly system: string
  readonly iterations: number
  /** Runs that produced numbers (ok, even if lossy). */
  readonly measured: number
  readonly stats: Record<string, Stat>
  readonly lossy: boolean
  readonly loss: number
  readonly excess: number
  readonly failed: boolean
  readonly notes: ReadonlyArray<string>
}

export interface Ratio {
  readonly scenario: string
  readonly size: number
  readonly metric: string
  readonly peer: string
  /** Switchyard / peer on the metric's raw values; undefined when not comparable. */
  readonly ratio: number | undefined
  readonly better: "higher" | "lower"
  /** Why there is no ratio, or a caveat on it. */
  readonly note?: string
}

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

export const summarize = (cell: Cell): CellSummary => {
  const good = cell.runs.filter((r) => r.ok)
  const keys = new Set<string>()
  for (const r of good) for (const k of Object.keys(r.metrics)) keys.add(k)
  const stats: Record<string, Stat> = {}
  for (const k of keys) {
    const xs = good.map((r) => r.metrics[k]).filter((x): x is number => typeof x === "number" && Number.isFinite(x))
    if (xs.length > 0) stats[k] = { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) }
  }
  const peaks = cell.runs.map((r) => r.serverPeakRssMB).filter((x): x is number => x !== undefined)
  if (peaks.length > 0) stats.peakRssMB = { median: median(peaks), min: Math.min(...peaks), max: Math.max(...peaks) }
  const loss = cell.runs.reduce((a, r) => a + r.loss, 0)
  const excess = cell.runs.reduce((a, r) => a + r.excess, 0)
  const notes = new Set<string>()
  for (const r of cell.runs) {
    if (!r.ok && r.error !== undefined) notes.add(r.error.split("\n")[0]!)
    for (const e of r.errors) notes.add(e)
  }
  return {
    scenario: cell.scenario,
    size: cell.size,
    system: cell.system,
    iterations: cell.runs.length,
    measured: good.length,
    stats,
    lossy: loss > 0 || excess > 0,
    loss,
    excess,
    failed: good.length === 0,
    notes: [...notes].slice(0, 5)
  }
}

export const ratios = (
  scenarios: ReadonlyArray<Scenario>,
  summaries: ReadonlyArray<CellSummary>,
  subject: string
): Array<Ratio> => {
  const out: Array<Ratio> = []
  for (const sc of scenarios) {
    for (const m of sc.metrics) {
      if (m.compare !== true) continue
      const better = m.better ?? "higher"
      for (const me of summaries.filter((s) => s.scenario === sc.id && s.system === subject)) {
        for (const peer of summaries.filter((s) => s.scenario === sc.id && s.size === me.size && s.system !== subject)) {
          const base = { scenario: sc.id, size: me.size, metric: m.key, peer: peer.system, better }
          if (me.failed || peer.failed) {
            out.push({ ...base, ratio: undefined, note: me.failed ? `${subject} failed` : "peer failed" })
          } else if (me.lossy) {
            out.push({ ...base, ratio: undefined, note: `${subject} lost ${sc.lossUnit ?? "messages"}` })
          } else {
            const a = me.stats[m.key]?.median
            const b = peer.stats[m.key]?.median
            const ratio = a !== undefined && b !== undefined && b !== 0 ? a / b : undefined
            out.push(peer.lossy ? { ...base, ratio, note: `peer lost ${sc.lossUnit ?? "messages"}` } : { ...base, ratio })
          }
        }
      }
    }
  }
  return out
}

// ---------------------------------------------------------------- formatting

export const sizeLabel = (n: number): string =>
  n === 0 ? "-" : n >= 1024 && n % 1024 === 0 ? `${n / 1024} KiB` : `${n} B`

export const fmt = (format: Metric["format"], x: number | undefined): string => {
  if (x === undefined || !Number.isFinite(x)) return "-"
  switch (format) {
    case "rate":
      return x >= 1e6 ? `${(x / 1e6).toFixed(2)}M` : x >= 1e3 ? `${(x / 1e3).toFixed(1)}k` : x.toFixed(0)
    case "us":
      return x >= 1000 ? `${(x / 1000).toFixed(2)}ms` : x >= 10 ? x.toFixed(0) : x.toFixed(2)
    case "pct":
      return `${x.toFixed(0)}%`
    case "mb":
      return x >= 100 ? x.toFixed(0) : x.toFixed(1)
    case "kb":
      return x.toFixed(1)
    case "num":
      return Number.isInteger(x) ? String(x) : x.toFixed(2)
  }
}

const pad = (s: string, w: number): string => (s.length >= w ? s : s + " ".repeat(w - s.length))

const ratioText = (r: Ratio): string => {
  if (r.ratio === undefined) return `n/a (${r.note ?? "missing"})`
  const t = `${r.ratio.toFixed(2)}×`
  return r.note !== undefined ? `${t} (${r.note})` : t
}

/** Plain-text tables, one per scenario, as printed at the end of a run. */
export const renderTable = (
  scenarios: ReadonlyArray<Scenario>,
  summaries: ReadonlyArray<CellSummary>,
  rs: ReadonlyArray<Ratio>,
  subject: string,
  note: (sc: Scenario) => string | undefined = () => undefined
): string => {
  const lines: Array<string> = []
  for (const sc of scenarios) {
    const rows = summaries.filter((s) => s.scenario === sc.id)
    if (rows.length === 0) continue
    const head = sc.metrics[0]!
    const compared = sc.metrics.filter((m) => m.compare === true)
    lines.push("")
    lines.push(
      `== ${sc.title} — medians, ${head.label} with min–max; ratio = ${subject}/peer (${compared
        .map((m) => `${m.label}: ${m.better ?? "higher"} is better`)
        .join(", ")})`
    )
    const extra = note(sc)
    if (extra !== undefined) lines.push(`   ${extra}`)
    const cols: Array<[string, number]> = [
      ["size", 7],
      ["system", 12],
      [head.label + " (min–max)", 26],
      ...sc.metrics.slice(1).map((m): [string, number] => [m.label, Math.max(8, m.label.length + 1)]),
      ["loss", 8]
    ]
    lines.push(cols.map(([h, w]) => pad(h, w)).join(" ") + " ratios")
    for (const row of rows) {
      const st = (k: string) => row.stats[k]
      const h = st(head.key)
      const headText = row.failed
        ? "FAILED"
        : `${fmt(head.format, h?.median)} (${fmt(head.format, h?.min)}–${fmt(head.format, h?.max)})`
      const cells = [
        sizeLabel(row.size),
        row.system,
        headText,
        ...sc.metrics.slice(1).map((m) => (row.failed ? "" : fmt(m.format, st(m.key)?.median))),
        row.lossy ? `LOSSY ${row.loss}${row.excess > 0 ? ` +${row.excess}dup` : ""}` : "0"
      ]
      const mine = row.system === subject ? rs.filter((r) => r.scenario === sc.id && r.size === row.size) : []
      const rat =
        mine.length > 0 && mine.every((r) => r.ratio === undefined && r.note === mine[0]!.note)
          ? `n/a (${mine[0]!.note ?? "missing"})`
          : mine.map((r) => `${compared.length > 1 ? `${r.metric} ` : ""}vs ${r.peer} ${ratioText(r)}`).join("; ")
      lines.push(cells.map((c, i) => pad(c, cols[i]![1])).join(" ") + " " + rat)
      const gen = st("genCpuPct")?.median
      if (gen !== undefined && gen > 90 && !row.failed) {
        lines.push(`${pad("", 8)}↑ load generator at ${gen.toFixed(0)}% of a core: it may be the bottleneck here`)
      }
      for (const n of row.notes) lines.push(`${pad("", 8)}! ${row.system}: ${n}`)
    }
  }
  return lines.join("\n")
}

// ---------------------------------------------------------------- SVG chart

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/**
 * A grid of bar-chart panels: one per (scenario, charted metric); groups are message
 * sizes, bars are systems, whiskers are min–max over the iterations. A bar from a
 * lossy or failed cell is drawn hatched red and labelled, never as a plain bar.
 */
export const renderSvg = (
  scenarios: ReadonlyArray<Scenario>,
  summaries: ReadonlyArray<CellSummary>,
  systems: ReadonlyArray<{ readonly name: string; readonly color: string }>,
  subject: string,
  caption: string
): string => {
  const panels: Array<{ sc: Scenario; m: Metric }> = []
  for (const sc of scenarios) {
    if (!summaries.some((s) => s.scenario === sc.id)) continue
    for (const m of sc.metrics) if (m.chart === true) panels.push({ sc, m })
  }
  const used = systems.filter((sys) => summaries.some((s) => s.system === sys.name))
  const PW = 480
  const PH = 290
  const COLS = 2
  const TOP = 78
  const W = PW * COLS
  const H = TOP + Math.ceil(panels.length / COLS) * PH + 10
  const out: Array<string> = []
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`
  )
  out.push(
    `<defs><pattern id="lossy" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fbe3e3"/><line x1="0" y1="0" x2="0" y2="6" stroke="#c62828" stroke-width="3"/></pattern></defs>`
  )
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`)
  out.push(`<text x="12" y="20" font-size="15" font-weight="bold">Switchyard benchmark</text>`)
  out.push(`<text x="12" y="38" fill="#555">${esc(caption)}</text>`)
  let lx = 12
  for (const sys of used) {
    out.push(`<rect x="${lx}" y="47" width="12" height="10" fill="${sys.color}"/>`)
    out.push(`<text x="${lx + 16}" y="56">${esc(sys.name)}</text>`)
    lx += 30 + sys.name.length * 7
  }
  out.push(`<rect x="${lx}" y="47" width="12" height="10" fill="url(#lossy)"/>`)
  out.push(`<text x="${lx + 16}" y="56">lost messages / failed (not comparable)</text>`)
  out.push(
    `<text x="12" y="71" fill="#555">bars scaled to the largest in each group, labels absolute; under each group: ratio = ${esc(
      subject
    )}/peer</text>`
  )

  panels.forEach(({ sc, m }, i) => {
    const ox = (i % COLS) * PW
    const oy = TOP + Math.floor(i / COLS) * PH
    const L = ox + 62
    const R = ox + PW - 16
    const T = oy + 42
    const B = oy + PH - 48
    const rows = summaries.filter((s) => s.scenario === sc.id)
    const sizes = [...new Set(rows.map((r) => r.size))].sort((a, b) => a - b)
    // Each size group is scaled to its own largest value (whiskers included), so a
    // 16 KiB group is as readable as a 16 B one; the labels carry the absolute values.
    const groupTop = new Map<number, number>()
    for (const r of rows) {
      const st = r.stats[m.key]
      if (st !== undefined) groupTop.set(r.size, Math.max(groupTop.get(r.size) ?? 0, st.max))
    }
    const y = (size: number, v: number): number => {
      const top = groupTop.get(size) ?? 0
      return top > 0 ? B - ((B - T) * v) / top : B
    }
    // shrink long titles to the panel's width (about 0.6 em per character)
    const title = `${sc.title} — ${m.label} (${m.better ?? "higher"} is better)`
    const fs = Math.min(12, Math.floor(((PW - 24) / (title.length * 0.6)) * 10) / 10)
    out.push(`<text x="${ox + 12}" y="${oy + 18}" font-size="${fs}" font-weight="bold">${esc(title)}</text>`)
    for (let k = 0; k <= 4; k++) {
      const yy = B - ((B - T) * k) / 4
      out.push(`<line x1="${L}" y1="${yy}" x2="${R}" y2="${yy}" stroke="#e4e4e4"/>`)
      out.push(`<text x="${L - 5}" y="${yy + 4}" text-anchor="end" fill="#555">${k * 25}%</text>`)
    }
    out.push(`<line x1="${L}" y1="${B}" x2="${R}" y2="${B}" stroke="#333"/>`)
    const gw = (R - L) / Math.max(1, sizes.length)
    const bw = Math.min(36, (gw - 14) / Math.max(1, used.length))
    sizes.forEach((size, g) => {
      const gx = L + g * gw + (gw - bw * used.length) / 2
      out.push(
        `<text x="${L + g * gw + gw / 2}" y="${B + 15}" text-anchor="middle">${esc(
          size === 0 ? "" : sizeLabel(size)
        )}</text>`
      )
      // ratio line under the group: subject / each peer, only when both are clean
      const me = rows.find((x) => x.size === size && x.system === subject)
      const peers = rows.filter((x) => x.size === size && x.system !== subject)
      if (me !== undefined && peers.length > 0) {
        // one line per peer, so several peers fit under a narrow group
        peers.forEach((p, k) => {
          const a = me.stats[m.key]?.median
          const b = p.stats[m.key]?.median
          const txt =
            me.failed || me.lossy || p.failed || a === undefined || b === undefined || b === 0
              ? `${p.system}: n/a`
              : `${(a / b).toFixed(2)}× ${p.system}${p.lossy ? " (lossy)" : ""}`
          out.push(
            `<text x="${L + g * gw + gw / 2}" y="${B + 26 + k * 10}" text-anchor="middle" font-size="9" fill="#555">${esc(txt)}</text>`
          )
        })
      }
      used.forEach((sys, j) => {
        const r = rows.find((x) => x.size === size && x.system === sys.name)
        if (r === undefined) return
        const x = gx + j * bw
        const st = r.stats[m.key]
        const bad = r.failed || r.lossy || st === undefined
        if (bad) {
          const v = st?.median ?? 0
          const yy = st === undefined ? B - 40 : Math.min(B - 12, y(size, v))
          out.push(
            `<rect x="${x + 1}" y="${yy}" width="${bw - 2}" height="${B - yy}" fill="url(#lossy)" stroke="#c62828"/>`
          )
          out.push(
            `<text x="${x + bw / 2}" y="${yy - 4}" text-anchor="middle" fill="#c62828" font-size="9">${
              r.failed ? "FAIL" : "LOSS"
            }</text>`
          )
          return
        }
        const yMed = y(size, st.median)
        const yMax = y(size, st.max)
        const yMin = y(size, st.min)
        out.push(`<rect x="${x + 1}" y="${yMed}" width="${bw - 2}" height="${B - yMed}" fill="${sys.color}"/>`)
        const cx = x + bw / 2
        out.push(
          `<path d="M${cx} ${yMax}V${yMin}M${cx - 3} ${yMax}H${cx + 3}M${cx - 3} ${yMin}H${cx + 3}" stroke="#222" fill="none"/>`
        )
        out.push(
          `<text x="${cx}" y="${y(size, st.max) - 4}" text-anchor="middle" font-size="9" fill="#333">${esc(
            fmt(m.format, st.median)
          )}</text>`
        )
      })
    })
  })
  out.push(`</svg>`)
  return out.join("\n")
}

// ---------------------------------------------------------------- Markdown summary

/** Short peer names for the Markdown cells. */
const PEER_ABBREV: Record<string, string> = { "nats-server": "N", mosquitto: "M", aedes: "A", "switchyard-b": "B" }

const mdRatio = (r: Ratio): string => {
  const who = PEER_ABBREV[r.peer] ?? r.peer
  if (r.ratio === undefined) return `${who} n/a`
  const x = r.ratio >= 10 ? r.ratio.toFixed(0) : r.ratio.toFixed(2)
  return `${who} ${x}×${r.note !== undefined ? " (peer lossy)" : ""}`
}

/** One cell: the subject's median, then its ratio to each peer ("2.90M · N 1.05× · M 19×"). */
const mdCell = (
  sc: Scenario,
  m: Metric,
  summaries: ReadonlyArray<CellSummary>,
  rs: ReadonlyArray<Ratio>,
  subject: string,
  size: number
): string => {
  const me = summaries.find((s) => s.scenario === sc.id && s.size === size && s.system === subject)
  if (me === undefined) return ""
  if (me.failed) return "FAILED"
  if (me.lossy) return `**LOST ${me.loss}**`
  const head = fmt(m.format, me.stats[m.key]?.median)
  if (m.own === true) {
    // each system's own figure, side by side ("0.97 · N 1.01")
    const others = summaries
      .filter((s) => s.scenario === sc.id && s.size === size && s.system !== subject)
      .map((s) => `${PEER_ABBREV[s.system] ?? s.system} ${s.failed ? "n/a" : s.lossy ? "lossy" : fmt(m.format, s.stats[m.key]?.median)}`)
    return [head, ...others].join(" · ")
  }
  const peers = rs.filter((r) => r.scenario === sc.id && r.size === size && r.metric === m.key).map(mdRatio)
  return [head, ...peers].join(" · ")
}

/**
 * The run as Markdown, for the README: every compared metric of every scenario that ran,
 * sizes as columns, each cell the subject's median and its ratio to each peer; then the
 * verdict on the targets. `header` says when, where and what was measured.
 */
export const renderMarkdown = (
  scenarios: ReadonlyArray<Scenario>,
  summaries: ReadonlyArray<CellSummary>,
  rs: ReadonlyArray<Ratio>,
  checks: ReadonlyArray<{ readonly what: string; readonly cells: ReadonlyArray<{ readonly label: string; readonly ratio: number | undefined; readonly met: boolean; readonly shown?: string }> }>,
  subject: string,
  header: string
): string => {
  const ran = scenarios.filter((sc) => summaries.some((s) => s.scenario === sc.id))
  const sized = ran.filter((sc) => sc.sized)
  const unsized = ran.filter((sc) => !sc.sized)
  const sizes = [...new Set(summaries.filter((s) => s.size > 0).map((s) => s.size))].sort((a, b) => a - b)
  const peers = [...new Set(summaries.map((s) => s.system).filter((s) => s !== subject))]
  const legend = peers.map((p) => `${PEER_ABBREV[p] ?? p} = ${p}`).join(", ")
  const lines: Array<string> = [header, ""]
  lines.push(
    `Each cell: ${subject}'s median, then ${subject} ÷ peer (${legend}); for latency and memory lower is better, for rates higher.${
      ran.some((sc) => sc.metrics.some((m) => m.own === true)) ? " A \"÷ 1 node\" row gives each system's own ratio to its single server, side by side." : ""
    }`
  )
  if (sized.length > 0) {
    lines.push("", `| scenario | metric | ${sizes.map(sizeLabel).join(" | ")} |`, `|---|---|${sizes.map(() => "---").join("|")}|`)
    for (const sc of sized) {
      for (const m of sc.metrics.filter((x) => x.compare === true || x.own === true)) {
        const cells = sizes.map((size) => mdCell(sc, m, summaries, rs, subject, size))
        lines.push(`| ${sc.title} | ${m.label} | ${cells.join(" | ")} |`)
      }
    }
  }
  if (unsized.length > 0) {
    lines.push("", "| scenario | metric | result |", "|---|---|---|")
    for (const sc of unsized) {
      for (const m of sc.metrics.filter((x) => x.compare === true || x.own === true)) {
        lines.push(`| ${sc.title} | ${m.label} | ${mdCell(sc, m, summaries, rs, subject, 0)} |`)
      }
    }
  }
  if (checks.length > 0) {
    const cells = checks.flatMap((c) => c.cells)
    lines.push("", `Targets: ${cells.filter((c) => c.met).length} of ${cells.length} cells meet theirs.`, "")
    for (const c of checks) {
      const all = c.cells.every((x) => x.met)
      const detail = c.cells
        .map((x) => `${x.label} ${x.shown !== undefined && x.ratio === undefined && !x.shown.startsWith("n/a") ? x.shown : x.ratio === undefined ? "n/a" : `${x.ratio.toFixed(2)}×`}${x.met ? "" : " ✗"}`)
        .join(", ")
      lines.push(`- ${all ? "**met**" : "**not met**"} — ${c.what}: ${detail}`)
    }
  }
  return lines.join("\n") + "\n"
}
