// What a connection to another server is, whichever protocol it speaks (a route, a leaf-node
// connection): a PeerParser feeding it, the peer's identity and limits, its counters for
// /routez and /leafz, liveness (PING/PONG with the round-trip time, the write deadline),
// a parse error closing it with the reason nats-server logs, and each forwarded message
// written once (headers dropped for a peer without them, refused past its max_payload).
// Route and Leaf differ in their handshakes and in how a message names its account.
import { Either } from "effect"
import { PING, PONG } from "../../core/cluster/encode.js"
import type { HandshakeError } from "../../core/cluster/handshake.js"
import { type ParseError, type PeerKind, PeerParser, type PeerMsg, type PeerOpHandler, type PeerInterest } from "../../core/cluster/parser.js"
import { MARK_RETAIN, mqttMarksOf, withMqttMarks } from "../../core/cluster/mqtt-qos.js"
import { isOwnSubject } from "../../core/cluster/own-subjects.js"
import { writeErr } from "../../core/nats/encode.js"
import { OutBuf, type SlabPool } from "../../core/outbuf.js"
import { NATS_POLICY, type Outbound, type SlowConsumer } from "../../engine/outbound.js"
import type { Account, Delivery } from "../../engine/principal.js"
import type { Router } from "../../engine/router.js"
import type { LogService } from "../../services/log.js"
import type { ServerOptions } from "../../config/options.js"
import { Connection } from "../connection.js"
import { ClosedReason, ErrText } from "../reasons.js"
import type { ForwardPeer } from "./forward.js"

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
  /**
   * Switchyard's own messages between its servers (core/cluster/own-subjects.ts): a
   * route or leaf connection hands them here instead of routing them; undefined: dropped.
   */
  readonly peerOwn?: PeerOwnHandler | undefined
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

/** Where Switchyard's own server-to-server messages go (the MQTT bridge's retained sync). */
export interface PeerOwnHandler {
  /** One came from `link` (whose peer may or may not be a Switchyard server: the handler checks). */
  message(link: PeerLink<string>, account: string, m: PeerMsg): void
  /** `link` is past its handshake. */
  linkUp(link: PeerLink<string>): void
}

/** The first wait before connecting again to a route that went away or could not be reached. */
export const ROUTE_RECONNECT_MS = 1_000
/** The longest wait between two attempts at a configured route. */
export const ROUTE_RECONNECT_MAX_MS = 8_000

/**
 * The wait before attempt `attempts + 1` at a route (`attempts` failed in a row): one
 * second doubling up to ROUTE_RECONNECT_MAX_MS, less up to a quarter at random so that
 * servers that lost each other do not all call at the same instant. Leaf remotes scale it.
 */
export const reconnectDelay = (attempts: number, random: () => number): number => {
  const full = Math.min(ROUTE_RECONNECT_MAX_MS, ROUTE_RECONNECT_MS * 2 ** Math.min(attempts, 10))
  return Math.round(full * (1 - 0.25 * random()))
}

const EMPTY = Buffer.alloc(0)

/** The fields of one outgoing message, reused (the encoders read a PeerMsg). */
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

/**
 * Where the `@` of a stream consumer's delivery from another server splits its reply field
 * (`<ack reply>@<subject>`, only after a `$JS.ACK.` reply, as nats-server sends and reads
 * it); -1 for any other reply.
 */
export const jsDeliveryAt = (reply: string): number => {
  if (!reply.startsWith(JS_ACK_PREFIX)) return -1
  const at = reply.lastIndexOf("@")
  return at > JS_ACK_PREFIX.length && at < reply.length - 1 ? at : -1
}
const JS_ACK_PREFIX = "$JS.ACK."

export abstract class PeerLink<Reason extends string> extends Connection<Reason> implements PeerOpHandler, ForwardPeer {
  readonly policy = NATS_POLICY
  readonly out: OutBuf
  readonly parser: PeerParser
  /** Another server: its messages were handled by its own subsystems (JetStream API, service imports). */
  override readonly foreign = true

  /** The other server's id and name (from its INFO or CONNECT). */
  remoteId = ""
  remoteName = ""
  connectReceived = false
  /** Past the handshake (and kept): it carries interest and messages. */
  registered = false
  /** The peer takes HMSG (else headers are dropped and the payload goes alone). */
  peerHeaders = false
  peerMaxPayload = Number.POSITIVE_INFINITY

  /** Closed if not registered by then. */
  handshakeDeadline: number
  tracing: boolean

