// bcrypt (the bcryptjs package) is loaded only when the configuration holds a bcrypt
// hash: at start, or with the reload that brings the first one (server/parts.ts). A
// Server is never built on such a configuration without it, and a reload that would
// need it is refused, so no hash is compared without it.
import type * as Bcryptjs from "bcryptjs"

let bcrypt: typeof Bcryptjs | undefined

/** bcrypt hashes are recognised by their prefix, as nats-server does. */
export const isBcrypt = (p: string | undefined): boolean => p !== undefined && /^\$2[abxy]\$/.test(p)

/**
 * Does this configuration hold a bcrypt hash: a `password` that is one, anywhere in it
 * (users, accounts, the mqtt, cluster and leafnodes blocks)? Walks the plain data the
 * configuration decodes to, so a block that takes passwords later is covered too.
 */
export const holdsBcrypt = (o: unknown): boolean => {
  if (Array.isArray(o)) return o.some(holdsBcrypt)
  if (typeof o !== "object" || o === null) return false
  for (const [k, v] of Object.entries(o)) {
    if (k === "password" ? typeof v === "string" && isBcrypt(v) : holdsBcrypt(v)) return true
  }
  return false
}

export const loadBcrypt = async (): Promise<void> => {
  bcrypt ??= await import("bcryptjs")
}

export const bcryptLoaded = (): boolean => bcrypt !== undefined

/** Throws when `options` hold a bcrypt hash and bcrypt is not loaded (a start that skipped loadBcrypt). */
export const requireBcrypt = (options: unknown): void => {
  if (bcrypt === undefined && holdsBcrypt(options)) throw new Error("the configuration holds bcrypt hashes and bcrypt is not loaded (loadBcrypt)")
}

/** `given` against a bcrypt `hash`; false for a malformed hash. */
export const bcryptMatches = (given: string, hash: string): boolean => {
  if (bcrypt === undefined) throw new Error("a bcrypt hash checked before bcrypt was loaded (loadBcrypt)")
  try {
    return bcrypt.compareSync(given, hash)
  } catch {
    return false
  }
}
