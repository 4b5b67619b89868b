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
  let packet = withProblemInformation(toV5Packet(p), problemInformation)
  if (packet.cmd !== "publish" && maximumPacketSize !== Number.POSITIVE_INFINITY) {
    const fits = fitToMaximumPacketSize(packet, maximumPacketSize)
    if (fits === undefined) return 0
    packet = fits
  }
  return encodeInto(out, packet, "server", pin)
}
