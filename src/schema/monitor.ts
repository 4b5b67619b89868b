// Effect Schemas of every monitoring response and query string, with
// nats-server 2.10's field names. The endpoint table (core/monitor/endpoints.ts)
// pairs them with handlers; routes, schemas/*.json and the OpenAPI document all
// come from that table.
export * from "./monitor/common.js"
export * from "./monitor/connz.js"
export * from "./monitor/routez.js"
export * from "./monitor/jsz.js"
export * from "./monitor/varz.js"
export * from "./monitor/subsz.js"
export * from "./monitor/healthz.js"
export * from "./monitor/accountz.js"
export * from "./monitor/runtime.js"
export * from "./monitor/query.js"
