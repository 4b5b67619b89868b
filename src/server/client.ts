// A client connection: the protocol state of one NATS client and its counters. It turns
// parsed ops into routing calls on the server and writes replies into its outbound
// buffer; it never touches a socket (the server flushes `out` once per event-loop turn).
import { NatsParser, type NatsOpHandler, type ParseError } from "../core/nats/parser.js"
import { OutBuf } from "../core/nats/outbuf.js"
import { noRespondersHmsg, OK, PING, PONG, writeErr, writeMsg } from "../core/nats/encode.js"
import { isValidLiteralSubject, isValidQueueName, isValidSubject } from "../core/subject/subject.js"
import type { ConnSnapshot } from "../core/monitor/source.js"
import type { Conn } from "../services/transport.js"
import { publishViolation, subscribeViolation } from "../engine/permissions.js"
import { type Account, type Delivery, Principal, Subscription } from "../engine/principal.js"
import { ClosedReason, ErrText } from "./reasons.js"
import type { Server } from "./server.js"

/** The CONNECT fields the server reads (clients send more; the rest is ignored). */
export interface ConnectOptions {
  readonly verbose?: boolean
  readonly pedantic?: boolean
  readonly tls_required?: boolean
  readonly echo?: boolean
  readonly headers?: boolean
  readonly no_responders?: boolean
  readonly name?: string
  readonly lang?: string
  readonly version?: string
  readonly protocol?: number
  readonly user?: string
  readonly pass?: string
  readonly auth_token?: string
  readonly nkey?: string
  readonly sig?: string
  readonly jwt?: string
}

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

export class Client extends Principal implements NatsOpHandler {
  readonly kind = "Client"
  readonly type = "nats"
  private parserValue: NatsParser | undefined
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

  // Counters for /connz and /varz.
  inMsgs = 0
  inBytes = 0
  outMsgs = 0
  outBytes = 0
  readonly start: number
  lastActivity: number
  /** Round-trip time of the last server PING, nanoseconds; 0 until measured. */
  rttNs = 0

  // Liveness.
  pingsOut = 0
  nextPingAt: number
  /** When (high-resolution nanoseconds) an RTT-measuring PING was sent; -1 when none is outstanding. */
  rttPingSentAt = -1
  /** Where the first RTT measurement stands (see `FirstRtt`). */
  firstRtt: FirstRtt = FirstRtt.None
  /** When (milliseconds) the first RTT PING is due at the latest, while `firstRtt` is Connected or Handshaken. */
  firstRttDueAt = 0
  authDeadline = 0

  // Write side.
  /** Bytes queued in the transport at the last flush (refreshed on drain). */
  transportPending = 0
  /** When the transport last held unsent bytes without progress; -1 when drained. */
  blockedSince = -1
  dirty = false
  /** The last PUB subject that passed validation. */
  private lastValidSubject = ""
  /** Protocol tracing (-V): checked once per op, so tracing off costs one branch. A reload may turn it on or off. */
  tracing: boolean

  constructor(
    readonly server: Server,
    readonly cid: number,
    readonly conn: Conn,
    account: Account,
    now: number
  ) {
    super(account)
    const o = server.options
    this.out = new OutBuf(512, server.slabs)
    this.start = now
    this.tracing = server.log.traceEnabled
    this.lastActivity = now
    this.nextPingAt = now + o.pingIntervalMs
  }

  /** The protocol parser, made on first use: the server's internal clients (MQTT connections, stream API) never parse. */
  get parser(): NatsParser {
    return this.parserValue ?? this.makeParser()
  }

  /** New max_control_line / max_payload (a configuration reload). */
  setParserLimits(limits: { readonly maxControlLine: number; readonly maxPayload: number }): void {
    this.parserValue?.setLimits(limits)
  }

  private makeParser(): NatsParser {
    const o = this.server.options
    this.parserValue = new NatsParser(this, { maxControlLine: o.maxControlLine, maxPayload: o.maxPayload })
    return this.parserValue
  }

  /** Outbound bytes not yet on the wire: our buffer plus what the transport still holds. */
  get pendingBytes(): number {
    return this.out.length + this.transportPending
  }

  // ---- NatsOpHandler: called synchronously by the parser ----

  connect(json: string): void {
    if (this.closed) return
    let opts: ConnectOptions
    try {
      const parsed: unknown = JSON.parse(json)
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not an object")
      opts = parsed as ConnectOptions
    } catch {
      if (this.tracing) this.traceIn("CONNECT", "<unparseable>")
      this.server.closeClient(this, ClosedReason.ParseError, ErrText.InvalidConnect)
      return
    }
    if (this.tracing) this.traceIn("CONNECT", JSON.stringify(redactConnect(opts)))
    this.server.processConnect(this, opts)
  }

