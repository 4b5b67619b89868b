// A NATS client connection as a protocol driver: it turns parsed ops into engine calls
// (publish through the Router, subscribe in its account), writes replies and deliveries
// into its outbound buffer, keeps its own timers (auth timeout, first RTT, pings), and
// closes itself when the protocol says so, reporting that to its door. It never touches
// the server object; the engine's Outbound writes `out` once per event-loop turn.
import type { ServerOptions } from "../../config/options.js"
import type { ConnSnapshot } from "../../core/monitor/source.js"
import { noRespondersHmsg, OK, PING, PONG, writeErr, writeMsg } from "../../core/nats/encode.js"
import { OutBuf, type SlabPool } from "../../core/outbuf.js"
import { NatsParser, type NatsOpHandler, type ParseError } from "../../core/nats/parser.js"
import { isOwnSubject } from "../../core/cluster/own-subjects.js"
import { isValidLiteralSubject, isValidQueueName, isValidSubject } from "../../core/subject/subject.js"
import { ClientPermissions, publishViolation, subscribeViolation } from "../../engine/permissions.js"
import { NATS_POLICY, type Outbound, type SlowConsumer } from "../../engine/outbound.js"
import { Connection } from "../connection.js"
import { type Account, type Delivery, Subscription } from "../../engine/principal.js"
import type { Router } from "../../engine/router.js"
import type { LogService } from "../../services/log.js"
import type { Conn } from "../../services/transport.js"
import type { Authenticator } from "./auth.js"
import { ClosedReason, ErrText } from "../reasons.js"
import { type ConnectOptions, parseConnect, redactConnect } from "./connect.js"

/**
 * What NATS clients share and where they report: the engine, the rules in force (a
 * reload replaces them), the totals they count in, and the one event the owner of the
 * connections must hear, that a client is gone.
 */
export interface ClientDoor {
  readonly router: Router
  /** Where its output goes: one write per turn, max_pending and write_deadline. */
  readonly outbound: Outbound
  readonly env: {
    readonly now: () => number
    /** High-resolution clock in nanoseconds (round-trip times). */
    readonly nanos: () => number
    /** Ask the shell to run the timers no later than `at`. */
    readonly wakeAt?: (at: number) => void
  }
  readonly log: LogService
  readonly options: ServerOptions
  readonly auth: Authenticator
  readonly authRequired: boolean
  readonly headersSupported: boolean
  readonly slabs: SlabPool
  // Totals for /varz.
  inMsgs: number
  inBytes: number
  outMsgs: number
  outBytes: number
  staleConnections: number
  /** The client is closed (by either side), its subscriptions still listed: the last thing it reports. */
  clientClosed(c: Client, reason: ClosedReason): void
}

/** How long a client has to CONNECT when authentication is required. */
export const authTimeoutMs = (o: ServerOptions): number => o.authorization?.timeoutMs ?? o.authTimeoutMs

/**
 * The first round-trip measurement. Clients read the answer to their handshake
 * (`CONNECT` + `PING`) expecting `+OK` or `PONG` first, and some (libnats) drop whatever
 * else arrives in the same read, so the server's RTT PING never precedes or shares a
 * write with that PONG: it goes out with the first chunk the client sends after the
 * handshake (by then the client is reading normally), or at the first timer tick
 * `FIRST_RTT_DELAY_MS` after the handshake (after CONNECT when the client sends no
 * PING), whichever comes first. Only clients announcing protocol 1 or later get it.
 */
export const FirstRtt = {
  /** Not connected yet, or protocol 0: the regular ping timer measures RTT. */
  None: 0,
  /** CONNECT processed, waiting for the handshake PING. */
  Connected: 1,
  /** The handshake PONG is out; the RTT PING follows the client's next chunk or the delay. */
  Handshaken: 2,
  Sent: 3
} as const
export type FirstRtt = typeof FirstRtt[keyof typeof FirstRtt]

/** How long after the handshake the first RTT PING goes out at the latest (nats-server's first client ping: 2s). */
export const FIRST_RTT_DELAY_MS = 1_000

export class Client extends Connection<ClosedReason> implements NatsOpHandler {
  readonly kind = "Client"
  readonly policy = NATS_POLICY
  readonly type = "nats"
  readonly parser: NatsParser
  readonly out: OutBuf

