// The file store's on-disk records and the scan that recovers them. A block file
// is a run of records, each framed as
//   magic u8 | type u8 | length u32 (whole record) | body | crc32c u32 (all before it)
// Integers are little-endian; sequences are 48-bit (6 bytes), times float64 ms.
//   MSG   seq, ts, flags (bit 0: has headers), subject len u16, headers len u32,
//         subject, headers, payload (the rest)
//   DEL   seq                     one message removed
//   FLOOR seq                     every message below seq removed
//   STATE floor, last, lastTs     written first in each new block, so the newest
//                                 block alone knows the sequence high-water mark
import { crc32c } from "./crc32c.js"

export const MAGIC = 0xd7
export const RecordType = { Msg: 1, Del: 2, Floor: 3, State: 4 } as const
export type RecordType = (typeof RecordType)[keyof typeof RecordType]

const HEADER = 6
const CRC = 4
const MSG_FIXED = HEADER + 6 + 8 + 1 + 2 + 4 + CRC
export const DEL_LEN = HEADER + 6 + CRC
export const FLOOR_LEN = DEL_LEN
export const STATE_LEN = HEADER + 6 + 6 + 8 + CRC
/** Larger than any message the server accepts; guards recovery against garbage lengths. */
export const MAX_RECORD = 256 * 1024 * 1024

export const msgRecordLen = (subjectLen: number, hdrLen: number, payloadLen: number): number =>
  MSG_FIXED + subjectLen + hdrLen + payloadLen

const seal = (buf: Buffer, off: number, len: number): void => {
  buf.writeUInt32LE(crc32c(buf, off, off + len - CRC), off + len - CRC)
}

const frame = (buf: Buffer, off: number, type: RecordType, len: number): void => {
  buf[off] = MAGIC
  buf[off + 1] = type
  buf.writeUInt32LE(len, off + 2)
}

/** Write a MSG record at `off`; `subjectLen` is the subject's UTF-8 length. Returns its length. */
export const encodeMsg = (
  buf: Buffer,
  off: number,
  seq: number,
  ts: number,
  subject: string,
  subjectLen: number,
  hdr: Uint8Array | undefined,
  payload: Uint8Array
): number => {
  const hdrLen = hdr === undefined ? 0 : hdr.length
  const len = msgRecordLen(subjectLen, hdrLen, payload.length)
  frame(buf, off, RecordType.Msg, len)
  let p = off + HEADER
  buf.writeUIntLE(seq, p, 6)
  buf.writeDoubleLE(ts, p + 6)
  buf[p + 14] = hdr === undefined ? 0 : 1
  buf.writeUInt16LE(subjectLen, p + 15)
  buf.writeUInt32LE(hdrLen, p + 17)
  p += 21
  if (subjectLen === subject.length) {
    // ASCII (the usual case): a byte loop beats Buffer.write's encoding lookup on short strings.
    for (let i = 0; i < subjectLen; i++) buf[p + i] = subject.charCodeAt(i)
    p += subjectLen
  } else p += buf.write(subject, p, "utf8")
  if (hdr !== undefined) {
    buf.set(hdr, p)
    p += hdrLen
  }
  buf.set(payload, p)
  seal(buf, off, len)
  return len
}

const encodeSeqRecord = (buf: Buffer, off: number, type: RecordType, seq: number): number => {
  frame(buf, off, type, DEL_LEN)
  buf.writeUIntLE(seq, off + HEADER, 6)
  seal(buf, off, DEL_LEN)
  return DEL_LEN
}

export const encodeDel = (buf: Buffer, off: number, seq: number): number => encodeSeqRecord(buf, off, RecordType.Del, seq)
export const encodeFloor = (buf: Buffer, off: number, seq: number): number =>
  encodeSeqRecord(buf, off, RecordType.Floor, seq)

export const encodeState = (buf: Buffer, off: number, floor: number, last: number, lastTs: number): number => {
  frame(buf, off, RecordType.State, STATE_LEN)
  buf.writeUIntLE(floor, off + HEADER, 6)
  buf.writeUIntLE(last, off + HEADER + 6, 6)
  buf.writeDoubleLE(lastTs, off + HEADER + 12)
  seal(buf, off, STATE_LEN)
  return STATE_LEN
}

const minLen = (type: number): number =>
  type === RecordType.Msg ? MSG_FIXED : type === RecordType.State ? STATE_LEN : type === RecordType.Del || type === RecordType.Floor ? DEL_LEN : 0

