// The bounded history of closed connections (`max_closed_clients`) that /connz?state=closed reads.
export class ClosedRing<T> {
  private items: Array<T | undefined>
  private next = 0
  private count = 0

  constructor(private cap: number) {
    this.items = new Array(Math.max(0, cap))
  }

  get capacity(): number {
    return this.cap
  }

  /** A new bound (a configuration reload): the newest records are kept. */
  resize(capacity: number): void {
    if (capacity === this.cap) return
    const all = this.toArray()
    const keep = capacity <= 0 ? [] : all.slice(Math.max(0, all.length - capacity))
    this.cap = capacity
    this.items = new Array(Math.max(0, capacity))
    this.next = 0
    this.count = 0
    for (const item of keep) this.push(item)
  }

  push(item: T): void {
    if (this.capacity <= 0) return
    this.items[this.next] = item
    this.next = (this.next + 1) % this.capacity
    if (this.count < this.capacity) this.count++
  }

  get size(): number {
    return this.count
  }

  /** Oldest first. */
  toArray(): Array<T> {
    const out: Array<T> = []
    const start = (this.next - this.count + this.capacity) % Math.max(1, this.capacity)
    for (let i = 0; i < this.count; i++) out.push(this.items[(start + i) % this.capacity] as T)
    return out
  }
}
