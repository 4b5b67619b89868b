// A leaf-node connection as a protocol driver: a link between this server and another one
// (a hub we connected to, or a leaf node that connected to us), bound to one account on
// each side. It turns the peer's ops (PeerParser("leaf")) into engine calls: LS+/LS- into
// the leaf nodes' table of remote interest, LMSG/HMSG routed in its account, and writes
// what the leaf nodes send it (interest, messages once each) into its OutBuf, which the
// engine's Outbound writes once per event-loop turn. The handshake checks, the account
// binding, loops and reconnects are decided by LeafNodes (leafnodes.ts): it reports there.
import { encodeConnect, writeLeafMsg, writeLeafSub, writeLeafUnsub } from "../../core/cluster/encode.js"
import {
  decodeLeafConnect,
  decodeLeafInfo,
  isLeafListenerInfo,
  type LeafConnectOp,
  type LeafInfoOp,
  WRONG_PORT
} from "../../core/cluster/handshake.js"
import type { PeerInterest, PeerMsg } from "../../core/cluster/parser.js"
import type { ConnSnapshot } from "../../core/monitor/source.js"
import type { OutBuf } from "../../core/outbuf.js"
import type { ClientPermissions } from "../../engine/permissions.js"
import type { Account, Delivery } from "../../engine/principal.js"
import type { Conn } from "../../services/transport.js"
import type { LeafRemote } from "../../config/options.js"
import { isOwnSubject } from "../../core/cluster/own-subjects.js"
import type { ServerUrl } from "../../config/route-url.js"
import type { ClusterHost } from "../cluster/link.js"
import { PeerLink } from "../cluster/link.js"
import { ClosedReason, ErrText } from "../reasons.js"

/** A hub this server connects to as a leaf node (`leafnodes.remotes`), and its attempts (solicit.ts makes and updates them). */
export interface LeafUrl extends ServerUrl {
  /** For logs: the URL without credentials. */
  readonly url: string
}

export interface LeafSolicit {
  readonly remote: LeafRemote
  /** The configured URLs, then those the hub told us of (its cluster's leaf listeners). */
  readonly urls: Array<LeafUrl>
  /** The URL of the current or last attempt. */
  index: number
  /** Failed attempts in a row. */
  attempts: number
  /** When to try next (while there is no connection). */
  nextAt: number
  dialing: boolean
  leaf: Leaf | undefined
  /** The hub found a loop: the next attempt waits for the loop delay. */
  loop: boolean
  /** For logs: the URL of the current attempt. */
  readonly url: string
}

/** Why a leaf connection closed (logged as `Leafnode connection closed: <reason>`). */
export const LeafClosed = {
  ...ClosedReason,
  LoopDetected: "Loop Detected",
  WrongPort: "Wrong Port",
  TlsRequired: "TLS Required",
  HandshakeTimeout: "Handshake Timeout",
  InterestLimit: "Interest Limit Exceeded"
} as const
export type LeafClosed = (typeof LeafClosed)[keyof typeof LeafClosed]

/** What a leaf connection needs of the leaf nodes it belongs to (LeafNodes implements it). */
export interface LeafMesh {
  readonly server: ClusterHost
  readonly handshakeTimeoutMs: number
  slowConsumers: number
  /** Our CONNECT on a connection we solicited; undefined when it cannot be made (the connection is closed). */
  connectFor(l: Leaf): Record<string, unknown> | undefined
  /** Switch to TLS after the hub's first INFO when either side requires it; false when the connection was closed instead. */
  startTls(l: Leaf, info: LeafInfoOp): boolean
  /** An accepted connection's CONNECT: the account and permissions it is bound to, or why it is refused. */
  admit(l: Leaf, c: LeafConnectOp): { account: Account; user: string; perms: ClientPermissions | undefined } | { refused: string }
  /** The INFO answering an accepted CONNECT. */
  connectInfoFor(l: Leaf): Buffer
  register(l: Leaf): void
  leafClosed(l: Leaf, reason: LeafClosed): void
  remoteSub(l: Leaf, i: PeerInterest): void
  remoteUnsub(l: Leaf, i: PeerInterest): void
  /** The peer told us it found a loop (we wait before calling again). */
  loopReported(l: Leaf): void
  /** Our hub's INFO named its cluster's leaf listeners. */
  hubUrls(l: Leaf, hostPorts: ReadonlyArray<string>): void
}

export class Leaf extends PeerLink<LeafClosed> {
  readonly kind = "Leafnode"
  protected readonly word = "Leafnode"
  protected readonly msgOp = "LMSG"
  protected readonly parseErrorReason = LeafClosed.ProtocolViolation

