// Deterministic simulation of the NATS core: a fixed budget of seeds under the seeded
// fault mix, proof that a planted bug is caught with a replayable seed, and proof that a
// seed replays the identical run.
import { describe, expect, it } from "vitest"
import { Effect, Layer, Random, TestClock, TestContext } from "effect"
import { Entropy, seededEntropy } from "../../src/services/entropy.js"
import { layerMemoryLog } from "../../src/services/log.js"
import { startNatsServer } from "../../src/server/run.js"
import { SimClient } from "../../src/sim/clients.js"
import { layerSim, SimNetwork } from "../../src/sim/network.js"
import { Rng } from "../../src/sim/rng.js"
import { withNkeyUser } from "../../src/sim/faults.js"
import { type FaultSet, reproduceCommand, runSim, type SimConfig, type SimResult } from "../../src/sim/runner.js"
import { testOptions } from "../helpers/server.js"
import { nonces, serverIds } from "../helpers/sim-trace.js"

const STEPS = 1_500
const SEEDS = Array.from({ length: 20 }, (_, i) => 1_000 + i * 7919)
const BATCH = 5

const explain = (r: SimResult, faults: FaultSet = "net"): string =>
  [`seed ${r.seed} failed at step ${r.failedStep}: ${reproduceCommand(r.seed, r.steps, undefined, faults)}`, ...r.violations.slice(0, 5), ...r.trace].join("\n")

/** The first seed whose run fails (seeds run one after another: the search stops there). */
const firstFailure = async (seeds: ReadonlyArray<number>, config: Omit<SimConfig, "seed">): Promise<SimResult | undefined> => {
  for (const seed of seeds) {
    const r = await runSim({ ...config, seed })
    if (!r.ok) return r
  }
  return undefined
}

describe("simulation: NATS core under seeded faults", () => {
  const total: Record<string, number> = {}
  for (let b = 0; b < SEEDS.length; b += BATCH) {
    const seeds = SEEDS.slice(b, b + BATCH)
    it(`holds every invariant for seeds ${seeds.join(", ")}`, async () => {
      for (const seed of seeds) {
        const r = await runSim({ seed, steps: STEPS })
        if (!r.ok) expect.fail(explain(r))
        for (const [k, v] of Object.entries(r.stats)) total[k] = (total[k] ?? 0) + v
      }
    })
  }

  it("the seed budget exercises every fault kind and close reason", () => {
    // The budget is only worth something if the faults actually happened.
    for (const kind of ["drops", "stalls", "clockJumps", "requests", "noRespondersStatuses", "unsubs", "slowConsumers", "staleConnections", "closed:Client Closed", "closed:Slow Consumer (Pending Bytes)", "closed:Slow Consumer (Write Deadline)", "closed:Stale Connection"]) {
      expect(total[kind], kind).toBeGreaterThan(0)
    }
    expect(total.checkedDeliveries).toBeGreaterThan(10_000)
    expect(total.liveAtEnd).toBeGreaterThan(0)
  })

  it("replays a seed exactly: same seed, same trace, server id and nonces included", async () => {
    // Both seeds configure an nkey user, so every INFO carries a nonce the clients trace.
    const a = await runSim({ seed: 4242, steps: 600, traceTail: 100_000 })
    const b = await runSim({ seed: 4242, steps: 600, traceTail: 100_000 })
    expect(a.traceLines).toBeGreaterThan(600)
    expect(b.traceHash).toBe(a.traceHash)
    expect(b.trace).toEqual(a.trace)
    expect(b.stats).toEqual(a.stats)
    expect(serverIds(a)).toHaveLength(1)
    expect(nonces(a).length).toBeGreaterThan(3)
    expect(new Set(nonces(a)).size).toBe(nonces(a).length)
    const other = await runSim({ seed: 4243, steps: 600, traceTail: 100_000 })
    expect(other.traceHash).not.toBe(a.traceHash)
    expect(serverIds(other)).not.toEqual(serverIds(a))
    expect(nonces(other).length).toBeGreaterThan(0)
    expect(nonces(other).filter((n) => nonces(a).includes(n))).toEqual([])
    // Without the nkey user (a seed recorded before it existed): no nonce, and a command that says so.
    expect(nonces(await runSim({ seed: 4242, steps: 600, traceTail: 100_000, nonces: false }))).toEqual([])
    expect(reproduceCommand(4242, 600, undefined, "net", false, true, undefined, false)).toBe("npm run sim -- --seed 4242 --steps 600 --no-nonces")
  })

  for (const plant of ["drop-every-100th-delivery", "reorder-deliveries"] as const) {
    it(`catches a planted bug (${plant}) and hands back a seed that reproduces it`, async () => {
      const failure = await firstFailure(SEEDS, { steps: STEPS, plant })
      expect(failure, "the planted bug went unnoticed").toBeDefined()
      const r = failure!
      expect(r.failedStep).toBeGreaterThan(0)
      expect(r.trace.length).toBeGreaterThan(0)
      const again = await runSim({ seed: r.seed, steps: STEPS, plant })
      expect(again.failedStep).toBe(r.failedStep)
      expect(again.violations).toEqual(r.violations)
      expect(reproduceCommand(r.seed, STEPS, plant)).toBe(`npm run sim -- --seed ${r.seed} --steps ${STEPS} --plant ${plant}`)
    })
  }
})

