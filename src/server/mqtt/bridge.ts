// The MQTT bridge: one MqttSession per connection, driven synchronously from socket
// chunks; each connection is a Principal of the engine, routed through its account's
// Sublist like any NATS client. QoS 1/2 messages of persistent sessions, session state and
// retained messages are kept by the `MqttStore` port (store.ts): in the account's `$MQTT_*`
// streams with the stream subsystem on, where nothing that depends on a write is said to a
// client before the write is durable; in memory without it. Persistent sessions of
// disconnected clients stay subscribed ("detached") and queue the QoS 1/2 messages
// published while they are away.
import type { Alarm } from "../alarm.js"
import type { MqttOptions } from "../../config/options.js"
import {
  type ClientPacket,
  defaultSessionConfig,
  type FlapRecord,
  MAX_TOPIC_BYTES,
  MqttSession,
  type QoS,
  type RetainedCursor,
  type ServerPacket,
  recordTakeover,
  type SessionAction,
  type SessionConfig,
  type SessionDeps,
  type SessionInput,
  type SessionSnapshot,
  subscriptionSubjects
} from "../../core/mqtt/index.js"
import type { Conn, ConnHandlers } from "../../services/transport.js"
import type { ClientPermissions } from "../../engine/permissions.js"
import { type Delivery, GLOBAL_ACCOUNT, type InternalPrincipal, type Subscription } from "../../engine/principal.js"
import type { Server } from "../server.js"
import { ClosedReason } from "../reasons.js"
import { encodeInto, encodePublishRange } from "../../core/mqtt/codec.js"
import { HeldPayloads } from "./held.js"
import { closedRecord, MqttConnection, type MqttDriver, mqttLogPrefix } from "./connection.js"
import { traceMqttIn, traceMqttOut, traceMqttOutQos0 } from "./trace.js"
import type { MqttAccountStore, MqttStoreService, RetainedMsg } from "./store.js"

/** A fetch of stored messages for a session waits while more than this waits in its socket. */
const FETCH_HIGH_WATER = 1024 * 1024
/** Stored messages read back at a time for a session, at most (and about this many bytes). */
const FETCH_BATCH = 64
const FETCH_BATCH_BYTES = 1024 * 1024

/** Takeovers of one client id within this window beyond the limit count as flapping (logged). */
/**
 * How long a persistent session's stale record (acknowledged QoS 1 messages) may wait
 * before it is rewritten: acks of a burst share one write.
 */
export const LAZY_RECORD_MS = 250
const FLAP_WINDOW_MS = 10_000
const FLAP_MAX_TAKEOVERS = 3

const sessionKey = (account: string, clientId: string): string => `${account}\n${clientId}`

/**
 * An inbound message waiting for a commit before it is forwarded: a QoS 2 message, for
 * its de-duplication record, or any message its publisher sent after one.
 */
interface Deferred {
  readonly c: MqttConnection
  readonly subject: string
  readonly buf: Buffer
  readonly qos: QoS
  readonly ref: number | undefined
  readonly confirm: number | undefined
}

/**
 * Retained messages sent for new subscriptions per event-loop turn, and retained-tree
 * nodes visited: a SUBSCRIBE matching more is answered over several turns, so other
 * clients are served in between.
 */
const RETAINED_PER_TURN = 1000
const RETAINED_STEPS_PER_TURN = 50_000

/** Retained messages still due to a new subscription (a lookup paused at the turn's budget). */
interface RetainedDue {
  readonly c: MqttConnection
  readonly filter: string
  /** The subscription they are for: a later SUBSCRIBE of the same filter or an UNSUBSCRIBE ends them. */
  readonly subs: Array<Subscription>
  readonly cursor: RetainedCursor<RetainedMsg>
}

/**
 * A persistent session whose client is away: its MqttSession in the `away` phase, subscribed
 * (for its QoS 1/2 filters) as its account's "mqtt-sessions" principal.
 */
interface Away {
  readonly account: string
  readonly session: MqttSession
  readonly subs: Array<Subscription>
  /** The last routed message taken (its Delivery seq): overlapping filters take it once. */
  lastSeq: number
}