  // From CONNECT (echo, headers and no_responders are the Principal's).
  connectReceived = false
  verbose = false
  pedantic = false
  name = ""
  lang = ""
  version = ""
  /** The nonce sent in INFO for nkey users to sign. */
  nonce: string | undefined = undefined
  /**
   * The CONNECT it authenticated with, kept (never logged, never shown) so a
   * configuration reload can check it against the new users, as nats-server does.
   */
  connectOpts: ConnectOptions | undefined = undefined

  /** Where the first RTT measurement stands (see `FirstRtt`). */
  firstRtt: FirstRtt = FirstRtt.None
  /** When (milliseconds) the first RTT PING is due at the latest, while `firstRtt` is Connected or Handshaken. */
  firstRttDueAt = 0
  authDeadline = 0

  /** The last PUB subject that passed validation. */
  private lastValidSubject = ""
  /** Protocol tracing (-V): checked once per op, so tracing off costs one branch. A reload may turn it on or off. */
  tracing: boolean

  constructor(
    readonly door: ClientDoor,
    readonly cid: number,
    readonly conn: Conn,
    account: Account,
    now: number
  ) {
    super(account, now, door.options.pingIntervalMs)
    const o = door.options
    account.numConnections++
    this.out = new OutBuf(512, door.slabs)
    this.parser = new NatsParser(this, { maxControlLine: o.maxControlLine, maxPayload: o.maxPayload })
    this.tracing = door.log.traceEnabled
    if (door.authRequired) this.authDeadline = now + authTimeoutMs(o)
  }

  // ---- the socket side (receive, lost, close: Connection) ----

  protected get outbound(): Outbound {
    return this.door.outbound
  }

  /** A chunk's first op may follow the handshake: the RTT PING goes first (see `FirstRtt`). */
  protected override beforeFeed(): void {
    if (this.firstRtt === FirstRtt.Handshaken) this.sendFirstRttPing()
  }

  /** Reported first (the closed record lists the subscriptions), then out of the engine. */
  protected finish(reason: ClosedReason): void {
    this.door.clientClosed(this, reason)
    this.removeAllSubs()
    this.out.clear()
    this.account.numConnections--
  }

  logName(): string {
    return this.logPrefix()
  }

  /** Cut off as a slow consumer: what is queued for it is dropped; it is told why and closed. */
  cutOff(reason: SlowConsumer): void {
    this.out.clear()
    this.close(reason, ErrText.SlowConsumer)
  }

  /** Bound to the account its credentials name. */
  private bindAccount(acc: Account): void {
    if (this.account === acc) return
    this.account.numConnections--
    acc.numConnections++
    this.account = acc
  }

  // ---- timers: the server runs them when a deadline asked for is due ----

  /** The CONNECT deadline: closes the client once it passed; returns when it is due (Infinity: none). */
  authTimer(now: number): number {
    if (this.authDeadline <= 0 || this.connectReceived) return Infinity
    if (now < this.authDeadline) return this.authDeadline
    this.close(ClosedReason.AuthenticationTimeout, ErrText.AuthenticationTimeout)
    return Infinity
  }

  /** The first RTT PING and the ping interval (a stale client is closed); returns when they are next due. */
  liveness(now: number): number {
    const o = this.door.options
    let next = Infinity
    if (this.firstRtt === FirstRtt.Connected || this.firstRtt === FirstRtt.Handshaken) {
      if (now >= this.firstRttDueAt) this.sendFirstRttPing()
      else next = this.firstRttDueAt
    }
    if (now >= this.nextPingAt) {
      this.nextPingAt = now + o.pingIntervalMs
      if (this.pingsOut + 1 > o.pingMax) {
        this.door.staleConnections++
        this.door.log.debug(`${this.logPrefix()} - Stale Client Connection - Closing`)
        this.close(ClosedReason.StaleConnection, ErrText.StaleConnection)
        return Infinity
      }
      this.pingsOut++
      this.sendPing(false)
    }
    return Math.min(next, this.nextPingAt)
  }

