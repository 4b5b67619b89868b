// The subscription index: which subscriptions match a published subject. A trie
// of tokens (literal children, one `*` child and one `>` child per level) plus a
// bounded cache of match results, kept exact on every insert and remove, so a
// publish to a hot subject is one Map lookup with no allocation.

import { matchLiteral, subjectHasWildcard } from "./subject.js"

export interface SubLike {
  readonly subject: string
  readonly queue: string | undefined
}

/**
 * What a subject matches: plain subscriptions, and one array per queue group
 * (grouped by queue name, never empty) from which the caller picks one member.
 * Results are shared with the cache: treat them as immutable. Order within them is
 * deterministic but unspecified.
 */
export interface SublistResult<S> {
  readonly psubs: ReadonlyArray<S>
  readonly qsubs: ReadonlyArray<ReadonlyArray<S>>
}

/** The counters `/subsz` reports, with nats-server's meanings. */
export interface SublistStats {
  readonly numSubs: number
  readonly numCache: number
  readonly numInserts: number
  readonly numRemoves: number
  readonly numMatches: number
  /** cache hits / matches, a fraction in 0..1 (0 before any match). */
  readonly cacheHitRate: number
  /** Over cached results: psubs.length + qsubs.length (queue groups, not members). */
  readonly maxFanout: number
  readonly avgFanout: number
}

export interface SublistOptions {
  /** Maximum cached match results; 0 disables the cache. Default 1024. */
  readonly cacheSize?: number
}

const EMPTY_RESULT: SublistResult<never> = Object.freeze({
  psubs: Object.freeze([]) as ReadonlyArray<never>,
  qsubs: Object.freeze([]) as ReadonlyArray<ReadonlyArray<never>>
})

class Node<S> {
  next: Level<S> | undefined = undefined
  readonly psubs = new Set<S>()
  qsubs: Map<string, Set<S>> | undefined = undefined

  hasSubs(): boolean {
    return this.psubs.size > 0 || this.qsubs !== undefined
  }

  isEmpty(): boolean {
    return !this.hasSubs() && this.next === undefined
  }
}

class Level<S> {
  readonly nodes = new Map<string, Node<S>>()
  pwc: Node<S> | undefined = undefined
  fwc: Node<S> | undefined = undefined

  isEmpty(): boolean {
    return this.nodes.size === 0 && this.pwc === undefined && this.fwc === undefined
  }

  child(token: string): Node<S> | undefined {
    return token === "*" ? this.pwc : token === ">" ? this.fwc : this.nodes.get(token)
  }

  childOrCreate(token: string): Node<S> {
    if (token === "*") return (this.pwc ??= new Node())
    if (token === ">") return (this.fwc ??= new Node())
    let node = this.nodes.get(token)
    if (node === undefined) {
      node = new Node()
      this.nodes.set(token, node)
    }
    return node
  }

  unlink(token: string): void {
    if (token === "*") this.pwc = undefined
    else if (token === ">") this.fwc = undefined
    else this.nodes.delete(token)
  }
}

/**
 * A cached result, also a link in the list that orders the cache oldest first
 * (finding the oldest key of a Map that has seen deletes gets slow in V8).
 */
class CacheEntry<S> {
  prev: CacheEntry<S> | undefined = undefined
  next: CacheEntry<S> | undefined = undefined
  constructor(
    readonly subject: string,
    /** The subject's first token: the cache is also indexed by it. */
    readonly first: string,
    public result: SublistResult<S>
  ) {}
}

/** Cached entries a wildcard insert or remove updates one by one; past it they are dropped. */
const CACHE_SCAN_LIMIT = 64

const STAR = 0x2a
const GT = 0x3e

const tokenEnd = (s: string, start: number): number => {
  const i = s.indexOf(".", start)
  return i < 0 ? s.length : i
}

const findGroup = <S extends SubLike>(qsubs: ReadonlyArray<ReadonlyArray<S>>, queue: string): number => {
  for (let i = 0; i < qsubs.length; i++) {
    if (qsubs[i][0].queue === queue) return i
  }
  return -1
}

/** Adds a node's subscriptions to a result being built, merging queue groups by name. */
const collect = <S extends SubLike>(node: Node<S>, psubs: S[], qsubs: S[][]): void => {
  for (const sub of node.psubs) psubs.push(sub)
  if (node.qsubs === undefined) return
  for (const [queue, members] of node.qsubs) {
    const i = findGroup(qsubs, queue)
    const group = i < 0 ? [] : qsubs[i]
    if (i < 0) qsubs.push(group)
    for (const sub of members) group.push(sub)
  }
}

