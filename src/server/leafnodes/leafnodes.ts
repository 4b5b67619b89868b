// Leaf nodes: this server's leaf-node connections, in both roles. As a leaf it connects to
// the hubs of `leafnodes.remotes` (retried for ever with a bounded backoff, 30 s after a
// loop), each connection bound to a local account; as a hub it accepts leaf nodes on its
// leaf listener, authenticates them and binds each to the account of its user. Per
// account it tells every leaf connection what the account wants here (its local
// subscriptions and the other leaf connections' interest: LeafInterestBook), with the
// account's loop-detection subject; it keeps what each connection asked for
// (RemoteInterest) and sends it the messages published here that it wants, once each,
// never back to the connection a message came in on.
import type { LeafNodeOptions } from "../../config/options.js"
import { encodeInfo } from "../../core/cluster/encode.js"
import {
  hubConnectInfo,
  hubInfo,
  type HubInfoFields,
  isLoopDetectionSubject,
  type LeafConnectOp,
  loopDetectedError,
  loopDetectionSubject,
  LOOP_RECONNECT_DELAY_MS
} from "../../core/cluster/handshake.js"
import { RemoteInterest } from "../../core/cluster/interest.js"
import { LeafInterestBook, type LeafInterestSink } from "../../core/cluster/leaf-interest.js"
import type { PeerInterest } from "../../core/cluster/parser.js"
import type { ConnSnapshot, LeafNodesSnapshot } from "../../core/monitor/source.js"
import { ClientPermissions } from "../../engine/permissions.js"
import { type Account, type Delivery, GLOBAL_ACCOUNT, type InterestWatcher, type Subscription } from "../../engine/principal.js"
import type { RemoteRouting } from "../../engine/router.js"
import { parseCredentials } from "../../core/cluster/credentials.js"
import type { LeafInfoOp } from "../../core/cluster/handshake.js"
import { type Conn, type ConnHandlers, type TlsDial, TlsHandshakeError } from "../../services/transport.js"
import { NATS_COMPAT_VERSION, VERSION } from "../../version.js"
import type { ClusterEnv, RouteInterestSink } from "../cluster/cluster.js"
import { forwardOnce, MAX_PEER_INTEREST } from "../cluster/forward.js"
import { type ClusterHost, reconnectDelay } from "../cluster/link.js"
import type { Authenticator } from "../nats/auth.js"
import { passwordMatches } from "../nats/auth.js"
import { ErrText } from "../reasons.js"
import { Leaf, LeafClosed, type LeafMesh } from "./leaf.js"
import { learnLeafUrls, type LeafSolicit, newLeafSolicit } from "./solicit.js"
import { optimizerRead } from "../../startup-tiering.js"

/** What leaf nodes need from the server beyond what routes do: its client authentication (a hub without leaf users uses it). */
export interface LeafHost extends ClusterHost {
  readonly auth: Authenticator
  readonly authRequired: boolean
  /** Its cluster, when it has routes too. */
  readonly cluster: { readonly name: string } | undefined
}

/** How long a leaf connection attempt may take. */
export const LEAF_DIAL_TIMEOUT_MS = 2_000

