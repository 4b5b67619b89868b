// TLS certificates named by the configuration must exist and load (a PEM
// certificate, its private key, any CA bundle), checked before anything listens
// and by `-t`. Files are read through the ConfigFiles port; Node parses them.
import * as tls from "node:tls"
import { parseCredentials } from "../core/cluster/credentials.js"
import type { RemoteTlsOptions, ServerOptions, TlsOptions } from "./options.js"

export interface TlsProblem {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** Every TLS block of the options, with the key path it is written under and its name in messages. */
const tlsBlocks = (o: ServerOptions): Array<{ path: ReadonlyArray<PropertyKey>; label: string; tls: TlsOptions }> => {
  const out: Array<{ path: ReadonlyArray<PropertyKey>; label: string; tls: TlsOptions }> = []
  if (o.tls !== undefined) out.push({ path: ["tls"], label: "tls", tls: o.tls })
  if (o.httpTls !== undefined && o.httpTls !== o.tls) out.push({ path: ["http", "tls"], label: "http tls", tls: o.httpTls })
  if (o.mqtt?.tls !== undefined) out.push({ path: ["mqtt", "tls"], label: "mqtt tls", tls: o.mqtt.tls })
  if (o.websocket?.tls !== undefined) out.push({ path: ["websocket", "tls"], label: "websocket tls", tls: o.websocket.tls })
  if (o.cluster?.tls !== undefined) out.push({ path: ["cluster", "tls"], label: "cluster tls", tls: o.cluster.tls })
  if (o.leafnodes?.tls !== undefined) out.push({ path: ["leafnodes", "tls"], label: "leafnodes tls", tls: o.leafnodes.tls })
  return out
}

/** Why this block's files cannot serve TLS, or undefined. Never shows key material. */
export const tlsBlockProblem = (t: TlsOptions | RemoteTlsOptions, readFile: (path: string) => string | undefined): string | undefined => {
  const files: Array<readonly [string, string]> = [
    ...(t.certFile === undefined ? [] : [["cert_file", t.certFile] as const]),
    ...(t.keyFile === undefined ? [] : [["key_file", t.keyFile] as const]),
    ...(t.caFile === undefined ? [] : [["ca_file", t.caFile] as const])
  ]
  const text = new Map<string, string>()
  for (const [key, file] of files) {
    const content = readFile(file)
    if (content === undefined) return `${key} ${JSON.stringify(file)} cannot be read`
    text.set(key, content)
  }
  try {
    tls.createSecureContext({
      ...(t.certFile !== undefined && { cert: text.get("cert_file") }),
      ...(t.keyFile !== undefined && { key: text.get("key_file") }),
      ...(t.caFile !== undefined && { ca: text.get("ca_file") })
    })
    return undefined
  } catch (e) {
    // Node's messages name the PEM routine or the mismatch, never the key material.
    return (e as Error).message
  }
}

/** The problems of every TLS block, each named like the listener's own start-up error. */
export const tlsProblems = (o: ServerOptions, readFile: (path: string) => string | undefined): Array<TlsProblem> => {
  const out: Array<TlsProblem> = []
  for (const b of tlsBlocks(o)) {
    const why = tlsBlockProblem(b.tls, readFile)
    if (why !== undefined) out.push({ path: b.path, message: `${b.label}: cannot load the certificate or key: ${why}` })
  }
  // Leaf remotes: their client-side TLS and their credentials files, read as each connection attempt reads them.
  o.leafnodes?.remotes.forEach((r, i) => {
    if (r.tls !== undefined) {
      const why = tlsBlockProblem(r.tls, readFile)
      if (why !== undefined) out.push({ path: ["leafnodes", "remotes", i, "tls"], message: `leafnodes remote tls: cannot load the certificate or key: ${why}` })
    }
    if (r.credentials !== undefined) {
      const text = readFile(r.credentials)
      const why = text === undefined ? "cannot be read" : (() => {
        const c = parseCredentials(text)
        return typeof c === "string" ? c : undefined
      })()
      if (why !== undefined) out.push({ path: ["leafnodes", "remotes", i, "credentials"], message: `leafnodes remote credentials ${JSON.stringify(r.credentials)}: ${why}` })
    }
  })
  return out
}
