// The shipped server: dist/src (tsc's output) bundled by esbuild into dist/switchyard/.
// One file per load step instead of ~150 modules and the whole `effect` barrel: start-up
// went from ~850 ms to ~200 ms and idle RSS from ~125 MiB to ~60 MiB (README, "Footprint").
// main.js stays a small entry: it installs the signal guard and only then loads the
// program chunk (a dynamic import, kept as a separate file by `splitting`), so SIGUSR1
// can never open Node's inspector while the bulk of the server loads.
import { build } from "esbuild"
import { rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const outdir = join(root, "dist/switchyard")
rmSync(outdir, { recursive: true, force: true })
await build({
  entryPoints: [join(root, "dist/src/main.js")],
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // Whitespace and syntax only: function names stay, so a stack trace in a log still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: "linked",
  legalComments: "linked",
  // CommonJS dependencies (ws) call require(); ES modules have none of their own.
  banner: { js: "import { createRequire as __switchyardRequire } from 'node:module'; const require = __switchyardRequire(import.meta.url);" },
  logLevel: "warning"
})
