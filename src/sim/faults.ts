// What one simulation run is made of: its configuration (seed, fault set, planted bug),
// the server options and fault mix drawn from the seed, and the command that replays it.
import { defaultOptions, type ServerOptions } from "../config/options.js"
import type { Rng } from "./rng.js"

/** A deliberately broken server (or disk), to prove the simulator catches it. */
export type PlantedBug = "drop-every-100th-delivery" | "reorder-deliveries" | "ack-before-sync" | "lying-fsync" | "keep-refused" | "mqtt-commit-before-sync" | "mqtt-forget-pubrel" | ClusterBug

/** Broken routes (cluster mode): one never withdraws interest (no RS-), one sends every message twice. */
export type ClusterBug = "route-no-unsub" | "route-double-send"

/** `net`: NATS core under network faults; `disk`: also JetStream on a simulated disk, with crashes and power cuts. */
export type FaultSet = "net" | "disk"

export interface SimConfig {
  readonly seed: number
  readonly steps: number
  readonly faults?: FaultSet
  readonly plant?: PlantedBug | undefined
  /** Also run the MQTT bridge with simulated MQTT devices. */
  readonly mqtt?: boolean
  /**
   * MQTT devices that drop mid-QoS 2 handshake and go silent under a keep-alive, each in
   * half the runs (default true). Off replays seeds recorded before those faults existed.
   */
  readonly mqttDeviceFaults?: boolean
  /** MQTT 5.0 devices (in half the runs, from their own generator); false: 3.1.1 only. */
  readonly mqttV5?: boolean
  /**
   * With disk faults: the disk fills up now and then, and space is freed a while later.
   * Default: on without MQTT, off with it (the MQTT state's behaviour on a full disk is
   * not settled yet: `--disk-full` turns it on). Off replays seeds recorded before it existed.
   */
  readonly diskFull?: boolean
  /**
   * An nkey user beside the no_auth_user in a third of the runs, so INFO carries nonces
   * (default true). Off replays seeds recorded before it existed.
   */
  readonly nonces?: boolean
  /**
   * Run a cluster instead of one server: this many nodes (2 to 4), or 1 for as many as the
   * seed picks (see cluster.ts). Network faults only (no disk, no MQTT).
   */
  readonly cluster?: number
  /** Cluster mode: some plain subscriptions auto-unsubscribe (`UNSUB sid max`; default true). Off replays seeds recorded before it existed. */
  readonly autoUnsub?: boolean
  /** Lines of trace kept for the failure report. */
  readonly traceTail?: number
}

/** The fault mix of one run, drawn from its seed. */
export interface FaultMix {
  readonly drop: number
  readonly stall: number
  readonly clockJump: number
  readonly splitChance: number
  readonly slowLinks: number
  readonly bigMessages: number
  /** Per step: the server process dies and restarts (disk faults only). */
  readonly crash: number
  /** Of those, the share that also loses power (unsynced bytes gone, last writes maybe torn). */
  readonly powerLoss: number
  /** Fsync latency range, ms. */
  readonly fsyncMs: readonly [number, number]
  /** The file store's block size (small ones roll blocks often). */
  readonly blockSize: number
  /** Chance that a disk write or fsync fails (while the server runs; recovery sees a healthy disk). */
  readonly diskErrors: number
  /**
   * JetStream's `sync_interval` in ms, 0 for "always" (the default: a PubAck waits for its
   * fsync). With an interval a PubAck promises only what a process crash keeps.
   */
  readonly syncIntervalMs: number
  /** Per step: the disk fills up (until space is freed, after a while or at a restart). */
  readonly diskFull: number
}

/** Whether a run fills the disk now and then (see `SimConfig.diskFull`). */
export const diskFullOn = (faults: FaultSet, mqtt: boolean, diskFull: boolean | undefined): boolean => faults === "disk" && (diskFull ?? !mqtt)

export const reproduceCommand = (seed: number, steps: number, plant?: PlantedBug, faults: FaultSet = "net", mqtt = false, deviceFaults = true, diskFull?: boolean, nonces = true, cluster?: number, autoUnsub = true): string => {
  if (cluster !== undefined && cluster > 0) return `npm run sim -- --cluster${cluster > 1 ? ` ${cluster}` : ""} --seed ${seed} --steps ${steps}${plant === undefined ? "" : ` --plant ${plant}`}${autoUnsub ? "" : " --no-auto-unsub"}`
  const full = diskFullOn(faults, mqtt, diskFull)
  const fullFlag = faults !== "disk" || full === !mqtt ? "" : full ? " --disk-full" : " --no-disk-full"
  return `npm run sim -- --seed ${seed} --steps ${steps}${faults === "net" ? "" : ` --faults ${faults}`}${mqtt ? " --mqtt" : ""}${plant === undefined ? "" : ` --plant ${plant}`}${mqtt && !deviceFaults ? " --no-device-faults" : ""}${fullFlag}${nonces ? "" : " --no-nonces"}`
}