/**
 * The length of the well-formed record at `off`, or 0 when the bytes there are
 * not one (wrong magic or type, impossible length, runs past `end`, bad checksum).
 */
export const recordAt = (buf: Buffer, off: number, end: number): number => {
  if (end - off < HEADER + CRC || buf[off] !== MAGIC) return 0
  const type = buf[off + 1]
  const min = minLen(type)
  if (min === 0) return 0
  const len = buf.readUInt32LE(off + 2)
  if (len < min || len > MAX_RECORD || off + len > end) return 0
  if (type !== RecordType.Msg && len !== min) return 0
  if (type === RecordType.Msg) {
    const subjectLen = buf.readUInt16LE(off + HEADER + 15)
    const hdrLen = buf.readUInt32LE(off + HEADER + 17)
    if (MSG_FIXED + subjectLen + hdrLen > len) return 0
  }
  return crc32c(buf, off, off + len - CRC) === buf.readUInt32LE(off + len - CRC) ? len : 0
}

export const recordType = (buf: Buffer, off: number): RecordType => buf[off + 1] as RecordType

/** The sequence of a MSG, DEL or FLOOR record (the floor of a STATE record). */
export const recordSeq = (buf: Buffer, off: number): number => buf.readUIntLE(off + HEADER, 6)

export interface StateRecord {
  readonly floor: number
  readonly last: number
  readonly lastTs: number
}

export const decodeState = (buf: Buffer, off: number): StateRecord => ({
  floor: buf.readUIntLE(off + HEADER, 6),
  last: buf.readUIntLE(off + HEADER + 6, 6),
  lastTs: buf.readDoubleLE(off + HEADER + 12)
})

export interface MsgRecord {
  readonly seq: number
  readonly ts: number
  readonly subject: string
  /** Views into the block buffer: read-only. */
  readonly headers: Uint8Array | undefined
  readonly payload: Uint8Array
}

export const decodeMsg = (buf: Buffer, off: number, len: number): MsgRecord => {
  const p = off + HEADER
  const seq = buf.readUIntLE(p, 6)
  const ts = buf.readDoubleLE(p + 6)
  const hasHdr = (buf[p + 14] & 1) === 1
  const subjectLen = buf.readUInt16LE(p + 15)
  const hdrLen = buf.readUInt32LE(p + 17)
  const s = p + 21
  const subject = buf.toString("utf8", s, s + subjectLen)
  const h = s + subjectLen
  const headers = hasHdr ? buf.subarray(h, h + hdrLen) : undefined
  const payload = buf.subarray(h + hdrLen, off + len - CRC)
  return { seq, ts, subject, headers, payload }
}

/** Time, headers and payload of a MSG record (the caller knows its subject). */
export const msgBody = (buf: Buffer, off: number, len: number): { ts: number; headers: Uint8Array | undefined; payload: Uint8Array } => {
  const p = off + HEADER
  const subjectLen = buf.readUInt16LE(p + 15)
  const hdrLen = buf.readUInt32LE(p + 17)
  const h = p + 21 + subjectLen
  return {
    ts: buf.readDoubleLE(p + 6),
    headers: (buf[p + 14] & 1) === 1 ? buf.subarray(h, h + hdrLen) : undefined,
    payload: buf.subarray(h + hdrLen, off + len - CRC)
  }
}

/** Subject, time and content length of a MSG record without copying its payload; its headers start at `hdrAt`. */
export const msgHead = (
  buf: Buffer,
  off: number,
  len: number
): { seq: number; ts: number; subject: string; subjectLen: number; hdrAt: number; hdrLen: number; payloadLen: number } => {
  const p = off + HEADER
  const subjectLen = buf.readUInt16LE(p + 15)
  const hdrLen = buf.readUInt32LE(p + 17)
  return {
    seq: buf.readUIntLE(p, 6),
    ts: buf.readDoubleLE(p + 6),
    subject: buf.toString("utf8", p + 21, p + 21 + subjectLen),
    subjectLen,
    hdrAt: p + 21 + subjectLen,
    hdrLen: (buf[p + 14] & 1) === 1 ? hdrLen : 0,
    payloadLen: len - MSG_FIXED - subjectLen - hdrLen
  }
}

