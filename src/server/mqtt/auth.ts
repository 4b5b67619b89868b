// Who an MQTT client is. By default the server's own users, tokens and accounts, with
// the CONNECT user name and password (a password is also tried as the token, as
// nats-server does). The `mqtt {}` block may override that for MQTT clients alone: its
// `authorization { user, password | token }` is then the only credential accepted
// (in the global account, unrestricted), and its `no_auth_user` replaces the top-level
// one for clients that send no credentials.
import type { ServerOptions } from "../../config/options.js"
import { type AuthResult, type Authenticator, makeAuthenticator } from "../nats/auth.js"
import type { ConnectOptions } from "../nats/connect.js"

export interface MqttCredentials {
  readonly username: string | undefined
  readonly password: string | undefined
}

export type MqttAuthVerdict =
  | { readonly ok: true; readonly result: AuthResult | undefined }
  | { readonly ok: false; readonly code: 4 | 5 }

export interface MqttAuthenticator {
  /** Whether MQTT clients must authenticate at all. */
  readonly required: boolean
  /** Accepted (with the account, user and permissions when auth is on), or the CONNACK refusal code. */
  check(c: MqttCredentials): MqttAuthVerdict
  /**
   * The authenticator and CONNECT fields `check` hands these credentials to; `open` when
   * no authentication is needed, `refused` when they are turned away before any lookup.
   */
  route(c: MqttCredentials): { readonly auth: Authenticator; readonly opts: ConnectOptions } | "open" | "refused"
}

const NOT_AUTHORIZED = { ok: false, code: 5 } as const
const BAD_CREDENTIALS = { ok: false, code: 4 } as const

export const makeMqttAuthenticator = (o: ServerOptions, serverAuth: Authenticator): MqttAuthenticator => {
  const m = o.mqtt
  const own = m?.authorization
  const overridden = own !== undefined && (own.user !== undefined || own.token !== undefined)
  const single = overridden
    ? makeAuthenticator({
        ...o,
        accounts: [],
        noAuthUser: undefined,
        authorization: { ...own, users: [], defaultPermissions: undefined }
      })
    : undefined
  const byUsers = m?.noAuthUser === undefined ? serverAuth : makeAuthenticator({ ...o, noAuthUser: m.noAuthUser })
  const required = single !== undefined || byUsers.required
  const route: MqttAuthenticator["route"] = ({ username, password }) => {
    // nats-server refuses an empty user name as malformed, whatever the configuration.
    if (username === "") return "refused"
    if (!required) return "open"
    const anonymous = username === undefined && password === undefined
    return anonymous && m?.noAuthUser !== undefined
      ? { auth: byUsers, opts: {} }
      : { auth: single ?? byUsers, opts: { user: username, pass: password, auth_token: password } }
  }
  return {
    required,
    route,
    check: (c) => {
      const r = route(c)
      if (r === "refused") return BAD_CREDENTIALS
      if (r === "open") return { ok: true, result: undefined }
      const res = r.auth.authenticate(r.opts, undefined)
      // Wrong or missing credentials alike: not authorized, as nats-server and mosquitto answer.
      return res !== undefined ? { ok: true, result: res } : NOT_AUTHORIZED
    }
  }
}

/**
 * A connected MQTT client's credentials after a reload from `previous` to `next`: kept
 * without a new check when they name the same, unchanged entry; checked in full otherwise.
 */
export const recheckMqtt = (previous: MqttAuthenticator, next: MqttAuthenticator, c: MqttCredentials): MqttAuthVerdict => {
  const now = next.route(c)
  const before = previous.route(c)
  if (typeof now === "object" && typeof before === "object") {
    const entry = now.auth.lookup(now.opts)
    if (entry !== undefined && entry.entry === before.auth.lookup(before.opts)?.entry) return { ok: true, result: entry.result }
  }
  return next.check(c)
}

const cache = new WeakMap<object, { readonly options: ServerOptions; readonly auth: Authenticator; readonly mqtt: MqttAuthenticator }>()

/** One MQTT authenticator per server, built on first use from its options, and again after a reload replaced them. */
export const mqttAuthenticator = (server: { readonly options: ServerOptions; readonly auth: Authenticator }): MqttAuthenticator => {
  const c = cache.get(server)
  if (c !== undefined && c.options === server.options && c.auth === server.auth) return c.mqtt
  const mqtt = makeMqttAuthenticator(server.options, server.auth)
  cache.set(server, { options: server.options, auth: server.auth, mqtt })
  return mqtt
}
