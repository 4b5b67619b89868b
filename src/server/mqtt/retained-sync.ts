// Retained messages cluster-wide, among Switchyard servers joined by routes or leaf
// connections. A retained message (or its removal) kept here — by a PUBLISH with RETAIN, a
// will, a delayed will — is announced to every Switchyard peer on `$MQTT.rmsg.put` in its
// account (a leaf connection: the account it is bound to), passed on by a hub; each peer
// keeps it in its own store (persisted with the stream subsystem on) when its version is
// newer than what it holds (core/mqtt/retained-sync.ts: last writer by (ts, server id)).
// A route or leaf connection coming up starts a catch-up in both directions: each end asks (`$MQTT.rmsg.sync`)
// and the other sends its retained set and remembered removals in bounded batches, each
// ended by `$MQTT.rmsg.more` (ask again) or `$MQTT.rmsg.done`.
//
// These subjects are the servers' own (core/cluster/own-subjects.ts): sent on the links
// directly, never through the router, so no client sees them; a route or leaf connection
// hands them here instead of routing them; no client may publish on them; and only those
// from a link to a Switchyard server are read (a nats-server peer never sends any: nobody announces
// interest in them). A server on its own announces nothing and keeps no versions.
import type { PeerMsg } from "../../core/cluster/parser.js"
import {
  decodeAnnouncement,
  encodeAnnouncement,
  nextVersion,
  type RetainedAnnouncement,
  type RetainedVersion,
  RetainedVersions,
  supersedes,
  UNKNOWN_VERSION
} from "../../core/mqtt/retained-sync.js"
import type { QoS } from "../../core/mqtt/index.js"
import { topicToSubject } from "../../core/mqtt/topic.js"
// Types only: routes and leaf nodes load with their configuration blocks (server/parts.ts).
import type { PeerLink, PeerOwnHandler } from "../cluster/link.js"
import type { Server } from "../server.js"
import type { MqttAccountStore, MqttStoreService, StoredProps } from "./store.js"

export const RMSG_PUT = "$MQTT.rmsg.put"
export const RMSG_SYNC = "$MQTT.rmsg.sync"
export const RMSG_MORE = "$MQTT.rmsg.more"
export const RMSG_DONE = "$MQTT.rmsg.done"

/** A catch-up batch: at most this many messages, or this many bytes (whichever comes first). */
const BATCH_MESSAGES = 256
const BATCH_BYTES = 1 << 20
/** Removals remembered per account (so a catch-up does not bring back what was removed). */
const MAX_TOMBSTONES = 10_000

const EMPTY = Buffer.alloc(0)
/**
 * A sync request's body: empty for the next batch (after `$MQTT.rmsg.more`), `start` for a
 * catch-up from the beginning, `start+ask` for one that also asks the peer to catch up
 * with this server (which could not answer until now).
 */
const START = Buffer.from("start")
const START_ASK_BACK = Buffer.from("start+ask")

/** What one peer's catch-up still has to send: (account, topic) pairs, read live when sent. */
interface Serving {
  readonly accounts: Array<string>
  readonly topics: Array<string>
  pos: number
}

export class RetainedSync implements PeerOwnHandler {
  private readonly versions = new Map<string, RetainedVersions>()
  private readonly serving = new WeakMap<PeerLink<string>, Serving>()
  private commitDue = false

  constructor(
    private readonly server: Server,
    private readonly store: MqttStoreService,
    /** A retained message was set or removed in `store` on another server's word (for RetainedExpiry). */
    private readonly changed: (store: MqttAccountStore, topic: string) => void = () => {}
  ) {
    // Routes that came up before the MQTT bridge did: what they asked went unanswered (and
    // their announcements unheard), so both ends catch up now.
    for (const r of this.peers(undefined)) r.sendOwn(server.options.systemAccount, RMSG_SYNC, START_ASK_BACK)
  }

  /** With routes or leaf connections (a server on its own keeps no versions and announces nothing). */
  private get clustered(): boolean {
    return this.server.cluster !== undefined || this.server.leafnodes !== undefined
  }

  private versionsOf(account: string): RetainedVersions {
    let v = this.versions.get(account)
    if (v === undefined) {
      v = new RetainedVersions(MAX_TOMBSTONES)
      this.versions.set(account, v)
    }
    return v
  }

