// Sequence -> entry for one stream. Sequences are assigned densely and removed
// mostly from the front, so a sliding array beats a hash map: no hashing, no
// rehash on growth. A few old survivors (a KV key never updated) must not pin a
// long, mostly empty array, so when the array gets sparse its leading entries
// move to a side map with a sorted key list.

export class SeqArray<E> {
  private items: Array<E | undefined> = []
  /** Index in `items` of sequence `base`. */
  private head = 0
  private base = 1
  private inArray = 0
  /** Entries below `base`; keys ascending in `oldKeys[oldHead..]`, which may hold removed ones. */
  private readonly old = new Map<number, E>()
  private oldKeys: number[] = []
  private oldHead = 0

  get size(): number {
    return this.inArray + this.old.size
  }

  get(seq: number): E | undefined {
    if (seq < this.base) return this.old.size === 0 ? undefined : this.old.get(seq)
    const i = seq - this.base + this.head
    return i < this.items.length ? this.items[i] : undefined
  }

  has(seq: number): boolean {
    return this.get(seq) !== undefined
  }

  /** Add `seq`, which must be above every sequence added before. */
  push(seq: number, e: E): void {
    if (this.inArray === 0) {
      this.items = []
      this.head = 0
      this.base = seq
    }
    const i = seq - this.base + this.head
    while (this.items.length < i) this.items.push(undefined)
    this.items.push(e)
    this.inArray++
  }

  delete(seq: number): E | undefined {
    if (seq < this.base) return this.deleteOld(seq)
    const i = seq - this.base + this.head
    if (i >= this.items.length) return undefined
    const e = this.items[i]
    if (e === undefined) return undefined
    this.items[i] = undefined
    this.inArray--
    if (this.inArray === 0) {
      this.items = []
      this.head = 0
      this.base = seq + 1
    } else if (i === this.head) {
      this.skipHoles()
    } else if (i === this.items.length - 1) {
      while (this.items[this.items.length - 1] === undefined) this.items.pop()
    }
    this.rebalance()
    return e
  }

  private deleteOld(seq: number): E | undefined {
    const e = this.old.get(seq)
    if (e === undefined) return undefined
    this.old.delete(seq)
    if (this.old.size === 0) {
      this.oldKeys = []
      this.oldHead = 0
    } else {
      while (!this.old.has(this.oldKeys[this.oldHead])) this.oldHead++
      if (this.oldKeys.length - this.oldHead > this.old.size * 2 + 32) {
        this.oldKeys = this.oldKeys.slice(this.oldHead).filter((k) => this.old.has(k))
        this.oldHead = 0
      }
    }
    return e
  }

  private skipHoles(): void {
    while (this.items[this.head] === undefined) {
      this.head++
      this.base++
    }
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }

  /** Keep the array at least 1/8 full: move leading entries to the side map. */
  private rebalance(): void {
    const span = this.items.length - this.head
    if (span <= 1024 || this.inArray * 8 >= span) return
    while (this.inArray * 2 < this.items.length - this.head) {
      const e = this.items[this.head]
      if (e !== undefined) {
        this.old.set(this.base, e)
        this.oldKeys.push(this.base)
        this.inArray--
      }
      this.head++
      this.base++
    }
    if (this.inArray > 0) this.skipHoles()
    this.items = this.items.slice(this.head)
    this.head = 0
  }

  /** The lowest sequence held, if any. */
  firstSeq(): number | undefined {
    if (this.old.size > 0) return this.oldKeys[this.oldHead]
    return this.inArray === 0 ? undefined : this.base
  }

  /** The entry with the lowest sequence >= seq. */
  nextFrom(seq: number): E | undefined {
    if (seq < this.base && this.old.size > 0) {
      let lo = this.oldHead
      let hi = this.oldKeys.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (this.oldKeys[mid] < seq) lo = mid + 1
        else hi = mid
      }
      for (; lo < this.oldKeys.length; lo++) {
        const e = this.old.get(this.oldKeys[lo])
        if (e !== undefined) return e
      }
    }
    for (let i = Math.max(seq - this.base, 0) + this.head; i < this.items.length; i++) {
      const e = this.items[i]
      if (e !== undefined) return e
    }
    return undefined
  }

  *values(): IterableIterator<E> {
    for (let k = this.oldHead; k < this.oldKeys.length; k++) {
      const e = this.old.get(this.oldKeys[k])
      if (e !== undefined) yield e
    }
    for (let i = this.head; i < this.items.length; i++) {
      const e = this.items[i]
      if (e !== undefined) yield e
    }
  }
}
