// The engine's nouns. A Principal is what any connection is to the engine (a NATS
// client, an MQTT connection, one of the server's own subsystems): who it is, the
// Account it is bound to, what it may do, and its Subscriptions. A message travels to
// them in one reusable Delivery record. These refer to one another, so they live
// together; the Router (router.ts) moves messages between them.
import { Sublist, type SubLike } from "../core/subject/sublist.js"
import type { ClientPermissions } from "./permissions.js"

export const GLOBAL_ACCOUNT = "$G"

/**
 * The unit of isolation: each account has its own subscription index, so a message
 * published in one account can only reach subscribers of that account.
 */
export class Account {
  readonly sublist = new Sublist<Subscription>()
  /** Open client connections bound to this account. */
  numConnections = 0
  inMsgs = 0
  inBytes = 0
  outMsgs = 0
  outBytes = 0
  slowConsumers = 0
  /** Told after any subscription of this account comes or goes (push consumers watch their deliver subject). */
  onInterestChange: (() => void) | undefined = undefined
  /** Told of each subscription that comes or goes (the cluster announces this server's interest to its routes). */
  watcher: InterestWatcher | undefined = undefined

  constructor(readonly name: string) {}

  subscribe(s: Subscription): void {
    this.sublist.insert(s)
    this.watcher?.subscribed(this, s)
    this.onInterestChange?.()
  }

  unsubscribe(s: Subscription): void {
    this.sublist.remove(s)
    this.watcher?.unsubscribed(this, s)
    this.onInterestChange?.()
  }
}

/** Who hears of every subscription of every account as it comes and goes (see Router.watch). */
export interface InterestWatcher {
  subscribed(account: Account, s: Subscription): void
  unsubscribed(account: Account, s: Subscription): void
}

/**
 * How a subsystem of the server hears a message on its subscription: called synchronously
 * during routing. The record is the router's and is reused once the call returns: read
 * what is needed (the bytes of `buf` are never written again, so they may be kept), never
 * the record itself (`clone` it if it must be).
 */
export type MessageHandler = (d: Delivery) => void

/** One subscription: what the Sublist indexes and what delivery counts. */
export class Subscription implements SubLike {
  /** Messages delivered on this subscription. */
  delivered = 0
  /** Auto-unsubscribe after this many deliveries; 0 = never. */
  max = 0
  closed = false
  /**
   * A persistent MQTT session holds the QoS 1/2 messages it receives here until they are
   * acknowledged, across restarts: a message any such subscription matches is stored
   * before it is routed (and only then).
   */
  holdsMessages = false

  constructor(
    readonly principal: Principal,
    readonly subject: string,
    readonly queue: string | undefined,
    readonly sid: string,
    /** Set for the server's own subscriptions: delivery calls it instead of handing the message to the principal. */
    readonly handler: MessageHandler | undefined = undefined
  ) {}
}

/** Where a message came from: carried with it to every subscriber, never set aside on a shared object. */
export class Origin {
  /** The principal that published it (an import forwarding it publishes it anew). */
  publisher: Principal | undefined = undefined
  /** The MQTT QoS it was published with; 0 for what NATS clients and subsystems publish. */
  qos = 0
  /** Published by an MQTT client with RETAIN set (MQTT 5.0 Retain As Published forwards it so). */
  retain = false
  /** Its stored copy (a `$MQTT_msgs` sequence of the publisher's account) when a persistent session needs one. */
  ref: number | undefined = undefined
  /**
   * A message from another server of the cluster: the queue groups that server picked this
   * one to deliver to (one member each); its plain subscribers take it too. Undefined for a
   * message published here: every queue group takes it. Valid during routing only.
   */
  queues: ReadonlyArray<string> | undefined = undefined
  /** Delivered on this server only, never sent to another (a stream import's copy: every server imports for itself). */
  local = false
  /**
   * The cluster of the leaf node it entered through ("" for none): it is never sent back
   * to a leaf connection of that cluster, and routes that understand it carry it (LMSG).
   */
  cluster = ""
}

const EMPTY = Buffer.alloc(0)

/**
 * One message on its way: `buf[start, end)` holds `hdrLen` bytes of headers (-1: none)
 * and then the payload. The router owns a few of these and reuses them (one per level of
 * nested routing), so a delivery allocates nothing.
 */
