// The bridge's mapping between MQTT 5 messages and NATS messages (issue #19, item 4):
// User Properties <-> headers, the well-known headers, request/response both ways,
// and the reason codes of NATS outcomes. Header blocks are checked against nats.js's
// own header codec.
import fc from "fast-check"
import { headers as natsHeaders, MsgHdrsImpl } from "nats"
import { describe, expect, it } from "vitest"
import {
  ackReasonFor,
  headerBlock,
  MAX_CORRELATION_IN_REPLY,
  type MessageProperties,
  natsToPublish,
  NO_RESPONDERS_STATUS,
  parseHeaderBlock,
  parseResponseSubject,
  publishToNats,
  replySubjectFor,
  userPropertyHeader
} from "../../src/core/mqtt/v5/index.js"
import { topicToSubject } from "../../src/core/mqtt/topic.js"
import { mqttString, topicName } from "../helpers/mqtt5.js"

/** nats.js's encoding of the headers a NATS client sets. */
const encoded = (h: ReturnType<typeof natsHeaders>): Uint8Array => (h as MsgHdrsImpl).encode()

/** MQTT -> NATS -> MQTT, through a real header block. */
const roundTrip = (topic: string, p: MessageProperties) => {
  const n = publishToNats(topic, p)
  if (!n.ok) throw new Error(n.reason)
  return { nats: n, back: natsToPublish(n.subject, n.reply, headerBlock(n.headers)) }
}

describe("User Properties <-> NATS headers", () => {
  it("[MQTT-3.3.2-17] [MQTT-3.3.2-18] plain ones become headers of the same name, in order, repeats kept", () => {
    const userProperties = [["region", "eu"], ["unit", "°C"], ["region", "us"]] as const
    const { nats, back } = roundTrip("a/b", { userProperties })
    expect(nats.headers).toEqual(userProperties)
    expect(back.properties.userProperties).toEqual(userProperties)
  })

  it("a NATS client reads them with its own header codec", () => {
    const n = publishToNats("a/b", { userProperties: [["region", "eu"], ["Nats-Msg-Id", "42"], ["region", "us"]] })
    if (!n.ok) throw new Error(n.reason)
    const h = MsgHdrsImpl.decode(headerBlock(n.headers)!)
    expect(h.values("region")).toEqual(["eu", "us"])
    expect(h.get("Nats-Msg-Id")).toBe("42") // JetStream de-duplication works from MQTT 5
  })

  it("headers a NATS client sets reach MQTT 5 clients as User Properties", () => {
    const h = natsHeaders()
    h.append("trace-id", "abc")
    h.append("tag", "x")
    h.append("tag", "y")
    expect(natsToPublish("a.b", undefined, encoded(h)).properties.userProperties).toEqual([["trace-id", "abc"], ["tag", "x"], ["tag", "y"]])
  })

  it("a name or value a header line cannot carry unchanged is escaped, and comes back unchanged", () => {
    const odd = [["with space", "v"], ["k", " padded "], ["k", "two\r\nlines"], ["", "empty name"], ["ключ", "значение"], ["a:b", "c"], ["k", "\u00a0nbsp"]] as const
    for (const [k, v] of odd) {
      expect(userPropertyHeader(k, v)[0]).toBe("Mqtt-User-Property")
      expect(roundTrip("t", { userProperties: [[k, v]] }).back.properties.userProperties).toEqual([[k, v]])
    }
    expect(userPropertyHeader("unit", "°C")).toEqual(["unit", "°C"])
  })

  it("an MQTT client cannot set the bridge's own headers: Content-Type and Mqtt-* names are escaped", () => {
    const p = { userProperties: [["Content-Type", "text/evil"], ["mqtt-message-expiry", "1"], ["MQTT-User-Property", "x=y"]] as const }
    const { nats, back } = roundTrip("t", p)
    expect(nats.headers.every(([k]) => k === "Mqtt-User-Property")).toBe(true)
    expect(back.properties).toEqual(p)
  })

  it("drops (and counts) header lines an MQTT string cannot hold", () => {
    const block = Buffer.concat([
      Buffer.from("NATS/1.0\r\nok: 1\r\nbad: "), Buffer.from([0xff, 0xfe]), Buffer.from("\r\nnul: a\u0000b\r\nno colon\r\nlast: 2\r\n\r\n")
    ])
    const p = parseHeaderBlock(block)
    expect(p.headers).toEqual([["ok", "1"], ["last", "2"]])
    expect(p.dropped).toBe(3)
    expect(natsToPublish("a", undefined, block).dropped).toBe(3)
  })
})

