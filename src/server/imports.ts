// Accounts sharing subjects, nats-server's exports/imports. A stream import is an
// internal subscription in the exporting account that republishes into the importer
// (under a prefix or a mapped subject); a service import is an internal subscription in
// the importer that forwards requests to the exporter with a private reply subject,
// whose single response is forwarded back. Nothing else ever crosses accounts.
import { importLabel, importProblem, importProblems, importSource as source } from "../config/account-checks.js"
import type { AccountImport, ServerOptions } from "../config/options.js"
import type { AccountExportSnapshot, AccountImportSnapshot } from "../core/monitor/source.js"
import { subjectHasWildcard } from "../core/subject/subject.js"
import type { Delivery, Subscription } from "../engine/principal.js"
import type { Server } from "./server.js"

/** Outstanding service requests per service import, at most (the oldest is dropped first). */
export const MAX_RESPONSE_MAPS = 10_000
/** How long a service response is waited for (nats-server's response_threshold default). */
export const RESPONSE_THRESHOLD_MS = 2 * 60_000

/** An account's exports and imports as /accountz shows them. */
export const accountSharing = (o: ServerOptions, name: string): { exports: Array<AccountExportSnapshot>; imports: Array<AccountImportSnapshot> } => {
  const acc = o.accounts.find((a) => a.name === name)
  if (acc === undefined) return { exports: [], imports: [] }
  const exports: Array<AccountExportSnapshot> = []
  for (const e of acc.exports) {
    if (e.stream !== undefined) exports.push({ subject: e.stream, type: "stream", approvedAccounts: e.accounts })
    if (e.service !== undefined) exports.push({ subject: e.service, type: "service", approvedAccounts: e.accounts })
  }
  const imports: Array<AccountImportSnapshot> = []
  for (const imp of acc.imports) {
    const src = source(imp)
    if (src === undefined) continue
    const local =
      src.kind === "stream"
        ? imp.prefix !== undefined && imp.prefix !== "" ? `${imp.prefix}.${src.subject}` : imp.to
        : imp.to
    imports.push({
      subject: src.subject,
      account: src.account,
      type: src.kind,
      localSubject: local !== undefined && local !== "" && local !== src.subject ? local : undefined,
      invalid: importProblem(o, name, imp) !== undefined
    })
  }
  return { exports, imports }
}

/**
 * The subject `subject` (matched by `filter`) becomes under `to`: each `*` of `to` takes
 * the next token matched by a wildcard of `filter`, a `>` takes the rest. A literal `to`
 * is used as it is.
 */
export const mapSubject = (subject: string, filter: string, to: string): string => {
  if (!subjectHasWildcard(to)) return to
  const st = subject.split(".")
  const ft = filter.split(".")
  const captured: Array<string> = []
  let rest: Array<string> = []
  for (let i = 0; i < ft.length; i++) {
    if (ft[i] === "*") captured.push(st[i])
    else if (ft[i] === ">") {
      rest = st.slice(i)
      break
    }
  }
  let next = 0
  return to
    .split(".")
    .map((t) => (t === "*" ? (captured[next++] ?? "*") : t === ">" ? rest.join(".") : t))
    .join(".")
}

/** Where a stream import delivers `subject` in the importing account. */
const streamTarget = (imp: AccountImport, filter: string): ((subject: string) => string) => {
  if (imp.prefix !== undefined && imp.prefix !== "") return (s) => `${imp.prefix}.${s}`
  if (imp.to !== undefined && imp.to !== "") return (s) => mapSubject(s, filter, imp.to!)
  return (s) => s
}

interface PendingResponse {
  readonly reply: string
  readonly expiresAt: number
}

const wireStream = (server: Server, importer: string, imp: AccountImport, from: string, filter: string): Array<Subscription> => {
  const router = server.router
  const into = router.internal(importer, `stream import ${from} ${filter}`)
  const listener = router.internal(from, `stream export to ${importer}`)
  const target = streamTarget(imp, filter)
  // In a cluster every server imports for its own subscribers: the exporter's messages
  // come to the listener of each (it is announced), and the imported copy stays here.
  return [router.subscribe(listener, filter, undefined, (d: Delivery) => {
    router.forward(into, d, target(d.subject), d.reply, true)
  })]
}

const wireService = (server: Server, importer: string, imp: AccountImport, from: string, remote: string): Array<Subscription> => {
  const local = imp.to !== undefined && imp.to !== "" ? imp.to : remote
  const router = server.router
  const requester = router.internal(from, `service import from ${importer}`)
  const responder = router.internal(importer, `service export from ${from}`)
  // A request is forwarded by the server its requester is on (and reaches responders on
  // any server); announcing these subscriptions would have other servers forward it too.
  responder.announce = false
  const prefix = `_R_.${server.randomId(6)}`
  const pending = new Map<string, PendingResponse>()
  let seq = 0
  const prune = (now: number) => {
    for (const [k, p] of pending) {
      if (p.expiresAt > now && pending.size < MAX_RESPONSE_MAPS) break
      pending.delete(k)
    }
  }
  // Requests in the importer, on the local subject, go to the exporter on the service subject.
  const requests = router.subscribe(responder, local, undefined, (d: Delivery) => {
    const target = mapSubject(d.subject, local, remote)
    const reply = d.reply
    if (reply === "") {
      router.forward(requester, d, target, "")
      return
    }
    const now = server.now()
    prune(now)
    const token = `${prefix}.${(seq++).toString(36)}`
    pending.set(token, { reply, expiresAt: now + RESPONSE_THRESHOLD_MS })
    const origin = d.origin.publisher
    if (router.forward(requester, d, target, token) === 0) {
      // Nobody serves it in the exporting account: the requester hears so at once (503), as it would locally.
      pending.delete(token)
      if (origin !== undefined && origin.noResponders) router.sendNoResponders(origin, reply)
    }
  })
  // The single response, in the exporter, goes back to the requester's reply subject.
  const responses = router.subscribe(requester, `${prefix}.*`, undefined, (d: Delivery) => {
    const p = pending.get(d.subject)
    if (p === undefined) return
    pending.delete(d.subject)
    if (p.expiresAt < server.now()) return
    router.forward(responder, d, p.reply, "")
  })
  return [requests, responses]
}

/** The imports in force; `unwire` takes them all down (a reload wires the new ones). */
export interface WiredImports {
  readonly unwire: () => void
}

/** Subscribe what the configured imports need; unauthorized ones are skipped and logged (`serve` refuses to start with them). */
export const wireImports = (server: Server): WiredImports => {
  const o = server.options
  const problems = new Set(importProblems(o).map((p) => p.message))
  if (problems.size > 0) for (const p of problems) server.log.error(p)
  const byName = new Map(o.accounts.map((a) => [a.name, a]))
  const subs: Array<Subscription> = []
  for (const acc of o.accounts) {
    for (const imp of acc.imports) {
      const src = source(imp)
      if (src === undefined || !byName.has(src.account)) continue
      const what = importLabel(acc.name, src)
      if ([...problems].some((p) => p.startsWith(what))) continue
      if (src.kind === "stream") subs.push(...wireStream(server, acc.name, imp, src.account, src.subject))
      else subs.push(...wireService(server, acc.name, imp, src.account, src.subject))
    }
  }
  return { unwire: () => { for (const s of subs) s.principal.removeSub(s) } }
}
