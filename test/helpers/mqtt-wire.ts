// Raw MQTT 3.1.1 bytes for tests that must send what no client library would:
// big-endian lengths, length-prefixed strings, the variable remaining length, frames.

export const u16 = (n: number): Buffer => Buffer.from([n >> 8, n & 0xff])
/** Length-prefixed binary data. */
export const bin = (b: Buffer): Buffer => Buffer.concat([u16(b.length), b])
/** A length-prefixed UTF-8 string (or raw bytes, to send malformed ones). */
export const str = (s: string | Buffer): Buffer => bin(typeof s === "string" ? Buffer.from(s, "utf8") : s)

/** The remaining-length encoding: 7 bits per byte, high bit = more. */
export const varLength = (n: number): Buffer => {
  const out: number[] = []
  do {
    let b = n % 128
    n = Math.floor(n / 128)
    if (n > 0) b |= 0x80
    out.push(b)
  } while (n > 0)
  return Buffer.from(out)
}

/** A packet: first byte, remaining length, body. */
export const frame = (first: number, body: Buffer = Buffer.alloc(0)): Buffer => Buffer.concat([Buffer.from([first]), varLength(body.length), body])
