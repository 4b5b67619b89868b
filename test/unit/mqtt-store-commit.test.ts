// The MQTT streams layer commits through the engine's GroupCommit, as the streams' PubAcks
// do: commits asked for together share a round (one sync per store written), a round
// covers what was written before it began, and a failed round fails everyone in it.
import { Effect, Option, Runtime } from "effect"
import { describe, expect, it } from "vitest"
import type { JetStream } from "../../src/server/jetstream/jetstream.js"
import { StreamsStore } from "../../src/server/mqtt/store-streams.js"
import { type GroupCommitService, makeGroupCommit } from "../../src/services/group-commit.js"
import { makeLog } from "../../src/services/log.js"
import { defaultOptions } from "../../src/config/options.js"
import { storeError, type StreamStore } from "../../src/services/store.js"

/** The engine's GroupCommit, counting the rounds its groups run. */
const counted = () => {
  const inner = makeGroupCommit(Runtime.defaultRuntime, Option.none())
  const rounds = { n: 0 }
  const service: GroupCommitService = {
    ...inner,
    group: (round) =>
      inner.group({
        ...round,
        commit: (batch) => {
          rounds.n++
          return round.commit(batch)
        }
      })
  }
  return { service, rounds }
}

/** A stream store that counts its syncs, failing the next `fail` of them. */
const fakeStore = (name: string, fail = { n: 0 }) => {
  const syncs = { n: 0 }
  const store = {
    sync: () =>
      Effect.suspend(() => {
        syncs.n++
        return fail.n-- > 0 ? Effect.fail(storeError("Io", "simulated fsync failure", `/data/${name}`)) : Effect.void
      }),
    flush: () => Effect.void
  } as unknown as StreamStore
  return { store, syncs }
}

const setup = () => {
  const { service, rounds } = counted()
  const lines: Array<string> = []
  const log = makeLog(defaultOptions.log, (l) => lines.push(l))
  const js = { groupCommit: service, options: { syncInterval: undefined }, accounts: new Map() } as unknown as JetStream
  return { streams: new StreamsStore(js, log), rounds, lines }
}

const commit = (s: StreamsStore): Promise<boolean> => new Promise((resolve) => s.commit(resolve))

describe("MQTT streams commit on the engine's GroupCommit", () => {
  it("commits asked for in one turn share one round: one sync per store written", async () => {
    const { streams, rounds } = setup()
    const a = fakeStore("a")
    const b = fakeStore("b")
    streams.touched.add(a.store)
    streams.touched.add(b.store)
    const outcomes = await Promise.all([commit(streams), commit(streams), commit(streams)])
    expect(outcomes).toEqual([true, true, true])
    expect(rounds.n).toBe(1)
    expect([a.syncs.n, b.syncs.n]).toEqual([1, 1])
    expect(streams.hasWrites()).toBe(false)
    // Nothing written since: the next round syncs nothing.
    expect(await commit(streams)).toBe(true)
    expect([a.syncs.n, b.syncs.n]).toEqual([1, 1])
  })

  it("a failed sync fails every commit of its round and is logged; the next round syncs what is written after", async () => {
    const { streams, lines } = setup()
    const a = fakeStore("a", { n: 1 })
    streams.touched.add(a.store)
    expect(await Promise.all([commit(streams), commit(streams)])).toEqual([false, false])
    expect(lines.some((l) => l.includes("MQTT: stream sync failed: simulated fsync failure"))).toBe(true)
    streams.touched.add(a.store)
    expect(await commit(streams)).toBe(true)
    expect(a.syncs.n).toBe(2)
  })
})
