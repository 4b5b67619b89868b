// What the session says, on an MQTT 5.0 connection: its `ServerPacket`s as v5 packets
// (reason codes and properties where the session gave them, Success and none where it
// did not), as the client's Request Problem Information and Maximum Packet Size allow,
// written with the v5 encoder. The QoS 0 delivery path does not come here: it writes
// its PUBLISH directly (v5/encode.ts `encodePublishRange`).
import type { OutBuf, Pinner } from "../outbuf.js"
import type { ServerPacket } from "./types.js"
import { encodeInto, fitToMaximumPacketSize } from "./v5/encode.js"
import { withProblemInformation } from "./v5/information.js"
import { ReasonCode } from "./v5/reason.js"
import { NO_PROPERTIES, type Packet } from "./v5/types.js"

/** The v5 CONNACK reason code of a 3.1.1 return code, when the session gave none. */
const CONNACK_CODE: ReadonlyArray<number> = [
  ReasonCode.Success,
  ReasonCode.UnsupportedProtocolVersion,
  ReasonCode.ClientIdentifierNotValid,
  ReasonCode.ServerUnavailable,
  ReasonCode.BadUserNameOrPassword,
  ReasonCode.NotAuthorized
]

/** A session's packet as the v5 packet it stands for. */
export const toV5Packet = (p: ServerPacket): Packet => {
  switch (p.cmd) {
    case "connack":
      return {
        cmd: "connack",
        sessionPresent: p.sessionPresent,
        reasonCode: p.reasonCode ?? CONNACK_CODE[p.returnCode] ?? ReasonCode.UnspecifiedError,
        properties: p.properties ?? NO_PROPERTIES
      }
    case "publish": {
      const payload = Buffer.isBuffer(p.payload) ? p.payload : Buffer.from(p.payload.buffer, p.payload.byteOffset, p.payload.byteLength)
      return {
        cmd: "publish",
        topic: p.topic,
        payload,
        qos: p.qos,
        retain: p.retain,
        dup: p.dup,
        messageId: p.messageId,
        properties: p.properties ?? NO_PROPERTIES
      }
    }
    case "puback":
    case "pubrec":
    case "pubrel":
    case "pubcomp":
      return { cmd: p.cmd, messageId: p.messageId, reasonCode: p.reasonCode ?? ReasonCode.Success, properties: p.properties ?? NO_PROPERTIES }
    case "suback":
      return { cmd: "suback", messageId: p.messageId, reasonCodes: p.reasonCodes ?? p.granted, properties: p.properties ?? NO_PROPERTIES }
    case "unsuback":
      if (p.reasonCodes === undefined) throw new Error("an MQTT 5.0 UNSUBACK needs a reason code per filter")
      return { cmd: "unsuback", messageId: p.messageId, reasonCodes: p.reasonCodes, properties: p.properties ?? NO_PROPERTIES }
    case "pingresp":
      return p
    case "disconnect":
      return { cmd: "disconnect", reasonCode: p.reasonCode, properties: p.properties ?? NO_PROPERTIES }
  }
}

/**
 * `p` written at the end of `out` for a v5 client: Reason Strings and User Properties
 * only where its Request Problem Information allows them [MQTT-3.1.2-29], left out
 * when they would make the packet larger than its Maximum Packet Size (a packet other
 * than PUBLISH that still does not fit is not sent: 0 bytes). Returns the bytes appended.
 */
export const encodeIntoV5 = (
  out: OutBuf,
  p: ServerPacket,
  problemInformation: boolean,
  maximumPacketSize: number = Number.POSITIVE_INFINITY,
  pin?: Pinner
): number => {
  if (p.cmd === "puback" || p.cmd === "pubrec" || p.cmd === "pubrel" || p.cmd === "pubcomp") {
    const n = encodeAckShort(out, p.cmd, p.messageId, p.reasonCode ?? ReasonCode.Success, p.properties, maximumPacketSize)
    if (n > 0) return n
  }
  let packet = withProblemInformation(toV5Packet(p), problemInformation)
  if (packet.cmd !== "publish" && maximumPacketSize !== Number.POSITIVE_INFINITY) {
    const fits = fitToMaximumPacketSize(packet, maximumPacketSize)
    if (fits === undefined) return 0
    packet = fits
  }
  return encodeInto(out, packet, "server", pin)
}

/** First bytes of PUBACK, PUBREC, PUBREL (its required 0b0010 flags) and PUBCOMP. */
const ACK_FIRST = { puback: 0x40, pubrec: 0x50, pubrel: 0x62, pubcomp: 0x70 } as const

/**
 * The per-message acknowledgements without properties, written in place: Success in the
 * short form, the packet id alone (Remaining Length 2) [MQTT-3.4.2-1], another reason code
 * after it with a Property Length of 0 (4): the same bytes as the full encoder's, without
 * building the v5 packet and its plan for every message. 0 (nothing written) when there
 * are properties, or when the client's Maximum Packet Size does not admit even this: the
 * full path decides then.
 */
const encodeAckShort = (
  out: OutBuf,
  cmd: keyof typeof ACK_FIRST,
  messageId: number,
  reasonCode: number,
  properties: object | undefined,
  maximumPacketSize: number
): number => {
  const size = reasonCode === ReasonCode.Success ? 4 : 6
  if (properties !== undefined || size > maximumPacketSize) return 0
  const b = out.reserve(size)
  const i = out.cursor
  b[i] = ACK_FIRST[cmd]
  b[i + 1] = size - 2
  b[i + 2] = messageId >> 8
  b[i + 3] = messageId & 0xff
  if (size === 6) {
    b[i + 4] = reasonCode
    b[i + 5] = 0
  }
  out.commit(i + size)
  return size
}
