// A route to another server of the cluster, as a protocol driver: the engine's fourth
// kind of connection. It turns the peer's ops (src/core/cluster's PeerParser) into engine
// calls (RS+/RS- into the cluster's table of remote interest, RMSG/HMSG routed to this
// server's subscribers in the op's account) and writes what the cluster sends it
// (interest, messages forwarded once per message) into its OutBuf, which the engine's one
// Outbound flusher writes once per event-loop turn. The handshake rules, duplicates and
// reconnects are the cluster's (cluster.ts): the route reports to it.
import { encodeConnect, PING, PONG, writeRouteMsg, writeRouteSub, writeRouteUnsub } from "../../core/cluster/encode.js"
import { decodeRouteConnect, decodeRouteInfo, type RouteConnectOp, type RouteInfoOp } from "../../core/cluster/handshake.js"
import { type ParseError, PeerParser, type PeerInterest, type PeerMsg, type PeerOpHandler } from "../../core/cluster/parser.js"
import type { RouteSnapshot } from "../../core/monitor/source.js"
import { writeErr } from "../../core/nats/encode.js"
import { OutBuf, type SlabPool } from "../../core/outbuf.js"
import { NATS_POLICY, type Outbound, type SlowConsumer } from "../../engine/outbound.js"
import { Connection } from "../connection.js"
import type { ClientPermissions } from "../../engine/permissions.js"
import type { Account, Delivery } from "../../engine/principal.js"
import type { Conn } from "../../services/transport.js"
import { ClosedReason, ErrText } from "../reasons.js"
import type { ServerOptions } from "../../config/options.js"
import type { RemoteInterest } from "../../core/cluster/interest.js"
import type { Router } from "../../engine/router.js"
import type { LogService } from "../../services/log.js"

/** What the cluster and its routes need from the server they belong to (server.ts implements it). */
export interface ClusterHost {
  readonly router: Router
  readonly outbound: Outbound
  readonly log: LogService
  readonly slabs: SlabPool
  readonly env: { readonly now: () => number; readonly nanos: () => number; readonly random: () => number }
  readonly options: ServerOptions
  readonly serverId: string
  readonly serverName: string
  /** The client listener. */
  readonly host: string
  readonly port: number
  readonly shuttingDown: boolean
  readonly accounts: ReadonlyMap<string, Account>
  // Totals for /varz.
  inMsgs: number
  inBytes: number
  outMsgs: number
  outBytes: number
  allocateCid(): number
  /** `n` unguessable bytes as base64url (the server's Entropy). */
  randomId(n: number): string
  /** The machine's addresses (a client listener on 0.0.0.0 is reached at each). */
  machineAddresses(): ReadonlyArray<{ readonly address: string; readonly family: string }>
  /** The cluster's client URLs changed: clients hear of it (INFO connect_urls). */
  connectUrlsChanged(): void
}

/** A route this server connects to: configured (retried for ever) or learned from another server (implicit). */
export interface Solicit {
  /** For logs: the URL without credentials. */
  readonly url: string
  readonly host: string
  readonly port: number
  readonly user: string | undefined
  readonly password: string | undefined
  readonly configured: boolean
  /** Failed attempts in a row. */
  attempts: number
  /** When to try next (while there is no connection). */
  nextAt: number
  dialing: boolean
  route: Route | undefined
  /** The server it reached last time: while a route to that server exists (accepted), no need to call. */
  remoteId: string | undefined
  /** It is this server itself: never called again. */
  self: boolean
}

/** What a route needs of the mesh it belongs to (the Cluster implements it). */
export interface RouteMesh {
  readonly server: ClusterHost
  readonly interest: RemoteInterest<Route>
  readonly handshakeTimeoutMs: number
  slowConsumers: number
  infoFor(r: Route): Buffer
  connectFor(r: Route): Record<string, unknown>
  admit(r: Route, c: RouteConnectOp): { reason: RouteClosed; errText: string } | undefined
  checkInfo(r: Route, info: RouteInfoOp): RouteClosed | undefined
  register(r: Route): void
  infoUpdate(r: Route, info: RouteInfoOp): void
  routeClosed(r: Route, reason: RouteClosed): void
  remoteSub(r: Route, i: PeerInterest): void
  remoteUnsub(r: Route, i: PeerInterest): void
  forward(d: Delivery, served: ReadonlyArray<string>): number
}