  /** The configuration in force changed (a reload): tracing, parser limits and deadlines follow it. */
  reconfigure(now: number, parsersChanged: boolean): void {
    const o = this.door.options
    this.tracing = this.door.log.traceEnabled
    if (parsersChanged) this.parser.setLimits({ maxControlLine: o.maxControlLine, maxPayload: o.maxPayload })
    // A shorter ping interval takes effect now, not after the old one ran out.
    if (this.nextPingAt > now + o.pingIntervalMs) this.nextPingAt = now + o.pingIntervalMs
    if (this.authDeadline > 0 && !this.connectReceived) this.authDeadline = Math.min(this.authDeadline, this.start + authTimeoutMs(o))
  }

  // ---- NatsOpHandler: called synchronously by the parser ----

  connect(json: string): void {
    if (this.closed) return
    const opts = parseConnect(json)
    if (opts === undefined) {
      if (this.tracing) this.traceIn("CONNECT", "<unparseable>")
      this.close(ClosedReason.ParseError, ErrText.InvalidConnect)
      return
    }
    if (this.tracing) this.traceIn("CONNECT", JSON.stringify(redactConnect(opts)))
    const door = this.door
    this.verbose = opts.verbose === true
    this.pedantic = opts.pedantic === true
    this.echo = opts.echo !== false
    this.headers = opts.headers === true && door.headersSupported
    this.noResponders = opts.no_responders === true
    this.connectOpts = opts
    this.name = typeof opts.name === "string" ? opts.name : ""
    this.lang = typeof opts.lang === "string" ? opts.lang : ""
    this.version = typeof opts.version === "string" ? opts.version : ""
    if (this.noResponders && !this.headers) {
      this.close(ClosedReason.NoRespondersRequiresHeaders, ErrText.NoRespondersRequiresHeaders)
      return
    }
    if (door.authRequired && !this.connectReceived) {
      const res = door.auth.authenticate(opts, this.nonce)
      if (res === undefined) {
        door.log.warn(`${this.logPrefix()} - ${opts.user !== undefined ? `User "${opts.user}"` : "Client"} authentication failed`)
        this.close(ClosedReason.AuthenticationViolation, ErrText.AuthorizationViolation)
        return
      }
      this.bindAccount(door.router.account(res.account))
      this.user = res.user
      this.perms = res.permissions !== undefined ? new ClientPermissions(res.permissions) : undefined
    }
    this.connectReceived = true
    this.authDeadline = 0
    if (this.verbose) this.sendOk()
    // The first RTT PING waits until the client is past its handshake (see FirstRtt).
    if (this.firstRtt === FirstRtt.None && typeof opts.protocol === "number" && opts.protocol >= 1) {
      this.firstRtt = FirstRtt.Connected
      this.firstRttDueAt = door.env.now() + FIRST_RTT_DELAY_MS
      door.env.wakeAt?.(this.firstRttDueAt)
    }
  }

  pub(subject: string, reply: string, hdrLen: number, buf: Buffer, start: number, end: number): void {
    if (this.closed) return
    const door = this.door
    if (!this.connectReceived && door.authRequired) {
      this.close(ClosedReason.AuthenticationViolation, ErrText.AuthorizationViolation)
      return
    }
    const size = end - start
    if (this.tracing) this.traceIn(hdrLen >= 0 ? "HPUB" : "PUB", `${subject}${reply === "" ? "" : ` ${reply}`} ${hdrLen >= 0 ? `${hdrLen} ` : ""}${size}`)
    // Counted at every level before any check, as nats-server does, so /connz adds up to /varz.
    this.inMsgs++
    this.inBytes += size
    this.account.inMsgs++
    this.account.inBytes += size
    door.inMsgs++
    door.inBytes += size
    if (hdrLen >= 0 && !door.headersSupported) {
      this.close(ClosedReason.MsgHeaderViolation, ErrText.HeadersNotSupported)
      return
    }
    // Only pedantic clients get their publish subjects checked, as in nats-server: the
    // JetStream API itself publishes wildcard tokens (CONSUMER.CREATE.<s>.<c>.<filter>).
    // Publishers repeat their subjects (and the parser hands back the same string), so
    // the last subject found valid is remembered and a repeat skips the scan.
    if (this.pedantic && subject !== this.lastValidSubject) {
      if (!isValidLiteralSubject(subject)) {
        this.sendErr(ErrText.InvalidPublishSubject)
        return
      }
      this.lastValidSubject = subject
    }
    if (reply !== "" && this.pedantic && !isValidLiteralSubject(reply)) {
      this.sendErr(ErrText.InvalidPublishSubject)
      return
    }
    // A client never speaks on the servers' own subjects (it could forge what only a server says).
    if ((this.perms !== undefined && !this.perms.canPublish(subject, door.env)) || isOwnSubject(subject)) {
      door.log.error(`${this.logPrefix()} - Publish Violation - User "${this.user}", Subject "${subject}"`)
      this.sendErr(publishViolation(subject))
      return
    }
    // The message travels in the router's record, stamped with this chunk's clock reading.
    const router = door.router
    const d = router.message(this, this.lastActivity)
    d.subject = subject
    d.reply = reply
    d.hdrLen = hdrLen
    d.buf = buf
    d.start = start
    d.end = end
    router.route(d)
    if (this.verbose) this.sendOk()
  }