const hostPort = (host: string, port: number): string => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`)

const noopHandlers: ConnHandlers = { onData: () => {}, onDrain: () => {}, onClose: () => {} }

/** A connection this server solicited: the other side is its hub. */
const isHub = (l: Leaf): boolean => l.solicit !== undefined

/** The routes of this server, as leaf nodes' interest reaches them (Cluster implements it). */
export interface LeafInterestToRoutes {
  /** This server's interest in a subject grew or shrank by `delta` (a queue group by its weight), by the interest of a leaf node of cluster `origin`. */
  announce(account: string, subject: string, queue: string, delta: number, origin: string): void
}

export class LeafNodes implements RemoteRouting, InterestWatcher, LeafMesh, LeafInterestSink<object>, RouteInterestSink {
  /** Every open leaf connection, by lid (registered or still in its handshake). */
  readonly leafs = new Map<number, Leaf>()
  /** What each leaf connection asked for, per account. */
  readonly interest: RemoteInterest<Leaf>
  /** What each leaf connection of an account was told. */
  /** Keyed by the source of interest: a Leaf, or (on a server with routes) a route. */
  private readonly book = new LeafInterestBook<object>()
  /** The routes, on a server with a cluster too: they hear of leaf interest as this server's own. */
  routes: LeafInterestToRoutes | undefined = undefined
  readonly solicits: Array<LeafSolicit>
  /** Each account's loop-detection subject (`$LDS.<random>`), made when its first leaf connection registers. */
  private readonly lds = new Map<string, string>()
  /** The leaf listener, once bound. */
  host = ""
  port = 0
  readonly handshakeTimeoutMs: number
  /** Leaf connections cut off as slow consumers (/varz slow_consumer_stats.leafs). */
  slowConsumers = 0
  private shuttingDown = false
  private readonly touched: Array<Leaf | undefined> = []
  private readonly maxInterest: number

  constructor(
    readonly server: LeafHost,
    readonly options: LeafNodeOptions,
    private readonly env: ClusterEnv,
    limits: { readonly maxPeerInterest?: number } = {}
  ) {
    this.maxInterest = limits.maxPeerInterest ?? MAX_PEER_INTEREST
    this.interest = new RemoteInterest<Leaf>({ maxPerRemote: this.maxInterest })
    this.handshakeTimeoutMs = Math.max(options.authorization?.timeoutMs ?? server.options.authTimeoutMs, 2_000)
    const now = server.env.now()
    this.solicits = options.remotes.map((r) => newLeafSolicit(r, now))
  }

  /** The leaf listener is up (when there is one); remotes are called from now on. */
  start(host: string | undefined, port: number | undefined): void {
    if (host !== undefined && port !== undefined) {
      this.host = host
      this.port = port
    }
    if (this.solicits.length > 0) this.env.wakeAt(this.server.env.now())
  }

  /**
   * The host:port leaf nodes are told (INFO leafnode_urls, where a nats-server leaf also
   * reconnects): advertise, else the listener, else (a listener on every address) each
   * of the machine's non-loopback IPv4 addresses, as client URLs are advertised.
   */
  advertised(): Array<string> {
    if (this.options.advertise !== undefined) return [this.options.advertise]
    if (this.host !== "0.0.0.0" && this.host !== "::" && this.host !== "") return [hostPort(this.host, this.port)]
    return this.server.machineAddresses().filter((a) => a.family === "IPv4" && !a.address.startsWith("127.")).map((a) => hostPort(a.address, this.port))
  }

  // ---- connections ----

  /** A connection accepted on the leaf listener: this server is its hub. */
  accept(conn: Conn): ConnHandlers {
    if (this.shuttingDown || this.server.shuttingDown) {
      conn.destroy()
      return noopHandlers
    }
    const l = this.open(conn, undefined, this.server.router.account(GLOBAL_ACCOUNT))
    l.writeRaw(encodeInfo(hubInfo(this.hubFields(l), this.server.randomId(16))))
    // Out now, in the clear: on a TLS listener the connection switches to TLS once accepted.
    if (this.options.tls !== undefined) this.server.outbound.flushNow(l)
    return this.handlers(l)
  }

  /**
   * A leaf connection on the websocket listener's `/leafnode` path: as on the leaf
   * listener, but TLS is the WebSocket's (wss), never started inside it, so the INFO asks
   * for none.
   */
  acceptWebSocket(conn: Conn): ConnHandlers {
    if (this.shuttingDown || this.server.shuttingDown) {
      conn.destroy()
      return noopHandlers
    }
    const l = this.open(conn, undefined, this.server.router.account(GLOBAL_ACCOUNT))
    l.writeRaw(encodeInfo(hubInfo(this.hubFields(l, false), this.server.randomId(16))))
    return this.handlers(l)
  }

  private hubFields(l: Leaf, tls = this.options.tls !== undefined): HubInfoFields {
    const s = this.server
    const auth = this.options.authorization
    return {
      server_id: s.serverId,
      server_name: s.serverName,
      version: NATS_COMPAT_VERSION,
      host: this.host,
      port: this.port,
      headers: !s.options.noHeaderSupport,
      auth_required: auth?.user !== undefined || (auth?.users.length ?? 0) > 0 || s.authRequired,
      ...(tls && this.options.tls !== undefined && { tls_required: true, tls_verify: this.options.tls.verify }),
      max_payload: s.options.maxPayload,
      client_id: l.lid,
      leafnode_urls: this.options.noAdvertise ? [] : this.advertised(),
      switchyard: VERSION
    }
  }

  private open(conn: Conn, solicit: LeafSolicit | undefined, account: Account): Leaf {
    const now = this.server.env.now()
    const l = new Leaf(this, this.server.allocateCid(), conn, solicit, account, now)
    // A remote's deny_imports / deny_exports, read as a user's permissions are: what the hub
    // may send here (publish) and what it may ask for (subscribe).
    const r = solicit?.remote
    if (r !== undefined && (r.denyImports !== undefined || r.denyExports !== undefined)) {
      l.permissions = new ClientPermissions({
        publish: r.denyImports === undefined ? undefined : { allow: undefined, deny: r.denyImports },
        subscribe: r.denyExports === undefined ? undefined : { allow: undefined, deny: r.denyExports },
        allowResponses: undefined
      })
    }
    this.leafs.set(l.lid, l)
    if (solicit !== undefined) solicit.leaf = l
    this.env.wakeAt(l.handshakeDeadline)
    this.server.log.debug(`${l.logPrefix()} - Leafnode connection ${solicit === undefined ? "accepted" : `to ${solicit.url} made`}`)
    return l
  }

  private handlers(l: Leaf): ConnHandlers {
    return {
      onData: (chunk) => {
        if (l.closed) return
        optimizerRead(chunk.length)
        l.receive(chunk, this.server.env.now())
      },
      onDrain: () => l.drained(),
      onClose: (error) => {
        if (l.closed) return
        if (error instanceof TlsHandshakeError) {
          // A plain-text peer on a TLS listener, a certificate refused either way, a handshake too slow.
          this.server.log.error(`${l.logPrefix()} - TLS leafnode handshake error: ${error.message}`)
          l.lost(LeafClosed.TLSHandshakeError)
          return
        }
        l.lost(error === undefined || (error as NodeJS.ErrnoException).code === "ECONNRESET" ? LeafClosed.ClientClosed : LeafClosed.ReadError)
      }
    }
  }

  /**
   * Our side of TLS to a hub, from its first INFO (sent in the clear): the connection
   * switches to TLS when the remote asks for it (a `tls` block or a `tls://` URL) or the
   * hub requires it; a remote that asks for TLS of a hub that does not offer it is refused
   * rather than sending credentials in the clear. False when the connection was closed.
   */
  startTls(l: Leaf, info: LeafInfoOp): boolean {
    const s = l.solicit!
    const u = s.urls[s.index % s.urls.length]
    // Over a WebSocket, TLS is the WebSocket's (wss://), never started inside it.
    if (u.ws) {
      l.tlsStarted = u.tls
      return true
    }
    const wanted = s.remote.tls !== undefined || u.tls
    if (info.tls_required !== true) {
      if (!wanted) return true
      this.server.log.error(`${l.logPrefix()} - Leafnode remote ${s.url} requires TLS, but the hub does not offer it (no tls_required in its INFO)`)
      l.close(LeafClosed.TlsRequired)
      return false
    }
    if (l.conn.startTls === undefined) {
      this.server.log.error(`${l.logPrefix()} - The hub at ${s.url} requires TLS, which this transport cannot start`)
      l.close(LeafClosed.TlsRequired)
      return false
    }
    l.conn.startTls()
    l.tlsStarted = true
    return true
  }

  /** The client side of TLS to a hub, should it be needed: the remote's files, the hub checked against the CA and the URL's host. */
  private tlsDial(s: LeafSolicit, host: string): TlsDial {
    const t = s.remote.tls
    return { certFile: t?.certFile, keyFile: t?.keyFile, caFile: t?.caFile, serverName: host, timeoutMs: t?.timeoutMs ?? 2_000, first: false }
  }

  /**
   * What a CONNECT authenticates with: the URL's user and password, or the remote's
   * credentials file (read again at each attempt, so that a rotated file is used): its JWT
   * and the hub's nonce signed with its seed. Undefined (and the connection closed) when
   * the file cannot be used.
   */
  private authFor(l: Leaf, u: { readonly user: string | undefined; readonly password: string | undefined }): Record<string, unknown> | undefined {
    const file = l.solicit!.remote.credentials
    if (file === undefined) return { ...(u.user !== undefined ? { user: u.user } : {}), ...(u.password !== undefined ? { pass: u.password } : {}) }
    const text = this.env.readFile?.(file)
    const creds = text === undefined ? "cannot be read" : parseCredentials(text)
    if (typeof creds === "string") {
      this.server.log.error(`${l.logPrefix()} - Leafnode credentials ${JSON.stringify(file)}: ${creds}`)
      l.close(LeafClosed.AuthenticationViolation)
      return undefined
    }
    const nonce = l.remoteInfo?.nonce
    if (nonce === undefined || nonce === "") {
      this.server.log.error(`${l.logPrefix()} - The hub at ${l.solicit!.url} sent no nonce to sign: the credentials cannot be used`)
      l.close(LeafClosed.AuthenticationViolation)
      return undefined
    }
    return { jwt: creds.jwt, sig: creds.sign(nonce) }
  }

  /** Our CONNECT to a hub: the URL's credentials or the remote's credentials file; our cluster's name (the hub does not send our messages back into it), else this server's name. Undefined when it cannot be made (closed). */
  connectFor(l: Leaf): Record<string, unknown> | undefined {
    const s = l.solicit!
    const u = s.urls[s.index % s.urls.length]
    const server = this.server
    const auth = this.authFor(l, u)
    if (auth === undefined) return undefined
    return {
      version: NATS_COMPAT_VERSION,
      ...auth,
      tls_required: l.tlsStarted,
      server_id: server.serverId,
      name: server.serverName,
      cluster: server.cluster?.name ?? server.serverName,
      headers: !server.options.noHeaderSupport,
      switchyard: VERSION
    }
  }

  /**
   * A leaf node's CONNECT: checked against `leafnodes.authorization` (one user, or users
   * each bound to an account), else against the server's own users (its accounts and
   * permissions), else bound to the global account.
   */
  admit(l: Leaf, c: LeafConnectOp): { account: Account; user: string; perms: ClientPermissions | undefined } | { refused: string } {
    const server = this.server
    const auth = this.options.authorization
    const refuse = () => {
      server.log.error(`${l.logPrefix()} - Leafnode authentication failed${c.user === undefined ? "" : ` for user "${c.user}"`}`)
      return { refused: ErrText.AuthorizationViolation }
    }
    if (auth?.user !== undefined) {
      if (c.user !== auth.user || (auth.password !== undefined && !passwordMatches(c.pass, auth.password))) return refuse()
      return { account: server.router.account(auth.account ?? GLOBAL_ACCOUNT), user: auth.user, perms: undefined }
    }
    if (auth !== undefined && auth.users.length > 0) {
      const u = auth.users.find((x) => x.user === c.user)
      if (u === undefined || (u.password !== undefined && !passwordMatches(c.pass, u.password))) return refuse()
      return { account: server.router.account(u.account ?? GLOBAL_ACCOUNT), user: u.user, perms: undefined }
    }
    if (server.authRequired) {
      const res = server.auth.authenticate({ user: c.user, pass: c.pass, auth_token: c.auth_token, nkey: c.nkey, sig: c.sig, jwt: c.jwt }, undefined)
      if (res === undefined) return refuse()
      return {
        account: server.router.account(res.account),
        user: res.user,
        perms: res.permissions === undefined ? undefined : new ClientPermissions(res.permissions)
      }
    }
    return { account: server.router.account(GLOBAL_ACCOUNT), user: c.user ?? "", perms: undefined }
  }

  connectInfoFor(l: Leaf): Buffer {
    return encodeInfo(hubConnectInfo(this.hubFields(l), l.account.name))
  }

  /** Past the handshake: the connection hears what its account wants here (its loop-detection subject first), then a PING. */
  register(l: Leaf): void {
    const server = this.server
    l.registered = true
    if (l.solicit !== undefined) {
      l.solicit.attempts = 0
      l.solicit.loop = false
    }
    const account = l.account.name
    if (!this.lds.has(account)) {
      const subject = loopDetectionSubject(server.randomId(16))
      this.lds.set(account, subject)
      this.book.local(account, subject, "", 1, this)
    }
    this.book.attach(account, l, this, l.solicit === undefined)
    server.log.info(
      `${l.logPrefix()} - Leafnode connection created${l.didSolicit ? ` for account: ${account}${l.remoteAccount === "" ? "" : ` (bound to "${l.remoteAccount}" on the hub)`}` : ` for account: ${account}`}${l.remoteName === "" ? "" : ` (${l.remoteName})`}`
    )
    l.sendPing()
    l.nextPingAt = server.env.now() + server.options.pingIntervalMs
    this.env.wakeAt(l.nextPingAt)
    server.peerOwn?.linkUp(l)
  }

  /** A leaf connection is gone (either side closed it). */
  leafClosed(l: Leaf, reason: LeafClosed): void {
    const server = this.server
    this.leafs.delete(l.lid)
    if (l.registered) {
      l.registered = false
      const account = l.account.name
      // The routes forget what this connection wanted.
      if (this.routes !== undefined && l.solicit === undefined) {
        for (const e of this.interest.entries(l)) this.routes.announce(account, e.subject, e.queue ?? "", -e.weight, l.originCluster)
      }
      this.interest.dropRemote(l)
      this.server.router.remoteInterestChanged(account)
      this.book.detach(account, l, this)
      // The last leaf connection of the account: its loop-detection subject goes too.
      if (this.book.leafs(account).size === 0) {
        const subject = this.lds.get(account)
        if (subject !== undefined) {
          this.lds.delete(account)
          this.book.local(account, subject, "", -1, this)
        }
      }
    }
    const log = this.shuttingDown ? server.log.debug : server.log.info
    log.call(server.log, `${l.logPrefix()} - Leafnode connection closed: ${reason}`)
    const s = l.solicit
    if (s !== undefined) {
      s.leaf = undefined
      this.scheduleRetry(s, server.env.now())
    }
  }

  /** Our hub said it found a loop: wait the loop delay before calling again. */
  loopReported(l: Leaf): void {
    if (l.solicit !== undefined) l.solicit.loop = true
  }

  /** Our hub's cluster's leaf listeners: tried too when the connection is lost. */
  hubUrls(l: Leaf, hostPorts: ReadonlyArray<string>): void {
    const s = l.solicit
    if (s === undefined) return
    const added = learnLeafUrls(s, hostPorts)
    if (added > 0) this.server.log.debug(`${l.logPrefix()} - Learned ${added} leafnode URL(s) of the hub's cluster: ${hostPorts.join(", ")}`)
  }

  private scheduleRetry(s: LeafSolicit, now: number): void {
    if (this.shuttingDown) return
    s.attempts++
    const base = this.options.reconnectMs
    const delay = s.loop ? LOOP_RECONNECT_DELAY_MS : Math.round(reconnectDelay(s.attempts - 1, this.server.env.random) * (base / 1_000))
    if (s.loop) this.server.log.warn(`Leafnode loop detected through ${s.url}: connecting again in ${LOOP_RECONNECT_DELAY_MS / 1000}s`)
    s.loop = false
    // The next attempt tries the remote's next URL.
    s.index = (s.index + 1) % Math.max(1, s.urls.length)
    s.nextAt = now + delay
    this.env.wakeAt(s.nextAt)
  }

  // ---- timers ----

  /** Connects what is due, runs each connection's timers; returns when next due (undefined: nothing). */
  tick(now: number): number | undefined {
    let next = Infinity
    for (const s of this.solicits) {
      if (s.leaf !== undefined || s.dialing || this.shuttingDown || s.urls.length === 0) continue
      if (now >= s.nextAt) this.dial(s)
      else next = Math.min(next, s.nextAt)
    }
    for (const l of [...this.leafs.values()]) if (!l.closed) next = Math.min(next, l.timers(now))
    return next === Infinity ? undefined : next
  }

  private dial(s: LeafSolicit): void {
    const dial = this.env.dial
    if (dial === undefined) return
    const u = s.urls[s.index % s.urls.length]
    s.dialing = true
    this.server.log.debug(`Trying to connect as leafnode to remote server on ${hostPort(u.host, u.port)}`)
    const connected = (conn: Conn): ConnHandlers => {
      s.dialing = false
      if (this.shuttingDown) {
        conn.destroy()
        return noopHandlers
      }
      return this.handlers(this.open(conn, s, this.server.router.account(s.remote.account)))
    }
    const failed = (e: Error): void => {
      s.dialing = false
      if (e instanceof TlsHandshakeError) this.server.log.error(`${s.url} - TLS leafnode handshake error: ${e.message}`)
      else this.server.log.debug(`Error trying to connect as leafnode to remote server ${s.url}: ${e.message}`)
      this.scheduleRetry(s, this.server.env.now())
    }
    if (u.ws) {
      // A hub's websocket listener takes leaf connections on its /leafnode path.
      const ws = this.env.dialWebSocket
      if (ws === undefined) {
        s.dialing = false
        this.server.log.error(`Cannot connect to ${s.url}: this transport has no WebSocket client`)
        this.scheduleRetry(s, this.server.env.now())
        return
      }
      ws(`${u.tls ? "wss" : "ws"}://${hostPort(u.host, u.port)}/leafnode`, LEAF_DIAL_TIMEOUT_MS, connected, failed, u.tls ? { ...this.tlsDial(s, u.host), first: true } : undefined)
      return
    }
    dial(u.host, u.port, LEAF_DIAL_TIMEOUT_MS, connected, failed, this.tlsDial(s, u.host))
  }

  // ---- interest ----

  /** A local subscription came: the account's leaf connections hear of it (the first on its subject, or a queue group's new count). */
  subscribed(account: Account, s: Subscription): void {
    if (!s.principal.announce || s.principal.remote) return
    this.book.local(account.name, s.subject, s.queue ?? "", 1, this)
  }

  unsubscribed(account: Account, s: Subscription): void {
    if (!s.principal.announce || s.principal.remote) return
    this.book.local(account.name, s.subject, s.queue ?? "", -1, this)
  }

  /** LS+ from a leaf connection: a loop when it is our own loop-detection subject; else kept, and passed on to the account's other leaf connections. */
  remoteSub(l: Leaf, i: PeerInterest): void {
    const account = l.account.name
    if (isLoopDetectionSubject(i.subject)) {
      // Our own subject back, or another server's arriving over a second connection of the
      // account: either way messages could go round.
      const own = this.lds.get(account) === i.subject
      if (own || this.interest.remotes(account, i.subject).some((o) => o !== l)) {
        this.server.log.error(`${l.logPrefix()} - Loop detected for leafnode account="${account}": ${own ? "our loop-detection subject came back" : `${i.subject} came over another connection too`}`)
        if (l.solicit !== undefined) l.solicit.loop = true
        l.close(LeafClosed.LoopDetected, loopDetectedError(account))
        return
      }
    }
    if (l.permissions !== undefined && !l.permissions.canSubscribe(i.subject, i.queue)) {
      this.server.log.debug(`${l.logPrefix()} - Leafnode interest in "${i.subject}" outside its user's subscribe permissions ignored`)
      return
    }
    const change = this.interest.add(l, { account, subject: i.subject, queue: i.queue, fromLeaf: false, weight: i.weight, origin: "" })
    if (change === "invalid") {
      this.server.log.error(`${l.logPrefix()} - Leafnode sent an invalid subscription: "${i.subject}"${i.queue === "" ? "" : ` "${i.queue}"`}`)
      l.sendErr("Invalid Subscription")
      return
    }
    if (change === "limit") {
      this.server.log.error(`${l.logPrefix()} - Leafnode announced more than ${this.maxInterest} subscriptions: closing the connection`)
      l.close(LeafClosed.InterestLimit, "Maximum Subscriptions Exceeded")
      return
    }
    if (change === "unchanged") return
    const weight = i.queue === "" ? 1 : i.weight
    // A hub's interest (a connection we solicited) stays off the routes, as a nats-server spoke keeps it.
    if (l.solicit === undefined) this.routes?.announce(account, i.subject, i.queue, weight - this.book.weightOf(account, l, i.subject, i.queue), l.originCluster)
    this.book.remote(account, l, i.subject, i.queue, weight, this)
    this.server.router.remoteInterestChanged(account)
  }

  /** LS- from a leaf connection. */
  remoteUnsub(l: Leaf, i: PeerInterest): void {
    const account = l.account.name
    if (this.interest.remove(l, { account, subject: i.subject, queue: i.queue, fromLeaf: false })) {
      if (l.solicit === undefined) this.routes?.announce(account, i.subject, i.queue, -this.book.weightOf(account, l, i.subject, i.queue), l.originCluster)
      this.book.remote(account, l, i.subject, i.queue, 0, this)
      this.server.router.remoteInterestChanged(account)
    }
  }

  // RouteInterestSink: what the other servers of the cluster want, as the account's leaf connections hear it.
  routeInterest(account: string, src: object, subject: string, queue: string, weight: number): void {
    this.book.source(account, src, subject, queue, weight, this)
  }

  routeGone(src: object): void {
    this.book.dropSource(src, this)
  }

  // LeafInterestSink: the book's ops, to the connection they are for (only leaf connections are attached).
  sub(l: object, subject: string, queue: string, weight: number): void {
    if (l instanceof Leaf && !l.closed) l.sendSub(subject, queue, weight)
  }

  unsub(l: object, subject: string, queue: string): void {
    if (l instanceof Leaf && !l.closed) l.sendUnsub(subject, queue)
  }

  // ---- forwarding: the router's RemoteRouting ----

  /** A message published here (by a client, or by a leaf connection: never back to it) to the leaf connections that want it. */
  forward(d: Delivery, served: Array<string>): number {
    const from = d.origin.publisher
    // From another server (a leaf connection, a route): only the queue groups it named.
    // A route's message goes to no hub of ours (a nats-server spoke sends it none either).
    const fromRoute = from !== undefined && from.remote && !(from instanceof Leaf)
    return forwardOnce(this.interest, d, served, d.origin.queues, from instanceof Leaf ? from : undefined, this.touched, this.server.env.random, fromRoute ? isHub : undefined)
  }

  // ---- monitoring and shutdown ----

  /** Registered leaf connections, as /leafz lists them. */
  snapshots(): Array<ConnSnapshot> {
    return [...this.leafs.values()].filter((l) => l.registered).map((l) => l.snapshot(this.interest.entries(l)))
  }

  /** The /varz `leaf` block. */
  snapshot(): LeafNodesSnapshot {
    return {
      host: this.options.port === undefined ? undefined : this.host,
      port: this.options.port === undefined ? undefined : this.port,
      authTimeoutMs: this.handshakeTimeoutMs,
      remotes: this.solicits.map((s) => ({ localAccount: s.remote.account, urls: s.urls.map((u) => hostPort(u.host, u.port)) }))
    }
  }

  get count(): number {
    let n = 0
    for (const l of this.leafs.values()) if (l.registered) n++
    return n
  }

  /** max_payload or max_control_line changed (a reload): connections read the next op with the new limits. */
  parserLimitsChanged(): void {
    const o = this.server.options
    for (const l of this.leafs.values()) l.parser.setLimits({ maxControlLine: o.maxControlLine, maxPayload: o.maxPayload })
  }

  shutdown(): void {
    if (this.shuttingDown) return
    this.shuttingDown = true
    for (const l of [...this.leafs.values()]) l.close(LeafClosed.ServerShutdown)
  }
}
