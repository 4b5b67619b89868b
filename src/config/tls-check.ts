// TLS certificates named by the configuration must exist and load (a PEM
// certificate, its private key, any CA bundle), checked before anything listens
// and by `-t`. Files are read through the ConfigFiles port; Node parses them.
import * as tls from "node:tls"
import type { ServerOptions, TlsOptions } from "./options.js"

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
  return out
}

/** Why this block's files cannot serve TLS, or undefined. Never shows key material. */
export const tlsBlockProblem = (t: TlsOptions, readFile: (path: string) => string | undefined): string | undefined => {
  const files: Array<readonly [string, string]> = [
    ["cert_file", t.certFile],
    ["key_file", t.keyFile],
    ...(t.caFile === undefined ? [] : [["ca_file", t.caFile] as const])
  ]
  const text = new Map<string, string>()
  for (const [key, file] of files) {
    const content = readFile(file)
    if (content === undefined) return `${key} ${JSON.stringify(file)} cannot be read`
    text.set(key, content)
  }
  try {
    tls.createSecureContext({ cert: text.get("cert_file"), key: text.get("key_file"), ...(t.caFile !== undefined && { ca: text.get("ca_file") }) })
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
  return out
}
