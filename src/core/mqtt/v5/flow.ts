// Flow control (section 4.9) and Maximum Packet Size, as counters a session holds per
// network connection. Receive Maximum bounds the QoS 1/2 PUBLISHes not yet
// acknowledged in each direction; Maximum Packet Size bounds every packet, and a
// delivery too large for the client is dropped and counted, never sent.
import { ReasonCode } from "./reason.js"
import { PacketError } from "./reader.js"

/** Receive Maximum when a CONNECT or CONNACK leaves it out (3.1.2.11.3, 3.2.2.3.3). */
export const DEFAULT_RECEIVE_MAXIMUM = 65_535

/**
 * What the client has in flight towards the server: QoS 1 and QoS 2 PUBLISHes the
 * server has not finished acknowledging (PUBACK sent; PUBCOMP sent; or a PUBREC with a
 * failure code). More than the server's Receive Maximum is 0x93 [MQTT-3.3.4-7].
 */
export class InboundQuota {
  private readonly inFlight = new PacketIdSet()

  /** `receiveMaximum`: what the server sent in CONNACK (65,535 when it sent none). */
  constructor(readonly receiveMaximum: number = DEFAULT_RECEIVE_MAXIMUM) {}

  /**
   * A QoS 1/2 PUBLISH with `packetId` arrived. A resend of one still in flight (a QoS 2
   * PUBLISH with DUP before its PUBREL) takes no second place. Throws 0x93 past the maximum.
   */
  received(packetId: number): void {
    if (this.inFlight.has(packetId)) return
    if (this.inFlight.size >= this.receiveMaximum) {
      throw new PacketError(
        ReasonCode.ReceiveMaximumExceeded,
        `more than Receive Maximum (${this.receiveMaximum}) QoS 1/2 PUBLISH packets unacknowledged`,
        "MQTT-3.3.4-7"
      )
    }
    this.inFlight.add(packetId)
  }

  /** The server sent the packet that ends `packetId`'s exchange (see `endsExchange`). */
  completed(packetId: number): void {
    this.inFlight.delete(packetId)
  }

  get size(): number {
    return this.inFlight.size
  }
}

/**
 * A set of packet identifiers (1..65535), for the per-message path: open addressing with
 * linear probing in a Uint16Array (0 marks a free slot), at most half full, grown by
 * doubling; a deletion moves the entries after it back, so no tombstones build up. A
 * `Set<number>` cost ~8% of an MQTT 5.0 QoS 1 flow's server time in its add and delete;
 * this holds 2 bytes a slot (16 slots to start, 256 KiB at 65,535 identifiers).
 */
export class PacketIdSet {
  private slots = new Uint16Array(16)
  private mask = 15
  private count = 0

  get size(): number {
    return this.count
  }

  has(id: number): boolean {
    return this.slots[this.find(id)] === id
  }

  /** Adds `id` (1..65535); false when it was there already. */
  add(id: number): boolean {
    let i = this.find(id)
    if (this.slots[i] === id) return false
    if ((this.count + 1) * 2 > this.slots.length) {
      this.grow()
      i = this.find(id)
    }
    this.slots[i] = id
    this.count++
    return true
  }

  /** Removes `id`; false when it was not there. */
  delete(id: number): boolean {
    const slots = this.slots
    const mask = this.mask
    let hole = this.find(id)
    if (slots[hole] !== id) return false
    slots[hole] = 0
    this.count--
    // Later entries of the same run move back into the hole when their home slot is not
    // between the hole and where they sit (cyclically), so every probe still finds them.
    for (let j = (hole + 1) & mask; slots[j] !== 0; j = (j + 1) & mask) {
      const home = slot(slots[j], mask)
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j
      if (stays) continue
      slots[hole] = slots[j]
      slots[j] = 0
      hole = j
    }
    return true
  }

  /** The slot holding `id`, or the free slot where it would go. */
  private find(id: number): number {
    const slots = this.slots
    const mask = this.mask
    let i = slot(id, mask)
    while (slots[i] !== 0 && slots[i] !== id) i = (i + 1) & mask
    return i
  }

  private grow(): void {
    const old = this.slots
    this.slots = new Uint16Array(old.length * 2)
    this.mask = this.slots.length - 1
    for (let k = 0; k < old.length; k++) {
      const id = old[k]
      if (id !== 0) this.slots[this.find(id)] = id
    }
  }
}

/** The home slot of a packet id: consecutive ids spread over the table (Fibonacci hashing). */
const slot = (id: number, mask: number): number => (Math.imul(id, 0x9e3779b1) >>> 15) & mask

/**
 * Does an acknowledgement end a QoS 1/2 exchange for flow control, in either direction
 * (4.9, [MQTT-3.3.4-7], [MQTT-3.3.4-9])? PUBACK and PUBCOMP do; a PUBREC only with a
 * failure code (no PUBREL follows it).
 */
export const endsExchange = (cmd: "puback" | "pubrec" | "pubcomp", reasonCode: number): boolean =>
  cmd !== "pubrec" || reasonCode >= 0x80

/**
 * The server's send quota towards the client (4.9): it starts at the client's Receive
 * Maximum [MQTT-4.9.0-1], each QoS 1/2 PUBLISH sent takes one, and none is sent at zero
 * [MQTT-4.9.0-2]; QoS 0 and every other packet go regardless [MQTT-3.3.4-10]. A new
 * connection starts a new quota, and the in-flight messages resent on it take theirs again.
 */
export class SendQuota {
  private left: number

  /** `receiveMaximum`: the client's, from CONNECT (65,535 when it sent none). */
  constructor(readonly receiveMaximum: number = DEFAULT_RECEIVE_MAXIMUM) {
    this.left = receiveMaximum
  }

  get available(): number {
    return this.left
  }

  /** Takes a place for a QoS 1/2 PUBLISH; false (nothing taken) when there is none: the message waits. */
  take(): boolean {
    if (this.left === 0) return false
    this.left--
    return true
  }

  /** A PUBACK, a PUBCOMP or a PUBREC with a failure code came (see `endsExchange`): one place back, never above the maximum. */
  release(): void {
    if (this.left < this.receiveMaximum) this.left++
  }
}

/**
 * The client's Maximum Packet Size on what the server sends [MQTT-3.1.2-24]. A PUBLISH
 * over it is discarded as if it had been sent [MQTT-3.1.2-25] (the caller acknowledges a
 * QoS 1/2 message to its store and takes no packet identifier or quota for it) and
 * counted, so `/connz` and the logs can tell.
 */
export class PacketSizeLimit {
  dropped = 0
  droppedBytes = 0

  /** `maximumPacketSize`: the client's, from CONNECT; absent means the protocol's own limit. */
  constructor(readonly maximumPacketSize: number = Number.POSITIVE_INFINITY) {}

  /** May a packet of `size` bytes (fixed header included) be sent? A delivery that may not is counted as dropped. */
  admitDelivery(size: number): boolean {
    if (size <= this.maximumPacketSize) return true
    this.dropped++
    this.droppedBytes += size
    return false
  }
}
