// The whole server for the life of a scope: the NATS listener, the monitoring
// listeners, the pid and ports files, and the start-up report (one log line per
// listener, warnings for configuration that this version accepts but does not act on).
import { Effect, type Scope } from "effect"
import type { ServerOptions } from "../config/options.js"
import { Log } from "../services/log.js"
import { type Listener, Transport, type TransportError } from "../services/transport.js"
import { VERSION } from "../version.js"
// Types only: monitoring loads when the configuration asks for it (parts.ts).
import type { MonitorError, MonitorHandle } from "./monitor/http.js"
import { loadPart, StartupError } from "./parts.js"
import { hostPort, type RunningServer, startNatsServer } from "./run.js"
import { checkUnsupported } from "../config/unsupported.js"
import type { JetStream } from "./jetstream/jetstream.js"
import { startJetStreamOnDisk } from "./jetstream/start.js"
import type { MqttBridge } from "./mqtt/bridge.js"
import { startMqtt } from "./mqtt/listener.js"
import { MQTT_WS_PATH, startMqttWebSocket, WS_HANDSHAKE_TIMEOUT_MS } from "./mqtt/websocket.js"
import { alsoServing, leafWebSocketRoute, startLeafWebSocket } from "./leafnodes/websocket.js"
import { listenerUrls, machineAddresses, type PortsInfo, ProcessFiles } from "./process-files.js"
import { optimizerServerReady } from "../startup-tiering.js"

export { StartupError } from "./parts.js"

export interface Serving extends RunningServer {
  readonly monitor: MonitorHandle | undefined
  readonly mqtt: MqttBridge | undefined
  /** The WebSocket listener (MQTT at /mqtt, leaf nodes at /leafnode), when the `websocket` block asks for one. */
  readonly websocket: Listener | undefined
  /** The pid file and ports file, kept to the configuration. */
  readonly files: ProcessFiles
  /** The stream subsystem, when on. */
  readonly jetstream: JetStream | undefined
}

/** Every listener's URLs, for the ports file. */
const portsInfo = (
  options: ServerOptions,
  running: RunningServer,
  monitor: MonitorHandle | undefined,
  mqtt: MqttBridge | undefined,
  websocket: Listener | undefined
): PortsInfo => {
  const at = (scheme: string, host: string, port: number, path = "") => listenerUrls(scheme, host, port, machineAddresses, path)
  const monitoring = [
    ...(monitor?.port === undefined ? [] : at("http", options.httpHost, monitor.port)),
    ...(monitor?.httpsPort === undefined ? [] : at("https", options.httpHost, monitor.httpsPort))
  ]
  return {
    nats: at("nats", running.host, running.port),
    ...(monitoring.length > 0 ? { monitoring } : {}),
    ...(mqtt === undefined ? {} : { mqtt: at(options.mqtt?.tls === undefined ? "mqtt" : "mqtts", mqtt.host, mqtt.port) }),
    ...(websocket === undefined || mqtt === undefined
      ? {}
      : { mqtt_websocket: at(options.websocket?.noTls === true ? "ws" : "wss", websocket.host, websocket.port, MQTT_WS_PATH) })
  }
}

