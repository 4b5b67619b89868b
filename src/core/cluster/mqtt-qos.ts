// The QoS of a message an MQTT client published, carried to the other servers of a
// cluster (routes, leaf connections) in the `Nmqtt-Pub` header, as nats-server marks
// every message that arrived over MQTT with the QoS it was published at. A QoS 1/2
// publication then reaches MQTT subscribers on any node at its QoS (QoS 0 without it),
// and MQTT subscribers of nats-server nodes read the same header.
//
// Only QoS 1 and 2 are written: QoS 0 is what a message without the header means, so a
// QoS 0 fan-out crosses routes unchanged (no header block added to every message).

export const MQTT_QOS_HEADER = "Nmqtt-Pub"

const NAME = Buffer.from("nmqtt-pub:", "latin1")
const STATUS = Buffer.from("NATS/1.0\r\n", "latin1")
const LINE: ReadonlyArray<Buffer> = [0, 1, 2].map((q) => Buffer.from(`${MQTT_QOS_HEADER}: ${q}\r\n`, "latin1"))
const CRLF = Buffer.from("\r\n", "latin1")

/** Where the `Nmqtt-Pub:` line's value starts in the header block `buf[start, end)`, -1 when it has none. */
const valueAt = (buf: Uint8Array, start: number, end: number): number => {
  // Names start a line: right after a CR LF (the first line is the status line).
  for (let i = start; i + NAME.length <= end; i++) {
    if (buf[i] !== 0x0a) continue
    let j = 0
    while (j < NAME.length && (buf[i + 1 + j] | 0x20) === NAME[j]) j++
    if (j === NAME.length) return i + 1 + j
  }
  return -1
}

/**
 * The QoS the header block `buf[start, end)` says the message was published at over MQTT:
 * 1 or 2 from an `Nmqtt-Pub` line, 0 for none or any other value.
 */
export const mqttQosOf = (buf: Uint8Array, start: number, end: number): 0 | 1 | 2 => {
  let p = valueAt(buf, start, end)
  if (p < 0) return 0
  while (p < end && (buf[p] === 0x20 || buf[p] === 0x09)) p++
  if (p + 1 >= end || buf[p + 1] !== 0x0d) return 0
  return buf[p] === 0x31 ? 1 : buf[p] === 0x32 ? 2 : 0
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
): { readonly buf: Buffer; readonly hdrLen: number } | undefined => {
  const src = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength)
  const line = LINE[qos]
  if (hdrLen < 0) {
    const head = STATUS.length + line.length + CRLF.length
    const out = Buffer.allocUnsafe(head + end - start)
    let p = STATUS.copy(out, 0)
    p += line.copy(out, p)
    p += CRLF.copy(out, p)
    src.copy(out, p, start, end)
    return { buf: out, hdrLen: head }
  }
  if (valueAt(buf, start, start + hdrLen) >= 0) return undefined
  // The block ends with an empty line: the new field goes before it.
  const e = start + hdrLen
  const blank = hdrLen >= 4 && src[e - 4] === 0x0d && src[e - 3] === 0x0a && src[e - 2] === 0x0d && src[e - 1] === 0x0a
  const keep = blank ? hdrLen - 2 : hdrLen
  const out = Buffer.allocUnsafe(end - start - hdrLen + keep + line.length + CRLF.length)
  let p = src.copy(out, 0, start, start + keep)
  p += line.copy(out, p)
  p += CRLF.copy(out, p)
  const newHdrLen = p
  src.copy(out, p, start + hdrLen, end)
  return { buf: out, hdrLen: newHdrLen }
}
