// What a configuration reload may change (and what refuses it), and how connected
// clients' credentials are held to the new users without paying bcrypt again for an
// unchanged entry.
import { describe, expect, it } from "vitest"
import bcrypt from "bcryptjs"
import { defaultOptions, type ServerOptions, type UserEntry } from "../../src/config/options.js"
import { makeAuthenticator, reauthenticate } from "../../src/server/nats/auth.js"
import { planReload, sameValue } from "../../src/server/reload.js"
import { account, authorization, userEntry } from "../helpers/server.js"

const base: ServerOptions = { ...defaultOptions, configFile: "s.conf" }

describe("planReload", () => {
  it("applies authorization, logging, limits, MQTT acks and lame duck timings", () => {
    const next: ServerOptions = {
      ...base,
      authorization: authorization({ users: [userEntry("a", "pa")] }),
      log: { ...base.log, debug: true, logSizeLimit: 1000 },
      maxPayload: 2 * 1024 * 1024,
      pingIntervalMs: 5_000,
      mqtt: { ...base.mqtt!, ackWaitMs: 5_000, maxAckPending: 10 },
      lameDuckDurationMs: 60_000
    }
    const plan = planReload(base, next)
    expect(plan.refused).toEqual([])
    expect(plan.changed).toEqual([
      "authorization",
      "debug",
      "log_size_limit",
      "max_payload",
      "ping_interval",
      "mqtt.ack_wait",
      "mqtt.max_ack_pending",
      "lame_duck_duration"
    ])
  })

  it("refuses what only a restart changes, naming each key", () => {
    const next: ServerOptions = {
      ...base,
      port: 5222,
      httpPort: 9222,
      jetstream: { ...base.jetstream!, storeDir: "/elsewhere" },
      mqtt: { ...base.mqtt!, port: 1884 },
      maxPayload: 5
    }
    const plan = planReload(base, next)
    expect(plan.refused).toEqual([
      "port: cannot be changed while the server runs (restart it to apply this)",
      "http_port: cannot be changed while the server runs (restart it to apply this)",
      "jetstream.store_dir: cannot be changed while the server runs (restart it to apply this)",
      "mqtt.port: cannot be changed while the server runs (restart it to apply this)"
    ])
    expect(plan.changed).toEqual(["max_payload"])
  })

  it("refuses a change to the leafnodes block (leaf connections come and go only with a restart)", () => {
    const leafnodes = { host: "127.0.0.1", port: 7422, advertise: undefined, noAdvertise: false, authorization: undefined, remotes: [], reconnectMs: 1000 }
    const withLeaf: ServerOptions = { ...base, leafnodes }
    expect(planReload(withLeaf, { ...withLeaf, leafnodes: { ...leafnodes, remotes: [{ urls: ["nats-leaf://10.0.0.9:7422"], account: "$G" }] } }).refused).toEqual([
      "leafnodes: cannot be changed while the server runs (restart it to apply this)"
    ])
    expect(planReload(base, withLeaf).refused).toEqual(["leafnodes: cannot be changed while the server runs (restart it to apply this)"])
    expect(planReload(withLeaf, { ...withLeaf }).refused).toEqual([])
  })

  it("refuses a change to the cluster block (routes come and go only with a restart)", () => {
    const cluster = { name: "C1", host: "0.0.0.0", port: 6222, advertise: undefined, noAdvertise: false, routes: [], authorization: undefined, connectRetries: 0 }
    const withCluster: ServerOptions = { ...base, cluster }
    expect(planReload(withCluster, { ...withCluster, cluster: { ...cluster, routes: ["nats-route://10.0.0.9:6222"] } }).refused).toEqual([
      "cluster: cannot be changed while the server runs (restart it to apply this)"
    ])
    expect(planReload(base, withCluster).refused).toHaveLength(1)
    expect(planReload(withCluster, { ...withCluster }).refused).toEqual([])
  })

  it("refuses turning JetStream on or off for an account that exists, and an import nothing exports", () => {
    const prev: ServerOptions = { ...base, accounts: [{ ...account("A", []), jetstream: true }] }
    expect(planReload(prev, { ...base, accounts: [account("A", [])] }).refused).toEqual([
      "accounts.A.jetstream: cannot be changed while the server runs (restart it to apply this)"
    ])
    // A new account may come with JetStream on.
    expect(planReload(prev, { ...base, accounts: [...prev.accounts, { ...account("B", []), jetstream: true }] }).refused).toEqual([])
    const importing = { ...account("B", []), imports: [{ stream: { account: "A", subject: "x" }, service: undefined, prefix: undefined, to: undefined }] }
    expect(planReload(prev, { ...base, accounts: [...prev.accounts, importing] }).refused).toEqual([
      'accounts.B: stream import of "x" from "A": not authorized (no matching export for this account)'
    ])
  })

  it("sees no change in an identical configuration read again", () => {
    const opts: ServerOptions = { ...base, authorization: authorization({ users: [userEntry("a", "pa")] }) }
    const again: ServerOptions = JSON.parse(JSON.stringify(opts))
    expect(planReload(opts, again)).toEqual({ changed: [], refused: [] })
    expect(sameValue({ a: 1, b: undefined }, { a: 1 })).toBe(true)
    expect(sameValue([1, 2], [2, 1])).toBe(false)
  })
})