/** A copy of `result` that also holds `sub`. */
const withSub = <S extends SubLike>(result: SublistResult<S>, sub: S): SublistResult<S> => {
  if (sub.queue === undefined) return { psubs: [...result.psubs, sub], qsubs: result.qsubs }
  const i = findGroup(result.qsubs, sub.queue)
  const qsubs = result.qsubs.slice()
  if (i < 0) qsubs.push([sub])
  else qsubs[i] = [...qsubs[i], sub]
  return { psubs: result.psubs, qsubs }
}

export class Sublist<S extends SubLike> {
  private readonly root = new Level<S>()
  /** Every subscription, in insertion order: identity, count and listing. */
  private readonly subs = new Set<S>()
  /** Literal subject -> result, bounded; evicts the oldest inserted entry first. */
  private readonly cache = new Map<string, CacheEntry<S>>()
  private oldest: CacheEntry<S> | undefined = undefined
  private newest: CacheEntry<S> | undefined = undefined
  /**
   * Cached entries by first token: a wildcard insert or remove whose first token is
   * literal only looks at the entries it could match, not the whole cache (a SUBSCRIBE
   * of thousands of MQTT filters would otherwise scan the cache thousands of times).
   */
  private readonly byFirst = new Map<string, Set<CacheEntry<S>>>()
  private readonly cacheSize: number
  private inserts = 0
  private removes = 0
  private matches = 0
  private cacheHits = 0

  constructor(options?: SublistOptions) {
    this.cacheSize = Math.max(0, options?.cacheSize ?? 1024)
  }

  /**
   * Adds a subscription whose subject the caller has validated. Inserting the same
   * object again is a no-op (it is stored, counted and delivered to once).
   */
  insert(sub: S): void {
    if (this.subs.has(sub)) return
    const subject = sub.subject
    let level = this.root
    let start = 0
    for (;;) {
      const end = tokenEnd(subject, start)
      const node = level.childOrCreate(subject.slice(start, end))
      if (end === subject.length) {
        this.addToNode(node, sub)
        break
      }
      level = node.next ??= new Level()
      start = end + 1
    }
    this.subs.add(sub)
    this.inserts++
    this.addToCache(sub)
  }

  /** Removes a subscription by identity; false when it was not in the list. */
  remove(sub: S): boolean {
    if (!this.subs.has(sub)) return false
    const subject = sub.subject
    const levels: Level<S>[] = []
    const nodes: Node<S>[] = []
    const tokens: string[] = []
    let level: Level<S> | undefined = this.root
    let start = 0
    while (level !== undefined) {
      const end = tokenEnd(subject, start)
      const token = subject.slice(start, end)
      const node = level.child(token)
      if (node === undefined) break
      levels.push(level)
      nodes.push(node)
      tokens.push(token)
      if (end === subject.length) break
      level = node.next
      start = end + 1
    }
    // The path exists for every stored subscription: insert built it and pruning
    // only drops nodes without subscriptions below them.
    this.removeFromNode(nodes[nodes.length - 1], sub)
    this.prune(levels, nodes, tokens)
    this.subs.delete(sub)
    this.removes++
    this.removeFromCache(sub)
    return true
  }

  /** The subscriptions matching a literal subject. A cache hit allocates nothing. */
  match(subject: string): SublistResult<S> {
    this.matches++
    const cached = this.cache.get(subject)
    if (cached !== undefined) {
      this.cacheHits++
      return cached.result
    }
    const psubs: S[] = []
    const qsubs: S[][] = []
    this.matchLevel(this.root, subject, 0, psubs, qsubs)
    const result: SublistResult<S> = psubs.length === 0 && qsubs.length === 0 ? EMPTY_RESULT : { psubs, qsubs }
    if (this.cacheSize > 0) this.cacheAdd(subject, result)
    return result
  }

  /** Whether any subscription matches a literal subject; leaves cache and stats as they are. */
  hasInterest(subject: string): boolean {
    const cached = this.cache.get(subject)
    if (cached !== undefined) return cached.result.psubs.length > 0 || cached.result.qsubs.length > 0
    return this.interestIn(this.root, subject, 0)
  }