export class MqttBridge implements MqttDriver {
  readonly connections = new Map<number, MqttConnection>()
  /** The shell's timer that runs tick() (set by the listener). */
  alarm: Alarm | undefined = undefined
  /** Asks the shell to run tick() by then. */
  wakeAt(at: number): void {
    this.alarm?.wakeAt(at)
  }
  /** MQTT connections accepted since start (for /varz total_connections). */
  totalConnections = 0
  // Client ids, retained messages and stored sessions are per account, as subjects are.
  private readonly byClientId = new Map<string, MqttConnection>()
  /** Lookups of retained messages waiting for a later turn, oldest first, and this turn's budget. */
  private retainedDue: Array<RetainedDue> = []
  private retainedBudget = RETAINED_PER_TURN
  private retainedSteps = RETAINED_STEPS_PER_TURN
  private retainedTurnScheduled = false
  /** Persistent (clean-session 0) sessions of disconnected clients. */
  private readonly detached = new Map<string, Away>()
  private readonly offlineClients = new Map<string, InternalPrincipal>()
  /** Connection, packet id pairs (flat) of publishes to confirm once this turn's writes are durable. */
  private confirms: Array<MqttConnection | number> = []
  /** Publishes to forward and acknowledge once this turn's writes are durable (see Deferred). */
  private deferred: Array<Deferred> = []
  /** Limits of new sessions; a configuration reload replaces it (reload.ts). */
  sessionConfig: SessionConfig
  /** Protocol trace (-V) of MQTT packets; a reload may turn it on or off. */
  tracing: boolean
  private readonly flaps = new Map<string, FlapRecord>()
  /** Output held this turn for the commit that follows the flush (see `holdsOutput`). */
  private awaiting: Array<readonly [MqttConnection, Array<Buffer>]> | undefined = undefined
  private readonly flushedFn = () => this.flushed()
  /** Payloads of QoS 1/2 messages in the sessions' windows (see held.ts). */
  private readonly held = new HeldPayloads()
  /** The largest packet accepted: max_payload plus room for a full-length topic and the header fields. */
  maxPacketBytes: number
  /** Memory held by partial packets of every connection (see MqttParser.held), and how many hold one. */
  partialBytes = 0
  partialPackets = 0
  host: string
  port: number

  constructor(
    readonly server: Server,
    readonly options: MqttOptions,
    /** Where sessions, QoS 1/2 messages and retained messages are kept (the `MqttStore` port). */
    readonly store: MqttStoreService
  ) {
    this.maxPacketBytes = server.options.maxPayload + MAX_TOPIC_BYTES + 8
    this.sessionConfig = {
      ...defaultSessionConfig,
      ackWaitMs: options.ackWaitMs,
      maxAckPending: options.maxAckPending,
      maxQueued: options.maxQueuedMessages,
      maxQueuedBytes: options.maxQueuedBytes,
      // A connection that never sends CONNECT is closed, as NATS clients are at auth_timeout.
      connectTimeoutMs: options.authorization?.timeoutMs ?? server.options.authTimeoutMs
    }
    this.host = options.host
    this.port = options.port
    this.tracing = server.log.traceEnabled
  }

  /**
   * What a persistent session whose client is away holds for it: messages, their bytes, and
   * how many of those bytes are in memory (stored messages wait on disk). Undefined when the
   * session is not away.
   */
  awayQueue(clientId: string, account: string = GLOBAL_ACCOUNT): { messages: number; bytes: number; bytesInMemory: number } | undefined {
    return this.detached.get(sessionKey(account, clientId))?.session.awayQueue()
  }

  /** New session limits (a reload): for new sessions and the away ones (connected ones take them from `reloadMqtt`). */
  setSessionConfig(config: SessionConfig): void {
    this.sessionConfig = config
    for (const d of this.detached.values()) d.session.setLimits(config)
  }

  /** The open connection of a client id in an account. */
  connectedClient(clientId: string, account: string = GLOBAL_ACCOUNT): MqttConnection | undefined {
    return this.byClientId.get(sessionKey(account, clientId))
  }

  /** The account's store, once open (every connection's is, from `sessionReady` on). */
  private storeOf(account: string): MqttAccountStore | undefined {
    return this.store.ready(account)
  }

  /** Where a persistent session's state is kept (undefined for a clean session: nothing of it outlives the connection). */
  private persisted(c: MqttConnection): MqttAccountStore | undefined {
    return c.session.cleanSession ? undefined : this.storeOf(c.account.name)
  }

  /** Where a persistent session's record is kept current for a restart (a durable store's). */
  private recorded(c: MqttConnection): MqttAccountStore | undefined {
    const store = this.persisted(c)
    return store !== undefined && store.durable ? store : undefined
  }

  /** Open an account's store and take over the sessions stored in it. */
  openAccount(account: string): Promise<MqttAccountStore> {
    const ready = this.storeOf(account)
    if (ready !== undefined) return Promise.resolve(ready)
    return this.store.open(account).then((store) => {
      for (const [clientId, snap] of store.takeSessions()) {
        const key = sessionKey(account, clientId)
        if (!this.byClientId.has(key) && !this.detached.has(key)) this.detach(key, account, snap)
      }
      return store
    })
  }

  /** After a restart: every account that has MQTT state stored is opened and its sessions detached. */
  openStoredAccounts(): Promise<void> {
    return Promise.all(this.store.storedAccounts().map((n) => this.openAccount(n))).then(() => undefined)
  }

