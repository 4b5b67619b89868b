// MQTT state in the five `$MQTT_*` streams of each account (spec 2.9), when the stream
// subsystem runs: the `MqttStore` port's `layerStreams`. Writes are synchronous appends
// (`storeSync`) made durable by a group commit: the bridge says nothing to a client that
// depends on a write until the commit covering it completed. Everything a running bridge
// reads (retained messages, stored sessions) is loaded once, when the account's streams
// are opened, and kept in memory. An account without streams keeps its state in memory.
import { Effect, Exit, Layer } from "effect"
import {
  decodeSessionRecord,
  delayedWillOf,
  encodeSessionRecord,
  decodeSubscriptionRecord,
  encodeSubscriptionRecord,
  sessSubscriptionSubject,
  type SubscriptionRecord,
  MqttStream,
  type MqttStreamName,
  MqttStreamSubject,
  msgSubject,
  pendingMessage,
  pubrelSubject,
  qos2InSubject,
  inboundOfHeader,
  qos2InHeader,
  RetainedTree,
  qosHeader,
  qosOfHeader,
  retainedSubject,
  sessionHash,
  sessSubject,
  storedHeader,
  storedParts,
  storedSubjectOf,
  subjectToTopic,
  filterSubscription,
  subscriptionOptionsOf,
  type SubscriptionOptions,
  bestGrant,
  type Grant,
  type QoS,
  type SessionSnapshot
} from "../../core/mqtt/index.js"
import { messageExpiryOf } from "../../core/mqtt/v5/nats.js"
import type { Group } from "../../services/group-commit.js"
import type { LogService } from "../../services/log.js"
import type { StoreError, StreamStore } from "../../services/store.js"
import type { JetStream } from "../jetstream/jetstream.js"
import type { JsStream } from "../jetstream/stream.js"
import { type InboundId, type LoadedMessage, type MqttAccountStore, MqttStore, type MqttStoreService, type RetainedMsg, storedExpired, type StoredProps } from "./store.js"
import { MemoryAccountStore } from "./store-memory.js"

/**
 * Every stream keeps one record per subject, except `$MQTT_msgs` (removed when delivered,
 * or by the stream when a message's Message Expiry Interval runs out: its per-message TTL).
 */
const streamConfig = (name: MqttStreamName) => ({
  name,
  subjects: [MqttStreamSubject[name]],
  storage: "file",
  retention: "limits",
  ...(name === MqttStream.msgs ? { max_msgs_per_subject: -1, allow_msg_ttl: true } : { max_msgs_per_subject: 1 })
})

/**
 * The per-message TTL of a stored copy: its Message Expiry Interval (at least the
 * stream's minimum, 1 s), so the stream removes it when it runs out. QoS 1 only: a QoS 2
 * delivery whose PUBLISH went out must complete its exchange whatever its interval says
 * [MQTT-4.3.3-7], and its resend needs the stored copy; QoS 2 copies are dropped when a
 * session would send them, or go with their last holder, as before.
 */
const ttlOf = (qos: QoS, props: StoredProps | undefined): number => {
  if (qos !== 1 || props === undefined) return 0
  const interval = messageExpiryOf(props.hdr)
  return interval === undefined ? 0 : Math.max(1, interval)
}

const STREAMS: ReadonlyArray<MqttStreamName> = [MqttStream.sess, MqttStream.msgs, MqttStream.rmsgs, MqttStream.qos2in, MqttStream.out]

/** The stored copy a `$MQTT_qos2in` record names, if any. */
const qos2InCopy = (payload: Uint8Array): number | undefined => {
  try {
    const r = JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString("utf8")) as { s?: unknown }
    return typeof r.s === "number" ? r.s : undefined
  } catch {
    return undefined
  }
}

/** The MQTT 5.0 properties a stored message's header kept (`storedHeader`), and its stored time; undefined: none. */
const propsOf = (headers: Uint8Array | undefined, ts: number): StoredProps | undefined => {
  const { reply, hdr } = storedParts(headers)
  return reply === undefined && hdr === undefined ? undefined : { reply, hdr, at: ts }
}

