// Route URLs, as the `cluster { routes }` key and the `--routes` flag take them.

/** A route URL: `nats-route://[user:pass@]host:port` (also `nats://`, `route://`); never shown back (it may carry a password). */
export const parseRouteUrl = (text: string): { readonly host: string; readonly port: number; readonly user: string | undefined; readonly password: string | undefined } | undefined => {
  let u: URL
  try {
    u = new URL(text.trim())
  } catch {
    return undefined
  }
  if (!["nats-route:", "nats:", "route:"].includes(u.protocol) || u.hostname === "" || u.port === "") return undefined
  const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname
  return {
    host,
    port: Number(u.port),
    user: u.username === "" ? undefined : decodeURIComponent(u.username),
    password: u.password === "" ? undefined : decodeURIComponent(u.password)
  }
}