  pub(subject: string, reply: string, hdrLen: number, buf: Buffer, start: number, end: number): void {
    if (this.closed) return
    const server = this.server
    if (!this.connectReceived && server.authRequired) {
      server.closeClient(this, ClosedReason.AuthenticationViolation, ErrText.AuthorizationViolation)
      return
    }
    const size = end - start
    if (this.tracing) this.traceIn(hdrLen >= 0 ? "HPUB" : "PUB", `${subject}${reply === "" ? "" : ` ${reply}`} ${hdrLen >= 0 ? `${hdrLen} ` : ""}${size}`)
    // Counted at every level before any check, as nats-server does, so /connz adds up to /varz.
    this.inMsgs++
    this.inBytes += size
    this.account.inMsgs++
    this.account.inBytes += size
    server.inMsgs++
    server.inBytes += size
    if (hdrLen >= 0 && !server.headersSupported) {
      server.closeClient(this, ClosedReason.MsgHeaderViolation, ErrText.HeadersNotSupported)
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
    if (this.perms !== undefined && !this.perms.canPublish(subject, server)) {
      server.log.error(`${this.logPrefix()} - Publish Violation - User "${this.user}", Subject "${subject}"`)
      this.sendErr(publishViolation(subject))
      return
    }
    const router = server.router
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
    const server = this.server
    if (!this.connectReceived && server.authRequired) {
      server.closeClient(this, ClosedReason.AuthenticationViolation, ErrText.AuthorizationViolation)
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
      server.log.error(`${this.logPrefix()} - Subscription Violation - User "${this.user}", Subject "${subject}"`)
      this.sendErr(subscribeViolation(subject, queue))
      return
    }
    // A repeated SID is accepted and ignored, as nats-server does.
    if (!this.subs.has(sid)) {
      const max = server.options.maxSubscriptions
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
    const server = this.server
    if (!this.connectReceived && server.authRequired) {
      server.closeClient(this, ClosedReason.AuthenticationViolation, ErrText.AuthorizationViolation)
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
    this.server.markDirty(this)
    // The PONG that ends the client's handshake: the RTT PING may follow once the client
    // is past reading it (see `FirstRtt`).
    if (this.firstRtt === FirstRtt.Connected) {
      this.firstRtt = FirstRtt.Handshaken
      this.firstRttDueAt = this.server.env.now() + FIRST_RTT_DELAY_MS
      this.server.env.wakeAt?.(this.firstRttDueAt)
    }
  }

  pong(): void {
    if (this.tracing) this.traceIn("PONG", "")
    this.pingsOut = 0
    if (this.rttPingSentAt >= 0) {
      this.rttNs = Math.max(0, this.server.env.nanos() - this.rttPingSentAt)
      this.rttPingSentAt = -1
    }
  }

  info(_json: string): void {
    // Clients have no business sending INFO; nats-server ignores it from clients.
  }

  ok(): void {}

  err(message: string): void {
    this.server.log.debug(`${this.logPrefix()} - Client sent -ERR ${truncate(message, 128)}`)
  }

  protocolError(error: ParseError): void {
    const s = this.server
    s.log.debug(`${this.logPrefix()} - Client parser error: ${error.kind} ${error.detail}`)
    switch (error.kind) {
      case "MaxControlLine":
        s.closeClient(this, ClosedReason.MaxControlLineExceeded, ErrText.MaxControlLine)
        break
      case "MaxPayload":
        s.closeClient(this, ClosedReason.MaxPayloadExceeded, ErrText.MaxPayload)
        break
      default:
        s.closeClient(this, ClosedReason.ParseError, ErrText.UnknownOp)
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
    const server = this.server
    this.outMsgs++
    this.outBytes += size
    server.outMsgs++
    server.outBytes += size
    this.account.outMsgs++
    this.account.outBytes += size
    s.delivered++
    if (s.max > 0 && s.delivered >= s.max) this.removeSub(s)
    server.queued(this)
    return true
  }

  /** The 503 status of a request that reached nobody, on the client's subscription to its reply subject. */
  override sendNoResponders(s: Subscription, reply: string): void {
    noRespondersHmsg(this.out, reply, s.sid)
    if (this.tracing) this.server.log.trace(`${this.logPrefix()} - ->> [HMSG ${reply} ${s.sid} (503 No Responders)]`)
    this.server.markDirty(this)
  }

  // ---- helpers ----

  sendOk(): void {
    if (this.tracing) this.traceOut("OK")
    this.out.writeBytes(OK, 0, OK.length)
    this.server.markDirty(this)
  }

  sendErr(text: string): void {
    if (this.tracing) this.traceOut(`-ERR '${text}'`)
    writeErr(this.out, text)
    this.server.markDirty(this)
  }

  sendPing(forRtt: boolean): void {
    if (this.tracing) this.traceOut("PING")
    this.out.writeBytes(PING, 0, PING.length)
    if (forRtt || this.rttPingSentAt < 0) this.rttPingSentAt = this.server.env.nanos()
    this.server.markDirty(this)
  }

  /** Send the first RTT PING now (it does not count as an unanswered liveness PING). */
  sendFirstRttPing(): void {
    this.firstRtt = FirstRtt.Sent
    this.sendPing(true)
  }

  /** Trace an inbound op, nats-server style: `<<- [PUB foo 5]`. */
  traceIn(op: string, args: string): void {
    this.server.log.trace(`${this.logPrefix()} - <<- [${op}${args === "" ? "" : ` ${truncate(args, 1024)}`}]`)
  }

  /** Trace an outbound op, nats-server style: `->> [PONG]`. */
  traceOut(op: string): void {
    this.server.log.trace(`${this.logPrefix()} - ->> [${truncate(op, 1024)}]`)
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

/** CONNECT as it may be logged: every credential replaced, whatever the client sent. */
export const redactConnect = (opts: ConnectOptions): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...opts }
  for (const k of ["pass", "auth_token", "sig", "jwt"] as const) if (k in out) out[k] = "[REDACTED]"
  return out
}

const truncate = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}…` : s)
