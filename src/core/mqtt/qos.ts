// QoS 1/2 bookkeeping of one MQTT session, with no clock and no I/O: the QoS a message
// goes to a session with, packet ids, the outbound in-flight window (bounded by
// `max_ack_pending`) and its redelivery deadlines, and the inbound QoS 2 ids awaiting PUBREL.
import type { Properties } from "./v5/types.js"
import { filterMatchesSubject } from "./topic.js"

/** A subscription as the QoS choice sees it: its filter, the NATS subjects it stands for, the QoS granted. */
export interface Grant {
  readonly filter: string
  readonly subjects: ReadonlyArray<string>
  readonly qos: number
}

/**
 * The QoS the subscriptions matching `subject` grant a message on it: the highest when
 * several overlap, since the session takes the message once (what nats-server does, and
 * allowed by MQTT-3.3.5-1); -1 when none matches. The message goes out at the lower of
 * this and the QoS it was published with. Every place that chooses a message's QoS for a
 * session asks this: a connected session, an away one, and a session restored from the
 * streams for the messages stored after its record.
 */
export const bestGrant = (grants: Iterable<Grant>, subject: string): number => {
  let best = -1
  for (const g of grants) if (g.qos > best && filterMatchesSubject(g.filter, g.subjects, subject)) best = g.qos
  return best
}

/** Packet ids run 1..65535; 0 is never used [MQTT-2.3.1-1]. */
export const MAX_PACKET_ID = 65535

/** A message sent to the client and not yet fully acknowledged. */
export interface OutFlight {
  readonly packetId: number
  readonly qos: 1 | 2
  readonly topic: string
  /**
   * Undefined for a stored message not in memory (a session restored from the streams):
   * the shell fetches it (`fetch` action) before it is sent again.
   */
  payload: Uint8Array | undefined
  readonly retain: boolean
  /** MQTT 5.0: the message's properties (from NATS headers and reply subject) and Subscription Identifiers, sent with it. */
  properties?: Properties | undefined
  /** MQTT 5.0: when it was received, for a message with a Message Expiry Interval (ms): a resend counts it down. */
  receivedAt?: number | undefined
  /** `publish` until PUBACK/PUBREC; `pubrel` (QoS 2 only) until PUBCOMP. */
  phase: "publish" | "pubrel"
  /** The shell's handle on the stored message (e.g. a `$MQTT_msgs` sequence). */
  readonly ref?: string | number | undefined
  /** When it is due for redelivery (`sentAt + ack_wait`). */
  deadline: number
  /** Order of the first send (resends after reconnect keep it [MQTT-4.6.0-1]). */
  seq: number
  /** The window's mark of the entry's current place in deadline order (see OutWindow). */
  slot: number
}

/** A message waiting for a free slot in the window. */
export interface Queued {
  /** Lowered when a fetched message turns out to have been published at a lower QoS. */
  qos: 1 | 2
  readonly topic: string
  /**
   * Undefined while it is a stored message not in memory (numeric `ref`): the shell
   * fetches it when the window has room for it (`fetch`), so a backlog costs no memory.
   */
  payload: Uint8Array | undefined
  /** Payload bytes (counted against max_queued_bytes whether in memory or not). */
  readonly size: number
  readonly retain: boolean
  readonly ref?: string | number | undefined
  /** MQTT 5.0: the message's properties and Subscription Identifiers (a stored one not in memory gets them with its payload). */
  properties?: Properties | undefined
  /** MQTT 5.0: when it was received, for a message with a Message Expiry Interval (ms). */
  receivedAt?: number | undefined
  /** Fetched and found gone (the stored message was removed): skipped, never sent. */
  gone?: boolean
}

/**
 * The messages waiting for the window, oldest first, with their bytes: a FIFO with a
 * moving head (a drain of tens of thousands costs no array shifting).
 */
export class SendQueue {
  private items: Queued[] = []
  private head = 0
  /** Sum of `size` of the messages queued. */
  bytes = 0

  get length(): number {
    return this.items.length - this.head
  }

  peek(): Queued | undefined {
    return this.items[this.head]
  }

  /** The i-th waiting message (0 = the oldest). */
  at(i: number): Queued | undefined {
    return this.items[this.head + i]
  }

  push(q: Queued): void {
    this.items.push(q)
    this.bytes += q.size
  }

