// The JSON of INFO and CONNECT on route and leaf-node connections: the fields nats-server
// sends and reads, as plain Schema structs (their JSON must match nats-server's, so no
// `_tag`). Every field but the server id is optional, and fields a peer adds that are not
// listed here are ignored when decoding, so newer peers decode too. What nats-server
// 2.9.10 was observed to send is in docs/cluster-protocol.md.

import { Either, ParseResult, Schema } from "effect"

const Int = Schema.Int
const Count = Schema.NonNegativeInt
const Strings = Schema.Array(Schema.String)

/** `import` / `export` permissions a route announces. */
export const SubjectPermissionOp = Schema.Struct({
  allow: Schema.optional(Strings),
  deny: Schema.optional(Strings)
})

/** What a server's INFO says about it on routes and leaf connections alike. */
const serverInfoFields = {
  server_id: Schema.String,
  server_name: Schema.optional(Schema.String),
  version: Schema.optional(Schema.String),
  /** the protocol level: 2 on nats-server 2.9 routes, 1 on its leaf connections */
  proto: Schema.optional(Int),
  go: Schema.optional(Schema.String),
  /** where the route or leaf listener is */
  host: Schema.optional(Schema.String),
  port: Schema.optional(Count),
  headers: Schema.optional(Schema.Boolean),
  auth_required: Schema.optional(Schema.Boolean),
  tls_required: Schema.optional(Schema.Boolean),
  tls_verify: Schema.optional(Schema.Boolean),
  max_payload: Schema.optional(Count),
  /** for signing nkey or JWT credentials in CONNECT */
  nonce: Schema.optional(Schema.String),
  /** the cluster name: a route from another cluster is refused */
  cluster: Schema.optional(Schema.String)
}

/**
 * INFO on a route, sent by both ends: the accepting server first, the soliciting one right
 * after its CONNECT. Later INFOs update what the peer knows (client URLs, gossiped routes).
 */
export const RouteInfoOp = Schema.Struct({
  ...serverInfoFields,
  tls_available: Schema.optional(Schema.Boolean),
  /** the cluster name was picked at random and may be taken over from a peer */
  cluster_dynamic: Schema.optional(Schema.Boolean),
  /** the client URLs of the sender, for client INFO `connect_urls` */
  connect_urls: Schema.optional(Strings),
  ws_connect_urls: Schema.optional(Strings),
  /** gossip: another server's route URL to connect to (`nats-route://host:port/`) */
  ip: Schema.optional(Schema.String),
  /** understands `LS+ <origin> ...` and `LMSG <origin> ...` (leaf node origin cluster) */
  lnoc: Schema.optional(Schema.Boolean),
  leafnode_urls: Schema.optional(Strings),
  gateway_url: Schema.optional(Schema.String),
  import: Schema.optional(SubjectPermissionOp),
  export: Schema.optional(SubjectPermissionOp),
  jetstream: Schema.optional(Schema.Boolean),
  /** the sender is in lame duck mode: its client URLs are no longer given to clients */
  ldm: Schema.optional(Schema.Boolean),
  // nats-server 2.10+: route pools, per-account routes and compression.
  route_pool_size: Schema.optional(Count),
  route_pool_idx: Schema.optional(Count),
  route_account: Schema.optional(Schema.String),
  compression: Schema.optional(Schema.String),
  lnocu: Schema.optional(Schema.Boolean),
  /** the sender is a Switchyard server (its version): it resolves duplicate routes by server id */
  switchyard: Schema.optional(Schema.String)
})
export type RouteInfoOp = typeof RouteInfoOp.Type

/** CONNECT on a route, sent by the soliciting server after the accepting one's INFO. */
export const RouteConnectOp = Schema.Struct({
  echo: Schema.optional(Schema.Boolean),
  verbose: Schema.optional(Schema.Boolean),
  pedantic: Schema.optional(Schema.Boolean),
  user: Schema.optional(Schema.String),
  pass: Schema.optional(Schema.String),
  auth_token: Schema.optional(Schema.String),
  tls_required: Schema.optional(Schema.Boolean),
  headers: Schema.optional(Schema.Boolean),
  /** the sender's server id */
  name: Schema.optional(Schema.String),
  cluster: Schema.optional(Schema.String),
  dynamic: Schema.optional(Schema.Boolean),
  lnoc: Schema.optional(Schema.Boolean),
  gateway: Schema.optional(Schema.String)
})
export type RouteConnectOp = typeof RouteConnectOp.Type

