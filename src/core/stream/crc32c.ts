// CRC-32C (Castagnoli), the checksum on every stored record. Slicing-by-16 over
// sixteen 256-entry tables, reading the aligned middle four bytes at a time: every
// published payload is checksummed, so this bounds the file store's write rate.

const POLY = 0x82f63b78 // reflected Castagnoli polynomial
const SLICES = 16

const TABLES: Uint32Array = (() => {
  const t = new Uint32Array(SLICES * 256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1
    t[n] = c >>> 0
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n]
    for (let k = 1; k < SLICES; k++) {
      c = t[c & 0xff] ^ (c >>> 8)
      t[k * 256 + n] = c >>> 0
    }
  }
  return t
})()

/** Word loads give the bytes in memory order only on a little-endian host. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1
/** Below this the word view costs more than it saves. */
const WORDS_FROM = 64

/** Continue a CRC-32C over `buf[start, end)`; start a fresh one with `crc = 0`. */
export const crc32c = (buf: Uint8Array, start = 0, end = buf.length, crc = 0): number => {
  const t = TABLES
  let c = ~crc >>> 0
  let i = start
  if (LITTLE_ENDIAN && end - start >= WORDS_FROM) {
    while (((buf.byteOffset + i) & 3) !== 0) c = t[(c ^ buf[i++]) & 0xff] ^ (c >>> 8)
    const words = ((end - i) >>> 4) << 2
    const w = new Int32Array(buf.buffer, buf.byteOffset + i, words)
    for (let k = 0; k < words; k += 4) {
      const a = c ^ w[k]
      const b = w[k + 1]
      const d = w[k + 2]
      const e = w[k + 3]
      c =
        t[3840 + (a & 0xff)] ^
        t[3584 + ((a >>> 8) & 0xff)] ^
        t[3328 + ((a >>> 16) & 0xff)] ^
        t[3072 + (a >>> 24)] ^
        t[2816 + (b & 0xff)] ^
        t[2560 + ((b >>> 8) & 0xff)] ^
        t[2304 + ((b >>> 16) & 0xff)] ^
        t[2048 + (b >>> 24)] ^
        t[1792 + (d & 0xff)] ^
        t[1536 + ((d >>> 8) & 0xff)] ^
        t[1280 + ((d >>> 16) & 0xff)] ^
        t[1024 + (d >>> 24)] ^
        t[768 + (e & 0xff)] ^
        t[512 + ((e >>> 8) & 0xff)] ^
        t[256 + ((e >>> 16) & 0xff)] ^
        t[e >>> 24]
    }
    i += words * 4
  }
  while (i < end) c = t[(c ^ buf[i++]) & 0xff] ^ (c >>> 8)
  return ~c >>> 0
}