  /** Forwarding scratch (forwardOnce): the message seq it is marked for, and the queue groups named. */
  mark = 0
  nq = 0
  /** The queue groups this message is to serve there (the first `nq`). */
  readonly queueSlots: Array<string> = []
  private readonly outMsg = new OutMsg()

  /** How logs name this kind of connection: `Router`, `Leafnode`. */
  protected abstract readonly word: string
  /** Where messages go out: RMSG/HMSG/LMSG in each protocol's form. */
  protected abstract writeMsgOp(out: OutBuf, m: PeerMsg): void
  /** The op a message is traced as (RMSG, LMSG; HMSG with headers). */
  protected abstract readonly msgOp: string
  /** Why it closes on a parse error that is not a size limit. */
  protected abstract readonly parseErrorReason: Reason


  abstract logPrefix(): string
  abstract info(json: string): void
  abstract connect(json: string): void
  abstract err(message: string): void
  /** What we connected to (a route, a leaf remote); undefined when it connected to us. */
  abstract readonly solicit: object | undefined
  /** The other side is a Switchyard server (its INFO or CONNECT says `switchyard`). */
  abstract readonly peerSwitchyard: boolean

  /** We connected to it (its CONNECT would be out of place: the soliciting side sends it). */
  get didSolicit(): boolean {
    return this.solicit !== undefined
  }
  /** RS+/LS+ once the handshake is done. */
  protected abstract interestIn(i: PeerInterest): void
  /** RS-/LS- once the handshake is done. */
  protected abstract interestOut(i: PeerInterest): void
  /** A message once the handshake is done (counted already): its account and permissions, then `publish`. */
  protected abstract messageIn(m: PeerMsg, size: number): void

  constructor(
    account: Account,
    readonly host: ClusterHost,
    /** A route or a leaf connection (what the MQTT retained sync tells apart, without loading either). */
    readonly proto: PeerKind,
    handshakeTimeoutMs: number,
    now: number
  ) {
    super(account, now, host.options.pingIntervalMs)
    const o = host.options
    this.out = new OutBuf(4096, host.slabs)
    this.parser = new PeerParser(proto, this, { maxControlLine: o.maxControlLine, maxPayload: o.maxPayload })
    this.handshakeDeadline = now + handshakeTimeoutMs
    this.tracing = host.log.traceEnabled
  }

  protected get outbound(): Outbound {
    return this.host.outbound
  }

  logName(): string {
    return this.logPrefix()
  }

  /** Counted by its owner (/varz slow consumers per kind); what is queued is dropped and it is closed. */
  protected abstract countSlowConsumer(): void

  cutOff(reason: SlowConsumer): void {
    this.countSlowConsumer()
    this.out.clear()
    this.close(reason as string as Reason, ErrText.SlowConsumer)
  }

  /** Once registered: the write deadline and the pings (a peer that stopped answering is closed); returns when next due. */
  protected liveness(now: number): number {
    const host = this.host
    const w = host.outbound.writeDeadline(this, now)
    if (this.closed) return Infinity
    const o = host.options
    if (now >= this.nextPingAt) {
      this.nextPingAt = now + o.pingIntervalMs
      if (this.pingsOut + 1 > o.pingMax) {
        host.log.debug(`${this.logPrefix()} - Stale ${this.word} Connection - Closing`)
        this.close(ClosedReason.StaleConnection as string as Reason, ErrText.StaleConnection)
        return Infinity
      }
      this.pingsOut++
      this.sendPing()
    }
    return Math.min(w, this.nextPingAt)
  }

  // ---- PeerOpHandler: what both protocols share ----

  /** An op that needs the handshake done: before it, the connection is closed. */
  private ready(): boolean {
    if (this.closed) return false
    if (this.registered) return true
    this.close(ClosedReason.ProtocolViolation as string as Reason)
    return false
  }

  /** The other side's CONNECT, decoded and traced (credentials redacted); undefined when it is refused (closed). */
  protected acceptConnect<C extends { readonly pass?: string }>(json: string, decode: (json: string) => Either.Either<C, HandshakeError>): C | undefined {
    if (this.closed) return undefined
    if (this.didSolicit || this.connectReceived) {
      this.close(ClosedReason.ProtocolViolation as string as Reason, ErrText.UnknownOp)
      return undefined
    }
    const decoded = decode(json)
    if (Either.isLeft(decoded)) {
      if (this.tracing) this.traceIn("CONNECT", "<unparseable>")
      this.close(ClosedReason.ParseError as string as Reason, ErrText.InvalidConnect)
      return undefined
    }
    const c = decoded.right
    if (this.tracing) {
      this.traceIn("CONNECT", JSON.stringify({ ...c, pass: c.pass === undefined ? undefined : "[REDACTED]", auth_token: undefined, sig: undefined, jwt: undefined }))
    }
    return c
  }