  /**
   * The connections to Switchyard servers past their handshake that carry `account`: every
   * route, and the leaf connections bound to it (undefined: any account).
   */
  private peers(account: string | undefined): Array<PeerLink<string>> {
    const out: Array<PeerLink<string>> = []
    const cluster = this.server.cluster
    if (cluster !== undefined) for (const r of cluster.byId.values()) if (isSwitchyardPeer(r)) out.push(r)
    const leafs = this.server.leafnodes
    if (leafs !== undefined) {
      for (const l of leafs.leafs.values()) if (isSwitchyardPeer(l) && (account === undefined || l.account.name === account)) out.push(l)
    }
    return out
  }

  // ---- what this server keeps: announced ----

  /** The bridge kept a retained message of `account` (its store has it already). */
  kept(account: string, topic: string, payload: Uint8Array, qos: QoS, props: StoredProps | undefined, now: number): void {
    if (!this.clustered) return
    const vs = this.versionsOf(account)
    const version = nextVersion(this.server.serverId, now, vs.get(topic))
    vs.kept(topic, version)
    const buf = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)
    this.announce(account, { version, topic, deleted: false, qos, payload: buf, props })
  }

  /** The bridge removed the retained message of `topic` (an empty retained payload). */
  removed(account: string, topic: string, now: number): void {
    if (!this.clustered) return
    const vs = this.versionsOf(account)
    const version = nextVersion(this.server.serverId, now, vs.get(topic))
    vs.deleted(topic, version)
    this.announce(account, { version, topic, deleted: true, qos: 0, payload: EMPTY })
  }

  /**
   * To the Switchyard peers, except where it came from (`from`); what came over a route goes
   * on to leaf connections only (the other routes' servers heard it from its own: a full
   * mesh), what came over a leaf connection to the routes and the other leaf connections,
   * except that a spoke keeps its hub connection and its routes apart, as it does for
   * messages (every server of a leaf cluster has its own connection to the hub).
   */
  private announce(account: string, a: RetainedAnnouncement, from?: PeerLink<string>): void {
    const peers = this.peers(account)
    if (peers.length === 0) return
    let body: Buffer | undefined
    for (const r of peers) {
      if (r === from || (from?.proto === "route" && r.proto === "route") || apart(from, r)) continue
      body ??= encodeAnnouncement(a)
      if (!r.sendOwn(account, RMSG_PUT, body)) this.server.log.warn(`${r.logPrefix()} - MQTT retained message on '${a.topic}' not announced: larger than the peer's max_payload`)
    }
  }

  // ---- what the other servers say ----

  linkUp(link: PeerLink<string>): void {
    if (isSwitchyardPeer(link)) link.sendOwn(this.server.options.systemAccount, RMSG_SYNC, START)
  }

  message(link: PeerLink<string>, account: string, m: PeerMsg): void {
    if (!isSwitchyardPeer(link)) {
      this.server.log.debug(`${link.logPrefix()} - '${m.subject}' from a server that is not Switchyard ignored`)
      return
    }
    switch (m.subject) {
      case RMSG_PUT: {
        const a = decodeAnnouncement(m.buf, m.start + Math.max(0, m.hdrLen), m.end)
        if (a === undefined) {
          this.server.log.warn(`${link.logPrefix()} - malformed MQTT retained message announcement ignored`)
          return
        }
        return this.heard(account, a, link)
      }
      case RMSG_SYNC: {
        const body = m.buf.toString("latin1", m.start + Math.max(0, m.hdrLen), m.end)
        if (body === START_ASK_BACK.toString("latin1")) link.sendOwn(this.server.options.systemAccount, RMSG_SYNC, START)
        return this.serve(link, body !== "")
      }
      case RMSG_MORE:
        link.sendOwn(this.server.options.systemAccount, RMSG_SYNC, EMPTY)
        return
      case RMSG_DONE:
        this.server.log.debug(`${link.logPrefix()} - MQTT retained messages caught up`)
        return
      default:
        this.server.log.debug(`${link.logPrefix()} - unknown '${m.subject}' ignored`)
    }
  }

  /** Another server's announcement: kept here when newer than what is held. */
  private heard(account: string, a: RetainedAnnouncement, from: PeerLink<string>): void {
    if (!this.server.accounts.has(account)) return
    const store = this.store.ready(account)
    if (store !== undefined) return this.merge(account, store, a, from)
    this.store.open(account).then(
      (s) => this.merge(account, s, a, from),
      (e: unknown) => this.server.log.error(`MQTT: retained message on '${a.topic}' from another server not kept: ${String(e)}`)
    )
  }

  private merge(account: string, store: MqttAccountStore, a: RetainedAnnouncement, from: PeerLink<string>): void {
    // The subject is this server's own reading of the topic (a peer's is not taken on trust).
    const subject = topicToSubject(a.topic)
    if (!subject.ok) {
      this.server.log.warn(`MQTT retained message from another server on an invalid topic ignored: ${subject.reason}`)
      return
    }
    const vs = this.versionsOf(account)
    const held = vs.get(a.topic) ?? (store.retained.get(a.topic) !== undefined ? UNKNOWN_VERSION : undefined)
    if (!supersedes(a.version, held)) return
    if (a.deleted) {
      store.deleteRetained(a.topic, subject.value)
      vs.deleted(a.topic, a.version)
    } else {
      store.setRetained(a.topic, subject.value, a.payload, a.qos, a.props)
      vs.kept(a.topic, a.version)
    }
    this.changed(store, a.topic)
    // On to the servers that may not have heard it (behind leaf connections).
    this.announce(account, a, from)
    if (store.durable && !this.commitDue) {
      // One commit for what this turn kept.
      this.commitDue = true
      setImmediate(() => {
        this.commitDue = false
        this.store.commit(() => {})
      })
    }
  }

  // ---- catch-up: this server's retained set to a peer that asks ----

  private serve(link: PeerLink<string>, fromStart: boolean): void {
    let s = this.serving.get(link)
    if (s === undefined || fromStart) {
      // A leaf connection carries its account only.
      s = this.snapshot(link.proto === "leaf" ? link.account.name : undefined)
      this.serving.set(link, s)
    }
    const sys = this.server.options.systemAccount
    let n = 0
    let bytes = 0
    while (s.pos < s.topics.length && n < BATCH_MESSAGES && bytes < BATCH_BYTES) {
      const account = s.accounts[s.pos]
      const topic = s.topics[s.pos]
      s.pos++
      const a = this.current(account, topic)
      if (a === undefined) continue
      const body = encodeAnnouncement(a)
      if (!link.sendOwn(account, RMSG_PUT, body)) continue
      n++
      bytes += body.length
    }
    if (s.pos < s.topics.length) link.sendOwn(sys, RMSG_MORE, EMPTY)
    else {
      this.serving.delete(link)
      link.sendOwn(sys, RMSG_DONE, EMPTY)
    }
  }

  /** Every topic held (kept or removed), by account: read again when its turn comes. */
  private snapshot(only: string | undefined): Serving {
    const s: Serving = { accounts: [], topics: [], pos: 0 }
    for (const account of this.server.accounts.keys()) {
      if (only !== undefined && account !== only) continue
      const store = this.store.ready(account)
      if (store !== undefined) {
        for (const m of store.retained.values()) {
          s.accounts.push(account)
          s.topics.push(m.topic)
        }
      }
      const vs = this.versions.get(account)
      if (vs !== undefined) {
        for (const [topic] of vs.tombstones()) {
          s.accounts.push(account)
          s.topics.push(topic)
        }
      }
    }
    return s
  }

  /** What this server holds of `topic` now, as an announcement; undefined for nothing. */
  private current(account: string, topic: string): RetainedAnnouncement | undefined {
    const vs = this.versions.get(account)
    const m = this.store.ready(account)?.retained.get(topic)
    if (m !== undefined) {
      const version: RetainedVersion = vs?.get(topic) ?? UNKNOWN_VERSION
      const payload = Buffer.isBuffer(m.payload) ? m.payload : Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength)
      return { version, topic, deleted: false, qos: m.qos as QoS, payload, props: m.props }
    }
    const gone = vs?.tombstone(topic)
    if (gone === undefined) return undefined
    return { version: gone, topic, deleted: true, qos: 0, payload: EMPTY }
  }
}

/** A route and a connection this server solicited to a hub: kept apart (a spoke's rule). */
const apart = (from: PeerLink<string> | undefined, to: PeerLink<string>): boolean =>
  (from?.proto === "route" && to.proto === "leaf" && to.didSolicit) || (from?.proto === "leaf" && from.didSolicit && to.proto === "route")

/** A route or leaf connection to a Switchyard server, past its handshake. */
const isSwitchyardPeer = (link: PeerLink<string>): boolean =>
  link.registered && !link.closed && link.peerSwitchyard
