// nats.go (Debian's golang-github-nats-io-go-nats-dev) through the NATS client matrix:
// test/clients/go/main.go, built once per run without module downloads (GOPATH mode).
import { join } from "node:path"
import { buildDir, runCase } from "../run.js"
import { describeNatsMatrix } from "../nats-matrix.js"
import { buildNatsGo } from "./build.js"

const out = buildDir()
const bin = join(out.dir, "nats-go")

describeNatsMatrix({
  name: "nats.go 1.22.1 (Go)",
  connName: "matrix-go",
  lang: "go",
  prepare: async () => {
    buildNatsGo(bin)
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
