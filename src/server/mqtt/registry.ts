// Who holds an MQTT client id: the connection using it, or its persistent session while
// the client is away (an MqttSession in the `away` phase, subscribed as its account's
// "mqtt-sessions" principal). Client ids are per account, as subjects are. The registry
// decides takeovers (and refuses a client id flapping between connections); the bridge
// carries the decisions out on the sessions.
import {
  type FlapRecord,
  MqttSession,
  recordTakeover,
  type SessionConfig,
  type SessionDeps,
  type SessionSnapshot,
  type DelayedWill,
  filterSubscription
} from "../../core/mqtt/index.js"
import { natsToPublish } from "../../core/mqtt/v5/nats.js"
import type { MessageProperties } from "../../core/mqtt/v5/types.js"
import type { ClientPermissions } from "../../engine/permissions.js"
import type { Delivery, InternalPrincipal, Subscription } from "../../engine/principal.js"
import type { Server } from "../server.js"
import type { MqttConnection } from "./connection.js"
import type { HeldPayloads } from "./held.js"
import type { MqttAccountStore, MqttStoreService } from "./store.js"

/** Takeovers of one client id within this window beyond the limit are flapping: the newcomer is refused. */
const FLAP_WINDOW_MS = 10_000
const FLAP_MAX_TAKEOVERS = 3

const sessionKey = (account: string, clientId: string): string => `${account}\n${clientId}`

/** What claiming a client id means for the connection that asks. */
export type Claim =
  | { readonly kind: "free" }
  /** Another connection holds it: that one is closed (its will goes out) [MQTT-3.1.4-2]. */
  | { readonly kind: "takeover"; readonly older: MqttConnection }
  /** Taken over too often lately: the newcomer is turned away, the connected one stays. */
  | { readonly kind: "flapping" }

const FREE: Claim = { kind: "free" }
const FLAPPING: Claim = { kind: "flapping" }

/** A persistent session whose client is away, and its subscriptions (for its QoS 1/2 filters). */
interface Away {
  readonly account: string
  readonly session: MqttSession
  readonly subs: Array<Subscription>
  /** The last routed message taken (its Delivery seq): overlapping filters take it once. */
  lastSeq: number
}

export class MqttRegistry {
  private readonly byClientId = new Map<string, MqttConnection>()
  private readonly flaps = new Map<string, FlapRecord>()
  private readonly away = new Map<string, Away>()
  private readonly offlineClients = new Map<string, InternalPrincipal>()
  /** MQTT 5.0 away sessions with a Session Expiry Interval: when each ends unless resumed (ms). */
  private readonly endsAt = new Map<string, { readonly account: string; readonly clientId: string; readonly at: number }>()
  /** Asks the shell to run `expire` by then (set by the bridge). */
  wakeAt: (at: number) => void = () => {}
  /** A stored session taken up after a restart holds a delayed will: the bridge publishes it when due. */
  onStoredWill: (account: string, clientId: string, will: DelayedWill) => void = () => {}
  /** An account's store was opened here (its retained messages loaded): set by the bridge. */
  onOpened: (store: MqttAccountStore) => void = () => {}
  /** Messages dropped at a session's queue bounds (/varz mqtt.queue_dropped); logged at most every 10 s per session. */
  queueDrops = 0
  private readonly dropLog = new Map<string, { at: number; count: number }>()

  constructor(
    private readonly server: Server,
    private readonly store: MqttStoreService,
    /** Where the payloads an away session lets go return to. */
    private readonly held: HeldPayloads,
    /** Limits of new sessions and away ones; a configuration reload replaces it. */
    public sessionConfig: SessionConfig
  ) {}

  /** New limits (a reload): for new sessions and the away ones. */
  setSessionConfig(config: SessionConfig): void {
    this.sessionConfig = config
    for (const d of this.away.values()) d.session.setLimits(config)
  }

  /** The open connection of a client id in an account. */
  connected(clientId: string, account: string): MqttConnection | undefined {
    return this.byClientId.get(sessionKey(account, clientId))
  }

  /** What a persistent session whose client is away holds for it (undefined: it is not away). */
  /** The account's principal for what the server does for away sessions (their subscriptions, their delayed wills). */
  internal(account: string): InternalPrincipal {
    let client = this.offlineClients.get(account)
    if (client === undefined) {
      client = this.server.router.internal(account, "mqtt-sessions")
      this.offlineClients.set(account, client)
    }
    return client
  }

  /** A delayed will of an away session went out: its record no longer holds it. */
  willSent(account: string, clientId: string): void {
    const d = this.away.get(sessionKey(account, clientId))
    if (d === undefined || d.session.pendingWill === undefined) return
    d.session.willDone()
    const store = this.store.ready(account)
    if (store?.durable === true) {
      store.writeSession(d.session.snapshot())
      this.store.commit(() => {})
    }
  }