export class Delivery {
  subject = ""
  reply = ""
  hdrLen = -1
  buf: Buffer = EMPTY
  start = 0
  end = 0
  /** The clock reading this message is routed under (the read of the chunk it came in). */
  now = 0
  /** A number per routed message: a principal with several matching subscriptions can take it once. */
  seq = 0
  readonly origin = new Origin()

  /** Where the payload starts (after the headers). */
  get payloadStart(): number {
    return this.hdrLen > 0 ? this.start + this.hdrLen : this.start
  }

  /** A copy to keep past the call that handed the record over. */
  clone(): Delivery {
    const d = new Delivery()
    d.subject = this.subject
    d.reply = this.reply
    d.hdrLen = this.hdrLen
    d.buf = this.buf
    d.start = this.start
    d.end = this.end
    d.now = this.now
    d.seq = this.seq
    d.origin.publisher = this.origin.publisher
    d.origin.qos = this.origin.qos
    d.origin.ref = this.origin.ref
    d.origin.queues = this.origin.queues === undefined ? undefined : [...this.origin.queues]
    d.origin.local = this.origin.local
    d.origin.cluster = this.origin.cluster
    return d
  }
}

/**
 * What a connection is to the engine: its identity, account, permissions and
 * subscriptions, and the flags that shape what it is sent. Protocol drivers extend it
 * and say how a message reaches their peer (`deliver`).
 */
export abstract class Principal {
  /** The authenticated user name ("" for none); never a password or token. */
  user = ""
  /** What it may publish and subscribe to; undefined = anything in its account. */
  perms: ClientPermissions | undefined = undefined
  /** Its subscriptions by sid. */
  readonly subs = new Map<string, Subscription>()
  /** It hears its own messages. */
  echo = true
  /** It takes messages with headers (without: the payload alone). */
  headers = false
  /** A request of its that reaches nobody is answered with a 503 status. */
  noResponders = false
  /** Gone: nothing is delivered to it any more. */
  closed = false
  /**
   * Another server (a route): what it publishes came from that server's side of the
   * cluster, so it is delivered here and never sent on to another server (one hop).
   */
  readonly remote: boolean = false
  /**
   * Another server (a route or a leaf-node connection): what it publishes was already
   * handled by that server's own subsystems, so a principal that does not `announce`
   * (this server's JetStream API, a service import's requests) does not take it.
   */
  readonly foreign: boolean = false
  /**
   * Its subscriptions are announced to the other servers of the cluster (they send it what
   * their clients publish). Off for what every server does for itself: a stream import's
   * listener, a service import's requests, the JetStream API of the node. It takes nothing
   * a `foreign` principal publishes (a wildcard subscriber elsewhere may draw such a
   * message here: it was answered where it was published).
   */
  announce = true

  constructor(public account: Account) {}

  /**
   * One message on one of its subscriptions (that has no handler), after the router's
   * checks (closed, permissions): write it for the peer. False when it could not take it.
   */
  abstract deliver(s: Subscription, d: Delivery): boolean

  /** Its request on `reply` reached nobody: tell it on its subscription `s` (it asked to hear so). */
  sendNoResponders(_s: Subscription, _reply: string): void {}

  /** Index a new subscription of its. */
  addSub(s: Subscription): void {
    this.subs.set(s.sid, s)
    this.account.subscribe(s)
  }

  /** Remove one of its subscriptions (once). */
  removeSub(s: Subscription): void {
    if (s.closed) return
    s.closed = true
    this.subs.delete(s.sid)
    this.account.unsubscribe(s)
  }

  /** Remove every subscription of its (it went away). */
  removeAllSubs(): void {
    for (const s of this.subs.values()) {
      s.closed = true
      this.account.unsubscribe(s)
    }
    this.subs.clear()
  }
}

/**
 * A subsystem of the server (the stream API, a stream's capture, an account import, the
 * MQTT sessions of absent clients) on the same subjects: no socket, not listed in /connz,
 * not counted as a connection. Its subscriptions have handlers.
 */
export class InternalPrincipal extends Principal {
  constructor(
    account: Account,
    readonly name: string
  ) {
    super(account)
    this.headers = true
  }

  deliver(): boolean {
    return false
  }
}