describe("the well-known headers", () => {
  it("Content Type, Payload Format Indicator, Message Expiry Interval", () => {
    const { nats, back } = roundTrip("t", { contentType: "application/json", payloadFormatIndicator: true, messageExpiryInterval: 30 })
    expect(nats.headers).toEqual([["Content-Type", "application/json"], ["Mqtt-Payload-Format", "1"], ["Mqtt-Message-Expiry", "30"]])
    expect(back.properties).toEqual({ contentType: "application/json", payloadFormatIndicator: true, messageExpiryInterval: 30 })
  })

  it("a NATS service's Content-Type is the MQTT Content Type, whatever its case", () => {
    const h = natsHeaders()
    h.append("content-type", "text/plain")
    expect(natsToPublish("a", undefined, encoded(h)).properties).toEqual({ contentType: "text/plain" })
  })

  it("a second Content-Type, or a well-known header that does not parse, stays a User Property", () => {
    const block = headerBlock([["Content-Type", "a"], ["Content-Type", "b"], ["Mqtt-Payload-Format", "yes"], ["Mqtt-Message-Expiry", "-1"], ["Mqtt-Correlation-Data", "!!"]])!
    expect(natsToPublish("x", undefined, block).properties).toEqual({
      contentType: "a",
      userProperties: [["Content-Type", "b"], ["Mqtt-Payload-Format", "yes"], ["Mqtt-Message-Expiry", "-1"], ["Mqtt-Correlation-Data", "!!"]]
    })
  })

  it("a status message is told apart: it is not application data", () => {
    expect(natsToPublish("_INBOX.a", undefined, Buffer.from("NATS/1.0 503\r\n\r\n")).status).toBe(NO_RESPONDERS_STATUS)
  })

  it("any message's properties survive MQTT -> NATS -> MQTT", () => {
    const props = fc.record({
      payloadFormatIndicator: fc.boolean(),
      messageExpiryInterval: fc.integer({ min: 0, max: 0xffff_ffff }),
      contentType: mqttString(),
      responseTopic: topicName(),
      correlationData: fc.uint8Array({ maxLength: 600 }).map((b) => Buffer.from(b)),
      userProperties: fc.array(fc.tuple(mqttString(), mqttString()).map(([k, v]) => [k, v] as const), { minLength: 1, maxLength: 5 })
    }, { requiredKeys: [] })
    fc.assert(
      fc.property(topicName(), props, (topic, p) => {
        const { back } = roundTrip(topic, p)
        expect(back.topic).toBe(topic)
        expect(back.properties).toEqual(p)
      }),
      { numRuns: 500 }
    )
  })
})

