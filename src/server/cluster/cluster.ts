// The cluster: this server's routes to the other servers of a NATS cluster (a full mesh).
// It accepts and solicits route connections (configured routes retried for ever with a
// bounded backoff, routes learned from another server's INFO a few times), keeps one
// route per remote server (duplicates resolved the same way on both ends), announces
// this server's interest per account (RS+/RS-, a queue group with its member count) and
// keeps what the others announced (RemoteInterest). The router hands it every message
// published here after its local subscribers (`forward`): it goes once to each server
// with interest, a queue group to one member cluster-wide (a local one first). Clients
// learn the other servers' client URLs (INFO connect_urls) from here.
import type { ClusterOptions } from "../../config/options.js"
import { encodeInfo } from "../../core/cluster/encode.js"
import type { RouteConnectOp, RouteInfoOp } from "../../core/cluster/handshake.js"
import { RemoteInterest } from "../../core/cluster/interest.js"
import type { PeerInterest } from "../../core/cluster/parser.js"
import type { ClusterSnapshot, RouteSnapshot } from "../../core/monitor/source.js"
import { ClientPermissions } from "../../engine/permissions.js"
import type { Account, Delivery, InterestWatcher, Subscription } from "../../engine/principal.js"
import type { RemoteRouting } from "../../engine/router.js"
import { parseRouteUrl } from "../../config/route-url.js"
import { type Conn, type ConnHandlers, type Dial, type TlsDial, TlsHandshakeError, type TransportService } from "../../services/transport.js"
import { NATS_COMPAT_VERSION, VERSION } from "../../version.js"
import { passwordMatches } from "../nats/auth.js"
import { ErrText } from "../reasons.js"
import { forwardOnce, MAX_PEER_INTEREST } from "./forward.js"
import { reconnectDelay } from "./link.js"
import { type ClusterHost, Route, RouteClosed, type RouteMesh, type Solicit } from "./route.js"
import { optimizerRead } from "../../startup-tiering.js"

export type { ClusterHost, Solicit } from "./route.js"

// The backoff lives with the links: leaf nodes use it too, without loading the cluster.
export { reconnectDelay, ROUTE_RECONNECT_MAX_MS, ROUTE_RECONNECT_MS } from "./link.js"
/** How long a connection attempt may take. */
export const ROUTE_DIAL_TIMEOUT_MS = 2_000


/** What the cluster needs from its shell: connecting out, and waking its timer. */
export interface ClusterEnv {
  readonly dial: Dial | undefined
  /** Opening a WebSocket (a leaf remote of a hub's websocket listener); undefined where the transport cannot. */
  readonly dialWebSocket?: TransportService["dialWebSocket"]
  readonly wakeAt: (at: number) => void
  /** A file's text (a leaf remote's credentials, read at each attempt), undefined when it cannot be read. */
  readonly readFile?: (path: string) => string | undefined
}


/** The leaf connections of this server, as the routes' interest reaches them (LeafNodes implements it). */
export interface RouteInterestSink {
  /** What the other servers behind one route (`src`) want in an account; `weight` 0 withdraws it. */
  routeInterest(account: string, src: object, subject: string, queue: string, weight: number): void
  /** A route is gone: its interest with it. */
  routeGone(src: object): void
}

/** One subject (and queue group) some local subscriptions are on, and how many. */
interface LocalEntry {
  readonly subject: string
  readonly queue: string
  n: number
}

