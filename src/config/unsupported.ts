// Settings this version accepts but cannot honour as given, found on the resolved
// options (so they hold for a file, flags or options built in code). Security
// settings are refused outright (starting without them would be worse than not
// starting); settings that would silently do nothing are reported as warnings.
// The configuration checks place each at its key; `-t` makes every warning an error.
import { accountReferenceProblems, importProblems, type AccountProblem } from "./account-checks.js"
import type { ServerOptions } from "./options.js"

export type Finding = AccountProblem

export interface UnsupportedFindings {
  /** Settings that must stop the server from starting. */
  readonly errors: ReadonlyArray<Finding>
  /** Settings that are left off, with a warning. */
  readonly warnings: ReadonlyArray<Finding>
}

export const findUnsupported = (o: ServerOptions): UnsupportedFindings => {
  const errors: Array<Finding> = []
  const warnings: Array<Finding> = []
  // An import nothing exports to this account would silently never deliver: refuse, as nats-server does.
  errors.push(...importProblems(o), ...accountReferenceProblems(o))
  // nats-server's MQTT authorization block is a single user or token (parseSimpleAuth):
  // users or permissions there would be silently ignored, so they stop the start.
  const mqttAuth = o.mqtt?.authorization
  if (mqttAuth !== undefined && (mqttAuth.users.length > 0 || mqttAuth.defaultPermissions !== undefined)) {
    errors.push({
      path: ["mqtt", "authorization"],
      message: "mqtt.authorization: only user, password, token and timeout are allowed here (users and permissions belong in the top-level authorization or accounts)"
    })
  }
  const ws = o.websocket
  if (ws !== undefined && !ws.noTls && ws.tls === undefined) {
    errors.push({ path: ["websocket"], message: "websocket: tls is required unless no_tls is true" })
  }
  // It serves MQTT at /mqtt and leaf connections at /leafnode (to a server that accepts them, as nats-server).
  if (ws !== undefined && o.mqtt === undefined && o.leafnodes?.port === undefined) {
    warnings.push({
      path: ["websocket"],
      message: "websocket: MQTT is disabled and leafnodes has no listen, so the WebSocket listener (MQTT at /mqtt, leaf nodes at /leafnode) stays off"
    })
  }
  return { errors, warnings }
}

/** The same, as messages (what the server logs when it starts from options built in code). */
export const checkUnsupported = (o: ServerOptions): { readonly errors: ReadonlyArray<string>; readonly warnings: ReadonlyArray<string> } => {
  const f = findUnsupported(o)
  return { errors: f.errors.map((e) => e.message), warnings: f.warnings.map((w) => w.message) }
}
