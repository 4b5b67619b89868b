// Certificates for TLS tests, made by the openssl CLI in a temporary directory: a CA,
// a server certificate for 127.0.0.1/localhost, a client certificate signed by the CA,
// and a client certificate from an unrelated CA (for verify failures).
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TlsOptions } from "../../src/config/options.js"

export interface TestCerts {
  readonly dir: string
  readonly caFile: string
  readonly serverCert: string
  readonly serverKey: string
  readonly clientCert: string
  readonly clientKey: string
  /** Signed by another CA: a server with `verify` must refuse it. */
  readonly strangerCert: string
  readonly strangerKey: string
  /** A server's certificate for both ends of a route or leaf connection (serverAuth and clientAuth, 127.0.0.1). */
  readonly nodeCert: string
  readonly nodeKey: string
  /** The same from the other CA: refused by a peer that checks against `caFile`. */
  readonly strangerNodeCert: string
  readonly strangerNodeKey: string
  remove(): void
}

const openssl = (cwd: string, args: ReadonlyArray<string>): void => {
  execFileSync("openssl", args, { cwd, stdio: "pipe" })
}

const makeCa = (dir: string, name: string): void => {
  openssl(dir, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.pem`,
    "-days", "2", "-subj", `/CN=${name}`, "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
}

const makeLeaf = (dir: string, name: string, ca: string, ext: string): void => {
  writeFileSync(join(dir, `${name}.ext`), ext)
  openssl(dir, ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`])
  openssl(dir, ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.pem`, "-CAkey", `${ca}.key`, "-CAcreateserial",
    "-out", `${name}.pem`, "-days", "2", "-extfile", `${name}.ext`])
}

export const makeTestCerts = (): TestCerts => {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-tls-"))
  makeCa(dir, "ca")
  makeCa(dir, "otherca")
  makeLeaf(dir, "server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
  makeLeaf(dir, "client", "ca", "extendedKeyUsage=clientAuth\n")
  makeLeaf(dir, "stranger", "otherca", "extendedKeyUsage=clientAuth\n")
  makeLeaf(dir, "node", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
  makeLeaf(dir, "strangernode", "otherca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
  const f = (n: string) => join(dir, n)
  return {
    dir,
    caFile: f("ca.pem"),
    serverCert: f("server.pem"),
    serverKey: f("server.key"),
    clientCert: f("client.pem"),
    clientKey: f("client.key"),
    strangerCert: f("stranger.pem"),
    strangerKey: f("stranger.key"),
    nodeCert: f("node.pem"),
    nodeKey: f("node.key"),
    strangerNodeCert: f("strangernode.pem"),
    strangerNodeKey: f("strangernode.key"),
    remove: () => rmSync(dir, { recursive: true, force: true })
  }
}

/** A listener's `tls` block with the test server certificate (CA for client certificates), as the config would decode it. */
export const serverTls = (certs: TestCerts, over: Partial<TlsOptions> = {}): TlsOptions => ({
  certFile: certs.serverCert,
  keyFile: certs.serverKey,
  caFile: certs.caFile,
  verify: false,
  timeoutMs: 2_000,
  ...over
})