const tokenAt = (subject: string, fromEnd: number): string => {
  const t = subject.split(".")
  return t[t.length - 1 - fromEnd] ?? ""
}

/** The MQTT streams of one account, and what was loaded from them. */
export class StreamsAccountStore implements MqttAccountStore {
  readonly durable = true
  /** Retained messages by topic (the live view; `$MQTT_rmsgs` is its durable copy). */
  readonly retained = new RetainedTree<RetainedMsg>()
  /** Sessions read from `$MQTT_sess` at open, by client id, until the bridge takes them. */
  private sessions = new Map<string, SessionSnapshot>()
  /** `$MQTT_msgs` sequence -> number of persistent sessions holding it. */
  private readonly refs = new Map<number, number>()
  /** Messages nobody holds any more, removed once the commit after their release completed. */
  private removals: Array<number> = []
  /**
   * Stored messages not routed yet (held back until a commit, oldest first): a session
   * record's cursor stays below them, since its session has not seen them.
   */
  private unrouted: Array<number> = []
  private unroutedHead = 0

  constructor(
    readonly owner: StreamsStore,
    readonly name: string,
    private readonly streams: Readonly<Record<MqttStreamName, JsStream>>
  ) {}

  takeSessions(): Map<string, SessionSnapshot> {
    const s = this.sessions
    this.sessions = new Map()
    return s
  }

  private store(name: MqttStreamName): StreamStore {
    const st = this.streams[name].store
    this.owner.touched.add(st)
    return st
  }

  private put(name: MqttStreamName, subject: string, headers: Uint8Array | undefined, payload: Uint8Array, ttl = 0): number | StoreError {
    return this.store(name).storeSync(subject, headers, payload, this.owner.now(), false, ttl)
  }

  private drop(name: MqttStreamName, subject: string): void {
    const r = Effect.runSync(Effect.either(this.store(name).purge({ subject })))
    if (r._tag === "Left") this.owner.log.error(`MQTT: could not remove '${subject}' from stream '${name}': ${r.left.detail}`)
  }

  /**
   * Store a QoS 1/2 message published by an MQTT client; its sequence is the delivery ref.
   * `routedLater`: it is routed after this turn (in the order stored), then `routed` says so.
   */
  storeMessage(
    subject: string,
    payload: Uint8Array,
    qos: QoS,
    routedLater = false,
    inbound?: InboundId,
    props?: StoredProps
  ): number | StoreError {
    const base = inbound === undefined
      ? qosHeader(qos)
      : qos2InHeader(sessionHash(inbound.clientId), inbound.packetId, this.streams[MqttStream.qos2in].store.state().last_seq)
    // MQTT 5.0 properties go in the header after the bridge's own lines; the stored time is when it was received.
    const ttl = this.streams[MqttStream.msgs].config.allow_msg_ttl ? ttlOf(qos, props) : 0
    const header = props === undefined ? base : storedHeader(base, props.hdr, props.reply, ttl)
    const r = this.put(MqttStream.msgs, msgSubject(subject), header, payload, ttl)
    if (routedLater && typeof r === "number") this.unrouted.push(r)
    return r
  }

  /** The stored size of a message (0 when it is gone), from the index alone. */
  sizeOf(seq: number): number {
    const e = this.streams[MqttStream.msgs].store.nextMatchingEntry(">", seq)
    return e !== undefined && e.seq === seq ? e.size : 0
  }

  /** Stored messages read back for a session (its `fetch`): payload and QoS, undefined when gone. */
  loadMessages(seqs: ReadonlyArray<number>): Promise<Array<LoadedMessage | undefined>> {
    const msgs = this.streams[MqttStream.msgs].store
    return Effect.runPromise(
      Effect.forEach(seqs, (seq) =>
        Effect.map(Effect.either(msgs.load(seq)), (r) => {
          if (r._tag === "Left") return undefined
          const p = r.right.payload
          const payload = Buffer.isBuffer(p) ? p : Buffer.from(p.buffer, p.byteOffset, p.byteLength)
          const props = propsOf(r.right.headers, r.right.ts)
          return props === undefined ? { payload, qos: qosOfHeader(r.right.headers) } : { payload, qos: qosOfHeader(r.right.headers), props }
        }))
    )
  }

