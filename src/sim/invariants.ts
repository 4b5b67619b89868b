// The reference model and the invariants checked after every step. The model watches
// each client→server chunk right after the server handled it (so it sees ops in the
// order the server did) and computes, with a plain subject matcher, which subscriptions
// each message must reach. Invariants compare that with what simulated clients got.
import { NatsParser, type NatsOpHandler } from "../core/nats/parser.js"
import type { Server } from "../server/server.js"
import type { SimClient } from "./clients.js"
import { keyOf } from "./clients.js"
import type { SimLink } from "./network.js"
import { refMatch } from "./reference.js"

/** One expected delivery. `optional`: routed from a chunk during which the server closed the publisher, so it may or may not have been processed. */
interface Expect {
  readonly key: string
  readonly optional: boolean
}

interface ModelSub {
  readonly link: SimLink
  readonly sid: string
  readonly subject: string
  readonly queue: string
  max: number
  delivered: number
  removed: boolean
  readonly expected: Array<Expect>
  /** Received entries already matched against `expected`. */
  checked: number
  cursor: number
}

interface GroupMsg {
  readonly members: ReadonlyArray<ModelSub>
  readonly optional: boolean
  receivedBy: ModelSub | undefined
}

/** The model's matching: the reference matcher, independent of the server's Sublist. */
export const subjectMatches = (filter: string, subject: string): boolean => refMatch(subject, filter)

/**
 * What a model reads of one client's ops (as the server handled them): its CONNECT's echo
 * and no_responders, whether the current chunk may not have been processed (`optional`),
 * and its PUB/SUB/UNSUB for the subclass.
 */
export abstract class ClientOpsModel implements NatsOpHandler {
  readonly parser: NatsParser
  echo = true
  noResponders = false
  /** The server closed the client while handling the chunk being read. */
  optional = false

  constructor(readonly link: SimLink) {
    this.parser = new NatsParser(this, { maxControlLine: 1 << 20, maxPayload: 1 << 30 })
  }

  connect(json: string): void {
    const o = JSON.parse(json) as { echo?: boolean; headers?: boolean; no_responders?: boolean }
    this.echo = o.echo !== false
    this.noResponders = o.headers === true && o.no_responders === true
  }
  abstract pub(subject: string, reply: string, hdrLen: number, buf: Buffer, start: number, end: number): void
  abstract sub(subject: string, queue: string, sid: string): void
  abstract unsub(sid: string, max: number): void
  ping(): void {}
  pong(): void {}
  info(): void {}
  ok(): void {}
  err(): void {}
  protocolError(): void {}
}

/** Each delivery clients got since the last call (`upTo` remembers how far each was read), with its client's model. */
export const forEachNewReceipt = <L>(
  clients: ReadonlyArray<SimClient>,
  links: ReadonlyMap<SimLink, L>,
  upTo: Map<SimClient, number>,
  f: (c: SimClient, lm: L, r: SimClient["received"][number]) => void
): void => {
  for (const c of clients) {
    const lm = links.get(c.link)
    if (lm === undefined) continue
    for (let i = upTo.get(c) ?? 0; i < c.received.length; i++) f(c, lm, c.received[i])
    upTo.set(c, c.received.length)
  }
}

class LinkModel extends ClientOpsModel {
  pubs = 0
  pubBytes = 0
  optionalPubs = 0
  optionalPubBytes = 0
  readonly subs = new Map<string, ModelSub>()

  constructor(
    link: SimLink,
    private readonly model: Model
  ) {
    super(link)
  }

  pub(subject: string, reply: string, _hdrLen: number, buf: Buffer, start: number, end: number): void {
    if (this.optional) {
      this.optionalPubs++
      this.optionalPubBytes += end - start
    } else {
      this.pubs++
      this.pubBytes += end - start
    }
    this.model.route(this, subject, reply, keyOf(buf.toString("latin1", start, end)))
  }
  sub(subject: string, queue: string, sid: string): void {
    const s: ModelSub = { link: this.link, sid, subject, queue, max: 0, delivered: 0, removed: false, expected: [], checked: 0, cursor: 0 }
    this.subs.set(sid, s)
    this.model.allSubs.push(s)
  }
  unsub(sid: string, max: number): void {
    const s = this.subs.get(sid)
    if (s === undefined || s.removed) return
    if (max > 0 && s.delivered < max) s.max = max
    else s.removed = true
  }
}

