// MQTT packets as one trace line each (`-V`): the packet type, its id, topics, QoS and
// flags, never a payload or a password. Topics and client ids are quoted as JSON
// strings, so a topic carrying a newline cannot forge a log line.
import type { ClientPacket, ServerPacket } from "./types.js"

const q = (s: string): string => JSON.stringify(s)

/** ` rc=0x87` for a v5 reason code other than Success. */
const rc = (p: { readonly reasonCode?: number | undefined }): string =>
  p.reasonCode === undefined || p.reasonCode === 0 ? "" : ` rc=0x${p.reasonCode.toString(16)}`

const flags = (dup: boolean, retain: boolean): string => `${dup ? " dup" : ""}${retain ? " retain" : ""}`

/** `PUBLISH "a/b" qos=1 pi=7 dup retain size=5` (only the flags that are set). */
export const describePublish = (topic: string, qos: number, messageId: number | undefined, dup: boolean, retain: boolean, size: number): string =>
  `PUBLISH ${q(topic)} qos=${qos}${qos > 0 ? ` pi=${messageId ?? 0}` : ""}${flags(dup, retain)} size=${size}`

export const describePacket = (p: ClientPacket | ServerPacket): string => {
  switch (p.cmd) {
    case "connect": {
      const parts = [`CONNECT client_id=${q(p.clientId)}`, `clean=${p.clean}`, `keepalive=${p.keepalive}`]
      if (p.protocolVersion !== 4 || p.protocolId !== "MQTT") parts.push(`protocol=${q(p.protocolId)}/${p.protocolVersion}`)
      if (p.username !== undefined) parts.push(`username=${q(p.username)}`)
      if (p.password !== undefined) parts.push("password=[REDACTED]")
      if (p.will !== undefined) parts.push(`will=${q(p.will.topic)} will_qos=${p.will.qos}${p.will.retain ? " will_retain" : ""}`)
      return parts.join(" ")
    }
    case "connack":
      if (!("returnCode" in p)) return "CONNACK"
      return `CONNACK rc=${p.reasonCode === undefined ? p.returnCode : `0x${p.reasonCode.toString(16)}`}${p.sessionPresent ? " session_present" : ""}`
    case "publish":
      return describePublish(p.topic, p.qos, p.messageId, p.dup, p.retain, p.payload.length)
    case "puback":
    case "pubrec":
    case "pubrel":
    case "pubcomp":
      return `${p.cmd.toUpperCase()} pi=${p.messageId}${rc(p)}`
    case "subscribe":
      return `SUBSCRIBE pi=${p.messageId} [${p.subscriptions.map((s) => `${q(s.topic)} qos=${s.qos}`).join(", ")}]`
    case "suback":
      if (!("granted" in p)) return "SUBACK"
      return `SUBACK pi=${p.messageId} granted=[${(p.reasonCodes ?? p.granted).join(",")}]`
    case "unsubscribe":
      return `UNSUBSCRIBE pi=${p.messageId} [${p.unsubscriptions.map(q).join(", ")}]`
    case "unsuback":
      return "messageId" in p ? `UNSUBACK pi=${p.messageId}` : "UNSUBACK"
    case "pingreq":
      return "PINGREQ"
    case "pingresp":
      return "PINGRESP"
    case "disconnect":
      return `DISCONNECT${rc(p)}`
    case "auth":
      return `AUTH${rc(p)}`
  }
}