  awayQueue(clientId: string, account: string): { messages: number; bytes: number; bytesInMemory: number } | undefined {
    return this.away.get(sessionKey(account, clientId))?.session.awayQueue()
  }

  /** `c` wants `clientId` (its CONNECT was accepted): whom it takes it from, if anyone, or whether it is refused. */
  claim(c: MqttConnection, clientId: string, now: number): Claim {
    const key = sessionKey(c.account.name, clientId)
    const older = this.byClientId.get(key)
    if (older === undefined || older === c) return FREE
    const flap = recordTakeover(this.flaps.get(key), now, FLAP_WINDOW_MS, FLAP_MAX_TAKEOVERS)
    this.flaps.set(key, flap.record)
    return flap.flapping ? FLAPPING : { kind: "takeover", older }
  }

  /** `c` holds `clientId` now (after the older connection, if any, was closed). */
  register(c: MqttConnection, clientId: string): void {
    this.byClientId.set(sessionKey(c.account.name, clientId), c)
  }

  /** Whether `c` still holds its client id (a connection taken over no longer does). */
  holds(c: MqttConnection): boolean {
    const id = c.session.clientId
    return id !== "" && this.byClientId.get(sessionKey(c.account.name, id)) === c
  }

  /** `c` ends: its client id is free; its session, when persistent, goes away (`perms`: its owner's). */
  release(c: MqttConnection, snapshot: SessionSnapshot | undefined): void {
    this.byClientId.delete(sessionKey(c.account.name, c.session.clientId))
    if (snapshot !== undefined) this.goAway(c.account.name, snapshot, c.perms)
  }

  /**
   * The away session of a client id, taken back (unsubscribed) for a connection to resume or
   * discard; undefined when there is none, or when its Session Expiry Interval ran out (it
   * is discarded then, as `expire` would have: the alarm may not have run since, as after a
   * restart that took longer than the interval, found by the simulator, seed 1758060521).
   */
  resume(account: string, clientId: string): SessionSnapshot | undefined {
    const key = sessionKey(account, clientId)
    const e = this.endsAt.get(key)
    if (e !== undefined && e.at <= this.server.now()) {
      this.discardExpired(key, e)
      return undefined
    }
    return this.takeAway(key)
  }

  private takeAway(key: string): SessionSnapshot | undefined {
    const d = this.away.get(key)
    if (d === undefined) return undefined
    this.away.delete(key)
    this.endsAt.delete(key)
    for (const s of d.subs) s.principal.removeSub(s)
    return d.session.snapshot()
  }

  /** An away session whose Session Expiry Interval ran out: its subscriptions, its queue and what the store holds of it go. True when the store was written. */
  private discardExpired(key: string, e: { readonly account: string; readonly clientId: string }): boolean {
    const snap = this.takeAway(key)
    this.endsAt.delete(key)
    if (snap === undefined) return false
    if (this.server.log.debugEnabled) this.server.log.debug(`MQTT session "${e.clientId}" expired (Session Expiry Interval ${snap.expiryInterval ?? 0}s): discarded`)
    const store = this.store.ready(e.account)
    if (store === undefined) return false
    store.deleteSession(snap, e.clientId)
    return true
  }

  /** Open an account's store and take up the sessions stored in it (away until their clients come). */
  openAccount(account: string): Promise<MqttAccountStore> {
    const ready = this.store.ready(account)
    if (ready !== undefined) return Promise.resolve(ready)
    return this.store.open(account).then((store) => {
      this.onOpened(store)
      for (const [clientId, snap] of store.takeSessions()) {
        const key = sessionKey(account, clientId)
        if (!this.byClientId.has(key) && !this.away.has(key)) {
          this.goAway(account, snap)
          if (snap.will !== undefined) this.onStoredWill(account, clientId, snap.will)
        }
      }
      return store
    })
  }

  /** After a restart: every account that has MQTT state stored is opened and its sessions taken up. */
  openStoredAccounts(): Promise<void> {
    return Promise.all(this.store.storedAccounts().map((n) => this.openAccount(n))).then(() => undefined)
  }

