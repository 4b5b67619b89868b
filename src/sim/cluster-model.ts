// The cluster simulation's model of what may legally be delivered. It watches each
// client→server chunk right after the server of that client's node handled it, and
// decides for every message published:
// - who may get it: a subscriber on the publisher's node that was subscribed then (as
//   the single-node model), any matching subscriber on another node (it may have
//   subscribed while the message was on its way), each queue group at most once
//   cluster-wide, and a local member of a group when the publisher's node had one;
// - who must get it ("no loss on stable links"): a local subscriber, and a subscriber on
//   another node whose server the publisher's server had a route to, registered, with
//   interest matching the subject in its table at that moment, when that route object is
//   never closed, the subscription never removed and its client never cut off before
//   the end of the run; a queue group's message when every member it could have gone to
//   (the local members, else those on every server the table named) and every route
//   involved stay so until the end.
// Checked after every step: duplicates and order per publisher (per subscription), deliveries nobody could have
// routed, a queue group's message delivered twice, and a delivery written to a client
// after its server handled the UNSUB (so, a fortiori, after the RS- reached every node).
// Checked once the network healed and went quiet: every mandatory delivery arrived, and
// each server's table of remote interest equals what each other server announces, which
// equals that server's clients' live subscriptions (convergence).
import { GLOBAL_ACCOUNT } from "../engine/principal.js"
import type { Route } from "../server/cluster/route.js"
import type { Server } from "../server/server.js"
import type { SimClient } from "./clients.js"
import { keyOf } from "./clients.js"
import type { SimLink } from "./network.js"
import { ClientOpsModel, forEachNewReceipt } from "./invariants.js"
import { refMatch } from "./reference.js"

/** A server of the cluster as the model sees it. */
export interface ModelNode {
  readonly index: number
  /** Undefined while it is down. */
  readonly server: Server | undefined
  /** Bumped at every restart. */
  readonly life: number
}

interface CSub {
  readonly node: number
  readonly life: number
  readonly link: SimLink
  readonly client: number
  readonly sid: string
  readonly subject: string
  readonly queue: string
  /** The server handled its UNSUB (or its client went away). */
  removed: boolean
  /** The server→client stream offset when the server handled its UNSUB: nothing for it may be written after. */
  unsubAt: number
  /** An auto-unsubscribe (`UNSUB sid max`): the max, and the stream offset when the server handled it. */
  max: number
  maxAt: number
  /** Deliveries written before and after that offset. */
  beforeMax: number
  afterMax: number
  readonly got: Set<string>
  /** The last sequence got from each publisher. */
  readonly lastSeq: Map<string, number>
}

interface CMsg {
  readonly key: string
  readonly node: number
  /** Its node's life when it was published: a crash loses what the server still held. */
  readonly life: number
  readonly subject: string
  /** The plain subscribers of its own node that were subscribed when it was published. */
  readonly localSubs: Set<CSub>
  /** Subscribers that must get it, each with the route it had to cross (undefined: local). */
  readonly must: Array<{ readonly sub: CSub; readonly route: Route | undefined }>
  /** Published in a chunk during which the server closed the publisher: maybe never routed. */
  readonly optional: boolean
}

interface GroupMsg {
  readonly key: string
  readonly queue: string
  readonly subject: string
  readonly node: number
  readonly life: number
  /** The publisher's node had a member still connected after the publish: one of its own takes it. */
  readonly localPreferred: boolean
  /** Members one of which must take it, and the routes involved; undefined: it may be lost. */
  readonly candidates: ReadonlyArray<CSub> | undefined
  readonly routes: ReadonlyArray<Route>
  receivedBy: CSub | undefined
}

interface NoResponders {
  readonly link: SimLink
  /** Nobody anywhere was interested: the 503 is due. */
  readonly due: boolean
  /** Nobody certainly was: a 503 is legal. */
  readonly legal: boolean
  received: boolean
}

