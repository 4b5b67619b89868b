// Subject syntax and matching: validation of subscription filters and publish
// subjects, and token-wise comparisons between literals and filters. These sit on
// the per-message path, so they walk char codes and never split or use regexes.
//
// A subject is tokens separated by `.`. A token that is exactly `*` matches one
// token; a token that is exactly `>` matches one or more tokens and must be last.
// As in nats-server, `*` or `>` inside a longer token (`a*`, `>b`) is an ordinary
// character, not a wildcard.

const DOT = 0x2e
const STAR = 0x2a
const GT = 0x3e
const SPACE = 0x20
const TAB = 0x09
const LF = 0x0a
const FF = 0x0c
const CR = 0x0d
const NUL = 0x00
const REPLACEMENT = 0xfffd

const isWhitespace = (c: number): boolean =>
  c === SPACE || c === TAB || c === LF || c === CR || c === FF

/** True when the token `s[start, end)` is exactly `*` or exactly `>`. */
const isWildcardToken = (s: string, start: number, end: number): boolean => {
  if (end - start !== 1) return false
  const c = s.charCodeAt(start)
  return c === STAR || c === GT
}

/** The index of the `.` ending the token that starts at `start`, or `s.length`. */
const tokenEnd = (s: string, start: number): number => {
  const i = s.indexOf(".", start)
  return i < 0 ? s.length : i
}

/** True when `a[aStart, aEnd)` and `b[bStart, bEnd)` hold the same characters. */
const sameToken = (a: string, aStart: number, aEnd: number, b: string, bStart: number, bEnd: number): boolean => {
  const len = aEnd - aStart
  if (len !== bEnd - bStart) return false
  for (let i = 0; i < len; i++) {
    if (a.charCodeAt(aStart + i) !== b.charCodeAt(bStart + i)) return false
  }
  return true
}

/**
 * A valid subscription filter: non-empty tokens, no whitespace (space, tab, CR, LF,
 * form feed), `>` only as the last token. With `checkRunes`, also rejects NUL, the
 * replacement character U+FFFD (what invalid UTF-8 decodes to) and lone surrogates.
 */
export const isValidSubject = (subject: string, checkRunes = false): boolean => {
  const n = subject.length
  if (n === 0) return false
  let tokenStart = 0
  let sawFullWildcard = false
  for (let i = 0; i <= n; i++) {
    const c = i < n ? subject.charCodeAt(i) : DOT
    if (c === DOT) {
      const len = i - tokenStart
      if (len === 0 || sawFullWildcard) return false
      if (len === 1 && subject.charCodeAt(tokenStart) === GT) sawFullWildcard = true
      tokenStart = i + 1
    } else if (isWhitespace(c)) {
      return false
    } else if (checkRunes) {
      if (c === NUL || c === REPLACEMENT) return false
      if (c >= 0xd800 && c <= 0xdbff) {
        const next = i + 1 < n ? subject.charCodeAt(i + 1) : 0
        if (next < 0xdc00 || next > 0xdfff) return false
        i++
      } else if (c >= 0xdc00 && c <= 0xdfff) {
        return false
      }
    }
  }
  return true
}

/** True when some token is exactly `*` or `>`. Does not validate. */
export const subjectHasWildcard = (subject: string): boolean => {
  const n = subject.length
  let start = 0
  while (start <= n) {
    const end = tokenEnd(subject, start)
    if (isWildcardToken(subject, start, end)) return true
    start = end + 1
  }
  return false
}

/** A valid subject with no wildcard tokens: what may be published to. */
export const isValidLiteralSubject = (subject: string, checkRunes = false): boolean =>
  isValidSubject(subject, checkRunes) && !subjectHasWildcard(subject)

/** A queue group name: non-empty, no whitespace. */
export const isValidQueueName = (queue: string): boolean => {
  const n = queue.length
  if (n === 0) return false
  for (let i = 0; i < n; i++) {
    if (isWhitespace(queue.charCodeAt(i))) return false
  }
  return true
}

/** The tokens of a subject. Allocates; keep it off the per-message path. */
export const tokenize = (subject: string): string[] => subject.split(".")

/** The number of tokens in a subject (an empty string has one, empty, token). */
export const numTokens = (subject: string): number => {
  let count = 1
  for (let i = subject.indexOf("."); i >= 0; i = subject.indexOf(".", i + 1)) count++
  return count
}

/** The token at 0-based `index`, or `undefined` when there are fewer tokens. */
export const tokenAt = (subject: string, index: number): string | undefined => {
  let start = 0
  for (let k = 0; k < index; k++) {
    const dot = subject.indexOf(".", start)
    if (dot < 0) return undefined
    start = dot + 1
  }
  return subject.slice(start, tokenEnd(subject, start))
}

/**
 * Does the literal subject `literal` match the filter `filter`? Tokens of
 * `literal` are compared as plain text, even a `*` or `>` token.
 */
export const matchLiteral = (literal: string, filter: string): boolean => {
  const ln = literal.length
  const fn = filter.length
  let li = 0
  let fi = 0
  for (;;) {
    const fe = tokenEnd(filter, fi)
    const le = tokenEnd(literal, li)
    if (fe - fi === 1) {
      const fc = filter.charCodeAt(fi)
      if (fc === GT) return true
      if (fc !== STAR && !sameToken(filter, fi, fe, literal, li, le)) return false
    } else if (!sameToken(filter, fi, fe, literal, li, le)) {
      return false
    }
    if (fe === fn) return le === ln
    if (le === ln) return false
    fi = fe + 1
    li = le + 1
  }
}

/**
 * Is every subject matched by `subject` (a literal or a filter) also matched by
 * `filter`? For a literal `subject` this is `matchLiteral`. E.g. `foo.*` is a
 * subset of `foo.>`, but `foo.>` is not a subset of `foo.*`.
 */
export const subjectIsSubsetMatch = (subject: string, filter: string): boolean => {
  const sn = subject.length
  const fn = filter.length
  let si = 0
  let fi = 0
  for (;;) {
    const fe = tokenEnd(filter, fi)
    const se = tokenEnd(subject, si)
    const fWild = isWildcardToken(filter, fi, fe) ? filter.charCodeAt(fi) : 0
    const sWild = isWildcardToken(subject, si, se) ? subject.charCodeAt(si) : 0
    if (fWild === GT) return true
    if (sWild === GT) return false
    if (fWild === STAR) {
      // matches any single token, literal or `*`
    } else if (sWild === STAR || !sameToken(filter, fi, fe, subject, si, se)) {
      return false
    }
    if (fe === fn) return se === sn
    if (se === sn) return false
    fi = fe + 1
    si = se + 1
  }
}

/**
 * Could the filters `a` and `b` both match some literal subject? Used to reject
 * overlapping stream subjects.
 */
export const subjectsCollide = (a: string, b: string): boolean => {
  const an = a.length
  const bn = b.length
  let ai = 0
  let bi = 0
  for (;;) {
    const ae = tokenEnd(a, ai)
    const be = tokenEnd(b, bi)
    const aWild = isWildcardToken(a, ai, ae) ? a.charCodeAt(ai) : 0
    const bWild = isWildcardToken(b, bi, be) ? b.charCodeAt(bi) : 0
    // Both still have a token here, so `>` on either side absorbs the rest of the other.
    if (aWild === GT || bWild === GT) return true
    if (aWild !== STAR && bWild !== STAR && !sameToken(a, ai, ae, b, bi, be)) return false
    if (ae === an || be === bn) return ae === an && be === bn
    ai = ae + 1
    bi = be + 1
  }
}
