// A route to another server of the cluster, as a protocol driver: the engine's fourth
// kind of connection. It turns the peer's ops (src/core/cluster's PeerParser) into engine
// calls (RS+/RS- into the cluster's table of remote interest, RMSG/HMSG routed to this
// server's subscribers in the op's account) and writes what the cluster sends it
// (interest, messages forwarded once per message) into its OutBuf, which the engine's one
// Outbound flusher writes once per event-loop turn. The handshake rules, duplicates and
// reconnects are the cluster's (cluster.ts): the route reports to it.
import { encodeConnect, writeRouteMsg, writeRouteSub, writeRouteUnsub } from "../../core/cluster/encode.js"
import { decodeRouteConnect, decodeRouteInfo, type RouteConnectOp, type RouteInfoOp } from "../../core/cluster/handshake.js"
import type { PeerInterest, PeerMsg } from "../../core/cluster/parser.js"
import type { RouteSnapshot } from "../../core/monitor/source.js"
import type { OutBuf } from "../../core/outbuf.js"
import type { ClientPermissions } from "../../engine/permissions.js"
import type { Account, Delivery } from "../../engine/principal.js"
import type { Conn } from "../../services/transport.js"
import { ClosedReason, ErrText } from "../reasons.js"
import type { RemoteInterest } from "../../core/cluster/interest.js"
import { isOwnSubject } from "../../core/cluster/own-subjects.js"
import { type ClusterHost, PeerLink } from "./link.js"

export type { ClusterHost } from "./link.js"


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
  /**
   * A learned route another server told us of again while a call was out: that call's
   * failure does not count against connect_retries (the news is newer than the call).
   */
  renewed: boolean
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
  PoolMismatch: "Route Pool Not Supported",
  InterestLimit: "Interest Limit Exceeded"
} as const
export type RouteClosed = (typeof RouteClosed)[keyof typeof RouteClosed]

export class Route extends PeerLink<RouteClosed> {
  readonly kind = "Router"
  override readonly remote = true
  protected readonly word = "Router"
  protected readonly msgOp = "RMSG"
  protected readonly parseErrorReason = RouteClosed.ParseError

  remoteInfo: RouteInfoOp | undefined = undefined
  get peerSwitchyard(): boolean {
    return this.remoteInfo?.switchyard !== undefined
  }
  /** Stands for the leaf nodes behind the peer (its LS+) where interest is counted per source. */
  readonly leafShadow = {}
  /** What the peer may send us (import: publish) and ask for (export: subscribe); undefined = everything. */
  permissions: ClientPermissions | undefined = undefined
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
    const account = cluster.server.router.account(cluster.server.options.systemAccount)
    super(account, cluster.server, "route", cluster.handshakeTimeoutMs, now)
    this.lastAccount = account
    this.lastAccountName = account.name
  }

  protected writeMsgOp(out: OutBuf, m: PeerMsg): void {
    writeRouteMsg(out, m)
  }

  protected countSlowConsumer(): void {
    this.cluster.slowConsumers++
  }

  /** An LMSG names the leaf cluster the message entered through. */
  protected originOf(m: PeerMsg): string {
    return m.origin
  }

  /** A message from a leaf node goes as LMSG with its cluster, to a peer that understands it (lnoc). */
  protected originTo(d: Delivery): string {
    return this.remoteInfo?.lnoc === true ? d.origin.cluster : ""
  }

  protected finish(reason: RouteClosed): void {
    this.out.clear()
    this.cluster.routeClosed(this, reason)
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
    return this.liveness(now)
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
    const c = this.acceptConnect(json, decodeRouteConnect)
    if (c === undefined) return
    const refused = this.cluster.admit(this, c)
    if (refused !== undefined) {
      this.close(refused.reason, refused.errText)
      return
    }
    this.connectReceived = true
    this.remoteId = c.name ?? ""
  }

  err(message: string): void {
    this.cluster.server.log.error(`${this.logPrefix()} - Router sent -ERR '${message.slice(0, 256)}'`)
  }

  protected interestIn(i: PeerInterest): void {
    this.cluster.remoteSub(this, i)
  }

  protected interestOut(i: PeerInterest): void {
    this.cluster.remoteUnsub(this, i)
  }

  protected messageIn(m: PeerMsg, size: number): void {
    const server = this.cluster.server
    // Switchyard's own messages are the server's, not a client's: handed over, never routed.
    if (isOwnSubject(m.subject)) {
      server.peerOwn?.message(this, m.account, m)
      return
    }
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
    this.publish(m)
  }

  // ---- what the cluster sends through it ----

  /**
   * RS+, or `LS+ <origin>` when the change came from a leaf node's cluster `origin` and the
   * peer understands it (lnoc), as nats-server 2.9.10 sends it.
   */
  sendSub(account: string, subject: string, queue: string, weight: number, origin = ""): void {
    const o = origin !== "" && this.remoteInfo?.lnoc === true ? origin : ""
    if (this.tracing) this.traceOut(`${o === "" ? "RS+" : `LS+ ${o}`} ${account} ${subject}${queue === "" ? "" : ` ${queue} ${weight}`}`)
    writeRouteSub(this.out, account, subject, queue, weight, o)
    this.cluster.server.outbound.markDirty(this)
  }

  /** RS-, or LS- (naming no origin) when the last interest withdrawn was a leaf node's and the peer understands it. */
  sendUnsub(account: string, subject: string, queue: string, fromLeaf = false): void {
    const leaf = fromLeaf && this.remoteInfo?.lnoc === true
    if (this.tracing) this.traceOut(`${leaf ? "LS-" : "RS-"} ${account} ${subject}${queue === "" ? "" : ` ${queue}`}`)
    writeRouteUnsub(this.out, account, subject, queue, leaf)
    this.cluster.server.outbound.markDirty(this)
  }

  writeInfo(info: Buffer): void {
    this.writeRaw(info)
  }

  // ---- logs and monitoring ----

  logPrefix(): string {
    return `${this.conn.remoteAddress}:${this.conn.remotePort} - rid:${this.rid}`
  }

  snapshot(): RouteSnapshot {
    const entries = this.cluster.interest.entries(this)
    return {
      rid: this.rid,
      remoteId: this.remoteId,
      remoteName: this.remoteName,
      didSolicit: this.didSolicit,
      isConfigured: this.solicit?.configured === true,
      ...this.traffic(),
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