/**
 * INFO on a leaf-node connection, from the accepting server (the hub): once on connect
 * (asking for CONNECT, with a nonce), again after the CONNECT was accepted (`connect_info`,
 * with the account the connection is bound to), and later for URL updates.
 */
export const LeafInfoOp = Schema.Struct({
  ...serverInfoFields,
  /** the address the hub saw the connection come from */
  ip: Schema.optional(Schema.String),
  client_id: Schema.optional(Count),
  domain: Schema.optional(Schema.String),
  jetstream: Schema.optional(Schema.Boolean),
  info_on_connect: Schema.optional(Schema.Boolean),
  /** this INFO answers an accepted CONNECT */
  connect_info: Schema.optional(Schema.Boolean),
  connect_urls: Schema.optional(Strings),
  /** where leaf nodes may connect: the hub cluster's leaf listeners */
  leafnode_urls: Schema.optional(Strings),
  /** the hub account the connection is bound to */
  remote_account: Schema.optional(Schema.String),
  compression: Schema.optional(Schema.String),
  xkey: Schema.optional(Schema.String),
  /** the hub is a Switchyard server (its version) */
  switchyard: Schema.optional(Schema.String)
})
export type LeafInfoOp = typeof LeafInfoOp.Type

/** CONNECT on a leaf-node connection, from the soliciting server (the leaf). */
export const LeafConnectOp = Schema.Struct({
  version: Schema.optional(Schema.String),
  user: Schema.optional(Schema.String),
  pass: Schema.optional(Schema.String),
  auth_token: Schema.optional(Schema.String),
  jwt: Schema.optional(Schema.String),
  nkey: Schema.optional(Schema.String),
  sig: Schema.optional(Schema.String),
  tls_required: Schema.optional(Schema.Boolean),
  server_id: Schema.optional(Schema.String),
  /** the leaf server's name */
  name: Schema.optional(Schema.String),
  /** the leaf's cluster name (its server name when it has no cluster) */
  cluster: Schema.optional(Schema.String),
  headers: Schema.optional(Schema.Boolean),
  /** the soliciting side is the hub (a leaf connection made in the other direction) */
  hub: Schema.optional(Schema.Boolean),
  /** the hub account to bind to, when the credentials allow a choice */
  remote_account: Schema.optional(Schema.String),
  domain: Schema.optional(Schema.String),
  jetstream: Schema.optional(Schema.Boolean),
  deny_pub: Schema.optional(Strings),
  deny_sub: Schema.optional(Strings),
  proto: Schema.optional(Int),
  compression: Schema.optional(Schema.String),
  /** the leaf is a Switchyard server (its version) */
  switchyard: Schema.optional(Schema.String)
})
export type LeafConnectOp = typeof LeafConnectOp.Type

/** Why an INFO or CONNECT was refused: not JSON, or a field of the wrong type. */
export interface HandshakeError {
  readonly op: "INFO" | "CONNECT"
  readonly message: string
}

const decoder = <A, I>(op: HandshakeError["op"], schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(Schema.parseJson(schema))
  return (json: string): Either.Either<A, HandshakeError> =>
    Either.mapLeft(decode(json), (e) => ({ op, message: ParseResult.TreeFormatter.formatErrorSync(e) }))
}

export const decodeRouteInfo = decoder("INFO", RouteInfoOp)
export const decodeRouteConnect = decoder("CONNECT", RouteConnectOp)
export const decodeLeafInfo = decoder("INFO", LeafInfoOp)
export const decodeLeafConnect = decoder("CONNECT", LeafConnectOp)

/**
 * What a soliciting leaf says when the listener it reached is no leaf-node listener. A
 * nats-server leaf (2.9.10) takes the first INFO as a hub's only when it has a `client_id`
 * above 0 and a `leafnode_urls` list (empty will do): a client port's INFO has a client_id
 * but no leafnode_urls, a route port's neither. Anything else it logs as this and closes.
 */
