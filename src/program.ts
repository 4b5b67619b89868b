// The program main.ts loads once the signal guard is in place: read flags and
// configuration, then compose the layers and run until SIGINT/SIGTERM (NodeRuntime
// interrupts the program; scopes close listeners gracefully).
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { ConfigFiles, load } from "./config/load.js"
import { helpText } from "./config/flags.js"
import { layerLog } from "./services/log.js"
import { layerNode } from "./services/transport-node.js"
import { serve } from "./server/serve.js"
import { handleSignals } from "./server/signals.js"
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
  const { options, warnings, checkOnly } = outcome
  if (checkOnly) {
    for (const w of warnings) process.stderr.write(`switchyard: warning: ${w}\n`)
    process.stdout.write(`switchyard: configuration ${options.configFile ?? "(defaults)"} is valid\n`)
    return
  }
  yield* handleSignals.pipe(
    Effect.zipRight(serve(options, warnings)),
    Effect.zipRight(Effect.never),
    Effect.scoped,
    Effect.provide(Layer.merge(layerNode, layerLog(options.log)))
  )
}).pipe(
  Effect.provide(ConfigFiles.layerNode),
  Effect.catchAll((e) => fail(e.message))
)

NodeRuntime.runMain(program, { disableErrorReporting: false })
