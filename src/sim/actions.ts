// What a simulated NATS client does in a step, shared by the single-server and the cluster
// simulations: a connection's link profile, publishing a batch, a request, an UNSUB.
// Every choice is drawn from the caller's generator, in a fixed order (a seed replays).
import type { SimClient } from "./clients.js"
import type { FaultMix } from "./faults.js"
import type { LinkProfile } from "./network.js"
import type { Rng } from "./rng.js"

export interface Actor {
  readonly rng: Rng
  readonly stats: Record<string, number>
  trace(line: string): void
}

/** A new client's link: fast, or (in `slowLinks` of the cases) one that drains slowly. */
export const clientProfile = (r: Rng, faults: FaultMix): LinkProfile => {
  const slow = r.chance(faults.slowLinks)
  return {
    latency: [r.int(0, 2), r.int(3, 10)],
    drainBytes: slow ? r.int(64, 2048) : r.int(16 * 1024, 256 * 1024),
    drainEveryMs: slow ? r.int(5, 50) : 1,
    splitChance: faults.splitChance
  }
}

/** One of the client's own subscriptions (not its inbox) goes. */
export const unsubscribeOne = (a: Actor, c: SimClient): void => {
  const subs = [...c.subs.values()].filter((s) => !s.subject.startsWith("_INBOX."))
  if (subs.length === 0) return
  const s = a.rng.pick(subs)
  a.stats.unsubs++
  a.trace(`c${c.id} UNSUB ${s.sid}`)
  c.unsubscribe(s.sid, 0)
}

/** A request to the service (or, now and then, to a subject nobody serves). */
export const requestOne = (a: Actor, c: SimClient): void => {
  a.stats.requests++
  const subject = a.rng.chance(0.3) ? "svc.none" : "svc.x"
  c.request(subject, a.rng.int(0, 64))
  a.trace(`c${c.id} requests ${subject} (seq ${c.seq})`)
}

/** A batch of 1 to `most` messages on one subject, big ones (`big` bytes) in `bigChance` of the batches. */
export const publishBatch = (a: Actor, c: SimClient, subjects: ReadonlyArray<string>, most: number, bigChance: number, big: readonly [number, number]): void => {
  const r = a.rng
  const subject = r.pick(subjects)
  const n = r.int(1, most)
  const isBig = r.chance(bigChance)
  for (let i = 0; i < n; i++) c.publish(subject, isBig ? r.int(big[0], big[1]) : r.int(0, 200), "")
  a.stats.pubs += n
  a.trace(`c${c.id} PUB ${subject} x${n} (to seq ${c.seq})${isBig ? " big" : ""}`)
}