  /** A message stored with `routedLater` has been routed (they are routed in the order stored). */
  routed(seq: number): void {
    if (this.unrouted[this.unroutedHead] !== seq) return
    this.unroutedHead++
    if (this.unroutedHead === this.unrouted.length) {
      this.unrouted = []
      this.unroutedHead = 0
    }
  }

  /** The cursor of a session record: every `$MQTT_msgs` message up to it was routed. */
  routedCursor(): number {
    return this.unroutedHead < this.unrouted.length
      ? this.unrouted[this.unroutedHead] - 1
      : this.streams[MqttStream.msgs].store.state().last_seq
  }

  ref(seq: number): void {
    this.refs.set(seq, (this.refs.get(seq) ?? 0) + 1)
  }

  /** One holder is done with `seq`; the message goes when nobody holds it. */
  unref(seq: number): void {
    const n = (this.refs.get(seq) ?? 0) - 1
    if (n > 0) this.refs.set(seq, n)
    else {
      this.refs.delete(seq)
      this.removeMessage(seq)
    }
  }

  /** After routing: a message no persistent session took is not kept. */
  releaseIfUnheld(seq: number): void {
    if (!this.refs.has(seq)) this.removeMessage(seq)
  }

  /**
   * A message's removal waits for the commit that follows its release: the state that no
   * longer needs it (a QoS 2 id moved to PUBREL in `$MQTT_out` and the session record) lives
   * in other streams, and must not reach the disk after the removal does. A power cut in
   * between would restore a session whose pending message is gone, with its packet id free
   * for reuse while the client still holds it (found by the simulator, seed 1163386423).
   */
  private removeMessage(seq: number): void {
    this.removals.push(seq)
  }

  /** The removals the next commit covers (see `removeMessage`). */
  takeRemovals(): Array<number> {
    const r = this.removals
    this.removals = []
    return r
  }

  hasRemovals(): boolean {
    return this.removals.length > 0
  }

  /** After the commit: remove (ok), or wait for the next one (it failed). */
  settleRemovals(seqs: ReadonlyArray<number>, ok: boolean): void {
    if (!ok) {
      this.removals.unshift(...seqs)
      return
    }
    if (seqs.length === 0) return
    const r = this.store(MqttStream.msgs).removeSync(seqs)
    if (typeof r !== "number") this.owner.log.error(`MQTT: could not remove ${seqs.length} messages from ${MqttStream.msgs}: ${r.detail}`)
  }

  setRetained(topic: string, subject: string, payload: Uint8Array, qos: QoS, props?: StoredProps): void {
    this.retained.set(topic, props === undefined ? { topic, payload, qos } : { topic, payload, qos, props })
    const header = props === undefined ? qosHeader(qos) : storedHeader(qosHeader(qos), props.hdr, props.reply)
    const r = this.put(MqttStream.rmsgs, retainedSubject(subject), header, payload)
    if (typeof r !== "number") this.owner.log.error(`MQTT: retained message for '${topic}' not stored: ${r.detail}`)
  }

  deleteRetained(topic: string, subject: string): boolean {
    if (!this.retained.delete(topic)) return false
    this.drop(MqttStream.rmsgs, retainedSubject(subject))
    return true
  }

  writeSession(snap: SessionSnapshot): void {
    const r = this.put(MqttStream.sess, sessSubject(sessionHash(snap.clientId)), undefined, encodeSessionRecord(snap, this.routedCursor()))
    if (typeof r !== "number") this.owner.log.error(`MQTT: session of client "${snap.clientId}" not stored: ${r.detail}`)
  }

