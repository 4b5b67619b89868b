// The router: every account's Sublist, and the one way a message goes from its
// publisher to its subscribers (route -> deliver), queue groups taking it once, and a
// 503 for a request nobody heard. It is synchronous and allocates nothing per message:
// a message travels in a Delivery record the router reuses (one per level of nesting,
// since a subscriber may publish anew from inside a delivery: an account import).
import {
  Account,
  Delivery,
  type InterestWatcher,
  InternalPrincipal,
  type MessageHandler,
  type Principal,
  Subscription
} from "./principal.js"

const EMPTY = Buffer.alloc(0)

/** What the router reads from outside: the clock, and the seeded choice of queue members. */
export interface RouterEnv {
  readonly now: () => number
  /** Uniform [0, 1), seeded in tests and the simulator. */
  readonly random: () => number
}

/**
 * The other servers of the cluster as the router sees them: after a message published
 * here reached its local subscribers, `forward` sends it once to each server with interest
 * (the route driver and its interest table, src/server/cluster).
 */
export interface RemoteRouting {
  /**
   * `d` to the servers interested in it; `served` lists the queue groups already taken
   * (by a local member, or by another server picked before), and the forwarder adds
   * those it picked a server for (a remote member gets only the others). Returns how
   * many servers it was sent to. Synchronous; allocates nothing when no server is
   * interested.
   */
  forward(d: Delivery, served: Array<string>): number
}

/**
 * Keeps a QoS 1/2 message from another server for this server's persistent MQTT sessions
 * (the MQTT bridge), as it keeps one published here: `hold` stores a copy before the
 * message is routed when such a session would take it (its `origin.ref`), `release`
 * lets the copy go after routing when none did.
 */
export interface DurableHold {
  hold(d: Delivery): void
  release(d: Delivery): void
}

export class Router {
  readonly accounts = new Map<string, Account>()
  /** The other servers of the cluster (routes: one hop); undefined on a server without routes. */
  remote: RemoteRouting | undefined = undefined
  /**
   * The leaf-node connections: they take what is published here and what comes from a
   * route (nats-server's one-hop rule is for routes only); undefined without leaf nodes.
   */
  edge: RemoteRouting | undefined = undefined
  /** Where QoS 1/2 messages from other servers are stored for persistent MQTT sessions; undefined without MQTT. */
  durable: DurableHold | undefined = undefined
  private watcher: InterestWatcher | undefined = undefined
  /** Records by nesting depth; `depth` of them are being routed right now. */
  private readonly records: Array<Delivery> = []
  /** Queue groups served locally, by nesting depth (reused: told to `remote`). */
  private readonly served: Array<Array<string>> = []
  private depth = 0
  private seq = 0
  private nextInternalSid = 1
  /** `deliverTo`'s copy for other servers (see there). */
  private readonly relay = new Delivery()

  constructor(readonly env: RouterEnv) {}

  /** The account with this name, created on first use. */
  account(name: string): Account {
    let a = this.accounts.get(name)
    if (a === undefined) {
      a = new Account(name)
      a.watcher = this.watcher
      this.accounts.set(name, a)
    }
    return a
  }

  /**
   * Another server's interest in `account` (every account: undefined) came or went: told
   * to those watching their accounts' interest (push consumers of a JetStream domain).
   */
  remoteInterestChanged(account?: string): void {
    if (account !== undefined) this.accounts.get(account)?.onInterestChange?.()
    else for (const a of this.accounts.values()) a.onInterestChange?.()
  }

  /** `w` hears of every subscription of every account, from now on (those there already are its to read). */
  watch(w: InterestWatcher | undefined): void {
    this.watcher = w
    for (const a of this.accounts.values()) a.watcher = w
  }

  /** A subsystem of the server as a principal of `account` (see InternalPrincipal). */
  internal(account: string, name: string): InternalPrincipal {
    return new InternalPrincipal(this.account(account), name)
  }

