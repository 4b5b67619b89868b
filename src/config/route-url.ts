// Route and leaf-node URLs, as the `cluster { routes }` and `leafnodes { remotes }` keys
// and the `--routes` flag take them. Never shown back: they may carry a password.

export interface ServerUrl {
  readonly host: string
  readonly port: number
  readonly user: string | undefined
  readonly password: string | undefined
  /** Written as `tls://` or `wss://`: TLS is required on this connection. */
  readonly tls: boolean
  /** Written as `ws://` or `wss://`: a WebSocket (a leaf remote of a hub's websocket listener). */
  readonly ws: boolean
}

/** `<scheme>://[user:pass@]host[:port]` with one of `schemes`; `defaultPort` (by scheme) when none is written (undefined: a port is required). */
const parseServerUrl = (text: string, schemes: ReadonlyArray<string>, defaultPorts: (scheme: string) => number | undefined): ServerUrl | undefined => {
  let u: URL
  try {
    u = new URL(text.trim())
  } catch {
    return undefined
  }
  if (!schemes.includes(u.protocol) || u.hostname === "") return undefined
  const defaultPort = defaultPorts(u.protocol)
  if (u.port === "" && defaultPort === undefined) return undefined
  return {
    host: u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname,
    port: u.port === "" ? defaultPort! : Number(u.port),
    user: u.username === "" ? undefined : decodeURIComponent(u.username),
    password: u.password === "" ? undefined : decodeURIComponent(u.password),
    tls: u.protocol === "tls:" || u.protocol === "wss:",
    ws: u.protocol === "ws:" || u.protocol === "wss:"
  }
}

/** A route URL: `nats-route://[user:pass@]host:port` (also `nats://`, `route://`). */
export const parseRouteUrl = (text: string): ServerUrl | undefined => parseServerUrl(text, ["nats-route:", "nats:", "route:"], () => undefined)

/** The port a leaf URL without one means (nats-server's leaf-node port). */
const LEAF_DEFAULT_PORT = 7422

/**
 * A leaf-node remote URL: `nats-leaf://[user:pass@]host[:port]` (also `nats://`, `leaf://`,
 * and `tls://`, which requires TLS), 7422 when no port is given; or a hub's websocket
 * listener, `ws://` (port 80 by default) or `wss://` (443).
 */
export const parseLeafUrl = (text: string): ServerUrl | undefined =>
  parseServerUrl(text, ["nats-leaf:", "nats:", "leaf:", "tls:", "ws:", "wss:"], (scheme) => (scheme === "ws:" ? 80 : scheme === "wss:" ? 443 : LEAF_DEFAULT_PORT))
