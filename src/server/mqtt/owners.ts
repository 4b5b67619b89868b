// MQTT client ids across servers. A session lives on the server its client connects to;
// when a client connects, that server announces that it now holds the client id, on
// `$MQTT.owner.<hash of the client id>` in the client's account. The subject is announced
// to routes and leaf connections like any subscription, so every server with MQTT clients
// in the account hears it; one that still holds a connection with that client id, made
// before, closes it (a takeover, cluster-wide: nats-server coordinates the same through
// its `$MQTT_sess` stream). Announcements this server made itself, or that a client of
// this server published, are not taken as another server's.
import { createHash } from "node:crypto"
import type { Delivery, InternalPrincipal } from "../../engine/principal.js"
import type { Server } from "../server.js"

/** Where a server says it holds a client id: `$MQTT.owner.<hash>`, per account. */
export const OWNER_PREFIX = "$MQTT.owner."

/** The subject of a client id's announcements (a hash: a client id may hold any character). */
export const ownerSubject = (clientId: string): string =>
  `${OWNER_PREFIX}${createHash("sha256").update(clientId, "utf8").digest("base64url").slice(0, 22)}`

/** What a server says when a client connects to it. */
export interface OwnerAnnouncement {
  readonly server_id: string
  readonly server_name: string
  readonly client_id: string
  /** When the server accepted the connection (ms since the epoch, its clock). */
  readonly since: number
}

/** An announcement's payload, or undefined when it is not one (anyone may publish on the subject). */
export const decodeAnnouncement = (text: string): OwnerAnnouncement | undefined => {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof v !== "object" || v === null) return undefined
  const a = v as Record<string, unknown>
  if (typeof a.server_id !== "string" || typeof a.server_name !== "string" || typeof a.client_id !== "string") return undefined
  if (typeof a.since !== "number" || !Number.isFinite(a.since)) return undefined
  return { server_id: a.server_id, server_name: a.server_name, client_id: a.client_id, since: a.since }
}

/**
 * Whether this server's connection (claimed at `since` here, by server `serverId`) is the
 * older one and gives way to the one announced: the earlier claim loses; on a tie the
 * smaller server id does, so that of two clients connecting at once exactly one stays.
 */
export const givesWay = (since: number, serverId: string, other: OwnerAnnouncement): boolean =>
  since < other.since || (since === other.since && serverId < other.server_id)

export class MqttOwners {
  private readonly principals = new Map<string, InternalPrincipal>()

  constructor(
    private readonly server: Server,
    /** Another server took `clientId` of `account` (the bridge closes its connection if it is the older). */
    private readonly taken: (account: string, a: OwnerAnnouncement) => void
  ) {}

  /** Say that this server holds `clientId` in `account` since `since` (and listen there from now on). */
  announce(account: string, clientId: string, since: number): void {
    const p = this.listen(account)
    const s = this.server
    const body: OwnerAnnouncement = { server_id: s.serverId, server_name: s.serverName, client_id: clientId, since }
    s.router.publish(p, ownerSubject(clientId), "", undefined, Buffer.from(JSON.stringify(body)))
  }

  /** The account's listener on `$MQTT.owner.*`, made once (before this server's first announcement there). */
  private listen(account: string): InternalPrincipal {
    let p = this.principals.get(account)
    if (p !== undefined) return p
    p = this.server.router.internal(account, "mqtt-owners")
    this.principals.set(account, p)
    this.server.router.subscribe(p, `${OWNER_PREFIX}*`, undefined, (d: Delivery) => this.heard(account, d))
    return p
  }

  private heard(account: string, d: Delivery): void {
    // Only what came from another server: this server's own announcements, and anything a
    // client here publishes on the subject, are not another server's claim.
    if (d.origin.publisher?.foreign !== true) return
    const a = decodeAnnouncement(d.buf.toString("utf8", d.payloadStart, d.end))
    if (a === undefined || a.server_id === this.server.serverId || ownerSubject(a.client_id) !== d.subject) return
    this.taken(account, a)
  }
}
