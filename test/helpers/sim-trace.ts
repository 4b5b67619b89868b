// Reading a simulation's trace: the server ids it records (one per server start) and the
// nonces simulated clients were sent in INFO (runs with an nkey user configured).
import type { SimResult } from "../../src/sim/runner.js"

export const serverIds = (r: SimResult): Array<string> => r.trace.flatMap((l) => /\] server (N[A-Z2-7]{55}) starts$/.exec(l)?.[1] ?? [])

export const nonces = (r: SimResult): Array<string> => r.trace.flatMap((l) => /\] c\d+ nonce ([\w-]{22})$/.exec(l)?.[1] ?? [])
