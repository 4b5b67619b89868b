import { readFileSync } from "node:fs"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { encodeInfo } from "../../src/core/cluster/encode.js"
import {
  decodeLeafInfo,
  type HubInfoFields,
  hubConnectInfo,
  hubInfo,
  isLeafListenerInfo,
  isLoopDetectionSubject,
  loopDetectedError,
  loopDetectionSubject
} from "../../src/core/cluster/handshake.js"
import { PeerParser } from "../../src/core/cluster/parser.js"
import { type PeerRec, peerRecorder } from "../helpers/cluster-ops.js"

// The leaf-node handshake rules nats-server 2.9.10 was observed to apply (the e2e test
// test/e2e/cluster-leaf-interop.test.ts checks each against the real server): which first
// INFO a leaf accepts as a hub's, the INFOs a hub sends, and the loop-detection error.

const transcript = JSON.parse(readFileSync(new URL("../fixtures/cluster/nats-server-2.9.10.json", import.meta.url), "utf8")) as {
  readonly route: { readonly toSoliciting: ReadonlyArray<string> }
  readonly leaf: { readonly toSoliciting: ReadonlyArray<string> }
}

/** The INFO JSONs in what one side of the transcript received. */
const infos = (reads: ReadonlyArray<string>, kind: "route" | "leaf"): Array<string> => {
  const ops: Array<PeerRec> = []
  const p = new PeerParser(kind, peerRecorder(ops), { maxControlLine: 4096, maxPayload: 1 << 20 })
  for (const r of reads) p.feed(Buffer.from(r, "latin1"))
  return ops.flatMap((o) => (o[0] === "info" ? [o[1]] : []))
}

const leafInfo = (json: string) => Either.getOrThrow(decodeLeafInfo(json))

// What nats-server 2.9.10's client port sent a raw connection (its INFO has a client_id, no leafnode_urls).
const CLIENT_PORT_INFO =
  '{"server_id":"NAVDII4H6VUTJFHSQQ56GNF35IIR4MQZFGZ6FXRFQUULC63NXOIJF3WZ","server_name":"HUB","version":"2.9.10","proto":1,"go":"go1.19.8","host":"127.0.0.1","port":39987,"headers":true,"auth_required":true,"max_payload":1048576,"client_id":10,"client_ip":"127.0.0.1"}'

const fields: HubInfoFields = {
  server_id: "NSWITCHYARDHUB",
  server_name: "hub",
  version: "0.1.0",
  host: "127.0.0.1",
  port: 7422,
  headers: true,
  auth_required: true,
  max_payload: 1048576,
  client_id: 3,
  leafnode_urls: []
}

/** The INFO as a peer reads it: encoded, parsed, decoded. */
const overTheWire = (info: object) => leafInfo(infos([encodeInfo(info).toString("latin1")], "leaf")[0])

describe("which first INFO a soliciting leaf takes as a hub's (else: attempted to connect to wrong port)", () => {
  it("a leafnode listener's, with client_id and leafnode_urls", () => {
    const [first, second] = infos(transcript.leaf.toSoliciting, "leaf").map(leafInfo)
    expect(isLeafListenerInfo(first)).toBe(true)
    expect(isLeafListenerInfo(second)).toBe(true)
  })

  it("not a client port's (no leafnode_urls) nor a route port's (no client_id)", () => {
    expect(isLeafListenerInfo(leafInfo(CLIENT_PORT_INFO))).toBe(false)
    const routeInfo = leafInfo(infos(transcript.route.toSoliciting, "route")[0])
    expect(routeInfo.leafnode_urls).toBeDefined()
    expect(isLeafListenerInfo(routeInfo)).toBe(false)
  })

  it("an empty leafnode_urls list will do, a client_id of 0 will not", () => {
    expect(isLeafListenerInfo({ server_id: "N", client_id: 1, leafnode_urls: [] })).toBe(true)
    expect(isLeafListenerInfo({ server_id: "N", client_id: 0, leafnode_urls: [] })).toBe(false)
  })
})

describe("the INFOs a hub sends on an accepted leaf connection", () => {
  it("the first: what a leaf needs to take it as a hub's, a nonce, info_on_connect", () => {
    const first = overTheWire(hubInfo(fields, "abcdefghijklmno"))
    expect(isLeafListenerInfo(first)).toBe(true)
    expect(first).toMatchObject({ server_id: "NSWITCHYARDHUB", proto: 1, client_id: 3, nonce: "abcdefghijklmno", info_on_connect: true, leafnode_urls: [] })
    expect(first.connect_info).toBeUndefined()
  })

  it("has the fields nats-server's has, but for the Go version and the address it saw (`go`, `ip`)", () => {
    const theirs = Object.keys(JSON.parse(infos(transcript.leaf.toSoliciting, "leaf")[0]) as object).filter((k) => k !== "go" && k !== "ip")
    expect(Object.keys(hubInfo({ ...fields, cluster: "C1" }, "n")).sort()).toEqual(theirs.sort())
  })

  it("the answer to CONNECT: no nonce, connect_info and the bound account", () => {
    const second = overTheWire(hubConnectInfo(fields, "ACC"))
    expect(second).toMatchObject({ connect_info: true, remote_account: "ACC", client_id: 3, info_on_connect: true })
    expect(second.nonce).toBeUndefined()
    const theirs = Object.keys(JSON.parse(infos(transcript.leaf.toSoliciting, "leaf")[1]) as object).filter((k) => k !== "go" && k !== "ip")
    expect(Object.keys(hubConnectInfo({ ...fields, cluster: "C1" }, "$G")).sort()).toEqual(theirs.sort())
  })

  it("refuses a client_id below 1 (a leaf would take the INFO for a wrong port)", () => {
    expect(() => hubInfo({ ...fields, client_id: 0 }, "n")).toThrow(RangeError)
  })
})

describe("loop detection", () => {
  it("subjects under $LDS.", () => {
    expect(loopDetectionSubject("g47l2c4U2IM9L4YzQdxdHO")).toBe("$LDS.g47l2c4U2IM9L4YzQdxdHO")
    expect(isLoopDetectionSubject("$LDS.g47l2c4U2IM9L4YzQdxdHO")).toBe(true)
    expect(isLoopDetectionSubject("$LDSX.a")).toBe(false)
  })

  it("the error either end closes with, as nats-server 2.9.10 sent it", () => {
    expect(loopDetectedError("$G")).toBe('Loop detected for leafnode account="$G". Delaying attempt to reconnect for 30s')
  })
})
