// The MQTT persistence port: what the bridge keeps, per account, of persistent sessions,
// QoS 1/2 messages, QoS 2 exchanges and retained messages, and how it learns that what
// it wrote is durable. Two layers: `layerMemory` (in the process; nothing survives a
// restart) and `layerStreams` (the account's `$MQTT_*` streams of the spec, store-streams.ts).
// Both pass one contract suite (test/unit/mqtt-store.contract.test.ts); the bridge never
// asks which one it has, only whether an account's writes are `durable`.
//
// Writes are synchronous (the delivery path calls them per message); what is asynchronous
// (opening an account, reading stored messages back, a commit) is asked once per account,
// per batch or per flush.
import { Context } from "effect"
import type { QoS, RetainedTree, SessionSnapshot, SubscriptionOptions } from "../../core/mqtt/index.js"
import { forwardedExpiry } from "../../core/mqtt/v5/expiry.js"
import { messageExpiryOf } from "../../core/mqtt/v5/nats.js"
import type { StoreError } from "../../services/store.js"

/**
 * What MQTT 5.0 properties a stored copy keeps: the reply subject and NATS header block
 * they make (`publishToNats`; `natsToPublish` makes them properties again), and when the
 * message was received (ms since the epoch), from which its Message Expiry Interval counts.
 */
export interface StoredProps {
  readonly reply: string | undefined
  readonly hdr: Buffer | undefined
  readonly at: number
}

/** Whether a stored copy's Message Expiry Interval (in its header) ran out by `now` (ms); false without one. */
export const storedExpired = (props: StoredProps | undefined, now: number): boolean => {
  const interval = messageExpiryOf(props?.hdr)
  return interval !== undefined && forwardedExpiry(interval, props!.at, now) === undefined
}

export interface RetainedMsg {
  readonly topic: string
  readonly payload: Uint8Array
  readonly qos: number
  /** MQTT 5.0: the properties it was published with (a retained copy keeps them [MQTT-3.3.1-5]). */
  readonly props?: StoredProps | undefined
}

/** A stored message read back: its payload and the QoS it was published with. */
export interface LoadedMessage {
  readonly payload: Buffer
  readonly qos: QoS
  /** MQTT 5.0: its properties, when it was stored with any. */
  readonly props?: StoredProps | undefined
}

/** The sender of a QoS 2 message, stored with it so that a restart knows its resend as one. */
export interface InboundId {
  readonly clientId: string
  readonly packetId: number
}

/** The MQTT state of one account. */
export interface MqttAccountStore {
  /**
   * Whether what is written survives a restart. When it does, nothing that depends on a
   * write (an acknowledgement, a QoS 2 message forwarded, output naming a packet id) is said
   * before the `commit` covering it completed; when it does not, there is nothing to wait for.
   */
  readonly durable: boolean
  /** Retained messages by topic: the live view, changed through `setRetained`/`deleteRetained`. */
  readonly retained: RetainedTree<RetainedMsg>
  /** The sessions stored before this start, by client id, handed over once (the bridge takes them up). */
  takeSessions(): Map<string, SessionSnapshot>

  /**
   * Keep a QoS 1/2 message for the persistent sessions it is routed to; the answer is its
   * reference (`ref`), valid in this store only, or undefined when the store keeps no copy
   * (the sessions then hold the payload themselves). `routedLater`: it is routed after this
   * turn, in the order stored, and `routed(ref)` says when; `inbound`: a persistent session's
   * QoS 2 PUBLISH, whose de-duplication record (`qos2State`) follows.
   */
  storeMessage(subject: string, payload: Uint8Array, qos: QoS, routedLater?: boolean, inbound?: InboundId, props?: StoredProps): number | StoreError | undefined
  /** A message stored with `routedLater` was routed. */
  routed(ref: number): void
  /** The stored size of a message (0 when it is gone), without reading it. */
  sizeOf(ref: number): number
  /** Stored messages read back (a session's `fetch`), undefined for each one gone. */
  loadMessages(refs: ReadonlyArray<number>): Promise<Array<LoadedMessage | undefined>>
  /** One more persistent session holds the message. */
  ref(ref: number): void
  /** One holder is done with it: the message goes when nobody holds it (after the next commit). */
  unref(ref: number): void
  /** After routing: a message no persistent session took is not kept. */
  releaseIfUnheld(ref: number): void

  /** A retained message for `topic` (its NATS subject `subject`), replacing the one before. */
  setRetained(topic: string, subject: string, payload: Uint8Array, qos: QoS, props?: StoredProps): void
  /** The retained message of `topic` is removed; false when there was none. */
  deleteRetained(topic: string, subject: string): boolean

  /** A persistent session's record: its packet ids and what it still owes (`SessionSnapshot`). */
  writeSession(snap: SessionSnapshot): void
  /** One subscription of a persistent session, made (qos) or removed (undefined). */
  writeSubscription(clientId: string, filter: string, qos: QoS | undefined, options?: SubscriptionOptions): void
  /** A QoS 2 exchange: an inbound id awaiting PUBREL (`$MQTT_qos2in`) or an outbound one awaiting PUBCOMP (`$MQTT_out`). */
  qos2State(stream: "$MQTT_qos2in" | "$MQTT_out", clientId: string, packetId: number, present: boolean, copy?: number): void
  /** Forget a session: its record, subscriptions, QoS 2 state and its hold on stored messages. */
  deleteSession(snap: SessionSnapshot | undefined, clientId: string): void
}

export interface MqttStoreService {
  /** The account's store once it is open; undefined before. */
  ready(account: string): MqttAccountStore | undefined
  /** Open the account's store (creating what is missing) and load what it holds. */
  open(account: string): Promise<MqttAccountStore>
  /** The accounts that have MQTT state from before this start: opened first, so their sessions resume. */
  storedAccounts(): ReadonlyArray<string>
  /** Run `cb` once everything written so far is durable (at once when nothing needs to be); false: it could not be made so. */
  commit(cb: (ok: boolean) => void): void
  /** Something was written since the last commit started. */
  hasWrites(): boolean
  /** Messages wait for a commit to be removed (see `unref`). */
  hasRemovals(): boolean
}

export class MqttStore extends Context.Tag("switchyard/MqttStore")<MqttStore, MqttStoreService>() {}
