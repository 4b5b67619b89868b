// The program main.ts loads once the signal guard is in place: read flags and
// configuration, then compose the layers and run until SIGINT/SIGTERM (NodeRuntime
// interrupts the program; scopes close listeners gracefully) or until lame duck mode
// (SIGUSR2) has closed every client.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Deferred, Effect, Layer } from "effect"
import { ConfigFiles, load, loadOptions } from "./config/load.js"
import { helpText } from "./config/flags.js"
import { sendSignal } from "./signal-command.js"
import { VERSION } from "./version.js"

const fail = (message: string) =>
  Effect.sync(() => {
    process.stderr.write(`switchyard: ${message}\n`)
    process.exitCode = 1
  })

const program = Effect.gen(function*() {
  const outcome = yield* load(process.argv.slice(2), process.env)
  switch (outcome.kind) {
    case "help":
      process.stdout.write(`${helpText}\n`)
      return
    case "version":
      process.stdout.write(`switchyard: v${VERSION}\n`)
      return
  }
  const { options, warnings, checkOnly, signal, source } = outcome
  if (signal !== undefined) {
    const error = sendSignal(signal, options.pidFile)
    if (error !== undefined) yield* fail(`cannot send ${signal.command} (${signal.signal}): ${error}`)
    return
  }
  if (checkOnly) {
    for (const w of warnings) process.stderr.write(`switchyard: warning: ${w}\n`)
    process.stdout.write(`switchyard: configuration ${options.configFile ?? "(defaults)"} is valid\n`)
    return
  }
  const files = yield* ConfigFiles
  const reread = source.configFile === undefined
    ? Effect.fail(new Error("there is no configuration file to read again (the server was started without -c)"))
    : loadOptions(source).pipe(Effect.provideService(ConfigFiles, files))
  const stop = yield* Deferred.make<void>()
  // The server is loaded once the configuration is known to be good: a separate chunk of
  // the bundle, compiled on its own (see scripts/bundle.mjs), and nothing of it for -h, -v or -t.
  // It and the parts it loads later (server/parts.ts) fail with an error that names them, never a hang.
  const { serve, handleLogReopen, handleServerSignals, layerLog, layerNode } = yield* Effect.tryPromise({
    try: () => import("./server/entry.js"),
    catch: (e) => new Error(`Could not load the server: ${e instanceof Error ? e.message : String(e)}`)
  })
  yield* Effect.gen(function*() {
    yield* handleLogReopen
    const serving = yield* serve(options, warnings)
    yield* handleServerSignals({ serving, reread, stop })
    yield* Deferred.await(stop)
  }).pipe(
    Effect.scoped,
    Effect.provide(Layer.merge(layerNode, layerLog(options.log)))
  )
}).pipe(
  Effect.provide(ConfigFiles.layerNode),
  Effect.catchAll((e) => fail(e.message))
)

NodeRuntime.runMain(program, { disableErrorReporting: false })
