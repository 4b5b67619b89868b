// What makes an account's exports, imports and users refer to something real: an
// import names a defined account that exports a subject covering it to this account;
// an export's `accounts` and a user's `account` name defined accounts. Shared by the
// configuration checks (so `-t` sees them, with positions) and by the server, which
// wires only the imports that pass.
import { isValidSubject, subjectIsSubsetMatch } from "../core/subject/subject.js"
import type { AccountExport, AccountImport, ServerOptions } from "./options.js"

export type ImportKind = "stream" | "service"

/** Where an import comes from, whichever of `stream`/`service` it is. */
export const importSource = (imp: AccountImport): { kind: ImportKind; account: string; subject: string } | undefined =>
  imp.stream !== undefined
    ? { kind: "stream", ...imp.stream }
    : imp.service !== undefined
      ? { kind: "service", ...imp.service }
      : undefined

const exportSubject = (e: AccountExport, kind: ImportKind): string | undefined => (kind === "stream" ? e.stream : e.service)

/** How an import is named in messages: `accounts.B: stream import of "x" from "A"`. */
export const importLabel = (importer: string, src: { kind: ImportKind; account: string; subject: string }): string =>
  `accounts.${importer}: ${src.kind} import of "${src.subject}" from "${src.account}"`

/** Why an account's import is not allowed (unknown account, nothing exported that covers it, not for this account), or undefined. */
export const importProblem = (o: ServerOptions, importer: string, imp: AccountImport): string | undefined => {
  const src = importSource(imp)
  if (src === undefined) return undefined
  const what = importLabel(importer, src)
  const from = o.accounts.find((a) => a.name === src.account)
  if (from === undefined) return `${what}: no such account`
  if (!isValidSubject(src.subject)) return `${what}: invalid subject`
  const allowed = from.exports.some((e) => {
    const s = exportSubject(e, src.kind)
    return s !== undefined && subjectIsSubsetMatch(src.subject, s) && (e.accounts === undefined || e.accounts.includes(importer))
  })
  return allowed ? undefined : `${what}: not authorized (no matching export for this account)`
}

export interface AccountProblem {
  /** The configuration key path of the entry at fault (for its file position). */
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** Every configured import's problem, with where the import is written. */
export const importProblems = (o: ServerOptions): Array<AccountProblem> => {
  const problems: Array<AccountProblem> = []
  for (const acc of o.accounts) {
    acc.imports.forEach((imp, i) => {
      const p = importProblem(o, acc.name, imp)
      if (p !== undefined) problems.push({ path: ["accounts", acc.name, "imports", i], message: p })
    })
  }
  return problems
}

/** Exports shared with accounts nobody defined, and users placed in accounts nobody defined. */
export const accountReferenceProblems = (o: ServerOptions): Array<AccountProblem> => {
  const defined = new Set(o.accounts.map((a) => a.name))
  const problems: Array<AccountProblem> = []
  for (const acc of o.accounts) {
    acc.exports.forEach((e, i) => {
      for (const name of e.accounts ?? []) {
        if (defined.has(name)) continue
        const what = e.stream !== undefined ? `stream export "${e.stream}"` : `service export "${e.service}"`
        problems.push({ path: ["accounts", acc.name, "exports", i, "accounts"], message: `accounts.${acc.name}: ${what} names account "${name}", which is not defined` })
      }
    })
  }
  ;(o.authorization?.users ?? []).forEach((u, i) => {
    if (u.account !== undefined && !defined.has(u.account)) {
      problems.push({ path: ["authorization", "users", i, "account"], message: `authorization.users[${i}]: account "${u.account}" is not defined in accounts` })
    }
  })
  // Leaf connections are bound to accounts: each one named must exist ($G always does).
  const leaf = o.leafnodes
  const known = (name: string | undefined) => name === undefined || name === "$G" || defined.has(name)
  if (leaf?.authorization?.account !== undefined && !known(leaf.authorization.account)) {
    problems.push({ path: ["leafnodes", "authorization", "account"], message: `leafnodes.authorization: account "${leaf.authorization.account}" is not defined in accounts` })
  }
  ;(leaf?.authorization?.users ?? []).forEach((u, i) => {
    if (!known(u.account)) {
      problems.push({ path: ["leafnodes", "authorization", "users", i, "account"], message: `leafnodes.authorization.users[${i}]: account "${u.account}" is not defined in accounts` })
    }
  })
  ;(leaf?.remotes ?? []).forEach((r, i) => {
    if (!known(r.account)) {
      problems.push({ path: ["leafnodes", "remotes", i, "account"], message: `leafnodes.remotes[${i}]: account "${r.account}" is not defined in accounts` })
    }
  })
  return problems
}
