// Client ids across servers (server/mqtt/owners.ts): the announcement's subject and body,
// and which of two connections with one client id gives way.
import { describe, expect, it } from "vitest"
import { decodeAnnouncement, givesWay, ownerSubject } from "../../src/server/mqtt/owners.js"

describe("MQTT client id announcements", () => {
  it("puts any client id on one subject token of its own", () => {
    const ids = ["a", "b", "with space", "dots.and*wild>", "ünïcode", ""]
    const subjects = ids.map(ownerSubject)
    for (const s of subjects) expect(s).toMatch(/^\$MQTT\.owner\.[A-Za-z0-9_-]{22}$/)
    expect(new Set(subjects).size).toBe(ids.length)
    expect(ownerSubject("a")).toBe(ownerSubject("a"))
  })

  it("reads an announcement, and nothing else, from a payload anyone may publish", () => {
    const a = { server_id: "NA", server_name: "A", client_id: "c", since: 5 }
    expect(decodeAnnouncement(JSON.stringify(a))).toEqual(a)
    for (const bad of ["", "x", "null", "[]", "{}", JSON.stringify({ ...a, since: "5" }), JSON.stringify({ ...a, client_id: 1 }), '{"server_id":"NA","server_name":"A","client_id":"c","since":1e400}'])
      expect(decodeAnnouncement(bad)).toBeUndefined()
  })

  it("has the earlier claim give way, and of two at the same time the smaller server id, so exactly one stays", () => {
    const other = (since: number, server_id: string) => ({ server_id, server_name: server_id, client_id: "c", since })
    expect(givesWay(1, "NB", other(2, "NA"))).toBe(true)
    expect(givesWay(3, "NA", other(2, "NB"))).toBe(false)
    // A tie: each side judges the other's announcement; exactly one gives way.
    expect([givesWay(7, "NA", other(7, "NB")), givesWay(7, "NB", other(7, "NA"))]).toEqual([true, false])
  })
})