export class Model {
  readonly links = new Map<SimLink, LinkModel>()
  readonly allSubs: Array<ModelSub> = []
  readonly groupMsgs = new Map<string, GroupMsg>()
  /** Expected no-responders statuses, by reply subject. */
  readonly noResponders = new Map<string, GroupMsg>()
  readonly violations: Array<string> = []
  /** How much of each client's received list has been checked. */
  private readonly checkedUpTo = new Map<SimClient, number>()
  private readonly reported = new Set<SimLink>()
  /** Write-deadline closes of peers that had read bytes within the deadline (see checkClosed). */
  writeDeadlineWhileReading = 0

  /** `serverSubjects`: filters the server itself serves (JetStream's API and streams), so a request there always has a responder. */
  constructor(private readonly serverSubjects: ReadonlyArray<string> = []) {}

  /** Called with each chunk the server handled (see SimNetwork.observers). */
  readonly observe = (link: SimLink, chunk: Buffer, wasOpen: boolean, closedDuring: boolean): void => {
    if (!wasOpen) return
    let lm = this.links.get(link)
    if (lm === undefined) {
      lm = new LinkModel(link, this)
      this.links.set(link, lm)
    }
    lm.optional = closedDuring
    lm.parser.feed(chunk)
  }

  route(from: LinkModel, subject: string, reply: string, key: string): void {
    const groups = new Map<string, Array<ModelSub>>()
    // Whether some subscriber surely got it, or maybe did (one the server may already have closed).
    let surely = false
    let maybe = false
    for (const lm of this.links.values()) {
      // A subscriber the server has closed (maybe during this very chunk) may have got a prefix.
      const gone = lm !== from && lm.link.goneForServer
      for (const s of lm.subs.values()) {
        if (s.removed || !subjectMatches(s.subject, subject)) continue
        if (lm === from && !from.echo) continue
        if (s.queue !== "") {
          // Groups are by queue name across every matching filter, as nats-server's sublist merges them.
          const g = s.queue
          const list = groups.get(g) ?? []
          list.push(s)
          groups.set(g, list)
          continue
        }
        s.expected.push({ key, optional: from.optional || gone })
        if (gone) maybe = true
        else surely = true
        s.delivered++
        if (s.max > 0 && s.delivered >= s.max) s.removed = true
      }
    }
    for (const [g, members] of groups) {
      if (members.some((m) => m.link.goneForServer && m.link !== from.link)) maybe = true
      if (members.some((m) => !m.link.goneForServer || m.link === from.link)) surely = true
      this.groupMsgs.set(`${g} ${key}`, { members, optional: from.optional || members.some((m) => m.link.goneForServer), receivedBy: undefined })
    }
    if (this.serverSubjects.some((f) => subjectMatches(f, subject))) surely = true
    if (reply !== "" && from.noResponders && !surely) this.expectNoResponders(from, reply, maybe)
  }

  /** Nobody took a request: one of the requester's own subscriptions on the reply subject gets a 503 (which one is the sublist's order). */
  private expectNoResponders(from: LinkModel, reply: string, maybe: boolean): void {
    const members = [...from.subs.values()].filter((s) => !s.removed && s.queue === "" && subjectMatches(s.subject, reply))
    if (members.length > 0) this.noResponders.set(reply, { members, optional: from.optional || maybe, receivedBy: undefined })
  }

  /** Ordering, duplicates and spurious deliveries: checked incrementally after every step. */
  checkReceived(clients: ReadonlyArray<SimClient>): void {
    forEachNewReceipt(clients, this.links, this.checkedUpTo, (c, lm, r) => this.checkOne(c, lm, r))
  }