describe("reauthenticate", () => {
  const withUsers = (...users: Array<UserEntry>) => makeAuthenticator({ ...base, authorization: authorization({ users }) })

  it("keeps a client whose entry did not change, without checking its password again", () => {
    const hash = bcrypt.hashSync("pw", 4)
    const prev = withUsers(userEntry("a", hash))
    const next = withUsers({
      ...userEntry("a", hash),
      permissions: { publish: { allow: ["x"], deny: undefined }, subscribe: undefined, allowResponses: undefined }
    })
    // The stored CONNECT is not checked again: a wrong password here proves no bcrypt ran.
    const res = reauthenticate(prev, next, { user: "a", pass: "not-what-was-sent" }, undefined)
    expect(res?.permissions?.publish?.allow).toEqual(["x"])
  })

  it("refuses a client whose password changed or whose user is gone, and checks a changed entry in full", () => {
    const prev = withUsers(userEntry("a", "old"), userEntry("b", "pb"))
    const changed = withUsers(userEntry("a", "new"), userEntry("b", "pb"))
    expect(reauthenticate(prev, changed, { user: "a", pass: "old" }, undefined)).toBeUndefined()
    expect(reauthenticate(prev, withUsers(userEntry("b", "pb")), { user: "a", pass: "old" }, undefined)).toBeUndefined()
    // Moved to another account: a different entry, checked in full (and the caller sees the account).
    const moved = makeAuthenticator({ ...base, accounts: [account("B", [userEntry("b", "pb")])] })
    expect(reauthenticate(prev, moved, { user: "b", pass: "pb" }, undefined)?.account).toBe("B")
  })

  it("holds token and no_auth_user clients to the new token and user", () => {
    const tokenAuth = (token: string) => makeAuthenticator({ ...base, authorization: authorization({ token }) })
    expect(reauthenticate(tokenAuth("t1"), tokenAuth("t1"), { auth_token: "t1" }, undefined)).toBeDefined()
    expect(reauthenticate(tokenAuth("t1"), tokenAuth("t2"), { auth_token: "t1" }, undefined)).toBeUndefined()
    const noAuth = (name: string | undefined) =>
      makeAuthenticator({ ...base, authorization: authorization({ users: [userEntry("a", "pa"), userEntry("guest", "g")] }), noAuthUser: name })
    expect(reauthenticate(noAuth("guest"), noAuth("guest"), {}, undefined)?.user).toBe("guest")
    expect(reauthenticate(noAuth("guest"), noAuth(undefined), {}, undefined)).toBeUndefined()
  })
})