  /** The hub's INFO (on a connection we solicited). */
  remoteInfo: LeafInfoOp | undefined = undefined
  /** The other side is a Switchyard server (its INFO or CONNECT says `switchyard`). */
  peerSwitchyard = false
  /** The hub's account this connection is bound to on its side (its second INFO), for logs. */
  remoteAccount = ""
  connectSent = false
  /** We switched this (solicited) connection to TLS after the hub's INFO. */
  tlsStarted = false
  /** The cluster of the other side (its CONNECT's or INFO's cluster, else its name): messages that came from it are not sent back. */
  originCluster = ""
  /** What the other side may send (publish) and ask for (subscribe): an accepted leaf's user's permissions, a remote's deny_imports/deny_exports. */
  permissions: ClientPermissions | undefined = undefined
  /**
   * Our hub's messages go to no route (set for a connection we solicited): a nats-server
   * spoke keeps its hub connection and its routes apart, and each server of a leaf
   * cluster has its own connection to the hub, so passing them on would deliver twice.
   */
  override readonly remote: boolean

  constructor(
    readonly mesh: LeafMesh,
    readonly lid: number,
    readonly conn: Conn,
    /** We connected to it (a configured remote): it is our hub. Undefined: it connected to us. */
    readonly solicit: LeafSolicit | undefined,
    account: Account,
    now: number
  ) {
    super(account, mesh.server, "leaf", mesh.handshakeTimeoutMs, now)
    this.remote = solicit !== undefined
  }

  protected writeMsgOp(out: OutBuf, m: PeerMsg): void {
    writeLeafMsg(out, m)
  }

  protected countSlowConsumer(): void {
    this.mesh.slowConsumers++
  }

  /** What it sends entered through its own cluster. */
  protected originOf(): string {
    return this.originCluster
  }

  /** The leaf protocol names no origin. */
  protected originTo(): string {
    return ""
  }

  /**
   * Never back into the leaf cluster a message came from (through another server of this
   * cluster); nor a message the other side may not ask for (its interest is a wildcard that
   * overlaps a subscribe deny, or a remote's deny_exports).
   */
  protected override refuses(d: Delivery): boolean {
    const c = d.origin.cluster
    if (c !== "" && c === this.originCluster) return true
    return this.permissions !== undefined && this.permissions.deniesDelivery(d.subject)
  }

  /** Interest we may announce to our hub: not in subjects whose messages would be refused on arrival (the remote's deny_imports). */
  private mayImport(subject: string): boolean {
    return this.permissions === undefined || !this.didSolicit || this.permissions.canPublish(subject, this.host.env)
  }

  protected override countOut(size: number): void {
    this.account.outMsgs++
    this.account.outBytes += size
  }

  protected finish(reason: LeafClosed): void {
    this.out.clear()
    this.mesh.leafClosed(this, reason)
  }

  /** Handshake deadline, write deadline, pings; returns when next due. */
  timers(now: number): number {
    if (!this.registered) {
      if (now >= this.handshakeDeadline) {
        this.host.log.warn(`${this.logPrefix()} - Leafnode handshake not complete within ${this.mesh.handshakeTimeoutMs}ms`)
        if (this.didSolicit) this.close(LeafClosed.HandshakeTimeout)
        else this.close(LeafClosed.AuthenticationTimeout, ErrText.AuthenticationTimeout)
        return Infinity
      }
      return this.handshakeDeadline
    }
    return this.liveness(now)
  }

  // ---- PeerOpHandler ----

  info(json: string): void {
    if (this.closed) return
    const log = this.host.log
    if (this.tracing) this.traceIn("INFO", json)
    if (!this.didSolicit) return // a leaf has no INFO to give its hub; nats-server's send none
    const decoded = decodeLeafInfo(json)
    if (decoded._tag === "Left") {
      log.error(`${this.logPrefix()} - Leafnode hub sent an invalid INFO: ${decoded.left.message.split("\n")[0]}`)
      this.close(LeafClosed.ProtocolViolation)
      return
    }
    const info = decoded.right
    if (info.max_payload !== undefined && info.max_payload > 0) this.peerMaxPayload = info.max_payload
    if (info.headers !== undefined) this.peerHeaders = info.headers && !this.host.options.noHeaderSupport
    if (!this.connectSent) {
      if (!isLeafListenerInfo(info)) {
        log.error(`${this.logPrefix()} - Leafnode remote ${this.solicit!.url} ${WRONG_PORT}: it is not a leaf-node listener`)
        this.close(LeafClosed.WrongPort)
        return
      }
      this.remoteInfo = info
      this.peerSwitchyard = info.switchyard !== undefined
      if (info.leafnode_urls !== undefined) this.mesh.hubUrls(this, info.leafnode_urls)
      this.remoteId = info.server_id
      this.remoteName = info.server_name ?? info.server_id
      this.originCluster = info.cluster ?? this.remoteName
      if (!this.mesh.startTls(this, info)) return
      const fields = this.mesh.connectFor(this)
      if (fields === undefined) return
      const connect = encodeConnect(fields)
      this.out.writeBytes(connect, 0, connect.length)
      if (this.tracing) this.traceOut("CONNECT {...}")
      this.connectSent = true
      this.host.outbound.markDirty(this)
      // A hub that says info_on_connect answers the CONNECT with a second INFO; one that does not, nothing.
      if (info.info_on_connect !== true) this.mesh.register(this)
      return
    }
    if (info.connect_info === true && !this.registered) {
      this.remoteAccount = info.remote_account ?? ""
      this.mesh.register(this)
    }
    if (info.leafnode_urls !== undefined) this.mesh.hubUrls(this, info.leafnode_urls)
  }