  shift(): Queued | undefined {
    if (this.head >= this.items.length) return undefined
    const q = this.items[this.head]
    this.items[this.head++] = undefined as unknown as Queued
    this.bytes -= q.size
    if (this.head === this.items.length) {
      this.items = []
      this.head = 0
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return q
  }

  toArray(): Queued[] {
    return this.items.slice(this.head)
  }
}

/**
 * The outbound window: in-flight entries keyed by packet id, plus a bounded queue
 * of messages waiting for a free slot or packet id. `ack_wait` is one constant, so
 * the order of last send is deadline order: `order` lists entries as they were sent
 * (a resend appends the entry again under a new slot), the next deadline is its first
 * live record, the due ones a prefix. Records of entries acknowledged (gone from
 * `inflight`) or sent again since (another slot) are stale and skipped. A Map alone
 * would do in principle, but finding its first live entry walks over every deleted
 * one still in its table: hundreds per call under a full window.
 */
export class OutWindow {
  readonly inflight = new Map<number, OutFlight>()
  readonly queue = new SendQueue()
  private lastId = 0
  private order: OutFlight[] = []
  private orderSlots: number[] = []
  private head = 0
  private slots = 0

  constructor(
    /** A reload may change it; a window over the new bound drains before it takes more. */
    public maxAckPending: number,
    /** Messages waiting beyond the window, at most (mqtt.max_queued_messages). */
    public maxQueued: number,
    /** Their payload bytes, at most (mqtt.max_queued_bytes; 0: no bound). */
    public maxQueuedBytes: number = 0
  ) {}

  /** Would `size` more bytes put the queue over a bound (the oldest then give way)? */
  queueFull(size: number): boolean {
    const q = this.queue
    return q.length >= this.maxQueued || (this.maxQueuedBytes > 0 && q.length > 0 && q.bytes + size > this.maxQueuedBytes)
  }

  /** Next unused packet id after the last one handed out, or undefined when all 65535 are in use. */
  nextPacketId(): number | undefined {
    if (this.inflight.size >= MAX_PACKET_ID) return undefined
    let id = this.lastId
    for (let i = 0; i < MAX_PACKET_ID; i++) {
      id = id >= MAX_PACKET_ID ? 1 : id + 1
      if (!this.inflight.has(id)) {
        this.lastId = id
        return id
      }
    }
    return undefined
  }

  /** Room for one more unacknowledged message? */
  hasRoom(): boolean {
    return this.inflight.size < this.maxAckPending && this.inflight.size < MAX_PACKET_ID
  }

  private seq = 0

  /** Adds an entry sent (or re-sent) just now; its deadline is the latest. */
  add(entry: Omit<OutFlight, "seq" | "slot"> & { seq?: number }): void {
    const seq = entry.seq ?? ++this.seq
    if (seq > this.seq) this.seq = seq
    const e: OutFlight = { ...entry, seq, slot: 0 }
    this.inflight.set(entry.packetId, e)
    this.enqueue(e)
  }

  /** A queued message goes out now under `packetId` (one object, no copies: the delivery path). */
  addSent(q: Queued, packetId: number, deadline: number): OutFlight {
    const e: OutFlight = {
      packetId,
      qos: q.qos,
      topic: q.topic,
      payload: q.payload,
      retain: q.retain,
      properties: q.properties,
      receivedAt: q.receivedAt,
      phase: "publish",
      ref: q.ref,
      deadline,
      seq: ++this.seq,
      slot: 0
    }
    this.inflight.set(packetId, e)
    this.enqueue(e)
    return e
  }

  /** Sets a new (latest) deadline on an entry and moves it to the end. */
  touch(entry: OutFlight, deadline: number): void {
    entry.deadline = deadline
    this.enqueue(entry)
  }

  /** Earliest redelivery deadline, if any. */
  nextDeadline(): number | undefined {
    return this.headLive()?.deadline
  }

  /** Entries due at `now`, earliest first. */
  due(now: number): OutFlight[] {
    const out: OutFlight[] = []
    this.headLive()
    for (let i = this.head; i < this.order.length; i++) {
      const e = this.order[i]
      if (!this.live(i)) continue
      if (e.deadline > now) break
      out.push(e)
    }
    return out
  }

  /** Appends `e` to deadline order under a new slot (its older records go stale). */
  private enqueue(e: OutFlight): void {
    e.slot = ++this.slots
    this.order.push(e)
    this.orderSlots.push(e.slot)
    // Stale records behind a live head (acknowledged out of order) are swept out once
    // they outnumber the live ones: the arrays stay within about twice the window.
    if (this.order.length - this.head > 2 * this.inflight.size + 1024) this.sweep()
  }

  private sweep(): void {
    const order: OutFlight[] = []
    const slots: number[] = []
    for (let i = this.head; i < this.order.length; i++) {
      if (!this.live(i)) continue
      order.push(this.order[i])
      slots.push(this.orderSlots[i])
    }
    this.order = order
    this.orderSlots = slots
    this.head = 0
  }