  sub(i: PeerInterest): void {
    if (!this.ready()) return
    if (this.tracing) this.traceInterest(i.fromLeaf || this.proto === "leaf" ? "LS+" : "RS+", i, true)
    this.interestIn(i)
  }

  unsub(i: PeerInterest): void {
    if (!this.ready()) return
    if (this.tracing) this.traceInterest(i.fromLeaf || this.proto === "leaf" ? "LS-" : "RS-", i, false)
    this.interestOut(i)
  }

  msg(m: PeerMsg): void {
    if (!this.ready()) return
    const size = m.end - m.start
    if (this.tracing) this.traceIn(m.hdrLen >= 0 ? "HMSG" : this.msgOp, `${m.account === "" ? "" : `${m.account} `}${m.subject}${m.reply === "" ? "" : ` ${m.reply}`} ${size}`)
    this.inMsgs++
    this.inBytes += size
    this.host.inMsgs++
    this.host.inBytes += size
    this.messageIn(m, size)
  }

  /** `m` routed on this server, as published by this connection in its (current) account. */
  protected publish(m: PeerMsg): void {
    const router = this.host.router
    const d = router.message(this, this.lastActivity)
    d.subject = m.subject
    d.reply = m.reply
    d.hdrLen = m.hdrLen
    d.buf = m.buf
    d.start = m.start
    d.end = m.end
    // The other server picked this one for these queue groups (none: plain subscribers only).
    d.origin.queues = m.queues
    d.origin.cluster = this.originOf(m)
    // Published over MQTT at QoS 1/2 (on whichever server): delivered to MQTT subscribers at
    // it; with RETAIN (a Switchyard server's mark): RETAIN=1 for Retain As Published.
    if (m.hdrLen > 0) {
      const marks = mqttMarksOf(m.buf, m.start, m.start + m.hdrLen)
      if (marks !== 0) {
        d.origin.qos = marks & 3
        d.origin.retain = (marks & MARK_RETAIN) !== 0
      }
    }
    // `$JS.ACK.…@<subject>`: a stream consumer's delivery to the subscribers of the message's
    // subject (an inbox, a deliver subject), showing them the subject after the last `@`
    // (any other reply, `@` or not, is a reply like any other).
    const at = jsDeliveryAt(m.reply)
    if (at >= 0) {
      d.subject = m.reply.slice(at + 1)
      d.reply = m.reply.slice(0, at)
      router.deliverTo(m.subject, d)
      return
    }
    // A QoS 1/2 message is stored for persistent MQTT sessions here, as one published here is.
    const held = d.origin.qos > 0 ? router.durable : undefined
    if (held === undefined) {
      router.route(d)
      return
    }
    held.hold(d)
    router.route(d)
    held.release(d)
  }

  private traceInterest(op: string, i: PeerInterest, weight: boolean): void {
    const q = i.queue === "" ? "" : weight ? ` ${i.queue} ${i.weight}` : ` ${i.queue}`
    this.traceIn(op, `${i.account === "" ? "" : `${i.account} `}${i.subject}${q}`)
  }

  ping(): void {
    if (this.closed) return
    if (this.tracing) this.traceIn("PING", "")
    this.out.writeBytes(PONG, 0, PONG.length)
    this.host.outbound.markDirty(this)
  }

  pong(): void {
    if (this.tracing) this.traceIn("PONG", "")
    this.pingsOut = 0
    if (this.rttPingSentAt >= 0) {
      this.rttNs = Math.max(0, this.host.env.nanos() - this.rttPingSentAt)
      this.rttPingSentAt = -1
    }
  }

  protocolError(error: ParseError): void {
    this.host.log.error(`${this.logPrefix()} - ${this.word} parser ERROR ${error.kind}: ${error.detail}`)
    switch (error.kind) {
      case "MaxControlLine":
        this.close(ClosedReason.MaxControlLineExceeded as string as Reason, ErrText.MaxControlLine)
        break
      case "MaxPayload":
        this.close(ClosedReason.MaxPayloadExceeded as string as Reason, ErrText.MaxPayload)
        break
      default:
        this.close(this.parseErrorReason, ErrText.UnknownOp)
    }
  }

  // ---- what its owner sends through it ----

  /** Links take no subscriptions of their own: the other server's interest lives in its owner's table. */
  deliver(): boolean {
    return false
  }

  /** The leaf cluster a received message entered through ("" for none). */
  protected abstract originOf(m: PeerMsg): string
  /** The leaf cluster a forwarded message is said to come from on this connection ("": none). */
  protected abstract originTo(d: Delivery): string
  /** A message this connection must not take (it came from the other side's own leaf cluster). */
  protected refuses(_d: Delivery): boolean {
    return false
  }