  /** One subscription of a persistent session, made (qos) or removed (undefined). */
  writeSubscription(clientId: string, filter: string, qos: QoS | undefined, options?: SubscriptionOptions): void {
    const subject = sessSubscriptionSubject(sessionHash(clientId), filter)
    if (qos === undefined) return this.drop(MqttStream.sess, subject)
    const r = this.put(MqttStream.sess, subject, undefined, encodeSubscriptionRecord(filter, qos, this.routedCursor(), options))
    if (typeof r !== "number") this.owner.log.error(`MQTT: subscription '${filter}' of client "${clientId}" not stored: ${r.detail}`)
  }

  /** Forget a session: its record, its subscriptions, its QoS 2 state, and its hold on stored messages. */
  deleteSession(snap: SessionSnapshot | undefined, clientId: string): void {
    const hash = sessionHash(clientId)
    this.drop(MqttStream.sess, sessSubject(hash))
    this.drop(MqttStream.sess, `${sessSubject(hash)}.*`)
    this.drop(MqttStream.qos2in, `$MQTT.qos2.in.${hash}.*`)
    this.drop(MqttStream.out, `$MQTT.out.pubrel.${hash}.*`)
    if (snap === undefined) return
    for (const o of snap.outbound) if (typeof o.ref === "number" && o.phase === "publish") this.unref(o.ref)
    for (const q of snap.queued) if (typeof q.ref === "number") this.unref(q.ref)
  }

  /**
   * `$MQTT_qos2in` / `$MQTT_out` records: present (true) or gone (false). An inbound QoS 2
   * record names the stored copy of its message (`copy`, its `$MQTT_msgs` sequence), written
   * just before it: recovery drops a record whose copy never reached the disk.
   */
  qos2State(stream: "$MQTT_qos2in" | "$MQTT_out", clientId: string, packetId: number, present: boolean, copy?: number): void {
    const hash = sessionHash(clientId)
    const subject = stream === MqttStream.qos2in ? qos2InSubject(hash, packetId) : pubrelSubject(hash, packetId)
    if (!present) return this.drop(stream, subject)
    const body = copy === undefined ? { id: clientId, pid: packetId } : { id: clientId, pid: packetId, s: copy }
    const r = this.put(stream, subject, undefined, Buffer.from(JSON.stringify(body)))
    if (typeof r !== "number") this.owner.log.error(`MQTT: QoS 2 state of client "${clientId}" not stored: ${r.detail}`)
  }

