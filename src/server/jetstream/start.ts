// Starting the stream subsystem on the file store under `store_dir` (the embedded
// default): the store lives as long as the caller's scope, and closes after the
// subsystem stops using it.
import { Effect, Layer, type Scope } from "effect"
import type { JetStreamOptions } from "../../config/options.js"
import { layerNode } from "../../services/disk-node.js"
import type { Log } from "../../services/log.js"
import type { StoreError } from "../../services/store.js"
import { layerFile } from "../../services/store-file.js"
import type { Server } from "../server.js"
import { type JetStream, startJetStream } from "./jetstream.js"

export type { JetStream }

export const startJetStreamOnDisk = (
  server: Server,
  options: JetStreamOptions
): Effect.Effect<JetStream, StoreError, Log | Scope.Scope> =>
  Effect.gen(function*() {
    const store = yield* Layer.build(layerFile(options.storeDir).pipe(Layer.provide(layerNode)))
    return yield* startJetStream(server, options).pipe(Effect.provide(store))
  })
