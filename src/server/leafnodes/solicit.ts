// A hub this server connects to as a leaf node (`leafnodes.remotes`): its URLs, tried in
// turn, and the state of the connection attempts (retried for ever with a bounded backoff;
// 30 s after a loop was detected).
import type { LeafRemote } from "../../config/options.js"
import { parseLeafUrl } from "../../config/route-url.js"
import type { LeafSolicit } from "./leaf.js"

export type { LeafSolicit, LeafUrl } from "./leaf.js"

const scheme = (u: { readonly tls: boolean; readonly ws: boolean }): string => (u.ws ? (u.tls ? "wss" : "ws") : u.tls ? "tls" : "nats-leaf")

const hostPort = (host: string, port: number): string => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`)

export const newLeafSolicit = (remote: LeafRemote, now: number): LeafSolicit => {
  const urls = remote.urls.flatMap((text) => {
    const u = parseLeafUrl(text)
    return u === undefined ? [] : [{ ...u, url: `${scheme(u)}://${hostPort(u.host, u.port)}` }]
  })
  const s: LeafSolicit = {
    remote,
    urls,
    index: 0,
    attempts: 0,
    nextAt: now,
    dialing: false,
    leaf: undefined,
    loop: false,
    get url() {
      return urls[s.index % urls.length]?.url ?? ""
    }
  }
  return s
}

/** The most URLs learned from a hub's INFO that one remote keeps. */
export const MAX_LEARNED_LEAF_URLS = 32

/**
 * The hub's `leafnode_urls` (its cluster's leaf listeners, `host:port`): each one not known
 * yet is tried too when the connection is lost, with the credentials of the URL in use,
 * as nats-server leaves do. Returns how many were added.
 */
export const learnLeafUrls = (s: LeafSolicit, hostPorts: ReadonlyArray<string>): number => {
  const current = s.urls[s.index % s.urls.length]
  // Reached through a websocket listener (a proxy, a firewall that lets only it through): its leaf ports may not be reachable.
  if (current === undefined || current.ws) return 0
  let added = 0
  for (const hp of hostPorts) {
    if (s.urls.length >= s.remote.urls.length + MAX_LEARNED_LEAF_URLS) break
    const i = hp.lastIndexOf(":")
    const host = hp.slice(0, i).replace(/^\[|\]$/g, "")
    const port = Number(hp.slice(i + 1))
    if (i <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) continue
    if (s.urls.some((u) => u.host === host && u.port === port)) continue
    // The hub's leafnode_urls are its leaf listeners, never its websocket ones.
    s.urls.push({ url: `${current.tls ? "tls" : "nats-leaf"}://${hostPort(host, port)}`, host, port, user: current.user, password: current.password, tls: current.tls, ws: false })
    added++
  }
  return added
}
