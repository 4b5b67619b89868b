// Who an MQTT client is. By default the server's own users, tokens and accounts, with
// the CONNECT user name and password (a password is also tried as the token, as
// nats-server does). The `mqtt {}` block may override that for MQTT clients alone: its
// `authorization { user, password | token }` is then the only credential accepted
// (in the global account, unrestricted), and its `no_auth_user` replaces the top-level
// one for clients that send no credentials.
import type { ServerOptions } from "../../config/options.js"
import { type AuthResult, type Authenticator, makeAuthenticator } from "../auth.js"

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
  return {
    required,
    check: ({ username, password }) => {
      // A malformed user name field: nats-server refuses an empty one with CONNACK 4 (bad user
      // name or password), whatever the configuration. A password without a user name never
      // gets here: the session closes that CONNECT as a protocol violation [MQTT-3.1.2-22].
      if (username === "") return BAD_CREDENTIALS
      if (!required) return { ok: true, result: undefined }
      const anonymous = username === undefined && password === undefined
      const opts = { user: username, pass: password, auth_token: password }
      const res = anonymous && m?.noAuthUser !== undefined
        ? byUsers.authenticate({}, undefined)
        : (single ?? byUsers).authenticate(opts, undefined)
      // Wrong or missing credentials alike: not authorized, as nats-server and mosquitto answer.
      return res !== undefined ? { ok: true, result: res } : NOT_AUTHORIZED
    }
  }
}

const cache = new WeakMap<object, MqttAuthenticator>()

/** One MQTT authenticator per server, built on first use from its options. */
export const mqttAuthenticator = (server: { readonly options: ServerOptions; readonly auth: Authenticator }): MqttAuthenticator => {
  let a = cache.get(server)
  if (a === undefined) {
    a = makeMqttAuthenticator(server.options, server.auth)
    cache.set(server, a)
  }
  return a
}