  /** Read everything back after a restart: retained messages, sessions with what they still owe. */
  load(): Effect.Effect<void, StoreError> {
    const self = this
    return Effect.gen(function*() {
      const rm = self.streams[MqttStream.rmsgs].store
      for (const [subject, st] of rm.subjectsState(">")) {
        const m = yield* Effect.either(rm.load(st.last))
        if (m._tag === "Left") continue
        const topic = subjectToTopic(storedSubjectOf(subject))
        const props = propsOf(m.right.headers, m.right.ts)
        // MQTT 5.0: one whose Message Expiry Interval ran out (while the server was down, say) is gone.
        if (storedExpired(props, self.owner.now())) {
          self.drop(MqttStream.rmsgs, subject)
          continue
        }
        const qos = qosOfHeader(m.right.headers)
        self.retained.set(topic, props === undefined ? { topic, payload: m.right.payload, qos } : { topic, payload: m.right.payload, qos, props })
      }
      const ids = (name: MqttStreamName): Map<string, Set<number>> => {
        const byHash = new Map<string, Set<number>>()
        for (const subject of self.streams[name].store.subjectsState(">").keys()) {
          const hash = tokenAt(subject, 1)
          let set = byHash.get(hash)
          if (set === undefined) byHash.set(hash, (set = new Set()))
          set.add(Number(tokenAt(subject, 0)))
        }
        return byHash
      }
      const qos2in = ids(MqttStream.qos2in)
      const pubrel = ids(MqttStream.out)
      const msgs = self.streams[MqttStream.msgs].store
      // Every stored message once, from the index (nothing is read for it): the QoS 2 copies
      // whose de-duplication record did not reach the disk with them (a power cut between the
      // two files' syncs) get it back. Only copies written since the last record on disk can
      // be such; their headers are read. A record written and later removed (PUBREL) is below
      // the stream's last sequence: that exchange is over, and its packet id may be in use again.
      const stored: Array<number> = []
      const q2State = self.streams[MqttStream.qos2in].store.state()
      const recordsUpTo = q2State.last_seq
      for (let from = 1;;) {
        const e = msgs.nextMatchingEntry(">", from)
        if (e === undefined) break
        from = e.seq + 1
        stored.push(e.seq)
        if (e.ts < q2State.last_ts) continue
        const m = yield* Effect.either(msgs.load(e.seq))
        if (m._tag === "Left") continue
        const inbound = inboundOfHeader(m.right.headers)
        if (inbound === undefined || recordsUpTo > inbound.recordsBefore) continue
        let set = qos2in.get(inbound.hash)
        if (set === undefined) qos2in.set(inbound.hash, (set = new Set()))
        set.add(inbound.packetId)
      }
      /** What the index knows of a stored message: its topic and size (its payload stays on disk). */
      const entryOf = (seq: number): { topic: string; size: number } | undefined => {
        const e = msgs.nextMatchingEntry(">", seq)
        return e === undefined || e.seq !== seq ? undefined : { topic: subjectToTopic(storedSubjectOf(e.subject)), size: e.size }
      }
      // And the reverse: a record whose stored copy did not reach the disk (the copy's stream
      // ends before it) is dropped, so the publisher's resend is forwarded, not lost.
      const copiesUpTo = msgs.state().last_seq
      const q2 = self.streams[MqttStream.qos2in].store
      for (const [subject, st] of q2.subjectsState(">")) {
        const rec = yield* Effect.either(q2.load(st.last))
        if (rec._tag === "Left") continue
        const copy = qos2InCopy(rec.right.payload)
        if (copy !== undefined && copy > copiesUpTo) qos2in.get(tokenAt(subject, 1))?.delete(Number(tokenAt(subject, 0)))
      }
      const ss = self.streams[MqttStream.sess].store
      // Subscription records first (`$MQTT.sess.<hash>.<filter hash>`), by session.
      const subsOf = new Map<string, Array<SubscriptionRecord>>()
      const bases: Array<readonly [string, number]> = []
      for (const [subject, st] of ss.subjectsState(">")) {
        if (subject.split(".").length === 3) {
          bases.push([subject, st.last])
          continue
        }
        const raw = yield* Effect.either(ss.load(st.last))
        const s = raw._tag === "Right" ? decodeSubscriptionRecord(raw.right.payload) : undefined
        if (s === undefined) {
          self.owner.log.error(`MQTT: subscription record '${subject}' in ${MqttStream.sess} is damaged; ignored`)
          continue
        }
        const hash = tokenAt(subject, 1)
        let list = subsOf.get(hash)
        if (list === undefined) subsOf.set(hash, (list = []))
        list.push(s)
      }
      for (const [subject, last] of bases) {
        const raw = yield* Effect.either(ss.load(last))
        const rec = raw._tag === "Right" ? decodeSessionRecord(raw.right.payload) : undefined
        if (rec === undefined) {
          self.owner.log.error(`MQTT: session record '${subject}' in ${MqttStream.sess} is damaged; ignored`)
          continue
        }
        const hash = sessionHash(rec.id)
        // Records written before subscriptions had their own list them: they become records of
        // their own now (and the session record is rewritten without them, below), so that an
        // UNSUBSCRIBE removing one record cannot be undone by the old list.
        const legacy = rec.subs.length > 0 && !subsOf.has(hash)
        const subs: ReadonlyArray<SubscriptionRecord> = legacy
          ? rec.subs.map((s) => ({ f: s.f, q: s.q, c: rec.cursor }))
          : subsOf.get(hash) ?? []
        const released = pubrel.get(hash) ?? new Set<number>()
        const outbound: Array<SessionSnapshot["outbound"][number]> = []
        const seen = new Set<number>()
        for (const o of rec.out) {
          if (o.ph === "pubrel" || released.has(o.p)) {
            // Released QoS 2 ids are owed a PUBREL until PUBCOMP; the record or its `$MQTT_out`
            // record says so (streams are synced side by side: after a failed commit one of
            // them may be behind). A PUBREL too many is answered with PUBCOMP [MQTT-4.3.3];
            // an id forgotten would be reused while the client still holds it.
            outbound.push({ packetId: o.p, qos: 2, topic: "", payload: new Uint8Array(0), retain: false, phase: "pubrel" })
            continue
          }
          const m = pendingMessage(o, entryOf)
          if (m === undefined) continue
          if (m.ref !== undefined) seen.add(m.ref)
          outbound.push({ ...m, packetId: o.p, phase: "publish" })
        }
        for (const p of released) {
          if (!outbound.some((o) => o.packetId === p)) outbound.push({ packetId: p, qos: 2, topic: "", payload: new Uint8Array(0), retain: false, phase: "pubrel" })
        }
        const queued: Array<SessionSnapshot["queued"][number]> = []
        for (const q of rec.queued) {
          const m = pendingMessage(q, entryOf)
          if (m === undefined) continue
          if (m.ref !== undefined) seen.add(m.ref)
          queued.push(m)
        }
        // Messages stored after the record was written that its QoS 1/2 subscriptions match
        // (each from when it was made), at the QoS they grant, as a live session would choose it.
        const grants: Array<Grant & { readonly from: number }> = []
        // MQTT 5.0: the subscriptions with a Subscription Identifier, QoS 0 ones included (a
        // message goes once, with the identifiers of every subscription that matches it).
        const identified: Array<Grant & { readonly from: number; readonly id: number }> = []
        for (const s of subs) {
          // a Shared Subscription's subjects are its inner filter's; any other `$share/…` filter is literal
          const subjects = filterSubscription(s.f, s.s === 1)
          if (!subjects.ok) continue
          const g = { filter: s.f, subjects: subjects.subjects, qos: s.q, from: Math.max(rec.cursor, s.c) + 1 }
          if (s.q > 0) grants.push(g)
          if (s.i !== undefined) identified.push({ ...g, id: s.i })
        }
        const filters = grants.flatMap((g) => g.subjects.map(msgSubject))
        const active: Array<Grant> = []
        // From the index alone: the message's own QoS is learnt when it is fetched (and lowers
        // the grant then), its payload stays on disk until the session's window has room.
        let from = rec.cursor + 1
        while (filters.length > 0) {
          const e = msgs.nextMatchingEntry(filters, from)
          if (e === undefined) break
          const seq = e.seq
          from = seq + 1
          if (seen.has(seq)) continue
          active.length = 0
          for (const g of grants) if (seq >= g.from) active.push(g)
          const best = bestGrant(active, storedSubjectOf(e.subject))
          if (best <= 0) continue
          seen.add(seq)
          const topic = subjectToTopic(storedSubjectOf(e.subject))
          let ids: Array<number> | undefined
          for (const g of identified) if (seq >= g.from && bestGrant([g], storedSubjectOf(e.subject)) >= 0) (ids ??= []).push(g.id)
          queued.push(ids === undefined
            ? { qos: best as 1 | 2, topic, payload: undefined, size: e.size, retain: false, ref: seq }
            // its other properties come with its payload (`fetched` keeps these beside them)
            : { qos: best as 1 | 2, topic, payload: undefined, size: e.size, retain: false, ref: seq, properties: { subscriptionIdentifiers: ids } })
        }
        for (const o of outbound) if (typeof o.ref === "number") self.ref(o.ref)
        for (const q of queued) if (typeof q.ref === "number") self.ref(q.ref)
        self.sessions.set(rec.id, {
          clientId: rec.id,
          owner: rec.u,
          subscriptions: subs.map((s) => ({ filter: s.f, qos: s.q, ...subscriptionOptionsOf(s) })),
          outbound,
          queued,
          inboundQos2: [...(qos2in.get(hash) ?? [])],
          lastPacketId: rec.pid,
          expiryInterval: rec.x,
          endsAt: rec.e,
          ...(rec.l === 5 ? { protocolVersion: 5 as const } : {}),
          will: delayedWillOf(rec)
        })
        if (legacy) {
          for (const s of subs) self.put(MqttStream.sess, sessSubscriptionSubject(hash, s.f), undefined, encodeSubscriptionRecord(s.f, s.q, s.c, subscriptionOptionsOf(s)))
          self.writeSession(self.sessions.get(rec.id)!)
        }
      }
      // Messages nobody holds any more (delivered before the last stop): reclaimed.
      self.settleRemovals(stored.filter((seq) => !self.refs.has(seq)), true)
    })
  }
}

