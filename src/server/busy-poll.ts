// Busy polling: after client I/O the event loop keeps polling the sockets for a short
// window instead of sleeping in epoll, as long as I/O keeps coming back within that
// window. On virtual machines a sleeping core takes tens of microseconds to wake (an exit
// to the hypervisor and back per wake-up), which is most of a request-reply round trip
// on loopback; a loop that is still polling reads the next request at once. Traffic whose
// gaps are mostly longer than the window (sparse devices, idle servers) never spins.

/** What the poller needs of the event loop: a clock in milliseconds and "run f after this turn's I/O". */
export interface BusyPollLoop {
  readonly now: () => number
  readonly schedule: (f: () => void) => void
}

/**
 * Share of recent gaps that must fall within the window before the loop spins: with
 * random (Poisson) arrivals and a 200 µs window, about 9,500 small chunks a second. A
 * single late chunk after a run of prompt ones leaves the share above it.
 */
export const SPIN_THRESHOLD = 0.85
/** Chunks from this size on are bulk transfer (Node reads 64 KiB at most), not request and reply. */
export const SMALL_CHUNK = 32 * 1024
/** Weight of the newest gap in the running share (1/8: about the last dozen gaps count). */
const WEIGHT = 1 / 8

export class BusyPoll {
  /** When the last I/O arrived (ms). */
  private last = -Infinity
  /** Running share of gaps no longer than the window (0..1). */
  private share = 0
  private spinning = false

  constructor(
    /** How long to keep polling after the last I/O, in milliseconds (> 0). */
    readonly windowMs: number,
    private readonly loop: BusyPollLoop
  ) {}

  /** A chunk of `bytes` was read from a client socket. */
  activity(bytes: number): void {
    const now = this.loop.now()
    // A full read is a stream in flight: the loop is busy anyway, and polling would only
    // split it into smaller reads and writes. Small chunks close together are a conversation.
    const hit = bytes < SMALL_CHUNK && now - this.last <= this.windowMs
    this.share += ((hit ? 1 : 0) - this.share) * WEIGHT
    this.last = now
    if (!this.spinning && this.share >= SPIN_THRESHOLD) {
      this.spinning = true
      this.loop.schedule(this.spin)
    }
  }

  get isSpinning(): boolean {
    return this.spinning
  }

  private readonly spin = (): void => {
    if (this.loop.now() - this.last < this.windowMs) this.loop.schedule(this.spin)
    else this.spinning = false
  }
}
