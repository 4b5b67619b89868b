// A simulated JetStream publisher: a small state machine over a SimLink. It connects,
// creates the stream (identical config: "already exists" answers with its info), then
// publishes seeded binary payloads with a reply subject each and reports every PubAck,
// error and no-responders status to the JetStream model.
import type { ClientEnd, SimLink } from "./network.js"
import type { Rng } from "./rng.js"
import { ServerOpParser } from "./wire.js"

export const SIM_STREAM = "SIM"
export const SIM_STREAM_SUBJECTS = ["js.>"] as const

/** One publish, as sent: its identity (`j<client>.<n>`), subject and exact bytes. */
export interface JsPub {
  readonly client: number
  readonly n: number
  readonly subject: string
  readonly payload: Buffer
}

export interface JsClientEvents {
  readonly acked: (pub: JsPub, seq: number, duplicate: boolean) => void
  readonly failed: (pub: JsPub, why: string) => void
}

export class JsClient implements ClientEnd {
  state: "connecting" | "creating" | "ready" | "closed" = "connecting"
  link!: SimLink
  private readonly parser = new ServerOpParser()
  private n = 0
  /** Published, not yet answered. */
  readonly pending = new Map<number, JsPub>()
  acks = 0
  errors = 0

  constructor(
    readonly id: number,
    private readonly rng: Rng,
    private readonly events: JsClientEvents,
    private readonly trace: (line: string) => void
  ) {}

  private get inbox(): string {
    return `_JS.${this.id}`
  }

  onData(chunk: Buffer): void {
    for (const op of this.parser.feed(chunk)) {
      if (this.state === "closed") return
      switch (op.op) {
        case "INFO":
          if (this.state !== "connecting") break
          this.state = "creating"
          this.send(`CONNECT {"verbose":false,"pedantic":false,"echo":true,"headers":true,"no_responders":true,"protocol":1,"lang":"sim-js","version":"0"}\r\n`)
          this.send(`SUB ${this.inbox}.* 1\r\nPING\r\n`)
          this.sendPub(`$JS.API.STREAM.CREATE.${SIM_STREAM}`, `${this.inbox}.0`, Buffer.from(JSON.stringify({ name: SIM_STREAM, subjects: SIM_STREAM_SUBJECTS, storage: "file" })))
          break
        case "PING":
          this.send("PONG\r\n")
          break
        case "MSG":
          this.answer(op.subject, op.payload, false)
          break
        case "HMSG":
          this.answer(op.subject, op.payload, op.headers.startsWith("NATS/1.0 503"))
          break
        default:
          break
      }
    }
  }

  onClose(): void {
    this.state = "closed"
  }

  private answer(subject: string, body: string, noResponders: boolean): void {
    const n = Number(subject.slice(this.inbox.length + 1))
    if (n === 0) {
      this.state = "ready"
      this.trace(`j${this.id} stream create answered: ${noResponders ? "no responders" : body.slice(0, 120)}`)
      return
    }
    const pub = this.pending.get(n)
    if (pub === undefined) return
    this.pending.delete(n)
    if (noResponders) {
      this.errors++
      this.events.failed(pub, "no responders")
      return
    }
    let ack: { seq?: number; duplicate?: boolean; error?: { description?: string } }
    try {
      ack = JSON.parse(body) as typeof ack
    } catch {
      this.errors++
      this.events.failed(pub, `unparsable answer ${body.slice(0, 60)}`)
      return
    }
    if (ack.error !== undefined || typeof ack.seq !== "number" || ack.seq <= 0) {
      this.errors++
      this.events.failed(pub, ack.error?.description ?? body.slice(0, 60))
      return
    }
    this.acks++
    this.events.acked(pub, ack.seq, ack.duplicate === true)
  }

  /** Publish `count` messages to `subject`, `size` seeded bytes each (any byte value). */
  publish(subject: string, count: number, size: () => number): void {
    for (let i = 0; i < count; i++) {
      const n = ++this.n
      const head = Buffer.from(`j${this.id}.${n}.`, "latin1")
      const body = Buffer.alloc(size())
      for (let b = 0; b < body.length; b++) body[b] = this.rng.int(0, 255)
      const pub: JsPub = { client: this.id, n, subject, payload: Buffer.concat([head, body]) }
      this.pending.set(n, pub)
      this.sendPub(subject, `${this.inbox}.${n}`, pub.payload)
    }
  }

  private sendPub(subject: string, reply: string, payload: Buffer): void {
    if (this.state === "closed") return
    this.link.send(Buffer.concat([Buffer.from(`PUB ${subject} ${reply} ${payload.length}\r\n`, "latin1"), payload, Buffer.from("\r\n")]))
  }

  private send(s: string): void {
    if (this.state === "closed") return
    this.link.send(Buffer.from(s, "latin1"))
  }
}
