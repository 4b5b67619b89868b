// What monitoring reads from the stream subsystem (kept narrow so the monitor source
// does not depend on the subsystem's internals).
import type { JetStreamSnapshot } from "../../core/monitor/source.js"

export interface JetStreamMonitor {
  readonly snapshot: () => JetStreamSnapshot
  /** Undefined when healthy; else the first problem, in nats-server's words. */
  readonly healthError: () => string | undefined
  readonly enabledFor: (account: string) => boolean
}
