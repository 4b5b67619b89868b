// The simulation's only source of randomness: a seeded generator (mulberry32) that every
// choice — faults, delays, split points, the server's own random — is drawn from, so a
// seed replays a run exactly.
export class Rng {
  private s: number
  constructor(seed: number) {
    this.s = seed >>> 0
  }
  /** [0, 1) */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  /** integer in [lo, hi] */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  pick<T>(xs: ReadonlyArray<T>): T {
    return xs[Math.floor(this.next() * xs.length)]
  }
  /** An independent generator derived from this one (so adding draws in one place does not shift another). */
  fork(): Rng {
    return new Rng(this.int(1, 0x7fffffff))
  }
}
