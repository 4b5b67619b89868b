// Keys that end at a time, earliest first (a binary min-heap with one entry per key), so a
// shell arms its timer for the next end only while there is one and takes what ran out in
// bounded batches. A key set again moves its end, a key deleted leaves: the queue never
// holds more entries than there are keys with an end. Used for MQTT 5.0 retained messages
// (one key per topic) and for streams' per-message TTLs (one key per sequence).

export class ExpiryQueue<K> {
  /** A binary min-heap on (`ats`, `seqs`): ties keep the order the keys were set in. */
  private readonly ats: Array<number> = []
  private readonly seqs: Array<number> = []
  private readonly keys: Array<K> = []
  /** Where each key sits in the heap. */
  private readonly pos = new Map<K, number>()
  private seq = 0

  get size(): number {
    return this.ats.length
  }

  /** The earliest end, undefined when none is waiting. */
  next(): number | undefined {
    return this.ats.length === 0 ? undefined : this.ats[0]
  }

  /** `key` ends at `at` (replacing the end it had). */
  set(key: K, at: number): void {
    const i = this.pos.get(key)
    if (i !== undefined) this.removeAt(i)
    const n = this.ats.length
    this.ats.push(at)
    this.seqs.push(this.seq++)
    this.keys.push(key)
    this.pos.set(key, n)
    this.up(n)
  }

  /** `key` no longer ends (it is gone, or has no end now); false when it was not waiting. */
  delete(key: K): boolean {
    const i = this.pos.get(key)
    if (i === undefined) return false
    this.removeAt(i)
    return true
  }

  /**
   * Moves at most `max` keys whose end is at or before `now` to `out`, earliest first;
   * true when none is left due.
   */
  takeDue(now: number, max: number, out: Array<K>): boolean {
    let taken = 0
    while (this.ats.length > 0 && this.ats[0] <= now) {
      if (taken === max) return false
      out.push(this.keys[0])
      this.removeAt(0)
      taken++
    }
    return true
  }

  private before(i: number, j: number): boolean {
    const a = this.ats[i]
    const b = this.ats[j]
    return a < b || (a === b && this.seqs[i] < this.seqs[j])
  }

  private swap(i: number, j: number): void {
    const { ats, seqs, keys, pos } = this
    const at = ats[i]
    ats[i] = ats[j]
    ats[j] = at
    const s = seqs[i]
    seqs[i] = seqs[j]
    seqs[j] = s
    const k = keys[i]
    keys[i] = keys[j]
    keys[j] = k
    pos.set(keys[i], i)
    pos.set(keys[j], j)
  }

  private removeAt(i: number): void {
    const last = this.ats.length - 1
    if (i !== last) this.swap(i, last)
    this.pos.delete(this.keys[last])
    this.ats.pop()
    this.seqs.pop()
    this.keys.pop()
    if (i === last) return
    this.up(i)
    this.down(i)
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.before(i, parent)) return
      this.swap(i, parent)
      i = parent
    }
  }

  private down(i: number): void {
    const n = this.ats.length
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let least = i
      if (l < n && this.before(l, least)) least = l
      if (r < n && this.before(r, least)) least = r
      if (least === i) return
      this.swap(i, least)
      i = least
    }
  }
}
