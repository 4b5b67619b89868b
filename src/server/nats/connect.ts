// The CONNECT a NATS client sends: the fields the server reads, and the form in which
// it may be logged (credentials never are).

/** The CONNECT fields the server reads (clients send more; the rest is ignored). */
export interface ConnectOptions {
  readonly verbose?: boolean
  readonly pedantic?: boolean
  readonly tls_required?: boolean
  readonly echo?: boolean
  readonly headers?: boolean
  readonly no_responders?: boolean
  readonly name?: string
  readonly lang?: string
  readonly version?: string
  readonly protocol?: number
  readonly user?: string
  readonly pass?: string
  readonly auth_token?: string
  readonly nkey?: string
  readonly sig?: string
  readonly jwt?: string
}

/** The CONNECT JSON as an object, or undefined when it is not one. */
export const parseConnect = (json: string): ConnectOptions | undefined => {
  try {
    const parsed: unknown = JSON.parse(json)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as ConnectOptions) : undefined
  } catch {
    return undefined
  }
}

/** CONNECT as it may be logged: every credential replaced, whatever the client sent. */
export const redactConnect = (opts: ConnectOptions): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...opts }
  for (const k of ["pass", "auth_token", "sig", "jwt"] as const) if (k in out) out[k] = "[REDACTED]"
  return out
}
