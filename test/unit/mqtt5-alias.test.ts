// Topic Aliases in both directions: the client's, up to the server's Topic Alias
// Maximum; the server's, up to the client's, checked against a client-side resolver.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { InboundTopicAliases, OutboundTopicAliases, PacketError } from "../../src/core/mqtt/v5/index.js"

const thrown = (f: () => unknown): PacketError => {
  try {
    f()
  } catch (e) {
    expect(e).toBeInstanceOf(PacketError)
    return e as PacketError
  }
  throw new Error("did not throw")
}

describe("inbound Topic Aliases (the client's)", () => {
  it("[MQTT-3.3.2-12] accepts every alias from 1 to the maximum, and an empty Topic Name then names the topic", () => {
    const a = new InboundTopicAliases(3)
    expect(a.resolve("s/1", 1)).toBe("s/1")
    expect(a.resolve("s/3", 3)).toBe("s/3")
    expect(a.resolve("", 1)).toBe("s/1")
    expect(a.resolve("", 3)).toBe("s/3")
    expect(a.resolve("plain", undefined)).toBe("plain")
    expect(a.size).toBe(2)
  })

  it("a Topic Name with a known alias replaces the mapping", () => {
    const a = new InboundTopicAliases(2)
    a.resolve("old/topic", 1)
    a.resolve("new", 1)
    expect(a.resolve("", 1)).toBe("new")
    expect(a.heldChars).toBe(3)
  })

  it("[MQTT-3.3.2-8] an alias of 0 is 0x94 Topic Alias invalid", () => {
    expect(thrown(() => new InboundTopicAliases(5).resolve("a", 0))).toMatchObject({ code: 0x94, ruleId: "MQTT-3.3.2-8" })
  })

  it("[MQTT-3.2.2-17] an alias above the server's Topic Alias Maximum is 0x94", () => {
    expect(thrown(() => new InboundTopicAliases(5).resolve("a", 6))).toMatchObject({ code: 0x94, ruleId: "MQTT-3.2.2-17" })
  })

  it("[MQTT-3.2.2-18] with a Topic Alias Maximum of 0 every alias is 0x94", () => {
    expect(thrown(() => new InboundTopicAliases(0).resolve("a", 1))).toMatchObject({ code: 0x94, ruleId: "MQTT-3.2.2-18" })
  })

  it("an empty Topic Name with an alias never set is a protocol error", () => {
    expect(thrown(() => new InboundTopicAliases(5).resolve("", 2))).toMatchObject({ code: 0x82 })
    expect(thrown(() => new InboundTopicAliases(5).resolve("", undefined))).toMatchObject({ code: 0x82 })
  })

  it("[MQTT-3.3.2-7] a new connection starts without the old one's aliases", () => {
    const first = new InboundTopicAliases(5)
    first.resolve("t/1", 1)
    expect(thrown(() => new InboundTopicAliases(5).resolve("", 1)).code).toBe(0x82)
  })
})

/** What the server sends for `topic` through `out`, read back by a client-side resolver. */
const send = (out: OutboundTopicAliases, client: InboundTopicAliases, topic: string): { sent: { topic: string; alias: number }; read: string } => {
  const c = out.choose(topic)
  const sent = { topic: c.topic, alias: c.topicAlias }
  out.commit(topic, c)
  return { sent, read: client.resolve(sent.topic, sent.alias === 0 ? undefined : sent.alias) }
}

describe("outbound Topic Aliases (the server's)", () => {
  it("names a topic with a new alias first, then by the alias alone", () => {
    const out = new OutboundTopicAliases(10)
    const client = new InboundTopicAliases(10)
    expect(send(out, client, "sensors/temperature")).toEqual({ sent: { topic: "sensors/temperature", alias: 1 }, read: "sensors/temperature" })
    expect(send(out, client, "sensors/temperature")).toEqual({ sent: { topic: "", alias: 1 }, read: "sensors/temperature" })
    expect(send(out, client, "sensors/humidity").sent).toEqual({ topic: "sensors/humidity", alias: 2 })
  })

  it("[MQTT-3.1.2-27] sends no alias to a client whose Topic Alias Maximum is 0", () => {
    const out = new OutboundTopicAliases(0)
    for (let i = 0; i < 3; i++) expect(out.choose("sensors/temperature")).toMatchObject({ topic: "sensors/temperature", topicAlias: 0 })
  })

  it("names short topics by name: an alias would cost more than it saves", () => {
    const out = new OutboundTopicAliases(10)
    expect(out.choose("a/b")).toMatchObject({ topic: "a/b", topicAlias: 0 })
    expect(out.choose("a/bc")).toMatchObject({ topicAlias: 1, fresh: true })
  })

  it("maps nothing for a PUBLISH that is not sent", () => {
    const out = new OutboundTopicAliases(10)
    expect(out.choose("dropped/topic")).toMatchObject({ topicAlias: 1, fresh: true }) // not committed
    expect(out.choose("dropped/topic")).toMatchObject({ topic: "dropped/topic", topicAlias: 1, fresh: true })
    expect(out.size).toBe(0)
  })

  it("reassigns the least recently used alias when all are taken", () => {
    const out = new OutboundTopicAliases(2)
    const client = new InboundTopicAliases(2)
    send(out, client, "topic/a") // 1
    send(out, client, "topic/b") // 2
    send(out, client, "topic/a") // a used again: b is now the least recent
    expect(send(out, client, "topic/c")).toEqual({ sent: { topic: "topic/c", alias: 2 }, read: "topic/c" })
    expect(send(out, client, "topic/a").sent).toEqual({ topic: "", alias: 1 })
    expect(out.topicFor(2)).toBe("topic/c")
  })

  it("uses no more aliases than its cap, whatever the client allows", () => {
    const out = new OutboundTopicAliases(65_535, 4)
    expect(out.maximum).toBe(4)
  })

  it("[MQTT-3.1.2-26] never sends an alias above the client's maximum, and the client always reads the topic that was meant", () => {
    const topics = fc.constantFrom("room/1/temp", "room/2/temp", "room/3/temp", "hall/light", "é/ü/ö", "x", "door/open")
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4 }), fc.array(fc.tuple(topics, fc.boolean()), { maxLength: 60 }), (max, stream) => {
        const out = new OutboundTopicAliases(max)
        const client = new InboundTopicAliases(max)
        for (const [topic, sent] of stream) {
          const c = out.choose(topic)
          expect(c.topicAlias).toBeLessThanOrEqual(max)
          if (!sent) continue // too large for the client: dropped, never committed
          const alias = c.topicAlias
          const name = c.topic
          out.commit(topic, c)
          expect(client.resolve(name, alias === 0 ? undefined : alias)).toBe(topic)
        }
      })
    )
  })
})
