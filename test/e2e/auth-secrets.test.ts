// The secrets sweep for what authentication added: bcrypt hashes (and the passwords
// behind them), nkey seeds, and the TLS private key never appear in any monitoring
// body or header, nor in the log, whatever clients did (logged in, left, failed,
// violated permissions, failed the TLS handshake).
import { readFileSync } from "node:fs"
import bcrypt from "bcryptjs"
import { createUser } from "@nats-io/nkeys"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, type NatsConnection, nkeyAuthenticator } from "nats"
import type { UserEntry } from "../../src/config/options.js"
import { makeTestCerts, type TestCerts } from "../helpers/certs.js"
import { account, authorization, BadRequests, expectNoLeaks, request, startMonitoredServer, sweepRequests } from "../helpers/monitor.js"
import { eventually, RawClient } from "../helpers/server.js"

const S = {
  alicePw: "Sntl-bc-alice-1a2b3c4d",
  bobPw: "Sntl-bc-bob-5e6f7a8b",
  wrongPw: "Sntl-bc-wrong-9c0d1e2f"
} as const

let certs: TestCerts
beforeAll(() => {
  certs = makeTestCerts()
})
afterAll(() => certs.remove())

/** The base64 body of a PEM key, in 40-character slices: none may show up anywhere. */
const keyFragments = (pemFile: string): Array<string> =>
  readFileSync(pemFile, "utf8").split("\n").filter((l) => l.length >= 40 && !l.startsWith("-----")).map((l) => l.slice(0, 40))

describe("no bcrypt hash, nkey seed or TLS key ever leaves", () => {
  it("every endpoint, every parameter, every header, every log line", async () => {
    const aliceHash = bcrypt.hashSync(S.alicePw, 4)
    const bobHash = bcrypt.hashSync(S.bobPw, 4)
    const kp = createUser()
    const seed = new TextDecoder().decode(kp.getSeed())
    const nkeyUser: UserEntry = { user: undefined, password: undefined, nkey: kp.getPublicKey(), permissions: undefined, account: "ACME" }
    const limited: UserEntry = {
      user: "bob",
      password: bobHash,
      nkey: undefined,
      permissions: { publish: { allow: ["bob.>"], deny: undefined }, subscribe: undefined, allowResponses: undefined },
      account: undefined
    }
    const sentinels = [...Object.values(S), aliceHash, bobHash, seed, ...keyFragments(certs.serverKey), ...keyFragments(certs.clientKey)]
    const leaks = (text: string) => sentinels.filter((s) => text.includes(s))

    const srv = await startMonitoredServer({
      httpBasePath: "",
      tls: { certFile: certs.serverCert, keyFile: certs.serverKey, caFile: certs.caFile, verify: false, timeoutMs: 2_000 },
      accounts: [{ ...account("ACME", [{ ...nkeyUser, account: undefined }]) }],
      authorization: authorization({ users: [{ user: "alice", password: aliceHash, nkey: undefined, permissions: undefined, account: undefined }, limited] })
    })
    const tlsOpts = { caFile: certs.caFile, certFile: certs.clientCert, keyFile: certs.clientKey }
    const open: Array<NatsConnection> = []
    try {
      const alice = await connect({ servers: srv.url, user: "alice", pass: S.alicePw, tls: tlsOpts, reconnect: false })
      alice.subscribe("alice.in")
      await alice.flush()
      const nk = await connect({ servers: srv.url, authenticator: nkeyAuthenticator(kp.getSeed()), tls: tlsOpts, reconnect: false })
      nk.subscribe("acme.in")
      await nk.flush()
      open.push(alice, nk)
      // bob logs in, breaks his permissions, and leaves.
      const bob = await connect({ servers: srv.url, user: "bob", pass: S.bobPw, tls: tlsOpts, reconnect: false })
      bob.publish("not.bob", new TextEncoder().encode("x"))
      await bob.flush()
      const before = srv.serving.server.closed.size
      await bob.close()
      await eventually(() => srv.serving.server.closed.size > before, "bob in the closed ring")
      // A wrong password, and a client that does not speak TLS.
      await expect(connect({ servers: srv.url, user: "alice", pass: S.wrongPw, tls: tlsOpts, reconnect: false })).rejects.toThrow()
      const raw = await RawClient.connect(srv.natsPort)
      await raw.waitFor("\r\n")
      raw.send(`CONNECT {"user":"alice","pass":"${S.wrongPw}"}\r\n`)
      await raw.waitClosed()
      await eventually(() => srv.serving.server.closed.toArray().some((c) => c.reason === "TLS Handshake Failure"), "the handshake failure")

      const ring = srv.serving.server.closed.toArray()
      const connz = JSON.parse((await request(`${srv.base}/connz?auth=true`)).body)
      const requests = [
        ...sweepRequests({ cid: connz.connections[0].cid, closedCid: ring[0].cid, user: "alice", acc: "ACME", subject: "alice.in", pattern: ">" }),
        ...ring.map((c) => `/connz?cid=${c.cid}&state=closed&auth=true&subs=detail`),
        ...BadRequests.map(([path]) => path)
      ]
      await expectNoLeaks(srv.base, requests, leaks)
      // The nkey user is shown by its public key, as nats-server does; the seed never.
      const all = (await request(`${srv.base}/connz?state=all&auth=true`)).body
      expect(all).toContain(kp.getPublicKey())
      expect(all).toMatch(/"authorized_user":\s*"alice"/)
    } finally {
      await Promise.all(open.map((c) => c.close().catch(() => {})))
      await srv.close()
    }
    const log = srv.lines.join("")
    expect(log).toContain("CONNECT")
    expect(log).toContain("Publish Violation")
    expect(log).toContain("TLS handshake error")
    expect(leaks(log)).toEqual([])
  })
})