describe("simulation: layerSim as the Transport of startNatsServer", () => {
  it("serves a simulated client, with the server's pings driven by TestClock", async () => {
    const lines: Array<string> = []
    const net = new SimNetwork(new Rng(7), () => {})
    const client = new SimClient(1, true, true, () => {})
    const turn = Effect.promise(() => new Promise<void>((r) => setImmediate(r)))
    // Network events, then a real turn so the server's setImmediate flush runs.
    const settle = Effect.gen(function*() {
      for (let i = 0; i < 5; i++) {
        net.q.runUntil(net.q.now + 20)
        yield* turn
      }
    })
    const program = Effect.gen(function*() {
      const running = yield* startNatsServer(testOptions({ pingIntervalMs: 1_000, pingMax: 2 }))
      client.link = net.connect(client, { latency: [1, 2], drainBytes: 4096, drainEveryMs: 1, splitChance: 0.5 })
      yield* settle
      expect(client.state).toBe("ready")
      client.subscribe("a.b", "", false)
      client.publish("a.b", 10, "")
      yield* settle
      expect(client.received.map((m) => m.key)).toEqual(["1.1"])
      yield* TestClock.adjust(1_500)
      yield* settle
      expect(client.pingsAnswered).toBeGreaterThan(0)
      expect(running.server.inMsgs).toBe(1)
      expect(running.server.clients.size).toBe(1)
    })
    await Effect.runPromise(
      program.pipe(
        Effect.scoped,
        Effect.provide(Layer.mergeAll(layerSim(net), layerMemoryLog(lines))),
        Effect.provide(TestContext.TestContext)
      )
    )
    expect(net.serverThrew).toEqual([])
  })

  it("startNatsServer draws its id and the nonces from the Entropy it is given, the OS's CSPRNG without one", async () => {
    // One server on the simulated network with an nkey user (INFO carries a nonce); what it told the client.
    const serve = (entropy: Layer.Layer<never> | Layer.Layer<Entropy>, seed: number) => {
      const net = new SimNetwork(new Rng(7), () => {})
      const seen: Array<string> = []
      const client = new SimClient(1, true, true, (l) => seen.push(l))
      const program = Effect.gen(function*() {
        const running = yield* startNatsServer(withNkeyUser(testOptions()))
        client.link = net.connect(client, { latency: [1, 2], drainBytes: 4096, drainEveryMs: 1, splitChance: 0 })
        for (let i = 0; i < 5 && client.state !== "ready"; i++) {
          net.q.runUntil(net.q.now + 20)
          yield* Effect.promise(() => new Promise<void>((r) => setImmediate(r)))
        }
        expect(client.state).toBe("ready")
        return { id: running.server.serverId, nonce: /nonce (\S+)$/.exec(seen.join("\n"))?.[1] }
      })
      return Effect.runPromise(
        program.pipe(
          Effect.scoped,
          Effect.provide(Layer.mergeAll(layerSim(net), layerMemoryLog([]), entropy)),
          Effect.withRandom(Random.make(seed))
        )
      )
    }
    const seeded = (seed: number) => {
      const rng = new Rng(seed)
      return Layer.succeed(Entropy, seededEntropy(() => rng.next()))
    }
    const a = await serve(seeded(11), 11)
    const b = await serve(seeded(11), 11)
    const c = await serve(seeded(12), 12)
    expect(a.id).toMatch(/^N[A-Z2-7]{55}$/)
    expect(a.nonce).toMatch(/^[\w-]{22}$/)
    expect(b).toEqual(a)
    expect(c.id).not.toBe(a.id)
    expect(c.nonce).not.toBe(a.nonce)
    // Without an Entropy in the context: the CSPRNG, whatever Effect's Random is seeded with.
    const d = await serve(Layer.empty, 11)
    const e = await serve(Layer.empty, 11)
    expect(d.id).toMatch(/^N[A-Z2-7]{55}$/)
    expect(d.nonce).toMatch(/^[\w-]{22}$/)
    expect(e.id).not.toBe(d.id)
    expect(e.nonce).not.toBe(d.nonce)
    expect(d.id).not.toBe(a.id)
  })
})
