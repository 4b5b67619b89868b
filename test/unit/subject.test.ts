import { describe, expect, it } from "vitest"
import fc from "fast-check"
import {
  isValidLiteralSubject,
  isValidQueueName,
  isValidSubject,
  matchLiteral,
  numTokens,
  subjectHasWildcard,
  subjectIsSubsetMatch,
  subjectsCollide,
  tokenAt,
  tokenize
} from "../../src/core/subject/subject.js"
import { refMatch } from "../../src/sim/reference.js"

// Reference implementations built on split(): slow and obviously right (refMatch is shared with the fuzzer).
const refValid = (s: string): boolean => {
  if (s === "" || /[ \t\r\n\f]/.test(s)) return false
  const toks = s.split(".")
  return toks.every((t, i) => t.length > 0 && (t !== ">" || i === toks.length - 1))
}

describe("isValidSubject", () => {
  const valid = [
    "foo",
    "foo.bar",
    "foo.*",
    "*",
    ">",
    "foo.>",
    "*.*.>",
    "foo.*.baz",
    "$JS.API.STREAM.INFO.x",
    "_INBOX.abc123.*",
    "a*",
    "*b",
    "a>",
    ">b.c",
    "foo.b*r.>",
    "ünïcödé.日本",
    "emoji.🙂",
    "-.+.#.!",
    "x".repeat(2000)
  ]
  const invalid = [
    "",
    ".",
    "foo.",
    ".foo",
    "foo..bar",
    "foo bar",
    "foo\tbar",
    "foo\rbar",
    "foo\nbar",
    "foo\fbar",
    " ",
    "foo. ",
    ">.foo",
    "foo.>.bar",
    "foo.>.>",
    "> ",
    "*.>.*"
  ]
  it.each(valid)("accepts %j", (s) => expect(isValidSubject(s)).toBe(true))
  it.each(invalid)("rejects %j", (s) => expect(isValidSubject(s)).toBe(false))

  it("with checkRunes rejects NUL, U+FFFD and lone surrogates, but not paired ones", () => {
    expect(isValidSubject("foo\u0000bar")).toBe(true)
    expect(isValidSubject("foo\u0000bar", true)).toBe(false)
    expect(isValidSubject("foo.\ufffd", true)).toBe(false)
    expect(isValidSubject("foo.\ud83d", true)).toBe(false)
    expect(isValidSubject("foo.\ude42x", true)).toBe(false)
    expect(isValidSubject("foo.\ud83d.x", true)).toBe(false)
    expect(isValidSubject("emoji.🙂.x", true)).toBe(true)
    expect(isValidSubject("foo.>", true)).toBe(true)
  })

  it("agrees with a split-based reference on random strings", () => {
    const char = fc.constantFrom("a", "b", ".", "*", ">", " ", "\t", "é")
    fc.assert(
      fc.property(fc.array(char, { maxLength: 12 }), (chars) => {
        const s = chars.join("")
        expect(isValidSubject(s)).toBe(refValid(s))
      }),
      { numRuns: 2000 }
    )
  })
})

describe("literal subjects and wildcards", () => {
  it.each([
    ["foo", false],
    ["foo.*", true],
    ["foo.>", true],
    ["*", true],
    [">", true],
    ["foo.*.bar", true],
    ["a*.b>", false],
    ["*a", false],
    ["foo.bar", false]
  ] as const)("subjectHasWildcard(%j) is %s", (s, expected) => {
    expect(subjectHasWildcard(s)).toBe(expected)
    expect(isValidLiteralSubject(s)).toBe(!expected)
  })

  it("isValidLiteralSubject rejects invalid subjects", () => {
    expect(isValidLiteralSubject("")).toBe(false)
    expect(isValidLiteralSubject("foo..bar")).toBe(false)
    expect(isValidLiteralSubject("foo bar")).toBe(false)
  })
})

describe("isValidQueueName", () => {
  it.each(["q", "workers", "a.b", "q*", ">"])("accepts %j", (q) => expect(isValidQueueName(q)).toBe(true))
  it.each(["", " ", "a b", "a\tb", "a\r", "\nb", "a\fb"])("rejects %j", (q) =>
    expect(isValidQueueName(q)).toBe(false)
  )
})

describe("tokens", () => {
  it("tokenize, numTokens and tokenAt agree", () => {
    expect(tokenize("a.bb.ccc")).toEqual(["a", "bb", "ccc"])
    expect(numTokens("a.bb.ccc")).toBe(3)
    expect(numTokens("a")).toBe(1)
    expect(tokenAt("a.bb.ccc", 0)).toBe("a")
    expect(tokenAt("a.bb.ccc", 1)).toBe("bb")
    expect(tokenAt("a.bb.ccc", 2)).toBe("ccc")
    expect(tokenAt("a.bb.ccc", 3)).toBeUndefined()
  })
})