/** Why a route closed, in the words nats-server logs (`Router connection closed: <reason>`). */
export const RouteClosed = {
  ...ClosedReason,
  ClusterNameConflict: "Cluster Name Conflict",
  DuplicateRoute: "Duplicate Route",
  RouteToSelf: "Route To Self",
  HandshakeTimeout: "Handshake Timeout",
  PoolMismatch: "Route Pool Not Supported"
} as const
export type RouteClosed = (typeof RouteClosed)[keyof typeof RouteClosed]

const EMPTY = Buffer.alloc(0)

/** The fields of one outgoing message, reused (writeRouteMsg reads a PeerMsg). */
class OutMsg implements PeerMsg {
  account = ""
  subject = ""
  reply = ""
  queues: Array<string> = []
  hdrLen = -1
  buf: Buffer = EMPTY
  start = 0
  end = 0
  origin = ""
}

export class Route extends Connection<RouteClosed> implements PeerOpHandler {
  readonly kind = "Router"
  override readonly remote = true
  readonly policy = NATS_POLICY
  readonly out: OutBuf
  readonly parser: PeerParser

  /** The peer's server id (from its CONNECT or INFO), its name and its INFO. */
  remoteId = ""
  remoteName = ""
  remoteInfo: RouteInfoOp | undefined = undefined
  connectReceived = false
  /** Past the handshake and kept (not a duplicate): it carries interest and messages. */
  registered = false
  /** The peer takes HMSG (else headers are dropped and the payload goes alone). */
  peerHeaders = false
  peerMaxPayload = Number.POSITIVE_INFINITY
  /** What the peer may send us (import: publish) and ask for (export: subscribe); undefined = everything. */
  permissions: ClientPermissions | undefined = undefined

  // Counters for /routez and /varz.
  inMsgs = 0
  inBytes = 0
  outMsgs = 0
  outBytes = 0
  readonly start: number
  lastActivity: number
  rttNs = 0
  pingsOut = 0
  nextPingAt: number
  rttPingSentAt = -1
  /** Closed if not registered by then. */
  handshakeDeadline: number
  tracing: boolean

  /** Forwarding scratch (cluster.forward): the message seq it is marked for, and the queue groups named. */
  mark = 0
  nq = 0
  /** The queue groups this message is to serve here (the first `nq`). */
  readonly queueSlots: Array<string> = []
  private readonly outMsg = new OutMsg()
  private lastAccountName = ""
  private lastAccount: Account

  constructor(
    readonly cluster: RouteMesh,
    readonly rid: number,
    readonly conn: Conn,
    /** We connected to it (a configured or learned route) rather than accepted it. */
    readonly solicit: Solicit | undefined,
    now: number
  ) {
    const router = cluster.server.router
    const account = router.account(cluster.server.options.systemAccount)
    super(account)
    this.lastAccount = account
    this.lastAccountName = account.name
    const o = cluster.server.options
    this.out = new OutBuf(4096, cluster.server.slabs)
    this.parser = new PeerParser("route", this, { maxControlLine: o.maxControlLine, maxPayload: o.maxPayload })
    this.start = now
    this.lastActivity = now
    this.nextPingAt = now + o.pingIntervalMs
    this.handshakeDeadline = now + cluster.handshakeTimeoutMs
    this.tracing = cluster.server.log.traceEnabled
  }

  get didSolicit(): boolean {
    return this.solicit !== undefined
  }

  // ---- the socket side (receive, lost, close: Connection) ----

  protected get outbound(): Outbound {
    return this.cluster.server.outbound
  }

  protected finish(reason: RouteClosed): void {
    this.out.clear()
    this.cluster.routeClosed(this, reason)
  }

