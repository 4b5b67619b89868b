// The Effect shell of the MQTT bridge: listens through the Transport for the life of
// the scope, wakes session deadlines (keepalive, redelivery) from Effect's Clock, and
// closes MQTT connections when the scope closes.
import { Effect, type Scope } from "effect"
import type { MqttOptions } from "../../config/options.js"
import { Transport, type TransportError } from "../../services/transport.js"
import type { Server } from "../server.js"
import { MqttBridge } from "./bridge.js"

/** Keepalive is counted in seconds: checking deadlines four times a second is fine enough. */
export const MQTT_TICK_MS = 250

export const startMqtt = (
  server: Server,
  options: MqttOptions
): Effect.Effect<MqttBridge, TransportError, Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const clock = yield* Effect.clock
    const bridge = new MqttBridge(server, options)
    const listener = yield* transport.listen(options.host, options.port, (conn) => bridge.accept(conn))
    bridge.host = listener.host
    bridge.port = listener.port
    yield* Effect.addFinalizer(() => Effect.sync(() => bridge.shutdown()))
    yield* Effect.sleep(MQTT_TICK_MS).pipe(
      Effect.zipRight(Effect.sync(() => bridge.tick(clock.unsafeCurrentTimeMillis()))),
      Effect.forever,
      Effect.forkScoped
    )
    return bridge
  })
