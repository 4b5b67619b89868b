// Who may connect, to which account and with which permissions: tokens, a single
// user, user lists and account users (plain or bcrypt passwords), nkey users signing
// the server's nonce, and no_auth_user. Secrets are compared in constant time (bcrypt
// by its own construction) and never logged.
import { createHash, timingSafeEqual } from "node:crypto"
import { fromPublic } from "@nats-io/nkeys"
import type { Permissions, ServerOptions, UserEntry } from "../../config/options.js"
import { GLOBAL_ACCOUNT } from "../../engine/principal.js"
import { bcryptMatches, isBcrypt } from "./bcrypt.js"
import type { ConnectOptions } from "./connect.js"

export interface AuthResult {
  readonly account: string
  readonly user: string
  /** undefined = may publish and subscribe to anything in the account. */
  readonly permissions: Permissions | undefined
}

export interface Authenticator {
  readonly required: boolean
  /** Nkey users exist: INFO carries a nonce for the client to sign. */
  readonly nonceRequired: boolean
  /** The account, user and permissions for these CONNECT credentials, or undefined when refused. */
  authenticate(opts: ConnectOptions, nonce: string | undefined): AuthResult | undefined
  /**
   * Which configured credential these CONNECT fields name (its kind, name, secret and
   * account, never shown anywhere), and what it grants, without checking the secret:
   * when a reload leaves that entry as it was, a client it admitted stays admitted.
   */
  lookup(opts: ConnectOptions): { readonly entry: string; readonly result: AuthResult } | undefined
}

/**
 * A connected client's credentials against `next` after a reload from `previous`: kept
 * without a new check when they name the same entry, unchanged (bcrypt is not paid
 * again per client); checked in full otherwise. Undefined = no longer admitted.
 */
export const reauthenticate = (
  previous: Authenticator,
  next: Authenticator,
  opts: ConnectOptions,
  nonce: string | undefined
): AuthResult | undefined => {
  const now = next.lookup(opts)
  if (now !== undefined && now.entry === previous.lookup(opts)?.entry) return now.result
  return next.authenticate(opts, nonce)
}

interface UserCred {
  readonly user: string
  readonly password: string | undefined
  readonly account: string
  readonly permissions: Permissions | undefined
}

/** Constant-time equality that does not leak the length of the secret either. */
export const secretEquals = (given: string | undefined, expected: string): boolean => {
  if (given === undefined) return false
  const a = createHash("sha256").update(given).digest()
  const b = createHash("sha256").update(expected).digest()
  return timingSafeEqual(a, b)
}

/** A configured password (plain or bcrypt) against the one a client sent. */
export const passwordMatches = (given: string | undefined, expected: string): boolean => {
  if (!isBcrypt(expected)) return secretEquals(given, expected)
  return given !== undefined && bcryptMatches(given, expected)
}

/** A fresh nonce for one connection: 16 unguessable bytes, base64url without padding (22 characters). */
export const makeNonce = (server: { randomId(n: number): string }): string => server.randomId(16)

/** Node's base64 decoder skips junk; a signature must be nothing but base64 (either alphabet). */
const Base64Re = /^[A-Za-z0-9+/_-]+={0,2}$/

/** Did the holder of the nkey `publicKey` sign `nonce`? `sig` is base64 (std or url, padded or not). */
export const verifyNonce = (publicKey: string, nonce: string, sig: string | undefined): boolean => {
  if (sig === undefined || !Base64Re.test(sig) || !publicKey.startsWith("U")) return false
  try {
    const kp = fromPublic(publicKey)
    return kp.verify(Buffer.from(nonce), Buffer.from(sig, "base64"))
  } catch {
    return false
  }
}

const cred = (u: UserEntry, name: string, account: string, defaults: Permissions | undefined): UserCred => ({
  user: name,
  password: u.password,
  account,
  permissions: u.permissions ?? defaults
})

