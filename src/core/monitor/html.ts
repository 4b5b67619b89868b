// `/`: an HTML index linking every monitoring endpoint under the base path.

const escapeHtml = (s: string): string =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

export interface IndexEntry {
  readonly path: string
  readonly title: string
  readonly description: string
}

export const buildIndexPage = (basePath: string, version: string, entries: ReadonlyArray<IndexEntry>): string => {
  const links = entries
    .map(
      (e) =>
        `    <li><a href="${escapeHtml(basePath + e.path)}">${escapeHtml(e.title)}</a> ` +
        `<code>${escapeHtml(e.path)}</code> — ${escapeHtml(e.description)}</li>`
    )
    .join("\n")
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Switchyard monitoring</title>
    <style>
      body { font-family: ui-sans-serif, system-ui, sans-serif; margin: 2rem; color: #223 }
      li { margin-bottom: .4rem } code { color: #778 }
    </style>
  </head>
  <body>
    <h1>Switchyard monitoring</h1>
    <p>Version ${escapeHtml(version)}. Every endpoint answers JSON (except <code>/metrics</code>, Prometheus text).</p>
    <ul>
${links}
    </ul>
  </body>
</html>
`
}
