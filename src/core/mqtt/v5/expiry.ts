// Time in MQTT 5.0 as arithmetic on times the caller passes in (milliseconds, from the
// shell's clock): how long a session outlives its connection, when a will is due, and
// how much of a message's life is left when it is forwarded. Intervals on the wire are
// whole seconds.
import { protocolError } from "./reader.js"

/** A Session Expiry Interval of 0xFFFFFFFF: the session never expires (3.1.2.11.2). */
export const SESSION_NEVER_EXPIRES = 0xffff_ffff

/**
 * The Session Expiry Interval the server uses for a CONNECT asking for `requested`
 * seconds (absent: 0, the session ends with the connection), capped at the server's
 * `maximum`; and `announce`, the value to put in the CONNACK when it differs from the
 * request (the client then uses the server's, 3.2.2.3.2).
 */
export const sessionExpiry = (
  requested: number | undefined,
  maximum: number = SESSION_NEVER_EXPIRES
): { readonly interval: number; readonly announce: number | undefined } => {
  const asked = requested ?? 0
  const interval = Math.min(asked, maximum)
  return { interval, announce: interval === asked ? undefined : interval }
}

/**
 * The interval after a DISCONNECT that may set a new one (3.14.2.2.2): a client that
 * connected with 0 may not set a non-zero one (a protocol error), and the server's
 * maximum still caps it.
 */
export const sessionExpiryOnDisconnect = (
  connectInterval: number,
  disconnectInterval: number | undefined,
  maximum: number = SESSION_NEVER_EXPIRES
): number => {
  if (disconnectInterval === undefined) return connectInterval
  if (connectInterval === 0 && disconnectInterval !== 0) {
    throw protocolError("a DISCONNECT sets a Session Expiry Interval after a CONNECT with none")
  }
  return Math.min(disconnectInterval, maximum)
}

/**
 * When a session whose connection closed at `closedAt` ends (ms): at once for 0, never
 * (Infinity) for 0xFFFFFFFF. The server keeps the session until then [MQTT-3.1.2-23]
 * and discards it after [MQTT-4.1.0-2].
 */
export const sessionEndsAt = (closedAt: number, interval: number): number =>
  interval === SESSION_NEVER_EXPIRES ? Number.POSITIVE_INFINITY : closedAt + interval * 1000

/**
 * When the will of a connection closed at `closedAt` is due (ms): after its Will Delay
 * Interval or when the session ends, whichever comes first (3.1.3.2.2). A new connection
 * for the session before then cancels it [MQTT-3.1.3-9].
 */
export const willDueAt = (closedAt: number, willDelayInterval: number | undefined, sessionInterval: number): number =>
  Math.min(closedAt + (willDelayInterval ?? 0) * 1000, sessionEndsAt(closedAt, sessionInterval))

/**
 * Is the will published when the connection ends this way? Not after a DISCONNECT with
 * 0x00 [MQTT-3.14.4-3]; after a DISCONNECT with 0x04 (Disconnect with Will Message) and
 * after every other end (no DISCONNECT, a failure code, a protocol error, a takeover).
 */
export const willSurvives = (disconnectReason: number | undefined): boolean => disconnectReason !== 0x00

/**
 * The Message Expiry Interval of a message received at `receivedAt` with `interval`
 * seconds to live, as forwarded at `now`: the interval less the time it waited in the
 * server [MQTT-3.3.2-6], rounded up to whole seconds so a message with life left is never
 * sent as 0; or undefined when its life has passed and it is not to be sent [MQTT-3.3.2-5].
 * Only messages not yet sent expire: one whose PUBLISH went out completes its QoS 1/2
 * exchange whatever its age [MQTT-4.3.3-7].
 */
export const forwardedExpiry = (interval: number, receivedAt: number, now: number): number | undefined => {
  const left = interval * 1000 - Math.max(0, now - receivedAt)
  return left < 0 ? undefined : Math.ceil(left / 1000)
}

/** When a message received at `receivedAt` with `interval` seconds to live expires (ms), for the store's clock. */
export const messageExpiresAt = (receivedAt: number, interval: number): number => receivedAt + interval * 1000