export const makeAuthenticator = (options: ServerOptions): Authenticator => {
  const authz = options.authorization
  const defaults = authz?.defaultPermissions
  const users = new Map<string, UserCred>()
  const nkeys = new Map<string, UserCred>()
  const add = (u: UserEntry, account: string) => {
    if (u.nkey !== undefined) nkeys.set(u.nkey, cred(u, u.nkey, account, defaults))
    else if (u.user !== undefined) users.set(u.user, cred(u, u.user, account, defaults))
  }
  for (const acc of options.accounts) for (const u of acc.users) add(u, acc.name)
  for (const u of authz?.users ?? []) add(u, u.account ?? GLOBAL_ACCOUNT)
  const single = authz?.user !== undefined ? { user: authz.user, password: authz.password ?? "" } : undefined
  const token = authz?.token
  const required = users.size > 0 || nkeys.size > 0 || single !== undefined || token !== undefined
  const noAuthUser = options.noAuthUser !== undefined
    ? users.get(options.noAuthUser) ?? nkeys.get(options.noAuthUser)
    : undefined
  // An unknown user costs what a known one does, so timing does not reveal who exists.
  const dummyHash = [...users.values()].find((u) => isBcrypt(u.password))?.password ?? "\u0000unknown-user"

  const granted = (u: UserCred): AuthResult => ({ account: u.account, user: u.user, permissions: u.permissions })
  const hasCreds = (opts: ConnectOptions) =>
    opts.user !== undefined || opts.pass !== undefined || opts.auth_token !== undefined || opts.nkey !== undefined

  // Each configured credential as one string (kind, name, secret, account): equal before and after a reload = same entry.
  const entryOf = (kind: string, ...parts: ReadonlyArray<string | undefined>) => JSON.stringify([kind, ...parts])

  const lookup: Authenticator["lookup"] = (opts) => {
    if (!hasCreds(opts) && noAuthUser !== undefined) {
      return { entry: entryOf("no_auth_user", noAuthUser.user, noAuthUser.account), result: granted(noAuthUser) }
    }
    if (typeof opts.nkey === "string" && nkeys.size > 0) {
      const u = nkeys.get(opts.nkey)
      return u === undefined ? undefined : { entry: entryOf("nkey", u.user, u.account), result: granted(u) }
    }
    if (token !== undefined) return { entry: entryOf("token", token), result: { account: GLOBAL_ACCOUNT, user: "", permissions: defaults } }
    if (single !== undefined) {
      return { entry: entryOf("user", single.user, single.password), result: { account: GLOBAL_ACCOUNT, user: single.user, permissions: defaults } }
    }
    const u = opts.user !== undefined ? users.get(opts.user) : undefined
    return u === undefined || u.password === undefined ? undefined : { entry: entryOf("users", u.user, u.password, u.account), result: granted(u) }
  }

  const authenticate = (opts: ConnectOptions, nonce: string | undefined): AuthResult | undefined => {
    if (!hasCreds(opts) && noAuthUser !== undefined) return granted(noAuthUser)
    if (typeof opts.nkey === "string" && nkeys.size > 0) {
      const u = nkeys.get(opts.nkey)
      if (u === undefined || nonce === undefined) return undefined
      return verifyNonce(opts.nkey, nonce, typeof opts.sig === "string" ? opts.sig : undefined) ? granted(u) : undefined
    }
    if (token !== undefined) {
      return secretEquals(opts.auth_token, token) ? { account: GLOBAL_ACCOUNT, user: "", permissions: defaults } : undefined
    }
    if (single !== undefined) {
      const ok = secretEquals(opts.user, single.user) && passwordMatches(opts.pass, single.password)
      return ok ? { account: GLOBAL_ACCOUNT, user: single.user, permissions: defaults } : undefined
    }
    const u = opts.user !== undefined ? users.get(opts.user) : undefined
    const ok = passwordMatches(opts.pass, u?.password ?? dummyHash) && u !== undefined && u.password !== undefined
    return ok ? granted(u) : undefined
  }

  return { required, nonceRequired: nkeys.size > 0, authenticate, lookup }
}
