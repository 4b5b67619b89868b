// Retained messages across Switchyard servers (the pure part): the version a retained
// message (or its removal) carries from server to server, the rule that picks between two
// versions of one topic, and the wire form of an announcement.
//
// A version is (ts, server id): when the server that kept (or removed) it did so, by its
// clock, and who it was. The greater version wins, the server id breaking a tie, so that
// every server that has heard the same announcements holds the same value whatever order
// they arrived in (last writer wins). A server that keeps a retained message names it
// with a version greater than any it has seen for the topic (`nextVersion`), so that its
// own latest write wins over what it holds even when another server's clock runs ahead.

/** Which write of a topic's retained message is the latest. */
export interface RetainedVersion {
  /** When it was written (ms since the epoch, the writing server's clock, raised past what that server had seen). */
  readonly ts: number
  /** The server that wrote it. */
  readonly server: string
}

/** What a server holds of a topic it has no version for (kept before a restart): it loses to any write heard of. */
export const UNKNOWN_VERSION: RetainedVersion = { ts: 0, server: "" }

/** -1, 0, 1 as `a` is older than, the same as, newer than `b`. */
export const compareVersions = (a: RetainedVersion, b: RetainedVersion): number =>
  a.ts !== b.ts ? (a.ts < b.ts ? -1 : 1) : a.server === b.server ? 0 : a.server < b.server ? -1 : 1

/** Whether `incoming` replaces what is held at version `held` (none held: it does). */
export const supersedes = (incoming: RetainedVersion, held: RetainedVersion | undefined): boolean =>
  held === undefined || compareVersions(incoming, held) > 0

/** The version of a write by `server` at `now`, after `held` (the topic's version here, if any). */
export const nextVersion = (server: string, now: number, held: RetainedVersion | undefined): RetainedVersion => {
  const ts = held === undefined || now > held.ts ? now : held.ts + 1
  return { ts, server }
}

/** One announcement: a retained message kept (`payload`) or removed (`deleted`), at `version`. */
export interface RetainedAnnouncement {
  readonly version: RetainedVersion
  readonly topic: string
  readonly deleted: boolean
  readonly qos: 0 | 1 | 2
  readonly payload: Buffer
  /** MQTT 5.0 properties as the store keeps them: reply subject, NATS header block, when received. */
  readonly props?: { readonly reply: string | undefined; readonly hdr: Buffer | undefined; readonly at: number } | undefined
}

/**
 * The wire form: a 4-byte big-endian length, that many bytes of JSON (version, topic, qos,
 * deleted, properties with the header block in base64), then the payload as
 * it is (no base64: a retained payload may be as large as `max_payload`).
 */
export const encodeAnnouncement = (a: RetainedAnnouncement): Buffer => {
  const meta: Record<string, unknown> = { ts: a.version.ts, server: a.version.server, topic: a.topic, qos: a.qos }
  if (a.deleted) meta.deleted = true
  if (a.props !== undefined) {
    meta.at = a.props.at
    if (a.props.reply !== undefined) meta.reply = a.props.reply
    if (a.props.hdr !== undefined) meta.hdr = a.props.hdr.toString("base64")
  }
  const json = Buffer.from(JSON.stringify(meta), "utf8")
  const out = Buffer.allocUnsafe(4 + json.length + (a.deleted ? 0 : a.payload.length))
  out.writeUInt32BE(json.length, 0)
  json.copy(out, 4)
  if (!a.deleted) a.payload.copy(out, 4 + json.length)
  return out
}

const isStr = (v: unknown): v is string => typeof v === "string"
const isNum = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v)

/** An announcement read back from `buf[start, end)`; undefined when it is not one. */
export const decodeAnnouncement = (buf: Buffer, start: number, end: number): RetainedAnnouncement | undefined => {
  if (end - start < 4) return undefined
  const len = buf.readUInt32BE(start)
  if (len > end - start - 4) return undefined
  let m: Record<string, unknown>
  try {
    const v: unknown = JSON.parse(buf.toString("utf8", start + 4, start + 4 + len))
    if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined
    m = v as Record<string, unknown>
  } catch {
    return undefined
  }
  if (!isNum(m.ts) || m.ts < 0 || !isStr(m.server) || !isStr(m.topic) || m.topic === "") return undefined
  if (m.qos !== 0 && m.qos !== 1 && m.qos !== 2) return undefined
  if (m.deleted !== undefined && m.deleted !== true) return undefined
  if (m.reply !== undefined && !isStr(m.reply)) return undefined
  if (m.hdr !== undefined && !isStr(m.hdr)) return undefined
  if (m.at !== undefined && !isNum(m.at)) return undefined
  const deleted = m.deleted === true
  const payload = deleted ? Buffer.alloc(0) : Buffer.from(buf.subarray(start + 4 + len, end))
  const props = isNum(m.at) ? { reply: m.reply as string | undefined, hdr: isStr(m.hdr) ? Buffer.from(m.hdr, "base64") : undefined, at: m.at } : undefined
  return { version: { ts: m.ts, server: m.server }, topic: m.topic, deleted, qos: m.qos, payload, props }
}

/**
 * The versions one server holds for an account's topics, with the removals it remembers
 * (tombstones, so that a removal heard before wins over an older copy a peer still holds
 * when they catch up). Tombstones are bounded: past `maxTombstones` the oldest are forgotten.
 */
export class RetainedVersions {
  private readonly live = new Map<string, RetainedVersion>()
  private readonly removed = new Map<string, RetainedVersion>()

  constructor(private readonly maxTombstones: number) {}

  /** The removal remembered for `topic`, if any. */
  tombstone(topic: string): RetainedVersion | undefined {
    return this.removed.get(topic)
  }

  /** The version held for `topic` (kept or removed), if any. */
  get(topic: string): RetainedVersion | undefined {
    return this.live.get(topic) ?? this.removed.get(topic)
  }

  kept(topic: string, v: RetainedVersion): void {
    this.removed.delete(topic)
    this.live.set(topic, v)
  }

  deleted(topic: string, v: RetainedVersion): void {
    this.live.delete(topic)
    this.removed.delete(topic)
    this.removed.set(topic, v)
    if (this.removed.size > this.maxTombstones) {
      const oldest = this.removed.keys().next()
      if (oldest.done !== true) this.removed.delete(oldest.value)
    }
  }

  /** The removals remembered, oldest first. */
  tombstones(): Array<[string, RetainedVersion]> {
    return Array.from(this.removed)
  }

  get tombstoneCount(): number {
    return this.removed.size
  }
}
