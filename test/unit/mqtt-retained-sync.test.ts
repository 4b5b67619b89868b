// The pure part of retained messages cluster-wide (core/mqtt/retained-sync.ts): the merge
// rule (last writer by (ts, server id)), the version of a local write, the announcement's
// wire form, and the bounded memory of removals.
import { describe, expect, it } from "vitest"
import {
  compareVersions,
  decodeAnnouncement,
  encodeAnnouncement,
  nextVersion,
  type RetainedAnnouncement,
  type RetainedVersion,
  RetainedVersions,
  supersedes,
  UNKNOWN_VERSION
} from "../../src/core/mqtt/retained-sync.js"

const v = (ts: number, server: string): RetainedVersion => ({ ts, server })

/** Applies announcements in the given order with the merge rule: the value held at the end. */
const replay = (writes: ReadonlyArray<{ version: RetainedVersion; value: string | undefined }>): string | undefined => {
  let held: RetainedVersion | undefined
  let value: string | undefined
  for (const w of writes) {
    if (!supersedes(w.version, held)) continue
    held = w.version
    value = w.value
  }
  return value
}

describe("the merge rule", () => {
  it("orders versions by time, then by server id", () => {
    expect(compareVersions(v(1, "B"), v(2, "A"))).toBe(-1)
    expect(compareVersions(v(2, "A"), v(1, "B"))).toBe(1)
    expect(compareVersions(v(5, "A"), v(5, "B"))).toBe(-1)
    expect(compareVersions(v(5, "B"), v(5, "A"))).toBe(1)
    expect(compareVersions(v(5, "A"), v(5, "A"))).toBe(0)
  })

  it("takes a newer version, never an older or the same one; anything over nothing", () => {
    expect(supersedes(v(2, "A"), v(1, "A"))).toBe(true)
    expect(supersedes(v(1, "A"), v(2, "A"))).toBe(false)
    expect(supersedes(v(1, "A"), v(1, "A"))).toBe(false)
    expect(supersedes(v(1, "A"), undefined)).toBe(true)
    // A copy kept before a restart (no version) loses to any write heard of.
    expect(supersedes(v(1, "A"), UNKNOWN_VERSION)).toBe(true)
  })

  it("converges whatever order the announcements arrive in (removals included)", () => {
    const writes = [
      { version: v(10, "NA"), value: "a1" },
      { version: v(10, "NB"), value: "b1" },
      { version: v(12, "NA"), value: undefined },
      { version: v(11, "NC"), value: "c1" }
    ]
    const orders = [
      [0, 1, 2, 3],
      [3, 2, 1, 0],
      [1, 3, 0, 2],
      [2, 0, 3, 1]
    ]
    const results = orders.map((o) => replay(o.map((i) => writes[i])))
    expect(results).toEqual([undefined, undefined, undefined, undefined])
    const sets = writes.slice(0, 2)
    expect(replay(sets)).toBe("b1")
    expect(replay([...sets].reverse())).toBe("b1")
  })

  it("a local write goes past what the server holds, even when another server's clock runs ahead", () => {
    expect(nextVersion("NA", 100, undefined)).toEqual(v(100, "NA"))
    expect(nextVersion("NA", 100, v(50, "NB"))).toEqual(v(100, "NA"))
    const w = nextVersion("NA", 100, v(500, "NB"))
    expect(w).toEqual(v(501, "NA"))
    expect(supersedes(w, v(500, "NB"))).toBe(true)
  })
})

describe("announcements on the wire", () => {
  it("carry a kept message with its payload as is and its MQTT 5.0 properties", () => {
    const a: RetainedAnnouncement = {
      version: v(1700000000123, "NSERVER"),
      topic: "home/ünï/temp",
      deleted: false,
      qos: 1,
      payload: Buffer.from([0, 1, 2, 255, 13, 10]),
      props: { reply: "resp/x", hdr: Buffer.from("NATS/1.0\r\nA: b\r\n\r\n"), at: 1700000000000 }
    }
    const buf = encodeAnnouncement(a)
    expect(decodeAnnouncement(buf, 0, buf.length)).toEqual(a)
    // Within a larger buffer (as a route's read buffer holds it).
    const framed = Buffer.concat([Buffer.from("xx"), buf, Buffer.from("yy")])
    expect(decodeAnnouncement(framed, 2, 2 + buf.length)).toEqual(a)
  })

  it("carry a removal without payload", () => {
    const a: RetainedAnnouncement = { version: v(7, "N"), topic: "t", deleted: true, qos: 0, payload: Buffer.alloc(0) }
    const buf = encodeAnnouncement(a)
    expect(decodeAnnouncement(buf, 0, buf.length)).toEqual({ ...a, props: undefined })
  })

  it("refuse what is not one", () => {
    const bad = (b: Buffer) => decodeAnnouncement(b, 0, b.length)
    const framed = (json: string) => {
      const j = Buffer.from(json)
      const out = Buffer.alloc(4 + j.length)
      out.writeUInt32BE(j.length, 0)
      j.copy(out, 4)
      return out
    }
    expect(bad(Buffer.alloc(0))).toBeUndefined()
    expect(bad(Buffer.from([0, 0, 1, 0, 65]))).toBeUndefined() // length past the end
    expect(bad(framed("{not json"))).toBeUndefined()
    expect(bad(framed("[1]"))).toBeUndefined()
    expect(bad(framed('{"ts":1,"server":"N","topic":"","qos":0}'))).toBeUndefined()
    expect(bad(framed('{"ts":-1,"server":"N","topic":"t","qos":0}'))).toBeUndefined()
    expect(bad(framed('{"ts":1,"server":"N","topic":"t","qos":3}'))).toBeUndefined()
    expect(bad(framed('{"ts":1,"server":"N","topic":"t","qos":0,"deleted":"yes"}'))).toBeUndefined()
    expect(bad(framed('{"ts":1,"server":"N","topic":"t","qos":0,"hdr":5,"at":1}'))).toBeUndefined()
    expect(bad(framed('{"ts":1,"server":"N","topic":"t","qos":0}'))).toEqual({ version: v(1, "N"), topic: "t", deleted: false, qos: 0, payload: Buffer.alloc(0), props: undefined })
  })
})

describe("the versions a server holds", () => {
  it("remember removals, forgetting the oldest past the bound", () => {
    const vs = new RetainedVersions(2)
    vs.kept("a", v(1, "N"))
    vs.deleted("a", v(2, "N"))
    expect(vs.get("a")).toEqual(v(2, "N"))
    expect(vs.tombstone("a")).toEqual(v(2, "N"))
    vs.deleted("b", v(3, "N"))
    vs.deleted("c", v(4, "N"))
    expect(vs.tombstoneCount).toBe(2)
    expect(vs.get("a")).toBeUndefined()
    expect(vs.tombstones().map(([t]) => t)).toEqual(["b", "c"])
    // Kept again: no longer a removal.
    vs.kept("b", v(5, "N"))
    expect(vs.tombstone("b")).toBeUndefined()
    expect(vs.get("b")).toEqual(v(5, "N"))
  })
})
