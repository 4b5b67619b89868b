// The server's side of a v5 CONNECT: what it refuses before a session exists, and the
// CONNACK that accepts one, with the limits and capabilities the client must then obey
// and the values both sides use from there on (keep alive, session expiry).
import { sessionExpiry, SESSION_NEVER_EXPIRES } from "./expiry.js"
import { DEFAULT_RECEIVE_MAXIMUM } from "./flow.js"
import { responseInformationFor } from "./information.js"
import { ReasonCode } from "./reason.js"
import type { Connack, Connect } from "./types.js"

/** What a listener allows its v5 clients; the defaults are the standard's. */
export interface ServerLimits {
  /** QoS 1/2 PUBLISHes a client may have unacknowledged (65,535: no limit announced). */
  readonly receiveMaximum?: number
  /** Largest packet the server accepts (absent: the protocol's limit). */
  readonly maximumPacketSize?: number
  /** Topic Aliases a client may set (0: none). */
  readonly topicAliasMaximum?: number
  /** Longest Session Expiry Interval the server keeps a session for. */
  readonly maximumSessionExpiry?: number
  /** Highest QoS the server accepts in PUBLISH (2: all). */
  readonly maximumQoS?: 0 | 1 | 2
  readonly retainAvailable?: boolean
  readonly wildcardSubscriptionAvailable?: boolean
  readonly subscriptionIdentifiersAvailable?: boolean
  readonly sharedSubscriptionAvailable?: boolean
  /** Longest Keep Alive the server allows (it assigns this to a client asking for 0 or more). */
  readonly maximumKeepAlive?: number
  /** Response Information offered to clients that ask for it. */
  readonly responseInformation?: string
}

/** A CONNECT the server refuses: the CONNACK code and why. */
export interface Refusal {
  readonly code: number
  readonly reason: string
  readonly ruleId?: string
}

/**
 * Why the server refuses a well-formed CONNECT before looking at sessions or
 * credentials, or undefined: enhanced authentication it does not implement (0x8C Bad
 * authentication method [MQTT-4.12.0-1]), a will above its Maximum QoS (0x9B
 * [MQTT-3.2.2-12]), a retained will without retained messages (0x9A [MQTT-3.2.2-13]).
 */
export const connectRefusal = (c: Connect, limits: ServerLimits = {}): Refusal | undefined => {
  const method = c.properties.authenticationMethod
  if (method !== undefined) return { code: ReasonCode.BadAuthenticationMethod, reason: `authentication method ${JSON.stringify(method)} is not supported`, ruleId: "MQTT-4.12.0-1" }
  const w = c.will
  if (w !== undefined && w.qos > (limits.maximumQoS ?? 2)) return { code: ReasonCode.QoSNotSupported, reason: `Will QoS ${w.qos} above the Maximum QoS ${limits.maximumQoS}`, ruleId: "MQTT-3.2.2-12" }
  if (w?.retain === true && limits.retainAvailable === false) return { code: ReasonCode.RetainNotSupported, reason: "retained will without retained messages", ruleId: "MQTT-3.2.2-13" }
  return undefined
}

/** The values a connection runs with once the CONNACK is sent. */
export interface Negotiated {
  readonly connack: Connack
  /** Seconds; 0: no keep alive. The server's Server Keep Alive when it sends one [MQTT-3.2.2-21], else the client's [MQTT-3.2.2-22]. */
  readonly keepAlive: number
  readonly sessionExpiryInterval: number
  /** The client's limits on what the server sends. */
  readonly clientReceiveMaximum: number
  readonly clientMaximumPacketSize: number
  readonly clientTopicAliasMaximum: number
  /** Absent in the CONNECT: 1 (3.1.2.11.7). */
  readonly requestProblemInformation: boolean
}

/**
 * The CONNACK accepting `c` (`assignedClientId` when its Client Identifier was empty,
 * [MQTT-3.2.2-16]), with only the properties that differ from the standard's defaults,
 * and what both sides use from then on.
 */
export const acceptConnect = (c: Connect, limits: ServerLimits, sessionPresent: boolean, assignedClientId?: string): Negotiated => {
  const expiry = sessionExpiry(c.properties.sessionExpiryInterval, limits.maximumSessionExpiry ?? SESSION_NEVER_EXPIRES)
  const maxKeepAlive = limits.maximumKeepAlive
  const serverKeepAlive = maxKeepAlive !== undefined && (c.keepalive === 0 || c.keepalive > maxKeepAlive) ? maxKeepAlive : undefined
  const receiveMaximum = limits.receiveMaximum ?? DEFAULT_RECEIVE_MAXIMUM
  const props: Record<string, unknown> = {
    sessionExpiryInterval: expiry.announce,
    assignedClientIdentifier: c.clientId === "" ? assignedClientId : undefined,
    serverKeepAlive,
    responseInformation: responseInformationFor(c.properties.requestResponseInformation, limits.responseInformation),
    receiveMaximum: receiveMaximum === DEFAULT_RECEIVE_MAXIMUM ? undefined : receiveMaximum,
    topicAliasMaximum: (limits.topicAliasMaximum ?? 0) === 0 ? undefined : limits.topicAliasMaximum,
    maximumQoS: (limits.maximumQoS ?? 2) === 2 ? undefined : limits.maximumQoS,
    retainAvailable: limits.retainAvailable === false ? false : undefined,
    maximumPacketSize: limits.maximumPacketSize,
    wildcardSubscriptionAvailable: limits.wildcardSubscriptionAvailable === false ? false : undefined,
    subscriptionIdentifiersAvailable: limits.subscriptionIdentifiersAvailable === false ? false : undefined,
    sharedSubscriptionAvailable: limits.sharedSubscriptionAvailable === false ? false : undefined
  }
  for (const k of Object.keys(props)) if (props[k] === undefined) delete props[k]
  if (c.clientId === "" && assignedClientId === undefined) throw new Error("acceptConnect: an empty Client Identifier needs an assigned one [MQTT-3.2.2-16]")
  return {
    // Clean Start discards any session [MQTT-3.2.2-2]
    connack: { cmd: "connack", sessionPresent: sessionPresent && !c.clean, reasonCode: ReasonCode.Success, properties: props },
    keepAlive: serverKeepAlive ?? c.keepalive,
    sessionExpiryInterval: expiry.interval,
    clientReceiveMaximum: c.properties.receiveMaximum ?? DEFAULT_RECEIVE_MAXIMUM,
    clientMaximumPacketSize: c.properties.maximumPacketSize ?? Number.POSITIVE_INFINITY,
    clientTopicAliasMaximum: c.properties.topicAliasMaximum ?? 0,
    requestProblemInformation: c.properties.requestProblemInformation ?? true
  }
}
