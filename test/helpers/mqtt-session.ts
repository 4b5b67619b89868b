// Test helpers for the MQTT session machine: a seeded random source, packet
// builders and a fixture that drives a session to the connected state.
import { MqttSession, type SessionConfig, type SessionDeps, defaultSessionConfig } from "../../src/core/mqtt/session.js"
import type { ClientPacket, ConnectPacket, SessionAction, SessionInput, SessionSnapshot } from "../../src/core/mqtt/types.js"
import { seededEntropy } from "../../src/services/entropy.js"
import { Rng } from "../../src/sim/rng.js"

/** Deterministic [0, 1) source: the simulator's seeded generator (mulberry32). */
export const seededRandom = (seed: number): (() => number) => {
  const rng = new Rng(seed)
  return () => rng.next()
}

/** Deterministic bytes (a session's `randomBytes`): the seeded Entropy of a simulation. */
export const seededBytes = (seed: number): ((n: number) => Buffer) => seededEntropy(seededRandom(seed)).bytes

export const bytes = (s: string): Uint8Array => new TextEncoder().encode(s)

export const connectPacket = (over: Partial<ConnectPacket> = {}): ConnectPacket => ({
  cmd: "connect",
  protocolId: "MQTT",
  protocolVersion: 4,
  clean: true,
  clientId: "c1",
  keepalive: 0,
  ...over
})

export const pkt = (packet: ClientPacket): SessionInput => ({ type: "packet", packet })

export const sent = (actions: ReadonlyArray<SessionAction>) =>
  actions.flatMap((a) => (a.type === "send" ? [a.packet] : []))

export const ofType = <T extends SessionAction["type"]>(actions: ReadonlyArray<SessionAction>, type: T) =>
  actions.filter((a): a is Extract<SessionAction, { type: T }> => a.type === type)

export interface Fixture {
  readonly session: MqttSession
  readonly connectActions: SessionAction[]
  readonly readyActions: SessionAction[]
}

/** A session that has sent CONNECT and been made ready (optionally from a stored session). */
export const connected = (
  opts: {
    now?: number
    connect?: Partial<ConnectPacket>
    stored?: SessionSnapshot
    /** The user the connection authenticated as (the session's owner). */
    owner?: string
    config?: Partial<SessionConfig>
    deps?: Partial<SessionDeps>
  } = {}
): Fixture => {
  const now = opts.now ?? 0
  const session = new MqttSession(
    now,
    { randomBytes: seededBytes(1), ...opts.deps },
    { ...defaultSessionConfig, ...opts.config }
  )
  const connectActions = session.step(pkt(connectPacket(opts.connect)), now)
  const readyActions = session.step({ type: "sessionReady", stored: opts.stored, owner: opts.owner }, now)
  return { session, connectActions, readyActions }
}
