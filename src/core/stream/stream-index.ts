// What a stream holds, without the bytes: sequence -> (subject, time, size, where),
// per-subject sequence lists, first/last sequence and totals. Both stores keep one
// and differ only in `loc` (the message itself in memory, a block offset on disk).
// Pure and synchronous; retention.ts decides what to drop, this only keeps books.
import { matchLiteral, subjectHasWildcard } from "../subject/subject.js"
import { SeqArray } from "./seq-array.js"
import { SeqList } from "./seq-list.js"

export interface IndexEntry<L> {
  readonly seq: number
  readonly subject: string
  /** Milliseconds since the epoch, as given to `store`. */
  readonly ts: number
  /** Bytes counted against `max_bytes` (see `msgSize`). */
  readonly size: number
  loc: L
}

export interface SubjectState {
  readonly msgs: number
  readonly first: number
  readonly last: number
}

/** `""` and `">"` match everything. */
export const isAllFilter = (filter: string): boolean => filter === "" || filter === ">"

export const subjectMatches = (subject: string, filter: string): boolean =>
  isAllFilter(filter) || subject === filter || (subjectHasWildcard(filter) && matchLiteral(subject, filter))

const matchesAny = (subject: string, filters: ReadonlyArray<string>): boolean => {
  for (const f of filters) if (subjectMatches(subject, f)) return true
  return false
}

export class StreamIndex<L> {
  private readonly msgs = new SeqArray<IndexEntry<L>>()
  private readonly subjects = new Map<string, SeqList>()
  private _first = 1
  private _last = 0
  private _bytes = 0
  private _lastTs = 0
  private _reserved = 0

  /** Oldest live sequence, or `last + 1` when empty. */
  get first(): number {
    return this._first
  }
  get last(): number {
    return this._last
  }
  get bytes(): number {
    return this._bytes
  }
  get count(): number {
    return this.msgs.size
  }
  /** Time of the message that took `last` (kept when that message is removed). */
  get lastTs(): number {
    return this._lastTs
  }
  get nextSeq(): number {
    return Math.max(this._last, this._reserved) + 1
  }

  /**
   * Sequences up to `seq` are never handed out again, though no message holds them
   * (acknowledged ones a damaged disk lost): the next message takes a later one.
   */
  reserveUpTo(seq: number): void {
    if (seq > this._reserved) this._reserved = seq
  }

  /** The highest sequence reserved by `reserveUpTo` (0 when none). */
  get reserved(): number {
    return this._reserved
  }
  get numSubjects(): number {
    return this.subjects.size
  }

  get(seq: number): IndexEntry<L> | undefined {
    return this.msgs.get(seq)
  }

  firstEntry(): IndexEntry<L> | undefined {
    return this.msgs.get(this._first)
  }

  subject(subject: string): SeqList | undefined {
    return this.subjects.get(subject)
  }

  /**
   * Record a message. `seq` must be above every sequence ever recorded (`nextSeq`
   * when storing; recovery may skip ahead over removed ones).
   */
  add(seq: number, subject: string, ts: number, size: number, loc: L): IndexEntry<L> {
    if (seq <= this._last) throw new Error(`sequence ${seq} is not above last ${this._last}`)
    const e: IndexEntry<L> = { seq, subject, ts, size, loc }
    if (this.msgs.size === 0) this._first = seq
    this.msgs.push(seq, e)
    let list = this.subjects.get(subject)
    if (list === undefined) {
      list = new SeqList()
      this.subjects.set(subject, list)
    }
    list.add(seq)
    this._last = seq
    this._lastTs = ts
    this._bytes += size
    return e
  }

  remove(seq: number): IndexEntry<L> | undefined {
    const e = this.msgs.get(seq)
    if (e === undefined) return undefined
    this.msgs.delete(seq)
    this._bytes -= e.size
    const list = this.subjects.get(e.subject)
    if (list !== undefined) {
      list.remove(seq)
      if (list.count === 0) this.subjects.delete(e.subject)
    }
    if (seq === this._first) this.advanceFirst()
    return e
  }

  /** Drop every message below `floor`; sequences below it are never used again. */
  setFloor(floor: number, out: IndexEntry<L>[]): void {
    while (this._first < floor && this.msgs.size > 0) {
      const e = this.remove(this._first)
      if (e !== undefined) out.push(e)
    }
    if (floor - 1 > this._last) this._last = floor - 1
    if (this.msgs.size === 0) this._first = this._last + 1
  }

