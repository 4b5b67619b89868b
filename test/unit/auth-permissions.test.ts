// The pure parts of authentication and permissions: password and nonce checks, the
// allow/deny rules, the publish cache bound and reply grants with time as an argument.
import bcrypt from "bcryptjs"
import { createUser } from "@nats-io/nkeys"
import { describe, expect, it } from "vitest"
import type { Permissions } from "../../src/config/options.js"
import { passwordMatches, verifyNonce } from "../../src/server/nats/auth.js"
import { isBcrypt, loadBcrypt } from "../../src/server/nats/bcrypt.js"
import { ClientPermissions, MAX_PUB_CACHE, MAX_REPLIES } from "../../src/engine/permissions.js"

const perms = (over: Partial<Permissions>): Permissions => ({ publish: undefined, subscribe: undefined, allowResponses: undefined, ...over })
const at = (t: number) => ({ now: () => t })

describe("passwords", () => {
  it("recognises bcrypt hashes by prefix and checks them", async () => {
    await loadBcrypt()
    const h = bcrypt.hashSync("pw", 4)
    expect(isBcrypt(h)).toBe(true)
    expect(isBcrypt("$2a$10$x")).toBe(true)
    expect(isBcrypt("$2")).toBe(false)
    expect(isBcrypt("plain")).toBe(false)
    expect(passwordMatches("pw", h)).toBe(true)
    expect(passwordMatches("pW", h)).toBe(false)
    expect(passwordMatches(undefined, h)).toBe(false)
    expect(passwordMatches("pw", "pw")).toBe(true)
    expect(passwordMatches("pw", "pw2")).toBe(false)
    // A malformed hash refuses, it does not throw.
    expect(passwordMatches("pw", "$2a$99$garbage")).toBe(false)
  })
})

describe("nonce signatures", () => {
  it("accepts the key's signature of the nonce in either base64 alphabet, nothing else", () => {
    const kp = createUser()
    const other = createUser()
    const nonce = "abcdefghijklmnopqrstuv"
    const sig = Buffer.from(kp.sign(Buffer.from(nonce)))
    expect(verifyNonce(kp.getPublicKey(), nonce, sig.toString("base64url"))).toBe(true)
    expect(verifyNonce(kp.getPublicKey(), nonce, sig.toString("base64"))).toBe(true)
    expect(verifyNonce(kp.getPublicKey(), "another-nonce", sig.toString("base64"))).toBe(false)
    expect(verifyNonce(other.getPublicKey(), nonce, sig.toString("base64"))).toBe(false)
    expect(verifyNonce(kp.getPublicKey(), nonce, undefined)).toBe(false)
    expect(verifyNonce(kp.getPublicKey(), nonce, `!${sig.toString("base64")}`)).toBe(false)
    expect(verifyNonce("UNOTAKEY", nonce, sig.toString("base64"))).toBe(false)
  })
})

