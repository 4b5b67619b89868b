// After a configuration reload changed who may connect and what they may do, every
// connected NATS client is held to the new rules, as nats-server does: a client whose
// user is gone, whose password or token changed, or whose account changed is
// disconnected; the others take their new permissions, and lose (with an -ERR) the
// subscriptions those permissions no longer allow.
import { type Authenticator, reauthenticate } from "./nats/auth.js"
import { ClientPermissions } from "../engine/permissions.js"
import { GLOBAL_ACCOUNT } from "../engine/principal.js"
import type { Client } from "./nats/client.js"
import { ClosedReason, ErrText } from "./reasons.js"
import type { Server } from "./server.js"

/**
 * What nats-server tells a client whose subscription a reload took away; with the
 * queue named, as for a refused SUB, so client libraries find the queue subscription.
 */
export const revokedSubscriptionText = (subject: string, queue: string | undefined, sid: string): string =>
  `Permissions Violation for Subscription to "${subject}"${queue === undefined ? "" : ` using queue "${queue}"`} (sid "${sid}")`

const who = (c: Client): string => (c.user === "" ? "Client" : `User "${c.user}"`)

/** Hold every connected NATS client to `server.auth` (just replaced; `previous` is the one they were admitted by). */
export const reauthorizeClients = (server: Server, previous: Authenticator): void => {
  for (const c of [...server.clients.values()]) {
    if (c.closed || !c.connectReceived) continue
    const res = server.authRequired
      ? reauthenticate(previous, server.auth, c.connectOpts ?? {}, c.nonce)
      : { account: GLOBAL_ACCOUNT, user: "", permissions: undefined }
    if (res === undefined || res.account !== c.account.name) {
      server.log.warn(`${c.logPrefix()} - ${who(c)} is no longer authorized after a configuration reload: closing`)
      c.close(ClosedReason.AuthenticationViolation, ErrText.AuthorizationViolation)
      continue
    }
    c.user = res.user
    c.perms = res.permissions === undefined ? undefined : new ClientPermissions(res.permissions)
    revokeForbiddenSubscriptions(server, c)
  }
}

/** Subscriptions the client's permissions no longer allow are removed, and the client is told. */
const revokeForbiddenSubscriptions = (server: Server, c: Client): void => {
  const perms = c.perms
  if (perms === undefined) return
  for (const s of [...c.subs.values()]) {
    if (s.handler !== undefined || perms.canSubscribe(s.subject, s.queue ?? "")) continue
    c.removeSub(s)
    c.sendErr(revokedSubscriptionText(s.subject, s.queue, s.sid))
    server.log.warn(`${c.logPrefix()} - Removed subscription "${s.subject}" (sid "${s.sid}") of ${c.user === "" ? "the client" : `user "${c.user}"`}: not permitted after a configuration reload`)
  }
}