  /**
   * A subscription of `p` under a server-chosen sid (`$I<n>`): a subsystem's (with a
   * handler, called for each message) or an MQTT connection's (handed to `p.deliver`).
   */
  subscribe(p: Principal, subject: string, queue: string | undefined, handler?: MessageHandler): Subscription {
    const s = new Subscription(p, subject, queue, `$I${this.nextInternalSid++}`, handler)
    p.addSub(s)
    return s
  }

  /**
   * The record for a message `from` publishes, its origin reset (QoS 0, no stored copy):
   * fill in subject, reply and bytes, then `route` it. It is reused once routed.
   */
  message(from: Principal, now: number = this.env.now()): Delivery {
    let d = this.records[this.depth]
    if (d === undefined) {
      d = new Delivery()
      this.records[this.depth] = d
    }
    d.now = now
    d.seq = ++this.seq
    const o = d.origin
    o.publisher = from
    o.qos = 0
    o.retain = false
    o.ref = undefined
    o.queues = undefined
    o.local = false
    o.cluster = ""
    return d
  }

  /**
   * Route a message (a record from `message`) to every subscriber in its publisher's
   * account, one member per queue group; returns how many subscriptions (queue groups
   * counting once) took it. A request nobody took is answered with a 503 when the
   * publisher asked for that.
   */
  route(d: Delivery): number {
    const from = d.origin.publisher!
    const foreign = from.foreign
    const depth = this.depth++
    try {
      const r = from.account.sublist.match(d.subject)
      let delivered = 0
      const psubs = r.psubs
      for (let i = 0; i < psubs.length; i++) {
        const s = psubs[i]
        if (s.principal === from && !from.echo) continue
        // Another server's message was handled by its own subsystems.
        if (foreign && !s.principal.announce) continue
        if (this.deliver(s, d)) delivered++
      }
      // A message from another server goes no further than this one's subscribers; one a
      // subscriber kept to this server (`local`, set before or while delivering) neither.
      const remote = from.remote || d.origin.local ? undefined : this.remote
      const edge = d.origin.local ? undefined : this.edge
      const qsubs = r.qsubs
      const queues = d.origin.queues
      let served: Array<string> | undefined
      if (remote !== undefined || edge !== undefined) {
        served = this.served[depth] ??= []
        // (a length write is a runtime call even when it is 0 already: once per message)
        if (served.length !== 0) served.length = 0
      }
      for (let g = 0; g < qsubs.length; g++) {
        const group = qsubs[g]
        // From another server: only the groups it picked this server for.
        if (queues !== undefined && !queues.includes(group[0].queue!)) continue
        if (this.deliverToQueue(from, group, d)) {
          delivered++
          if (served !== undefined) served.push(group[0].queue!)
        }
      }
      if (remote !== undefined) delivered += remote.forward(d, served!)
      if (edge !== undefined) delivered += edge.forward(d, served!)
      if (delivered === 0 && d.reply !== "" && from.noResponders) this.sendNoResponders(from, d.reply)
      return delivered
    } finally {
      this.depth--
    }
  }

  /** A subsystem's message: `headers` (a complete header block) and `payload` are routed like a client's HPUB/PUB. */
  publish(from: Principal, subject: string, reply: string, headers: Buffer | undefined, payload: Buffer): number {
    return this.route(this.compose(from, subject, reply, headers, payload))
  }

  /** The record of a message a subsystem makes (headers and payload joined), ready to route. */
  compose(from: Principal, subject: string, reply: string, headers: Buffer | undefined, payload: Buffer): Delivery {
    const buf = headers === undefined ? payload : Buffer.concat([headers, payload])
    const d = this.message(from)
    d.subject = subject
    d.reply = reply
    d.hdrLen = headers === undefined ? -1 : headers.length
    d.buf = buf
    d.start = 0
    d.end = buf.length
    return d
  }

  /**
   * `d` published anew by `from` (an account import) on `subject` with `reply`: the same
   * bytes, the same clock reading and QoS; a stored copy belongs to the account it was
   * stored in, so it does not travel along. A `local` copy is not sent to other servers.
   */
  forward(from: Principal, d: Delivery, subject: string, reply: string, local = false): number {
    const n = this.message(from, d.now)
    n.origin.local = local
    n.subject = subject
    n.reply = reply
    n.hdrLen = d.hdrLen
    n.buf = d.buf
    n.start = d.start
    n.end = d.end
    n.origin.qos = d.origin.qos
    n.origin.retain = d.origin.retain
    return this.route(n)
  }

