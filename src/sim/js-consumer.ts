// A simulated pull consumer: it creates (or re-binds to) the durable consumer PULL on
// the stream, keeps one fetch outstanding at a time, and answers each delivery with a
// seeded choice: +ACK, -NAK (redeliver now) or nothing (redelivered after ack_wait).
// Every delivery is reported to the JetStream model.
import type { ClientEnd, SimLink } from "./network.js"
import type { Rng } from "./rng.js"
import { SIM_STREAM } from "./js-client.js"
import { ServerOpParser } from "./wire.js"

export const SIM_CONSUMER = "PULL"
/** ack_wait of the simulated consumer, ms. */
export const SIM_ACK_WAIT_MS = 2_000
const FETCH_EXPIRES_MS = 500

export interface Delivery {
  readonly streamSeq: number
  readonly deliveryCount: number
  readonly subject: string
  readonly payload: Buffer
}

export class JsConsumer implements ClientEnd {
  state: "connecting" | "creating" | "ready" | "closed" = "connecting"
  link!: SimLink
  private readonly parser = new ServerOpParser()
  private fetches = 0
  /** The fetch outstanding: how many messages it may still bring, and when it is given up on. */
  private fetch: { left: number; until: number } | undefined
  delivered = 0
  acks = 0
  naks = 0

  constructor(
    readonly id: number,
    private readonly rng: Rng,
    private readonly now: () => number,
    /** Bytes one fetch may bring (the server's max_pending must hold them). */
    private readonly maxBytes: number,
    private readonly onDelivery: (d: Delivery) => void,
    private readonly trace: (line: string) => void
  ) {}

  private get inbox(): string {
    return `_JC.${this.id}`
  }

  onData(chunk: Buffer): void {
    for (const op of this.parser.feed(chunk)) {
      if (this.state === "closed") return
      switch (op.op) {
        case "INFO": {
          if (this.state !== "connecting") break
          this.state = "creating"
          this.send(`CONNECT {"verbose":false,"pedantic":false,"echo":true,"headers":true,"no_responders":true,"protocol":1,"lang":"sim-pull","version":"0"}\r\n`)
          this.send(`SUB ${this.inbox}.> 1\r\nPING\r\n`)
          const config = { durable_name: SIM_CONSUMER, ack_policy: "explicit", deliver_policy: "all", ack_wait: SIM_ACK_WAIT_MS * 1_000_000, max_deliver: -1 }
          this.pub(`$JS.API.CONSUMER.CREATE.${SIM_STREAM}.${SIM_CONSUMER}`, `${this.inbox}.create`, JSON.stringify({ stream_name: SIM_STREAM, config }))
          break
        }
        case "PING":
          this.send("PONG\r\n")
          break
        case "MSG":
          if (op.subject === `${this.inbox}.create`) {
            this.state = "ready"
            this.trace(`p${this.id} consumer create answered: ${op.payload.slice(0, 100)}`)
            this.pull()
          } else this.deliver(op.subject, op.reply, op.payload)
          break
        case "HMSG":
          // A status (404 no messages, 408 expired, 409 …) ends the fetch; a 503 means no stream yet.
          if (op.subject.startsWith(`${this.inbox}.`)) {
            if (op.subject === `${this.inbox}.create`) this.state = "ready"
            this.fetch = undefined
            this.pull()
          } else this.deliver(op.subject, op.reply, op.payload)
          break
        default:
          break
      }
    }
  }

  onClose(): void {
    this.state = "closed"
  }

  /** Called every step: re-issue a fetch the server lost (e.g. across its restart it never answers). */
  poll(): void {
    if (this.state !== "ready") return
    if (this.fetch !== undefined && this.now() > this.fetch.until) this.fetch = undefined
    this.pull()
  }

  private pull(): void {
    if (this.state !== "ready" || this.fetch !== undefined) return
    const batch = this.rng.int(1, 20)
    this.fetch = { left: batch, until: this.now() + FETCH_EXPIRES_MS + 1_000 }
    this.pub(`$JS.API.CONSUMER.MSG.NEXT.${SIM_STREAM}.${SIM_CONSUMER}`, `${this.inbox}.f${++this.fetches}`, JSON.stringify({ batch, max_bytes: this.maxBytes, expires: FETCH_EXPIRES_MS * 1_000_000 }))
  }

  private deliver(subject: string, reply: string, payload: string): void {
    // $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ts>.<pending>
    const t = reply.split(".")
    if (t[0] !== "$JS" || t[1] !== "ACK" || t.length < 9) {
      this.trace(`p${this.id} got a message without an ack subject: ${subject} '${reply}'`)
      return
    }
    this.delivered++
    this.onDelivery({ streamSeq: Number(t[5]), deliveryCount: Number(t[4]), subject, payload: Buffer.from(payload, "latin1") })
    const roll = this.rng.next()
    if (roll < 0.8) {
      this.acks++
      this.pub(reply, "", "+ACK")
    } else if (roll < 0.9) {
      this.naks++
      this.pub(reply, "", "-NAK")
    }
    if (this.fetch !== undefined && --this.fetch.left <= 0) {
      this.fetch = undefined
      this.pull()
    }
  }

  private pub(subject: string, reply: string, body: string): void {
    const b = Buffer.from(body, "latin1")
    this.send(`PUB ${subject}${reply === "" ? "" : ` ${reply}`} ${b.length}\r\n${body}\r\n`)
  }

  private send(s: string): void {
    if (this.state === "closed") return
    this.link.send(Buffer.from(s, "latin1"))
  }
}