  /** Use up the next sequence without a message (nats-server's SkipMsg); returns it. */
  skip(ts: number): number {
    const seq = this.nextSeq
    this.restoreLast(seq, ts)
    return seq
  }

  /** Raise `last` (and `lastTs`) to what recovery found in tombstones and markers. */
  restoreLast(last: number, lastTs: number): void {
    if (last > this._last) {
      this._last = last
      this._lastTs = lastTs
    }
    if (this.msgs.size === 0) this._first = this._last + 1
  }

  private advanceFirst(): void {
    this._first = this.msgs.firstSeq() ?? this._last + 1
  }

  /** Live entries in sequence order. */
  entries(): IterableIterator<IndexEntry<L>> {
    return this.msgs.values()
  }

  /** Each stored subject matched by `filter` with its list. */
  *subjectsMatching(filter: string): IterableIterator<[string, SeqList]> {
    if (!isAllFilter(filter) && !subjectHasWildcard(filter)) {
      const list = this.subjects.get(filter)
      if (list !== undefined) yield [filter, list]
      return
    }
    for (const entry of this.subjects) if (subjectMatches(entry[0], filter)) yield entry
  }

  lastSeqFor(filter: string): number | undefined {
    let best: number | undefined
    for (const [, list] of this.subjectsMatching(filter)) {
      const l = list.last
      if (l !== undefined && (best === undefined || l > best)) best = l
    }
    return best
  }

  /** Next live sequence >= from whose subject matches one of `filters` (none = all). */
  nextMatching(filters: ReadonlyArray<string>, from: number): IndexEntry<L> | undefined {
    const start = Math.max(from, this._first)
    if (start > this._last) return undefined
    if (filters.length === 0 || filters.some(isAllFilter)) return this.msgs.nextFrom(start)
    // Scanning sequences costs the distance to the match; asking each subject's
    // list costs a binary search per stored subject. Take the cheaper bound.
    if (this.subjects.size * 8 < this._last - start + 1 || filters.every((f) => !subjectHasWildcard(f))) {
      let best: number | undefined
      for (const f of filters) {
        for (const [, list] of this.subjectsMatching(f)) {
          const s = list.atOrAfter(start)
          if (s !== undefined && (best === undefined || s < best)) best = s
        }
      }
      return best === undefined ? undefined : this.msgs.get(best)
    }
    for (let s = start; s <= this._last; s++) {
      const e = this.msgs.get(s)
      if (e !== undefined && matchesAny(e.subject, filters)) return e
    }
    return undefined
  }

  /** Live messages with sequence >= from matching one of `filters` (none = all). */
  numPending(filters: ReadonlyArray<string>, from: number): number {
    const start = Math.max(from, this._first)
    if (start > this._last) return 0
    const all = filters.length === 0 || filters.some(isAllFilter)
    if (all && start === this._first) return this.msgs.size
    // Walk the sequences when that is short, else ask each subject's list.
    if (this._last - start < this.subjects.size * 8) {
      let n = 0
      for (let s = start; s <= this._last; s++) {
        const e = this.msgs.get(s)
        if (e !== undefined && (all || matchesAny(e.subject, filters))) n++
      }
      return n
    }
    let n = 0
    for (const [subject, list] of this.subjects) {
      if (all || matchesAny(subject, filters)) n += list.countFrom(start)
    }
    return n
  }

  subjectsState(filter: string): Map<string, SubjectState> {
    const out = new Map<string, SubjectState>()
    for (const [subject, list] of this.subjectsMatching(filter)) {
      out.set(subject, { msgs: list.count, first: list.first ?? 0, last: list.last ?? 0 })
    }
    return out
  }

  /** Removed sequences in (first, last], at most `limit` (`num_deleted` of them in all). */
  deleted(limit = Number.POSITIVE_INFINITY): number[] {
    const out: number[] = []
    if (this.msgs.size === 0) return out
    for (let s = this._first + 1; s <= this._last && out.length < limit; s++) {
      if (!this.msgs.has(s)) out.push(s)
    }
    return out
  }

  /** Interior gaps: the JetStream `num_deleted`. */
  get numDeleted(): number {
    return this.msgs.size === 0 ? 0 : this._last - this._first + 1 - this.msgs.size
  }
}
