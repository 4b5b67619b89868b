// The committed lockfile must install on every platform: `npm ci` refuses a lockfile
// in which a package's optional dependency (the per-platform binaries of esbuild,
// rollup, ...) is missing, and npm records only the installing machine's when the
// lockfile is rewritten from an existing node_modules. CI runs this after `npm ci`.
// To regenerate the lockfile with every platform's packages:
//   rm -rf node_modules package-lock.json && npm install
import { readFileSync } from "node:fs"

const lock = JSON.parse(readFileSync(new URL("../package-lock.json", import.meta.url), "utf8"))
if (lock.lockfileVersion !== 3) {
  console.error(`package-lock.json: lockfileVersion ${lock.lockfileVersion}, expected 3 (npm 9 or newer)`)
  process.exit(1)
}
const packages = lock.packages
/** Where Node would find `dep` from the package at `path` (its node_modules, then each one above). */
const locate = (path, dep) => {
  let base = path
  for (;;) {
    const candidate = `${base === "" ? "" : `${base}/`}node_modules/${dep}`
    if (packages[candidate] !== undefined) return candidate
    if (base === "") return undefined
    const up = base.lastIndexOf("/node_modules/")
    base = up < 0 ? "" : base.slice(0, up)
  }
}
const missing = []
for (const [path, entry] of Object.entries(packages)) {
  for (const dep of Object.keys(entry.optionalDependencies ?? {})) {
    if (locate(path, dep) === undefined) missing.push(`${path === "" ? "(root)" : path} -> ${dep}`)
  }
}
if (missing.length > 0) {
  console.error(`package-lock.json lacks ${missing.length} optional package(s), so npm ci fails on other platforms:\n  ${missing.join("\n  ")}`)
  console.error("Regenerate it: rm -rf node_modules package-lock.json && npm install")
  process.exit(1)
}
const optional = Object.values(packages).filter((e) => e.optional === true).length
console.log(`package-lock.json: every optional dependency is recorded (${optional} optional packages, every platform's)`)
