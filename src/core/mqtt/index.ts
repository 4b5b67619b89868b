// The pure MQTT 3.1.1 core: topic <-> subject translation, the per-client session
// machine and its QoS bookkeeping. The shell (codec, sockets, streams) drives it:
// decoded packets in as `packet` inputs, `accept` -> takeover + load `$MQTT_sess` ->
// `sessionReady`, `subscribe` -> Sublist + retained lookup -> `retained`, routed
// messages in once per session as `deliver`, `tick` at `nextDeadline()`.
export * from "./qos.js"
export * from "./session.js"
export * from "./topic.js"
export * from "./types.js"
export * from "./record.js"
export * from "./describe.js"
export * from "./retained.js"
