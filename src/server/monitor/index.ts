// The monitoring layer's public face for the server: start the listener with a
// MonitorSource; the source's snapshot types live in core/monitor/source.ts.
export { MonitorError, MonitorServer, normalizeBasePath, startMonitor } from "./http.js"
export type { MonitorHandle, MonitorOptions } from "./http.js"
export { nodeProcessProbe } from "./process.js"
export type * from "../../core/monitor/source.js"
