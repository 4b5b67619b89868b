// The NATS server: accepts client connections (each a Client, the protocol driver),
// keeps the rules in force and the clients' records (/connz, /varz), and runs their
// timers. It owns the engine every door shares: the Router messages go through and the
// Outbound that writes each touched connection once per event-loop turn. Everything here
// is synchronous; time, randomness, logging and the flush scheduler are injected so the
// Effect shell (or a simulation) decides what they are.
import type { ServerOptions } from "../config/options.js"
import type { ClosedConnSnapshot } from "../core/monitor/source.js"
import { encodeInfo } from "../core/nats/encode.js"
import { SlabPool } from "../core/outbuf.js"
import { type Conn, type ConnHandlers, type Listener, TlsHandshakeError } from "../services/transport.js"
import type { LogService } from "../services/log.js"
import { NATS_COMPAT_VERSION, VERSION } from "../version.js"
import { Outbound } from "../engine/outbound.js"
import { type Account, GLOBAL_ACCOUNT } from "../engine/principal.js"
import { Router } from "../engine/router.js"
import { type Authenticator, makeAuthenticator, makeNonce } from "./nats/auth.js"
import { requireBcrypt } from "./nats/bcrypt.js"
import { ClosedRing } from "./closed.js"
import type { Cluster, ClusterHost } from "./cluster/cluster.js"
import type { PeerOwnHandler } from "./cluster/link.js"
import type { LeafHost, LeafNodes } from "./leafnodes/leafnodes.js"
import { machineAddresses } from "./process-files.js"
import { Client, type ClientDoor } from "./nats/client.js"
import { ClosedReason, ErrText } from "./reasons.js"

export interface ServerEnv {
  /** Wall-clock milliseconds (Effect's Clock in production, TestClock in tests). */
  readonly now: () => number
  /** A high-resolution clock in nanoseconds, for round-trip times (same Clock). */
  readonly nanos: () => number
  /** Uniform [0, 1), seeded in tests: queue member choice. */
  readonly random: () => number
  /**
   * `n` unguessable bytes (the Entropy service: the OS's CSPRNG in production, the seed in a
   * simulation): nonces, generated names, advisory ids, reply prefixes.
   */
  readonly randomBytes: (n: number) => Buffer
  readonly log: LogService
  /** Run `flush` once, after the current batch of I/O callbacks (setImmediate in production). */
  readonly scheduleFlush: (flush: () => void) => void
  /** Called for every chunk read from a client socket (NATS or MQTT): the shell's busy polling. */
  readonly activity?: (bytes: number) => void
  /** Ask the shell to run `tick` no later than `at` (a client's first deadline, a blocked write). */
  readonly wakeAt?: (at: number) => void
  /** This process's id (`makeServerId`, from `randomBytes`). */
  readonly serverId: string
}

export class Server implements ClientDoor, ClusterHost, LeafHost {
  /** Every account's Sublist and the one way messages go from publishers to subscribers. */
  readonly router: Router
  /** The one flusher of every connection's output (NATS and MQTT): max_pending and write_deadline. */
  readonly outbound: Outbound
  readonly clients = new Map<number, Client>()
  /** Recently closed connections, as /connz?state=closed lists them. */
  readonly closed: ClosedRing<ClosedConnSnapshot>
  /** Who may connect; replaced by a configuration reload (`reconfigure`). */
  auth: Authenticator
  authRequired: boolean
  readonly headersSupported: boolean
  readonly log: LogService
  readonly startTime: number
  /** When the configuration in force was loaded: at start, then at each applied reload (/varz config_load_time). */
  configLoadTime: number
  /** The output slabs busy connections (NATS and MQTT) write into, reused once written. */
  readonly slabs = new SlabPool()

  // Totals for /varz.
  inMsgs = 0
  inBytes = 0
  outMsgs = 0
  outBytes = 0
  totalConnections = 0
  staleConnections = 0
  tlsHandshakeFailures = 0

  /** Where the client listener ended up (port 0 resolves to the OS's choice). */
  host: string
  port: number
  shuttingDown = false
  /** Lame duck mode (SIGUSR2): no new connections; the existing ones are being closed. */
  lameDuck = false
  /** The listeners clients connect through (NATS, MQTT, WebSocket), for lame duck mode to close. */
  readonly listeners: Array<Listener> = []

  /** The routes to the other servers of a cluster; undefined on a server on its own. */
  cluster: Cluster | undefined = undefined
  /** Leaf-node connections (to hubs, from leaf nodes); undefined on a server without a leafnodes block. */
  leafnodes: LeafNodes | undefined = undefined
  /** Switchyard's own messages from other servers (the MQTT bridge's retained sync); undefined: dropped. */
  peerOwn: PeerOwnHandler | undefined = undefined

  private nextCid = 1

