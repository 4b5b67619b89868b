// /connz over 50 synthetic connections: every sort key, paging, filters and
// the closed-connection rules.
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { ConnzSortKeys, type ConnzSort } from "../../src/schema/monitor.js"
import { buildConnz, connzOptions, selectConnections, sortConnections, type AnyConn, type ConnzOptions } from "../../src/core/monitor/connz.js"
import { syntheticSource, SyntheticNow } from "../helpers/monitor-source.js"
import type { ClosedConnSnapshot } from "../../src/core/monitor/source.js"

const src = syntheticSource({ connections: 50, closed: 12 })
const open = src.connections()
const closed = src.closed()
const now = SyntheticNow

const opts = (over: Partial<ConnzOptions> = {}): ConnzOptions => {
  const o = Either.getOrThrow(connzOptions({}))
  return { ...o, ...over }
}

const keyOf = (sort: ConnzSort, c: AnyConn): number | string => {
  const end = "stop" in c ? (c as ClosedConnSnapshot).stop : now
  switch (sort) {
    case "cid": return c.cid
    case "start": return c.start
    case "subs": return c.subs.length
    case "pending": return c.pendingBytes
    case "msgs_to": return c.outMsgs
    case "msgs_from": return c.inMsgs
    case "bytes_to": return c.outBytes
    case "bytes_from": return c.inBytes
    case "last": return c.lastActivity
    case "idle": return end - c.lastActivity
    case "uptime": return end - c.start
    case "stop": return (c as ClosedConnSnapshot).stop
    case "reason": return (c as ClosedConnSnapshot).reason
    case "rtt": return c.rttNs
  }
}

describe("connz sort", () => {
  for (const sort of ConnzSortKeys) {
    it(`${sort}: ${sort === "cid" ? "ascending" : "descending"}, ties by cid`, () => {
      const pool: ReadonlyArray<AnyConn> = sort === "stop" || sort === "reason" ? closed : [...open, ...closed]
      const sorted = sortConnections(pool, sort, now)
      expect(sorted).toHaveLength(pool.length)
      for (let i = 1; i < sorted.length; i++) {
        const a = keyOf(sort, sorted[i - 1])
        const b = keyOf(sort, sorted[i])
        if (sort === "cid") expect(a < b).toBe(true)
        else {
          expect(a >= b).toBe(true)
          if (a === b) expect(sorted[i - 1].cid).toBeLessThan(sorted[i].cid)
        }
      }
    })
  }

  it("defaults to cid", () => {
    const r = buildConnz("S", now, open, [], opts())
    expect(r.connections.map((c) => c.cid)).toEqual([...open].map((c) => c.cid).sort((a, b) => a - b))
  })

  it("stop and reason need state=closed (nats-server's rule)", () => {
    for (const sort of ["stop", "reason"] as const) {
      for (const state of [undefined, "open", "all", "any"] as const) {
        const r = connzOptions({ sort, state })
        expect(Either.isLeft(r)).toBe(true)
        if (Either.isLeft(r)) {
          expect(r.left.error).toBe(`sort by ${sort} only valid on closed connections`)
          expect(r.left.parameter).toBe("sort")
        }
      }
      expect(Either.isRight(connzOptions({ sort, state: "closed" }))).toBe(true)
    }
  })
})

describe("connz paging", () => {
  it("pages of 7 concatenate to the whole sorted list, with total unaffected", () => {
    const all = buildConnz("S", now, open, [], opts({ sort: "bytes_to" }))
    expect(all.total).toBe(51)
    expect(all.num_connections).toBe(51)
    const pages = []
    for (let offset = 0; offset < 60; offset += 7) {
      const p = buildConnz("S", now, open, [], opts({ sort: "bytes_to", offset, limit: 7 }))
      expect(p.total).toBe(51)
      expect(p.offset).toBe(offset)
      expect(p.limit).toBe(7)
      expect(p.num_connections).toBe(p.connections.length)
      pages.push(...p.connections)
    }
    expect(pages.map((c) => c.cid)).toEqual(all.connections.map((c) => c.cid))
  })

  it("offset past the end gives an empty page; limit defaults to 1024; negative offset counts as 0", () => {
    expect(buildConnz("S", now, open, [], opts({ offset: 500 })).connections).toEqual([])
    expect(Either.getOrThrow(connzOptions({})).limit).toBe(1024)
    expect(Either.getOrThrow(connzOptions({ limit: 0 })).limit).toBe(1024)
    expect(Either.getOrThrow(connzOptions({ limit: -3 })).limit).toBe(1024)
    expect(Either.getOrThrow(connzOptions({ offset: -3 })).offset).toBe(0)
  })
})

