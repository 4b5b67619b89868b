// The bridge over a durable MQTT store whose commits fail on demand, in one process and
// without a network: the engine's flushes and the store's commits are run by the test, one
// at a time, so what a client is told around a failed commit is exact.
import * as MqttPacket from "mqtt-packet"
import { describe, expect, it } from "vitest"
import { defaultOptions, type MqttOptions } from "../../src/config/options.js"
import type { SessionSnapshot } from "../../src/core/mqtt/index.js"
import { MqttBridge } from "../../src/server/mqtt/bridge.js"
import type { MqttAccountStore, MqttStoreService } from "../../src/server/mqtt/store.js"
import { MemoryAccountStore } from "../../src/server/mqtt/store-memory.js"
import { Server } from "../../src/server/server.js"
import { seededEntropy } from "../../src/services/entropy.js"
import { makeLog } from "../../src/services/log.js"
import type { Conn, ConnHandlers } from "../../src/services/transport.js"

/** An account store that says it is durable and remembers the sessions written to it (until deleted). */
class DurableAccount extends MemoryAccountStore {
  override readonly durable: boolean = true
  readonly sessions = new Map<string, SessionSnapshot>()
  override writeSession(snap?: SessionSnapshot): void {
    if (snap === undefined) return
    this.sessions.set(snap.clientId, snap)
  }
  override deleteSession(_snap?: SessionSnapshot, clientId?: string): void {
    if (clientId !== undefined) this.sessions.delete(clientId)
  }
}

/** A durable store whose commits wait until the test settles them (`ok` or failed). */
const pendingStore = () => {
  const account = new DurableAccount()
  const commits: Array<(ok: boolean) => void> = []
  const store: MqttStoreService = {
    ready: () => account,
    open: () => Promise.resolve<MqttAccountStore>(account),
    storedAccounts: () => [],
    commit: (cb) => void commits.push(cb),
    hasWrites: () => true,
    hasRemovals: () => false
  }
  /** Settle every commit asked for so far. */
  const settle = (ok: boolean) => {
    for (const cb of commits.splice(0)) cb(ok)
  }
  return { account, store, settle }
}

const world = () => {
  let t = 1_000
  const flushes: Array<() => void> = []
  let seed = 1
  const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647)
  const entropy = seededEntropy(random)
  const lines: Array<string> = []
  const server = new Server({ ...defaultOptions, mqtt: { ...defaultOptions.mqtt!, host: "127.0.0.1", port: 0 } }, {
    now: () => t,
    nanos: () => t * 1_000_000,
    random,
    randomBytes: entropy.bytes,
    log: makeLog(defaultOptions.log, (l) => lines.push(l), () => t),
    scheduleFlush: (f) => void flushes.push(f),
    serverId: "NTEST"
  })
  const { account, store, settle } = pendingStore()
  const options: MqttOptions = { ...defaultOptions.mqtt!, host: "127.0.0.1", port: 0 }
  const bridge = new MqttBridge(server, options, store)
  /** Run the flushes asked for (and those they ask for in turn). */
  const flush = () => {
    for (let i = 0; i < 10 && flushes.length > 0; i++) for (const f of flushes.splice(0)) f()
  }
  /** A client connection: what the server wrote to it, parsed. */
  const connect = (clientId: string) => {
    const packets: Array<MqttPacket.Packet> = []
    const parser = MqttPacket.parser({ protocolVersion: 4 })
    parser.on("packet", (p) => packets.push(p))
    let handlers: ConnHandlers | undefined
    let closed = false
    const close = () => {
      if (closed) return
      closed = true
      handlers!.onClose(undefined)
    }
    const conn: Conn = {
      remoteAddress: "10.0.0.1",
      remotePort: 40000,
      tls: undefined,
      write: (b) => void parser.parse(b),
      writev: (bs) => {
        for (const b of bs) parser.parse(b)
      },
      writableLength: () => 0,
      end: close,
      destroy: close
    }
    handlers = bridge.accept(conn)
    const send = (p: Record<string, unknown>) => handlers!.onData(MqttPacket.generate(p as unknown as MqttPacket.Packet))
    send({ cmd: "connect", protocolId: "MQTT", protocolVersion: 4, clean: false, clientId, keepalive: 0 })
    return {
      packets,
      send,
      /** The client goes away (its socket closes). */
      drop: close,
      get closed() {
        return closed
      }
    }
  }
  /** The end of a turn: its flush, then (when `commit` says how it ends) the commit it asked for, and the flush after it. */
  const turn = async (commit?: boolean) => {
    await Promise.resolve()
    flush()
    if (commit === undefined) return
    settle(commit)
    flush()
  }
  const tick = (ms: number) => {
    t += ms
  }
  return { account, bridge, connect, turn, tick, lines }
}

describe("a persistent session the client never heard of is not kept", () => {
  const presence = (packets: ReadonlyArray<MqttPacket.Packet>) => packets.map((p) => p.cmd === "connack" && p.sessionPresent)

  // Found by the simulator (seeds 1619657144, 8, 72158729): a new session's CONNACK waited
  // for the commit of its record, the commit failed and the client was cut off unanswered.
  // The session stayed, so the next CONNECT heard "session present" and the client, which
  // had lost its session in an earlier restart, never subscribed again.
  it("a new session whose CONNACK was lost to a failed commit: the next CONNECT hears session present 0 [MQTT-3.2.2-2]", async () => {
    const w = world()
    const first = w.connect("dev")
    await w.turn()
    expect(first.packets).toEqual([]) // the CONNACK waits for the commit of the session's record
    await w.turn(false)
    expect(first.closed).toBe(true)
    expect(first.packets).toEqual([])
    expect(w.account.sessions.has("dev")).toBe(false)
    w.tick(10)
    const second = w.connect("dev")
    await w.turn(true)
    expect(presence(second.packets)).toEqual([false])
    expect(w.account.sessions.has("dev")).toBe(true)
  })

  it("once its CONNACK went out, the session stays for the next connection (session present 1)", async () => {
    const w = world()
    const first = w.connect("dev")
    await w.turn(true)
    expect(presence(first.packets)).toEqual([false])
    first.send({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 1 }] })
    await w.turn(false) // the SUBACK's commit fails: cut off, but the session was announced
    expect(first.closed).toBe(true)
    w.tick(10)
    const second = w.connect("dev")
    await w.turn(true)
    expect(presence(second.packets)).toEqual([true])
  })

  it("a client gone before its new session's CONNACK was written leaves no session behind", async () => {
    const w = world()
    const first = w.connect("dev")
    await w.turn()
    first.drop()
    await w.turn(true)
    expect(w.account.sessions.has("dev")).toBe(false)
    const second = w.connect("dev")
    await w.turn(true)
    expect(presence(second.packets)).toEqual([false])
  })
})