/** The MQTT stores of every account, and the group commit they share. */
export class StreamsStore implements MqttStoreService {
  private readonly accounts = new Map<string, StreamsAccountStore>()
  /** Accounts that have no streams (or whose streams could not be opened): their state is in memory. */
  private readonly inMemory = new Map<string, MemoryAccountStore>()
  private readonly opening = new Map<string, Promise<MqttAccountStore>>()
  /** Stores written since the last commit started. */
  readonly touched = new Set<StreamStore>()
  /**
   * The commits: rounds of the engine's GroupCommit, as the streams' PubAcks are. Each
   * round syncs the stores written since the one before began, then removes the messages
   * released before it began (see `StreamsAccountStore.removeMessage`).
   */
  private readonly commits: Group<(ok: boolean) => void>
  /** The removals of the round that runs (one runs at a time), settled with it. */
  private roundRemovals: Array<readonly [StreamsAccountStore, Array<number>]> = []

  constructor(readonly js: JetStream, readonly log: LogService) {
    this.commits = js.groupCommit.group<(ok: boolean) => void, StoreError>({
      commit: () => this.commitRound(),
      settle: (batch, outcome) => this.settleRound(batch, Exit.isSuccess(outcome))
    })
  }

  now(): number {
    return this.js.server.now()
  }

