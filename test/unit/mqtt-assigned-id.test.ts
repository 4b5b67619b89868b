// A client id the server assigns (empty client id, clean session 1) comes from the server's
// Entropy: the OS's CSPRNG in production, the seed in a simulation. Never from the fast
// seeded `random` of ServerEnv, whose values another client could work out.
import { describe, expect, it } from "vitest"
import { bridgeWorld } from "../helpers/mqtt-bridge.js"

describe("server-assigned MQTT client ids [MQTT-3.1.3-6]", () => {
  it("are drawn from the server's Entropy, not from its per-message random", async () => {
    let entropyCalls = 0
    const w = bridgeWorld({
      random: () => 0, // the per-message source: an id drawn from it would be "0000000000000000000000"
      entropy: {
        bytes: (n) => {
          entropyCalls++
          return Buffer.alloc(n, 10) // "A" each
        }
      }
    })
    const entropyAtStart = entropyCalls
    w.connect("", true)
    await w.turn(true)
    expect(entropyCalls).toBeGreaterThan(entropyAtStart)
    expect(w.bridge.connectedClient("A".repeat(22))).toBeDefined()
    expect(w.bridge.connectedClient("0".repeat(22))).toBeUndefined()
  })
})
