// NATS credentials files (`leafnodes { remotes: [ { credentials: "user.creds" } ] }`): a
// user JWT and the user's nkey seed, each between dashed BEGIN/END lines, as `nsc` and the
// NATS tooling write them. A leaf connection proves it holds the seed by signing the hub's
// INFO nonce with it (ed25519), and sends the JWT with the signature in its CONNECT. Pure:
// the file's text comes in, the JWT and a signing function come out; the seed is never
// shown in an error.
import { fromSeed } from "@nats-io/nkeys"

export interface Credentials {
  /** The user JWT, as sent in CONNECT `jwt`. */
  readonly jwt: string
  /** The user's public nkey (U…), from the seed. */
  readonly publicKey: string
  /** The nonce signed with the seed, base64url without padding (CONNECT `sig`). */
  readonly sign: (nonce: string) => string
}

/** The token between a `-----BEGIN <what>-----` line and its END line, or undefined. */
const section = (text: string, what: RegExp): string | undefined => {
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i].trim()
    if (!/^-{3,}\s*BEGIN\b/.test(l) || !what.test(l)) continue
    for (let j = i + 1; j < lines.length; j++) {
      const t = lines[j].trim()
      if (t === "") continue
      return /^-{3,}/.test(t) ? undefined : t
    }
  }
  return undefined
}

/** The credentials of a creds file's text, or why it cannot serve (never quoting the seed). */
export const parseCredentials = (text: string): Credentials | string => {
  const jwt = section(text, /\bJWT\b/)
  if (jwt === undefined) return "no user JWT (a -----BEGIN NATS USER JWT----- section)"
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(jwt)) return "the user JWT is not a JWT (three base64url parts)"
  const seed = section(text, /\bSEED\b/)
  if (seed === undefined) return "no nkey seed (a -----BEGIN USER NKEY SEED----- section)"
  if (!seed.startsWith("SU")) return "the nkey seed is not a user seed (SU…)"
  let pair: ReturnType<typeof fromSeed>
  try {
    pair = fromSeed(new TextEncoder().encode(seed))
  } catch {
    return "the nkey seed is not valid (bad encoding or checksum)"
  }
  const publicKey = pair.getPublicKey()
  return {
    jwt,
    publicKey,
    sign: (nonce) => Buffer.from(pair.sign(new TextEncoder().encode(nonce))).toString("base64url")
  }
}