describe("ClientPermissions", () => {
  it("publish: allow must match, deny must not, wildcards in both", () => {
    const p = new ClientPermissions(perms({ publish: { allow: ["a.*", "b.>"], deny: ["b.x.>"] } }))
    expect(p.canPublish("a.1", at(0))).toBe(true)
    expect(p.canPublish("a.1.2", at(0))).toBe(false)
    expect(p.canPublish("b.y.z", at(0))).toBe(true)
    expect(p.canPublish("b.x.z", at(0))).toBe(false)
    expect(p.canPublish("c", at(0))).toBe(false)
    // A literal `*` token in a published subject is only text.
    expect(new ClientPermissions(perms({ publish: { allow: ["a.*"], deny: ["a.b"] } })).canPublish("a.b", at(0))).toBe(false)
  })

  it("subscribe: a filter must lie inside an allow; inside a deny is refused, overlapping is filtered", () => {
    const p = new ClientPermissions(perms({ subscribe: { allow: ["a.>"], deny: ["a.secret"] } }))
    expect(p.canSubscribe("a.b")).toBe(true)
    expect(p.canSubscribe("a.*")).toBe(true)
    expect(p.canSubscribe("a.>")).toBe(true)
    expect(p.canSubscribe(">")).toBe(false)
    expect(p.canSubscribe("*.b")).toBe(false)
    expect(p.canSubscribe("a.secret")).toBe(false)
    expect(p.deniesDelivery("a.secret")).toBe(true)
    expect(p.deniesDelivery("a.public")).toBe(false)
    expect(new ClientPermissions(perms({})).deniesDelivery("a")).toBe(false)
  })

  it("queue permissions: `subject queue` entries allow or deny only queue subscriptions in matching groups", () => {
    const p = new ClientPermissions(perms({ subscribe: { allow: ["jobs.* workers.*", "news"], deny: ["jobs.secret workers.>", "news spies"] } }))
    expect(p.canSubscribe("jobs.a", "workers.east")).toBe(true)
    expect(p.canSubscribe("jobs.a", "idlers")).toBe(false)
    expect(p.canSubscribe("jobs.a")).toBe(false)
    expect(p.canSubscribe("jobs.secret", "workers.east")).toBe(false)
    expect(p.canSubscribe("news")).toBe(true)
    expect(p.canSubscribe("news", "readers")).toBe(true)
    expect(p.canSubscribe("news", "spies")).toBe(false)
    // Queue-qualified denies do not filter plain delivery.
    expect(p.deniesDelivery("jobs.secret")).toBe(false)
  })

  it("the publish cache stays bounded and keeps answering correctly", () => {
    const p = new ClientPermissions(perms({ publish: { allow: ["ok.>"], deny: undefined } }))
    for (let i = 0; i < MAX_PUB_CACHE * 3; i++) expect(p.canPublish(`ok.${i}`, at(0))).toBe(true)
    expect(p.canPublish("no", at(0))).toBe(false)
    expect((p as unknown as { pubCache: Map<string, boolean> }).pubCache.size).toBeLessThanOrEqual(MAX_PUB_CACHE)
  })

  it("allow_responses: publish is denied except to replies received, max times, until they expire", () => {
    const p = new ClientPermissions(perms({ allowResponses: { maxMsgs: 2, expiresMs: 1_000 } }))
    expect(p.canPublish("r.1", at(0))).toBe(false)
    p.noteReply("r.1", 0)
    p.noteReply("r.2", 0)
    expect(p.canPublish("r.1", at(10))).toBe(true)
    expect(p.canPublish("r.1", at(20))).toBe(true)
    expect(p.canPublish("r.1", at(30))).toBe(false)
    expect(p.canPublish("r.2", at(1_001))).toBe(false)
    expect(p.canPublish("elsewhere", at(0))).toBe(false)
  })

  it("allow_responses next to publish allows keeps those allows; max 0 bounds only the lifetime", () => {
    const p = new ClientPermissions(perms({ publish: { allow: ["x"], deny: undefined }, allowResponses: { maxMsgs: 0, expiresMs: 0 } }))
    expect(p.canPublish("x", at(0))).toBe(true)
    p.noteReply("r", 0)
    for (let i = 0; i < 5; i++) expect(p.canPublish("r", at(1e9))).toBe(true)
  })

  it("reply grants are bounded", () => {
    const p = new ClientPermissions(perms({ allowResponses: { maxMsgs: 1, expiresMs: 0 } }))
    for (let i = 0; i < MAX_REPLIES + 10; i++) p.noteReply(`r.${i}`, 0)
    expect((p as unknown as { replies: Map<string, unknown> }).replies.size).toBeLessThanOrEqual(MAX_REPLIES)
    expect(p.canPublish(`r.${MAX_REPLIES + 9}`, at(0))).toBe(true)
    expect(p.canPublish("r.0", at(0))).toBe(false)
  })

  it("without permissions for responses, replies are not remembered", () => {
    const p = new ClientPermissions(perms({ publish: { allow: ["x"], deny: undefined } }))
    p.noteReply("r", 0)
    expect(p.hasResponses).toBe(false)
    expect(p.canPublish("r", at(0))).toBe(false)
  })
})