  constructor(
    /** The configuration in force: replaced as a whole by a reload (`reconfigure`), never edited in place. */
    public options: ServerOptions,
    readonly env: ServerEnv
  ) {
    requireBcrypt(options)
    this.log = env.log
    this.router = new Router(env)
    this.outbound = new Outbound(env, options)
    this.closed = new ClosedRing(options.maxClosedClients)
    this.auth = makeAuthenticator(options)
    this.authRequired = this.auth.required
    this.headersSupported = !options.noHeaderSupport
    this.startTime = env.now()
    this.configLoadTime = this.startTime
    this.host = options.host
    this.port = options.port
    this.account(GLOBAL_ACCOUNT)
    for (const a of options.accounts) this.account(a.name)
    this.account(options.systemAccount)
  }

  /** Connections cut off as slow consumers (NATS and MQTT), for /varz. */
  get slowConsumers(): number {
    return this.outbound.slowConsumers
  }

  get serverId(): string {
    return this.env.serverId
  }

  get serverName(): string {
    return this.options.serverName === "" ? this.env.serverId : this.options.serverName
  }

  now(): number {
    return this.env.now()
  }

  /** `n` unguessable bytes as base64url (no padding): a nonce, a generated name, an id. */
  randomId(n: number): string {
    return this.env.randomBytes(n).toString("base64url")
  }

  /** A connection id, unique across every listener (NATS, MQTT), as /connz shows them. */
  allocateCid(): number {
    return this.nextCid++
  }

  get accounts(): ReadonlyMap<string, Account> {
    return this.router.accounts
  }

  /** The account with this name, created on first use. */
  account(name: string): Account {
    return this.router.account(name)
  }

  setListener(host: string, port: number): void {
    this.host = host
    this.port = port
  }

  /** A listener lame duck mode must close (the server's own client listener, MQTT, WebSocket). */
  registerListener(l: Listener): void {
    this.listeners.push(l)
  }

  /**
   * The configuration from now on (a reload; `reload.ts` checked that only what can
   * change live changed). Limits apply to every connection at once, authorization is
   * re-checked by `reauthorize` (the caller's next step).
   */
  reconfigure(next: ServerOptions): void {
    const prev = this.options
    this.options = next
    this.auth = makeAuthenticator(next)
    this.authRequired = this.auth.required
    this.outbound.setLimits(next)
    this.closed.resize(next.maxClosedClients)
    for (const a of next.accounts) this.account(a.name)
    const now = this.env.now()
    const parsersChanged = next.maxControlLine !== prev.maxControlLine || next.maxPayload !== prev.maxPayload
    for (const c of this.clients.values()) c.reconfigure(now, parsersChanged)
    if (parsersChanged) {
      this.cluster?.parserLimitsChanged()
      this.leafnodes?.parserLimitsChanged()
    }
    // Deadlines may have come closer: the timer looks again now.
    if (this.clients.size > 0) this.env.wakeAt?.(now)
    this.closeOverMaxConnections(next.maxConnections)
  }

  /** A lowered max_connections: the newest clients beyond it are closed, as nats-server does. */
  private closeOverMaxConnections(max: number): void {
    const over = this.clients.size - max
    if (over <= 0) return
    const newest = [...this.clients.values()].sort((a, b) => b.cid - a.cid).slice(0, over)
    for (const c of newest) {
      this.log.warn(`${c.logPrefix()} - Maximum connections exceeded (${max}) after a configuration reload: closing`)
      c.close(ClosedReason.MaxConnectionsExceeded, ErrText.MaxConnections)
    }
  }

  // ---- connections ----

  accept(conn: Conn): ConnHandlers {
    const now = this.env.now()
    if (this.shuttingDown || this.lameDuck) {
      conn.destroy()
      return noopHandlers
    }
    if (this.clients.size >= this.options.maxConnections) {
      conn.write(Buffer.from(`-ERR '${ErrText.MaxConnections}'\r\n`))
      conn.end()
      this.log.warn(`${conn.remoteAddress}:${conn.remotePort} - Maximum connections exceeded (${this.options.maxConnections})`)
      return noopHandlers
    }
    const cid = this.allocateCid()
    const acc = this.account(GLOBAL_ACCOUNT)
    const c = new Client(this, cid, conn, acc, now)
    this.clients.set(cid, c)
    this.totalConnections++
    this.env.wakeAt?.(c.authDeadline > 0 ? Math.min(c.authDeadline, c.nextPingAt) : c.nextPingAt)
    conn.write(this.infoFor(c))
    this.log.debug(`${c.logPrefix()} - Client connection created`)
    return {
      onData: (chunk) => {
        if (c.closed) return
        this.env.activity?.(chunk.length)
        c.receive(chunk, this.env.now())
      },
      onDrain: () => c.drained(),
      onClose: (error) => this.connClosed(c, error)
    }
  }

