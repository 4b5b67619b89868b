// What the harness asks a load-generator process to do, and what it gets back.
// Plain JSON both ways (sent over the child-process IPC channel).

export interface NatsFlowJob {
  readonly kind: "nats-flow"
  readonly port: number
  readonly serverPid: number
  /**
   * A cluster run: the subscribers connect to this port (another server, routed to the
   * publishers' one), whose process `subServerPid` counts in the server CPU figures.
   */
  readonly subPort?: number
  readonly subServerPid?: number
  /**
   * A cluster run with everyone on `port`'s server (no remote interest): the other
   * server's client port, where a probe subscribes first to prove the route is up (it
   * leaves before the flow starts), and its process, counted in the server CPU figures.
   */
  readonly peerPort?: number
  readonly peerPid?: number
  /** Publisher connections; the count is split between them. */
  readonly pubs: number
  /** Subscriber connections (0 = publish only). */
  readonly subs: number
  /** Subscribers join one queue group (each message goes to one of them). */
  readonly queue: boolean
  readonly size: number
  /** Messages published in total (over all publishers), at most. */
  readonly count: number
  /** Stop publishing after this long (then wait for what was published); 0 = publish `count`. */
  readonly durationMs: number
}

export interface NatsReqRepJob {
  readonly kind: "nats-reqrep"
  readonly port: number
  readonly serverPid: number
  readonly size: number
  /** Measured requests (a warm-up of up to 1000 comes first). */
  readonly count: number
}

export interface NatsIdleJob {
  readonly kind: "nats-idle"
  readonly port: number
  readonly serverPid: number
  /** Connections to open and hold. */
  readonly count: number
}

export interface MqttFlowJob {
  readonly kind: "mqtt-flow"
  /** The MQTT port (publisher, and MQTT subscribers). */
  readonly port: number
  /** The NATS port, used when `natsSubs` (the MQTT → NATS bridge). */
  readonly natsPort: number
  readonly serverPid: number
  /** QoS of the publishes and of the subscriptions. */
  readonly qos: 0 | 1 | 2
  readonly subs: number
  /** Subscribers are NATS connections on the mapped subject instead of MQTT clients. */
  readonly natsSubs: boolean
  /**
   * MQTT subscribers keep persistent sessions (clean session 0): the server must keep each
   * QoS 1/2 message for them until they acknowledge it, across a restart.
   */
  readonly persistent?: boolean
  /** MQTT 5.0 clients (protocol level 5) instead of 3.1.1. */
  readonly v5?: boolean
  /** The subscribers share one MQTT 5.0 Shared Subscription (`$share/bench/…`): each message goes to one of them. */
  readonly shared?: boolean
  readonly size: number
  /** Messages published, at most. */
  readonly count: number
  /** Stop publishing after this long (then wait for what was published); 0 = publish `count`. */
  readonly durationMs: number
}

export interface MqttConnectJob {
  readonly kind: "mqtt-connect"
  readonly port: number
  readonly serverPid: number
  /** Connections in all: the first quarter (at most 500) one at a time, the rest 64 at a time. */
  readonly count: number
}

export interface JsPubJob {
  readonly kind: "js-pub"
  readonly port: number
  readonly serverPid: number
  readonly size: number
  /** Messages published, at most. */
  readonly count: number
  /** Stop publishing after this long (then wait for the PubAcks); 0 = publish `count`. */
  readonly durationMs: number
}

export interface JsReplayJob {
  readonly kind: "js-replay"
  readonly port: number
  readonly serverPid: number
  readonly size: number
  /** Messages stored first (not timed), then pulled back (timed). */
  readonly count: number
}

/** Nothing happens: how much memory and CPU the server uses meanwhile. */
export interface FootprintJob {
  readonly kind: "idle-footprint"
  readonly serverPid: number
  /** Seconds of idleness measured (the server's CPU over them, its RSS at the end). */
  readonly seconds: number
}

export type Job = NatsFlowJob | NatsReqRepJob | NatsIdleJob | MqttFlowJob | MqttConnectJob | JsPubJob | JsReplayJob | FootprintJob

export interface JobResult {
  /** False when the run could not be carried out at all (see `error`). */
  readonly ok: boolean
  readonly error?: string
  /** Scenario-specific numbers, keyed as the scenario table's metrics. */
  readonly metrics: Record<string, number>
  /** Messages (or connections) expected but never seen. */
  readonly loss: number
  /** Messages seen more often than expected. */
  readonly excess: number
  /** -ERR lines, unexpected closes, stalls. */
  readonly errors: ReadonlyArray<string>
}
