// Interest retention, exactly: a message stays while at least one consumer whose
// filters match its subject still holds it (has not acknowledged or passed it by;
// see ConsumerMachine.holds). A message nobody would hold is never stored, and
// whatever a consumer lets go (ack, +TERM, max_deliver, delivery under ack none,
// deletion) is removed at once unless another consumer still holds it.
import type { StreamStore } from "../../services/store.js"

export interface Holder {
  holds(seq: number, subject: string): boolean
}

export const heldBy = (holders: ReadonlyArray<Holder>, seq: number, subject: string): boolean => {
  for (const h of holders) if (h.holds(seq, subject)) return true
  return false
}

/** Remove each of `seqs` that no holder holds; number removed. */
export const releaseUnheld = (store: StreamStore, holders: ReadonlyArray<Holder>, seqs: Iterable<number>): number => {
  // Removed in batches (one tombstone write each), bounded so a whole-stream sweep stays small.
  const unheld: Array<number> = []
  let n = 0
  const flush = () => {
    const r = store.removeSync(unheld)
    if (typeof r === "number") n += r
    unheld.length = 0
  }
  for (const seq of seqs) {
    const subject = store.subjectOf(seq)
    if (subject !== undefined && !heldBy(holders, seq, subject)) unheld.push(seq)
    if (unheld.length >= 4096) flush()
  }
  if (unheld.length > 0) flush()
  return n
}

function* range(from: number, to: number): Generator<number> {
  for (let seq = from; seq <= to; seq++) yield seq
}

/** Remove every stored message at or after `from` that no holder holds (a holder left or changed). */
export const releaseAllUnheld = (store: StreamStore, holders: ReadonlyArray<Holder>, from = 0): number => {
  const st = store.state()
  return releaseUnheld(store, holders, range(Math.max(from, st.first_seq), st.last_seq))
}
