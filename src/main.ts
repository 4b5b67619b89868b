// Entry point. First glibc's allocator is tuned (the process may start itself again for
// that, see malloc-tuning.ts); then the signal guard goes in, before the rest of the
// server is even loaded: from then on SIGUSR1 can never open Node's inspector (see
// signals.ts); V8's optimizing compiler is held back until the server is up (see
// startup-tiering.ts).
import { startTuned } from "./malloc-tuning.js"
import { installSignalGuard } from "./signals.js"
import { holdOptimizer } from "./startup-tiering.js"

startTuned()
installSignalGuard()
holdOptimizer()
await import("./program.js")
