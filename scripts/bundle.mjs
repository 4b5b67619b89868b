// The shipped server: dist/src (tsc's output) bundled by esbuild into dist/switchyard/.
// One file per load step instead of ~150 modules and the whole `effect` barrel: start-up
// went from ~850 ms to ~200 ms and idle RSS from ~125 MiB to ~60 MiB (README, "Footprint").
// main.js stays a small entry: it installs the signal guard and only then loads the
// program chunk (a dynamic import, kept as a separate file by `splitting`), so SIGUSR1
// can never open Node's inspector while the bulk of the server loads; the program loads
// the server (another chunk) once the configuration checked out. What only some
// configurations use is a chunk of its own, loaded by the server when its block is there
// (src/server/parts.ts): routes, leaf nodes, monitoring, the WebSocket support (`ws`) and
// bcrypt; a server without them never reads or compiles them.
import { build } from "esbuild"
import { readFileSync, rmSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

// node:http and node:https are loaded with require(), not imported as ES modules: an ES
// import builds the module's namespace from every export, and that reads the lazy ones;
// on Node 22 `import "node:http"` so loads undici, http2, worker_threads, assert, zlib and
// perf_hooks, none of them used: idle RSS 71.4-71.9 -> 68.0-68.1 MiB. (Doing the same for
// every built-in gained nothing more on Node 22 and cost Node 20 up to 9 MiB of glibc heap.)
const httpByRequire = {
  name: "http-by-require",
  setup(b) {
    b.onResolve({ filter: /^node:https?$/ }, (args) =>
      args.kind === "require-call" ? { path: args.path, external: true } : { path: args.path, namespace: "builtin" })
    b.onLoad({ filter: /.*/, namespace: "builtin" }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)})`, loader: "js" }))
  }
}

const root = join(dirname(fileURLToPath(import.meta.url)), "..")

// Each part the server loads lazily (a relative dynamic import in the server's own code:
// src/server/parts.ts's callers, transport-node.ts) imports the server's entry too, in
// the bundle only. The server's modules a part uses are then reached from the same entry
// points as all the others, and the server stays one chunk (a shared chunk-*.js behind
// the tiny entry-*.js). Left alone, esbuild cuts the server into a chunk per set of parts
// sharing a module, 17 files loaded at start instead of 8, and loading that many smaller
// files left ~5 MiB more of glibc's heap resident for good (Node 22, measured: [heap]
// 7.2 MiB instead of 2.3, idle RSS 66 instead of 61 MiB).
const serverEntry = join(root, "dist/src/server/entry.js")
const alwaysLoaded = new Set([join(root, "dist/src/main.js"), join(root, "dist/src/program.js")])
const partsWithServer = {
  name: "parts-with-server",
  setup(b) {
    const parts = new Set()
    b.onResolve({ filter: /^\./ }, (args) => {
      if (args.kind === "dynamic-import" && args.importer.startsWith(join(root, "dist/src/")) && !alwaysLoaded.has(args.importer)) {
        parts.add(resolve(args.resolveDir, args.path))
      }
      return undefined
    })
    b.onLoad({ filter: /\.js$/ }, (args) =>
      parts.has(args.path)
        ? { contents: `${readFileSync(args.path, "utf8")}\nimport ${JSON.stringify(serverEntry)}\n`, loader: "js", resolveDir: dirname(args.path) }
        : undefined)
  }
}
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
  // Fully minified, and the server a chunk of its own (program.ts imports server/entry.ts
  // dynamically): compiling one chunk makes V8 allocate a parse zone of ~15 bytes per
  // byte of source, which glibc often cannot give back; one 1.27 MB chunk kept ~12 MiB
  // of it for good (Node 20: 70 MiB idle instead of 58). Stack traces name the source
  // through the linked map with node --enable-source-maps.
  minify: true,
  sourcemap: "linked",
  legalComments: "linked",
  // CommonJS dependencies (ws) call require(); ES modules have none of their own.
  banner: { js: "import { createRequire as __switchyardRequire } from 'node:module'; const require = __switchyardRequire(import.meta.url);" },
  plugins: [httpByRequire, partsWithServer],
  logLevel: "warning"
})
