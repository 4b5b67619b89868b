import { SlowConsumer } from "../engine/outbound.js"

// Why a connection closed: the strings nats-server reports in /connz `reason`.
export const ClosedReason = {
  ClientClosed: "Client Closed",
  AuthenticationTimeout: "Authentication Timeout",
  AuthenticationViolation: "Authentication Failure",
  TLSHandshakeError: "TLS Handshake Failure",
  SlowConsumerPendingBytes: SlowConsumer.PendingBytes,
  SlowConsumerWriteDeadline: SlowConsumer.WriteDeadline,
  WriteError: "Write Error",
  ReadError: "Read Error",
  ParseError: "Parse Error",
  StaleConnection: "Stale Connection",
  ProtocolViolation: "Protocol Violation",
  MaxConnectionsExceeded: "Maximum Connections Exceeded",
  MaxPayloadExceeded: "Maximum Message Payload Exceeded",
  MaxControlLineExceeded: "Maximum Control Line Exceeded",
  ServerShutdown: "Server Shutdown",
  MsgHeaderViolation: "Message Header Violation",
  NoRespondersRequiresHeaders: "No Responders Requires Headers",
  DuplicateClientID: "Duplicate Client ID"
} as const
export type ClosedReason = (typeof ClosedReason)[keyof typeof ClosedReason]

// The `-ERR '<text>'` lines a client sees, as nats-server words them.
export const ErrText = {
  UnknownOp: "Unknown Protocol Operation",
  MaxPayload: "Maximum Payload Violation",
  MaxControlLine: "Maximum Control Line Exceeded",
  InvalidSubject: "Invalid Subject",
  InvalidPublishSubject: "Invalid Publish Subject",
  InvalidQueue: "Invalid Queue Name",
  StaleConnection: "Stale Connection",
  SlowConsumer: "Slow Consumer",
  MaxConnections: "Maximum Connections Exceeded",
  MaxSubscriptions: "Maximum Subscriptions Exceeded",
  AuthorizationViolation: "Authorization Violation",
  AuthenticationTimeout: "Authentication Timeout",
  HeadersNotSupported: "Message Headers Not Supported",
  NoRespondersRequiresHeaders: "No Responders Requires Headers Support",
  InvalidConnect: "Invalid CONNECT Payload",
  ServerShutdown: "Server Shutdown"
} as const