  /**
   * Whether any subscription's subject could match a subject `pattern` also matches
   * (both may hold wildcards; `subjectsCollide` of each pair, without the pairs): for
   * overlapping stream subjects. Costs the trie paths the pattern can take, not the
   * number of subscriptions; an explicit stack, as a pattern may have many tokens.
   */
  collides(pattern: string): boolean {
    const n = pattern.length
    const levels: Array<Level<S>> = [this.root]
    const starts: Array<number> = [0]
    while (levels.length > 0) {
      const level = levels.pop()!
      const pos = starts.pop()!
      // A stored `>` here takes this token and whatever follows.
      if (level.fwc !== undefined && level.fwc.hasSubs()) return true
      const end = tokenEnd(pattern, pos)
      const wild = end - pos === 1 ? pattern.charCodeAt(pos) : 0
      // The pattern's `>` takes any stored subject that goes on at this level (pruning keeps no dead nodes).
      if (wild === GT) {
        if (!level.isEmpty()) return true
        continue
      }
      const last = end === n
      const pwc = level.pwc
      if (pwc !== undefined) {
        if (last) {
          if (pwc.hasSubs()) return true
        } else if (pwc.next !== undefined) {
          levels.push(pwc.next)
          starts.push(end + 1)
        }
      }
      if (wild === STAR) {
        for (const node of level.nodes.values()) {
          if (last) {
            if (node.hasSubs()) return true
          } else if (node.next !== undefined) {
            levels.push(node.next)
            starts.push(end + 1)
          }
        }
        continue
      }
      const node = level.nodes.get(pos === 0 && last ? pattern : pattern.slice(pos, end))
      if (node === undefined) continue
      if (last) {
        if (node.hasSubs()) return true
      } else if (node.next !== undefined) {
        levels.push(node.next)
        starts.push(end + 1)
      }
    }
    return false
  }

  count(): number {
    return this.subs.size
  }

  /** Every subscription, in insertion order. */
  all(): S[] {
    return Array.from(this.subs)
  }

  stats(): SublistStats {
    let total = 0
    let max = 0
    for (let e = this.oldest; e !== undefined; e = e.next) {
      const r = e.result
      const fanout = r.psubs.length + r.qsubs.length
      total += fanout
      if (fanout > max) max = fanout
    }
    return {
      numSubs: this.subs.size,
      numCache: this.cache.size,
      numInserts: this.inserts,
      numRemoves: this.removes,
      numMatches: this.matches,
      cacheHitRate: this.matches > 0 ? this.cacheHits / this.matches : 0,
      maxFanout: max,
      avgFanout: total > 0 ? total / this.cache.size : 0
    }
  }

  private addToNode(node: Node<S>, sub: S): void {
    if (sub.queue === undefined) {
      node.psubs.add(sub)
      return
    }
    const qsubs = (node.qsubs ??= new Map())
    let members = qsubs.get(sub.queue)
    if (members === undefined) {
      members = new Set()
      qsubs.set(sub.queue, members)
    }
    members.add(sub)
  }

  private removeFromNode(node: Node<S>, sub: S): void {
    if (sub.queue === undefined) {
      node.psubs.delete(sub)
      return
    }
    const members = node.qsubs?.get(sub.queue)
    if (members === undefined) return
    members.delete(sub)
    if (members.size > 0) return
    node.qsubs!.delete(sub.queue)
    if (node.qsubs!.size === 0) node.qsubs = undefined
  }

  /** Drops the nodes along a removal path that no longer lead to any subscription. */
  private prune(levels: Level<S>[], nodes: Node<S>[], tokens: string[]): void {
    for (let i = nodes.length - 1; i >= 0; i--) {
      const node = nodes[i]
      if (node.next !== undefined && node.next.isEmpty()) node.next = undefined
      if (!node.isEmpty()) return
      levels[i].unlink(tokens[i])
    }
  }

  /**
   * Keeps cached results exact after an insert: each cached subject the new filter
   * matches gets a copy with the subscription added (copies, because callers may
   * still hold the old result). A literal filter can only match its own key.
   */
  private addToCache(sub: S): void {
    if (this.cache.size === 0) return
    const filter = sub.subject
    if (!subjectHasWildcard(filter)) {
      const e = this.cache.get(filter)
      if (e !== undefined) e.result = withSub(e.result, sub)
      return
    }
    this.forCached(filter, (e) => {
      if (matchLiteral(e.subject, filter)) e.result = withSub(e.result, sub)
    })
  }