  accept(conn: Conn): ConnHandlers {
    const now = this.server.now()
    const account = this.server.account(GLOBAL_ACCOUNT)
    const c = new MqttConnection(this.server, this.sessionConfig, this.server.allocateCid(), conn, account, now, this.held, this)
    this.connections.set(c.cid, c)
    this.totalConnections++
    if (this.server.log.debugEnabled) this.server.log.debug(`${mqttLogPrefix(c)} - Client connection created`)
    // The CONNECT timeout: the session's first deadline, before it has stepped at all.
    const connectBy = c.session.nextDeadline()
    if (connectBy !== undefined) this.wakeAt(connectBy)
    c.parser.onPacket = (packet: ClientPacket) => {
      if (c.closed) return
      if (this.tracing) traceMqttIn(this.server.log, c, packet)
      if (packet.cmd === "publish") {
        // Every PUBLISH the client sent, routed or not (a QoS 2 resend is a duplicate).
        c.inMsgs++
        // The hot path: a QoS 0 PUBLISH the session routes as it is, without a step.
        if (packet.qos === 0 && !packet.retain) {
          const subject = c.session.publishQos0(packet.topic, c.readAt)
          if (subject !== undefined) return this.publish(c, subject, packet.payload, 0, undefined, c.readAt)
        }
      }
      this.input(c, { type: "packet", packet }, c.readAt)
    }
    c.parser.onError = (e: Error) => {
      if (!c.closed) this.input(c, { type: "protocolError", reason: e.message }, c.readAt)
    }
    return {
      onData: (chunk) => {
        if (c.closed) return
        this.server.env.activity?.(chunk.length)
        const now = this.server.now()
        c.lastActivity = now
        c.inBytes += chunk.length
        // One clock reading serves every packet of the chunk (and what they route).
        c.readAt = now
        const buffered = c.parser.parse(chunk)
        this.accountPartial(c)
        // A packet announced (or buffered) past the limit is cut off before its bytes pile up.
        const announced = c.parser.announced
        if (!c.closed && (announced > this.maxPacketBytes || buffered > this.maxPacketBytes)) {
          this.input(c, { type: "protocolError", reason: `packet of ${Math.max(announced, buffered)} bytes over the limit of ${this.maxPacketBytes}` }, now)
        }
      },
      onDrain: () => {
        if (!c.waitingDrain) return
        c.waitingDrain = false
        this.pump(c)
      },
      onClose: () => {
        if (!c.closed) {
          // The socket is gone: the session still runs its loss (will) but nothing is written.
          c.closed = true
          this.input(c, { type: "connectionLost" })
        }
        this.finish(c)
      }
    }
  }

  /** Keep the totals of memory held by partial packets exact (a closed connection holds none). */
  private accountPartial(c: MqttConnection): void {
    const held = c.closed ? 0 : c.parser.held
    if (held === c.partialHeld) return
    this.partialBytes += held - c.partialHeld
    this.partialPackets += (held > 0 ? 1 : 0) - (c.partialHeld > 0 ? 1 : 0)
    c.partialHeld = held
  }

  /** Feed one input to a connection's session at `now` and carry out what it asks for (at the same time). */
  input(c: MqttConnection, input: SessionInput, now: number = this.server.now()): void {
    const actions = c.session.step(input, now)
    for (let i = 0; i < actions.length; i++) this.run(c, actions[i], now)
  }

  private run(c: MqttConnection, a: SessionAction, now: number): void {
    switch (a.type) {
      case "send":
        return this.send(c, a.packet)
      case "close":
        return this.close(c)
      case "publish":
        return this.publish(c, a.subject, a.payload, a.qos, a.confirm, now)
      // The account's store is open from `sessionReady` on; before it, only a will can be
      // retained, which no session of the account could read yet: it is not kept.
      case "storeRetained":
        this.storeOf(c.account.name)?.setRetained(a.topic, a.subject, a.payload, a.qos)
        return
      case "deleteRetained":
        this.storeOf(c.account.name)?.deleteRetained(a.topic, a.subject)
        return
      case "accept":
        return this.onAccept(c, a.clientId, a.cleanSession)
      case "subscribe":
        return this.subscribe(c, a.filter, a.subjects, a.qos)
      case "wantRetained": {
        const subs = c.filters.get(a.filter)
        const store = this.storeOf(c.account.name)
        if (subs === undefined || store === undefined) return
        const due: RetainedDue = { c, filter: a.filter, subs, cursor: store.retained.match(a.filter) }
        // Behind lookups already waiting, so that retained messages keep the order of the SUBSCRIBEs.
        if (this.retainedDue.length > 0 || !this.sendRetained(due)) this.retainedDue.push(due)
        return
      }
      case "unsubscribe":
        return this.unsubscribe(c, a.filter)
      case "persist":
        return this.persist(c, a.stream, a.key, a.record)
      case "persistSubscription": {
        // Written now; the SUBACK (or UNSUBACK) waits for the commit.
        const store = this.persisted(c)
        if (store === undefined) return
        store.writeSubscription(c.session.clientId, a.filter, a.qos)
        return this.hold(c, store)
      }
      case "fetch":
        for (const ref of a.refs) c.toFetch.push(ref)
        return this.pump(c)
      case "ack":
      case "drop": {
        if (a.type === "drop" && a.reason === "queue_full") this.queueDropped(c.session.clientId, c.account.name)
        const store = this.persisted(c)
        if (store !== undefined && typeof a.ref === "number") {
          store.unref(a.ref)
          this.markLazy(c)
        }
        return
      }
      case "denied":
        return this.logDenied(c, a.op, a.topic)
      case "discardStored": {
        const store = this.storeOf(c.account.name)
        store?.deleteSession(a.stored, a.stored.clientId)
        this.server.log.warn(
          `${mqttLogPrefix(c)} - session of user "${a.stored.owner ?? ""}" not resumed by user "${c.user}": discarded, a new session starts`
        )
        return
      }
      // The shell's alarm runs tick() by then (tick reads every session's nextDeadline()).
      case "deadline":
        return this.wakeAt(a.at)
    }
  }

