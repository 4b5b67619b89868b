// MQTT 3.1.1 as the load generator needs it, straight on bytes: CONNECT, SUBSCRIBE,
// pre-encoded PUBLISH batches whose packet ids are patched in place, tables of
// pre-encoded PUBACK/PUBREC/PUBREL/PUBCOMP packets (one per packet id, so a run of
// consecutive ids is answered with one slice of the table), and a reader that walks
// incoming packets by their remaining-length field and counts them without
// allocating per packet. Written from the MQTT 3.1.1 specification (OASIS), not from
// any client library.

/** Packet types (high nibble of the first byte). */
export const CONNACK = 2
export const PUBLISH = 3
export const PUBACK = 4
export const PUBREC = 5
export const PUBREL = 6
export const PUBCOMP = 7
export const SUBACK = 9
export const PINGRESP = 13

export const PINGREQ = Buffer.from([0xc0, 0x00])
export const DISCONNECT = Buffer.from([0xe0, 0x00])

/** Packet ids run 1..65535. */
export const MAX_ID = 65535

/** The variable-length "remaining length" of a fixed header. */
const remainingLength = (n: number): Array<number> => {
  const out: Array<number> = []
  do {
    let d = n % 128
    n = Math.floor(n / 128)
    if (n > 0) d |= 0x80
    out.push(d)
  } while (n > 0)
  return out
}

const str = (s: string): Buffer => {
  const b = Buffer.from(s, "utf8")
  const l = Buffer.allocUnsafe(2)
  l.writeUInt16BE(b.length, 0)
  return Buffer.concat([l, b])
}

const packet = (first: number, body: Buffer): Buffer =>
  Buffer.concat([Buffer.from([first, ...remainingLength(body.length)]), body])

/** MQTT 5.0: an empty property block (Property Length 0). */
const NO_PROPS = Buffer.from([0])

/**
 * CONNECT, protocol level 4 (3.1.1) or 5 (MQTT 5.0, no properties: a clean one's session
 * ends with it, a persistent one's never), no will, no credentials. keepAlive 0 = none.
 */
export const encodeConnect = (clientId: string, cleanSession = true, keepAlive = 0, v5 = false): Buffer => {
  const ka = Buffer.allocUnsafe(2)
  ka.writeUInt16BE(keepAlive, 0)
  // MQTT 5.0 persistence is the Session Expiry Interval: 0xFFFFFFFF for a persistent session
  const props = !v5 ? Buffer.alloc(0) : cleanSession ? NO_PROPS : Buffer.from([5, 0x11, 0xff, 0xff, 0xff, 0xff])
  return packet(0x10, Buffer.concat([str("MQTT"), Buffer.from([v5 ? 5 : 4, cleanSession ? 0x02 : 0x00]), ka, props, str(clientId)]))
}

/** SUBSCRIBE one filter at `qos` (MQTT 5.0: no properties, the options byte is the QoS). */
export const encodeSubscribe = (packetId: number, filter: string, qos: 0 | 1 | 2, v5 = false): Buffer => {
  const id = Buffer.allocUnsafe(2)
  id.writeUInt16BE(packetId, 0)
  return packet(0x82, Buffer.concat([id, ...(v5 ? [NO_PROPS] : []), str(filter), Buffer.from([qos])]))
}

export interface EncodedPublish {
  readonly buf: Buffer
  /** Offset of the 2-byte packet id inside `buf` (-1 for QoS 0). */
  readonly idOffset: number
}

/** One PUBLISH (no DUP, no RETAIN; MQTT 5.0: no properties); its packet id is 0 until patched. */
export const encodePublish = (topic: string, qos: 0 | 1 | 2, body: Buffer, v5 = false): EncodedPublish => {
  const t = str(topic)
  const id = qos > 0 ? Buffer.alloc(2) : Buffer.alloc(0)
  const rest = Buffer.concat([t, id, ...(v5 ? [NO_PROPS] : []), body])
  const head = Buffer.from([0x30 | (qos << 1), ...remainingLength(rest.length)])
  return { buf: Buffer.concat([head, rest]), idOffset: qos > 0 ? head.length + t.length : -1 }
}

