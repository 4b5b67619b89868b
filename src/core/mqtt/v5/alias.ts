// Topic Aliases (section 3.3.2.3.4), one map per direction and per network connection
// ([MQTT-3.3.2-7]: a new connection starts with none). Inbound: the aliases a client
// sets, up to the Topic Alias Maximum the server announced in CONNACK. Outbound: the
// aliases the server chooses for what it sends, up to the client's Topic Alias Maximum
// from CONNECT, reassigning the least recently used one when all are taken.
import { ReasonCode } from "./reason.js"
import { PacketError, protocolError } from "./reader.js"
import { utf8Length } from "../topic.js"

/** The client's aliases: what a PUBLISH with a Topic Alias stands for. */
export class InboundTopicAliases {
  private readonly topics = new Map<number, string>()
  private bytes = 0

  /** `maximum`: the Topic Alias Maximum the server sent in CONNACK (0: none accepted). */
  constructor(readonly maximum: number) {}

  /**
   * The Topic Name of a PUBLISH: its own (which, with an alias, sets or replaces that
   * alias), or the one its alias was set to. Throws 0x94 for an alias of 0 or above the
   * maximum, 0x82 for an empty name with an alias never set.
   */
  resolve(topic: string, alias: number | undefined): string {
    if (alias === undefined) {
      if (topic.length === 0) throw protocolError("PUBLISH with an empty Topic Name and no Topic Alias")
      return topic
    }
    if (alias === 0) throw new PacketError(ReasonCode.TopicAliasInvalid, "Topic Alias of 0", "MQTT-3.3.2-8")
    if (alias > this.maximum) {
      throw this.maximum === 0
        ? new PacketError(ReasonCode.TopicAliasInvalid, `Topic Alias ${alias} where the server accepts none`, "MQTT-3.2.2-18")
        : new PacketError(ReasonCode.TopicAliasInvalid, `Topic Alias ${alias} above the Topic Alias Maximum ${this.maximum}`, "MQTT-3.2.2-17")
    }
    if (topic.length > 0) {
      // every alias from 1 to the maximum is accepted [MQTT-3.3.2-12]
      const before = this.topics.get(alias)
      if (before !== undefined) this.bytes -= before.length
      this.topics.set(alias, topic)
      this.bytes += topic.length
      return topic
    }
    const known = this.topics.get(alias)
    if (known === undefined) throw protocolError(`Topic Alias ${alias} was never set on this connection`)
    return known
  }

  /** Aliases set. */
  get size(): number {
    return this.topics.size
  }

  /** UTF-16 code units the mapped topics hold (what this connection's aliases cost in memory). */
  get heldChars(): number {
    return this.bytes
  }
}

/** How the next PUBLISH names its topic: `topic` ("" when the alias alone names it) and `topicAlias` (0: none). */
export interface AliasChoice {
  readonly topic: string
  readonly topicAlias: number
  /** The alias is set (or reassigned) by this PUBLISH. */
  readonly fresh: boolean
}

/**
 * An alias costs three bytes a packet (identifier and two-byte value); naming a topic by
 * it saves the topic's bytes. Topics shorter than this are sent by name.
 */
export const MIN_ALIASED_TOPIC_BYTES = 4

/** Aliases the server uses towards one client at most, by default. */
export const DEFAULT_OUTBOUND_ALIAS_CAP = 64

/** The server's aliases towards one client. */
export class OutboundTopicAliases {
  private readonly aliasOf = new Map<string, number>()
  private readonly topicOf: Array<string | undefined>
  /**
   * Aliases in order of use, a doubly linked list over indexes (0 is the head): next[0]
   * the most recently used, prev[0] the least. Moving one to the front is four writes.
   */
  private readonly next: Uint16Array
  private readonly prev: Uint16Array
  private assigned = 0
  private readonly choice = { topic: "", topicAlias: 0, fresh: false }

  /** The highest alias used: the client's Topic Alias Maximum, capped at the server's own limit. */
  readonly maximum: number

  /**
   * `clientMaximum`: the client's Topic Alias Maximum from CONNECT (0 or absent: it takes
   * none [MQTT-3.1.2-27]); the server uses at most `cap` of them, so a client announcing
   * 65,535 costs no more memory than one announcing `cap`.
   */
  constructor(clientMaximum: number, cap: number = DEFAULT_OUTBOUND_ALIAS_CAP) {
    const maximum = Math.max(0, Math.min(clientMaximum, cap, 0xffff))
    this.maximum = maximum
    this.topicOf = new Array<string | undefined>(maximum + 1)
    this.next = new Uint16Array(maximum + 1)
    this.prev = new Uint16Array(maximum + 1)
  }

  /**
   * How to name `topic` in the next PUBLISH: by the alias the client knows, or by name
   * with a new alias (a free one, else the least recently used one, reassigned), or by
   * name alone when aliasing cannot pay or the client takes none. Nothing changes until
   * `commit`: a PUBLISH that is not sent (too large for the client) sets no alias. The
   * returned record is reused by the next call.
   */
  choose(topic: string): AliasChoice {
    const c = this.choice
    const known = this.aliasOf.get(topic)
    if (known !== undefined) {
      c.topic = ""
      c.topicAlias = known
      c.fresh = false
    } else if (this.maximum === 0 || (topic.length < MIN_ALIASED_TOPIC_BYTES && utf8Length(topic) < MIN_ALIASED_TOPIC_BYTES)) {
      c.topic = topic
      c.topicAlias = 0
      c.fresh = false
    } else {
      c.topic = topic
      c.topicAlias = this.assigned < this.maximum ? this.assigned + 1 : this.prev[0]
      c.fresh = true
    }
    return c
  }

  /** The PUBLISH named by `choice` (for `topic`) is going out: its alias now stands for the topic at the client. */
  commit(topic: string, choice: AliasChoice): void {
    const a = choice.topicAlias
    if (a === 0) return
    if (choice.fresh) {
      const before = this.topicOf[a]
      if (before !== undefined) this.aliasOf.delete(before)
      this.topicOf[a] = topic
      this.aliasOf.set(topic, a)
      if (a > this.assigned) this.assigned = a
      else this.unlink(a)
    } else this.unlink(a)
    // to the front: the most recently used
    const first = this.next[0]
    this.next[a] = first
    this.prev[a] = 0
    this.prev[first] = a
    this.next[0] = a
  }

  private unlink(a: number): void {
    const p = this.prev[a]
    const n = this.next[a]
    this.next[p] = n
    this.prev[n] = p
  }

  /** The topic an alias stands for at the client. */
  topicFor(alias: number): string | undefined {
    return this.topicOf[alias]
  }

  get size(): number {
    return this.aliasOf.size
  }
}
