// A hub this server connects to as a leaf node (`leafnodes.remotes`): its URLs, tried in
// turn, and the state of the connection attempts (retried for ever with a bounded backoff;
// 30 s after a loop was detected).
import type { LeafRemote } from "../../config/options.js"
import { parseLeafUrl } from "../../config/route-url.js"
import type { Leaf } from "./leaf.js"

export interface LeafUrl {
  /** For logs: the URL without credentials. */
  readonly url: string
  readonly host: string
  readonly port: number
  readonly user: string | undefined
  readonly password: string | undefined
}

export interface LeafSolicit {
  readonly remote: LeafRemote
  readonly urls: ReadonlyArray<LeafUrl>
  /** The URL of the current or last attempt. */
  index: number
  /** Failed attempts in a row. */
  attempts: number
  /** When to try next (while there is no connection). */
  nextAt: number
  dialing: boolean
  leaf: Leaf | undefined
  /** The hub found a loop: the next attempt waits for the loop delay. */
  loop: boolean
  /** For logs: the URL of the current attempt. */
  readonly url: string
}

const hostPort = (host: string, port: number): string => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`)

export const newLeafSolicit = (remote: LeafRemote, now: number): LeafSolicit => {
  const urls = remote.urls.flatMap((text) => {
    const u = parseLeafUrl(text)
    return u === undefined ? [] : [{ ...u, url: `nats-leaf://${hostPort(u.host, u.port)}` }]
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