  /** Permission refusals are logged as the NATS ones are (nats-server's wording). */
  private logDenied(c: MqttConnection, op: "publish" | "subscribe" | "will", topic: string): void {
    const what = op === "subscribe" ? "Subscription Violation" : op === "will" ? "Will Publish Violation" : "Publish Violation"
    this.server.log.error(`${mqttLogPrefix(c)} - ${what} - User "${c.user}", Topic "${topic}"`)
  }

  /** QoS 2 state of a persistent session: written now, output held until durable. */
  private persist(c: MqttConnection, stream: string, key: string, record: unknown): void {
    const store = this.persisted(c)
    if (store === undefined) return
    // The session record is rewritten in the same commit: a stale one would still list a
    // QoS 2 message whose PUBCOMP removed its $MQTT_out record, and a restart would resend
    // it as new (found by the simulator, seed 16).
    c.recordDirty = "now"
    if (stream !== "$MQTT_sess") {
      const packetId = Number(key.slice(key.lastIndexOf("/") + 1))
      store.qos2State(stream as "$MQTT_qos2in" | "$MQTT_out", c.session.clientId, packetId, record !== undefined)
    }
    this.hold(c, store)
  }

  /** This turn's output of `c` depends on what was written to `store` this turn: it waits for the commit (when there is one to wait for). */
  private hold(c: MqttConnection, store: MqttAccountStore): void {
    if (store.durable) c.held = true
    this.markDirty(c)
  }

  /** `c` has output this turn: the Outbound writes (or holds) it, then the bridge commits what waits for that. */
  private markDirty(c: MqttConnection): void {
    if (c.dirty) return
    this.server.outbound.markDirty(c)
    this.scheduleFlush()
  }

  /** The end of this turn's flush has work: confirms, deferred publishes, held output. */
  private scheduleFlush(): void {
    this.server.outbound.afterFlush(this.flushedFn)
  }

  private send(c: MqttConnection, packet: ServerPacket): void {
    if (c.closed) return
    if (this.tracing) traceMqttOut(this.server.log, c, packet)
    if (packet.cmd === "publish") {
      c.outMsgs++
      // A QoS 2 packet id handed out must be on disk first: after a restart the message
      // goes out again under the same id, which the client uses to drop the duplicate.
      if (packet.qos === 2 && !packet.dup && this.recorded(c) !== undefined) {
        c.recordDirty = "now"
        c.held = true
      } else if (packet.qos === 1) this.markLazy(c)
    }
    c.outBytes += encodeInto(c.out, packet, this.held)
    this.markDirty(c)
  }

  // ---- the Outbound's flush: one write per connection per turn; output that depends on this turn's writes waits for their commit ----

  /** The flush reached `c`: its session record first when stale, then whether its output must wait for the commit. */
  holdsOutput(c: MqttConnection): boolean {
    if (c.recordDirty === "now") this.writeRecord(c)
    if (c.held || c.awaiting > 0) {
      c.held = false
      return true
    }
    c.held = false
    if (c.out.length > 0) c.lastActivity = this.server.now()
    return false
  }

  awaitCommit(c: MqttConnection, bufs: Array<Buffer>): void {
    ;(this.awaiting ??= []).push([c, bufs])
    c.awaiting++
  }

  /** After the flush: one commit for every write of this turn, then the output and acknowledgements that waited for it. */
  private flushed(): void {
    const batch = this.awaiting
    this.awaiting = undefined
    if (batch === undefined && this.confirms.length === 0 && this.deferred.length === 0 && !this.store.hasRemovals()) return
    const confirms = this.confirms
    this.confirms = []
    const deferred = this.deferred
    this.deferred = []
    this.store.commit((ok) => {
      if (batch !== undefined)
        for (const [c, bufs] of batch) {
          c.awaiting--
          if (c.closed) continue
          if (!ok) this.storeFailed(c)
          else {
            c.lastActivity = this.server.now()
            this.server.outbound.writeBufs(c, bufs)
          }
        }
      for (let i = 0; i < confirms.length; i += 2) {
        const c = confirms[i] as MqttConnection
        if (c.closed) continue
        if (ok) this.input(c, { type: "published", packetId: confirms[i + 1] as number })
        else this.storeFailed(c)
      }
      if (deferred.length > 0) this.routeDeferred(deferred, ok)
    })
  }

