// The bounded history of closed connections (`max_closed_clients`) that /connz?state=closed reads.
export class ClosedRing<T> {
  private readonly items: Array<T | undefined>
  private next = 0
  private count = 0

  constructor(readonly capacity: number) {
    this.items = new Array(Math.max(0, capacity))
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
