// Remote interest: what each route and leaf connection told this server it wants (RS+/RS-,
// LS+/LS-), per account, and which of them want a given subject. Each account has one
// Sublist holding an entry per (remote, subject, queue), so a lookup is the same trie walk
// and match cache local subscriptions use; a queue entry carries the group's weight behind
// that remote. As in nats-server, an RS+ for interest already held replaces it (a repeated
// plain RS+ changes nothing, a queue RS+ sets the new weight) and one RS- removes it.

import { Sublist, type SublistResult } from "../subject/sublist.js"
import { isValidQueueName, isValidSubject } from "../subject/subject.js"

/** One subject (and queue group) a remote is interested in. */
export class RemoteSub<R> {
  constructor(
    readonly remote: R,
    readonly account: string,
    readonly subject: string,
    /** undefined for a plain subscription (the Sublist's convention) */
    readonly queue: string | undefined,
    /** a route's LS+: interest of a leaf node behind the peer, not of the peer's own clients */
    readonly fromLeaf: boolean,
    /** how many queue members are behind the remote; 1 for a plain subscription */
    public weight: number,
    /** the leaf cluster the interest came from (LS+), "" when unknown */
    public origin: string
  ) {}
}

/** What an update did: `invalid` (bad subject or queue name) and `limit` (too many entries) leave the table as it was. */
export type InterestChange = "added" | "weight" | "unchanged" | "invalid" | "limit"

export interface RemoteInterestOptions {
  /** Most entries one remote may hold; past it `add` answers `limit`. Default: no bound. */
  readonly maxPerRemote?: number
  /** Match-cache size of each account's Sublist (see SublistOptions). */
  readonly cacheSize?: number
}

/** What an update names: the fields of a parsed RS+/RS-/LS+/LS- (PeerInterest fits). */
export interface InterestKey {
  readonly account: string
  readonly subject: string
  /** "" for a plain subscription */
  readonly queue: string
  readonly fromLeaf: boolean
}

export interface InterestUpdate extends InterestKey {
  readonly weight: number
  readonly origin: string
}

const EMPTY: SublistResult<never> = Object.freeze({ psubs: Object.freeze([]), qsubs: Object.freeze([]) })

/** Entries of one remote, by account then by `subject queue flag` key. */
type RemoteEntries<R> = Map<string, Map<string, RemoteSub<R>>>

const entryKey = (k: InterestKey): string => `${k.subject} ${k.queue} ${k.fromLeaf ? "L" : "R"}`

export class RemoteInterest<R> {
  private readonly byAccount = new Map<string, Sublist<RemoteSub<R>>>()
  private readonly byRemote = new Map<R, RemoteEntries<R>>()
  private readonly counts = new Map<R, number>()
  private readonly maxPerRemote: number
  private readonly cacheSize: number | undefined

  constructor(options: RemoteInterestOptions = {}) {
    this.maxPerRemote = options.maxPerRemote ?? Number.POSITIVE_INFINITY
    this.cacheSize = options.cacheSize
  }

  /** RS+ / LS+ from `remote`. */
  add(remote: R, u: InterestUpdate): InterestChange {
    if (!isValidSubject(u.subject) || (u.queue !== "" && !isValidQueueName(u.queue)) || !(u.weight >= 1)) return "invalid"
    const key = entryKey(u)
    let accounts = this.byRemote.get(remote)
    const existing = accounts?.get(u.account)?.get(key)
    if (existing !== undefined) {
      existing.origin = u.origin
      if (existing.queue === undefined || existing.weight === u.weight) return "unchanged"
      // The Sublist (and its cache) hold the entry itself: the new weight is seen at once.
      existing.weight = u.weight
      return "weight"
    }
    const count = this.counts.get(remote) ?? 0
    if (count >= this.maxPerRemote) return "limit"
    const sub = new RemoteSub(remote, u.account, u.subject, u.queue === "" ? undefined : u.queue, u.fromLeaf, u.queue === "" ? 1 : u.weight, u.origin)
    if (accounts === undefined) this.byRemote.set(remote, (accounts = new Map()))
    let entries = accounts.get(u.account)
    if (entries === undefined) accounts.set(u.account, (entries = new Map()))
    entries.set(key, sub)
    this.counts.set(remote, count + 1)
    this.sublist(u.account).insert(sub)
    return "added"
  }

  /** RS- / LS- from `remote`; false when it held no such interest (nats-server ignores those too). */
  remove(remote: R, k: InterestKey): boolean {
    const accounts = this.byRemote.get(remote)
    const entries = accounts?.get(k.account)
    const key = entryKey(k)
    const sub = entries?.get(key)
    if (sub === undefined) return false
    entries!.delete(key)
    if (entries!.size === 0) accounts!.delete(k.account)
    if (accounts!.size === 0) this.byRemote.delete(remote)
    this.unlink(sub)
    return true
  }

  /** Forgets everything a remote said (its connection closed); returns how many entries it held. */
  dropRemote(remote: R): number {
    const accounts = this.byRemote.get(remote)
    if (accounts === undefined) return 0
    this.byRemote.delete(remote)
    let n = 0
    for (const entries of accounts.values()) {
      for (const sub of entries.values()) {
        this.unlink(sub)
        n++
      }
    }
    return n
  }

  /**
   * The remote entries matching a literal subject in an account: plain ones, and one array per
   * queue group (entries of several remotes, each with its weight). A cache hit allocates
   * nothing; treat the result as immutable.
   */
  match(account: string, subject: string): SublistResult<RemoteSub<R>> {
    return this.byAccount.get(account)?.match(subject) ?? EMPTY
  }

  /** Whether any remote is interested in a literal subject of an account. */
  hasInterest(account: string, subject: string): boolean {
    return this.byAccount.get(account)?.hasInterest(subject) ?? false
  }

  /** Each remote interested in a literal subject of an account, once (allocates: for control paths). */
  remotes(account: string, subject: string): Array<R> {
    const r = this.match(account, subject)
    const seen = new Set<R>()
    for (const s of r.psubs) seen.add(s.remote)
    for (const group of r.qsubs) for (const s of group) seen.add(s.remote)
    return Array.from(seen)
  }

  /** How many entries a remote holds, or all remotes together. */
  count(remote?: R): number {
    if (remote !== undefined) return this.counts.get(remote) ?? 0
    let n = 0
    for (const c of this.counts.values()) n += c
    return n
  }

  /** Entries held in `account`, over every remote (what `/subsz` adds to the local subscriptions). */
  countIn(account: string): number {
    return this.byAccount.get(account)?.count() ?? 0
  }

  /** A remote's entries, account by account in the order they came (for `/routez?subs=1`). */
  entries(remote: R): Array<RemoteSub<R>> {
    const out: Array<RemoteSub<R>> = []
    for (const entries of this.byRemote.get(remote)?.values() ?? []) out.push(...entries.values())
    return out
  }

  private sublist(account: string): Sublist<RemoteSub<R>> {
    let list = this.byAccount.get(account)
    if (list === undefined) {
      list = new Sublist({ cacheSize: this.cacheSize })
      this.byAccount.set(account, list)
    }
    return list
  }

  private unlink(sub: RemoteSub<R>): void {
    const list = this.byAccount.get(sub.account)!
    list.remove(sub)
    if (list.count() === 0) this.byAccount.delete(sub.account)
    const left = (this.counts.get(sub.remote) ?? 1) - 1
    if (left > 0) this.counts.set(sub.remote, left)
    else this.counts.delete(sub.remote)
  }
}