export const serve = (
  options: ServerOptions,
  warnings: ReadonlyArray<string> = []
): Effect.Effect<Serving, TransportError | MonitorError | StartupError, Transport | Log | Scope.Scope> =>
  Effect.gen(function*() {
    const log = yield* Log
    const clock = yield* Effect.clock
    const configLoadTime = clock.unsafeCurrentTimeMillis()
    log.info(`Starting switchyard`)
    log.info(`  Version:  ${VERSION}`)
    log.info(`  Runtime:  node ${process.version}`)
    if (options.configFile !== undefined) log.info(`  Using configuration file: ${options.configFile}`)
    for (const w of warnings) log.warn(w)
    const unsupported = checkUnsupported(options)
    // Options loaded from a file or flags carry these already (with their place); options built in code do not.
    for (const w of unsupported.warnings) if (!warnings.some((x) => x.endsWith(w))) log.warn(w)
    if (unsupported.errors.length > 0) {
      for (const e of unsupported.errors) log.fatal(e)
      return yield* Effect.fail(new StartupError(unsupported.errors.join("; ")))
    }
    const running = yield* startNatsServer(options)
    running.server.configLoadTime = configLoadTime
    const jetstream = options.jetstream === undefined ? undefined : yield* startJetStreamOnDisk(running.server, options.jetstream).pipe(
      Effect.mapError((e) => new StartupError(`Could not start JetStream: ${e.detail}`))
    )
    if (jetstream !== undefined) {
      log.info(`Starting JetStream, store directory "${options.jetstream!.storeDir}"`)
      const domain = options.jetstream!.domain
      if (domain !== undefined) log.info(`JetStream domain "${domain}": reachable from other servers as $JS.${domain}.API`)
    }
    const mqtt = options.mqtt === undefined ? undefined : yield* startMqtt(running.server, options.mqtt, jetstream)
    if (mqtt !== undefined) {
      log.info(`Listening for MQTT clients on ${hostPort(mqtt.host, mqtt.port)}${options.mqtt?.tls === undefined ? "" : " (TLS)"}`)
    }
    // The WebSocket listener serves MQTT at /mqtt and, on a server that accepts leaf
    // connections, leaf nodes at /leafnode (checkUnsupported warns when it serves neither).
    const ws = options.websocket
    const leafnodes = running.server.leafnodes
    const leafWs = ws === undefined ? undefined : leafWebSocketRoute(leafnodes, options)
    const websocket = ws === undefined
      ? undefined
      : mqtt !== undefined
      ? yield* startMqttWebSocket(mqtt, ws).pipe(alsoServing(leafWs))
      : leafWs !== undefined
      ? yield* startLeafWebSocket(running.server, leafWs, ws, WS_HANDSHAKE_TIMEOUT_MS)
      : undefined
    // Runs before the listener closes (which waits for its connections to end), as for the leaf listener.
    if (websocket !== undefined && leafWs !== undefined) yield* Effect.addFinalizer(() => Effect.sync(() => leafnodes!.shutdown()))
    if (websocket !== undefined) {
      log.info(`Listening for websocket clients on ${ws!.noTls ? "ws" : "wss"}://${hostPort(websocket.host, websocket.port)}`)
      if (ws!.noTls) log.warn("Websocket not configured with TLS. DO NOT USE IN PRODUCTION!")
    }
    let monitor: MonitorHandle | undefined
    if (options.httpPort !== undefined || options.httpsPort !== undefined) {
      const { makeMonitorSource, startMonitor } = yield* loadPart("monitoring support", () => import("./monitor/monitoring.js"))
      const source = makeMonitorSource(running.server, {
        jetstreamConfigured: jetstream !== undefined,
        jetstream,
        mqtt,
        websocket: websocket === undefined ? undefined : { options: ws!, listener: websocket }
      })
      monitor = yield* startMonitor(options, source)
      if (monitor.port !== undefined) log.info(`Starting http monitor on ${hostPort(options.httpHost, monitor.port)}`)
      if (monitor.httpsPort !== undefined) log.info(`Starting https monitor on ${hostPort(options.httpHost, monitor.httpsPort)}`)
    }
    const files = new ProcessFiles(() => portsInfo(options, running, monitor, mqtt, websocket))
    yield* Effect.acquireRelease(
      Effect.try({
        try: () => files.apply(options),
        catch: (e) => new StartupError(`Could not write the pid or ports file: ${e instanceof Error ? e.message : String(e)}`)
      }),
      () => Effect.sync(() => files.remove())
    )
    log.info(`Server id is ${running.server.serverId}`)
    log.info(`Server name is ${running.server.serverName}`)
    running.idleTrim?.started()
    log.info("Server is ready")
    optimizerServerReady()
    return { ...running, monitor, mqtt, websocket, files, jetstream }
  })
