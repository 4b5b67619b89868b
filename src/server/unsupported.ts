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
  // nats-server's MQTT authorization block is a single user or token (parseSimpleAuth):
  // users or permissions there would be silently ignored, so they stop the start.
  const mqttAuth = o.mqtt?.authorization
  if (mqttAuth !== undefined && (mqttAuth.users.length > 0 || mqttAuth.defaultPermissions !== undefined)) {
    errors.push("mqtt.authorization: only user, password, token and timeout are allowed here (users and permissions belong in the top-level authorization or accounts)")
  }
  const ws = o.websocket
  if (ws !== undefined && !ws.noTls && ws.tls === undefined) {
    errors.push("websocket: tls is required unless no_tls is true")
  }
  if (ws !== undefined && o.mqtt === undefined) {
    warnings.push("websocket: this version serves only MQTT over WebSocket and MQTT is disabled, so the WebSocket listener stays off")
  }
  return { errors, warnings }
}
