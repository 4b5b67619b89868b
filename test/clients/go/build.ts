// nats.go (Debian's golang-github-nats-io-go-nats-dev) built from test/clients/go/main.go
// without module downloads (GOPATH mode), for the client matrix and the cluster tests.
import { execFileSync } from "node:child_process"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { fileExists, hasCommand, INSTALL, requireInstalled } from "../run.js"

const GOPATH = "/usr/share/gocode"

/** Builds the case program into `bin`; throws with the install command when Go or nats.go is missing. */
export const buildNatsGo = (bin: string): void => {
  requireInstalled("Go", () => hasCommand("go"), INSTALL.go)
  requireInstalled("nats.go", () => fileExists(join(GOPATH, "src/github.com/nats-io/nats.go/nats.go")), INSTALL.go)
  execFileSync("go", ["build", "-o", bin, "."], {
    cwd: fileURLToPath(new URL(".", import.meta.url)),
    // GOPATH mode: Debian's source tree, no module download. The build cache outlives the
    // run (a second build takes a second) and does not need $HOME.
    env: { ...process.env, GO111MODULE: "off", GOPATH, GOFLAGS: "", GOCACHE: process.env.GOCACHE ?? join(tmpdir(), "switchyard-gocache") },
    stdio: "pipe"
  })
}
