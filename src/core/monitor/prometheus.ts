// The Prometheus text exposition format (version 0.0.4): metric families and their
// rendering, shared by Switchyard's own series (metrics.ts) and the series named as
// prometheus-nats-exporter names them (exporter-metrics.ts).

export const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

export type Labels = Readonly<Record<string, string>>
export interface Family {
  readonly name: string
  readonly type: "counter" | "gauge"
  readonly help: string
  readonly samples: ReadonlyArray<readonly [Labels, number]>
}

const escapeLabel = (v: string): string => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')
const escapeHelp = (v: string): string => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

const formatValue = (v: number): string =>
  Number.isNaN(v) ? "NaN" : v === Infinity ? "+Inf" : v === -Infinity ? "-Inf" : String(v)

export const render = (families: ReadonlyArray<Family>): string => {
  const lines: Array<string> = []
  for (const f of families) {
    if (f.samples.length === 0) continue
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`)
    for (const [labels, value] of f.samples) {
      const ls = Object.entries(labels)
      const labelText = ls.length === 0 ? "" : `{${ls.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`
      lines.push(`${f.name}${labelText} ${formatValue(value)}`)
    }
  }
  return lines.join("\n") + "\n"
}

export const one = (name: string, type: Family["type"], help: string, value: number): Family => ({
  name,
  type,
  help,
  samples: [[{}, value]]
})
