// Configuration this version accepts in the file but cannot yet honour. Security
// settings are refused outright (starting without them would be worse than not
// starting); optional subsystems are reported as warnings and stay off.
import type { ServerOptions } from "../config/options.js"

export interface Unsupported {
  /** Settings that must stop the server from starting. */
  readonly errors: ReadonlyArray<string>
  /** Settings that are left off, with a warning. */
  readonly warnings: ReadonlyArray<string>
}

const isBcrypt = (p: string | undefined) => p !== undefined && p.startsWith("$2")

export const checkUnsupported = (o: ServerOptions): Unsupported => {
  const errors: Array<string> = []
  const warnings: Array<string> = []
  if (o.tls !== undefined) errors.push("tls: TLS on the client port is not supported by this version")
  const allUsers = [...(o.authorization?.users ?? []), ...o.accounts.flatMap((a) => a.users)]
  if (isBcrypt(o.authorization?.password) || allUsers.some((u) => isBcrypt(u.password))) {
    errors.push("authorization: bcrypt passwords are not supported by this version")
  }
  if (allUsers.some((u) => u.nkey !== undefined)) errors.push("authorization: nkey users are not supported by this version")
  if (allUsers.some((u) => u.permissions !== undefined) || o.authorization?.defaultPermissions !== undefined) {
    errors.push("authorization: permissions are not supported by this version")
  }
  if (o.accounts.some((a) => a.exports.length > 0 || a.imports.length > 0)) {
    errors.push("accounts: exports and imports are not supported by this version")
  }
  if (o.mqtt?.tls !== undefined) errors.push("mqtt.tls: TLS on the MQTT port is not supported by this version")
  if (o.websocket !== undefined && !o.websocket.noTls) {
    errors.push("websocket: TLS on the WebSocket port is not supported by this version (set no_tls: true)")
  }
  return { errors, warnings }
}
