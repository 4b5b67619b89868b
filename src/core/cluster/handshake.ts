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
  lame_duck_mode: Schema.optional(Schema.Boolean),
  // nats-server 2.10+: route pools, per-account routes and compression.
  route_pool_size: Schema.optional(Count),
  route_pool_idx: Schema.optional(Count),
  route_account: Schema.optional(Schema.String),
  compression: Schema.optional(Schema.String),
  lnocu: Schema.optional(Schema.Boolean)
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
  xkey: Schema.optional(Schema.String)
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
  compression: Schema.optional(Schema.String)
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
 * The prefix of the subjects nats-server uses to detect leaf-node loops: each server
 * subscribes `$LDS.<random>` per account on its leaf connections; a server that gets its
 * own `$LDS.` subject back through a leaf connection is in a loop.
 */
export const LOOP_DETECTION_PREFIX = "$LDS."

export const isLoopDetectionSubject = (subject: string): boolean => subject.startsWith(LOOP_DETECTION_PREFIX)
