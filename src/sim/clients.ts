// Simulated NATS clients: small state machines over a SimLink. They connect (INFO →
// CONNECT), publish sequence-numbered payloads (`<client>.<seq>.` + padding), subscribe
// (plain, queue groups, auto-unsubscribe after max), answer requests, and record
// everything they sent and received for the invariants.
import type { ClientEnd, SimLink } from "./network.js"
import { ServerOpParser } from "./wire.js"

export interface Received {
  readonly sid: string
  readonly subject: string
  readonly reply: string
  /** `<publisher>.<seq>`, the message's identity. */
  readonly key: string
  readonly bytes: number
  /** A no-responders status (HMSG 503) rather than a published message. */
  readonly noResponders: boolean
  /** Where the op ended in the server→client byte stream. */
  readonly at: number
}

export interface ClientSub {
  readonly sid: string
  readonly subject: string
  readonly queue: string
  readonly responder: boolean
}

/** Messages carry their publisher id and sequence, so the invariants can identify each one. */
export const payloadFor = (pubId: number, seq: number, pad: number): string => `${pubId}.${seq}.${"x".repeat(pad)}`
export const keyOf = (payload: string): string => {
  const dot = payload.indexOf(".")
  const end = payload.indexOf(".", dot + 1)
  return end < 0 ? payload : payload.slice(0, end)
}

export class SimClient implements ClientEnd {
  state: "connecting" | "ready" | "closed" = "connecting"
  link!: SimLink
  private readonly parser = new ServerOpParser()
  private nextSid = 1
  seq = 0
  readonly subs = new Map<string, ClientSub>()
  readonly received: Array<Received> = []
  receivedBytes = 0
  readonly errors: Array<string> = []
  pubs = 0
  pubBytes = 0
  requests = 0
  pingsAnswered = 0

  constructor(
    readonly id: number,
    readonly echo: boolean,
    /** Announces headers and no_responders in CONNECT, so requests nobody serves get a 503. */
    readonly headers: boolean,
    private readonly trace: (line: string) => void
  ) {}

  get inbox(): string {
    return `_INBOX.${this.id}`
  }

  // ---- ClientEnd ----

  onData(chunk: Buffer): void {
    const ops = this.parser.feed(chunk)
    const ends = this.parser.ends
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]
      const at = ends[i]
      if (this.state === "closed") return
      switch (op.op) {
        case "INFO":
          if (this.state === "connecting") {
            this.state = "ready"
            const nonce = (JSON.parse(op.json) as { nonce?: string }).nonce
            if (nonce !== undefined) this.trace(`c${this.id} nonce ${nonce}`)
            this.send(`CONNECT {"verbose":false,"pedantic":false,"echo":${this.echo},"headers":${this.headers},"no_responders":${this.headers},"protocol":1,"lang":"sim","version":"0"}\r\nPING\r\n`)
            this.subscribe(`${this.inbox}.*`, "", false)
          }
          break
        case "PING":
          this.pingsAnswered++
          this.send("PONG\r\n")
          break
        case "MSG": {
          const key = keyOf(op.payload)
          this.received.push({ sid: op.sid, subject: op.subject, reply: op.reply, key, bytes: op.payload.length, noResponders: false, at })
          this.receivedBytes += op.payload.length
          const sub = this.subs.get(op.sid)
          if (sub?.responder === true && op.reply !== "") this.publish(op.reply, 0, "")
          break
        }
        case "HMSG":
          // Simulated publishers send no headers: the only HMSG is a no-responders status.
          if (op.headers.startsWith("NATS/1.0 503")) {
            this.received.push({ sid: op.sid, subject: op.subject, reply: "", key: `503:${op.subject}`, bytes: 0, noResponders: true, at })
          } else this.errors.push(`unexpected HMSG headers ${JSON.stringify(op.headers)}`)
          break
        case "ERR":
          this.errors.push(op.message)
          this.trace(`c${this.id} got -ERR '${op.message}'`)
          break
        case "UNKNOWN":
          this.errors.push(`unknown line: ${op.line.slice(0, 60)}`)
          break
        default:
          break
      }
    }
  }

  onClose(): void {
    this.state = "closed"
  }

  // ---- actions ----

  subscribe(subject: string, queue: string, responder: boolean): ClientSub {
    const sid = String(this.nextSid++)
    const sub = { sid, subject, queue, responder }
    this.subs.set(sid, sub)
    this.send(queue === "" ? `SUB ${subject} ${sid}\r\n` : `SUB ${subject} ${queue} ${sid}\r\n`)
    return sub
  }

  unsubscribe(sid: string, max: number): void {
    if (max <= 0) this.subs.delete(sid)
    this.send(max > 0 ? `UNSUB ${sid} ${max}\r\n` : `UNSUB ${sid}\r\n`)
  }

  publish(subject: string, pad: number, reply: string): void {
    const payload = payloadFor(this.id, ++this.seq, pad)
    this.pubs++
    this.pubBytes += payload.length
    this.send(`PUB ${subject}${reply === "" ? "" : ` ${reply}`} ${payload.length}\r\n${payload}\r\n`)
  }

  request(subject: string, pad: number): void {
    this.requests++
    this.publish(subject, pad, `${this.inbox}.${this.requests}`)
  }

  hasResponder(): boolean {
    for (const s of this.subs.values()) if (s.responder) return true
    return false
  }

  private send(s: string): void {
    if (this.state === "closed") return
    this.link.send(Buffer.from(s, "latin1"))
  }
}
