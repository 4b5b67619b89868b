// The crash test: a real server process under continuous acknowledged publishing is
// killed with SIGKILL at varying points, many times; after each restart every message
// it acknowledged is still there, byte-identical, at the sequence its PubAck named.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { killProcess, loggedPort, type ServerProcess, startServerProcess } from "../helpers/process.js"

interface Running {
  readonly proc: ServerProcess
  readonly port: number
}

const startServer = async (storeDir: string): Promise<Running> => {
  const proc = await startServerProcess(["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", storeDir])
  return { proc, port: loggedPort(proc, /Listening for client connections on 127\.0\.0\.1:(\d+)/) }
}

const kill = (r: Running): Promise<void> => killProcess(r.proc)

/** Deterministic "random" kill points: after this many acknowledgements. */
const killPoints = (n: number, seed: number): Array<number> => {
  let x = seed
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff
    return 20 + (x % 400)
  })
}

const payloadFor = (i: number): Uint8Array => {
  // Varying sizes, content derived from i, so a torn or misplaced record cannot pass.
  const size = 1 + ((i * 7919) % 3000)
  const b = new Uint8Array(size)
  for (let k = 0; k < size; k++) b[k] = (i * 31 + k) & 0xff
  return b
}

describe("acknowledged publishes survive SIGKILL", () => {
  const storeDir = mkdtempSync(join(tmpdir(), "switchyard-crash-"))
  let current: Running | undefined
  afterAll(async () => {
    if (current !== undefined) await kill(current)
    rmSync(storeDir, { recursive: true, force: true })
  })

  it("keeps every acknowledged message, byte-identical and in order, across repeated kills", async () => {
    const acked = new Map<number, number>() // stream seq -> publish index
    let next = 0
    const rounds = killPoints(6, 42)
    current = await startServer(storeDir)
    {
      const nc = await connect({ servers: `127.0.0.1:${current.port}`, reconnect: false })
      await jetstreamManager(nc).then((jsm) => jsm.streams.add({ name: "CRASH", subjects: ["crash.>"] }))
      await nc.close()
    }
    for (const target of rounds) {
      const nc: NatsConnection = await connect({ servers: `127.0.0.1:${current.port}`, reconnect: false })
      const js = jetstream(nc, { timeout: 20_000 })
      let ackedThisRound = 0
      let killing = false
      // Keep up to 32 publishes in flight so the kill lands between store, sync and ack.
      const inFlight = new Set<Promise<void>>()
      while (!killing) {
        while (inFlight.size < 32 && !killing) {
          const i = next++
          const p = js.publish(`crash.${i % 5}`, payloadFor(i)).then(
            (ack) => {
              expect(ack.stream).toBe("CRASH")
              expect(acked.has(ack.seq)).toBe(false)
              acked.set(ack.seq, i)
              if (++ackedThisRound >= target) killing = true
            },
            () => {} // in flight when the process died: not acknowledged, no promise made
          )
          const tracked = p.finally(() => inFlight.delete(tracked))
          inFlight.add(tracked)
        }
        await Promise.race(inFlight)
      }
      await kill(current)
      await Promise.allSettled([...inFlight])
      await nc.close().catch(() => {})

      current = await startServer(storeDir)
      const check = await connect({ servers: `127.0.0.1:${current.port}`, reconnect: false })
      const jsm = await jetstreamManager(check, { timeout: 20_000 })
      const info = await jsm.streams.info("CRASH")
      const maxAcked = Math.max(...acked.keys())
      expect(info.state.last_seq).toBeGreaterThanOrEqual(maxAcked)
      for (const [seq, i] of acked) {
        const m = await jsm.streams.getMessage("CRASH", { seq })
        if (m === null) throw new Error(`acknowledged message ${seq} is missing after the kill`)
        expect(m.seq).toBe(seq)
        expect(m.subject).toBe(`crash.${i % 5}`)
        expect(Buffer.from(m.data).equals(Buffer.from(payloadFor(i)))).toBe(true)
      }
      // In order: a later publish never got an earlier sequence.
      const bySeq = [...acked.entries()].sort((a, b) => a[0] - b[0])
      for (let k = 1; k < bySeq.length; k++) expect(bySeq[k][1]).toBeGreaterThan(bySeq[k - 1][1])
      await check.close()
    }
    expect(acked.size).toBeGreaterThan(rounds.reduce((a, b) => a + b, 0) - 1)
  })
})
