// /routez, /gatewayz, /leafz: what exists is reported; with no routes,
// gateways or leafnodes the envelopes are empty, as nats-server answers.
import type { Gatewayz, LeafInfo, Leafz, RouteInfo, Routez, SubDetail } from "../../schema/monitor.js"
import { connInfo } from "./connz.js"
import { formatRtt, formatTimestamp, formatUptime } from "./format.js"
import type { ConnSnapshot, GatewaySnapshot, RouteSnapshot, ServerSnapshot, SubSnapshot } from "./source.js"

const detail = (s: SubSnapshot, cid: number): SubDetail => ({
  ...(s.account !== undefined ? { account: s.account } : {}),
  subject: s.subject,
  ...(s.queue ? { qgroup: s.queue } : {}),
  sid: s.sid,
  msgs: s.msgs,
  ...(s.max > 0 ? { max: s.max } : {}),
  cid
})

const routeInfo = (r: RouteSnapshot, now: number, subs: boolean | "detail"): RouteInfo => ({
  rid: r.rid,
  remote_id: r.remoteId,
  remote_name: r.remoteName,
  did_solicit: r.didSolicit,
  is_configured: r.isConfigured,
  ip: r.ip,
  port: r.port,
  start: formatTimestamp(r.start),
  last_activity: formatTimestamp(r.lastActivity),
  rtt: formatRtt(r.rttNs),
  uptime: formatUptime(now - r.start),
  idle: formatUptime(now - r.lastActivity),
  pending_size: r.pendingBytes,
  in_msgs: r.inMsgs,
  out_msgs: r.outMsgs,
  in_bytes: r.inBytes,
  out_bytes: r.outBytes,
  subscriptions: r.subs.length,
  ...(subs === "detail" && r.subs.length > 0
    ? { subscriptions_list_detail: r.subs.map((s) => detail(s, r.rid)) }
    : subs === true && r.subs.length > 0
      ? { subscriptions_list: r.subs.map((s) => s.subject) }
      : {}),
  ...(r.account !== undefined ? { account: r.account } : {}),
  ...(r.compression !== undefined ? { compression: r.compression } : {})
})

export const buildRoutez = (
  s: ServerSnapshot,
  now: number,
  routes: ReadonlyArray<RouteSnapshot>,
  subs: boolean | "detail"
): Routez => ({
  server_id: s.serverId,
  server_name: s.serverName,
  now: formatTimestamp(now),
  num_routes: routes.length,
  routes: [...routes].sort((a, b) => a.rid - b.rid).map((r) => routeInfo(r, now, subs))
})

export const buildGatewayz = (
  serverId: string,
  now: number,
  gw: GatewaySnapshot | undefined,
  o: { readonly name: string | undefined }
): Gatewayz => {
  if (gw === undefined) return { server_id: serverId, now: formatTimestamp(now), outbound_gateways: {}, inbound_gateways: {} }
  const wanted = (name: string) => o.name === undefined || o.name === name
  const outbound: Record<string, Gatewayz["outbound_gateways"][string]> = {}
  for (const g of gw.outbound) {
    if (wanted(g.name)) outbound[g.name] = { configured: g.configured, connection: connInfo(g.conn, now, { auth: false, subs: false }) }
  }
  const inbound: Record<string, Array<Gatewayz["outbound_gateways"][string]>> = {}
  for (const g of gw.inbound) {
    if (!wanted(g.name)) continue
    ;(inbound[g.name] ??= []).push({ configured: g.configured, connection: connInfo(g.conn, now, { auth: false, subs: false }) })
  }
  return {
    server_id: serverId,
    now: formatTimestamp(now),
    name: gw.name,
    host: gw.host,
    port: gw.port,
    outbound_gateways: outbound,
    inbound_gateways: inbound
  }
}

const leafInfo = (c: ConnSnapshot, subs: boolean): LeafInfo => ({
  name: c.leaf?.remoteServer ?? c.name,
  is_spoke: c.leaf?.isSpoke ?? false,
  account: c.account,
  ip: c.ip,
  port: c.port,
  rtt: formatRtt(c.rttNs),
  in_msgs: c.inMsgs,
  out_msgs: c.outMsgs,
  in_bytes: c.inBytes,
  out_bytes: c.outBytes,
  subscriptions: c.subs.length,
  ...(subs && c.subs.length > 0 ? { subscriptions_list: c.subs.map((s) => s.subject) } : {}),
  ...(c.leaf?.compression !== undefined ? { compression: c.leaf.compression } : {})
})

export const buildLeafz = (
  serverId: string,
  now: number,
  conns: ReadonlyArray<ConnSnapshot>,
  o: { readonly subs: boolean; readonly acc: string | undefined }
): Leafz => {
  const leafs = conns
    .filter((c) => c.kind === "Leafnode" && (o.acc === undefined || c.account === o.acc))
    .sort((a, b) => a.cid - b.cid)
    .map((c) => leafInfo(c, o.subs))
  return { server_id: serverId, now: formatTimestamp(now), leafnodes: leafs.length, leafs }
}
