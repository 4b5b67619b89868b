// JetStream API errors as clients see them: the HTTP-like `code`, the `err_code` that
// clients switch on, and nats-server's description text. Pure data, no I/O.
import type { PublishRefusal } from "../stream/publish.js"

export interface ApiError {
  readonly code: number
  readonly err_code: number
  readonly description: string
}

const e = (code: number, err_code: number, description: string): ApiError => ({ code, err_code, description })

export const JsErr = {
  accountResourcesExceeded: e(400, 10002, "resource limits exceeded for account"),
  /** nats-server's answer when the disk is full (it then disables JetStream; Switchyard refuses until space returns). */
  insufficientResources: e(503, 10023, "insufficient resources"),
  badRequest: e(400, 10003, "bad request"),
  invalidJson: e(400, 10025, "invalid JSON"),
  memoryResourcesExceeded: e(500, 10028, "insufficient memory resources available"),
  noMessageFound: e(404, 10037, "no message found"),
  notEmptyRequest: e(400, 10038, "expected an empty request payload"),
  notEnabledForAccount: e(503, 10039, "JetStream not enabled for account"),
  sequenceNotFound: (seq: number) => e(400, 10043, `sequence ${seq} not found`),
  storageResourcesExceeded: e(500, 10047, "insufficient storage resources available"),
  streamInvalidConfig: (err: string) => e(500, 10052, err),
  messageExceedsMaximum: e(400, 10054, "message size exceeds maximum allowed"),
  streamMismatch: e(400, 10056, "stream name in subject does not match request"),
  streamMsgDeleteFailed: (err: string) => e(500, 10057, err),
  streamNameExist: e(400, 10058, "stream name already in use with a different configuration"),
  streamNotFound: e(404, 10059, "stream not found"),
  streamNotMatch: e(400, 10060, "expected stream does not match"),
  streamSubjectOverlap: e(400, 10065, "subjects overlap with an existing stream"),
  streamUpdate: (err: string) => e(500, 10069, err),
  streamWrongLastMsgId: (id: string) => e(400, 10070, `wrong last msg ID: ${id}`),
  streamWrongLastSequence: (seq: number) => e(400, 10071, `wrong last sequence: ${seq}`),
  replicasNotSupported: e(500, 10074, "replicas > 1 not supported in non-clustered mode"),
  streamStoreFailed: (err: string) => e(503, 10077, err),
  streamSealed: e(400, 10109, "invalid operation on sealed stream"),
  streamPurgeFailed: (err: string) => e(500, 10110, err),
  streamRollupFailed: (err: string) => e(500, 10111, err),
  streamNameContainsPathSeparators: e(400, 10128, "Stream name can not contain path separators"),
  messageTtlInvalid: e(400, 10165, "invalid per-message TTL"),
  messageTtlDisabled: e(400, 10166, "per-message TTL is disabled")
} as const

/** A publish the stream's rules refused (core/stream/publish.ts), as its PubAck's error. */
export const publishRefused = (r: PublishRefusal): ApiError => {
  switch (r.type) {
    case "sealed":
      return JsErr.streamSealed
    case "wrongStream":
      return JsErr.streamNotMatch
    case "wrongLastSeq":
      return JsErr.streamWrongLastSequence(r.last)
    case "wrongLastMsgId":
      return JsErr.streamWrongLastMsgId(r.last)
    case "rollupNotPermitted":
      return JsErr.streamRollupFailed("rollup not permitted")
    case "rollupInvalid":
      return JsErr.streamRollupFailed(`rollup value invalid: ${r.value}`)
    case "ttlInvalid":
      return JsErr.messageTtlInvalid
    case "ttlDisabled":
      return JsErr.messageTtlDisabled
  }
}

/** The `type` of an API response: `io.nats.jetstream.api.v1.<kind>_response`. */
export const responseType = (kind: string): string => `io.nats.jetstream.api.v1.${kind}_response`

export const errorResponse = (kind: string, error: ApiError): Record<string, unknown> => ({
  type: responseType(kind),
  error
})
