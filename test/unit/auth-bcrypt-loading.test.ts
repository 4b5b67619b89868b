// bcrypt loads only when the configuration holds a bcrypt hash (src/server/nats/bcrypt.ts):
// every place a configuration file can put a password is found, and until bcrypt is loaded
// no hash is compared and no Server is built on such a configuration (a loud error, never
// a refused password). Each test file has its own module state: here bcrypt starts unloaded.
import bcrypt from "bcryptjs"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { ConfigFiles, loadOptions } from "../../src/config/load.js"
import { defaultOptions } from "../../src/config/options.js"
import { passwordMatches } from "../../src/server/nats/auth.js"
import { bcryptLoaded, holdsBcrypt, loadBcrypt, requireBcrypt } from "../../src/server/nats/bcrypt.js"

const hash = bcrypt.hashSync("pw", 4)

/** The options a configuration file decodes to. */
const optionsOf = (conf: string) =>
  Effect.runPromise(
    loadOptions({ configFile: "/x.conf", env: {} }).pipe(Effect.provide(ConfigFiles.layerMemory({ "/x.conf": conf })), Effect.map((l) => l.options))
  )

describe("holdsBcrypt", () => {
  it.each([
    ["authorization", `authorization { user: a, password: "${hash}" }`],
    ["authorization users", `authorization { users: [ { user: a, password: "${hash}" } ] }`],
    ["account users", `accounts { A { users: [ { user: a, password: "${hash}" } ] } }`],
    ["mqtt authorization", `mqtt { port: -1, authorization { user: a, password: "${hash}" } }\njetstream { store_dir: "/tmp/x" }`],
    ["cluster authorization", `cluster { name: c, port: -1, authorization { user: r, password: "${hash}" } }`],
    ["leafnodes authorization", `leafnodes { port: -1, authorization { user: l, password: "${hash}" } }`],
    ["leafnodes users", `leafnodes { port: -1, authorization { users: [ { user: l, password: "${hash}" } ] } }`]
  ])("finds a hash in %s", async (_where, conf) => {
    expect(holdsBcrypt(await optionsOf(`port: -1\n${conf}\n`))).toBe(true)
  })

  it("finds none where passwords are plain, or absent", async () => {
    expect(holdsBcrypt(defaultOptions)).toBe(false)
    const plain = await optionsOf(`port: -1\nauthorization { users: [ { user: a, password: "$2plain" } ] }\nleafnodes { port: -1 }\n`)
    expect(holdsBcrypt(plain)).toBe(false)
  })
})

describe("before bcrypt is loaded", () => {
  it("no hash is compared and no server is built on one; plain passwords are", async () => {
    expect(bcryptLoaded()).toBe(false)
    expect(() => passwordMatches("pw", hash)).toThrow(/bcrypt/)
    expect(passwordMatches("pw", "pw")).toBe(true)
    const withHash = await optionsOf(`port: -1\nauthorization { user: a, password: "${hash}" }\n`)
    expect(() => requireBcrypt(withHash)).toThrow(/bcrypt is not loaded/)
    expect(() => requireBcrypt(defaultOptions)).not.toThrow()
    await loadBcrypt()
    expect(bcryptLoaded()).toBe(true)
    expect(() => requireBcrypt(withHash)).not.toThrow()
    expect(passwordMatches("pw", hash)).toBe(true)
    expect(passwordMatches("px", hash)).toBe(false)
  })
})
