// What a server tells each of its leaf-node connections it wants, per account: the
// account's local subscriptions plus what its other leaf connections in that account asked
// for, never what that connection itself asked for (a hub passes one leaf's interest on to
// the others, and a leaf's own interest coming back to it would make messages loop). A
// plain subject is announced once (LS+) while anyone wants it and withdrawn (LS-) when
// nobody does; a queue group is announced with its weight, the number of members behind
// this server as that connection sees it, sent again whenever it changes (absolute, as
// nats-server sends it). A connection this server solicited (its hub) hears no interest of
// the routes' (`source`), as a nats-server spoke keeps its hub connection and its routes
// apart. Pure bookkeeping: the caller hands a sink that writes the ops.

/** Where the book's LS+/LS- for one leaf connection go. */
export interface LeafInterestSink<L> {
  /** LS+ (a queue group with its weight, 1 for a plain subject). */
  sub(leaf: L, subject: string, queue: string, weight: number): void
  /** LS- */
  unsub(leaf: L, subject: string, queue: string): void
}

/** One subject (and queue group) of an account, and who wants it. */
class Entry<L> {
  /** Local subscriptions on it (queue members for a queue group). */
  local = 0
  /** What each leaf connection announced (its weight; 1 for a plain subject). */
  readonly byLeaf = new Map<L, number>()
  /** local + every leaf's weight. */
  total = 0

  constructor(
    readonly subject: string,
    readonly queue: string
  ) {}

  /** What `leaf` is told: everyone's interest but its own (and, with `routes`, but theirs). */
  viewOf(leaf: L, routes: ReadonlySet<L> | undefined): number {
    if (routes === undefined) return this.total - (this.byLeaf.get(leaf) ?? 0)
    let n = this.local
    for (const [k, w] of this.byLeaf) if (k !== leaf && !routes.has(k)) n += w
    return n
  }
}

class AccountBook<L> {
  /** The leaf connections bound to the account, in the order they came. */
  readonly leafs = new Set<L>()
  /** Those of them that hear no route's interest (connections this server solicited). */
  readonly noRoutes = new Set<L>()
  readonly entries = new Map<string, Entry<L>>()
}

const keyOf = (subject: string, queue: string): string => (queue === "" ? subject : `${subject} ${queue}`)

export class LeafInterestBook<L> {
  private readonly accounts = new Map<string, AccountBook<L>>()
  /** The sources that are routes (`source`), as opposed to leaf connections (`remote`). */
  private readonly routes = new Set<L>()

  /** The leaf connections bound to an account. */
  leafs(account: string): ReadonlySet<L> {
    return this.accounts.get(account)?.leafs ?? new Set()
  }

  /**
   * A leaf connection is bound to `account` and ready: it is told everything the account
   * wants but its own interest (none yet), and the routes' only when `hearsRoutes`.
   */
  attach(account: string, leaf: L, sink: LeafInterestSink<L>, hearsRoutes = true): void {
    const book = this.book(account)
    if (book.leafs.has(leaf)) return
    book.leafs.add(leaf)
    if (!hearsRoutes) book.noRoutes.add(leaf)
    for (const e of book.entries.values()) {
      const w = this.view(book, e, leaf)
      if (w > 0) sink.sub(leaf, e.subject, e.queue, e.queue === "" ? 1 : w)
    }
  }

  /** A leaf connection is gone: what it wanted is withdrawn from the others. */
  detach(account: string, leaf: L, sink: LeafInterestSink<L>): void {
    const book = this.accounts.get(account)
    if (book === undefined || !book.leafs.delete(leaf)) return
    book.noRoutes.delete(leaf)
    for (const e of [...book.entries.values()]) {
      if (e.byLeaf.has(leaf)) this.change(book, e, leaf, 0, sink)
    }
    if (book.leafs.size === 0 && book.entries.size === 0) this.accounts.delete(account)
  }

  /** A local subscription came (`delta` 1) or went (-1). */
  local(account: string, subject: string, queue: string, delta: number, sink: LeafInterestSink<L>): void {
    const book = this.book(account)
    const key = keyOf(subject, queue)
    let e = book.entries.get(key)
    if (e === undefined) {
      if (delta <= 0) return
      book.entries.set(key, (e = new Entry(subject, queue)))
    }
    const before = this.views(book, e)
    e.local = Math.max(0, e.local + delta)
    e.total = e.local + sum(e.byLeaf)
    this.announce(book, e, before, undefined, sink)
    this.prune(account, book, e, key)
  }