  logName(): string {
    return this.logPrefix()
  }

  cutOff(reason: SlowConsumer): void {
    this.cluster.slowConsumers++
    this.out.clear()
    this.close(reason, ErrText.SlowConsumer)
  }

  /** Handshake deadline, write deadline, pings; returns when next due. */
  timers(now: number): number {
    if (!this.registered) {
      if (now >= this.handshakeDeadline) {
        this.cluster.server.log.warn(`${this.logPrefix()} - Route handshake not complete within ${this.cluster.handshakeTimeoutMs}ms`)
        this.close(this.connectReceived || this.didSolicit ? RouteClosed.HandshakeTimeout : RouteClosed.AuthenticationTimeout,
          this.connectReceived || this.didSolicit ? undefined : ErrText.AuthenticationTimeout)
        return Infinity
      }
      return this.handshakeDeadline
    }
    const w = this.cluster.server.outbound.writeDeadline(this, now)
    if (this.closed) return Infinity
    const o = this.cluster.server.options
    if (now >= this.nextPingAt) {
      this.nextPingAt = now + o.pingIntervalMs
      if (this.pingsOut + 1 > o.pingMax) {
        this.cluster.server.log.debug(`${this.logPrefix()} - Stale Route Connection - Closing`)
        this.close(RouteClosed.StaleConnection, ErrText.StaleConnection)
        return Infinity
      }
      this.pingsOut++
      this.sendPing()
    }
    return Math.min(w, this.nextPingAt)
  }

  // ---- PeerOpHandler ----

  info(json: string): void {
    if (this.closed) return
    const decoded = decodeRouteInfo(json)
    if (decoded._tag === "Left") {
      this.cluster.server.log.error(`${this.logPrefix()} - Route sent an invalid INFO: ${decoded.left.message.split("\n")[0]}`)
      this.close(RouteClosed.ProtocolViolation)
      return
    }
    const info = decoded.right
    if (this.tracing) this.traceIn("INFO", json)
    if (this.registered) {
      this.cluster.infoUpdate(this, info)
      return
    }
    if (!this.didSolicit && !this.connectReceived) {
      // The soliciting side sends CONNECT first.
      this.close(RouteClosed.ProtocolViolation, ErrText.AuthorizationViolation)
      return
    }
    if (this.didSolicit && this.remoteInfo !== undefined) return
    this.remoteInfo = info
    this.remoteId = info.server_id
    this.remoteName = info.server_name ?? info.server_id
    this.peerHeaders = info.headers === true && !this.cluster.server.options.noHeaderSupport
    if (info.max_payload !== undefined && info.max_payload > 0) this.peerMaxPayload = info.max_payload
    const refused = this.cluster.checkInfo(this, info)
    // Observed order on a solicited route: CONNECT, then our INFO. A CONNECT goes out even
    // to a server we refuse, so that it logs why too.
    if (this.didSolicit) {
      const connect = encodeConnect(this.cluster.connectFor(this))
      this.out.writeBytes(connect, 0, connect.length)
      if (this.tracing) this.traceOut("CONNECT {...}")
    }
    if (refused !== undefined) {
      this.close(refused)
      return
    }
    if (this.didSolicit) this.writeInfo(this.cluster.infoFor(this))
    this.cluster.register(this)
  }

  connect(json: string): void {
    if (this.closed) return
    if (this.didSolicit || this.connectReceived) {
      this.close(RouteClosed.ProtocolViolation, ErrText.UnknownOp)
      return
    }
    const decoded = decodeRouteConnect(json)
    if (decoded._tag === "Left") {
      if (this.tracing) this.traceIn("CONNECT", "<unparseable>")
      this.close(RouteClosed.ParseError, ErrText.InvalidConnect)
      return
    }
    const c = decoded.right
    if (this.tracing) this.traceIn("CONNECT", JSON.stringify({ ...c, pass: c.pass === undefined ? undefined : "[REDACTED]", auth_token: undefined }))
    const refused = this.cluster.admit(this, c)
    if (refused !== undefined) {
      this.close(refused.reason, refused.errText)
      return
    }
    this.connectReceived = true
    this.remoteId = c.name ?? ""
  }

