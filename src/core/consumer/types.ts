// What the consumer machine reads (a synchronous view of its stream), what it is
// fed (inputs) and what it asks the shell to do (actions, plain data).
import type { PullRequest } from "./ack.js"

/** Metadata of a stored message; the shell loads the bytes when it delivers. */
export interface StoredMsgMeta {
  readonly seq: number
  readonly subject: string
  readonly timestampMs: number
  /** Stored size, as counted against a pull request's `max_bytes`. */
  readonly size: number
}

/** Synchronous queries on the consumer's stream. `filters` of `[]` means every subject. */
export interface StreamView {
  readonly firstSeq: number
  readonly lastSeq: number
  /** The first message at or after `fromSeq` whose subject matches any filter. */
  loadNextMatching(filters: ReadonlyArray<string>, fromSeq: number): StoredMsgMeta | undefined
  /** Messages at or after `fromSeq` matching any filter. */
  numPending(filters: ReadonlyArray<string>, fromSeq: number): number
  /** Sequences of the last message of each subject matching the filters, ascending. */
  lastPerSubject(filters: ReadonlyArray<string>): ReadonlyArray<number>
  /** The first sequence stored at or after `ms`; `lastSeq + 1` when none. */
  seqAtOrAfterTime(ms: number): number
}

/** The ack subject's numbers as `parseAckReply` gives them. */
export interface AckRef {
  readonly streamSeq: number
  readonly consumerSeq?: number
  readonly deliveryCount?: number
}

export type ConsumerInput =
  /** The stream stored new messages. */
  | { readonly type: "newMessages" }
  /** A pull request (`$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>` with reply). */
  | { readonly type: "pull"; readonly request: PullRequest; readonly reply: string }
  /** A message on an ack reply subject; `reply` is the sender's reply subject if any. */
  | { readonly type: "ack"; readonly ack: AckRef; readonly payload: string | Uint8Array; readonly reply?: string }
  /** Only time has passed. */
  | { readonly type: "tick" }
  /** The stream was purged (fully or by subject); the view already reflects it. */
  | { readonly type: "streamPurged" }
  | { readonly type: "msgDeleted"; readonly seq: number }
  /** A reply to a flow-control request, on the `$JS.FC.…` subject it carried. */
  | { readonly type: "flowControlReply"; readonly subject: string }
  /** Push consumers: whether anyone is subscribed to `deliver_subject`. */
  | { readonly type: "interest"; readonly active: boolean }
  /** The consumer is being deleted. */
  | { readonly type: "delete" }

export type DeliveryTarget =
  | { readonly kind: "pull"; readonly reply: string }
  | { readonly kind: "push"; readonly subject: string }

export interface DeliverAction {
  readonly type: "deliver"
  readonly seq: number
  readonly subject: string
  readonly timestampMs: number
  readonly size: number
  readonly deliveryCount: number
  readonly consumerSeq: number
  readonly target: DeliveryTarget
  /** Messages still to deliver after this one (the ack subject's last number). */
  readonly pending: number
}

export interface StatusAction {
  readonly type: "status"
  readonly target: DeliveryTarget
  readonly code: 100 | 404 | 408 | 409
  readonly description: string
  readonly headers: Readonly<Record<string, string>>
  /** Flow-control requests carry the subject the client answers on. */
  readonly reply?: string
}

export type ConsumerAction =
  | DeliverAction
  | StatusAction
  /** These stream sequences were acknowledged (workqueue/interest retention may remove them). */
  | { readonly type: "acked"; readonly seqs: ReadonlyArray<number> }
  /** These stream sequences left the consumer unacknowledged (+TERM, out of deliveries): interest retention may remove them. */
  | { readonly type: "released"; readonly seqs: ReadonlyArray<number> }
  /** Answer an ack sent with a reply subject (double ack) with an empty message. */
  | { readonly type: "ackAck"; readonly reply: string }
  /** Durable state changed: save `snapshot()` (coalesce as you like). */
  | { readonly type: "persist" }
  /** Advisories nats-server publishes on `$JS.EVENT.ADVISORY.CONSUMER.*`. */
  | {
      readonly type: "advisory"
      readonly kind: "max_deliveries" | "terminated"
      readonly streamSeq: number
      readonly deliveries: number
      readonly reason?: string
    }
  /** Remove this consumer (inactive past `inactive_threshold`). */
  | { readonly type: "terminate"; readonly reason: "inactive" }

export interface SequenceInfo {
  readonly consumer_seq: number
  readonly stream_seq: number
  /** ms since the epoch; the API shows it as RFC 3339. */
  readonly last_active?: number
}

/** The state half of JetStream's consumer info. */
export interface ConsumerState {
  readonly delivered: SequenceInfo
  readonly ack_floor: SequenceInfo
  readonly num_ack_pending: number
  readonly num_redelivered: number
  readonly num_waiting: number
  readonly num_pending: number
}

/** JSON-safe durable state: what survives a restart. */
export interface ConsumerSnapshot {
  readonly v: 1
  readonly delivered: SequenceInfo
  readonly ack_floor: SequenceInfo
  /** Next stream sequence to scan for new messages. */
  readonly cursor: number
  /** `last_per_subject` start set not yet delivered. */
  readonly lps: ReadonlyArray<number>
  /** [stream seq, consumer seq of first delivery, last delivery ms, deliveries], ascending. */
  readonly pending: ReadonlyArray<readonly [number, number, number, number]>
}
