// What serve.ts loads when the configuration has an http or https monitoring port: the
// listener and the source it reads the server through. A dynamic import, so the bundle
// keeps monitoring (with core/monitor and its schemas) in a chunk of its own (parts.ts).
export { startMonitor } from "./http.js"
export { makeMonitorSource } from "../monitor-source.js"
