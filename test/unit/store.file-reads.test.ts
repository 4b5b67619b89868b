// How much of the disk a read of stored messages costs, counted through the Disk
// port. Regression: a pull consumer replaying a stream larger than the block cache
// re-read a whole block for every message (the consumer's synchronous view started
// a block read per message it looked at), so replay slowed with the stream's size.
// A replay must read each block about once; a single load just the message's record.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Layer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { ConsumerMachine, type DeliverAction } from "../../src/core/consumer/index.js"
import { makeStoreConfig } from "../../src/core/stream/config.js"
import { Disk, type DiskService } from "../../src/services/disk.js"
import { makeNodeDisk } from "../../src/services/disk-node.js"
import { Store, type StoreError, type StoreService } from "../../src/services/store.js"
import { layerFile } from "../../src/services/store-file.js"
import { storeView } from "../../src/server/jetstream/consumer.js"

const dirs: string[] = []
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-reads-"))
  dirs.push(d)
  return d
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
})

/** Reads of block files, counted when they are asked for (a read left running counts too). */
const countingDisk = () => {
  const reads = { wholeBlocks: 0, records: 0, bytes: 0 }
  const base = makeNodeDisk()
  const disk: DiskService = {
    ...base,
    readFile: (p) =>
      Effect.suspend(() => {
        if (p.endsWith(".blk")) reads.wholeBlocks++
        return Effect.tap(base.readFile(p), (data) => void (reads.bytes += data.length))
      }),
    open: (p, create) =>
      Effect.map(base.open(p, create), (f) => ({
        ...f,
        read: (position: number, length: number) =>
          Effect.suspend(() => {
            reads.records++
            reads.bytes += length
            return f.read(position, length)
          })
      }))
  }
  return { reads, layer: Layer.succeed(Disk, disk), reset: () => Object.assign(reads, { wholeBlocks: 0, records: 0, bytes: 0 }) }
}

const OPTS = { blockSize: 1024, cacheBlocks: 1 }
const COUNT = 120
const payloadOf = (seq: number) => Buffer.from(`message-${seq}-`.padEnd(100, "x"))

const session = <A>(dir: string, disk: Layer.Layer<Disk>, f: (store: StoreService) => Effect.Effect<A, StoreError>) =>
  Effect.runPromise(Effect.provide(Effect.flatMap(Store, f), layerFile(dir, OPTS).pipe(Layer.provide(disk))))

/** A stream of COUNT messages spread over many blocks, only the newest of them in memory after a reopen. */
const filled = async () => {
  const dir = tmp()
  const { layer } = countingDisk()
  await session(dir, layer, (store) =>
    Effect.gen(function*() {
      const st = yield* store.create("S", makeStoreConfig({ subjects: [">"] }))
      for (let seq = 1; seq <= COUNT; seq++) st.storeSync(seq % 2 === 0 ? "s.even" : "s.odd", undefined, payloadOf(seq), 1000 + seq)
      yield* st.sync()
    })
  )
  const blocks = fs.readdirSync(path.join(dir, "S", "msgs")).filter((n) => n.endsWith(".blk"))
  const bytes = blocks.reduce((n, b) => n + fs.statSync(path.join(dir, "S", "msgs", b)).size, 0)
  expect(blocks.length).toBeGreaterThan(10)
  return { dir, blocks: blocks.length, bytes }
}

