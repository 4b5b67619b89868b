// The MQTT bridge in one process without a network, over a durable store whose commits the
// test settles (`ok` or failed): the engine's flushes and the store's commits run when the
// test says, one at a time, so what a client is told around a commit is exact.
import * as MqttPacket from "mqtt-packet"
import { defaultOptions, type MqttOptions, type ServerOptions } from "../../src/config/options.js"
import type { SessionSnapshot } from "../../src/core/mqtt/index.js"
import { MqttBridge } from "../../src/server/mqtt/bridge.js"
import type { MqttAccountStore, MqttStoreService } from "../../src/server/mqtt/store.js"
import { MemoryAccountStore } from "../../src/server/mqtt/store-memory.js"
import { Server } from "../../src/server/server.js"
import { type EntropyService, seededEntropy } from "../../src/services/entropy.js"
import { makeLog } from "../../src/services/log.js"
import type { Conn, ConnHandlers } from "../../src/services/transport.js"

/** An account store that says it is durable and remembers the sessions written to it (until deleted). */
class DurableAccount extends MemoryAccountStore {
  override durable: boolean = true
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
const pendingStore = (durable: boolean) => {
  const account = new DurableAccount()
  account.durable = durable
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

/** A server and its bridge; `entropy`: the server's unguessable bytes (seeded by default). */
export const bridgeWorld = (
  over: { readonly random?: () => number; readonly entropy?: EntropyService; readonly durable?: boolean; readonly options?: Partial<ServerOptions> } = {}
) => {
  let t = 1_000
  const flushes: Array<() => void> = []
  let seed = 1
  const random = over.random ?? (() => ((seed = (seed * 16807) % 2147483647) / 2147483647))
  const entropy = over.entropy ?? seededEntropy(random)
  const lines: Array<string> = []
  const server = new Server({ ...defaultOptions, mqtt: { ...defaultOptions.mqtt!, host: "127.0.0.1", port: 0 }, ...over.options }, {
    now: () => t,
    nanos: () => t * 1_000_000,
    random,
    randomBytes: entropy.bytes,
    log: makeLog(defaultOptions.log, (l) => lines.push(l), () => t),
    scheduleFlush: (f) => void flushes.push(f),
    serverId: "NTEST"
  })
  const { account, store, settle } = pendingStore(over.durable ?? true)
  const options: MqttOptions = { ...defaultOptions.mqtt!, host: "127.0.0.1", port: 0, protocolVersions: [4, 5] }
  const bridge = new MqttBridge(server, options, store)
  /** Run the flushes asked for (and those they ask for in turn). */
  const flush = () => {
    for (let i = 0; i < 10 && flushes.length > 0; i++) for (const f of flushes.splice(0)) f()
  }
  /** A client connection: what the server wrote to it, parsed. */
  /** A CONNECT, and `then` in the same chunk; `fields`: more CONNECT fields (`protocolVersion: 5`, properties, will, username, password). */
  const connect = (clientId: string, clean = false, then: ReadonlyArray<Record<string, unknown>> = [], fields: Record<string, unknown> = {}) => {
    const protocolVersion = fields.protocolVersion === 5 ? 5 : 4
    const packets: Array<MqttPacket.Packet> = []
    const parser = MqttPacket.parser({ protocolVersion })
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
    const bytes = (p: Record<string, unknown>) => MqttPacket.generate(p as unknown as MqttPacket.Packet, { protocolVersion })
    const send = (p: Record<string, unknown>) => handlers!.onData(bytes(p))
    const connect = { cmd: "connect", protocolId: "MQTT", protocolVersion, clean, clientId, keepalive: 0, ...fields }
    handlers.onData(Buffer.concat([connect, ...then].map(bytes)))
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
  return { account, bridge, connect, turn, tick, now: () => t, lines }
}

