// The server's version, reported in INFO, /varz and --version. A unit test keeps it equal to package.json's.
export const VERSION = "0.1.0"
export const SERVER_PRODUCT = "switchyard"

/**
 * The nats-server version whose client protocol and JetStream API Switchyard speaks.
 * NATS client libraries turn features on by the server version in INFO (headers from
 * 2.2, KV from 2.6.2, consumer filters and direct get from 2.9/2.10), so INFO carries
 * this; Switchyard's own version is in /varz, --version and INFO's `switchyard` field.
 */
export const NATS_COMPAT_VERSION = "2.10.0"
