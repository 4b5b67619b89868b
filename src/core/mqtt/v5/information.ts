// What a client asked to be told, and what it said about payloads: Request Problem
// Information (3.1.2.11.7) limits where the server puts Reason Strings and User
// Properties; Request Response Information (3.1.2.11.6) allows Response Information in
// the CONNACK; the Payload Format Indicator (3.3.2.3.2) says a payload is UTF-8.
import { isUtf8 } from "node:buffer"
import type { Packet } from "./types.js"

/** Packets that may carry a Reason String or User Properties whatever the client asked [MQTT-3.1.2-29]. */
const ALWAYS = new Set<Packet["cmd"]>(["publish", "connack", "disconnect"])

/**
 * A packet the server is about to send, as the client's Request Problem Information
 * allows it (absent means 1: anything the packet may carry): with 0, only a PUBLISH, a
 * CONNACK or a DISCONNECT keeps its Reason String and User Properties [MQTT-3.1.2-29].
 */
export const withProblemInformation = (p: Packet, requestProblemInformation: boolean | undefined): Packet => {
  if (requestProblemInformation !== false || ALWAYS.has(p.cmd) || !("properties" in p)) return p
  const { reasonString, userProperties, ...rest } = p.properties
  if (reasonString === undefined && userProperties === undefined) return p
  return { ...p, properties: rest } as Packet
}

/**
 * The Response Information of a CONNACK, if the client asked for it: with Request
 * Response Information 0 or absent the server sends none [MQTT-3.1.2-28].
 */
export const responseInformationFor = (requestResponseInformation: boolean | undefined, offered: string | undefined): string | undefined =>
  requestResponseInformation === true ? offered : undefined

/**
 * Does a payload match its Payload Format Indicator? With 1 it must be well-formed UTF-8
 * (3.3.2.3.2); a server that checks answers 0x99 (Payload format invalid) in the PUBACK
 * or PUBREC, or a DISCONNECT for QoS 0 [MQTT-3.3.2-4]. Absent or 0: any bytes. Checked
 * in place (no string is made of the payload).
 */
export const payloadMatchesFormat = (payloadFormatIndicator: boolean | undefined, payload: Uint8Array): boolean =>
  payloadFormatIndicator !== true || isUtf8(payload)
