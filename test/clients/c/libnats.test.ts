// libnats (Debian's libnats-dev, the NATS C client) through the NATS client matrix:
// test/clients/c/main.c, compiled once per run. libnats has no object store.
import { execFileSync } from "node:child_process"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { buildDir, fileExists, hasCommand, INSTALL, requireInstalled, runCase } from "../run.js"
import { describeNatsMatrix } from "../nats-matrix.js"

const out = buildDir()
const bin = join(out.dir, "nats-c")

describeNatsMatrix({
  name: "libnats 3.4.1 (C)",
  connName: "matrix-c",
  lang: "C",
  prepare: async () => {
    requireInstalled("A C compiler", () => hasCommand("gcc"), INSTALL.c)
    requireInstalled("libnats", () => fileExists("/usr/include/nats/nats.h"), INSTALL.c)
    requireInstalled("OpenSSL's headers", () => fileExists("/usr/include/openssl/sha.h"), INSTALL.c)
    execFileSync("gcc", ["-Wall", "-Werror", "-O1", "-o", bin, fileURLToPath(new URL("main.c", import.meta.url)), "-lnats", "-lcrypto"], { stdio: "pipe" })
  },
  run: (c, url, args, opts) => runCase([bin], c, url, args, opts),
  errors: {
    authorization: "NATS_CONNECTION_AUTH_FAILED",
    noResponders: "NATS_NO_RESPONDERS",
    maxPayload: "NATS_MAX_PAYLOAD",
    keyExists: "NATS_ERR",
    keyNotFound: "NATS_NOT_FOUND"
  },
  objectStore: false,
  cleanup: () => out.remove()
})