  sub(subject: string, queue: string, sid: string): void {
    if (this.closed) return
    const door = this.door
    if (!this.connectReceived && door.authRequired) {
      this.close(ClosedReason.AuthenticationViolation, ErrText.AuthorizationViolation)
      return
    }
    if (this.tracing) this.traceIn("SUB", `${subject}${queue === "" ? "" : ` ${queue}`} ${sid}`)
    if (!isValidSubject(subject)) {
      this.sendErr(ErrText.InvalidSubject)
      return
    }
    if (queue !== "" && !isValidQueueName(queue)) {
      this.sendErr(ErrText.InvalidQueue)
      return
    }
    if (this.perms !== undefined && !this.perms.canSubscribe(subject, queue)) {
      door.log.error(`${this.logPrefix()} - Subscription Violation - User "${this.user}", Subject "${subject}"`)
      this.sendErr(subscribeViolation(subject, queue))
      return
    }
    // A repeated SID is accepted and ignored, as nats-server does.
    if (!this.subs.has(sid)) {
      const max = door.options.maxSubscriptions
      if (max > 0 && this.subs.size >= max) {
        this.sendErr(ErrText.MaxSubscriptions)
        return
      }
      this.addSub(new Subscription(this, subject, queue === "" ? undefined : queue, sid))
    }
    if (this.verbose) this.sendOk()
  }

  unsub(sid: string, max: number): void {
    if (this.closed) return
    if (!this.connectReceived && this.door.authRequired) {
      this.close(ClosedReason.AuthenticationViolation, ErrText.AuthorizationViolation)
      return
    }
    if (this.tracing) this.traceIn("UNSUB", max >= 0 ? `${sid} ${max}` : sid)
    const s = this.subs.get(sid)
    if (s !== undefined) {
      if (max > 0 && s.delivered < max) s.max = max
      else this.removeSub(s)
    }
    if (this.verbose) this.sendOk()
  }

  ping(): void {
    if (this.closed) return
    if (this.tracing) {
      this.traceIn("PING", "")
      this.traceOut("PONG")
    }
    this.out.writeBytes(PONG, 0, PONG.length)
    this.door.outbound.markDirty(this)
    // The PONG that ends the client's handshake: the RTT PING may follow once the client
    // is past reading it (see `FirstRtt`).
    if (this.firstRtt === FirstRtt.Connected) {
      this.firstRtt = FirstRtt.Handshaken
      this.firstRttDueAt = this.door.env.now() + FIRST_RTT_DELAY_MS
      this.door.env.wakeAt?.(this.firstRttDueAt)
    }
  }

  pong(): void {
    if (this.tracing) this.traceIn("PONG", "")
    this.pingsOut = 0
    if (this.rttPingSentAt >= 0) {
      this.rttNs = Math.max(0, this.door.env.nanos() - this.rttPingSentAt)
      this.rttPingSentAt = -1
    }
  }

  info(_json: string): void {
    // Clients have no business sending INFO; nats-server ignores it from clients.
  }

  ok(): void {}

  err(message: string): void {
    this.door.log.debug(`${this.logPrefix()} - Client sent -ERR ${truncate(message, 128)}`)
  }

  protocolError(error: ParseError): void {
    this.door.log.debug(`${this.logPrefix()} - Client parser error: ${error.kind} ${error.detail}`)
    switch (error.kind) {
      case "MaxControlLine":
        this.close(ClosedReason.MaxControlLineExceeded, ErrText.MaxControlLine)
        break
      case "MaxPayload":
        this.close(ClosedReason.MaxPayloadExceeded, ErrText.MaxPayload)
        break
      default:
        this.close(ClosedReason.ParseError, ErrText.UnknownOp)
    }
  }

