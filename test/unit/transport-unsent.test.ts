import * as net from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { unsentBytes } from "../../src/services/transport-node.js"
import { eventually } from "../helpers/server.js"

// What a connection's max_pending and write deadline judge: the bytes the kernel has not
// taken. Node's writableLength also counts the part of the write in flight that was sent.

const MiB = 1024 * 1024

describe("unsentBytes", () => {
  it("counts the write in flight by what libuv has left of it, and what is buffered behind it", () => {
    const inFlight = { writing: true, writelen: 40 * MiB }
    expect(unsentBytes({ writableLength: 48 * MiB, _writableState: inFlight, _handle: { writeQueueSize: 1 * MiB } })).toBe(9 * MiB)
    expect(unsentBytes({ writableLength: 40 * MiB, _writableState: inFlight, _handle: { writeQueueSize: 0 } })).toBe(0)
  })

  it("is writableLength when nothing is in flight, or when the socket does not show it (TLS, another runtime)", () => {
    expect(unsentBytes({ writableLength: 5, _writableState: { writing: false, writelen: 0 }, _handle: { writeQueueSize: 0 } })).toBe(5)
    expect(unsentBytes({ writableLength: 5 })).toBe(5)
    expect(unsentBytes({ writableLength: 5, _writableState: { writing: true, writelen: 4 }, _handle: null })).toBe(5)
    expect(unsentBytes({ writableLength: 5, encrypted: true, _writableState: { writing: true, writelen: 4 }, _handle: { writeQueueSize: 1 } })).toBe(5)
    // inconsistent figures: the safe side
    expect(unsentBytes({ writableLength: 5, _writableState: { writing: true, writelen: 9 }, _handle: { writeQueueSize: 1 } })).toBe(5)
    expect(unsentBytes({ writableLength: 5, _writableState: { writing: true, writelen: 4 }, _handle: { writeQueueSize: 7 } })).toBe(5)
  })

  describe("on a real socket whose peer reads in steps", () => {
    const cleanup: Array<() => void> = []
    afterEach(() => {
      for (const f of cleanup.splice(0)) f()
    })

    it("never counts bytes the peer already received", async () => {
      let peer: net.Socket | undefined
      let received = 0
      const server = net.createServer((s) => {
        peer = s
        s.pause()
        s.on("data", (d: Buffer) => {
          received += d.length
        })
      })
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
      cleanup.push(() => server.close())
      const port = (server.address() as net.AddressInfo).port
      const socket = net.connect(port, "127.0.0.1")
      cleanup.push(() => socket.destroy())
      await new Promise<void>((r) => socket.once("connect", r))
      await eventually(() => peer !== undefined, "the accepted socket")
      // Far more than the kernel buffers take, written while nothing is read: one request in
      // flight, the rest buffered behind it in Node.
      const batch = Buffer.alloc(256 * 1024)
      let total = 0
      for (let i = 0; i < 256; i++) {
        socket.write(batch)
        total += batch.length
      }
      // The peer reads part of it: the buffered batches go out as one request, of which the
      // kernel takes only part while the peer is paused again.
      peer!.resume()
      await eventually(() => received >= 24 * MiB, "the peer to read 24 MiB")
      peer!.pause()
      const inFlightPartly = (): boolean => {
        const w = (socket as unknown as { _writableState: { writing: boolean; writelen: number } })._writableState
        const left = (socket as unknown as { _handle: { writeQueueSize: number } })._handle.writeQueueSize
        return w.writing && left > 0 && left < w.writelen
      }
      await eventually(inFlightPartly, "a write in flight, partly sent")
      const pending = total - received
      expect(socket.writableLength).toBeGreaterThan(pending) // Node's count includes what the peer has
      expect(unsentBytes(socket)).toBeLessThanOrEqual(pending)
      expect(unsentBytes(socket)).toBeGreaterThan(0)
      // Read to the end: nothing is left.
      peer!.resume()
      await eventually(() => received === total, "the peer to read everything")
      await eventually(() => unsentBytes(socket) === 0, "nothing unsent")
    })
  })
})
