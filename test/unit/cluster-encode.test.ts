import { describe, expect, it } from "vitest"
import {
  encodeConnect,
  encodeInfo,
  writeLeafMsg,
  writeLeafSub,
  writeLeafUnsub,
  writeRouteMsg,
  writeRouteSub,
  writeRouteUnsub
} from "../../src/core/cluster/encode.js"
import type { PeerMsg } from "../../src/core/cluster/parser.js"
import { OutBuf } from "../../src/core/outbuf.js"

// The encoders write the same bytes nats-server 2.9.10 was observed to send (the expected
// strings below are copied from its wire traffic).

const HDR = "NATS/1.0\r\nFoo: Bar\r\n\r\n"

const m = (o: Partial<Omit<PeerMsg, "buf" | "start" | "end">> & { readonly data: string }): PeerMsg => {
  const buf = Buffer.from(`xx${o.data}yy`, "latin1")
  return {
    account: o.account ?? "$G",
    subject: o.subject ?? "s",
    reply: o.reply ?? "",
    queues: o.queues ?? [],
    hdrLen: o.hdrLen ?? -1,
    origin: o.origin ?? "",
    buf,
    start: 2,
    end: buf.length - 2
  }
}

const written = (write: (out: OutBuf) => void): string => {
  const out = new OutBuf(16)
  write(out)
  return (out.take() ?? Buffer.alloc(0)).toString("latin1")
}

describe("route encoders", () => {
  it.each([
    [m({ subject: "hub.one", data: "hello" }), "RMSG $G hub.one 5\r\nhello\r\n"],
    [m({ subject: "edge.x", reply: "back", data: "down" }), "RMSG $G edge.x back 4\r\ndown\r\n"],
    [m({ subject: "work.a", queues: ["W"], data: "job" }), "RMSG $G work.a | W 3\r\njob\r\n"],
    [m({ subject: "work.b", reply: "rr", queues: ["W"], data: "job2" }), "RMSG $G work.b + rr W 4\r\njob2\r\n"],
    [m({ subject: "hub.two", reply: "reply.to", hdrLen: 22, data: `${HDR}hi` }), `HMSG $G hub.two reply.to 22 24\r\n${HDR}hi\r\n`],
    [m({ subject: "rq", queues: ["RQ", "RQ2"], hdrLen: 22, data: `${HDR}4` }), `HMSG $G rq | RQ RQ2 22 23\r\n${HDR}4\r\n`],
    [m({ subject: "routy", reply: "r3", origin: "LEAF1", data: "from-leaf" }), "LMSG LEAF1 $G routy r3 0 9\r\nfrom-leaf\r\n"],
    [m({ subject: "routy", origin: "LEAF1", hdrLen: 22, data: `${HDR}from-leaf-h` }), `LMSG LEAF1 $G routy 22 33\r\n${HDR}from-leaf-h\r\n`],
    [m({ subject: "rq", queues: ["RQ", "RQ2"], origin: "LEAF1", data: "1" }), "LMSG LEAF1 $G rq | RQ RQ2 0 1\r\n1\r\n"],
    [m({ subject: "rq", reply: "rr", queues: ["RQ", "RQ2"], origin: "LEAF1", hdrLen: 22, data: `${HDR}3` }), `LMSG LEAF1 $G rq + rr RQ RQ2 22 23\r\n${HDR}3\r\n`]
  ])("%# writes nats-server's form", (msg, wire) => {
    expect(written((out) => writeRouteMsg(out, msg))).toBe(wire)
  })

  it("RS+/RS-/LS+/LS- as nats-server sends them (LS- without the origin, one space)", () => {
    expect(
      written((out) => {
        writeRouteSub(out, "$G", "hub.>")
        writeRouteSub(out, "$G", "work.*", "W", 2)
        writeRouteSub(out, "$G", "leafq", "LQ", 1, "LEAF1")
        writeRouteUnsub(out, "$G", "work.*", "W")
        writeRouteUnsub(out, "$G", "leafq", "LQ", true)
        writeRouteUnsub(out, "$G", "hub.>")
      })
    ).toBe("RS+ $G hub.>\r\nRS+ $G work.* W 2\r\nLS+ LEAF1 $G leafq LQ 1\r\nRS- $G work.* W\r\nLS- $G leafq LQ\r\nRS- $G hub.>\r\n")
  })

  it("subjects and names in UTF-8", () => {
    expect(written((out) => writeRouteMsg(out, m({ account: "Å", subject: "ä.☃", reply: "r.é", queues: ["q☃"], data: "x" })))).toBe(
      Buffer.from("RMSG Å ä.☃ + r.é q☃ 1\r\nx\r\n").toString("latin1")
    )
  })

  it("a large payload goes by reference, with the same bytes", () => {
    const data = "z".repeat(20_000)
    const out = new OutBuf(16)
    writeRouteMsg(out, m({ subject: "big", data }))
    const parts = out.takeAll()!
    expect(parts.length).toBeGreaterThan(1)
    expect(Buffer.concat(parts).toString("latin1")).toBe(`RMSG $G big 20000\r\n${data}\r\n`)
  })
})

describe("leaf encoders", () => {
  it.each([
    [m({ subject: "hub.one", data: "hello" }), "LMSG hub.one 5\r\nhello\r\n"],
    [m({ subject: "edge.x", reply: "back", data: "down" }), "LMSG edge.x back 4\r\ndown\r\n"],
    [m({ subject: "work.a", queues: ["W"], data: "job" }), "LMSG work.a | W 3\r\njob\r\n"],
    [m({ subject: "rq", reply: "rr", queues: ["RQ", "RQ2"], data: "2" }), "LMSG rq + rr RQ RQ2 1\r\n2\r\n"],
    [m({ subject: "edge.x", hdrLen: 22, data: `${HDR}downh` }), `HMSG edge.x 22 27\r\n${HDR}downh\r\n`],
    [m({ subject: "rq", reply: "rr", queues: ["RQ", "RQ2"], hdrLen: 22, data: `${HDR}3` }), `HMSG rq + rr RQ RQ2 22 23\r\n${HDR}3\r\n`]
  ])("%# writes nats-server's form (the account is the connection's, never written)", (msg, wire) => {
    expect(written((out) => writeLeafMsg(out, msg))).toBe(wire)
  })

  it("LS+/LS-", () => {
    expect(
      written((out) => {
        writeLeafSub(out, "edge.x")
        writeLeafSub(out, "work.*", "W", 2)
        writeLeafUnsub(out, "work.*", "W")
        writeLeafUnsub(out, "edge.x")
      })
    ).toBe("LS+ edge.x\r\nLS+ work.* W 2\r\nLS- work.* W\r\nLS- edge.x\r\n")
  })
})

describe("handshake lines", () => {
  it("INFO and CONNECT carry JSON in field order", () => {
    expect(encodeInfo({ server_id: "N", cluster: "C" }).toString()).toBe('INFO {"server_id":"N","cluster":"C"}\r\n')
    expect(encodeConnect({ echo: true, name: "N" }).toString()).toBe('CONNECT {"echo":true,"name":"N"}\r\n')
  })
})
