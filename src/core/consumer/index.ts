// JetStream consumers as a pure state machine; the shell wires it to a stream store and clients.
export * from "./ack.js"
export * from "./config.js"
export * from "./machine.js"
export type * from "./types.js"
