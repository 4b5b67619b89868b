// nats.go (Debian's golang-github-nats-io-go-nats-dev) through the NATS client matrix:
// test/clients/go/main.go, built once per run without module downloads (GOPATH mode).
import { execFileSync } from "node:child_process"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { buildDir, fileExists, hasCommand, INSTALL, requireInstalled, runCase } from "../run.js"
import { describeNatsMatrix } from "../nats-matrix.js"

const GOPATH = "/usr/share/gocode"
const out = buildDir()
const bin = join(out.dir, "nats-go")

describeNatsMatrix({
  name: "nats.go 1.22.1 (Go)",
  connName: "matrix-go",
  lang: "go",
  prepare: async () => {
    requireInstalled("Go", () => hasCommand("go"), INSTALL.go)
    requireInstalled("nats.go", () => fileExists(join(GOPATH, "src/github.com/nats-io/nats.go/nats.go")), INSTALL.go)
    execFileSync("go", ["build", "-o", bin, "."], {
      cwd: fileURLToPath(new URL(".", import.meta.url)),
      // GOPATH mode: Debian's source tree, no module download. The build cache outlives the
      // run (a second build takes a second) and does not need $HOME.
      env: { ...process.env, GO111MODULE: "off", GOPATH, GOFLAGS: "", GOCACHE: process.env.GOCACHE ?? join(tmpdir(), "switchyard-gocache") },
      stdio: "pipe"
    })
  },
  run: (c, url, args, opts) => runCase([bin], c, url, args, opts),
  errors: {
    authorization: "ErrAuthorization",
    noResponders: "ErrNoResponders",
    maxPayload: "ErrMaxPayload",
    keyExists: "ErrKeyExists",
    keyNotFound: "ErrKeyNotFound"
  },
  objectStore: true,
  cleanup: () => out.remove()
})