const hostPort = (host: string, port: number): string => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`)

const isAnyAddress = (h: string | undefined): boolean => h === undefined || h === "" || h === "0.0.0.0" || h === "::"

export class Cluster implements RemoteRouting, InterestWatcher, RouteMesh {
  /** Every open route connection, by rid (registered or still in its handshake). */
  readonly routes = new Map<number, Route>()
  /** The route kept to each remote server, by its server id. */
  readonly byId = new Map<string, Route>()
  /** What the other servers asked for. */
  readonly interest: RemoteInterest<Route>
  readonly solicits: Array<Solicit> = []
  /** This server's interest as announced: per account, per `subject queue`. */
  private readonly local = new Map<string, Map<string, LocalEntry>>()
  /** The cluster's name; taken from a peer while it was made up here (no name configured). */
  name: string
  dynamicName: boolean
  /** The route listener, once bound. */
  host = ""
  port = 0
  readonly handshakeTimeoutMs: number
  /** Routes cut off as slow consumers (/varz slow_consumer_stats.routes). */
  slowConsumers = 0
  private readonly importPerms: ClientPermissions | undefined
  private readonly maxInterest: number
  private shuttingDown = false
  /** Forwarding scratch: the routes one message goes to. */
  private readonly touched: Array<Route | undefined> = []
  /** This server's leaf connections, when it has leaf nodes too: they hear of the routes' interest. */
  leafs: RouteInterestSink | undefined = undefined
  /** The client URLs clients are told about, as last sent. */
  private clientUrls: ReadonlyArray<string> = []
  /** In lame duck mode (`enterLameDuck`): said in every INFO to the other servers from then on. */
  private lameDuck = false

  constructor(
    readonly server: ClusterHost,
    readonly options: ClusterOptions,
    private readonly env: ClusterEnv,
    limits: { readonly maxPeerInterest?: number } = {}
  ) {
    this.maxInterest = limits.maxPeerInterest ?? MAX_PEER_INTEREST
    this.interest = new RemoteInterest<Route>({ maxPerRemote: this.maxInterest })
    this.dynamicName = options.name === ""
    // A made-up name: 16 bytes from the server's entropy, 22 characters (as long as nats-server's).
    this.name = this.dynamicName ? server.randomId(16) : options.name
    this.handshakeTimeoutMs = Math.max(options.authorization?.timeoutMs ?? server.options.authTimeoutMs, 2_000)
    const auth = options.authorization
    this.importPerms = auth?.import !== undefined || auth?.export !== undefined
      ? new ClientPermissions({ publish: auth.import, subscribe: auth.export, allowResponses: undefined })
      : undefined
    const now = server.env.now()
    for (const url of options.routes) {
      const u = parseRouteUrl(url)
      if (u === undefined) continue
      this.solicits.push(newSolicit(u, true, now))
    }
  }

  /** The listener is up: where other servers reach this one. */
  listening(host: string, port: number): void {
    this.host = host
    this.port = port
    if (this.solicits.length > 0) this.env.wakeAt(this.server.env.now())
  }

  /** The host:port other servers are told (advertise, else the listener). */
  advertisedRoute(): { host: string; port: number } {
    const adv = this.options.advertise
    if (adv !== undefined) {
      const i = adv.lastIndexOf(":")
      return { host: adv.slice(0, i).replace(/^\[|\]$/g, ""), port: Number(adv.slice(i + 1)) }
    }
    return { host: this.host, port: this.port }
  }

  // ---- connections ----

  /** A route connection accepted on the route listener. */
  accept(conn: Conn): ConnHandlers {
    if (this.shuttingDown || this.server.shuttingDown) {
      conn.destroy()
      return { onData: () => {}, onDrain: () => {}, onClose: () => {} }
    }
    const r = this.open(conn, undefined)
    r.writeInfo(this.infoFor(r))
    return this.handlers(r)
  }

  private open(conn: Conn, solicit: Solicit | undefined): Route {
    const now = this.server.env.now()
    const r = new Route(this, this.server.allocateCid(), conn, solicit, now)
    r.permissions = this.importPerms
    this.routes.set(r.rid, r)
    if (solicit !== undefined) solicit.route = r
    this.env.wakeAt(r.handshakeDeadline)
    this.server.log.debug(`${r.logPrefix()} - Route connection ${solicit === undefined ? "accepted" : `to ${solicit.url} made`}`)
    return r
  }

  /**
   * A route whose TLS handshake failed before it was a route (TLS from the first byte: a
   * plain-text server, a certificate refused, too slow): logged as nats-server logs it;
   * nothing else is disturbed.
   */
  tlsFailed(peer: { readonly remoteAddress: string; readonly remotePort: number }, error: Error, solicit?: Solicit): void {
    const at = solicit === undefined ? hostPort(peer.remoteAddress, peer.remotePort) : solicit.url
    this.server.log.error(`${at} - TLS route handshake error: ${error.message}`)
    this.server.log.info(`${at} - Router connection closed: ${RouteClosed.TLSHandshakeError}`)
  }

  /** The client side of a solicited route's TLS: the cluster's certificate, the peer checked against the CA and the URL's host. */
  private tlsDial(s: Solicit): TlsDial | undefined {
    const t = this.options.tls
    if (t === undefined) return undefined
    return { certFile: t.certFile, keyFile: t.keyFile, caFile: t.caFile, serverName: s.host, timeoutMs: t.timeoutMs, first: true }
  }

  private handlers(r: Route): ConnHandlers {
    return {
      onData: (chunk) => {
        if (r.closed) return
        optimizerRead(chunk.length)
        r.receive(chunk, this.server.env.now())
      },
      onDrain: () => r.drained(),
      onClose: (error) => {
        if (r.closed) return
        r.lost(error === undefined || (error as NodeJS.ErrnoException).code === "ECONNRESET" ? RouteClosed.ClientClosed : RouteClosed.ReadError)
      }
    }
  }

  /** Our INFO on a route. */
  infoFor(_r: Route): Buffer {
    const server = this.server
    const o = server.options
    const at = this.advertisedRoute()
    const auth = this.options.authorization
    const info: Record<string, unknown> = {
      server_id: server.serverId,
      server_name: server.serverName,
      version: NATS_COMPAT_VERSION,
      switchyard: VERSION,
      proto: 1,
      go: `node ${process.version}`,
      host: at.host,
      port: at.port,
      headers: !o.noHeaderSupport,
      max_payload: o.maxPayload,
      cluster: this.name,
      // Understands LS+/LMSG naming the leaf cluster interest and messages came from.
      lnoc: true
    }
    if (this.dynamicName) info.cluster_dynamic = true
    if (auth?.user !== undefined) info.auth_required = true
    if (this.options.tls !== undefined) {
      info.tls_required = true
      if (this.options.tls.verify) info.tls_verify = true
    }
    if (auth?.import !== undefined) info.import = { allow: auth.import.allow, deny: auth.import.deny }
    if (auth?.export !== undefined) info.export = { allow: auth.export.allow, deny: auth.export.deny }
    if (!this.options.noAdvertise) info.connect_urls = this.ownClientUrls()
    if (this.lameDuck) info.ldm = true
    return encodeInfo(info)
  }

  /** Our CONNECT on a route we solicited: credentials from its URL, else the cluster's own. */
  connectFor(r: Route): Record<string, unknown> {
    const s = r.solicit!
    const user = s.user ?? this.options.authorization?.user
    const pass = s.user !== undefined ? s.password : this.options.authorization?.password
    return {
      echo: true,
      verbose: false,
      pedantic: false,
      tls_required: this.options.tls !== undefined,
      headers: !this.server.options.noHeaderSupport,
      name: this.server.serverId,
      cluster: this.name,
      lnoc: true,
      ...(this.dynamicName ? { dynamic: true } : {}),
      ...(user !== undefined ? { user } : {}),
      ...(pass !== undefined ? { pass } : {})
    }
  }

  /** An accepted route's CONNECT: the cluster name, then the credentials. */
  admit(r: Route, c: RouteConnectOp): { reason: RouteClosed; errText: string } | undefined {
    const log = this.server.log
    if (c.cluster !== undefined && c.cluster !== this.name && !this.takeName(c.cluster, c.dynamic === true)) {
      log.error(`${r.logPrefix()} - Rejecting connection, cluster name "${c.cluster}" does not match "${this.name}"`)
      return {
        reason: RouteClosed.ClusterNameConflict,
        errText: `Rejecting connection, cluster name "${c.cluster}" does not match "${this.name}"`
      }
    }
    const auth = this.options.authorization
    if (auth?.user !== undefined) {
      const ok = c.user === auth.user && (auth.password === undefined || passwordMatches(c.pass, auth.password))
      if (!ok) {
        log.error(`${r.logPrefix()} - Router authentication failed${c.user === undefined ? "" : ` for user "${c.user}"`}`)
        return { reason: RouteClosed.AuthenticationViolation, errText: ErrText.AuthorizationViolation }
      }
    }
    return undefined
  }

  /** The first INFO of a route: same cluster, one route (no pool), then who it is. */
  checkInfo(r: Route, info: RouteInfoOp): RouteClosed | undefined {
    const log = this.server.log
    if ((info.route_pool_idx ?? 0) > 0 || info.route_account !== undefined) {
      log.error(`${r.logPrefix()} - Refusing an extra pooled or per-account route from ${info.server_id}: this server keeps one route per server`)
      return RouteClosed.PoolMismatch
    }
    if (info.cluster !== undefined && info.cluster !== this.name && !this.takeName(info.cluster, info.cluster_dynamic === true)) {
      log.error(`${r.logPrefix()} - Rejecting connection, cluster name "${info.cluster}" does not match "${this.name}"`)
      return RouteClosed.ClusterNameConflict
    }
    return undefined
  }

  /**
   * A peer names another cluster: fine when one of the two names was made up (no name
   * configured): a made-up name gives way to a configured one, and of two made-up names
   * the smaller wins, so every server ends up with the same.
   */
  private takeName(theirs: string, theirsDynamic: boolean): boolean {
    if (!this.dynamicName) return theirsDynamic
    if (theirsDynamic && theirs > this.name) return true
    this.server.log.info(`Cluster name is now "${theirs}" (taken from a route)`)
    this.name = theirs
    if (!theirsDynamic) this.dynamicName = false
    return true
  }

  /** A route past its handshake: kept unless a route to that server is kept instead. */
  register(r: Route): void {
    const server = this.server
    const id = r.remoteId
    if (id === server.serverId) {
      server.log.debug(`${r.logPrefix()} - Detected route to self, ignoring`)
      if (r.solicit !== undefined) r.solicit.self = true
      r.close(RouteClosed.RouteToSelf)
      return
    }
    const existing = this.byId.get(id)
    if (existing !== undefined && existing !== r) {
      const keep = this.preferred(existing, r)
      const drop = keep === existing ? r : existing
      server.log.debug(`${drop.logPrefix()} - Duplicate route to ${id}: keeping rid:${keep.rid}`)
      if (drop.solicit !== undefined) drop.solicit.remoteId = id
      if (drop === existing) this.unregister(existing)
      drop.close(RouteClosed.DuplicateRoute)
      if (drop === r) return
    }
    this.byId.set(id, r)
    r.registered = true
    if (r.solicit !== undefined) {
      r.solicit.remoteId = id
      r.solicit.attempts = 0
    }
    // A configured route to the server that just called us: no need to call it too.
    const info = r.remoteInfo
    if (info?.port !== undefined) {
      for (const s of this.solicits) {
        if (s.remoteId === undefined && s.port === info.port && (s.host === info.host || s.host === r.conn.remoteAddress)) s.remoteId = id
      }
    }
    server.log.info(`${r.logPrefix()} - Route connection created${r.remoteName !== id ? ` (${r.remoteName})` : ""}`)
    // Everything this server wants, then the first PING (round-trip time).
    for (const [account, entries] of this.local) {
      for (const e of entries.values()) r.sendSub(account, e.subject, e.queue, e.n)
    }
    r.sendPing()
    r.nextPingAt = server.env.now() + server.options.pingIntervalMs
    this.env.wakeAt(r.nextPingAt)
    // The others learn of the new server (implicit routes), unless it is behind an address we cannot name.
    const gossip = this.gossipFor(r)
    if (gossip !== undefined) for (const o of this.byId.values()) if (o !== r) o.writeInfo(gossip)
    this.clientUrlsChanged()
    server.peerOwn?.linkUp(r)
  }

  /**
   * Of two routes to one server, the one both ends keep: between Switchyard servers, the
   * one solicited by the server with the smaller id (both ends know who solicited each);
   * with a nats-server, the older one, which is what nats-server keeps (observed: it
   * closes the newer as `Duplicate Route`).
   */
  private preferred(a: Route, b: Route): Route {
    if (b.remoteInfo?.switchyard === undefined) return a
    const me = this.server.serverId
    const solicitor = (r: Route) => (r.didSolicit ? me : r.remoteId)
    const sa = solicitor(a)
    const sb = solicitor(b)
    if (sa === sb) return a
    return sa < sb ? a : b
  }

  /** INFO naming a server `r` connects us to, for the other routes: `ip` is where to reach it. */
  private gossipFor(r: Route): Buffer | undefined {
    const info = r.remoteInfo
    if (info === undefined || info.port === undefined || info.port <= 0) return undefined
    const host = isAnyAddress(info.host) ? r.conn.remoteAddress : info.host!
    return encodeInfo({ ...info, ip: `nats-route://${hostPort(host, info.port)}/` })
  }

  /** A later INFO on a registered route: another server to connect to (gossip), or the peer's new client URLs. */
  infoUpdate(r: Route, info: RouteInfoOp): void {
    if (info.server_id !== r.remoteId) {
      this.learnRoute(info)
      return
    }
    r.remoteInfo = { ...r.remoteInfo, ...info }
    if (info.max_payload !== undefined && info.max_payload > 0) r.peerMaxPayload = info.max_payload
    if (info.headers !== undefined) r.peerHeaders = info.headers && !this.server.options.noHeaderSupport
    this.clientUrlsChanged()
  }

  private learnRoute(info: RouteInfoOp): void {
    const id = info.server_id
    if (id === this.server.serverId || this.byId.has(id) || info.ip === undefined) return
    const u = parseRouteUrl(info.ip)
    if (u === undefined) return
    const known = this.solicits.find((s) => s.remoteId === id || (s.host === u.host && s.port === u.port))
    if (known !== undefined) {
      // Told again of a learned route still being tried: its attempts count from this news
      // (a call already out does not count), so a server that gossip says is up is not
      // given up on because of calls made before (say, across a partition since healed).
      if (!known.configured && known.route === undefined) {
        known.attempts = 0
        known.renewed = known.dialing
      }
      return
    }
    const auth = this.options.authorization
    const now = this.server.env.now()
    this.solicits.push(newSolicit({ host: u.host, port: u.port, user: auth?.user, password: auth?.password }, false, now))
    this.server.log.debug(`Learned a route to ${id} at ${hostPort(u.host, u.port)}`)
    this.env.wakeAt(now)
  }

  /** Out of the table of kept routes (its interest forgotten). */
  private unregister(r: Route): void {
    if (!r.registered) return
    r.registered = false
    if (this.byId.get(r.remoteId) === r) this.byId.delete(r.remoteId)
    this.interest.dropRemote(r)
    this.leafs?.routeGone(r)
    this.leafs?.routeGone(r.leafShadow)
    this.server.router.remoteInterestChanged()
  }

  /** A route is gone (either side closed it). */
  routeClosed(r: Route, reason: RouteClosed): void {
    const server = this.server
    const wasKept = r.registered
    this.unregister(r)
    this.routes.delete(r.rid)
    const log = reason === RouteClosed.DuplicateRoute || reason === RouteClosed.RouteToSelf || this.shuttingDown ? server.log.debug : server.log.info
    // Silence then a close (or our handshake timeout) from a server we called: most likely it
    // waited for a TLS handshake we did not start (a TLS route listener speaks it first).
    if (r.didSolicit && r.remoteInfo === undefined && !this.shuttingDown && this.options.tls === undefined &&
      (reason === RouteClosed.ClientClosed || reason === RouteClosed.HandshakeTimeout || reason === RouteClosed.ReadError)) {
      server.log.error(`${r.logPrefix()} - No INFO from the route at ${r.solicit!.url} before it ${reason === RouteClosed.HandshakeTimeout ? "timed out" : "closed"}: ` +
        "a server with TLS on its routes (cluster.tls) waits for a TLS handshake first; is TLS configured on both sides?")
    }
    log.call(server.log, `${r.logPrefix()} - Router connection closed: ${reason}`)
    const now = server.env.now()
    const s = r.solicit
    if (s !== undefined) {
      s.route = undefined
      if (reason !== RouteClosed.DuplicateRoute && !s.self) this.scheduleRetry(s, now, wasKept)
    }
    if (wasKept) {
      // Configured routes that gave way to this one call again now that it is gone.
      for (const o of this.solicits) {
        if (o !== s && o.route === undefined && !o.dialing && o.remoteId === r.remoteId) {
          o.nextAt = now + reconnectDelay(0, server.env.random)
          this.env.wakeAt(o.nextAt)
        }
      }
      this.clientUrlsChanged()
    }
  }

  private scheduleRetry(s: Solicit, now: number, wasUp: boolean): void {
    if (this.shuttingDown) return
    if (wasUp || s.renewed) s.attempts = 0
    else s.attempts++
    s.renewed = false
    if (!s.configured && s.attempts > this.options.connectRetries) {
      this.solicits.splice(this.solicits.indexOf(s), 1)
      this.server.log.debug(`Giving up on the route to ${s.url} (learned, connect_retries ${this.options.connectRetries})`)
      return
    }
    s.nextAt = now + reconnectDelay(s.attempts, this.server.env.random)
    this.env.wakeAt(s.nextAt)
  }

  // ---- timers ----

  /** Connects what is due, runs each route's timers; returns when next due (undefined: nothing). */
  tick(now: number): number | undefined {
    let next = Infinity
    for (const s of [...this.solicits]) {
      if (s.route !== undefined || s.dialing || s.self || this.shuttingDown) continue
      // A route to that server is up (it called us): nothing to do until it goes.
      if (s.remoteId !== undefined && this.byId.has(s.remoteId)) continue
      if (now >= s.nextAt) this.dial(s)
      else next = Math.min(next, s.nextAt)
    }
    for (const r of [...this.routes.values()]) if (!r.closed) next = Math.min(next, r.timers(now))
    return next === Infinity ? undefined : next
  }

  private dial(s: Solicit): void {
    const dial = this.env.dial
    if (dial === undefined) return
    s.dialing = true
    this.server.log.debug(`Trying to connect to route on ${hostPort(s.host, s.port)}`)
    dial(s.host, s.port, ROUTE_DIAL_TIMEOUT_MS, (conn) => {
      s.dialing = false
      if (this.shuttingDown) {
        conn.destroy()
        return { onData: () => {}, onDrain: () => {}, onClose: () => {} }
      }
      return this.handlers(this.open(conn, s))
    }, (e) => {
      s.dialing = false
      if (e instanceof TlsHandshakeError) this.tlsFailed({ remoteAddress: s.host, remotePort: s.port }, e, s)
      else this.server.log.debug(`Error trying to connect to route ${s.url}: ${e.message}`)
      this.scheduleRetry(s, this.server.env.now(), false)
    }, this.tlsDial(s))
  }

  // ---- interest ----

  /** A local subscription came: announced to every route when it is the first on its subject (or a queue group's count changed). */
  subscribed(account: Account, s: Subscription): void {
    if (!s.principal.announce || s.principal.remote) return
    this.announce(account.name, s.subject, s.queue ?? "", 1)
  }

  unsubscribed(account: Account, s: Subscription): void {
    if (!s.principal.announce || s.principal.remote) return
    this.announce(account.name, s.subject, s.queue ?? "", -1)
  }

  /**
   * This server's interest in a subject of an account grew or shrank by `delta` (a local
   * subscription, or the interest of a leaf node behind this server, a queue group by its
   * weight): the routes hear RS+ for the first, a queue group's new count, RS- for the last.
   * A change made by a leaf node's interest names the leaf's cluster (`origin`): it goes as
   * `LS+ <origin>` (LS- for the last), as nats-server 2.9.10 sends it; a route that joins
   * later hears everything as RS+, as from nats-server.
   */
  announce(account: string, subject: string, queue: string, delta: number, origin = ""): void {
    let entries = this.local.get(account)
    if (entries === undefined) {
      if (delta <= 0) return
      this.local.set(account, (entries = new Map()))
    }
    const key = queue === "" ? subject : `${subject} ${queue}`
    let e = entries.get(key)
    if (e === undefined) {
      if (delta <= 0) return
      entries.set(key, (e = { subject, queue, n: 0 }))
    }
    const was = e.n
    e.n += delta
    if (e.n <= 0) {
      entries.delete(key)
      if (entries.size === 0) this.local.delete(account)
      for (const r of this.byId.values()) r.sendUnsub(account, subject, queue, origin !== "")
    } else if (queue !== "" ? e.n !== was : was === 0) {
      for (const r of this.byId.values()) r.sendSub(account, subject, queue, e.n, origin)
    }
  }

  /** This server's interest as the routes were told it: per account, each subject (and queue group, with its count). */
  announced(): Array<{ readonly account: string; readonly subject: string; readonly queue: string; readonly n: number }> {
    const out: Array<{ account: string; subject: string; queue: string; n: number }> = []
    for (const [account, entries] of this.local) for (const e of entries.values()) out.push({ account, subject: e.subject, queue: e.queue, n: e.n })
    return out
  }

  /** RS+ from a route. */
  remoteSub(r: Route, i: PeerInterest): void {
    if (r.permissions !== undefined && !r.permissions.canSubscribe(i.subject, i.queue)) {
      this.server.log.debug(`${r.logPrefix()} - Route interest in "${i.subject}" outside cluster export permissions ignored`)
      return
    }
    const change = this.interest.add(r, i)
    if (change === "invalid") {
      this.server.log.error(`${r.logPrefix()} - Route sent an invalid subscription: "${i.subject}"${i.queue === "" ? "" : ` "${i.queue}"`}`)
      r.sendErr("Invalid Subscription")
    } else if (change === "limit") {
      this.server.log.error(`${r.logPrefix()} - Route announced more than ${this.maxInterest} subscriptions: closing the route`)
      r.close(RouteClosed.InterestLimit, "Maximum Subscriptions Exceeded")
    } else if (change !== "unchanged") {
      this.leafs?.routeInterest(i.account, i.fromLeaf ? r.leafShadow : r, i.subject, i.queue, i.weight)
      this.server.router.remoteInterestChanged(i.account)
    }
  }

  /** RS- from a route. */
  remoteUnsub(r: Route, i: PeerInterest): void {
    if (this.interest.remove(r, i)) {
      this.leafs?.routeInterest(i.account, i.fromLeaf ? r.leafShadow : r, i.subject, i.queue, 0)
      this.server.router.remoteInterestChanged(i.account)
    }
  }

  // ---- forwarding: the router's RemoteRouting ----

  /**
   * A message published here, after its local subscribers: once to each server with
   * interest, naming the queue groups it is to serve (those no local member took, each
   * to one server picked by its members' weight). Allocates nothing when no server is
   * interested.
   */
  forward(d: Delivery, served: Array<string>): number {
    // A leaf connection's message names the queue groups its other side picked this server for.
    return forwardOnce(this.interest, d, served, d.origin.queues, undefined, this.touched, this.server.env.random)
  }

  // ---- client URLs ----

  /** This server's client URLs as other servers and clients are told (`host:port`). */
  ownClientUrls(): Array<string> {
    const s = this.server
    if (!isAnyAddress(s.host)) return [hostPort(s.host, s.port)]
    return s.machineAddresses().filter((a) => a.family === "IPv4" && !a.address.startsWith("127.")).map((a) => hostPort(a.address, s.port))
  }

  /** What clients' INFO lists in connect_urls: this server's and every routed server's, unless no_advertise. */
  connectUrls(): ReadonlyArray<string> {
    return this.clientUrls
  }

  private clientUrlsChanged(): void {
    if (this.options.noAdvertise) return
    const urls = new Set(this.byId.size === 0 || this.lameDuck ? [] : this.ownClientUrls())
    // A server in lame duck mode is going away: clients are not sent there.
    for (const r of this.byId.values()) if (r.remoteInfo?.ldm !== true) for (const u of r.remoteInfo?.connect_urls ?? []) urls.add(u)
    const next = [...urls].sort()
    if (next.length === this.clientUrls.length && next.every((u, i) => u === this.clientUrls[i])) return
    this.clientUrls = next
    this.server.connectUrlsChanged()
  }

  // ---- monitoring and shutdown ----

  snapshots(): Array<RouteSnapshot> {
    return [...this.byId.values()].map((r) => r.snapshot())
  }

  snapshot(): ClusterSnapshot {
    const at = this.advertisedRoute()
    return {
      name: this.name,
      host: at.host,
      port: at.port,
      urls: this.solicits.filter((s) => s.configured).map((s) => hostPort(s.host, s.port)),
      tlsRequired: this.options.tls !== undefined,
      tlsVerify: this.options.tls?.verify === true,
      poolSize: 0,
      authTimeoutMs: this.handshakeTimeoutMs
    }
  }

  /**
   * max_payload or max_control_line changed (a reload): routes read the next op with the
   * new limits, and the other servers get an INFO with the new max_payload.
   */
  parserLimitsChanged(): void {
    const o = this.server.options
    for (const r of this.routes.values()) {
      r.parser.setLimits({ maxControlLine: o.maxControlLine, maxPayload: o.maxPayload })
      if (r.registered) r.writeInfo(this.infoFor(r))
    }
  }

  /**
   * Lame duck mode: the other servers get an INFO with `ldm: true`, so that they stop
   * giving their clients this server's URLs (as nats-server does); routes stay up until
   * the server stops, carrying messages for the clients still here.
   */
  enterLameDuck(): void {
    if (this.lameDuck) return
    this.lameDuck = true
    for (const r of this.routes.values()) if (r.registered) r.writeInfo(this.infoFor(r))
  }

  shutdown(): void {
    if (this.shuttingDown) return
    this.shuttingDown = true
    for (const r of [...this.routes.values()]) r.close(RouteClosed.ServerShutdown)
  }
}

const newSolicit = (
  u: { host: string; port: number; user: string | undefined; password: string | undefined },
  configured: boolean,
  now: number
): Solicit => ({
  url: `nats-route://${hostPort(u.host, u.port)}`,
  host: u.host,
  port: u.port,
  user: u.user,
  password: u.password,
  configured,
  attempts: 0,
  nextAt: now,
  dialing: false,
  route: undefined,
  remoteId: undefined,
  self: false,
  renewed: false
})