  /** Its output reached the socket: a fetch that waited for that goes on if the socket took it. */
  written(c: MqttConnection, queued: number): void {
    if (c.waitingDrain && queued <= FETCH_HIGH_WATER) {
      c.waitingDrain = false
      this.pump(c)
    }
  }

  /** A subscriber that does not read is cut off at max_pending, as NATS clients are; its will goes out. */
  cutOff(c: MqttConnection): void {
    this.input(c, { type: "connectionLost" })
  }

  private writeRecord(c: MqttConnection): void {
    c.recordDirty = undefined
    const store = this.recorded(c)
    if (store !== undefined && !c.session.isClosed) store.writeSession(c.session.snapshot())
  }

  /** The streams could not make a write durable: the client is cut off and retries (nothing was confirmed). */
  private storeFailed(c: MqttConnection): void {
    if (c.closed) return
    c.reasonOverride = "Store Failure"
    // What queued behind the failed write may acknowledge state that is not on disk
    // (PUBRECs of later QoS 2 publishes): the client hears nothing more and resends.
    c.out.clear()
    this.input(c, { type: "connectionLost" })
  }

  /** The last words of a closing connection: to the socket now, without waiting for the flush. */
  private writeLast(c: MqttConnection): void {
    if (c.out.length > 0) c.lastActivity = this.server.now()
    this.server.outbound.flushNow(c)
  }

  private onAccept(c: MqttConnection, clientId: string, clean: boolean): void {
    const now = this.server.now()
    const key = sessionKey(c.account.name, clientId)
    const older = this.byClientId.get(key)
    if (older !== undefined && older !== c) {
      const flap = recordTakeover(this.flaps.get(key), now, FLAP_WINDOW_MS, FLAP_MAX_TAKEOVERS)
      this.flaps.set(key, flap.record)
      if (flap.flapping) {
        // Two clients fighting over one id would take it from each other forever: past the
        // limit the newcomer is turned away (CONNACK 3, "try later") and the connected one stays.
        this.server.log.warn(`MQTT client id "${clientId}" is flapping between connections: refusing the new one`)
        return this.input(c, { type: "refused", code: 3 })
      }
      // The older connection is closed (its will goes out) [MQTT-3.1.4-2].
      this.server.log.warn(`${mqttLogPrefix(c, clientId)} - Replacing the connection of the same client id (mid:${older.cid})`)
      this.input(older, { type: "takenOver" })
    }
    this.byClientId.set(key, c)
    const account = c.account.name
    const ready = this.storeOf(account)
    if (ready !== undefined) return this.sessionReady(c, key, clean, ready)
    // First client of the account since start: its store is opened (streams created) first.
    this.openAccount(account).then((store) => {
      if (!c.closed && this.byClientId.get(key) === c) this.sessionReady(c, key, clean, store)
    })
  }

  private sessionReady(c: MqttConnection, key: string, clean: boolean, store: MqttAccountStore): void {
    const d = this.detached.get(key)
    let stored: SessionSnapshot | undefined
    if (d !== undefined) {
      this.detached.delete(key)
      for (const s of d.subs) this.removeSub(s)
      stored = d.session.snapshot()
    }
    const owner = c.user
    if (clean) {
      // A clean session discards what was stored under the id [MQTT-3.1.2-6].
      if (stored !== undefined) store.deleteSession(stored, c.session.clientId)
      this.input(c, { type: "sessionReady", stored: undefined, owner })
      return
    }
    this.input(c, { type: "sessionReady", stored, owner })
    // The resumed session resends what is unacknowledged at once [MQTT-4.4.0-1]: that burst
    // (bounded by the in-flight window) may exceed max_pending without the client being slow;
    // cut for it, a client with a backlog would reconnect into the same cut forever.
    if (stored !== undefined) c.pendingAllowance += c.out.length
    if (!c.closed) {
      c.recordDirty = "now"
      this.hold(c, store)
    }
  }