export interface ScanResult {
  /** Damaged stretches followed by good records: never dropped silently. */
  readonly bad: ReadonlyArray<{ readonly offset: number; readonly length: number }>
  /** Where unreadable bytes run to the end (a torn write), if they do. */
  readonly tornAt: number | undefined
}

/**
 * Walk the records of `buf[0, end)`, calling `visit` for each good one. After a
 * bad record it resynchronises on the next offset holding a well-formed record,
 * so one flipped bit costs one record, not the rest of the block.
 */
export const scanRecords = (
  buf: Buffer,
  end: number,
  visit: (type: RecordType, off: number, len: number) => void
): ScanResult => {
  const bad: Array<{ offset: number; length: number }> = []
  let off = 0
  while (off < end) {
    const len = recordAt(buf, off, end)
    if (len > 0) {
      visit(recordType(buf, off), off, len)
      off += len
      continue
    }
    let next = off + 1
    while (next < end && (buf[next] !== MAGIC || recordAt(buf, next, end) === 0)) next++
    if (next >= end) return { bad, tornAt: off }
    bad.push({ offset: off, length: next - off })
    off = next
  }
  return { bad, tornAt: undefined }
}

// Small checksummed files (stream config, consumer state): "SYM1" | crc32c | len | data.
const META_MAGIC = 0x314d5953

export const encodeMeta = (data: Uint8Array): Buffer => {
  const out = Buffer.allocUnsafe(12 + data.length)
  out.writeUInt32LE(META_MAGIC, 0)
  out.writeUInt32LE(data.length, 8)
  out.set(data, 12)
  out.writeUInt32LE(crc32c(out, 8, out.length), 4)
  return out
}

/** The data of a meta file, or undefined when it is damaged. */
export const decodeMeta = (file: Uint8Array): Uint8Array | undefined => {
  if (file.length < 12) return undefined
  const b = Buffer.from(file.buffer, file.byteOffset, file.length)
  if (b.readUInt32LE(0) !== META_MAGIC || b.readUInt32LE(8) !== file.length - 12) return undefined
  if (crc32c(b, 8, b.length) !== b.readUInt32LE(4)) return undefined
  return b.subarray(12)
}

// The sync mark: a small file per stream, `synced`, of two 32-byte slots written in turn
// (a write torn by a power cut spoils only the slot being written):
//   magic "SYN1" | crc32c u32 (of the rest) | generation u48 | synced u48 | reserved u48 | floor u48
// `synced` is a sequence every message up to which was on stable storage when the slot
// was written (so recovery finding less has lost synced data, not a torn write);
// `reserved` is the highest sequence acknowledged or about to be; `floor`, once data was
// lost, the sequence up to which none is handed out again (0 otherwise).
const MARK_MAGIC = 0x314e5953
export const SYNC_MARK_SLOT = 32

export interface SyncMark {
  readonly gen: number
  readonly synced: number
  readonly reserved: number
  readonly floor: number
}

/** The slot for `mark` (its place in the file is `(gen % 2) * SYNC_MARK_SLOT`). */
export const encodeSyncMark = (mark: SyncMark): Buffer => {
  const b = Buffer.alloc(SYNC_MARK_SLOT)
  b.writeUInt32LE(MARK_MAGIC, 0)
  b.writeUIntLE(mark.gen, 8, 6)
  b.writeUIntLE(mark.synced, 14, 6)
  b.writeUIntLE(mark.reserved, 20, 6)
  b.writeUIntLE(mark.floor, 26, 6)
  b.writeUInt32LE(crc32c(b, 8, SYNC_MARK_SLOT), 4)
  return b
}

/** The newest intact slot of a sync-mark file; undefined when neither is intact. */
export const decodeSyncMark = (file: Uint8Array): SyncMark | undefined => {
  const b = Buffer.from(file.buffer, file.byteOffset, file.length)
  let best: SyncMark | undefined
  for (let off = 0; off + SYNC_MARK_SLOT <= b.length && off < 2 * SYNC_MARK_SLOT; off += SYNC_MARK_SLOT) {
    if (b.readUInt32LE(off) !== MARK_MAGIC || crc32c(b, off + 8, off + SYNC_MARK_SLOT) !== b.readUInt32LE(off + 4)) continue
    const m = { gen: b.readUIntLE(off + 8, 6), synced: b.readUIntLE(off + 14, 6), reserved: b.readUIntLE(off + 20, 6), floor: b.readUIntLE(off + 26, 6) }
    if (best === undefined || m.gen > best.gen) best = m
  }
  return best
}
