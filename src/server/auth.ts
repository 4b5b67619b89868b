// Who may connect, and to which account. The foundation handles the plain forms
// (single user, token, user lists with plain passwords, accounts with users,
// no_auth_user); bcrypt, nkeys and permissions arrive with the auth work and are
// refused at start-up until then (see unsupported.ts), never silently ignored.
import { createHash, timingSafeEqual } from "node:crypto"
import type { ServerOptions } from "../config/options.js"
import { GLOBAL_ACCOUNT } from "./account.js"
import type { ConnectOptions } from "./client.js"

export interface AuthResult {
  readonly account: string
  readonly user: string
}

export interface Authenticator {
  readonly required: boolean
  /** The account and user for these CONNECT credentials, or undefined when refused. */
  authenticate(opts: ConnectOptions): AuthResult | undefined
}

interface UserCred {
  readonly user: string
  readonly password: string | undefined
  readonly account: string
}

/** Constant-time equality that does not leak the length of the secret either. */
export const secretEquals = (given: string | undefined, expected: string): boolean => {
  if (given === undefined) return false
  const a = createHash("sha256").update(given).digest()
  const b = createHash("sha256").update(expected).digest()
  return timingSafeEqual(a, b)
}

export const makeAuthenticator = (options: ServerOptions): Authenticator => {
  const authz = options.authorization
  const users = new Map<string, UserCred>()
  for (const acc of options.accounts) {
    for (const u of acc.users) {
      if (u.user !== undefined) users.set(u.user, { user: u.user, password: u.password, account: acc.name })
    }
  }
  for (const u of authz?.users ?? []) {
    if (u.user !== undefined) {
      users.set(u.user, { user: u.user, password: u.password, account: u.account ?? GLOBAL_ACCOUNT })
    }
  }
  const single = authz?.user !== undefined ? { user: authz.user, password: authz.password ?? "" } : undefined
  const token = authz?.token
  const required = users.size > 0 || single !== undefined || token !== undefined
  const noAuthUser = options.noAuthUser !== undefined ? users.get(options.noAuthUser) : undefined

  const authenticate = (opts: ConnectOptions): AuthResult | undefined => {
    const hasCreds = opts.user !== undefined || opts.pass !== undefined || opts.auth_token !== undefined
    if (!hasCreds && noAuthUser !== undefined) return { account: noAuthUser.account, user: noAuthUser.user }
    if (token !== undefined) {
      return secretEquals(opts.auth_token, token) ? { account: GLOBAL_ACCOUNT, user: "" } : undefined
    }
    if (single !== undefined) {
      const ok = secretEquals(opts.user, single.user) && secretEquals(opts.pass, single.password)
      return ok ? { account: GLOBAL_ACCOUNT, user: single.user } : undefined
    }
    const u = opts.user !== undefined ? users.get(opts.user) : undefined
    // Compare against a dummy when the user is unknown so timing does not reveal which users exist.
    const ok = secretEquals(opts.pass, u?.password ?? "\u0000unknown-user") && u !== undefined && u.password !== undefined
    return ok ? { account: u.account, user: u.user } : undefined
  }

  return { required, authenticate }
}