  /** A message went out to it (`size` bytes): counted where its kind counts (a leaf connection's account). */
  protected countOut(_size: number): void {}

  /** `d` once, in `account`, naming the `nq` queue groups picked for the other server (`queueSlots`). False when it could not go. */
  sendMsg(d: Delivery, account: string): boolean {
    // Switchyard's own subjects leave only through sendOwn, whatever routed one here (a
    // stream consumer's deliver subject, say): the other server would take it as ours.
    if (this.refuses(d) || isOwnSubject(d.subject)) return false
    let h = d.hdrLen
    let from = d.start
    let buf = d.buf
    let end = d.end
    if (h >= 0 && !this.peerHeaders) {
      from += h
      h = -1
    }
    if (end - from - (h > 0 ? h : 0) > this.peerMaxPayload) return false
    // An MQTT QoS 1/2 publication says its QoS to the other server, one with RETAIN says so
    // (a copy with the headers).
    const qos = d.origin.qos
    if ((qos > 0 || d.origin.retain) && this.peerHeaders) {
      const marked = withMqttMarks(buf, from, h, end, qos as 0 | 1 | 2, d.origin.retain)
      if (marked !== undefined) {
        buf = marked.buf
        from = 0
        end = marked.buf.length
        h = marked.hdrLen
      }
    }
    const size = end - from
    const m = this.outMsg
    m.account = account
    m.subject = d.subject
    m.reply = d.reply
    const q = m.queues
    const nq = this.nq
    // Writing an array's length costs a runtime call even when it does not change (0 mostly).
    if (q.length !== nq) q.length = nq
    for (let i = 0; i < nq; i++) q[i] = this.queueSlots[i]
    m.hdrLen = h
    m.buf = buf
    m.start = from
    m.end = end
    m.origin = this.originTo(d)
    this.writeMsgOp(this.out, m)
    m.buf = EMPTY
    if (this.tracing) this.traceOut(`${m.origin !== "" ? `LMSG ${m.origin}` : h >= 0 ? "HMSG" : this.msgOp} ${account === "" ? "" : `${account} `}${d.subject} ${size}`)
    this.outMsgs++
    this.outBytes += size
    const host = this.host
    host.outMsgs++
    host.outBytes += size
    this.countOut(size)
    host.outbound.queued(this)
    return true
  }

  /**
   * A message of this server's own to the other server (`isOwnSubject`), in `account`,
   * outside the router: no subscription draws it and no client sees it. False when it is
   * over the peer's max_payload.
   */
  sendOwn(account: string, subject: string, body: Buffer): boolean {
    if (body.length > this.peerMaxPayload || this.closed) return false
    const m = this.outMsg
    m.account = account
    m.subject = subject
    m.reply = ""
    m.queues.length = 0
    m.hdrLen = -1
    m.buf = body
    m.start = 0
    m.end = body.length
    m.origin = ""
    this.writeMsgOp(this.out, m)
    m.buf = EMPTY
    if (this.tracing) this.traceOut(`${this.msgOp} ${account === "" ? "" : `${account} `}${subject} ${body.length}`)
    this.outMsgs++
    this.outBytes += body.length
    this.host.outMsgs++
    this.host.outBytes += body.length
    this.host.outbound.queued(this)
    return true
  }

  sendErr(text: string): void {
    if (this.tracing) this.traceOut(`-ERR '${text}'`)
    writeErr(this.out, text)
    this.host.outbound.markDirty(this)
  }

  sendPing(): void {
    if (this.tracing) this.traceOut("PING")
    this.out.writeBytes(PING, 0, PING.length)
    if (this.rttPingSentAt < 0) this.rttPingSentAt = this.host.env.nanos()
    this.host.outbound.markDirty(this)
  }

  /** A prepared line (an INFO) as is. */
  writeRaw(line: Buffer): void {
    this.out.writeBytes(line, 0, line.length)
    if (this.tracing) this.traceOut(line.toString("utf8", 0, Math.max(0, Math.min(line.length - 2, 1024))))
    this.host.outbound.markDirty(this)
  }

  // ---- logs ----

  traceIn(op: string, args: string): void {
    this.host.log.trace(`${this.logPrefix()} - <<- [${op}${args === "" ? "" : ` ${args.slice(0, 1024)}`}]`)
  }

  traceOut(op: string): void {
    this.host.log.trace(`${this.logPrefix()} - ->> [${op.slice(0, 1024)}]`)
  }
}
