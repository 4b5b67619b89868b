// The client side of the NATS protocol, just enough for simulated clients: an
// incremental parser of what a server sends (INFO, MSG, PING, PONG, +OK, -ERR).
export type ServerOp =
  | { readonly op: "INFO"; readonly json: string }
  | { readonly op: "MSG"; readonly subject: string; readonly sid: string; readonly reply: string; readonly payload: string }
  | { readonly op: "HMSG"; readonly subject: string; readonly sid: string; readonly reply: string; readonly headers: string; readonly payload: string }
  | { readonly op: "PING" }
  | { readonly op: "PONG" }
  | { readonly op: "OK" }
  | { readonly op: "ERR"; readonly message: string }
  | { readonly op: "UNKNOWN"; readonly line: string }

export class ServerOpParser {
  private buf = ""
  /** Bytes fed so far. */
  private fed = 0

  /** For each op the last `feed` returned, the stream offset just past it. */
  readonly ends: Array<number> = []

  /** Feed a chunk; returns every complete op in order (latin1, so payload bytes map 1:1 to chars). */
  feed(chunk: Buffer): Array<ServerOp> {
    this.buf += chunk.toString("latin1")
    this.fed += chunk.length
    this.ends.length = 0
    const out: Array<ServerOp> = []
    const push = (op: ServerOp): void => {
      out.push(op)
      this.ends.push(this.fed - this.buf.length)
    }
    for (;;) {
      const eol = this.buf.indexOf("\r\n")
      if (eol < 0) break
      const line = this.buf.slice(0, eol)
      if (line.startsWith("MSG ")) {
        const a = line.slice(4).split(" ")
        const size = Number(a[a.length - 1])
        const end = eol + 2 + size
        if (this.buf.length < end + 2) break
        const payload = this.buf.slice(eol + 2, end)
        this.buf = this.buf.slice(end + 2)
        push({ op: "MSG", subject: a[0], sid: a[1], reply: a.length === 4 ? a[2] : "", payload })
        continue
      }
      if (line.startsWith("HMSG ")) {
        const a = line.slice(5).split(" ")
        const hdr = Number(a[a.length - 2])
        const size = Number(a[a.length - 1])
        const end = eol + 2 + size
        if (this.buf.length < end + 2) break
        const headers = this.buf.slice(eol + 2, eol + 2 + hdr)
        const payload = this.buf.slice(eol + 2 + hdr, end)
        this.buf = this.buf.slice(end + 2)
        push({ op: "HMSG", subject: a[0], sid: a[1], reply: a.length === 5 ? a[2] : "", headers, payload })
        continue
      }
      this.buf = this.buf.slice(eol + 2)
      if (line.startsWith("INFO ")) push({ op: "INFO", json: line.slice(5) })
      else if (line === "PING") push({ op: "PING" })
      else if (line === "PONG") push({ op: "PONG" })
      else if (line === "+OK") push({ op: "OK" })
      else if (line.startsWith("-ERR")) push({ op: "ERR", message: line.slice(4).trim().replace(/^'(.*)'$/, "$1") })
      else push({ op: "UNKNOWN", line })
    }
    return out
  }
}
