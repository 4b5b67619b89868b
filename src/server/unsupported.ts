// Configuration this version accepts in the file but cannot yet honour. Security
// settings are refused outright (starting without them would be worse than not
// starting); optional subsystems are reported as warnings and stay off.
import type { ServerOptions } from "../config/options.js"
import { importProblems } from "./imports.js"

export interface Unsupported {
  /** Settings that must stop the server from starting. */
  readonly errors: ReadonlyArray<string>
  /** Settings that are left off, with a warning. */
  readonly warnings: ReadonlyArray<string>
}

export const checkUnsupported = (o: ServerOptions): Unsupported => {
  const errors: Array<string> = []
  const warnings: Array<string> = []
  // An import nothing exports to this account would silently never deliver: refuse, as nats-server does.
  errors.push(...importProblems(o))
  if (o.mqtt?.tls !== undefined) errors.push("mqtt.tls: TLS on the MQTT port is not supported by this version")
  // MQTT clients authenticate against the server's users; an MQTT-only block would be silently ignored.
  if (o.mqtt?.authorization !== undefined) {
    errors.push("mqtt.authorization: a separate MQTT authorization block is not supported by this version")
  }
  if (o.mqtt?.noAuthUser !== undefined) warnings.push("mqtt.no_auth_user is not supported by this version; the top-level no_auth_user applies")
  if (o.websocket !== undefined && !o.websocket.noTls) {
    errors.push("websocket: TLS on the WebSocket port is not supported by this version (set no_tls: true)")
  }
  return { errors, warnings }
}
