// Sending a message published here to the other servers that want it, once each: the
// one loop routes and leaf-node connections share. Every remote entry matching the
// subject marks its peer with the message's seq (so several entries send it once); each
// queue group no local member took goes to one peer, picked by the weight of the members
// behind it, and the message names the groups it was picked for. Allocates nothing.
import type { RemoteInterest } from "../../core/cluster/interest.js"
import type { Delivery, Principal } from "../../engine/principal.js"

/**
 * The most interest entries (subjects and queue groups, per account) one route or leaf
 * connection may announce: past it the connection is closed, so that a misbehaving peer
 * cannot grow this server's memory without bound (about 100 MB at the bound).
 */
export const MAX_PEER_INTEREST = 262_144

/** A peer messages are forwarded to (a route, a leaf-node connection). */
export interface ForwardPeer {
  /** The seq of the message it was last marked for. */
  mark: number
  /** How many queue groups of that message it is to serve (the first `nq` of `queueSlots`). */
  nq: number
  readonly queueSlots: Array<string>
  /** Past its handshake: it carries messages. */
  readonly registered: boolean
  /** `d`, in `account`, naming the groups it was picked for; false when it could not go. */
  sendMsg(d: Delivery, account: string): boolean
}

/**
 * `d` to each peer with interest in its account, except `from` (the peer it came in on:
 * never back); `served` lists the groups already taken (a local member, a peer picked
 * by another forwarder), to which this adds the groups it picks a peer for, and `named`
 * (when the message came from another server) the only groups it may still serve.
 * `touched` is the caller's scratch array; `skip` (when given) rules out peers this message
 * may not go to (a hub connection, for a message from a route). Returns how many peers it
 * was sent to.
 */
export const forwardOnce = <R extends ForwardPeer>(
  interest: RemoteInterest<R>,
  d: Delivery,
  served: Array<string>,
  named: ReadonlyArray<string> | undefined,
  from: Principal | R | undefined,
  touched: Array<R | undefined>,
  random: () => number,
  skip: ((peer: R) => boolean) | undefined = undefined
): number => {
  const account = d.origin.publisher!.account.name
  const r = interest.match(account, d.subject)
  const psubs = r.psubs
  const qsubs = r.qsubs
  if (psubs.length === 0 && qsubs.length === 0) return 0
  const seq = d.seq
  let n = 0
  for (let i = 0; i < psubs.length; i++) {
    const peer = psubs[i].remote
    if (peer.mark === seq || !peer.registered || peer === from || (skip !== undefined && skip(peer))) continue
    peer.mark = seq
    peer.nq = 0
    touched[n++] = peer
  }
  for (let g = 0; g < qsubs.length; g++) {
    const group = qsubs[g]
    const name = group[0].queue!
    if (served.includes(name) || (named !== undefined && !named.includes(name))) continue
    // One member across the servers: a peer picked by how many members it has.
    let total = 0
    for (let k = 0; k < group.length; k++) {
      const p = group[k].remote
      if (p.registered && p !== from && (skip === undefined || !skip(p))) total += group[k].weight
    }
    if (total === 0) continue
    let at = random() * total
    let pick: R | undefined
    for (let k = 0; k < group.length; k++) {
      const e = group[k]
      if (!e.remote.registered || e.remote === from || (skip !== undefined && skip(e.remote))) continue
      pick = e.remote
      at -= e.weight
      if (at < 0) break
    }
    if (pick!.mark !== seq) {
      pick!.mark = seq
      pick!.nq = 0
      touched[n++] = pick
    }
    pick!.queueSlots[pick!.nq++] = name
    served.push(name)
  }
  let sent = 0
  for (let i = 0; i < n; i++) {
    const peer = touched[i]!
    touched[i] = undefined
    if (peer.sendMsg(d, account)) sent++
  }
  return sent
}