  connect(json: string): void {
    const c = this.acceptConnect(json, decodeLeafConnect)
    if (c === undefined) return
    const admitted = this.mesh.admit(this, c)
    if ("refused" in admitted) {
      this.close(LeafClosed.AuthenticationViolation, admitted.refused)
      return
    }
    this.connectReceived = true
    this.account = admitted.account
    this.user = admitted.user
    this.permissions = admitted.perms
    this.remoteId = c.server_id ?? ""
    this.remoteName = c.name ?? c.server_id ?? ""
    this.originCluster = c.cluster ?? this.remoteName
    this.peerSwitchyard = c.switchyard !== undefined
    this.peerHeaders = c.headers === true && !this.host.options.noHeaderSupport
    this.writeRaw(this.mesh.connectInfoFor(this))
    this.mesh.register(this)
  }

  err(message: string): void {
    this.host.log.error(`${this.logPrefix()} - Leafnode Error '${message.slice(0, 256)}'`)
    if (message.startsWith("Loop detected")) this.mesh.loopReported(this)
  }

  protected interestIn(i: PeerInterest): void {
    this.mesh.remoteSub(this, i)
  }

  protected interestOut(i: PeerInterest): void {
    this.mesh.remoteUnsub(this, i)
  }

  protected messageIn(m: PeerMsg, size: number): void {
    const acc = this.account
    acc.inMsgs++
    acc.inBytes += size
    // Switchyard's own messages are the server's, not a client's: handed over, never routed.
    if (isOwnSubject(m.subject)) {
      this.host.peerOwn?.message(this, acc.name, m)
      return
    }
    if (this.permissions !== undefined && !this.permissions.canPublish(m.subject, this.host.env)) {
      this.host.log.debug(`${this.logPrefix()} - Leafnode message on "${m.subject}" outside its user's publish permissions dropped`)
      return
    }
    this.publish(m)
  }

  // ---- what the leaf nodes send through it ----

  sendSub(subject: string, queue: string, weight: number): void {
    if (!this.mayImport(subject)) return
    if (this.tracing) this.traceOut(`LS+ ${subject}${queue === "" ? "" : ` ${queue} ${weight}`}`)
    writeLeafSub(this.out, subject, queue, weight)
    this.host.outbound.markDirty(this)
  }

  sendUnsub(subject: string, queue: string): void {
    if (!this.mayImport(subject)) return
    if (this.tracing) this.traceOut(`LS- ${subject}${queue === "" ? "" : ` ${queue}`}`)
    writeLeafUnsub(this.out, subject, queue)
    this.host.outbound.markDirty(this)
  }

  // ---- logs and monitoring ----

  logPrefix(): string {
    return `${this.conn.remoteAddress}:${this.conn.remotePort} - lid:${this.lid}`
  }

  /** What /leafz shows: `subs` the interest the other side announced. */
  snapshot(subs: ReadonlyArray<{ readonly subject: string; readonly queue: string | undefined }>): ConnSnapshot {
    return {
      cid: this.lid,
      kind: "Leafnode",
      type: undefined,
      ...this.traffic(),
      subs: subs.map((s) => ({ subject: s.subject, queue: s.queue, sid: s.queue === undefined ? s.subject : `${s.subject} ${s.queue}`, msgs: 0, max: 0 })),
      name: this.remoteName,
      lang: "",
      version: this.remoteInfo?.version ?? "",
      tlsVersion: this.conn.tls?.version,
      tlsCipher: this.conn.tls?.cipher,
      user: this.user === "" ? undefined : this.user,
      account: this.account.name,
      mqttClient: undefined,
      leaf: { remoteServer: this.remoteName, isSpoke: this.didSolicit, compression: undefined }
    }
  }
}
