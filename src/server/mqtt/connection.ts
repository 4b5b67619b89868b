// One MQTT connection as the bridge keeps it: its session, its parser,
// the internal NATS client its subscriptions and credentials live on, and what
// /connz shows of it while open and after it closed.
import {
  type AuthResult,
  CloseReason,
  ConnackCode,
  type ConnectPacket,
  MqttSession,
  type SessionConfig,
  type SessionDeps,
  subscriptionSubjects
} from "../../core/mqtt/index.js"
import type { ClosedConnSnapshot, ConnSnapshot } from "../../core/monitor/source.js"
import type { Conn } from "../../services/transport.js"
import { ClientPermissions } from "../../engine/permissions.js"
import type { InternalPrincipal, Subscription } from "../../engine/principal.js"
import type { Server } from "../server.js"
import { type MqttCredentials, mqttAuthenticator } from "./auth.js"
import { MqttParser } from "./codec.js"
import type { HeldPayloads } from "./held.js"
import { OutBuf } from "../../core/nats/outbuf.js"

/**
 * Credentials and permissions of the NATS side: the user name and password of CONNECT
 * go through the MQTT authenticator (the server's users, or the `mqtt {}` block's own
 * override; a password is also tried as a token); the account, user and permissions it
 * grants are taken by the connection's internal client.
 */
const sessionDeps = (server: Server, c: MqttConnection, held: HeldPayloads): SessionDeps => {
  const client = c.client
  return {
    random: server.env.random,
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
      client.account = server.account(res.account)
      client.user = res.user
      client.perms = res.permissions === undefined ? undefined : new ClientPermissions(res.permissions)
      return ConnackCode.Accepted
    },
    canPublish: (_topic, subject) => client.perms === undefined || client.perms.canPublish(subject, server),
    canReceive: (subject) => client.perms === undefined || client.perms.canSubscribe(subject),
    canSubscribe: (filter) => mayHold(client, filter)
  }
}

/** Whether the client's permissions allow the subscription `filter` (each subject it is made of). */
export const mayHold = (client: InternalPrincipal, filter: string): boolean => {
  const subjects = subscriptionSubjects(filter)
  return client.perms === undefined || (subjects.ok && subjects.value.every((s) => client.perms!.canSubscribe(s)))
}

/** How MQTT log lines name a connection, as nats-server does: `ip:port - mid:N - "client id"`. */
export const mqttLogPrefix = (c: MqttConnection, clientId: string = c.session?.clientId ?? ""): string =>
  `${c.conn.remoteAddress}:${c.conn.remotePort} - mid:${c.cid}${clientId === "" ? "" : ` - ${JSON.stringify(clientId)}`}`

export class MqttConnection {
  readonly session: MqttSession
  readonly parser: MqttParser
  /** Sublist entries per MQTT filter. */
  readonly subs = new Map<string, Array<Subscription>>()
  /** Output of this event-loop turn, written once per flush. */
  readonly out: OutBuf
  /** The CONNECT credentials it was admitted with, kept (never logged) so a configuration reload can check them again. */
  credentials: MqttCredentials | undefined
  dirty = false
  closed = false
  lastActivity: number
  /** Why the server closed it, when the session did not decide (slow consumer). */
  reasonOverride: string | undefined
  /** Bytes of the resend burst of a resumed session, allowed over max_pending until it drains. */
  resendAllowance = 0
  /** Bytes of a partial packet counted in the bridge's total (MqttParser.held when last looked at). */
  partialHeld = 0
  inMsgs = 0
  outMsgs = 0
  inBytes = 0
  outBytes = 0
  // The last routed message seen, so overlapping subscriptions deliver it once.
  lastBuf: Buffer | undefined
  lastStart = -1
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

  constructor(
    server: Server,
    config: SessionConfig,
    readonly cid: number,
    readonly conn: Conn,
    readonly client: InternalPrincipal,
    readonly start: number,
    /** Where the session's in-flight QoS 1/2 payloads live (released on acknowledgement). */
    held: HeldPayloads
  ) {
    this.lastActivity = start
    this.parser = new MqttParser(server.options.mqtt?.maxTopicLevels)
    this.out = new OutBuf(4096, server.slabs)
    this.session = new MqttSession(start, sessionDeps(server, this, held), config)
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
  subs: [...c.client.subs.values()].map((s) => ({ subject: s.subject, queue: undefined, sid: s.sid, msgs: s.delivered, max: 0 })),
  name: "",
  lang: "mqtt",
  version: "3.1.1",
  tlsVersion: c.conn.tls?.version,
  tlsCipher: c.conn.tls?.cipher,
  user: c.client.user === "" ? undefined : c.client.user,
  account: c.client.account.name,
  mqttClient: c.session.clientId === "" ? undefined : c.session.clientId
})

/** What /connz?state=closed keeps of a finished MQTT connection (taken before its subscriptions go). */
export const closedRecord = (c: MqttConnection, stop: number): ClosedConnSnapshot => ({
  ...mqttConnSnapshot(c),
  pendingBytes: 0,
  stop,
  reason: c.reasonOverride ?? c.session.closeReason ?? CloseReason.ClientClosed
})