export const WRONG_PORT = "attempted to connect to wrong port"

/** The first INFO on a leaf connection we solicited came from a leaf-node listener (see WRONG_PORT). */
export const isLeafListenerInfo = (info: LeafInfoOp): boolean =>
  info.client_id !== undefined && info.client_id > 0 && info.leafnode_urls !== undefined

/** What a hub says about itself in the INFOs of an accepted leaf connection. */
export interface HubInfoFields {
  readonly server_id: string
  readonly server_name: string
  readonly version: string
  /** the leaf listener */
  readonly host: string
  readonly port: number
  readonly headers: boolean
  readonly auth_required: boolean
  readonly tls_required?: boolean
  /** leaf nodes must present a certificate */
  readonly tls_verify?: boolean
  readonly max_payload: number
  /** the connection's number on the hub, above 0 */
  readonly client_id: number
  /** the leaf listeners of the hub's cluster ([] when not advertised) */
  readonly leafnode_urls: ReadonlyArray<string>
  readonly cluster?: string
  readonly domain?: string
  /** the hub is a Switchyard server (its version) */
  readonly switchyard?: string
}

/**
 * The hub's first INFO on an accepted leaf connection, in nats-server's field order: the
 * nonce to sign credentials with, and `info_on_connect`, which makes a nats-server leaf hold
 * its interest back until the INFO answering its CONNECT (hubConnectInfo) arrives; without
 * that answer it gives up after about 2 s with -ERR 'Stale Leaf Node Connection - Closing'.
 */
export const hubInfo = (f: HubInfoFields, nonce: string): LeafInfoOp => {
  if (!Number.isInteger(f.client_id) || f.client_id < 1) throw new RangeError(`a hub's client_id must be above 0 (got ${f.client_id})`)
  return {
    server_id: f.server_id,
    server_name: f.server_name,
    version: f.version,
    proto: 1,
    host: f.host,
    port: f.port,
    headers: f.headers,
    auth_required: f.auth_required,
    ...(f.tls_required === undefined ? {} : { tls_required: f.tls_required }),
    ...(f.tls_verify === true ? { tls_verify: true } : {}),
    max_payload: f.max_payload,
    client_id: f.client_id,
    nonce,
    ...(f.cluster === undefined ? {} : { cluster: f.cluster }),
    ...(f.domain === undefined ? {} : { domain: f.domain }),
    info_on_connect: true,
    leafnode_urls: f.leafnode_urls,
    ...(f.switchyard === undefined ? {} : { switchyard: f.switchyard })
  }
}

/** The INFO answering a leaf's accepted CONNECT: the first one without its nonce, saying which account the connection is bound to. */
export const hubConnectInfo = (f: HubInfoFields, account: string): LeafInfoOp => {
  const { nonce: _, ...first } = hubInfo(f, "")
  return { ...first, connect_info: true, remote_account: account }
}

/**
 * The prefix of the subjects nats-server uses to detect leaf-node loops: each server
 * subscribes `$LDS.<random>` per account on its leaf connections (and a hub passes a leaf's
 * on to its other leaf connections in the account); a server that gets its own `$LDS.`
 * subject back through a leaf connection is in a loop.
 */
export const LOOP_DETECTION_PREFIX = "$LDS."

export const isLoopDetectionSubject = (subject: string): boolean => subject.startsWith(LOOP_DETECTION_PREFIX)

/** An account's loop-detection subject, from a random token (nats-server uses 22 characters). */
export const loopDetectionSubject = (token: string): string => LOOP_DETECTION_PREFIX + token

/**
 * The -ERR text with which either end of a leaf connection closes it on seeing its own
 * loop-detection subject come back in LS+; the soliciting end waits LOOP_RECONNECT_DELAY_MS
 * before it connects again.
 */
export const loopDetectedError = (account: string): string =>
  `Loop detected for leafnode account="${account}". Delaying attempt to reconnect for 30s`

export const LOOP_RECONNECT_DELAY_MS = 30_000