  infoFor(c: Client, extra?: Readonly<Record<string, unknown>>): Buffer {
    const o = this.options
    const info: Record<string, unknown> = {
      server_id: this.serverId,
      server_name: this.serverName,
      version: NATS_COMPAT_VERSION,
      switchyard: VERSION,
      proto: 1,
      go: `node ${process.version}`,
      host: this.host,
      port: this.port,
      headers: this.headersSupported,
      max_payload: o.maxPayload,
      client_id: c.cid,
      client_ip: c.conn.remoteAddress
    }
    if (this.authRequired) info.auth_required = true
    if (o.tls !== undefined) {
      info.tls_required = true
      if (o.tls.verify) info.tls_verify = true
    }
    if (o.jetstream !== undefined) info.jetstream = true
    const urls = this.cluster?.connectUrls()
    if (urls !== undefined && urls.length > 0) info.connect_urls = urls
    if (this.auth.nonceRequired) {
      c.nonce ??= makeNonce(this)
      info.nonce = c.nonce
    }
    if (extra !== undefined) Object.assign(info, extra)
    if (c.tracing) this.log.trace(`${c.logPrefix()} - ->> [INFO ${JSON.stringify(info)}]`)
    return encodeInfo(info)
  }

  machineAddresses(): ReadonlyArray<{ readonly address: string; readonly family: string }> {
    return machineAddresses()
  }

  /**
   * The cluster's client URLs changed (a route came or went): clients that speak protocol
   * 1 or later get an INFO with the new connect_urls, as nats-server sends them.
   */
  connectUrlsChanged(): void {
    for (const c of this.clients.values()) {
      if (c.closed || !c.connectReceived || !(typeof c.connectOpts?.protocol === "number" && c.connectOpts.protocol >= 1)) continue
      const info = this.infoFor(c, { connect_urls: this.cluster?.connectUrls() ?? [] })
      c.out.writeBytes(info, 0, info.length)
      this.outbound.markDirty(c)
    }
  }

  /** The peer went away (or we closed it and the transport confirms). */
  private connClosed(c: Client, error: Error | undefined): void {
    if (c.closed) return
    if (error instanceof TlsHandshakeError) {
      this.tlsHandshakeFailures++
      this.log.error(`${c.logPrefix()} - TLS handshake error: ${error.message}`)
      c.lost(ClosedReason.TLSHandshakeError)
      return
    }
    const reason = error === undefined || (error as NodeJS.ErrnoException).code === "ECONNRESET"
      ? ClosedReason.ClientClosed
      : ClosedReason.ReadError
    c.lost(reason)
  }

  /** A client is gone: its record for /connz?state=closed (taken while it still lists its subscriptions). */
  clientClosed(c: Client, reason: ClosedReason): void {
    this.closed.push({ ...c.snapshot(), pendingBytes: 0, stop: this.env.now(), reason })
    this.clients.delete(c.cid)
    this.log.debug(`${c.logPrefix()} - Client connection closed: ${reason}`)
  }

  // ---- timers: the shell runs tick when a deadline asked for is due ----

  /**
   * Ping, first RTT, stale, auth-timeout and write-deadline checks for every client, and
   * the cluster's (route handshakes, pings, write deadlines, reconnects); returns when the
   * next of them is due (undefined: nothing timed).
   */
  tick(now: number): number | undefined {
    let next = Infinity
    for (const c of this.clients.values()) {
      if (c.closed) continue
      next = Math.min(next, c.authTimer(now))
      if (c.closed) continue
      next = Math.min(next, this.outbound.writeDeadline(c, now))
      if (c.closed) continue
      next = Math.min(next, c.liveness(now))
    }
    const routes = this.cluster?.tick(now)
    if (routes !== undefined) next = Math.min(next, routes)
    const leafs = this.leafnodes?.tick(now)
    if (leafs !== undefined) next = Math.min(next, leafs)
    return next === Infinity ? undefined : next
  }

  /** Graceful shutdown: stop accepting, flush what each client has pending, close. */
  shutdown(): void {
    if (this.shuttingDown) return
    this.shuttingDown = true
    this.cluster?.shutdown()
    this.leafnodes?.shutdown()
    for (const c of [...this.clients.values()]) c.close(ClosedReason.ServerShutdown)
  }

  get numSubscriptions(): number {
    return this.router.numSubscriptions
  }
}

const noopHandlers: ConnHandlers = { onData: () => {}, onDrain: () => {}, onClose: () => {} }

/** A server id in nats-server's form: 56 characters of base32, starting with N, from unguessable bytes. */
export const makeServerId = (randomBytes: (n: number) => Uint8Array): string => {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
  const b = randomBytes(55)
  let id = "N"
  for (let i = 0; i < 55; i++) id += alphabet[b[i] & 31]
  return id
}