describe("matchLiteral", () => {
  it.each([
    ["foo", "foo", true],
    ["foo", "bar", false],
    ["foo", "fo", false],
    ["fo", "foo", false],
    ["foo.bar", "foo.*", true],
    ["foo.bar", "*.bar", true],
    ["foo.bar", "*.*", true],
    ["foo.bar", "*", false],
    ["foo", "foo.*", false],
    ["foo.bar.baz", "foo.*", false],
    ["foo.bar", "foo.>", true],
    ["foo.bar.baz", "foo.>", true],
    ["foo", "foo.>", false],
    ["foo", ">", true],
    ["a.b.c.d", "*.b.>", true],
    ["a.b", "a.b.>", false],
    ["foo.bar", "foo.bar.baz", false],
    ["foo.bar.baz", "foo.bar", false],
    ["a*.b", "a*.b", true],
    ["ax.b", "a*.b", false],
    ["foo.bar", "foo.b>", false]
  ] as const)("matchLiteral(%j, %j) is %s", (literal, filter, expected) => {
    expect(matchLiteral(literal, filter)).toBe(expected)
    expect(subjectIsSubsetMatch(literal, filter)).toBe(expected)
  })

  const literalTok = fc.constantFrom("a", "b", "ab", "b*")
  const filterTok = fc.constantFrom("a", "b", "ab", "b*", "*")
  const literal = fc.array(literalTok, { minLength: 1, maxLength: 5 }).map((t) => t.join("."))
  const filter = fc
    .tuple(fc.array(filterTok, { minLength: 0, maxLength: 4 }), fc.boolean())
    .filter(([t, fwc]) => t.length > 0 || fwc)
    .map(([t, fwc]) => (fwc ? [...t, ">"] : t).join("."))

  it("agrees with a split-based reference", () => {
    fc.assert(
      fc.property(literal, filter, (l, f) => {
        expect(matchLiteral(l, f)).toBe(refMatch(l, f))
        expect(subjectIsSubsetMatch(l, f)).toBe(refMatch(l, f))
      }),
      { numRuns: 3000 }
    )
  })
})

// Every literal over {a, b, z} with 1..5 tokens: enough to witness any relation
// between filters of at most four tokens over {a, b, *, >}.
const universe: string[] = (() => {
  const out: string[] = []
  const grow = (prefix: string[]): void => {
    if (prefix.length > 0) out.push(prefix.join("."))
    if (prefix.length === 5) return
    for (const t of ["a", "b", "z"]) grow([...prefix, t])
  }
  grow([])
  return out
})()

const smallFilter = fc
  .tuple(fc.array(fc.constantFrom("a", "b", "*"), { minLength: 0, maxLength: 4 }), fc.boolean())
  .filter(([t, fwc]) => t.length > 0 || fwc)
  .map(([t, fwc]) => (fwc ? [...t, ">"] : t).join("."))

describe("subjectIsSubsetMatch", () => {
  it.each([
    ["foo.*", "foo.>", true],
    ["foo.>", "foo.*", false],
    ["foo.>", "foo.>", true],
    ["foo.>", ">", true],
    [">", "foo.>", false],
    ["*.bar", "*.*", true],
    ["*.*", "*.bar", false],
    ["foo.*.baz", "foo.>", true],
    ["foo.*", "foo.bar", false],
    ["foo.bar", "foo.*", true]
  ] as const)("subjectIsSubsetMatch(%j, %j) is %s", (a, b, expected) => {
    expect(subjectIsSubsetMatch(a, b)).toBe(expected)
  })

  it("holds exactly when every literal matched by the first is matched by the second", () => {
    fc.assert(
      fc.property(smallFilter, smallFilter, (a, b) => {
        const brute = universe.every((l) => !refMatch(l, a) || refMatch(l, b))
        expect(subjectIsSubsetMatch(a, b)).toBe(brute)
      }),
      { numRuns: 1500 }
    )
  })
})

describe("subjectsCollide", () => {
  it.each([
    ["foo", "foo", true],
    ["foo", "bar", false],
    ["foo.*", "foo.bar", true],
    ["foo.*", "*.bar", true],
    ["foo.*", "bar.*", false],
    ["foo.>", "foo", false],
    ["foo.>", "foo.bar.baz", true],
    ["foo.*", "foo.bar.baz", false],
    [">", "anything.at.all", true],
    ["*.*", "a.>", true],
    ["*.*", "*", false],
    ["a.*.c", "*.b.*", true],
    ["a.*.c", "*.b.d", false]
  ] as const)("subjectsCollide(%j, %j) is %s", (a, b, expected) => {
    expect(subjectsCollide(a, b)).toBe(expected)
    expect(subjectsCollide(b, a)).toBe(expected)
  })

  it("holds exactly when some literal matches both filters", () => {
    fc.assert(
      fc.property(smallFilter, smallFilter, (a, b) => {
        const brute = universe.some((l) => refMatch(l, a) && refMatch(l, b))
        expect(subjectsCollide(a, b)).toBe(brute)
      }),
      { numRuns: 1500 }
    )
  })
})
