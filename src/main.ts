// Entry point. The signal guard goes first, before the rest of the server is even
// loaded: from then on SIGUSR1 can never open Node's inspector (see signals.ts).
import { installSignalGuard } from "./signals.js"

installSignalGuard()
await import("./program.js")
