// A Switchyard leaf node authenticating with a NATS credentials file to a real nats-server
// 2.9.10 hub in operator mode. The operator, account and user JWTs are made here with
// nkeys (signed JSON, as nsc makes them; no nsc needed), the hub preloads the account
// (`resolver: MEMORY`), and the leaf's CONNECT carries the user JWT and the hub's nonce
// signed with the user's seed. The hub binds the connection to the account of the JWT;
// nats.js clients on both sides (the hub's with credentials too) exchange messages. A
// credentials file whose user the account never signed is refused by the hub, and said so
// on both sides.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createAccount, createOperator, createUser, type KeyPair } from "@nats-io/nkeys"
import { credsAuthenticator, type Msg, type NatsConnection } from "@nats-io/transport-node"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseCredentials } from "../../src/core/cluster/credentials.js"
import { interestReached } from "../helpers/cluster-nodes.js"
import { expectRefusedLeaf, type LeafServer, leafz, startLeafPair, stopLeafPair } from "../helpers/leaf-nodes.js"
import { eventually } from "../helpers/server.js"

const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString("base64url")
const text = (k: Uint8Array): string => new TextDecoder().decode(k)

/** A JWT as the NATS tooling writes it: ed25519-nkey, signed by `issuer`. */
const jwt = (issuer: KeyPair, subject: string, name: string, nats: Record<string, unknown>): string => {
  const header = b64({ typ: "JWT", alg: "ed25519-nkey" })
  const claims = {
    jti: Buffer.from(crypto.getRandomValues(new Uint8Array(20))).toString("hex").toUpperCase(),
    iat: Math.floor(Date.now() / 1000),
    iss: issuer.getPublicKey(),
    name,
    sub: subject,
    nats: { ...nats, version: 2 }
  }
  const body = `${header}.${b64(claims)}`
  return `${body}.${Buffer.from(issuer.sign(new TextEncoder().encode(body))).toString("base64url")}`
}

const UNLIMITED = { subs: -1, data: -1, payload: -1 }

/** A creds file's text: the user JWT, then the seed, between nsc's markers. */
const credsFile = (userJwt: string, seed: string): string =>
  `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n` +
  "************************* IMPORTANT *************************\nNKEY Seed printed below can be used to sign and prove identity.\n\n" +
  `-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`

const userCreds = (account: KeyPair, name: string): string => {
  const user = createUser()
  return credsFile(jwt(account, user.getPublicKey(), name, { pub: {}, sub: {}, ...UNLIMITED, type: "user" }), text(user.getSeed()))
}

describe("a credentials file on a leaf remote (operator mode hub)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "leaf-creds-"))
  const operator = createOperator()
  const account = createAccount()
  const stranger = createAccount() // never signed by the operator nor known to the hub
  let hub: LeafServer
  let leaf: LeafServer
  let hubCreds: string

  beforeAll(async () => {
    const opJwt = jwt(operator, operator.getPublicKey(), "OP", { type: "operator" })
    const accJwt = jwt(operator, account.getPublicKey(), "ACC", {
      limits: { ...UNLIMITED, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 },
      default_permissions: { pub: {}, sub: {} },
      type: "account"
    })
    fs.writeFileSync(path.join(dir, "leaf.creds"), userCreds(account, "leaf"))
    hubCreds = userCreds(account, "app")
    ;({ hub, leaf } = await startLeafPair(
      {
        impl: "nats-server",
        config: `operator: "${opJwt}"\nresolver: MEMORY\nresolver_preload: { ${account.getPublicKey()}: "${accJwt}" }\nleafnodes { listen: 127.0.0.1:{leaf} }\n`
      },
      {
        impl: "switchyard",
        config: (port) => `accounts { EDGE { users: [ { user: a, password: a } ] } }
leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${port}", account: EDGE, credentials: "${path.join(dir, "leaf.creds")}" } ] }\n`
      }
    ))
  }, 60_000)

  afterAll(async () => {
    await stopLeafPair({ hub, leaf })
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("is bound by the hub to the account of its JWT, and carries messages both ways", async () => {
    const l = (await leafz(hub)).leafs[0]
    expect(l.account).toBe(account.getPublicKey())
    const hc: NatsConnection = await hub.client({ authenticator: credsAuthenticator(new TextEncoder().encode(hubCreds)) })
    const lc = await leaf.client({ user: "a", pass: "a" })
    const got: Array<Msg> = []
    const answer = (nc: NatsConnection, subject: string) =>
      nc.subscribe(subject, { callback: (_e, m) => {
        got.push(m)
        if (m.reply) m.respond("ok")
      } })
    answer(hc, "up.>")
    answer(lc, "down.>")
    await Promise.all([hc.flush(), lc.flush()])
    await interestReached(lc, "up.probe")
    await interestReached(hc, "down.probe")
    lc.publish("up.x", "from the edge")
    hc.publish("down.x", "from the hub")
    await eventually(() => got.some((m) => m.subject === "up.x") && got.some((m) => m.subject === "down.x"), "both directions", 20_000)
    expect(got.find((m) => m.subject === "up.x")?.string()).toBe("from the edge")
    expect(got.find((m) => m.subject === "down.x")?.string()).toBe("from the hub")
  })

  it("is refused by the hub with a user its account did not sign, and says so", async () => {
    fs.writeFileSync(path.join(dir, "stranger.creds"), userCreds(stranger, "nobody"))
    await expectRefusedLeaf(hub, "switchyard",
      `leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${hub.leafPort}", credentials: "${path.join(dir, "stranger.creds")}" } ] }\n`,
      (leafLog, hubLog) => /Leafnode Error 'Authorization Violation'/.test(leafLog) && /Authorization Violation|authentication error/i.test(hubLog),
      "the refusal on both sides")
  }, 60_000)
})

describe("parseCredentials", () => {
  const account = createAccount()
  const user = createUser()
  const good = credsFile(jwt(account, user.getPublicKey(), "u", { type: "user" }), text(user.getSeed()))

  it("reads the JWT and the seed, and signs a nonce the user's public key verifies", () => {
    const c = parseCredentials(good)
    if (typeof c === "string") throw new Error(c)
    expect(c.publicKey).toBe(user.getPublicKey())
    expect(c.jwt.split(".")).toHaveLength(3)
    const sig = Buffer.from(c.sign("the nonce"), "base64url")
    expect(user.verify(new TextEncoder().encode("the nonce"), sig)).toBe(true)
  })

  it("says what is wrong without quoting the seed", () => {
    const seed = text(user.getSeed())
    const broken = good.replace(seed, `${seed.slice(0, -2)}AA`)
    for (const [t, re] of [
      ["", /no user JWT/],
      [good.replace(/eyJ[^\n]*/, "not-a-jwt"), /not a JWT/],
      [good.slice(0, good.indexOf("****")), /no nkey seed/],
      [good.replace(seed, text(account.getSeed())), /not a user seed/],
      [broken, /not valid/]
    ] as const) {
      const r = parseCredentials(t)
      expect(r).toMatch(re)
      expect(r).not.toContain(seed.slice(4))
    }
  })
})