/**
 * `n` copies of one PUBLISH in one buffer. For QoS 1/2 `patch(first, count)` writes the
 * packet ids first, first+1, ... (wrapping after 65535) into the first `count` copies.
 * The buffer must not be patched while a write of it is still queued on a socket.
 */
export class PublishBatch {
  readonly buf: Buffer
  readonly msgLen: number
  private readonly idOffset: number

  constructor(
    msg: EncodedPublish,
    readonly n: number
  ) {
    this.msgLen = msg.buf.length
    this.idOffset = msg.idOffset
    this.buf = Buffer.allocUnsafe(n * msg.buf.length)
    for (let i = 0; i < n; i++) msg.buf.copy(this.buf, i * msg.buf.length)
  }

  /** Patch ids for the first `count` messages, starting at `first`; returns the next id. */
  patch(first: number, count: number): number {
    let id = first
    let off = this.idOffset
    for (let i = 0; i < count; i++) {
      this.buf[off] = id >> 8
      this.buf[off + 1] = id & 0xff
      off += this.msgLen
      id = id === MAX_ID ? 1 : id + 1
    }
    return id
  }
}

/**
 * Every 4-byte acknowledgement packet of one type, in packet-id order: the packet for
 * id `i` is bytes [4(i-1), 4i). Immutable, so slices of it can be queued on sockets.
 */
export class AckTable {
  readonly table: Buffer
  constructor(first: number) {
    this.table = Buffer.allocUnsafe(MAX_ID * 4)
    for (let id = 1; id <= MAX_ID; id++) {
      const o = (id - 1) * 4
      this.table[o] = first
      this.table[o + 1] = 2
      this.table[o + 2] = id >> 8
      this.table[o + 3] = id & 0xff
    }
  }
}

let tables: Record<"puback" | "pubrec" | "pubrel" | "pubcomp", AckTable> | undefined
export const ackTables = () => {
  if (tables === undefined) {
    tables = {
      puback: new AckTable(0x40),
      pubrec: new AckTable(0x50),
      pubrel: new AckTable(0x62),
      pubcomp: new AckTable(0x70)
    }
  }
  return tables
}

/**
 * Answers packet ids with one table, coalescing runs of consecutive ids into one
 * write; call `add` per id and `flush` at the end of each received chunk.
 */
export class AckWriter {
  private start = 0
  private end = 0
  writes = 0
  constructor(
    private readonly table: AckTable,
    private readonly write: (b: Buffer) => void
  ) {}

  add(id: number): void {
    if (this.start !== 0 && id === this.end + 1) {
      this.end = id
      return
    }
    this.flush()
    this.start = id
    this.end = id
  }

  flush(): void {
    if (this.start === 0) return
    this.writes++
    this.write(this.table.table.subarray((this.start - 1) * 4, this.end * 4))
    this.start = 0
  }
}

/**
 * Incremental reader of broker-to-client bytes. A PUBLISH costs a look at its first
 * byte, its remaining length, its topic length and (QoS 1/2) its packet id; its
 * payload is jumped over. Only a fixed header or topic split across chunks is copied.
 */
export class MqttReader {
  publishes = 0
  payloadBytes = 0
  connack = -1
  pubacks = 0
  pubrecs = 0
  pubrels = 0
  pubcomps = 0
  subacks = 0
  pingresps = 0
  /** Granted QoS of the last SUBACK (0x80 = failure). */
  subackCode = -1
  readonly errors: Array<string> = []

  /** Incoming PUBLISH (qos, packet id or 0). */
  onPublish: ((qos: number, id: number) => void) | undefined
  /** PUBACK / PUBREC / PUBREL / PUBCOMP / SUBACK with their packet id. */
  onAck: ((type: number, id: number) => void) | undefined
  onConnack: ((code: number) => void) | undefined
  onPingresp: (() => void) | undefined
  /** After each chunk (flush coalesced answers here). */
  onChunkEnd: (() => void) | undefined

