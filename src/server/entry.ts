// What program.ts loads once the configuration checked out: the server and its
// shell. Loaded by a dynamic import, so the bundle compiles it as a chunk of its own.
export { serve } from "./serve.js"
export { handleLogReopen, handleServerSignals } from "./signals.js"
export { layerLog } from "../services/log.js"
export { layerNode } from "../services/transport-node.js"