const gone = (l: SimLink): boolean => l.closed || l.goneForServer

/** Still subscribed on a connection still up (an auto-unsubscribe not yet reached: everything written to it arrived by the end). */
const live = (s: CSub): boolean => !s.removed && !gone(s.link) && (s.max === 0 || s.got.size < s.max)

class LinkModel extends ClientOpsModel {
  readonly subs = new Map<string, CSub>()

  constructor(
    readonly node: ModelNode,
    link: SimLink,
    private readonly model: ClusterModel
  ) {
    super(link)
  }

  pub(subject: string, reply: string, _hdrLen: number, buf: Buffer, start: number, end: number): void {
    this.model.published(this, subject, reply, keyOf(buf.toString("latin1", start, end)))
  }
  sub(subject: string, queue: string, sid: string): void {
    const s: CSub = { node: this.node.index, life: this.node.life, link: this.link, client: 0, sid, subject, queue, removed: false, unsubAt: Infinity, max: 0, maxAt: Infinity, beforeMax: 0, afterMax: 0, got: new Set(), lastSeq: new Map() }
    this.subs.set(sid, s)
    this.model.subs.push(s)
  }
  unsub(sid: string, max: number): void {
    const s = this.subs.get(sid)
    if (s === undefined || s.removed) return
    if (max > 0) {
      s.max = max
      s.maxAt = this.offset()
      return
    }
    s.removed = true
    s.unsubAt = this.offset()
  }

  /** What the server wrote to the link, and what it had queued for it still (its flush comes later in the turn). */
  private offset(): number {
    let queued = 0
    for (const c of this.node.server?.clients.values() ?? []) if (c.conn === this.link) queued = c.out.length
    return this.link.written + queued
  }
}

export class ClusterModel {
  private readonly links = new Map<SimLink, LinkModel>()
  readonly subs: Array<CSub> = []
  private readonly msgs = new Map<string, CMsg>()
  private readonly groupMsgs = new Map<string, GroupMsg>()
  private readonly noResp = new Map<string, NoResponders>()
  readonly violations: Array<string> = []
  private readonly checkedUpTo = new Map<SimClient, number>()
  readonly stats = { mustLocal: 0, mustRemote: 0, mustExcused: 0, mustGroup: 0, groupExcused: 0, remoteDeliveries: 0, groupDeliveries: 0 }

  constructor(private readonly nodes: ReadonlyArray<ModelNode>) {}

  /** A chunk node `node`'s server handled (see SimNetwork.observers). */
  observe(node: ModelNode, link: SimLink, chunk: Buffer, wasOpen: boolean, closedDuring: boolean): void {
    if (!wasOpen) return
    let lm = this.links.get(link)
    if (lm === undefined) {
      lm = new LinkModel(node, link, this)
      this.links.set(link, lm)
    }
    lm.optional = closedDuring
    lm.parser.feed(chunk)
  }

  /** A node died: its clients' subscriptions are gone. */
  nodeDied(index: number): void {
    for (const s of this.subs) if (s.node === index) s.removed = true
  }