export const optionsFor = (rng: Rng): ServerOptions => ({
  ...defaultOptions,
  host: "127.0.0.1",
  port: 4222,
  httpPort: undefined,
  mqtt: undefined,
  jetstream: undefined,
  maxPending: rng.pick([4 * 1024, 16 * 1024, 64 * 1024, 256 * 1024, 64 * 1024 * 1024]),
  pingIntervalMs: rng.pick([100, 300, 1_000, 120_000]),
  pingMax: rng.int(1, 3),
  writeDeadlineMs: rng.pick([200, 1_000, 10_000]),
  log: { debug: false, trace: false, logtime: false, logFile: undefined }
})

/** The public key of an nkey user no simulated client connects as (nobody holds its seed). */
export const SIM_NKEY_USER = "UC7XM6ZBANBSBTONQFXGKEGDIGJFVC7YXFNE7BJYJ63S5QIXDYTUDBLQ"

/**
 * The options with an nkey user configured beside the no_auth_user the simulated clients
 * connect as (anonymously, as before): every INFO then carries a nonce, drawn from the
 * server's seeded entropy, and the clients trace it, so a replay covers the nonces too.
 * The auth timeout is longer than any run, so it never closes a client that a fault delayed.
 */
export const withNkeyUser = (o: ServerOptions): ServerOptions => ({
  ...o,
  authorization: {
    user: undefined,
    password: undefined,
    token: undefined,
    users: [
      { user: undefined, password: undefined, nkey: SIM_NKEY_USER, permissions: undefined, account: undefined },
      { user: "sim", password: "sim", nkey: undefined, permissions: undefined, account: undefined }
    ],
    timeoutMs: 24 * 3_600_000,
    defaultPermissions: undefined
  },
  noAuthUser: "sim"
})

export const faultsFor = (rng: Rng): FaultMix => ({
  drop: rng.pick([0, 0.005, 0.02]),
  stall: rng.pick([0, 0.01, 0.04]),
  clockJump: rng.pick([0, 0.005, 0.02]),
  splitChance: rng.pick([0, 0.3, 0.8]),
  slowLinks: rng.pick([0, 0.3, 0.7]),
  bigMessages: rng.pick([0, 0.05, 0.2]),
  crash: 0,
  powerLoss: 0,
  fsyncMs: [0, 0],
  blockSize: 0,
  diskErrors: 0,
  syncIntervalMs: 0,
  diskFull: 0
})

export const diskFaultsFor = (rng: Rng, net: FaultMix): FaultMix => ({
  ...net,
  crash: rng.pick([0.003, 0.006, 0.012]),
  powerLoss: rng.pick([0.3, 0.6, 0.9]),
  fsyncMs: rng.pick([[0, 0], [0, 3], [1, 10]] as const),
  blockSize: rng.pick([512, 4 * 1024, 64 * 1024]),
  diskErrors: rng.pick([0, 0, 0.002, 0.01]),
  syncIntervalMs: rng.pick([0, 0, 0, 200])
})

export interface SimResult {
  readonly ok: boolean
  readonly seed: number
  readonly steps: number
  /** The step the first violation was seen at (-1 when ok). */
  readonly failedStep: number
  readonly violations: ReadonlyArray<string>
  readonly trace: ReadonlyArray<string>
  /** FNV-1a of every trace line: equal hashes = identical runs. */
  readonly traceHash: string
  readonly traceLines: number
  readonly faults: FaultMix
  readonly stats: Record<string, number>
}

/** A run's outcome: `tail` the last trace lines, `hash` the FNV-1a of all `lines` of them. */
export const simResult = (
  config: SimConfig,
  failedStep: number,
  violations: ReadonlyArray<string>,
  trace: TraceLog,
  faults: FaultMix,
  stats: Record<string, number>
): SimResult => ({
  ok: violations.length === 0,
  seed: config.seed,
  steps: config.steps,
  failedStep,
  violations,
  trace: [...trace.tail],
  traceHash: trace.hash.toString(16).padStart(8, "0"),
  traceLines: trace.lines,
  faults,
  stats
})

/** A run's trace: the FNV-1a of every line (equal hashes = identical runs) and the last `keep` lines. */
export class TraceLog {
  readonly tail: Array<string> = []
  hash = 0x811c9dc5
  lines = 0

  constructor(private readonly keep: number) {}

  add(l: string): void {
    for (let i = 0; i < l.length; i++) this.hash = Math.imul(this.hash ^ l.charCodeAt(i), 0x01000193) >>> 0
    this.lines++
    this.tail.push(l)
    if (this.tail.length > this.keep) this.tail.shift()
  }
}