  private skip = 0
  private carry: Buffer | undefined

  /** MQTT 5.0: a PUBLISH has a property block after its packet id (acknowledgements' short forms read as 3.1.1's). */
  constructor(readonly v5 = false) {}

  feed(chunk: Buffer): void {
    let b = chunk
    let pos = 0
    if (this.skip > 0) {
      if (this.skip >= b.length) {
        this.skip -= b.length
        return
      }
      pos = this.skip
      this.skip = 0
    }
    if (this.carry !== undefined) {
      b = Buffer.concat([this.carry, b.subarray(pos)])
      this.carry = undefined
      pos = 0
    }
    const len = b.length
    while (pos < len) {
      const first = b[pos]!
      // remaining length: up to 4 bytes
      let rem = 0
      let mul = 1
      let i = pos + 1
      let complete = false
      while (i < len && i < pos + 5) {
        const d = b[i++]!
        rem += (d & 0x7f) * mul
        mul *= 128
        if ((d & 0x80) === 0) {
          complete = true
          break
        }
      }
      if (!complete) {
        this.carry = Buffer.from(b.subarray(pos))
        break
      }
      const body = i
      const type = first >> 4
      const next = body + rem
      if (type === PUBLISH) {
        const qos = (first >> 1) & 3
        // topic length, topic, packet id must be here; the payload may run on
        if (body + 2 > len) {
          this.carry = Buffer.from(b.subarray(pos))
          break
        }
        const tlen = (b[body]! << 8) | b[body + 1]!
        const idAt = body + 2 + tlen
        let headEnd = idAt + (qos > 0 ? 2 : 0)
        // MQTT 5.0: the Property Length (a Variable Byte Integer) must be here too
        let vbiEnd = headEnd
        if (this.v5) while (vbiEnd < len && vbiEnd < headEnd + 4 && (b[vbiEnd]! & 0x80) !== 0) vbiEnd++
        if (headEnd > len || (this.v5 && vbiEnd >= len)) {
          this.carry = Buffer.from(b.subarray(pos))
          break
        }
        if (this.v5) {
          let plen = 0
          for (let k = headEnd, m = 1; k <= vbiEnd; k++, m *= 128) plen += (b[k]! & 0x7f) * m
          headEnd = vbiEnd + 1 + plen
        }
        const id = qos > 0 ? (b[idAt]! << 8) | b[idAt + 1]! : 0
        this.publishes++
        this.payloadBytes += next - headEnd
        if (this.onPublish !== undefined) this.onPublish(qos, id)
      } else {
        if (next > len) {
          this.carry = Buffer.from(b.subarray(pos))
          break
        }
        const id = rem >= 2 ? (b[body]! << 8) | b[body + 1]! : 0
        switch (type) {
          case PUBACK:
            this.pubacks++
            if (this.onAck !== undefined) this.onAck(type, id)
            break
          case PUBREC:
            this.pubrecs++
            if (this.onAck !== undefined) this.onAck(type, id)
            break
          case PUBREL:
            this.pubrels++
            if (this.onAck !== undefined) this.onAck(type, id)
            break
          case PUBCOMP:
            this.pubcomps++
            if (this.onAck !== undefined) this.onAck(type, id)
            break
          case SUBACK:
            this.subacks++
            this.subackCode = b[next - 1]!
            if (this.onAck !== undefined) this.onAck(type, id)
            break
          case CONNACK:
            this.connack = b[body + 1]!
            if (this.onConnack !== undefined) this.onConnack(this.connack)
            break
          case PINGRESP:
            this.pingresps++
            if (this.onPingresp !== undefined) this.onPingresp()
            break
          default:
            this.errors.push(`unexpected packet type ${type}`)
        }
      }
      pos = next
      if (pos > len) {
        this.skip = pos - len
        break
      }
    }
    if (this.onChunkEnd !== undefined) this.onChunkEnd()
  }
}