  /**
   * Calls `f` with each cached entry a wildcard filter could match; `f` may delete the
   * entry it is given. Past CACHE_SCAN_LIMIT candidates they are dropped instead (the
   * cache refills on the next publishes): thousands of wildcard subscriptions under one
   * busy prefix must not each walk the whole cache.
   */
  private forCached(filter: string, f: (e: CacheEntry<S>) => void): void {
    const first = filter.slice(0, tokenEnd(filter, 0))
    const all = first === "*" || first === ">"
    const bucket = all ? undefined : this.byFirst.get(first)
    const n = all ? this.cache.size : bucket?.size ?? 0
    const visit = n > CACHE_SCAN_LIMIT ? (e: CacheEntry<S>) => this.cacheDelete(e) : f
    if (!all) {
      if (bucket !== undefined) for (const e of bucket) visit(e)
      return
    }
    for (let e = this.oldest; e !== undefined; ) {
      const next = e.next
      visit(e)
      e = next
    }
  }

  /** After a remove, cached subjects the filter matched are dropped and recomputed on demand. */
  private removeFromCache(sub: S): void {
    if (this.cache.size === 0) return
    const filter = sub.subject
    if (!subjectHasWildcard(filter)) {
      const e = this.cache.get(filter)
      if (e !== undefined) this.cacheDelete(e)
      return
    }
    this.forCached(filter, (e) => {
      if (matchLiteral(e.subject, filter)) this.cacheDelete(e)
    })
  }

  private cacheAdd(subject: string, result: SublistResult<S>): void {
    if (this.cache.size >= this.cacheSize) this.cacheDelete(this.oldest!)
    const e = new CacheEntry(subject, subject.slice(0, tokenEnd(subject, 0)), result)
    let bucket = this.byFirst.get(e.first)
    if (bucket === undefined) this.byFirst.set(e.first, (bucket = new Set()))
    bucket.add(e)
    e.prev = this.newest
    if (this.newest !== undefined) this.newest.next = e
    else this.oldest = e
    this.newest = e
    this.cache.set(subject, e)
  }

  private cacheDelete(e: CacheEntry<S>): void {
    if (e.prev !== undefined) e.prev.next = e.next
    else this.oldest = e.next
    if (e.next !== undefined) e.next.prev = e.prev
    else this.newest = e.prev
    e.prev = e.next = undefined
    this.cache.delete(e.subject)
    const bucket = this.byFirst.get(e.first)!
    bucket.delete(e)
    if (bucket.size === 0) this.byFirst.delete(e.first)
  }

  private matchLevel(level: Level<S>, subject: string, start: number, psubs: S[], qsubs: S[][]): void {
    let l: Level<S> | undefined = level
    let pos = start
    const n = subject.length
    while (l !== undefined) {
      const end = tokenEnd(subject, pos)
      const last = end === n
      if (l.fwc !== undefined) collect(l.fwc, psubs, qsubs)
      const pwc: Node<S> | undefined = l.pwc
      if (pwc !== undefined) {
        if (last) collect(pwc, psubs, qsubs)
        else if (pwc.next !== undefined) this.matchLevel(pwc.next, subject, end + 1, psubs, qsubs)
      }
      const node = l.nodes.get(pos === 0 && last ? subject : subject.slice(pos, end))
      if (node === undefined) return
      if (last) {
        collect(node, psubs, qsubs)
        return
      }
      l = node.next
      pos = end + 1
    }
  }

  private interestIn(level: Level<S>, subject: string, start: number): boolean {
    let l: Level<S> | undefined = level
    let pos = start
    const n = subject.length
    while (l !== undefined) {
      const end = tokenEnd(subject, pos)
      const last = end === n
      if (l.fwc !== undefined && l.fwc.hasSubs()) return true
      const pwc: Node<S> | undefined = l.pwc
      if (pwc !== undefined) {
        if (last) {
          if (pwc.hasSubs()) return true
        } else if (pwc.next !== undefined && this.interestIn(pwc.next, subject, end + 1)) {
          return true
        }
      }
      const node = l.nodes.get(pos === 0 && last ? subject : subject.slice(pos, end))
      if (node === undefined) return false
      if (last) return node.hasSubs()
      l = node.next
      pos = end + 1
    }
    return false
  }
}
