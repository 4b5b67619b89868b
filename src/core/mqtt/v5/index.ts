// MQTT 5.0 in the pure core: the wire format (decode.ts, encode.ts, properties.ts,
// reason.ts) and the v5 state machines and rules a session applies (alias.ts, flow.ts,
// expiry.ts, subscription.ts, diagnostics.ts), plus the mapping onto NATS (nats.ts).
// Nothing here does I/O or reads a clock. docs/mqtt5.md says what wires it into the server.
export * from "./types.js"
export * from "./reason.js"
export { PacketError, MAX_VBI, vbiLength } from "./reader.js"
export { PROPERTIES, propertyAllowed, propertyId, MAX_SUBSCRIPTION_IDENTIFIER, type PropertyContext } from "./properties.js"
export * from "./decode.js"
export * from "./encode.js"
export * from "./alias.js"
export * from "./flow.js"
export * from "./expiry.js"
export * from "./subscription.js"
export * from "./information.js"
export * from "./connect.js"
export * from "./nats.js"
