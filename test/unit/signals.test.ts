// The signal guard (src/signals.ts): installed first, it keeps SIGHUP and SIGUSR2 from
// killing the process and SIGUSR1 from opening the inspector before the server has
// handlers, and hands a signal that arrived early to the handler once registered.
// Runs in its own worker process (vitest's forks pool), so real signals are safe here.
import { describe, expect, it } from "vitest"
import { installSignalGuard, onSignal } from "../../src/signals.js"
import { eventually } from "../helpers/server.js"

/** Send SIGHUP to this process and wait until it has been delivered (seen by a listener of our own). */
const hup = async () => {
  let seen = false
  process.once("SIGHUP", () => (seen = true))
  process.kill(process.pid, "SIGHUP")
  await eventually(() => seen, "SIGHUP to be delivered")
}

describe("the signal guard", () => {
  it("keeps a signal that arrives before its handler, and hands it over once the handler is registered", async () => {
    installSignalGuard()
    await hup()
    let reloads = 0
    const off = onSignal("SIGHUP", () => reloads++)
    await eventually(() => reloads === 1, "the early SIGHUP to reach the handler")
    await hup()
    expect(reloads).toBe(2)
    off()
    // Taken back: a later one waits again rather than reaching the old handler.
    await hup()
    expect(reloads).toBe(2)
    const next = onSignal("SIGHUP", () => reloads++)
    await eventually(() => reloads === 3, "the pending SIGHUP to reach the new handler")
    next()
  })
})
