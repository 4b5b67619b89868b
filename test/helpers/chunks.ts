// Cutting a byte stream into chunks, for parser tests that feed the same bytes every way.

/** One chunk per byte. */
export const bytewise = (b: Buffer): Array<Buffer> => Array.from({ length: b.length }, (_, i) => b.subarray(i, i + 1))

/** The buffer cut at the given offsets (taken modulo its length + 1, deduplicated, in order). */
export const chunksOf = (buf: Buffer, cuts: ReadonlyArray<number>): Array<Buffer> => {
  const points = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b)
  const out: Array<Buffer> = []
  let prev = 0
  for (const p of points) {
    out.push(buf.subarray(prev, p))
    prev = p
  }
  out.push(buf.subarray(prev))
  return out
}
