// The QoS of a message an MQTT client published, carried to the other servers of a
// cluster (routes, leaf connections) in the `Nmqtt-Pub` header, as nats-server marks
// every message that arrived over MQTT with the QoS it was published at. A QoS 1/2
// publication then reaches MQTT subscribers on any node at its QoS (QoS 0 without it),
// and MQTT subscribers of nats-server nodes read the same header.
//
// Only QoS 1 and 2 are written: QoS 0 is what a message without the header means, so a
// QoS 0 fan-out crosses routes unchanged (no header block added to every message).
//
// A publication with RETAIN carries `Nmqtt-Retain: 1` as well, Switchyard's own mark (nats-server
// has none for a live message and ignores it): an MQTT 5.0 subscriber with Retain As
// Published on the other node gets RETAIN=1, as on the node it was published to.
export const MQTT_QOS_HEADER = "Nmqtt-Pub"
export const MQTT_RETAIN_HEADER = "Nmqtt-Retain"

const NAME = Buffer.from("nmqtt-pub:", "latin1")
const RETAIN_NAME = Buffer.from("nmqtt-retain:", "latin1")
const PREFIX = Buffer.from("nmqtt-", "latin1")
const STATUS = Buffer.from("NATS/1.0\r\n", "latin1")
const LINE: ReadonlyArray<Buffer> = [0, 1, 2].map((q) => Buffer.from(`${MQTT_QOS_HEADER}: ${q}\r\n`, "latin1"))
const RETAIN_LINE = Buffer.from(`${MQTT_RETAIN_HEADER}: 1\r\n`, "latin1")
const CRLF = Buffer.from("\r\n", "latin1")
const NONE = Buffer.alloc(0)

/** Where the value of the line named `name` (lower case, with its colon) starts in the header block `buf[start, end)`, -1 when it has none. */
const valueAt = (buf: Uint8Array, start: number, end: number, name: Buffer): number => {
  // Names start a line: right after a CR LF (the first line is the status line).
  for (let i = start; i + name.length <= end; i++) {
    if (buf[i] !== 0x0a) continue
    let j = 0
    while (j < name.length && (buf[i + 1 + j] | 0x20) === name[j]) j++
    if (j === name.length) return i + 1 + j
  }
  return -1
}

/** The one-character value of the line named `name` in `buf[start, end)` (its char code), -1 for none or a longer value. */
const digitOf = (buf: Uint8Array, start: number, end: number, name: Buffer): number => {
  let p = valueAt(buf, start, end, name)
  if (p < 0) return -1
  while (p < end && (buf[p] === 0x20 || buf[p] === 0x09)) p++
  if (p + 1 >= end || buf[p + 1] !== 0x0d) return -1
  return buf[p]
}

/**
 * The QoS the header block `buf[start, end)` says the message was published at over MQTT:
 * 1 or 2 from an `Nmqtt-Pub` line, 0 for none or any other value.
 */
export const mqttQosOf = (buf: Uint8Array, start: number, end: number): 0 | 1 | 2 => {
  const c = digitOf(buf, start, end, NAME)
  return c === 0x31 ? 1 : c === 0x32 ? 2 : 0
}

/** Whether the header block `buf[start, end)` says the message was published with RETAIN (`Nmqtt-Retain: 1`). */
export const mqttRetainOf = (buf: Uint8Array, start: number, end: number): boolean => digitOf(buf, start, end, RETAIN_NAME) === 0x31

/** In `mqttMarksOf`'s answer: the message was published with RETAIN. */
export const MARK_RETAIN = 4

/**
 * Both marks of the header block `buf[start, end)` in one number: the QoS (`& 3`, as
 * `mqttQosOf`) and `MARK_RETAIN`; 0 for a block without either, found without reading it
 * twice when it has no `Nmqtt-` line at all.
 */
export const mqttMarksOf = (buf: Uint8Array, start: number, end: number): number => {
  if (valueAt(buf, start, end, PREFIX) < 0) return 0
  return mqttQosOf(buf, start, end) | (mqttRetainOf(buf, start, end) ? MARK_RETAIN : 0)
}

/**
 * The message `buf[start, end)` (its header block the first `hdrLen` bytes, none when -1)
 * with an `Nmqtt-Pub: <qos>` line added, as a new buffer; undefined when it already has
 * the header (a message that came with it goes on as it came).
 */
export const withMqttQos = (
  buf: Uint8Array,
  start: number,
  hdrLen: number,
  end: number,
  qos: 1 | 2
): { readonly buf: Buffer; readonly hdrLen: number } | undefined => withMqttMarks(buf, start, hdrLen, end, qos, false)

/**
 * The message `buf[start, end)` (its header block the first `hdrLen` bytes, none when -1)
 * with the marks of an MQTT publication added: `Nmqtt-Pub: <qos>` for QoS 1/2,
 * `Nmqtt-Retain: 1` for RETAIN; as a new buffer, or undefined when there is nothing to add
 * (a message that came with its marks goes on as it came).
 */
export const withMqttMarks = (
  buf: Uint8Array,
  start: number,
  hdrLen: number,
  end: number,
  qos: 0 | 1 | 2,
  retain: boolean
): { readonly buf: Buffer; readonly hdrLen: number } | undefined => {
  const src = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength)
  const has = hdrLen >= 0
  const qosLine = qos > 0 && !(has && valueAt(buf, start, start + hdrLen, NAME) >= 0) ? LINE[qos] : NONE
  const retainLine = retain && !(has && valueAt(buf, start, start + hdrLen, RETAIN_NAME) >= 0) ? RETAIN_LINE : NONE
  const added = qosLine.length + retainLine.length
  if (added === 0) return undefined
  if (!has) {
    const head = STATUS.length + added + CRLF.length
    const out = Buffer.allocUnsafe(head + end - start)
    let p = STATUS.copy(out, 0)
    p += qosLine.copy(out, p)
    p += retainLine.copy(out, p)
    p += CRLF.copy(out, p)
    src.copy(out, p, start, end)
    return { buf: out, hdrLen: head }
  }
  // The block ends with an empty line: the new fields go before it.
  const e = start + hdrLen
  const blank = hdrLen >= 4 && src[e - 4] === 0x0d && src[e - 3] === 0x0a && src[e - 2] === 0x0d && src[e - 1] === 0x0a
  const keep = blank ? hdrLen - 2 : hdrLen
  const out = Buffer.allocUnsafe(end - start - hdrLen + keep + added + CRLF.length)
  let p = src.copy(out, 0, start, start + keep)
  p += qosLine.copy(out, p)
  p += retainLine.copy(out, p)
  p += CRLF.copy(out, p)
  const newHdrLen = p
  src.copy(out, p, start + hdrLen, end)
  return { buf: out, hdrLen: newHdrLen }
}