  /** Keep a persistent session subscribed while its client is away (`perms`: its owner's, when known). */
  private goAway(account: string, snapshot: SessionSnapshot, perms: ClientPermissions | undefined = undefined): void {
    const session = MqttSession.away(snapshot, this.server.now(), this.awayDeps(perms), this.sessionConfig)
    const d: Away = { account, session, subs: [], lastSeq: 0 }
    const client = this.internal(account)
    for (const s of snapshot.subscriptions) {
      const subjects = filterSubscription(s.filter, s.shared === true)
      // QoS 0 messages are not kept for an absent client.
      if (!subjects.ok || s.qos === 0) continue
      // A Shared Subscription stays in its queue group while its client is away (4.8.2).
      for (const subject of subjects.subjects) {
        const sub = this.server.router.subscribe(client, subject, subjects.queue, (m: Delivery) => this.deliverAway(d, m))
        sub.holdsMessages = true
        d.subs.push(sub)
      }
    }
    const key = sessionKey(account, snapshot.clientId)
    this.away.set(key, d)
    if (snapshot.endsAt !== undefined) {
      // An MQTT 5.0 session is kept for its Session Expiry Interval [MQTT-3.1.2-23], then discarded [MQTT-4.1.0-2].
      this.endsAt.set(key, { account, clientId: snapshot.clientId, at: snapshot.endsAt })
      this.wakeAt(snapshot.endsAt)
    }
  }

  /**
   * Discard the away sessions whose Session Expiry Interval has run out by `now`: their
   * subscriptions, their queued messages and what the store holds of them. Returns when
   * the next one ends (undefined: none is counting down), and whether any store was written.
   */
  expire(now: number): { readonly next: number | undefined; readonly wrote: boolean } {
    let next = Number.POSITIVE_INFINITY
    let wrote = false
    for (const [key, e] of [...this.endsAt]) {
      if (e.at > now) {
        next = Math.min(next, e.at)
        continue
      }
      if (this.discardExpired(key, e)) wrote = true
    }
    return { next: next === Number.POSITIVE_INFINITY ? undefined : next, wrote }
  }

  /**
   * What an away session depends on: nothing its owner may not receive is queued for it
   * (sessions loaded after a restart are filtered when they resume), and the payloads it
   * lets go return to their slabs.
   */
  private awayDeps(perms: ClientPermissions | undefined): SessionDeps {
    return {
      randomBytes: this.server.env.randomBytes,
      released: (payload) => this.held.release(payload),
      canReceive: perms === undefined ? undefined : (subject) => perms.mayReceive(subject)
    }
  }

  private deliverAway(d: Away, m: Delivery): void {
    if (d.lastSeq === m.seq) return
    d.lastSeq = m.seq
    if (m.origin.qos === 0) return
    const { subject, buf, end } = m
    const from = m.payloadStart
    const ref = m.origin.ref
    // The session keeps what it queues: a copy, not a view pinning the whole read chunk; a
    // stored message waits in the store (the view only tells its size).
    const payload = ref !== undefined ? buf.subarray(from, end) : Buffer.from(buf.subarray(from, end))
    const s = d.session
    const taken = s.storedTaken
    // MQTT 5.0: the message's properties wait with it (a status message is not for MQTT).
    let properties: MessageProperties | undefined
    if (s.protocolVersion === 5 && (m.hdrLen > 0 || m.reply !== "")) {
      const n = natsToPublish(subject, m.reply === "" ? undefined : m.reply, m.hdrLen > 0 ? buf.subarray(m.start, m.start + m.hdrLen) : undefined)
      if (n.status !== undefined) return
      properties = n.properties
    }
    const actions = s.step({ type: "deliver", subject, payload, qos: m.origin.qos, ref, properties, retain: m.origin.retain }, m.now)
    const store = this.store.ready(d.account)
    for (const a of actions) {
      // At the session's bounds the oldest message waiting gave way to the newest.
      if (a.type !== "drop") continue
      if (typeof a.ref === "number") store?.unref(a.ref)
      if (a.reason === "queue_full") this.queueDropped(s.clientId, d.account)
    }
    if (ref !== undefined && s.storedTaken !== taken) store?.ref(ref)
  }

  /** A session's queue was full and its oldest message gave way: counted, and logged at most every 10 s per session. */
  queueDropped(clientId: string, account: string): void {
    this.queueDrops++
    const key = sessionKey(account, clientId)
    const now = this.server.now()
    const l = this.dropLog.get(key)
    if (l !== undefined && now - l.at < 10_000) {
      l.count++
      return
    }
    const since = l === undefined ? 1 : l.count + 1
    this.dropLog.set(key, { at: now, count: 0 })
    if (this.dropLog.size > 10_000) this.dropLog.delete(this.dropLog.keys().next().value as string)
    const c = this.sessionConfig
    this.server.log.warn(
      `MQTT session "${clientId}": its queue is full (max_queued_messages ${c.maxQueued}, max_queued_bytes ${c.maxQueuedBytes ?? 0}); ` +
        `the oldest message waiting was dropped (${since} since the last report)`
    )
  }
}