  ping(): void {
    if (this.closed) return
    if (this.tracing) this.traceIn("PING", "")
    this.out.writeBytes(PONG, 0, PONG.length)
    this.cluster.server.outbound.markDirty(this)
  }

  pong(): void {
    if (this.tracing) this.traceIn("PONG", "")
    this.pingsOut = 0
    if (this.rttPingSentAt >= 0) {
      this.rttNs = Math.max(0, this.cluster.server.env.nanos() - this.rttPingSentAt)
      this.rttPingSentAt = -1
    }
  }

  err(message: string): void {
    this.cluster.server.log.error(`${this.logPrefix()} - Router sent -ERR '${message.slice(0, 256)}'`)
  }

  sub(i: PeerInterest): void {
    if (this.closed) return
    if (!this.registered) {
      this.close(RouteClosed.ProtocolViolation)
      return
    }
    if (this.tracing) this.traceIn(i.fromLeaf ? "LS+" : "RS+", `${i.account} ${i.subject}${i.queue === "" ? "" : ` ${i.queue} ${i.weight}`}`)
    this.cluster.remoteSub(this, i)
  }

  unsub(i: PeerInterest): void {
    if (this.closed) return
    if (!this.registered) {
      this.close(RouteClosed.ProtocolViolation)
      return
    }
    if (this.tracing) this.traceIn(i.fromLeaf ? "LS-" : "RS-", `${i.account} ${i.subject}${i.queue === "" ? "" : ` ${i.queue}`}`)
    this.cluster.remoteUnsub(this, i)
  }

  msg(m: PeerMsg): void {
    if (this.closed) return
    if (!this.registered) {
      this.close(RouteClosed.ProtocolViolation)
      return
    }
    const size = m.end - m.start
    if (this.tracing) this.traceIn(m.hdrLen >= 0 ? "HMSG" : "RMSG", `${m.account} ${m.subject}${m.reply === "" ? "" : ` ${m.reply}`} ${size}`)
    this.inMsgs++
    this.inBytes += size
    const server = this.cluster.server
    server.inMsgs++
    server.inBytes += size
    if (this.permissions !== undefined && !this.permissions.canPublish(m.subject, server.env)) {
      server.log.debug(`${this.logPrefix()} - Route message on "${m.subject}" outside cluster import permissions dropped`)
      return
    }
    // The op names the account; the route publishes in it for this message.
    if (m.account !== this.lastAccountName) {
      const known = server.accounts.get(m.account)
      if (known === undefined) return // nobody here can be interested in an account this server does not have
      this.lastAccount = known
      this.lastAccountName = m.account
    }
    const acc = this.lastAccount
    this.account = acc
    acc.inMsgs++
    acc.inBytes += size
    const router = server.router
    const d = router.message(this, this.lastActivity)
    d.subject = m.subject
    d.reply = m.reply
    d.hdrLen = m.hdrLen
    d.buf = m.buf
    d.start = m.start
    d.end = m.end
    d.origin.queues = m.queues
    router.route(d)
  }

  protocolError(error: ParseError): void {
    this.cluster.server.log.error(`${this.logPrefix()} - Router parser ERROR ${error.kind}: ${error.detail}`)
    switch (error.kind) {
      case "MaxControlLine":
        this.close(RouteClosed.MaxControlLineExceeded, ErrText.MaxControlLine)
        break
      case "MaxPayload":
        this.close(RouteClosed.MaxPayloadExceeded, ErrText.MaxPayload)
        break
      default:
        this.close(RouteClosed.ParseError, ErrText.UnknownOp)
    }
  }

  // ---- what the cluster sends through it ----

  /** Routes take no subscriptions of their own: interest lives in the cluster's table. */
  deliver(): boolean {
    return false
  }