  private checkOne(c: SimClient, lm: LinkModel, r: SimClient["received"][number]): void {
    const s = lm.subs.get(r.sid)
    if (s === undefined) {
      this.violations.push(`c${c.id} got ${r.key} on ${r.subject} for unknown sid ${r.sid}`)
      return
    }
    if (r.noResponders) {
      const g = this.noResponders.get(r.subject)
      if (g === undefined || !g.members.includes(s)) this.violations.push(`c${c.id} sid ${r.sid} got a no-responders status for ${r.subject} that was not due`)
      else if (g.receivedBy !== undefined) this.violations.push(`c${c.id} got two no-responders statuses for ${r.subject}`)
      else g.receivedBy = s
      return
    }
    if (s.queue !== "") {
      const g = this.groupMsgs.get(`${s.queue} ${r.key}`)
      if (g === undefined || !g.members.includes(s)) this.violations.push(`c${c.id} sid ${r.sid} (queue ${s.queue}) got ${r.key} it was not routed to`)
      else if (g.receivedBy !== undefined) this.violations.push(`queue group ${s.queue}: ${r.key} delivered twice (c${c.id})`)
      else g.receivedBy = s
      return
    }
    let j = s.cursor
    while (j < s.expected.length && s.expected[j].optional && s.expected[j].key !== r.key) j++
    if (j < s.expected.length && s.expected[j].key === r.key) {
      s.cursor = j + 1
      return
    }
    const later = s.expected.findIndex((e, i) => i >= s.cursor && e.key === r.key)
    if (later >= 0) {
      const lost = s.expected.slice(s.cursor, later).filter((e) => !e.optional)
      this.violations.push(`c${c.id} sid ${r.sid} (${s.subject}) got ${r.key} but not the ${lost.length} message(s) routed before it (first ${lost[0]?.key}): lost or reordered`)
      s.cursor = later + 1
      return
    }
    const earlier = s.expected.slice(0, s.cursor).some((e) => e.key === r.key)
    this.violations.push(`c${c.id} sid ${r.sid} (${s.subject}) got ${r.key}: ${earlier ? "duplicate or out of order" : "never routed to it"}`)
  }

  /** After the network went quiet: everything routed to a subscriber that is still connected arrived. */
  checkComplete(): void {
    for (const s of this.allSubs) {
      if (s.link.closed || s.link.serverClosed) continue
      const missing = s.expected.slice(s.cursor).filter((e) => !e.optional)
      if (missing.length > 0) this.violations.push(`link ${s.link.id} sid ${s.sid} (${s.subject}) never got ${missing.length} message(s), first ${missing[0].key}`)
    }
    for (const [k, g] of this.groupMsgs) {
      if (g.receivedBy !== undefined || g.optional) continue
      if (g.members.every((m) => !m.link.closed && !m.link.serverClosed)) this.violations.push(`queue group message ${k} reached no member`)
    }
    for (const [reply, g] of this.noResponders) {
      if (g.receivedBy !== undefined || g.optional) continue
      const link = g.members[0].link
      if (!link.closed && !link.serverClosed) this.violations.push(`link ${link.id} never got the no-responders status for ${reply}`)
    }
  }