describe("file store reads", () => {
  it("loads one message of a block not in memory by reading just its record", async () => {
    const { dir } = await filled()
    const disk = countingDisk()
    const m = await session(dir, disk.layer, (store) =>
      Effect.gen(function*() {
        const st = yield* store.open("S")
        disk.reset() // opening scans every block once
        return yield* st.load(3)
      })
    )
    expect(Buffer.from(m.payload)).toEqual(payloadOf(3))
    expect(disk.reads).toEqual({ wholeBlocks: 0, records: 1, bytes: expect.any(Number) })
    expect(disk.reads.bytes).toBeLessThan(200)
  })

  it("a record damaged on disk after opening reads as Corrupt, alone or within its whole block", async () => {
    const { dir } = await filled()
    const disk = countingDisk()
    const file = path.join(dir, "S", "msgs", "1.blk")
    const results = await session(dir, disk.layer, (store) =>
      Effect.gen(function*() {
        const st = yield* store.open("S")
        disk.reset()
        const raw = fs.readFileSync(file)
        const at = raw.indexOf("message-2-")
        raw[at + 20] ^= 0xff
        fs.writeFileSync(file, raw)
        const tag = (seq: number) => Effect.match(st.load(seq), { onFailure: (e) => e.reason, onSuccess: (m) => Buffer.from(m.payload).equals(payloadOf(seq)) })
        // Alone (a positioned read), then within the whole block (read for the scan that follows).
        return [yield* tag(2), yield* tag(3), yield* tag(2), yield* tag(1)]
      })
    )
    expect(results).toEqual(["Corrupt", true, "Corrupt", true])
    expect(disk.reads.wholeBlocks).toBe(1)
  })

  it("replays a stream larger than the block cache through a consumer reading each block once", async () => {
    const { dir, blocks, bytes } = await filled()
    const disk = countingDisk()
    const delivered = await session(dir, disk.layer, (store) =>
      Effect.gen(function*() {
        const st = yield* store.open("S")
        disk.reset()
        const view = storeView(st)
        const machine = ConsumerMachine.create({ stream: "S", name: "c", config: { durable_name: "c", ack_policy: "none" }, view }, 0)
        const out = machine.step({ type: "pull", request: { batch: COUNT, no_wait: true }, reply: "r" }, 1)
        const seqs = out.filter((a): a is DeliverAction => a.type === "deliver").map((a) => a.seq)
        // Deliveries load one after another, as the consumer's shell does.
        const payloads: Buffer[] = []
        for (const seq of seqs) payloads.push(Buffer.from((yield* st.load(seq)).payload))
        return { seqs, payloads }
      })
    )
    expect(delivered.seqs).toEqual(Array.from({ length: COUNT }, (_, i) => i + 1))
    delivered.payloads.forEach((p, i) => expect(p).toEqual(payloadOf(i + 1)))
    // At most: each block once whole, after one record read revealed the scan.
    expect(disk.reads.wholeBlocks).toBeLessThanOrEqual(blocks)
    expect(disk.reads.records).toBeLessThanOrEqual(blocks)
    expect(disk.reads.bytes).toBeLessThanOrEqual(bytes + blocks * 200)
  })

  it("replays a filtered consumer without reading a block per message", async () => {
    const { dir, blocks, bytes } = await filled()
    const disk = countingDisk()
    const seqs = await session(dir, disk.layer, (store) =>
      Effect.gen(function*() {
        const st = yield* store.open("S")
        disk.reset()
        const view = storeView(st)
        const config = { durable_name: "c", ack_policy: "none", filter_subject: "s.even" } as const
        const machine = ConsumerMachine.create({ stream: "S", name: "c", config, view }, 0)
        const out = machine.step({ type: "pull", request: { batch: COUNT, no_wait: true }, reply: "r" }, 1)
        const seqs = out.filter((a): a is DeliverAction => a.type === "deliver").map((a) => a.seq)
        for (const seq of seqs) expect(Buffer.from((yield* st.load(seq)).payload)).toEqual(payloadOf(seq))
        return seqs
      })
    )
    expect(seqs).toEqual(Array.from({ length: COUNT / 2 }, (_, i) => 2 * (i + 1)))
    expect(disk.reads.wholeBlocks).toBeLessThanOrEqual(blocks)
    expect(disk.reads.bytes).toBeLessThanOrEqual(bytes + blocks * 200)
  })
  // Issue #15, item 8: a 1 GB backlog nobody reads held the newest sealed blocks of the
  // stream in memory (4 x 8 MiB per stream); only blocks that are read stay now.
  it("does not keep the blocks it wrote in memory, only those it reads back", async () => {
    const dir = tmp()
    const { reads, layer, reset } = countingDisk()
    const result = await Effect.runPromise(
      Effect.provide(
        Effect.flatMap(Store, (store) =>
          Effect.gen(function*() {
            const st = yield* store.create("S", makeStoreConfig({ subjects: [">"] }))
            for (let seq = 1; seq <= COUNT; seq++) st.storeSync("s", undefined, payloadOf(seq), 1000 + seq)
            yield* st.sync()
            // A few blocks back from the one being filled: within the cache's 4 blocks.
            const seq = COUNT - 20
            reset()
            for (let s = seq; s < seq + 3; s++) expect(Buffer.from((yield* st.load(s)).payload)).toEqual(payloadOf(s))
            const first = { ...reads }
            reset()
            for (let s = seq; s < seq + 3; s++) expect(Buffer.from((yield* st.load(s)).payload)).toEqual(payloadOf(s))
            return { first, again: { ...reads } }
          })
        ),
        layerFile(dir, { blockSize: 1024, cacheBlocks: 4 }).pipe(Layer.provide(layer))
      )
    )
    // Written, then not held: reading it back goes to the disk ...
    expect(result.first.records + result.first.wholeBlocks).toBeGreaterThan(0)
    // ... and a block read back is held for the reads that follow.
    expect(result.again).toEqual({ wholeBlocks: 0, records: 0, bytes: 0 })
  })
  it("reads large records alone even one after another, never their whole block", async () => {
    const dir = tmp()
    const { reads, layer, reset } = countingDisk()
    const big = (seq: number) => Buffer.alloc(100 * 1024, seq)
    const result = await Effect.runPromise(
      Effect.provide(
        Effect.flatMap(Store, (store) =>
          Effect.gen(function*() {
            const st = yield* store.create("S", makeStoreConfig({ subjects: [">"] }))
            for (let seq = 1; seq <= 30; seq++) st.storeSync("s", undefined, big(seq), 1000 + seq)
            yield* st.sync()
            reset()
            // A scan of the sealed blocks, as a resumed MQTT backlog reads them.
            for (let seq = 1; seq <= 15; seq++) expect(Buffer.from((yield* st.load(seq)).payload)).toEqual(big(seq))
            return { ...reads }
          })
        ),
        layerFile(dir, { blockSize: 1 << 20, cacheBlocks: 4 }).pipe(Layer.provide(layer))
      )
    )
    expect(result.wholeBlocks).toBe(0)
    expect(result.records).toBe(15)
  })
})
