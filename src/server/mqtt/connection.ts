// One MQTT connection: a Principal of the engine (its account, user, permissions and
// subscriptions), its session and parser, and what /connz shows of it while open and
// after it closed. A message routed to it goes to the bridge, which drives the session.
import { isOwnSubject } from "../../core/cluster/own-subjects.js"
import {
  type AuthResult,
  CloseReason,
  ConnackCode,
  type ConnectPacket,
  MqttSession,
  type SessionConfig,
  type SessionDeps,
  filterSubscription
} from "../../core/mqtt/index.js"
import type { ClosedConnSnapshot, ConnSnapshot } from "../../core/monitor/source.js"
import { DEFAULT_MQTT_PROTOCOL_VERSIONS, type MqttProtocolLevel } from "../../config/options.js"
import type { Conn } from "../../services/transport.js"
import { ClientPermissions } from "../../engine/permissions.js"
import { type OutboundPolicy, Peer, type SlowConsumer } from "../../engine/outbound.js"
import { type Account, type Delivery, type Principal, type Subscription } from "../../engine/principal.js"
import type { Server } from "../server.js"
import { type MqttCredentials, mqttAuthenticator } from "./auth.js"
import { MqttParser } from "../../core/mqtt/codec.js"
import type { HeldPayloads } from "./held.js"
import { OutBuf } from "../../core/outbuf.js"
import type { PublishHead } from "../../core/mqtt/v5/encode.js"
import type { OutboundTopicAliases } from "../../core/mqtt/v5/alias.js"

type MutablePublishHead = { -readonly [K in keyof PublishHead]: PublishHead[K] }

/**
 * Credentials and permissions of the NATS side: the user name and password of CONNECT
 * go through the MQTT authenticator (the server's users, or the `mqtt {}` block's own
 * override; a password is also tried as a token); the connection takes the account,
 * user and permissions it grants.
 */
const sessionDeps = (server: Server, c: MqttConnection, held: HeldPayloads): SessionDeps => {
  return {
    randomBytes: server.env.randomBytes,
    released: (payload) => held.release(payload),
    authenticate: (connect: ConnectPacket): AuthResult => {
      const password = connect.password === undefined ? undefined : Buffer.from(connect.password).toString("utf8")
      const credentials = { username: connect.username, password }
      const verdict = mqttAuthenticator(server).check(credentials)
      if (!verdict.ok) {
        const user = connect.username === undefined ? "Client" : `User ${JSON.stringify(connect.username)}`
        server.log.warn(`${mqttLogPrefix(c, connect.clientId)} - ${user} authentication failed (CONNACK ${verdict.code})`)
        return verdict.code === 4 ? ConnackCode.BadUsernameOrPassword : ConnackCode.NotAuthorized
      }
      c.credentials = credentials
      const res = verdict.result
      if (res === undefined) return ConnackCode.Accepted
      c.account = server.account(res.account)
      c.user = res.user
      c.perms = res.permissions === undefined ? undefined : new ClientPermissions(res.permissions)
      return ConnackCode.Accepted
    },
    // Never on the servers' own subjects (core/cluster/own-subjects.ts), whatever the permissions.
    canPublish: (_topic, subject) => !isOwnSubject(subject) && (c.perms === undefined || c.perms.canPublish(subject, server)),
    canReceive: (subject) => c.perms === undefined || c.perms.mayReceive(subject),
    canSubscribe: (filter, shared) => mayHold(c, filter, shared)
  }
}

/**
 * Whether the principal's permissions allow the subscription `filter` (each subject it is
 * made of; `shared`: a `$share/G/…` filter is its inner filter in queue group `G`, checked
 * as a NATS queue subscription is: `subscribe` entries may name a queue, `"jobs.> workers"`).
 */
export const mayHold = (p: Principal, filter: string, shared = true): boolean => {
  const perms = p.perms
  // Without permissions nothing is asked, and the filter (translated by the session already) is not translated again.
  if (perms === undefined) return true
  const subjects = filterSubscription(filter, shared)
  return subjects.ok && subjects.subjects.every((s) => perms.canSubscribe(s, subjects.queue ?? ""))
}

/**
 * What drives an MQTT connection (the bridge): the messages routed to it, and its turns
 * of the Outbound's flush.
 */
export interface MqttDriver {
  /** A message on one of its subscriptions: into its session. */
  deliver(c: MqttConnection, d: Delivery): void
  /** Whether this turn's output waits for the commit of this turn's writes. */
  holdsOutput(c: MqttConnection): boolean
  /** This turn's output, waiting for that commit. */
  awaitCommit(c: MqttConnection, bufs: Array<Buffer>): void
  /** Its output reached the socket, which holds `queued` bytes. */
  written(c: MqttConnection, queued: number): void
  /** Cut off as a slow consumer: the session runs its loss (the will goes out). */
  cutOff(c: MqttConnection): void
}

/**
 * MQTT connections are held to max_pending after each write, over the burst a resumed
 * session resends at once (`pendingAllowance`); they have no write deadline.
 */
export const MQTT_POLICY: OutboundPolicy = { pendingCheck: "written", writeDeadline: false }

/** How MQTT log lines name a connection, as nats-server does: `ip:port - mid:N - "client id"`. */
export const mqttLogPrefix = (c: MqttConnection, clientId: string = c.session?.clientId ?? ""): string =>
  `${c.conn.remoteAddress}:${c.conn.remotePort} - mid:${c.cid}${clientId === "" ? "" : ` - ${JSON.stringify(clientId)}`}`