  /** The account's store when it is open (undefined while it opens). */
  ready(account: string): MqttAccountStore | undefined {
    return this.accounts.get(account) ?? this.inMemory.get(account)
  }

  /** Open (creating when missing) and load the MQTT streams of an account; in memory when streams are off for it. */
  open(account: string): Promise<MqttAccountStore> {
    const have = this.ready(account)
    if (have !== undefined) return Promise.resolve(have)
    let p = this.opening.get(account)
    if (p === undefined) {
      p = Effect.runPromise(this.openEffect(account)).then(
        (s) => this.opened(account, s),
        (e: unknown) => {
          this.log.error(`MQTT: streams of account '${account}' could not be opened: ${String(e)}; QoS 1/2 state stays in memory`)
          return this.opened(account, undefined)
        }
      )
      this.opening.set(account, p)
    }
    return p
  }

  private opened(account: string, s: StreamsAccountStore | undefined): MqttAccountStore {
    this.opening.delete(account)
    if (s !== undefined) {
      this.accounts.set(account, s)
      return s
    }
    const m = new MemoryAccountStore()
    this.inMemory.set(account, m)
    return m
  }

  storedAccounts(): ReadonlyArray<string> {
    const names: string[] = []
    for (const [name, acc] of this.js.accounts) if (acc.streams.has(MqttStream.sess)) names.push(name)
    return names
  }