  /** A leaf connection's LS+ (`weight` > 0; 1 for a plain subject) or LS- (`weight` 0). */
  remote(account: string, leaf: L, subject: string, queue: string, weight: number, sink: LeafInterestSink<L>): void {
    if (this.accounts.get(account)?.leafs.has(leaf) !== true) return
    this.contribute(account, leaf, subject, queue, weight, sink)
  }

  /**
   * Interest of a source that is told nothing itself (the other servers of a cluster,
   * behind one route): what the account's leaf connections hear includes it. `weight` 0
   * withdraws it.
   */
  source(account: string, src: L, subject: string, queue: string, weight: number, sink: LeafInterestSink<L>): void {
    this.routes.add(src)
    this.contribute(account, src, subject, queue, weight, sink)
  }

  private contribute(account: string, src: L, subject: string, queue: string, weight: number, sink: LeafInterestSink<L>): void {
    const book = this.book(account)
    const key = keyOf(subject, queue)
    let e = book.entries.get(key)
    if (e === undefined) {
      if (weight <= 0) return
      book.entries.set(key, (e = new Entry(subject, queue)))
    }
    this.change(book, e, src, queue === "" ? Math.min(weight, 1) : weight, sink)
    this.prune(account, book, e, key)
  }

  /** A source is gone (its route closed): everything it wanted is withdrawn, in every account. */
  dropSource(src: L, sink: LeafInterestSink<L>): void {
    for (const [account, book] of [...this.accounts]) {
      for (const [key, e] of [...book.entries]) {
        if (!e.byLeaf.has(src)) continue
        this.change(book, e, src, 0, sink)
        this.prune(account, book, e, key)
      }
    }
    // Only now: while it still counted, the connections that do not hear routes had not heard it.
    this.routes.delete(src)
  }

  /** What `src` contributes to a subject (its weight; 0 when nothing). */
  weightOf(account: string, src: L, subject: string, queue = ""): number {
    return this.accounts.get(account)?.entries.get(keyOf(subject, queue))?.byLeaf.get(src) ?? 0
  }

  /** What `leaf` was told about a subject (0: nothing); for tests and monitoring. */
  viewOf(account: string, leaf: L, subject: string, queue = ""): number {
    const book = this.accounts.get(account)
    const e = book?.entries.get(keyOf(subject, queue))
    return e === undefined ? 0 : this.view(book!, e, leaf)
  }

  /** Entries held in an account (bounded by what local subscriptions and capped leaf interest hold). */
  size(account: string): number {
    return this.accounts.get(account)?.entries.size ?? 0
  }

  private change(book: AccountBook<L>, e: Entry<L>, leaf: L, weight: number, sink: LeafInterestSink<L>): void {
    const before = this.views(book, e)
    if (weight > 0) e.byLeaf.set(leaf, weight)
    else e.byLeaf.delete(leaf)
    e.total = e.local + sum(e.byLeaf)
    this.announce(book, e, before, leaf, sink)
  }

  private views(book: AccountBook<L>, e: Entry<L>): Map<L, number> {
    const m = new Map<L, number>()
    for (const l of book.leafs) m.set(l, this.view(book, e, l))
    return m
  }

  /** Each leaf connection whose view changed hears of it (`source` is the one that changed it: its own view does not move). */
  private announce(book: AccountBook<L>, e: Entry<L>, before: Map<L, number>, source: L | undefined, sink: LeafInterestSink<L>): void {
    for (const l of book.leafs) {
      if (l === source) continue
      const was = before.get(l) ?? 0
      const now = this.view(book, e, l)
      if (now === was) continue
      if (now === 0) sink.unsub(l, e.subject, e.queue)
      else if (e.queue !== "") sink.sub(l, e.subject, e.queue, now)
      else if (was === 0) sink.sub(l, e.subject, "", 1)
    }
  }

  private view(book: AccountBook<L>, e: Entry<L>, leaf: L): number {
    return e.viewOf(leaf, book.noRoutes.has(leaf) ? this.routes : undefined)
  }

  private prune(account: string, book: AccountBook<L>, e: Entry<L>, key: string): void {
    if (e.total > 0) return
    book.entries.delete(key)
    if (book.leafs.size === 0 && book.entries.size === 0) this.accounts.delete(account)
  }

  private book(account: string): AccountBook<L> {
    let b = this.accounts.get(account)
    if (b === undefined) this.accounts.set(account, (b = new AccountBook()))
    return b
  }
}

const sum = <L>(m: Map<L, number>): number => {
  let n = 0
  for (const v of m.values()) n += v
  return n
}