  // ---- Principal: what the router hands this client ----

  /** One MSG/HMSG into the outbound buffer. */
  deliver(s: Subscription, d: Delivery): boolean {
    let h = d.hdrLen
    let from = d.start
    const end = d.end
    if (h >= 0 && !this.headers) {
      // A client that did not announce header support gets the payload alone.
      from += h
      h = -1
    }
    writeMsg(this.out, d.subject, s.sid, d.reply, h, d.buf, from, end)
    const size = end - from
    if (this.tracing) this.traceMsg(d.subject, s.sid, d.reply, h, size)
    const door = this.door
    this.outMsgs++
    this.outBytes += size
    door.outMsgs++
    door.outBytes += size
    this.account.outMsgs++
    this.account.outBytes += size
    s.delivered++
    if (s.max > 0 && s.delivered >= s.max) this.removeSub(s)
    door.outbound.queued(this)
    return true
  }

  /** The 503 status of a request that reached nobody, on the client's subscription to its reply subject. */
  override sendNoResponders(s: Subscription, reply: string): void {
    noRespondersHmsg(this.out, reply, s.sid)
    if (this.tracing) this.door.log.trace(`${this.logPrefix()} - ->> [HMSG ${reply} ${s.sid} (503 No Responders)]`)
    this.door.outbound.markDirty(this)
  }

  // ---- helpers ----

  sendOk(): void {
    if (this.tracing) this.traceOut("OK")
    this.out.writeBytes(OK, 0, OK.length)
    this.door.outbound.markDirty(this)
  }

  sendErr(text: string): void {
    if (this.tracing) this.traceOut(`-ERR '${text}'`)
    writeErr(this.out, text)
    this.door.outbound.markDirty(this)
  }

  sendPing(forRtt: boolean): void {
    if (this.tracing) this.traceOut("PING")
    this.out.writeBytes(PING, 0, PING.length)
    if (forRtt || this.rttPingSentAt < 0) this.rttPingSentAt = this.door.env.nanos()
    this.door.outbound.markDirty(this)
  }

  /** Send the first RTT PING now (it does not count as an unanswered liveness PING). */
  sendFirstRttPing(): void {
    this.firstRtt = FirstRtt.Sent
    this.sendPing(true)
  }

  /** Trace an inbound op, nats-server style: `<<- [PUB foo 5]`. */
  traceIn(op: string, args: string): void {
    this.door.log.trace(`${this.logPrefix()} - <<- [${op}${args === "" ? "" : ` ${truncate(args, 1024)}`}]`)
  }

  /** Trace an outbound op, nats-server style: `->> [PONG]`. */
  traceOut(op: string): void {
    this.door.log.trace(`${this.logPrefix()} - ->> [${truncate(op, 1024)}]`)
  }

  /** Trace a delivered message by its protocol line, never its payload: `->> [MSG foo 1 5]`, `->> [HMSG foo 1 22 27]`. */
  traceMsg(subject: string, sid: string, reply: string, hdrLen: number, size: number): void {
    const r = reply === "" ? "" : ` ${reply}`
    this.traceOut(hdrLen >= 0 ? `HMSG ${subject} ${sid}${r} ${hdrLen} ${size}` : `MSG ${subject} ${sid}${r} ${size}`)
  }

  /** What /connz shows of this connection now (and, with stop and reason, after it closed). */
  snapshot(): ConnSnapshot {
    return {
      cid: this.cid,
      kind: this.kind,
      type: this.type,
      ...this.traffic(),
      subs: [...this.subs.values()].map((s) => ({ subject: s.subject, queue: s.queue, sid: s.sid, msgs: s.delivered, max: s.max })),
      name: this.name,
      lang: this.lang,
      version: this.version,
      tlsVersion: this.conn.tls?.version,
      tlsCipher: this.conn.tls?.cipher,
      user: this.user === "" ? undefined : this.user,
      account: this.account.name,
      mqttClient: undefined
    }
  }

  logPrefix(): string {
    return `${this.conn.remoteAddress}:${this.conn.remotePort} - cid:${this.cid}`
  }
}

const truncate = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}…` : s)
