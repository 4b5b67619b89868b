// What one authenticated client may publish and subscribe to: nats-server's
// `permissions { publish, subscribe, allow_responses }`. Publish decisions are cached
// per client (a Map lookup per PUB on the hot path); time comes in as an argument.
import type { Permissions, SubjectPermission } from "../config/options.js"
import { matchLiteral, subjectIsSubsetMatch } from "../core/subject/subject.js"

/** Publish decisions kept per client before the oldest is dropped (nats-server keeps 128). */
export const MAX_PUB_CACHE = 128
/** Outstanding reply subjects a client may answer, at most (the oldest is forgotten first). */
export const MAX_REPLIES = 4096

/** A subscribe entry: `subject`, or `subject queue` (nats-server's queue permissions; the queue may use wildcards). */
interface SubEntry {
  readonly subject: string
  readonly queue: string | undefined
}

const subEntries = (list: ReadonlyArray<string> | undefined): ReadonlyArray<SubEntry> | undefined =>
  list?.map((e) => {
    const [subject, queue] = e.trim().split(/\s+/, 2)
    return { subject, queue }
  })

const subEntryCovers = (e: SubEntry, subject: string, queue: string): boolean =>
  subjectIsSubsetMatch(subject, e.subject) && (e.queue === undefined || (queue !== "" && matchLiteral(queue, e.queue)))

interface ReplyGrant {
  left: number
  readonly expiresAt: number
}

const matchesAny = (subject: string, patterns: ReadonlyArray<string>, match: (s: string, p: string) => boolean): boolean => {
  for (let i = 0; i < patterns.length; i++) if (match(subject, patterns[i])) return true
  return false
}

/** allow (when given) must match and deny (when given) must not. */
const permits = (subject: string, p: SubjectPermission | undefined, match: (s: string, p: string) => boolean): boolean => {
  if (p === undefined) return true
  if (p.allow !== undefined && !matchesAny(subject, p.allow, match)) return false
  if (p.deny !== undefined && matchesAny(subject, p.deny, match)) return false
  return true
}

export class ClientPermissions {
  private readonly publish: SubjectPermission | undefined
  private readonly subAllow: ReadonlyArray<SubEntry> | undefined
  private readonly subDenyEntries: ReadonlyArray<SubEntry> | undefined
  private readonly responses: Permissions["allowResponses"]
  private readonly pubCache = new Map<string, boolean>()
  private readonly replies = new Map<string, ReplyGrant>()
  /** Subscribe denies that a wildcard subscription may overlap: their messages are filtered on delivery. */
  readonly subDeny: ReadonlyArray<string> | undefined

  constructor(perms: Permissions) {
    this.responses = perms.allowResponses
    // As nats-server: `allow_responses` without publish allows turns off the blanket allow,
    // so such a client may only answer requests.
    this.publish = perms.allowResponses !== undefined && perms.publish?.allow === undefined
      ? { allow: [], deny: perms.publish?.deny }
      : perms.publish
    this.subAllow = subEntries(perms.subscribe?.allow)
    this.subDenyEntries = subEntries(perms.subscribe?.deny)
    // Only plain denies filter delivery; a queue-qualified deny only refuses queue subscriptions.
    const plainDenies = (this.subDenyEntries ?? []).filter((e) => e.queue === undefined).map((e) => e.subject)
    this.subDeny = plainDenies.length > 0 ? plainDenies : undefined
  }

  /** May this client publish to the literal `subject`? Reply grants are consumed here (the clock is read only then). */
  canPublish(subject: string, clock: { now(): number }): boolean {
    let ok = this.pubCache.get(subject)
    if (ok === undefined) {
      ok = permits(subject, this.publish, matchLiteral)
      if (this.pubCache.size >= MAX_PUB_CACHE) this.pubCache.delete(this.pubCache.keys().next().value as string)
      this.pubCache.set(subject, ok)
    }
    return ok || (this.replies.size > 0 && this.takeReply(subject, clock.now()))
  }

  /** May this client subscribe to `subject` (a literal or a filter), in `queue` ("" for none)? */
  canSubscribe(subject: string, queue = ""): boolean {
    const allow = this.subAllow
    if (allow !== undefined && !allow.some((e) => subEntryCovers(e, subject, queue))) return false
    // A filter wholly inside a deny is refused; one that merely overlaps is allowed and
    // its denied messages are dropped on delivery (`deniesDelivery`).
    const deny = this.subDenyEntries
    if (deny !== undefined && deny.some((e) => subEntryCovers(e, subject, queue))) return false
    return true
  }

  /**
   * May a message on the literal `subject` be handed to this client through some subscription
   * it may hold, plain or in a queue group: an allow entry covers it (whatever queue it
   * names) and no plain deny does. The subscription itself was checked with its queue
   * (`canSubscribe`); this is the check of what waits for it (an MQTT session's queue).
   */
  mayReceive(subject: string): boolean {
    const allow = this.subAllow
    if (allow !== undefined && !allow.some((e) => subjectIsSubsetMatch(subject, e.subject))) return false
    return !this.deniesDelivery(subject)
  }

  /** Must a message on the literal `subject` be withheld from this client's subscriptions? */
  deniesDelivery(subject: string): boolean {
    return this.subDeny !== undefined && matchesAny(subject, this.subDeny, matchLiteral)
  }

  /** The client was handed a request with this reply subject: with `allow_responses` it may answer. */
  noteReply(reply: string, now: number): void {
    const r = this.responses
    if (r === undefined) return
    if (this.replies.size >= MAX_REPLIES && !this.replies.has(reply)) this.pruneReplies(now)
    this.replies.set(reply, { left: r.maxMsgs, expiresAt: r.expiresMs > 0 ? now + r.expiresMs : 0 })
  }

  get hasResponses(): boolean {
    return this.responses !== undefined
  }

  private takeReply(subject: string, now: number): boolean {
    const g = this.replies.get(subject)
    if (g === undefined) return false
    if (g.expiresAt > 0 && now > g.expiresAt) {
      this.replies.delete(subject)
      return false
    }
    // max 0 means no bound on the number of responses, only on their lifetime.
    if (g.left > 0 && --g.left === 0) this.replies.delete(subject)
    return true
  }

  private pruneReplies(now: number): void {
    for (const [k, g] of this.replies) if (g.expiresAt > 0 && now > g.expiresAt) this.replies.delete(k)
    while (this.replies.size >= MAX_REPLIES) this.replies.delete(this.replies.keys().next().value as string)
  }
}

export const publishViolation = (subject: string): string => `Permissions Violation for Publish to "${subject}"`
export const subscribeViolation = (subject: string, queue: string): string =>
  queue === ""
    ? `Permissions Violation for Subscription to "${subject}"`
    : `Permissions Violation for Subscription to "${subject}" using queue "${queue}"`