  published(from: LinkModel, subject: string, reply: string, key: string): void {
    const node = from.node
    const server = node.server!
    const here = node.index
    const localSubs = new Set<CSub>()
    const must: Array<{ sub: CSub; route: Route | undefined }> = []
    let localSure = false
    let localMaybe = false
    const groups = new Map<string, { local: Array<CSub>; all: Array<CSub> }>()
    for (const s of this.subs) {
      if (s.removed || !refMatch(subject, s.subject)) continue
      if (s.queue !== "") {
        const g = groups.get(s.queue) ?? { local: [], all: [] }
        g.all.push(s)
        // Without echo, the publisher's own member never takes it (another does, here or elsewhere).
        if (s.node === here && !(s.link === from.link && !from.echo)) g.local.push(s)
        groups.set(s.queue, g)
        continue
      }
      if (s.node !== here) continue
      if (s.link === from.link && !from.echo) continue
      localSubs.add(s)
      // (An auto-unsubscribe may have taken it already: the server counts what it delivered.)
      const away = (s.link !== from.link && gone(s.link)) || s.max > 0
      if (away) localMaybe = true
      else localSure = true
      if (!from.optional && !away) must.push({ sub: s, route: undefined })
    }
    // Where the publisher's server forwards it: each route registered with matching interest.
    const cluster = server.cluster
    const table = cluster?.interest.match(GLOBAL_ACCOUNT, subject)
    const plainRoutes = new Set<Route>()
    const queueRoutes = new Map<string, Set<Route>>()
    for (const e of table?.psubs ?? []) if (e.remote.registered && !e.remote.closed) plainRoutes.add(e.remote)
    for (const group of table?.qsubs ?? []) {
      for (const e of group) {
        if (!e.remote.registered || e.remote.closed) continue
        const set = queueRoutes.get(e.queue!) ?? new Set()
        set.add(e.remote)
        queueRoutes.set(e.queue!, set)
      }
    }
    const nodeOf = (r: Route): number => this.nodes.findIndex((n) => n.server?.serverId === r.remoteId)
    for (const r of plainRoutes) {
      const at = nodeOf(r)
      if (at < 0) continue
      for (const s of this.subs) {
        if (s.node !== at || s.queue !== "" || s.removed || s.life !== this.nodes[at].life || !refMatch(subject, s.subject)) continue
        if (!from.optional) must.push({ sub: s, route: r })
      }
    }
    this.msgs.set(key, { key, node: here, life: node.life, subject, localSubs, must, optional: from.optional })
    for (const [queue, g] of groups) {
      const localLive = g.local.filter((m) => !gone(m.link))
      let candidates: Array<CSub> | undefined
      const routes: Array<Route> = []
      if (g.local.length > 0) candidates = g.local
      else {
        candidates = []
        for (const r of queueRoutes.get(queue) ?? []) {
          routes.push(r)
          const at = nodeOf(r)
          const there = g.all.filter((m) => m.node === at && m.life === this.nodes[at]?.life)
          // The table names a server with no member left: the message may go there and be lost.
          if (there.length === 0) candidates = undefined
          else candidates?.push(...there)
        }
        if (candidates !== undefined && candidates.length === 0) candidates = undefined
      }
      this.groupMsgs.set(`${queue} ${key}`, { key, queue, subject, node: here, life: node.life, localPreferred: localLive.length > 0, candidates: from.optional ? undefined : candidates, routes, receivedBy: undefined })
      if (localLive.length > 0) localSure = true
      else if (g.local.length > 0) localMaybe = true
    }
    // A group the publisher's server still knows of on another server (its RS- on the way, or
    // a member there gone): it may go there, to a member that joined since.
    for (const queue of queueRoutes.keys()) {
      const k = `${queue} ${key}`
      if (!this.groupMsgs.has(k)) this.groupMsgs.set(k, { key, queue, subject, node: here, life: node.life, localPreferred: false, candidates: undefined, routes: [], receivedBy: undefined })
    }
    if (reply !== "" && from.noResponders) {
      const remote = plainRoutes.size > 0 || queueRoutes.size > 0
      const legal = !localSure && !remote
      this.noResp.set(reply, { link: from.link, legal, due: legal && !localMaybe && !from.optional, received: false })
    }
  }

  /** What clients received since the last check: legal, once, and not after an UNSUB. */
  checkReceived(clients: ReadonlyArray<SimClient>): void {
    forEachNewReceipt(clients, this.links, this.checkedUpTo, (c, lm, r) => this.checkOne(c, lm, r))
  }