  /** Per-connection counters: what the server says it got from and sent to each live link. */
  checkAccounting(server: Server, clients: ReadonlyArray<SimClient>, quiet: boolean, pendingBound: number): void {
    const byConn = new Map<unknown, Server["clients"] extends Map<number, infer C> ? C : never>()
    for (const sc of server.clients.values()) byConn.set(sc.conn, sc)
    let certainIn = 0
    let optionalIn = 0
    let received = 0
    for (const lm of this.links.values()) {
      certainIn += lm.pubs
      optionalIn += lm.optionalPubs
    }
    for (const c of clients) {
      // No-responders statuses are not messages: they count in no in/out counter.
      const msgs = c.received.length - c.received.filter((r) => r.noResponders).length
      received += msgs
      const link = c.link
      if (link.maxQueued > pendingBound) this.violations.push(`link ${link.id}: transport held ${link.maxQueued} bytes, over max_pending bound ${pendingBound}`)
      const sc = byConn.get(link)
      if (sc === undefined) continue
      if (sc.pendingBytes > pendingBound) this.violations.push(`link ${link.id}: ${sc.pendingBytes} pending bytes over ${pendingBound}`)
      if (sc.outMsgs < msgs) this.violations.push(`link ${link.id}: server counted ${sc.outMsgs} out msgs, client received ${msgs}`)
      const lm = this.links.get(link)
      if (quiet && !link.closed && !link.serverClosed && lm !== undefined) {
        if (sc.outMsgs !== msgs || sc.outBytes !== c.receivedBytes) {
          this.violations.push(`link ${link.id}: server out ${sc.outMsgs} msgs/${sc.outBytes} B, client received ${msgs}/${c.receivedBytes}`)
        }
        if (sc.inMsgs !== lm.pubs || sc.inBytes !== lm.pubBytes) {
          this.violations.push(`link ${link.id}: server in ${sc.inMsgs} msgs/${sc.inBytes} B, client published ${lm.pubs}/${lm.pubBytes}`)
        }
      }
    }
    if (server.inMsgs < certainIn || server.inMsgs > certainIn + optionalIn) {
      this.violations.push(`server in_msgs ${server.inMsgs}, clients published ${certainIn} (+${optionalIn} maybe)`)
    }
    if (server.outMsgs < received) this.violations.push(`server out_msgs ${server.outMsgs} < ${received} received by clients`)
  }

  /** Every connection the server closed has a reason, and the reason fits what happened to it. */
  checkClosed(server: Server, clients: ReadonlyArray<SimClient>, quiet: boolean): void {
    const byPort = new Map<number, string>()
    const stopAt = new Map<number, number>()
    for (const cl of server.closed.toArray()) {
      stopAt.set(cl.port, cl.stop)
      if (typeof cl.reason !== "string" || cl.reason === "") this.violations.push(`closed connection cid ${cl.cid} has no reason`)
      byPort.set(cl.port, cl.reason)
    }
    for (const sc of server.clients.values()) {
      const link = sc.conn as unknown as SimLink
      if (link.serverClosed) this.violations.push(`cid ${sc.cid}: server closed the link but still lists the client`)
      else if (quiet && link.closed) this.violations.push(`cid ${sc.cid}: link ${link.id} is gone but the server still lists the client`)
    }
    for (const c of clients) {
      const link = c.link
      if (link.handlers === undefined) continue
      const reason = byPort.get(link.remotePort)
      if (link.serverClosed) {
        if (reason === undefined) this.violations.push(`link ${link.id}: the server closed it but recorded no closed connection`)
        else if (!SERVER_CLOSE_REASONS.has(reason)) this.violations.push(`link ${link.id}: closed by the server for an unexpected reason '${reason}'`)
        else if (reason === "Slow Consumer (Write Deadline)" && !this.reported.has(link)) {
          // Not a violation (nats-server too closes a peer whose backlog cannot be written within
          // the deadline), but counted: peers that were still reading when closed for the deadline.
          this.reported.add(link)
          const stalledFor = (stopAt.get(link.remotePort) ?? 0) - link.progressAtServerClose
          if (stalledFor < server.options.writeDeadlineMs) this.writeDeadlineWhileReading++
        }
      } else if (link.clientDropped && reason !== undefined && reason !== "Client Closed" && !SERVER_CLOSE_REASONS.has(reason)) {
        // (The server may notice a stale or slow peer before the reset reaches it.)
        this.violations.push(`link ${link.id}: the client dropped it, but the server recorded '${reason}'`)
      }
      for (const e of c.errors) {
        if (!EXPECTED_ERRORS.has(e)) this.violations.push(`c${c.id} got unexpected -ERR '${e}'`)
      }
    }
  }
}

/** What a well-behaved simulated client can be closed for by the server. */
const SERVER_CLOSE_REASONS = new Set(["Slow Consumer (Pending Bytes)", "Slow Consumer (Write Deadline)", "Stale Connection"])
const EXPECTED_ERRORS = new Set(["Slow Consumer", "Stale Connection"])
