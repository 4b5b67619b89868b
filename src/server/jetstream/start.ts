// Starting the stream subsystem on the file store under `store_dir` (the embedded
// default): the store lives as long as the caller's scope, and closes after the
// subsystem stops using it. The disk is Node's unless the context provides a Disk.
import { Effect, Layer, Option, type Scope } from "effect"
import type { JetStreamOptions } from "../../config/options.js"
import { Disk } from "../../services/disk.js"
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
    // Node's file system, unless the caller provides another disk (the tests' simulated one).
    const given = yield* Effect.serviceOption(Disk)
    const disk = Option.isSome(given) ? Layer.succeed(Disk, given.value) : layerNode
    const store = yield* Layer.build(layerFile(options.storeDir).pipe(Layer.provide(disk)))
    return yield* startJetStream(server, options).pipe(Effect.provide(store))
  })