describe("connz filters", () => {
  it("cid selects one connection, open or closed, and sets limit 1", () => {
    const o = Either.getOrThrow(connzOptions({ cid: 17 }))
    expect(o.limit).toBe(1)
    expect(buildConnz("S", now, open, closed, o).connections.map((c) => c.cid)).toEqual([17])
    const closedCid = closed[3].cid
    const c = Either.getOrThrow(connzOptions({ cid: closedCid, state: "closed" }))
    const r = buildConnz("S", now, [], closed, c)
    expect(r.connections.map((x) => x.cid)).toEqual([closedCid])
    expect(r.connections[0].reason).toBe(closed[3].reason)
    expect(buildConnz("S", now, open, [], Either.getOrThrow(connzOptions({ cid: 9999 }))).connections).toEqual([])
  })

  it("state: open, closed, all", () => {
    expect(selectConnections(open, closed, opts({ state: "open" }), now).total).toBe(51)
    expect(selectConnections(open, closed, opts({ state: "closed" }), now).total).toBe(12)
    expect(selectConnections(open, closed, opts({ state: "all" }), now).total).toBe(63)
  })

  it("acc, user and mqtt_client", () => {
    const acme = buildConnz("S", now, open, [], opts({ acc: "ACME" }))
    expect(acme.total).toBe(open.filter((c) => c.account === "ACME").length)
    expect(acme.connections.every((c) => c.account === "ACME")).toBe(true)
    const alice = selectConnections(open, closed, opts({ user: "alice", state: "all" }), now)
    expect(alice.total).toBe([...open, ...closed].filter((c) => c.user === "alice").length)
    const mqtt = buildConnz("S", now, open, [], opts({ mqttClient: "sensor-20" }))
    expect(mqtt.connections.map((c) => [c.cid, c.type, c.mqtt_client])).toEqual([[20, "mqtt", "sensor-20"]])
    expect(buildConnz("S", now, open, [], opts({ acc: "NOPE" })).connections).toEqual([])
  })
})

describe("connz records", () => {
  it("renders nats-server's fields, durations and timestamps", () => {
    const r = buildConnz("S", now, open, [], opts({ cid: 8, limit: 1 }))
    const c = r.connections[0]
    const snap = open[7]
    expect(c).toMatchObject({
      cid: 8,
      kind: "Client",
      type: "nats",
      ip: snap.ip,
      port: snap.port,
      pending_bytes: snap.pendingBytes,
      in_msgs: snap.inMsgs,
      out_msgs: snap.outMsgs,
      subscriptions: 3,
      name: "client-8",
      lang: "nats.js",
      account: "ACME",
      tls_version: "1.3",
      tls_cipher_suite: "TLS_AES_128_GCM_SHA256"
    })
    expect(c.uptime).toBe("8m8s")
    expect(c.rtt).toBe("987µs")
    expect(c.start).toMatch(/^2024-05-01T11:51:5\d\.\d{3,}Z$/)
    expect(c).not.toHaveProperty("authorized_user")
    expect(c).not.toHaveProperty("subscriptions_list")
    expect(c).not.toHaveProperty("stop")
  })

  it("auth adds authorized_user; subs=true lists subjects; subs=detail lists details", () => {
    const withAuth = buildConnz("S", now, open, [], opts({ cid: 9, auth: true })).connections[0]
    expect(withAuth.authorized_user).toBe("alice")
    const subs = buildConnz("S", now, open, [], opts({ cid: 9, subs: true })).connections[0]
    expect(subs.subscriptions_list).toEqual(["orders.9.>", "orders.*.created", "telemetry.9", "_INBOX.9.3"])
    const detail = buildConnz("S", now, open, [], opts({ cid: 9, subs: "detail" })).connections[0]
    expect(detail.subscriptions_list).toBeUndefined()
    expect(detail.subscriptions_list_detail?.[1]).toEqual({ subject: "orders.*.created", qgroup: "workers", sid: "2", msgs: (9 * 13 + 1) % 50, cid: 9 })
    expect(detail.subscriptions_list_detail?.[3].max).toBe(10)
  })

  it("closed connections carry stop and reason, and their durations end at stop", () => {
    const r = buildConnz("S", now + 3_600_000, [], closed, opts({ state: "closed", sort: "stop" }))
    expect(r.connections[0].cid).toBe(closed[0].cid)
    for (const c of r.connections) {
      expect(c.stop).toMatch(/Z$/)
      expect(c.reason).toBeTypeOf("string")
      expect(c.idle).toBe("0s") // measured at stop, not an hour later
    }
  })
})