  /**
   * The account's `$MQTT_*` streams, each created when missing through the JetStream API
   * (an internal request, queued behind the clients' own and answered by the same
   * handlers), then loaded. A stream whose records are on disk but whose configuration
   * could not be read at recovery (seen after a power cut in the simulator, seed 59) is
   * taken up by that request with its records (`adopt`), instead of the MQTT state
   * silently falling back to memory.
   */
  private openEffect(account: string): Effect.Effect<StreamsAccountStore | undefined, StoreError> {
    const self = this
    return Effect.gen(function*() {
      if (!self.js.enabledFor(account)) return undefined
      const acc = self.js.account(account)
      const streams: Partial<Record<MqttStreamName, JsStream>> = {}
      for (const name of STREAMS) {
        let s = acc.streams.get(name)
        if (s === undefined) {
          const res = yield* Effect.promise(() =>
            self.js.call(account, `$JS.API.STREAM.CREATE.${name}`, JSON.stringify(streamConfig(name)), { adopt: true })
          )
          s = acc.streams.get(name)
          if (s === undefined) {
            const why = res !== undefined && "error" in res ? JSON.stringify(res.error) : "no answer"
            self.log.error(`MQTT: could not create stream '${name}' in account '${account}': ${why}`)
            return undefined
          }
        } else if (name === MqttStream.msgs && !s.config.allow_msg_ttl) {
          // Made before stored copies had a TTL: turned on in place (an update may do that), its limits kept.
          const res = yield* Effect.promise(() =>
            self.js.call(account, `$JS.API.STREAM.UPDATE.${name}`, JSON.stringify({ ...s!.config, allow_msg_ttl: true }))
          )
          if (res === undefined || "error" in res) {
            const why = res === undefined ? "no answer" : JSON.stringify(res.error)
            self.log.warn(`MQTT: stream '${name}' in account '${account}' keeps no per-message TTL: ${why}; expired messages go when a session would send them`)
          }
        }
        // Written by the bridge only: NATS publishes to `$MQTT.` subjects are not captured.
        s.unsubscribe()
        streams[name] = s
      }
      const store = new StreamsAccountStore(self, account, streams as Record<MqttStreamName, JsStream>)
      yield* store.load()
      return store
    })
  }

  /** Run `cb` once everything written so far is on stable storage (one fsync per store per round; see sync_interval). */
  commit(cb: (ok: boolean) => void): void {
    this.commits.join(cb)
  }

  /** Something was written since the last commit started (the next one has work to do). */
  hasWrites(): boolean {
    return this.touched.size > 0
  }

  /** Removals wait for a commit (see `StreamsAccountStore.removeMessage`); the bridge asks for one when any do. */
  hasRemovals(): boolean {
    for (const a of this.accounts.values()) if (a.hasRemovals()) return true
    return false
  }

  /** A round's work, when it begins: what was written and released before now. */
  private commitRound(): Effect.Effect<void, StoreError> {
    const stores = [...this.touched]
    this.touched.clear()
    for (const a of this.accounts.values()) if (a.hasRemovals()) this.roundRemovals.push([a, a.takeRemovals()])
    // With a sync_interval duration, "durable" means handed to the OS, as for stream publishes.
    const everyWrite = typeof this.js.options.syncInterval !== "number"
    return Effect.forEach(stores, (s) => (everyWrite ? s.sync() : s.flush()), { concurrency: "unbounded", discard: true }).pipe(
      Effect.tapError((e) => Effect.sync(() => this.log.error(`MQTT: stream sync failed: ${e.detail}`)))
    )
  }

  /** After the round: its removals (or back for the next round when it failed), then everyone who waited. */
  private settleRound(batch: ReadonlyArray<(ok: boolean) => void>, ok: boolean): void {
    const removals = this.roundRemovals
    this.roundRemovals = []
    for (const [a, seqs] of removals) a.settleRemovals(seqs, ok)
    for (const cb of batch) cb(ok)
  }
}

/** MQTT state in the `$MQTT_*` streams of each account that has streams (in memory for the others). */
export const layerStreams = (js: JetStream): Layer.Layer<MqttStore> => Layer.sync(MqttStore, () => new StreamsStore(js, js.log))