describe("request/response across the bridge", () => {
  it("an MQTT request without Correlation Data gets its Response Topic's subject as reply: a plain NATS respond reaches it", () => {
    const n = publishToNats("svc/time", { responseTopic: "clients/dev-1/resp" })
    expect(n).toMatchObject({ ok: true, subject: "svc.time", reply: "clients.dev-1.resp" })
    // the NATS service responds with no headers: MQTT subscribers of the topic get it
    expect(natsToPublish("clients.dev-1.resp", undefined, undefined)).toMatchObject({ topic: "clients/dev-1/resp", properties: {} })
  })

  it("with Correlation Data, the reply subject carries it, so the response comes back with it", () => {
    const correlationData = Buffer.from("req-0001")
    const n = publishToNats("svc/time", { responseTopic: "clients/dev-1/resp", correlationData })
    if (!n.ok) throw new Error(n.reason)
    expect(n.reply).toBe(`$MQTT.rr.b${correlationData.toString("base64url")}.clients.dev-1.resp`)
    expect(n.headers).toEqual([]) // not also a header
    // a NATS service's msg.respond(data): a publish to the reply subject, without headers
    expect(natsToPublish(n.reply!, undefined, undefined)).toMatchObject({ topic: "clients/dev-1/resp", properties: { correlationData } })
  })

  it("an MQTT 5 responder gets the Response Topic and Correlation Data of an MQTT request that crossed NATS", () => {
    const correlationData = Buffer.from([0, 1, 2, 255])
    const n = publishToNats("svc/time", { responseTopic: "r/1", correlationData })
    if (!n.ok) throw new Error(n.reason)
    expect(natsToPublish(n.subject, n.reply, headerBlock(n.headers))).toMatchObject({ topic: "svc/time", properties: { responseTopic: "r/1", correlationData } })
  })

  it(`Correlation Data over ${MAX_CORRELATION_IN_REPLY} bytes goes as a header with the plain reply subject`, () => {
    const correlationData = Buffer.alloc(MAX_CORRELATION_IN_REPLY + 1, 7)
    const n = publishToNats("svc", { responseTopic: "r/1", correlationData })
    expect(n).toMatchObject({ ok: true, reply: "r.1", headers: [["Mqtt-Correlation-Data", correlationData.toString("base64")]] })
    expect(replySubjectFor("r/1", Buffer.alloc(MAX_CORRELATION_IN_REPLY))).toMatch(/^\$MQTT\.rr\.b/)
  })

  it("a NATS request reaches MQTT 5 devices with a Response Topic that routes their answer to the requester", () => {
    const inbox = "_INBOX.Q4F7dJ2kRz.2"
    const req = natsToPublish("devices.d1.cmd", inbox, undefined)
    expect(req).toMatchObject({ topic: "devices/d1/cmd", properties: { responseTopic: "_INBOX/Q4F7dJ2kRz/2" } })
    const answer = publishToNats(req.properties.responseTopic!, {})
    expect(answer).toMatchObject({ ok: true, subject: inbox })
  })

  it("a reply subject that would not come back the same is no Response Topic", () => {
    expect(natsToPublish("a", "odd.t//x///y", undefined).properties.responseTopic).toBeUndefined()
    expect(natsToPublish("a", "in.a+b", undefined).properties.responseTopic).toBeUndefined()
  })

  it("only the canonical $MQTT.rr. form is read as a response", () => {
    expect(parseResponseSubject("$MQTT.rr.bAAE.r.1")).toEqual({ responseTopic: "r/1", correlationData: Buffer.from([0, 1]) })
    expect(parseResponseSubject("$MQTT.rr.xAAE.r.1")).toBeUndefined()
    expect(parseResponseSubject("$MQTT.rr.bAA=.r.1")).toBeUndefined()
    expect(parseResponseSubject("$MQTT.rr.bAAF.r.1")).toBeUndefined() // decodes to [0, 1] too: not canonical
    expect(parseResponseSubject("$MQTT.rr.bAAE")).toBeUndefined()
    expect(parseResponseSubject("other.subject")).toBeUndefined()
  })

  it("refuses what NATS cannot carry: 0x90 for the topic, 0x83 for a Response Topic no reply subject can hold", () => {
    expect(publishToNats("a b", {})).toMatchObject({ ok: false, code: 0x90 })
    expect(publishToNats("a", { responseTopic: "r/*" })).toMatchObject({ ok: false, code: 0x83 })
    expect(topicToSubject("r/*").ok).toBe(false)
  })
})

describe("NATS outcomes as PUBACK/PUBREC reason codes", () => {
  it("no subscriber, or no responders, is 0x10 No matching subscribers", () => {
    expect(ackReasonFor({ kind: "routed", receivers: 0 })).toBe(0x10)
    expect(ackReasonFor({ kind: "noResponders" })).toBe(0x10)
    expect(ackReasonFor({ kind: "routed", receivers: 3 })).toBe(0x00)
  })

  it("permissions 0x87, max_payload and stream limits 0x97, other store failures 0x80", () => {
    expect(ackReasonFor({ kind: "permissionDenied" })).toBe(0x87)
    expect(ackReasonFor({ kind: "maxPayload" })).toBe(0x97)
    expect(ackReasonFor({ kind: "storeFailed", limit: true })).toBe(0x97)
    expect(ackReasonFor({ kind: "storeFailed", limit: false })).toBe(0x80)
    expect(ackReasonFor({ kind: "stored" })).toBe(0x00)
  })
})