  private checkOne(c: SimClient, lm: LinkModel, r: SimClient["received"][number]): void {
    const s = lm.subs.get(r.sid)
    const who = `c${c.id}@n${lm.node.index}`
    if (s === undefined) return void this.violations.push(`${who} got ${r.key} on ${r.subject} for unknown sid ${r.sid}`)
    if (r.at > s.unsubAt) this.violations.push(`${who} sid ${r.sid} (${s.subject}) got ${r.key} after the server handled its UNSUB`)
    if (r.noResponders) {
      const n = this.noResp.get(r.subject)
      if (n === undefined || n.link !== lm.link || !n.legal) this.violations.push(`${who} got a no-responders status for ${r.subject} that was not due (some node had interest)`)
      else if (n.received) this.violations.push(`${who} got two no-responders statuses for ${r.subject}`)
      else n.received = true
      return
    }
    if (s.got.has(r.key)) return void this.violations.push(`${who} sid ${r.sid} (${s.subject}${s.queue === "" ? "" : ` ${s.queue}`}) got ${r.key} twice`)
    s.got.add(r.key)
    const dot = r.key.indexOf(".")
    const pub = r.key.slice(0, dot)
    const seq = Number(r.key.slice(dot + 1))
    // One publisher's messages reach a subscription in the order published (one route at a time carries them).
    const last = s.lastSeq.get(pub) ?? 0
    if (last > seq) this.violations.push(`${who} sid ${r.sid} (${s.subject}) got ${r.key} after ${pub}.${last}: out of its publisher's order`)
    s.lastSeq.set(pub, seq)
    if (s.max > 0) {
      // At most `max` in all; none more once the server handled the UNSUB if it had delivered that many already.
      if (r.at > s.maxAt) s.afterMax++
      else s.beforeMax++
      if (s.beforeMax >= s.max ? s.afterMax > 0 : s.beforeMax + s.afterMax > s.max) {
        this.violations.push(`${who} sid ${r.sid} (${s.subject}) got ${r.key}, past its auto-unsubscribe max ${s.max} (${s.beforeMax} before the UNSUB, ${s.afterMax} after)`)
      }
    }
    const m = this.msgs.get(r.key)
    if (m === undefined || !refMatch(m.subject, s.subject)) return void this.violations.push(`${who} sid ${r.sid} (${s.subject}) got ${r.key} on ${r.subject}: never published on a matching subject`)
    if (m.node !== s.node) this.stats.remoteDeliveries++
    if (s.queue !== "") {
      this.stats.groupDeliveries++
      const g = this.groupMsgs.get(`${s.queue} ${r.key}`)
      if (g === undefined) this.violations.push(`${who} sid ${r.sid} (queue ${s.queue}) got ${r.key}: the group had no member when it was published, and its publisher's server knew of none elsewhere`)
      else if (g.receivedBy !== undefined) this.violations.push(`queue group ${s.queue}: ${r.key} delivered twice cluster-wide (c${c.id}@n${s.node} after ${g.receivedBy.node === s.node && g.receivedBy.link === s.link ? "the same client" : `n${g.receivedBy.node}`})`)
      else {
        g.receivedBy = s
        if (g.localPreferred && s.node !== g.node) this.violations.push(`queue group ${s.queue}: ${r.key} went to a member on n${s.node} while its publisher's node n${g.node} had a member of its own`)
      }
      return
    }
    if (m.node === s.node && s.life === this.nodes[m.node].life && !m.localSubs.has(s)) {
      this.violations.push(`${who} sid ${r.sid} (${s.subject}) got ${r.key}, published on its own node when it was not subscribed`)
    }
  }