export class MqttConnection extends Peer {
  readonly policy = MQTT_POLICY
  readonly session: MqttSession
  readonly parser: MqttParser
  /** Its subscriptions per MQTT filter (a filter may take several subjects). */
  readonly filters = new Map<string, Array<Subscription>>()
  /** Output of this event-loop turn, written once per flush. */
  readonly out: OutBuf
  /** The CONNECT credentials it was admitted with, kept (never logged) so a configuration reload can check them again. */
  credentials: MqttCredentials | undefined
  lastActivity: number
  /** When it took its client id (told to the other servers: of two connections with one id, the older gives way). */
  claimedAt = 0
  /** When the chunk being parsed (or the last one) was read: the time its packets are handled at. */
  readAt: number
  /** Why the server closed it, when the session did not decide (slow consumer). */
  reasonOverride: string | undefined
  /** Bytes of a partial packet counted in the bridge's total (MqttParser.held when last looked at). */
  partialHeld = 0
  inMsgs = 0
  outMsgs = 0
  inBytes = 0
  outBytes = 0
  /** The last routed message taken (its Delivery seq), so overlapping subscriptions deliver it once. */
  lastSeq = 0
  /** MQTT 5.0: the Topic Aliases it was told (made at its first PUBLISH when the client takes aliases). */
  aliases5: OutboundTopicAliases | undefined
  /** MQTT 5.0: the head of its QoS 0 deliveries, one record reused (the fast path allocates nothing per message). */
  readonly head5: MutablePublishHead = {
    topic: "",
    qos: 0,
    retain: false,
    dup: false,
    messageId: undefined,
    topicAlias: 0,
    messageExpiryInterval: -1,
    subscriptionIdentifiers: undefined,
    messageProperties: undefined
  }
  /** This turn's output depends on state written this turn: it waits for the commit. */
  held = false
  /** Output batches waiting for a commit: later output queues behind them. */
  awaiting = 0
  /** Its publishes waiting for a commit before they are forwarded: later ones queue behind them. */
  deferred = 0
  /** Stored messages its session asked for (`fetch`), not yet being read. */
  readonly toFetch: number[] = []
  /** A batch of them is being read. */
  fetchBusy = false
  /** The next batch waits for the socket to drain. */
  waitingDrain = false
  /** The session record must be rewritten: before this turn's output ("now") or soon ("lazy"). */
  recordDirty: "now" | "lazy" | undefined
  /**
   * Its persistent session is new (nothing was stored under the client id) and the CONNACK
   * saying so has not been written yet: a connection that ends before then (other than by
   * DISCONNECT) leaves no session behind (see MqttBridge.finish).
   */
  unannounced = false

  constructor(
    server: Server,
    config: SessionConfig,
    readonly cid: number,
    readonly conn: Conn,
    account: Account,
    readonly start: number,
    /** Where the session's in-flight QoS 1/2 payloads live (released on acknowledgement). */
    held: HeldPayloads,
    private readonly driver: MqttDriver,
    /** The protocol levels its listener accepts (`protocol_versions`). */
    levels: ReadonlyArray<MqttProtocolLevel> = DEFAULT_MQTT_PROTOCOL_VERSIONS
  ) {
    super(account)
    this.lastActivity = start
    this.readAt = start
    this.parser = new MqttParser({
      maxTopicLevels: server.options.mqtt?.maxTopicLevels,
      v5: levels.includes(5),
      maximumPacketSize: config.v5?.maximumPacketSize
    })
    this.out = new OutBuf(4096, server.slabs)
    this.session = new MqttSession(start, sessionDeps(server, this, held), config)
    this.session.refuseLevel4 = !levels.includes(4)
  }

  deliver(s: Subscription, d: Delivery): boolean {
    s.delivered++
    this.driver.deliver(this, d)
    return true
  }

  logName(): string {
    return `MQTT client "${this.session.clientId}"`
  }

  cutOff(reason: SlowConsumer): void {
    this.reasonOverride = reason
    this.driver.cutOff(this)
  }

  override holdsOutput(): boolean {
    return this.driver.holdsOutput(this)
  }

  override hold(bufs: Array<Buffer>): void {
    this.driver.awaitCommit(this, bufs)
  }

  override written(queued: number): void {
    this.driver.written(this, queued)
  }
}

/** What /connz shows of an MQTT connection while it is open. */
export const mqttConnSnapshot = (c: MqttConnection): ConnSnapshot => ({
  cid: c.cid,
  kind: "Client",
  type: "mqtt",
  ip: c.conn.remoteAddress,
  port: c.conn.remotePort,
  start: c.start,
  lastActivity: c.lastActivity,
  rttNs: 0,
  pendingBytes: c.conn.writableLength(),
  inMsgs: c.inMsgs,
  outMsgs: c.outMsgs,
  inBytes: c.inBytes,
  outBytes: c.outBytes,
  subs: [...c.subs.values()].map((s) => ({ subject: s.subject, queue: undefined, sid: s.sid, msgs: s.delivered, max: 0 })),
  name: "",
  lang: "mqtt",
  version: c.session.protocolVersion === 5 ? "5.0" : "3.1.1",
  tlsVersion: c.conn.tls?.version,
  tlsCipher: c.conn.tls?.cipher,
  user: c.user === "" ? undefined : c.user,
  account: c.account.name,
  mqttClient: c.session.clientId === "" ? undefined : c.session.clientId
})

/** What /connz?state=closed keeps of a finished MQTT connection (taken before its subscriptions go). */
export const closedRecord = (c: MqttConnection, stop: number): ClosedConnSnapshot => ({
  ...mqttConnSnapshot(c),
  pendingBytes: 0,
  stop,
  reason: c.reasonOverride ?? c.session.closeReason ?? CloseReason.ClientClosed
})
