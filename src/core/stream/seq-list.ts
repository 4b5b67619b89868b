// The ascending sequences one subject holds. Removal is almost always of the
// oldest (limits, acks, purges), so that is O(1) through a moving head; removal
// in the middle is a binary search and a splice over this one subject's list.

export class SeqList {
  private seqs: number[] = []
  private head = 0

  get count(): number {
    return this.seqs.length - this.head
  }

  /** Oldest sequence; undefined when empty. */
  get first(): number | undefined {
    return this.head < this.seqs.length ? this.seqs[this.head] : undefined
  }

  get last(): number | undefined {
    return this.head < this.seqs.length ? this.seqs[this.seqs.length - 1] : undefined
  }

  add(seq: number): void {
    const n = this.seqs.length
    if (n === this.head || this.seqs[n - 1] < seq) {
      this.seqs.push(seq)
      return
    }
    const i = this.lowerBound(seq)
    if (this.seqs[i] !== seq) this.seqs.splice(i, 0, seq)
  }

  remove(seq: number): boolean {
    const s = this.seqs
    if (this.head >= s.length) return false
    if (s[this.head] === seq) {
      this.head++
      if (this.head === s.length) {
        this.seqs = []
        this.head = 0
      } else if (this.head > 64 && this.head * 2 > s.length) {
        this.seqs = s.slice(this.head)
        this.head = 0
      }
      return true
    }
    if (s[s.length - 1] === seq) {
      s.pop()
      return true
    }
    const i = this.lowerBound(seq)
    if (i < s.length && s[i] === seq) {
      s.splice(i, 1)
      return true
    }
    return false
  }

  /** Index (into the backing array) of the first sequence >= seq. */
  private lowerBound(seq: number): number {
    let lo = this.head
    let hi = this.seqs.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.seqs[mid] < seq) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** The first sequence >= seq, if any. */
  atOrAfter(seq: number): number | undefined {
    const i = this.lowerBound(seq)
    return i < this.seqs.length ? this.seqs[i] : undefined
  }

  /** How many sequences are >= seq. */
  countFrom(seq: number): number {
    return this.seqs.length - this.lowerBound(seq)
  }

  /** Sequences below `seq` (all when undefined), oldest first. */
  below(seq: number | undefined): number[] {
    const end = seq === undefined ? this.seqs.length : this.lowerBound(seq)
    return this.seqs.slice(this.head, end)
  }
}
