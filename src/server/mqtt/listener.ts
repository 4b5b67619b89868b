// The Effect shell of the MQTT bridge: listens through the Transport for the life of
// the scope, wakes session deadlines (keepalive, redelivery) from Effect's Clock, and
// closes MQTT connections when the scope closes.
import { Effect, type Scope } from "effect"
import type { MqttOptions } from "../../config/options.js"
import { Transport, type TransportError } from "../../services/transport.js"
import type { Server } from "../server.js"
import type { JetStream } from "../jetstream/jetstream.js"
import { MqttBridge } from "./bridge.js"
import { MqttPersistence } from "./persist.js"

/** Keepalive is counted in seconds: checking deadlines four times a second is fine enough. */
export const MQTT_TICK_MS = 250

export const startMqtt = (
  server: Server,
  options: MqttOptions,
  jetstream?: JetStream | undefined
): Effect.Effect<MqttBridge, TransportError, Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const clock = yield* Effect.clock
    const persistence = jetstream === undefined ? undefined : new MqttPersistence(jetstream, jetstream.log)
    const bridge = new MqttBridge(server, options, persistence)
    // Sessions stored before a restart are subscribed again before the first client connects.
    if (persistence !== undefined) yield* Effect.promise(() => bridge.openStoredAccounts())
    const listener = yield* transport.listen(options.host, options.port, (conn) => bridge.accept(conn))
    bridge.host = listener.host
    bridge.port = listener.port
    yield* Effect.addFinalizer(() => Effect.promise(() => bridge.shutdown()))
    yield* Effect.sleep(MQTT_TICK_MS).pipe(
      Effect.zipRight(Effect.sync(() => bridge.tick(clock.unsafeCurrentTimeMillis()))),
      Effect.forever,
      Effect.forkScoped
    )
    return bridge
  })
