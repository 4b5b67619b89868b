import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { isValidLiteralSubject, isValidSubject } from "../../src/core/subject/subject.js"
import {
  filterToSubjects,
  subjectToTopic,
  subscriptionSubjects,
  topicMatchesFilter,
  topicToSubject,
  validateTopicFilter,
  validateTopicName
} from "../../src/core/mqtt/topic.js"

const subj = (t: string) => {
  const r = topicToSubject(t)
  if (!r.ok) throw new Error(r.reason)
  return r.value
}
const subs = (f: string) => {
  const r = filterToSubjects(f)
  if (!r.ok) throw new Error(r.reason)
  return r.value
}

describe("MQTT topic -> NATS subject", () => {
  it.each([
    ["a/b/c", "a.b.c"],
    ["a", "a"],
    ["/a", "/.a"],
    ["a/", "a./"],
    ["a//b", "a./.b"],
    ["/", "/./"],
    ["a.b/c", "a//b.c"],
    ["..", "////"],
    ["$SYS/x", "$SYS.x"],
    ["a*/b>", "a*.b>"],
    ["sport/tennis/player1", "sport.tennis.player1"]
  ])("%s -> %s", (topic, subject) => {
    expect(subj(topic)).toBe(subject)
    expect(isValidLiteralSubject(subject)).toBe(true)
    expect(subjectToTopic(subject)).toBe(topic)
  })

  it.each([
    ["a/+/c", ["a.*.c"]],
    ["+", ["*"]],
    ["#", [">"]],
    ["a/#", ["a", "a.>"]],
    ["a/b/#", ["a.b", "a.b.>"]],
    ["+/#", ["*", "*.>"]],
    ["/#", ["/", "/.>"]],
    ["a.b/+", ["a//b.*"]]
  ])("filter %s -> %j", (filter, expected) => {
    expect(subs(filter)).toEqual(expected)
    for (const s of expected) expect(isValidSubject(s)).toBe(true)
  })

  it("a NATS subject with a lone '/' inside a token keeps it in the topic", () => {
    expect(subjectToTopic("a/b.c")).toBe("a/b/c")
    expect(subjectToTopic("x.///")).toBe("x/./")
  })

  const level = fc.stringMatching(/^[a-zA-Z0-9._$*>é-]{0,6}$/).filter((l) => l !== "*" && l !== ">")
  const topic = fc.array(level, { minLength: 1, maxLength: 6 }).map((ls) => ls.join("/")).filter((t) => t.length > 0)

  it("round-trips every valid topic: topic -> subject -> topic", () => {
    fc.assert(
      fc.property(topic, (t) => {
        const s = subj(t)
        expect(isValidLiteralSubject(s)).toBe(true)
        expect(subjectToTopic(s)).toBe(t)
      }),
      { numRuns: 2000 }
    )
  })

  it("the one-pass path for plain topics agrees with the rule, for any string", () => {
    // The rule spelled out: each level, '.' escaped as '//', an empty level as '/'.
    const byRule = (t: string) => t.split("/").map((l) => (l === "" ? "/" : l.replaceAll(".", "//"))).join(".")
    const anyTopic = fc.oneof(fc.string({ maxLength: 12 }), fc.stringMatching(/^[a-z/.+#*> \t$]{0,10}$/))
    fc.assert(
      fc.property(anyTopic, (t) => {
        const r = topicToSubject(t)
        expect(r.ok).toBe(validateTopicName(t).ok)
        if (r.ok) expect(r.value).toBe(byRule(t))
      }),
      { numRuns: 5000 }
    )
  })

  it("distinct topics map to distinct subjects", () => {
    fc.assert(
      fc.property(topic, topic, (a, b) => {
        if (a !== b) expect(subj(a)).not.toBe(subj(b))
      }),
      { numRuns: 2000 }
    )
  })
})

describe("topic name validation", () => {
  it.each([
    ["", "MQTT-4.7.3-1"],
    ["a/+/b", "MQTT-3.3.2-2"],
    ["a/#", "MQTT-3.3.2-2"],
    ["a+", "MQTT-3.3.2-2"],
    ["a\u0000b", "MQTT-4.7.3-2"],
    ["a\ud800b", "MQTT-1.5.3-1"],
    ["x".repeat(65536), "MQTT-4.7.3-3"]
  ])("[%#] rejects %j [%s]", (t, rule) => {
    const r = validateTopicName(t)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.ruleId).toBe(rule)
  })

  it("[MQTT-4.7.3-3] accepts exactly 65535 bytes", () => {
    expect(validateTopicName("x".repeat(65535)).ok).toBe(true)
    expect(validateTopicName("é".repeat(32768)).ok).toBe(false) // 65536 bytes
  })

  it.each(["a b", "a\tb", "a\nb", "a\rb", "*", "a/>", "a/*/b"])("rejects %j: cannot be carried in a NATS subject", (t) => {
    const r = validateTopicName(t)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.reason).toMatch(/NATS/)
  })
})

describe("topic filter validation", () => {
  it.each(["#", "+", "a/#", "+/+", "a/+/b/#", "/", "/+", "+/", "$SYS/#"])("accepts %j", (f) => {
    expect(validateTopicFilter(f).ok).toBe(true)
  })

  it.each(["a/#/b", "a#", "#/", "##", "a/b#"])("[MQTT-4.7.1-2] rejects %j: '#' last and alone", (f) => {
    const r = validateTopicFilter(f)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.ruleId).toBe("MQTT-4.7.1-2")
  })

  it.each(["a+", "+a/b", "a/b+/c", "++"])("[MQTT-4.7.1-3] rejects %j: '+' alone in its level", (f) => {
    const r = validateTopicFilter(f)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.ruleId).toBe("MQTT-4.7.1-3")
  })

  it("[MQTT-4.7.3-1] rejects an empty filter, [MQTT-4.7.3-2] and NUL", () => {
    expect(validateTopicFilter("").ok).toBe(false)
    expect(validateTopicFilter("a/\u0000").ok).toBe(false)
  })

  it("refuses subscriptions on internal $MQTT subjects", () => {
    expect(subscriptionSubjects("$MQTT/sess/#").ok).toBe(false)
    expect(subscriptionSubjects("$MQTT/#").ok).toBe(false)
    expect(subscriptionSubjects("$MQTT").ok).toBe(false)
    expect(subscriptionSubjects("$MQTTx/a").ok).toBe(true)
  })
})

describe("matching", () => {
  it.each([
    ["sport/tennis/player1", "sport/tennis/player1/#", true],
    ["sport/tennis/player1/ranking", "sport/tennis/player1/#", true],
    ["sport", "sport/#", true], // [MQTT-4.7.1-2] '#' includes the parent level
    ["sport/tennis", "sport/+", true],
    ["sport", "sport/+", false],
    ["sport/", "sport/+", true],
    ["/finance", "+/+", true],
    ["/finance", "/+", true],
    ["/finance", "+", false],
    ["a.b/c", "a.b/+", true],
    ["a/b", "a.b", false]
  ])("%s matches %s: %s", (t, f, m) => {
    expect(topicMatchesFilter(t, f)).toBe(m)
  })

  it.each([
    ["$SYS/monitor", "#", false],
    ["$SYS/monitor", "+/monitor", false],
    ["$SYS/monitor", "$SYS/#", true],
    ["$SYS/monitor", "$SYS/+", true],
    ["$SYS", "#", false]
  ])("[MQTT-4.7.2-1] $-topic %s vs %s: %s", (t, f, m) => {
    expect(topicMatchesFilter(t, f)).toBe(m)
  })
})
