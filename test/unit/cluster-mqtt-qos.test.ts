// The QoS of an MQTT publication carried between servers in the `Nmqtt-Pub` header
// (src/core/cluster/mqtt-qos.ts), as nats-server marks messages that arrived over MQTT.
import { describe, expect, it } from "vitest"
import { MARK_RETAIN, mqttMarksOf, mqttQosOf, withMqttMarks, withMqttQos } from "../../src/core/cluster/mqtt-qos.js"
import { parseHeaders } from "../../src/core/jetstream/headers.js"

const msg = (header: string | undefined, payload: string) => {
  const h = header === undefined ? "" : header
  return { buf: Buffer.from(`xx${h}${payload}yy`, "latin1"), start: 2, hdrLen: header === undefined ? -1 : h.length, end: 2 + h.length + payload.length }
}

describe("Nmqtt-Pub between servers", () => {
  it("adds a header block to a message without one", () => {
    const m = msg(undefined, "21.5")
    const out = withMqttQos(m.buf, m.start, m.hdrLen, m.end, 1)!
    expect(out.buf.toString("latin1")).toBe("NATS/1.0\r\nNmqtt-Pub: 1\r\n\r\n21.5")
    expect(out.hdrLen).toBe(out.buf.length - 4)
    expect(mqttQosOf(out.buf, 0, out.hdrLen)).toBe(1)
  })

  it("adds the line to an existing block, keeping its fields, status and the payload", () => {
    const m = msg("NATS/1.0\r\nContent-Type: text/plain\r\nA: 1\r\n\r\n", "x")
    const out = withMqttQos(m.buf, m.start, m.hdrLen, m.end, 2)!
    expect(out.buf.toString("latin1")).toBe("NATS/1.0\r\nContent-Type: text/plain\r\nA: 1\r\nNmqtt-Pub: 2\r\n\r\nx")
    const h = parseHeaders(out.buf, 0, out.hdrLen)
    expect([...h.entries()]).toEqual([["content-type", "text/plain"], ["a", "1"], ["nmqtt-pub", "2"]])
    expect(mqttQosOf(out.buf, 0, out.hdrLen)).toBe(2)
  })

  it("completes a block that lacks its closing empty line", () => {
    const m = msg("NATS/1.0\r\n", "x")
    const out = withMqttQos(m.buf, m.start, m.hdrLen, m.end, 1)!
    expect(out.buf.toString("latin1")).toBe("NATS/1.0\r\nNmqtt-Pub: 1\r\n\r\nx")
  })

  it("leaves a message that already says its QoS as it is", () => {
    const m = msg("NATS/1.0\r\nNmqtt-Pub: 1\r\n\r\n", "x")
    expect(withMqttQos(m.buf, m.start, m.hdrLen, m.end, 2)).toBeUndefined()
  })

  it("reads the QoS whatever the name's case and spacing; anything else is QoS 0", () => {
    const q = (block: string) => mqttQosOf(Buffer.from(block, "latin1"), 0, block.length)
    expect(q("NATS/1.0\r\nNmqtt-Pub: 1\r\n\r\n")).toBe(1)
    expect(q("NATS/1.0\r\nnmqtt-pub:2\r\n\r\n")).toBe(2)
    expect(q("NATS/1.0\r\nX: y\r\nNMQTT-PUB: \t1\r\n\r\n")).toBe(1)
    expect(q("NATS/1.0\r\nNmqtt-Pub: 0\r\n\r\n")).toBe(0)
    expect(q("NATS/1.0\r\nNmqtt-Pub: 3\r\n\r\n")).toBe(0)
    expect(q("NATS/1.0\r\nNmqtt-Pub: 12\r\n\r\n")).toBe(0)
    expect(q("NATS/1.0\r\nX-Nmqtt-Pub: 1\r\n\r\n")).toBe(0)
    expect(q("NATS/1.0\r\nX: Nmqtt-Pub: 1\r\n\r\n")).toBe(0)
    expect(q("NATS/1.0\r\n\r\n")).toBe(0)
    // A block cut short never reads past its end.
    expect(q("NATS/1.0\r\nNmqtt-Pub: 1")).toBe(0)
  })
})

describe("Nmqtt-Retain between servers (RETAIN for MQTT 5.0 Retain As Published on the other node)", () => {
  it("marks QoS and RETAIN together, or RETAIN alone at QoS 0; reads both back", () => {
    const m = msg(undefined, "on")
    const both = withMqttMarks(m.buf, m.start, m.hdrLen, m.end, 1, true)!
    expect(both.buf.toString("latin1")).toBe("NATS/1.0\r\nNmqtt-Pub: 1\r\nNmqtt-Retain: 1\r\n\r\non")
    expect(mqttMarksOf(both.buf, 0, both.hdrLen)).toBe(1 | MARK_RETAIN)
    const q0 = withMqttMarks(m.buf, m.start, m.hdrLen, m.end, 0, true)!
    expect(q0.buf.toString("latin1")).toBe("NATS/1.0\r\nNmqtt-Retain: 1\r\n\r\non")
    expect(mqttMarksOf(q0.buf, 0, q0.hdrLen)).toBe(MARK_RETAIN)
    expect(mqttQosOf(q0.buf, 0, q0.hdrLen)).toBe(0)
    // nothing to say: no copy
    expect(withMqttMarks(m.buf, m.start, m.hdrLen, m.end, 0, false)).toBeUndefined()
  })

  it("keeps a block's fields and adds only the mark it lacks; a message with both goes as it came", () => {
    const m = msg("NATS/1.0\r\nA: 1\r\nNmqtt-Pub: 2\r\n\r\n", "x")
    const out = withMqttMarks(m.buf, m.start, m.hdrLen, m.end, 2, true)!
    expect(out.buf.toString("latin1")).toBe("NATS/1.0\r\nA: 1\r\nNmqtt-Pub: 2\r\nNmqtt-Retain: 1\r\n\r\nx")
    expect([...parseHeaders(out.buf, 0, out.hdrLen).entries()]).toEqual([["a", "1"], ["nmqtt-pub", "2"], ["nmqtt-retain", "1"]])
    expect(withMqttMarks(out.buf, 0, out.hdrLen, out.buf.length, 2, true)).toBeUndefined()
  })

  it("reads RETAIN only from its own line with the value 1", () => {
    const r = (block: string) => mqttMarksOf(Buffer.from(block, "latin1"), 0, block.length)
    expect(r("NATS/1.0\r\nnmqtt-retain:1\r\n\r\n")).toBe(MARK_RETAIN)
    expect(r("NATS/1.0\r\nNmqtt-Retain: 0\r\n\r\n")).toBe(0)
    expect(r("NATS/1.0\r\nNmqtt-Retain: true\r\n\r\n")).toBe(0)
    expect(r("NATS/1.0\r\nX-Nmqtt-Retain: 1\r\n\r\n")).toBe(0)
    expect(r("NATS/1.0\r\nA: b\r\n\r\n")).toBe(0)
    expect(r("NATS/1.0\r\nNmqtt-Pub: 1\r\nNmqtt-Retain: 1")).toBe(1)
  })
})