  /** `d` once, in `account`, naming the `nq` queue groups picked for this server (`queueSlots`). False when it could not go. */
  sendMsg(d: Delivery, account: string): boolean {
    let h = d.hdrLen
    let from = d.start
    if (h >= 0 && !this.peerHeaders) {
      from += h
      h = -1
    }
    const size = d.end - from
    if (size - (h > 0 ? h : 0) > this.peerMaxPayload) return false
    const m = this.outMsg
    m.account = account
    m.subject = d.subject
    m.reply = d.reply
    const q = m.queues
    q.length = this.nq
    for (let i = 0; i < this.nq; i++) q[i] = this.queueSlots[i]
    m.hdrLen = h
    m.buf = d.buf
    m.start = from
    m.end = d.end
    writeRouteMsg(this.out, m)
    m.buf = EMPTY
    if (this.tracing) this.traceOut(`${h >= 0 ? "HMSG" : "RMSG"} ${account} ${d.subject} ${size}`)
    this.outMsgs++
    this.outBytes += size
    const server = this.cluster.server
    server.outMsgs++
    server.outBytes += size
    server.outbound.queued(this)
    return true
  }

  sendSub(account: string, subject: string, queue: string, weight: number): void {
    if (this.tracing) this.traceOut(`RS+ ${account} ${subject}${queue === "" ? "" : ` ${queue} ${weight}`}`)
    writeRouteSub(this.out, account, subject, queue, weight)
    this.cluster.server.outbound.markDirty(this)
  }

  sendUnsub(account: string, subject: string, queue: string): void {
    if (this.tracing) this.traceOut(`RS- ${account} ${subject}${queue === "" ? "" : ` ${queue}`}`)
    writeRouteUnsub(this.out, account, subject, queue)
    this.cluster.server.outbound.markDirty(this)
  }

  writeInfo(info: Buffer): void {
    this.out.writeBytes(info, 0, info.length)
    if (this.tracing) this.traceOut(`INFO ${info.toString("utf8", 5, Math.min(info.length - 2, 1024))}`)
    this.cluster.server.outbound.markDirty(this)
  }

  sendErr(text: string): void {
    if (this.tracing) this.traceOut(`-ERR '${text}'`)
    writeErr(this.out, text)
    this.cluster.server.outbound.markDirty(this)
  }

  sendPing(): void {
    if (this.tracing) this.traceOut("PING")
    this.out.writeBytes(PING, 0, PING.length)
    if (this.rttPingSentAt < 0) this.rttPingSentAt = this.cluster.server.env.nanos()
    this.cluster.server.outbound.markDirty(this)
  }

  // ---- logs and monitoring ----

  logPrefix(): string {
    return `${this.conn.remoteAddress}:${this.conn.remotePort} - rid:${this.rid}`
  }

  traceIn(op: string, args: string): void {
    this.cluster.server.log.trace(`${this.logPrefix()} - <<- [${op}${args === "" ? "" : ` ${args.slice(0, 1024)}`}]`)
  }

  traceOut(op: string): void {
    this.cluster.server.log.trace(`${this.logPrefix()} - ->> [${op.slice(0, 1024)}]`)
  }

  snapshot(): RouteSnapshot {
    const entries = this.cluster.interest.entries(this)
    return {
      rid: this.rid,
      remoteId: this.remoteId,
      remoteName: this.remoteName,
      didSolicit: this.didSolicit,
      isConfigured: this.solicit?.configured === true,
      ip: this.conn.remoteAddress,
      port: this.conn.remotePort,
      start: this.start,
      lastActivity: this.lastActivity,
      rttNs: this.rttNs,
      pendingBytes: this.pendingBytes,
      inMsgs: this.inMsgs,
      outMsgs: this.outMsgs,
      inBytes: this.inBytes,
      outBytes: this.outBytes,
      subs: entries.map((e) => ({
        subject: e.subject,
        queue: e.queue,
        sid: e.queue === undefined ? `${e.account} ${e.subject}` : `${e.account} ${e.subject} ${e.queue}`,
        msgs: 0,
        max: 0,
        account: e.account
      })),
      account: undefined,
      compression: undefined
    }
  }
}