  private publish(c: MqttConnection, subject: string, payload: Uint8Array, qos: QoS, confirm: number | undefined, now: number): void {
    const buf = Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)
    const store = qos > 0 ? this.storeOf(c.account.name) : undefined
    const later = c.deferred > 0 || (qos === 2 && confirm !== undefined && store?.durable === true)
    // A persistent session's QoS 2 PUBLISH: its de-duplication record goes to disk with it.
    const dedup = qos === 2 && confirm !== undefined ? this.persisted(c) : undefined
    let ref: number | undefined
    if (store !== undefined && store.durable && this.heldDurably(c, subject)) {
      // Kept until every persistent session it is routed to has it acknowledged.
      const inbound = dedup === undefined ? undefined : { clientId: c.session.clientId, packetId: confirm! }
      const r = store.storeMessage(subject, payload, qos, later, inbound)
      if (typeof r === "object") {
        this.server.log.error(`MQTT client "${c.session.clientId}": message on '${subject}' could not be stored: ${r.detail}`)
        if (confirm !== undefined) return this.storeFailed(c)
      } else ref = r
    }
    if (dedup !== undefined) {
      // After its stored copy, which it names (see MqttAccountStore.qos2State); the session
      // record is rewritten in the same commit, as for every QoS 2 state change.
      dedup.qos2State("$MQTT_qos2in", c.session.clientId, confirm!, true, ref)
      c.recordDirty = "now"
      this.hold(c, dedup)
    }
    if (later) {
      // A QoS 2 message is forwarded only once the commit that makes its de-duplication
      // record (and its stored copy) durable is done, and after its PUBREC: a crash before
      // then leaves the publisher to resend, and the resend is known as one. What the same
      // client publishes after it waits behind it, so its messages keep their order.
      c.deferred++
      this.deferred.push({ c, subject, buf, qos, ref, confirm })
      this.scheduleFlush()
      return
    }
    if (qos === 2 && confirm !== undefined) {
      // Without streams the PUBREC has nothing to wait for: it goes first, then the copies.
      if (!c.closed) this.input(c, { type: "published", packetId: confirm }, now)
      return this.route(c, subject, buf, qos, ref, now)
    }
    this.route(c, subject, buf, qos, ref, now)
    if (confirm === undefined || c.closed) return
    // A routed message counts as accepted once what it depends on is durable: with a durable
    // store, the commit that follows this turn's flush (one for all of them) when anything
    // was written this turn; at once when nothing was (no persistent session wanted it, no
    // retained copy), or when the store is not durable. The session keeps the
    // acknowledgements in the order of the PUBLISHes.
    if (store === undefined || !store.durable || (ref === undefined && !this.store.hasWrites())) {
      return this.input(c, { type: "published", packetId: confirm }, now)
    }
    this.confirms.push(c, confirm)
    this.scheduleFlush()
  }

  /** Route a message from `c` through the engine, with its QoS and stored copy (`ref`) for the MQTT subscribers. */
  private route(c: MqttConnection, subject: string, buf: Buffer, qos: QoS, ref: number | undefined, now: number): void {
    const router = this.server.router
    const d = router.message(c, now)
    d.subject = subject
    d.reply = ""
    d.hdrLen = -1
    d.buf = buf
    d.start = 0
    d.end = buf.length
    d.origin.qos = qos
    d.origin.ref = ref
    router.route(d)
    if (ref === undefined) return
    const store = this.storeOf(c.account.name)
    store?.routed(ref)
    store?.releaseIfUnheld(ref)
  }

  /**
   * Messages held back until this commit, in the order they came: a QoS 2 one is
   * acknowledged (PUBREC) and then forwarded; the others are forwarded and then
   * acknowledged (their stored copies are in this commit). They are forwarded even when
   * the commit failed or the publisher has gone: a QoS 2 message's de-duplication record
   * in memory (and perhaps on disk) says "received", so the publisher's resend would not
   * bring it again. A failed commit still cuts the publisher off, unacknowledged.
   */
  private routeDeferred(list: ReadonlyArray<Deferred>, ok: boolean): void {
    const now = this.server.now()
    for (const d of list) {
      const c = d.c
      c.deferred--
      const ackFirst = d.qos === 2
      if (ackFirst) this.confirmDeferred(c, d.confirm, ok)
      this.route(c, d.subject, d.buf, d.qos, d.ref, now)
      if (!ackFirst) this.confirmDeferred(c, d.confirm, ok)
    }
  }

  private confirmDeferred(c: MqttConnection, confirm: number | undefined, ok: boolean): void {
    if (confirm === undefined || c.closed) return
    if (ok) this.input(c, { type: "published", packetId: confirm })
    else this.storeFailed(c)
  }

  /**
   * Whether a persistent session (connected, or away and still subscribed) would take a
   * QoS 1/2 message on `subject`: then it is stored before routing, so that it survives
   * a restart until acknowledged. Nothing else needs it on disk: a clean session's
   * messages end with its connection, restart or not.
   */
  private heldDurably(c: MqttConnection, subject: string): boolean {
    const psubs = c.account.sublist.match(subject).psubs
    for (let i = 0; i < psubs.length; i++) if (psubs[i].holdsMessages && !psubs[i].closed) return true
    return false
  }

  private subscribe(c: MqttConnection, filter: string, subjects: ReadonlyArray<string>, qos: QoS): void {
    this.unsubscribe(c, filter)
    const list: Array<Subscription> = []
    const holds = qos > 0 && !c.session.cleanSession
    for (const subject of subjects) {
      const sub = this.server.router.subscribe(c, subject, undefined)
      sub.holdsMessages = holds
      list.push(sub)
    }
    c.filters.set(filter, list)
  }

  /** A message routed to one of `c`'s subscriptions (the router checked permissions and that it is open). */
  deliver(c: MqttConnection, d: Delivery): void {
    // Several subscriptions of one session can match one message: deliver it once.
    if (c.lastSeq === d.seq) return
    c.lastSeq = d.seq
    const { subject, buf, end } = d
    const from = d.payloadStart
    const qos = d.origin.qos
    // The hot path: a message that goes out at QoS 0 is written without a session step.
    const topic = c.session.deliverQos0(subject, qos)
    if (topic === null) return
    if (topic !== undefined) {
      if (c.closed) return
      if (this.tracing) traceMqttOutQos0(this.server.log, c, topic, end - from)
      c.outMsgs++
      c.outBytes += encodePublishRange(c.out, topic, buf, from, end, 0, false, false, undefined)
      this.markDirty(c)
      return
    }
    const ref = d.origin.ref
    const store = ref === undefined ? undefined : this.persisted(c)
    const taken = c.session.storedTaken
    // Held until acknowledged: a copy in a reusable slab, not a view pinning the read chunk.
    this.input(c, { type: "deliver", subject, payload: this.held.hold(buf, from, end), qos, ref }, d.now)
    // A persistent session that took the stored message holds it until acknowledged or
    // dropped (taking it may have pushed the oldest waiting one out: the count of pending
    // messages would not tell).
    if (store !== undefined && c.session.storedTaken !== taken) store.ref(ref!)
  }

  /** Retained messages for a new subscription, within this turn's budget; true when all went out. */
  private sendRetained(due: RetainedDue): boolean {
    const { c, filter } = due
    if (c.closed || c.filters.get(filter) !== due.subs) return true
    // The budget is per turn: renewed at the next one, which also sends what is left.
    this.nextRetainedTurn()
    if (this.retainedBudget <= 0 || this.retainedSteps <= 0) return false
    const messages: Array<RetainedMsg> = []
    const before = due.cursor.steps
    const done = due.cursor.take(messages, this.retainedBudget, this.retainedSteps)
    this.retainedBudget -= messages.length
    this.retainedSteps -= due.cursor.steps - before
    if (messages.length > 0) this.input(c, { type: "retained", filter, messages })
    return done
  }

  private nextRetainedTurn(): void {
    if (this.retainedTurnScheduled) return
    this.retainedTurnScheduled = true
    this.server.env.scheduleFlush(() => {
      this.retainedTurnScheduled = false
      this.retainedBudget = RETAINED_PER_TURN
      this.retainedSteps = RETAINED_STEPS_PER_TURN
      while (this.retainedDue.length > 0 && this.sendRetained(this.retainedDue[0])) this.retainedDue.shift()
    })
  }

  private unsubscribe(c: MqttConnection, filter: string): void {
    const list = c.filters.get(filter)
    if (list === undefined) return
    c.filters.delete(filter)
    for (const s of list) this.removeSub(s)
  }

  private removeSub(s: Subscription): void {
    s.principal.removeSub(s)
  }

  /** The session ended: flush what it said last (CONNACK refusal, …), then end the socket. */
  private close(c: MqttConnection): void {
    if (c.closed) return
    c.closed = true
    // Output waiting for a commit (or held for this turn's) is not said: the connection ends first.
    if (c.awaiting === 0 && !c.held) this.writeLast(c)
    c.conn.end()
    this.finish(c)
  }

  /** Forget a connection once: routing entries, the client id, and a /connz closed record. */
  private finish(c: MqttConnection): void {
    if (!this.connections.delete(c.cid)) return
    c.closed = true
    this.accountPartial(c)
    const record = closedRecord(c, this.server.now())
    if (this.server.log.debugEnabled) this.server.log.debug(`${mqttLogPrefix(c)} - Client connection closed: ${record.reason}`)
    this.server.closed.push(record)
    for (const list of c.filters.values()) for (const s of list) this.removeSub(s)
    c.filters.clear()
    // What it had not said yet (output held for a commit) is never said: the flush skips it.
    c.out.clear()
    const id = c.session.clientId
    const account = c.account.name
    const key = sessionKey(account, id)
    if (id !== "" && this.byClientId.get(key) === c) {
      this.byClientId.delete(key)
      if (!c.session.cleanSession && c.session.isReady) {
        const snap = c.session.snapshot()
        const store = this.storeOf(account)
        if (store?.durable === true) {
          store.writeSession(snap)
          this.store.commit(() => {})
        }
        this.detach(key, account, snap, c.perms)
      }
    }
  }

  /** Keep a persistent session subscribed while its client is away (`perms`: its owner's, when known). */
  private detach(key: string, account: string, snapshot: SessionSnapshot, perms: ClientPermissions | undefined = undefined): void {
    const session = MqttSession.away(snapshot, this.server.now(), this.awayDeps(perms), this.sessionConfig)
    const d: Away = { account, session, subs: [], lastSeq: 0 }
    let client = this.offlineClients.get(account)
    if (client === undefined) {
      client = this.server.router.internal(account, "mqtt-sessions")
      this.offlineClients.set(account, client)
    }
    for (const s of snapshot.subscriptions) {
      const subjects = subscriptionSubjects(s.filter)
      // QoS 0 messages are not kept for an absent client.
      if (!subjects.ok || s.qos === 0) continue
      for (const subject of subjects.value) {
        const sub = this.server.router.subscribe(client, subject, undefined, (m: Delivery) => this.deliverAway(d, m))
        sub.holdsMessages = true
        d.subs.push(sub)
      }
    }
    this.detached.set(key, d)
  }

  /**
   * What an away session depends on: nothing its owner may not receive is queued for it
   * (sessions loaded after a restart are filtered when they resume), and the payloads it
   * lets go return to their slabs.
   */
  private awayDeps(perms: ClientPermissions | undefined): SessionDeps {
    return {
      random: this.server.env.random,
      released: (payload) => this.held.release(payload),
      canReceive: perms === undefined ? undefined : (subject) => perms.canSubscribe(subject)
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
    const actions = s.step({ type: "deliver", subject, payload, qos: m.origin.qos, ref }, m.now)
    const store = this.storeOf(d.account)
    for (const a of actions) {
      // At the session's bounds the oldest message waiting gave way to the newest.
      if (a.type !== "drop") continue
      if (typeof a.ref === "number") store?.unref(a.ref)
      if (a.reason === "queue_full") this.queueDropped(s.clientId, d.account)
    }
    if (ref !== undefined && s.storedTaken !== taken) store?.ref(ref)
  }

  /** Messages dropped at a session's queue bounds (/varz mqtt.queue_dropped); logged at most every 10 s per session. */
  queueDrops = 0
  private readonly dropLog = new Map<string, { at: number; count: number }>()

  private queueDropped(clientId: string, account: string): void {
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

  /**
   * Read stored messages back for a session (its \`fetch\`), at the pace its socket drains:
   * a batch at a time (about 1 MiB), the next one only when fewer than \`FETCH_HIGH_WATER\`
   * bytes wait in the socket. A resumed backlog of any size costs a batch of memory, and the
   * client is never cut off as a slow consumer by its own resend.
   */
  private pump(c: MqttConnection): void {
    if (c.fetchBusy || c.closed || c.toFetch.length === 0) return
    // What the last batch made is still to be written (this turn's output, or output waiting
    // for a commit), or is in the socket above the mark: the next batch waits. A write of the
    // output (writeBufs) or the socket's drain takes it up again.
    if (c.out.length > 0 || c.awaiting > 0 || c.held || c.conn.writableLength() > FETCH_HIGH_WATER) {
      c.waitingDrain = true
      return
    }
    const store = this.storeOf(c.account.name)
    const batch: number[] = []
    let bytes = 0
    while (c.toFetch.length > 0 && batch.length < FETCH_BATCH && bytes < FETCH_BATCH_BYTES) {
      const seq = c.toFetch.shift()!
      batch.push(seq)
      bytes += store?.sizeOf(seq) ?? 0
    }
    if (store === undefined) {
      return this.input(c, { type: "fetched", messages: batch.map((ref) => ({ ref, payload: undefined })) })
    }
    c.fetchBusy = true
    store.loadMessages(batch).then((loaded) => {
      c.fetchBusy = false
      if (c.closed) return
      // The buffers read are the payloads (their own memory, freed once acknowledged).
      const messages = batch.map((ref, i) => {
        const m = loaded[i]
        return m === undefined ? { ref, payload: undefined } : { ref, payload: m.payload, qos: m.qos }
      })
      this.input(c, { type: "fetched", messages })
      this.pump(c)
    })
  }

  /** A persistent session's record is stale in a way that may wait: it is rewritten by the next tick, soon. */
  private markLazy(c: MqttConnection): void {
    if (c.recordDirty !== undefined || this.recorded(c) === undefined) return
    c.recordDirty = "lazy"
    this.wakeAt(this.server.now() + LAZY_RECORD_MS)
  }

  /**
   * Wake sessions whose deadline (keepalive, redelivery) has come; rewrite stale session
   * records. Returns when a session next needs it (undefined: none does).
   */
  tick(now: number): number | undefined {
    let wrote = false
    let next = Infinity
    for (const c of [...this.connections.values()]) {
      const at = c.session.nextDeadline()
      if (at !== undefined && at <= now && !c.closed) this.input(c, { type: "tick" })
      if (c.recordDirty === "lazy" && !c.closed) {
        this.writeRecord(c)
        wrote = true
      }
      const after = c.closed ? undefined : c.session.nextDeadline()
      if (after !== undefined) next = Math.min(next, after)
    }
    if (wrote) this.store.commit(() => {})
    return next === Infinity ? undefined : next
  }

  /** Close one connection as the server stops (lame duck mode, shutdown): no will, its session kept. */
  closeForShutdown(c: MqttConnection): void {
    if (c.closed) return
    c.closed = true
    c.reasonOverride ??= ClosedReason.ServerShutdown
    if (c.awaiting === 0) this.writeLast(c)
    c.conn.end()
    this.finish(c)
  }

  /** Server shutdown: close every connection without publishing wills; stored state is synced. */
  shutdown(): Promise<void> {
    for (const c of [...this.connections.values()]) this.closeForShutdown(c)
    return new Promise((resolve) => this.store.commit(() => resolve()))
  }
}
