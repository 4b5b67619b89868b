// Just enough subject logic for the monitoring filters (subsz `test`/`subject`):
// literal-subject validation, wildcard matching and overlap of two patterns.
// Tokens are separated by ".", "*" matches one token, ">" the rest (last only).

const tokens = (subject: string): ReadonlyArray<string> => subject.split(".")

const hasWhitespace = (s: string): boolean => /\s/.test(s)

/** A subject one can publish to: non-empty tokens, no wildcard tokens, no whitespace. */
export const isValidLiteralSubject = (subject: string): boolean => {
  if (subject.length === 0 || hasWhitespace(subject)) return false
  return tokens(subject).every((t) => t.length > 0 && t !== "*" && t !== ">")
}

/** A subscription subject: non-empty tokens, ">" only as the last token, no whitespace. */
export const isValidSubject = (subject: string): boolean => {
  if (subject.length === 0 || hasWhitespace(subject)) return false
  const ts = tokens(subject)
  return ts.every((t, i) => t.length > 0 && (t !== ">" || i === ts.length - 1))
}

/** Would a message published on `literal` reach a subscription on `pattern`? */
export const matchLiteral = (literal: string, pattern: string): boolean => {
  const lt = tokens(literal)
  const pt = tokens(pattern)
  for (let i = 0; i < pt.length; i++) {
    const p = pt[i]
    if (p === ">") return i < lt.length
    if (i >= lt.length) return false
    if (p !== "*" && p !== lt[i]) return false
  }
  return lt.length === pt.length
}

/** Is there any subject both patterns match? */
export const subjectsCollide = (a: string, b: string): boolean => {
  const at = tokens(a)
  const bt = tokens(b)
  const n = Math.min(at.length, bt.length)
  for (let i = 0; i < n; i++) {
    const x = at[i]
    const y = bt[i]
    if (x === ">" || y === ">") return true
    if (x !== "*" && y !== "*" && x !== y) return false
  }
  // Different lengths with no ">" inside the common prefix: ">" needs at least one
  // token, so "foo" and "foo.>" do not overlap.
  return at.length === bt.length
}
