// Writes schemas/<endpoint>.json and schemas/openapi.json from the monitoring
// endpoint table. With --check it writes nothing and exits 1 when the checked-in
// files differ from what would be generated (CI runs `npm run schemas:check`).
import { mkdirSync, readdirSync, readFileSync, writeFileSync, existsSync, rmSync } from "node:fs"
import { join } from "node:path"
import { MonitorEndpoints } from "../src/core/monitor/endpoints.js"
import { generateSchemaFiles, MonitorApiVersion } from "../src/core/monitor/openapi.js"

const check = process.argv.includes("--check")
const dir = join(process.cwd(), "schemas")
const files = generateSchemaFiles(MonitorEndpoints, MonitorApiVersion)
const existing = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".json")) : []

const stale: Array<string> = []
for (const [name, contents] of Object.entries(files)) {
  const path = join(dir, name)
  const current = existsSync(path) ? readFileSync(path, "utf8") : undefined
  if (current === contents) continue
  stale.push(current === undefined ? `${name} (missing)` : `${name} (differs)`)
  if (!check) {
    mkdirSync(dir, { recursive: true })
    writeFileSync(path, contents)
  }
}
for (const name of existing) {
  if (name in files) continue
  stale.push(`${name} (no longer generated)`)
  if (!check) rmSync(join(dir, name))
}

if (check) {
  if (stale.length > 0) {
    console.error(`schemas/ is stale; run \`npm run schemas\`:\n  ${stale.join("\n  ")}`)
    process.exit(1)
  }
  console.log(`schemas/ is up to date (${Object.keys(files).length} files)`)
} else {
  console.log(stale.length > 0 ? `updated:\n  ${stale.join("\n  ")}` : "schemas/ already up to date")
}