  /** After the network healed and went quiet: every delivery the stable links promised arrived. */
  checkComplete(): void {
    const alive = (s: CSub): boolean => live(s) && s.life === this.nodes[s.node].life
    for (const m of this.msgs.values()) {
      for (const { sub, route } of m.must) {
        if (sub.got.has(m.key)) {
          if (route === undefined) this.stats.mustLocal++
          else this.stats.mustRemote++
          continue
        }
        if (!alive(sub) || (route !== undefined && route.closed) || this.nodes[m.node].life !== m.life) {
          this.stats.mustExcused++
          continue
        }
        {
          this.violations.push(`c@n${sub.node} link ${sub.link.id} sid ${sub.sid} (${sub.subject}) never got ${m.key} from n${m.node}${route === undefined ? "" : ` (route rid ${route.rid} stayed up)`}`)
        }
      }
    }
    for (const g of this.groupMsgs.values()) {
      if (g.candidates === undefined) continue
      if (g.receivedBy !== undefined) {
        this.stats.mustGroup++
        continue
      }
      if (!g.candidates.every(alive) || g.routes.some((r) => r.closed) || this.nodes[g.node].life !== g.life) {
        this.stats.groupExcused++
        continue
      }
      this.violations.push(`queue group ${g.queue}: ${g.key} (published on n${g.node}) reached no member though every member and route stayed up`)
    }
    for (const [reply, n] of this.noResp) {
      if (n.due && !n.received && !gone(n.link)) this.violations.push(`link ${n.link.id} never got the no-responders status for ${reply}`)
    }
  }

  /**
   * Convergence, once quiet: each running server has one route to every other, its table
   * of remote interest holds exactly what each of them announces, and what each announces
   * in the global account is its clients' live subscriptions.
   */
  convergence(): Array<string> {
    const out: Array<string> = []
    const up = this.nodes.filter((n) => n.server !== undefined)
    for (const a of up) {
      const cluster = a.server!.cluster!
      const ids = [...cluster.byId.keys()].sort()
      const want = up.filter((b) => b !== a).map((b) => b.server!.serverId).sort()
      if (ids.join() !== want.join()) out.push(`n${a.index} has routes to [${ids.join(", ")}], not to every other running server [${want.join(", ")}]`)
      if (cluster.routes.size !== cluster.byId.size) out.push(`n${a.index} has ${cluster.routes.size} route connections for ${cluster.byId.size} servers`)
      for (const b of up) {
        if (b === a) continue
        const r = cluster.byId.get(b.server!.serverId)
        if (r === undefined) continue
        const have = cluster.interest.entries(r).map((e) => `${e.account} ${e.subject}${e.queue === undefined ? "" : ` ${e.queue} ${e.weight}`}${e.fromLeaf ? " leaf" : ""}`).sort()
        const told = b.server!.cluster!.announced().map((e) => `${e.account} ${e.subject}${e.queue === "" ? "" : ` ${e.queue} ${e.n}`}`).sort()
        if (have.join("|") !== told.join("|")) out.push(`n${a.index}'s table for n${b.index} [${diff(have, told)}] differs from what n${b.index} announces`)
      }
      const counts = new Map<string, number>()
      for (const s of this.subs) {
        if (s.node !== a.index || s.life !== a.life || !live(s)) continue
        const k = s.queue === "" ? s.subject : `${s.subject} ${s.queue}`
        counts.set(k, (counts.get(k) ?? 0) + 1)
      }
      const want2 = [...counts].map(([k, n]) => (k.includes(" ") ? `${GLOBAL_ACCOUNT} ${k} ${n}` : `${GLOBAL_ACCOUNT} ${k}`)).sort()
      const told2 = cluster.announced().filter((e) => e.account === GLOBAL_ACCOUNT).map((e) => `${e.account} ${e.subject}${e.queue === "" ? "" : ` ${e.queue} ${e.n}`}`).sort()
      if (want2.join("|") !== told2.join("|")) out.push(`n${a.index} announces [${diff(told2, want2)}] in the global account, not its clients' live subscriptions`)
    }
    return out
  }
}

/** What one sorted list has that the other lacks, both ways, for a violation's text. */
const diff = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): string => {
  const extra = a.filter((x) => !b.includes(x))
  const missing = b.filter((x) => !a.includes(x))
  return `extra: ${extra.slice(0, 5).join(", ") || "-"}; missing: ${missing.slice(0, 5).join(", ") || "-"}`
}