  /**
   * `d` (its publisher's, showing its own subject) to the subscribers of `to` in the
   * publisher's account, one member per queue group: how a stream consumer hands a stored
   * message to the deliver subject or the pull request's reply.
   */
  deliverTo(to: string, d: Delivery): void {
    const from = d.origin.publisher!
    const foreign = from.foreign
    const depth = this.depth++
    try {
      const r = from.account.sublist.match(to)
      const psubs = r.psubs
      for (let i = 0; i < psubs.length; i++) if (!foreign || psubs[i].principal.announce) this.deliver(psubs[i], d)
      const qsubs = r.qsubs
      for (let g = 0; g < qsubs.length; g++) {
        const group = qsubs[g]
        const first = (this.env.random() * group.length) | 0
        for (let k = 0; k < group.length; k++) {
          const s = group[(first + k) % group.length]
          if (foreign && !s.principal.announce) continue
          if (this.deliver(s, d)) break
        }
      }
      const remote = from.remote || d.origin.local ? undefined : this.remote
      const edge = d.origin.local ? undefined : this.edge
      if (remote === undefined && edge === undefined) return
      // To another server: routed by `to`, the subject it shows carried after an `@` in its
      // ack reply (`$JS.ACK.…@<subject>`), as nats-server sends a consumer's deliveries.
      const relay = this.relay
      relay.subject = to
      relay.reply = d.reply.startsWith("$JS.ACK.") ? `${d.reply}@${d.subject}` : d.reply
      relay.hdrLen = d.hdrLen
      relay.buf = d.buf
      relay.start = d.start
      relay.end = d.end
      relay.now = d.now
      relay.seq = ++this.seq
      const o = relay.origin
      o.publisher = from
      o.qos = d.origin.qos
      o.ref = undefined
      o.queues = d.origin.queues
      o.local = false
      o.cluster = d.origin.cluster
      const served = (this.served[depth] ??= [])
      served.length = 0
      if (remote !== undefined) remote.forward(relay, served)
      if (edge !== undefined) edge.forward(relay, served)
      relay.buf = EMPTY
      o.publisher = undefined
    } finally {
      this.depth--
    }
  }

  /** One member of the group gets the message: a random one, skipping members that cannot take it. */
  private deliverToQueue(from: Principal, group: ReadonlyArray<Subscription>, d: Delivery): boolean {
    const n = group.length
    const first = (this.env.random() * n) | 0
    for (let k = 0; k < n; k++) {
      const s = group[(first + k) % n]
      if (s.principal === from && !from.echo) continue
      if (from.foreign && !s.principal.announce) continue
      if (this.deliver(s, d)) return true
    }
    return false
  }

  /**
   * One message to one subscription, past the checks every door shares: the subscriber
   * is open and may receive the subject; a reply subject it is handed may be answered
   * (`allow_responses`). False when it could not take it.
   */
  deliver(s: Subscription, d: Delivery): boolean {
    const p = s.principal
    if (s.closed || p.closed) return false
    const perms = p.perms
    if (perms !== undefined) {
      if (perms.subDeny !== undefined && perms.deniesDelivery(d.subject)) return false
      if (d.reply !== "" && perms.hasResponses) perms.noteReply(d.reply, d.now)
    }
    if (s.handler !== undefined) {
      s.delivered++
      s.handler(d)
      return true
    }
    return p.deliver(s, d)
  }

  /** The 503 status `p` gets when its request on `reply` reached nobody: on its own subscription to the reply subject. */
  sendNoResponders(p: Principal, reply: string): void {
    if (!p.headers) return
    const r = p.account.sublist.match(reply)
    for (const s of r.psubs) {
      if (s.principal !== p || s.closed) continue
      p.sendNoResponders(s, reply)
      return
    }
  }

  /** Subscriptions in every account. */
  get numSubscriptions(): number {
    let n = 0
    for (const a of this.accounts.values()) n += a.sublist.count()
    return n
  }
}