  private live(i: number): boolean {
    const e = this.order[i]
    return e.slot === this.orderSlots[i] && this.inflight.get(e.packetId) === e
  }

  /** The first live record (stale ones before it dropped), or undefined when none. */
  private headLive(): OutFlight | undefined {
    while (this.head < this.order.length && !this.live(this.head)) this.head++
    if (this.head === this.order.length) {
      this.order.length = 0
      this.orderSlots.length = 0
      this.head = 0
      return undefined
    }
    // Drop the consumed prefix now and then, so the arrays stay about as long as the window.
    if (this.head >= 1024 && this.head * 2 >= this.order.length) {
      this.order = this.order.slice(this.head)
      this.orderSlots = this.orderSlots.slice(this.head)
      this.head = 0
    }
    return this.order[this.head]
  }

  /** In-flight entries in order of first send. */
  inSendOrder(): OutFlight[] {
    return [...this.inflight.values()].sort((a, b) => a.seq - b.seq)
  }

  /** Restores `lastId` so ids continue after a restore. */
  setLastId(id: number): void {
    this.lastId = id
  }

  get lastPacketId(): number {
    return this.lastId
  }
}

/**
 * Inbound QoS 2 packet ids between PUBLISH and PUBREL: a PUBLISH repeating one of
 * them is a duplicate and is not routed again [MQTT-4.3.3-2]. `confirmed` is false
 * until the shell reports the message durable (only then is PUBREC sent).
 */
export class InQos2 {
  /** `code`: MQTT 5.0's PUBREC reason code when not Success (0x10), for a resent PUBLISH's PUBREC (in memory only). */
  readonly ids = new Map<number, { confirmed: boolean; code?: number }>()

  constructor(readonly max: number) {}

  has(id: number): boolean {
    return this.ids.has(id)
  }
}

/** Flapping protection: how often a client id was taken over recently. */
export interface FlapRecord {
  readonly times: ReadonlyArray<number>
}

/**
 * Records a takeover of a client id at `now` and says whether the id is flapping:
 * more than `maxTakeovers` takeovers within `windowMs`. The shell keeps one record
 * per client id and, when flapping, delays or refuses the newcomer.
 */
export const recordTakeover = (
  record: FlapRecord | undefined,
  now: number,
  windowMs: number,
  maxTakeovers: number
): { readonly record: FlapRecord; readonly flapping: boolean } => {
  const times = (record?.times ?? []).filter((t) => t > now - windowMs)
  times.push(now)
  return { record: { times }, flapping: times.length > maxTakeovers }
}

/** An acknowledgement of an inbound PUBLISH: PUBACK (QoS 1) or PUBREC (QoS 2). */
export type InboundAck = "puback" | "pubrec"

const WAITING = 0
const PUBACK = 1
const PUBREC = 2

/**
 * Acknowledgements of inbound QoS 1/2 PUBLISHes go out in the order the PUBLISHes came
 * [MQTT-4.6.0-2, -3], though the shell confirms them at different times: a message stored
 * for a persistent session waits for its commit, a duplicate or a message nobody keeps
 * is answered at once. An acknowledgement not yet confirmed holds back the ones after
 * it. Entries are packed numbers (packet id × 4 + kind): nothing is allocated per message.
 */
export class AckOrder {
  private entries: number[] = []
  private head = 0

  /** A PUBLISH whose acknowledgement waits for `confirm(id)`. */
  expect(id: number): void {
    this.entries.push(id * 4 + WAITING)
  }

  /** `id` is acknowledged with `ack`; take what may go out with `next()`. */
  confirm(id: number, ack: InboundAck): void {
    const entry = id * 4 + (ack === "puback" ? PUBACK : PUBREC)
    for (let i = this.head; i < this.entries.length; i++) {
      if (this.entries[i] === id * 4 + WAITING) {
        this.entries[i] = entry
        return
      }
    }
    // Not expected (a duplicate, a refused publish): in line behind the waiting ones.
    this.entries.push(entry)
  }

  /** The next acknowledgement that may go out, as a packed entry, or -1 while the first one waits. */
  next(): number {
    if (this.head === this.entries.length) return -1
    const e = this.entries[this.head]
    if (e % 4 === WAITING) return -1
    if (++this.head === this.entries.length) {
      this.entries.length = 0
      this.head = 0
    }
    return e
  }

  static packetId(entry: number): number {
    return entry >> 2
  }

  static ack(entry: number): InboundAck {
    return entry % 4 === PUBACK ? "puback" : "pubrec"
  }
}
