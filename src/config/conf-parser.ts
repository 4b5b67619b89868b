// Parser of the NATS configuration-file format: `key = value` / `key: value` /
// `key value`, nested maps and arrays, comments, quoted and bare strings, numbers
// with size suffixes, booleans, `$variables` and `include`. Pure: files and the
// environment are injected, failures come back as a `ConfigError` value.
import { Either } from "effect"
import * as path from "node:path"
import { ConfigError, configError, type SourcePos } from "./errors.js"

/** An integer written with a size suffix (`64k`, `1MB`, `2Gi`); `text` keeps the spelling (`2m` may be a duration). */
export class ConfSize {
  constructor(readonly bytes: number, readonly text: string) {}
}

export type ConfValue = string | number | boolean | ConfSize | ConfMap | ConfArray
export interface ConfMap {
  readonly [key: string]: ConfValue
}
export type ConfArray = ReadonlyArray<ConfValue>

export interface ParseEnv {
  /** The text of a file, or undefined when it cannot be read. */
  readonly readFile: (path: string) => string | undefined
  readonly env: Readonly<Record<string, string | undefined>>
}

export interface ParsedConfig {
  readonly file: string
  readonly root: ConfMap
  /** Every file read, the main one first, then includes in the order met. */
  readonly files: ReadonlyArray<string>
  /** Where the key (or array element) at `path` was written; the deepest known prefix. */
  readonly locate: (path: ReadonlyArray<PropertyKey>) => SourcePos | undefined
  /** Whether `key` of `map` was referenced as a `$variable` (so it is a definition, not an unknown key). */
  readonly isUsedVariable: (map: ConfMap, key: string) => boolean
}

export const isConfMap = (u: unknown): u is ConfMap =>
  typeof u === "object" && u !== null && !Array.isArray(u) && !(u instanceof ConfSize)

const MAX_DEPTH = 100
const MAX_INCLUDE_DEPTH = 16

const Ch = {
  TAB: 9,
  LF: 10,
  CR: 13,
  SPACE: 32,
  DQUOTE: 34,
  HASH: 35,
  DOLLAR: 36,
  SQUOTE: 39,
  COMMA: 44,
  SLASH: 47,
  COLON: 58,
  SEMI: 59,
  EQ: 61,
  LBRACKET: 91,
  BACKSLASH: 92,
  RBRACKET: 93,
  LBRACE: 123,
  RBRACE: 125
} as const

const EOF = -1

const isInlineSpace = (c: number) => c === Ch.SPACE || c === Ch.TAB || c === Ch.CR

/** Characters that end a bare key. */
const endsKey = (c: number) =>
  c === EOF ||
  isInlineSpace(c) ||
  c === Ch.LF ||
  c === Ch.EQ ||
  c === Ch.COLON ||
  c === Ch.LBRACE ||
  c === Ch.RBRACE ||
  c === Ch.LBRACKET ||
  c === Ch.RBRACKET ||
  c === Ch.COMMA ||
  c === Ch.SEMI ||
  c === Ch.DQUOTE ||
  c === Ch.SQUOTE ||
  c === Ch.HASH

/** Characters that end a bare value (`listen: 127.0.0.1:4222` keeps its colon). */
const endsBare = (c: number) =>
  c === EOF ||
  isInlineSpace(c) ||
  c === Ch.LF ||
  c === Ch.COMMA ||
  c === Ch.SEMI ||
  c === Ch.RBRACE ||
  c === Ch.RBRACKET

const INT = /^[+-]?\d+$/
const FLOAT = /^[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/
const SIZE = /^([+-]?\d+)([kmgtp])(b|i|ib)?$/i
const BOOL = /^(?:true|false|yes|no|on|off)$/i
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
const SIZE_POWER: Record<string, number> = { k: 1, m: 2, g: 3, t: 4, p: 5 }

/**
 * Reads a size: `1k` = 1000, `1kb`/`1ki`/`1kib` = 1024, likewise m, g, t, p
 * (nats-server's convention, case-insensitive). Undefined when `text` is not one.
 */
export const parseSizeText = (text: string): number | undefined => {
  if (INT.test(text)) {
    const n = Number(text)
    return Number.isSafeInteger(n) ? n : undefined
  }
  const m = SIZE.exec(text)
  if (m === null) return undefined
  const base = m[3] === undefined ? 1000 : 1024
  const n = Number(m[1]) * base ** SIZE_POWER[m[2].toLowerCase()]
  return Number.isSafeInteger(n) ? n : undefined
}

/** Classifies a bare word that is not a variable: boolean, number, size or string. */
const classifyBare = (text: string): ConfValue => {
  if (BOOL.test(text)) {
    const t = text.toLowerCase()
    return t === "true" || t === "yes" || t === "on"
  }
  if (INT.test(text)) {
    const n = Number(text)
    return Number.isSafeInteger(n) ? n : text
  }
  if (FLOAT.test(text)) {
    const n = Number(text)
    return Number.isFinite(n) ? n : text
  }
  if (SIZE.test(text)) {
    const n = parseSizeText(text)
    return n === undefined ? text : new ConfSize(n, text)
  }
  return text
}

/** Thrown inside the parser only; `parseConfig` turns it into a value. */
class Fail {
  constructor(readonly error: ConfigError) {}
}

class Source {
  private readonly lineStarts: Array<number> = [0]
  readonly text: string
  constructor(text: string, readonly file: string) {
    this.text = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
    for (let i = 0; i < this.text.length; i++) {
      if (this.text.charCodeAt(i) === Ch.LF) this.lineStarts.push(i + 1)
    }
  }
  pos(offset: number): SourcePos {
    let lo = 0
    let hi = this.lineStarts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (this.lineStarts[mid] <= offset) lo = mid
      else hi = mid - 1
    }
    return { file: this.file, line: lo + 1, column: offset - this.lineStarts[lo] + 1 }
  }
}

/** Positions of keys and elements, and which keys were used as variables. */
class SourceIndex {
  private readonly positions = new WeakMap<object, Map<PropertyKey, SourcePos>>()
  private readonly used = new WeakMap<object, Set<string>>()

  setPos(container: object, key: PropertyKey, pos: SourcePos): void {
    let m = this.positions.get(container)
    if (m === undefined) this.positions.set(container, (m = new Map()))
    m.set(key, pos)
  }
  markUsed(map: object, key: string): void {
    let s = this.used.get(map)
    if (s === undefined) this.used.set(map, (s = new Set()))
    s.add(key)
  }
  isUsed(map: object, key: string): boolean {
    return this.used.get(map)?.has(key) ?? false
  }
  locate(root: ConfMap, keys: ReadonlyArray<PropertyKey>): SourcePos | undefined {
    let node: unknown = root
    let found: SourcePos | undefined
    for (const key of keys) {
      if (typeof node !== "object" || node === null) break
      const pos = this.positions.get(node)?.get(key)
      if (pos === undefined) break
      found = pos
      node = (node as Record<PropertyKey, unknown>)[key]
    }
    return found
  }
}

interface Scope {
  readonly map: Record<string, ConfValue>
  readonly parent: Scope | undefined
}

interface Context extends ParseEnv {
  readonly index: SourceIndex
  readonly files: Array<string>
  readonly includeStack: ReadonlyArray<string>
  /** Parsing an environment variable's value: no variables, no includes. */
  readonly envValue: boolean
}

const define = (target: Record<string, ConfValue>, key: string, value: ConfValue) =>
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })

const showChar = (c: number) => JSON.stringify(String.fromCharCode(c))

class FileParser {
  private i = 0

  constructor(
    private readonly src: Source,
    private readonly ctx: Context
  ) {}

  // ---- cursor -------------------------------------------------------------

  private peek(offset = 0): number {
    const j = this.i + offset
    return j < this.src.text.length ? this.src.text.charCodeAt(j) : EOF
  }

  private here(): SourcePos {
    return this.src.pos(this.i)
  }

  private fail(reason: ConfigError["reason"], detail: string, at: SourcePos = this.here()): never {
    throw new Fail(configError(reason, detail, at))
  }

  private atComment(): boolean {
    const c = this.peek()
    return c === Ch.HASH || (c === Ch.SLASH && this.peek(1) === Ch.SLASH)
  }

  private skipInline(): void {
    while (isInlineSpace(this.peek())) this.i++
  }

  private skipComment(): void {
    while (this.peek() !== EOF && this.peek() !== Ch.LF) this.i++
  }

  /** Skips blanks, newlines, comments and the separators of the enclosing block. */
  private skipTrivia(separators: "map" | "array"): void {
    for (;;) {
      const c = this.peek()
      if (isInlineSpace(c) || c === Ch.LF) this.i++
      else if (c === Ch.COMMA || (c === Ch.SEMI && separators === "map")) this.i++
      else if (this.atComment()) this.skipComment()
      else return
    }
  }

  /** After a value: only blanks, then a separator, a newline, a comment, a closer or the end. */
  private atValueEnd(): boolean {
    const c = this.peek()
    return c === EOF || c === Ch.LF || c === Ch.COMMA || c === Ch.SEMI || c === Ch.RBRACE || this.atComment()
  }

  // ---- blocks -------------------------------------------------------------

  /** A single value filling the whole text (an environment variable's), or undefined. */
  parseWholeValue(): ConfValue | undefined {
    this.skipInline()
    if (this.peek() === EOF) return undefined
    const value = this.parseValue(undefined, "", 0)
    this.skipTrivia("array")
    return this.peek() === EOF ? value : undefined
  }

  /** A whole file: a map body, optionally wrapped in `{ }` (JSON style). */
  parseTop(scope: Scope, depth: number): void {
    this.skipTrivia("map")
    if (this.peek() !== Ch.LBRACE) return this.parseBody(scope, undefined, depth)
    const open = this.here()
    this.i++
    this.parseBody(scope, open, depth)
    this.skipTrivia("map")
    if (this.peek() !== EOF) this.fail("Syntax", "unexpected text after the closing '}' of the file")
  }

  /** Key/value pairs into `scope.map` until `}` (when `open` is given) or the end of the file. */
  private parseBody(scope: Scope, open: SourcePos | undefined, depth: number): void {
    for (;;) {
      this.skipTrivia("map")
      const c = this.peek()
      if (c === EOF) {
        if (open !== undefined) this.fail("Syntax", "'{' is never closed", open)
        return
      }
      if (c === Ch.RBRACE) {
        if (open === undefined) this.fail("Syntax", "unexpected '}' with no block open")
        this.i++
        return
      }
      this.parseEntry(scope, depth)
    }
  }

  private parseEntry(scope: Scope, depth: number): void {
    const keyPos = this.here()
    const { key, quoted } = this.readKey()
    if (!quoted && key === "include" && isInlineSpace(this.peek())) return this.parseInclude(scope, depth)
    this.skipInline()
    const sep = this.peek()
    if (sep === Ch.EQ || sep === Ch.COLON) {
      this.i++
      this.skipInline()
    }
    if (this.atValueEnd()) this.fail("Syntax", `missing value for key "${key}"`)
    const value = this.parseValue(scope, key, depth)
    define(scope.map, key, value)
    this.ctx.index.setPos(scope.map, key, keyPos)
    this.expectValueEnd(key)
  }

  private expectValueEnd(key: string): void {
    this.skipInline()
    if (!this.atValueEnd()) {
      this.fail("Syntax", `unexpected text after the value of "${key}" (quote values that contain spaces)`)
    }
  }

  private readKey(): { key: string; quoted: boolean } {
    const c = this.peek()
    if (c === Ch.DQUOTE) return { key: this.readDoubleQuoted(), quoted: true }
    if (c === Ch.SQUOTE) return { key: this.readSingleQuoted(), quoted: true }
    const start = this.i
    while (!endsKey(this.peek())) this.i++
    if (this.i === start) this.fail("Syntax", `unexpected ${showChar(c)} where a key was expected`)
    return { key: this.src.text.slice(start, this.i), quoted: false }
  }

  private parseValue(scope: Scope | undefined, key: string, depth: number): ConfValue {
    if (depth >= MAX_DEPTH) this.fail("Syntax", `blocks nested more than ${MAX_DEPTH} deep`)
    const c = this.peek()
    switch (c) {
      case Ch.LBRACE: {
        const open = this.here()
        this.i++
        const map: Record<string, ConfValue> = {}
        this.parseBody({ map, parent: scope }, open, depth + 1)
        return map
      }
      case Ch.LBRACKET:
        return this.parseArray(scope, key, depth + 1)
      case Ch.DQUOTE:
        return this.readDoubleQuoted()
      case Ch.SQUOTE:
        return this.readSingleQuoted()
      default:
        return this.parseBare(scope)
    }
  }

  private parseArray(scope: Scope | undefined, key: string, depth: number): ConfArray {
    const open = this.here()
    this.i++
    const items: Array<ConfValue> = []
    for (;;) {
      this.skipTrivia("array")
      const c = this.peek()
      if (c === EOF) this.fail("Syntax", "'[' is never closed", open)
      if (c === Ch.RBRACKET) {
        this.i++
        return items
      }
      const at = this.here()
      items.push(this.parseValue(scope, key, depth))
      this.ctx.index.setPos(items, items.length - 1, at)
      this.skipInline()
      const after = this.peek()
      if (after !== Ch.COMMA && after !== Ch.LF && after !== Ch.RBRACKET && after !== EOF && !this.atComment()) {
        this.fail("Syntax", `expected ',' or ']' after an element of "${key}"`)
      }
    }
  }

  // ---- scalars ------------------------------------------------------------

  private parseBare(scope: Scope | undefined): ConfValue {
    const start = this.i
    while (!endsBare(this.peek())) this.i++
    if (this.i === start) this.fail("Syntax", `unexpected ${showChar(this.peek())} where a value was expected`)
    const text = this.src.text.slice(start, this.i)
    if (text.charCodeAt(0) !== Ch.DOLLAR) return classifyBare(text)
    const name = text.slice(1)
    // `$2a$11$…` is a bcrypt hash, not a variable.
    if (/^\d/.test(name)) return text
    if (this.ctx.envValue || !VAR_NAME.test(name)) {
      this.fail(
        "Variable",
        "invalid variable reference: after '$' comes a name of letters, digits and '_' (quote the value if it is a literal string)",
        this.src.pos(start)
      )
    }
    return this.resolveVariable(name, scope, this.src.pos(start))
  }

  private resolveVariable(name: string, scope: Scope | undefined, at: SourcePos): ConfValue {
    for (let s = scope; s !== undefined; s = s.parent) {
      if (Object.prototype.hasOwnProperty.call(s.map, name)) {
        this.ctx.index.markUsed(s.map, name)
        return s.map[name]
      }
    }
    // Own properties only: `$toString` or `$constructor` must not find Object.prototype's
    // functions (found by the fuzzer: the server died with a TypeError).
    const fromEnv = Object.prototype.hasOwnProperty.call(this.ctx.env, name) ? this.ctx.env[name] : undefined
    if (typeof fromEnv !== "string") {
      this.fail("Variable", `variable "$${name}" is not defined in an enclosing block or the environment`, at)
    }
    return parseEnvValue(fromEnv, name, this.ctx)
  }

  private readDoubleQuoted(): string {
    const open = this.here()
    this.i++
    let out = ""
    let runStart = this.i
    for (;;) {
      const c = this.peek()
      if (c === EOF || c === Ch.LF) this.fail("Syntax", "string is never closed (a '\"' string ends on its line)", open)
      if (c === Ch.DQUOTE) {
        out += this.src.text.slice(runStart, this.i)
        this.i++
        return out
      }
      if (c === Ch.BACKSLASH) {
        out += this.src.text.slice(runStart, this.i)
        out += this.readEscape()
        runStart = this.i
      } else {
        this.i++
      }
    }
  }

  private readEscape(): string {
    const at = this.here()
    const c = this.peek(1)
    this.i += 2
    switch (c) {
      case 0x74: // t
        return "\t"
      case 0x6e: // n
        return "\n"
      case 0x72: // r
        return "\r"
      case 0x62: // b
        return "\b"
      case 0x66: // f
        return "\f"
      case Ch.DQUOTE:
      case Ch.SQUOTE:
      case Ch.BACKSLASH:
      case Ch.SLASH:
      case Ch.DOLLAR:
        return String.fromCharCode(c)
      case 0x75: // uXXXX
        return this.readHexEscape(4, at)
      case 0x55: // UXXXXXXXX
        return this.readHexEscape(8, at)
      case 0x78: // xXX
        return this.readHexEscape(2, at)
      default:
        return this.fail("Syntax", "invalid escape sequence in a string (use \\\\ for a backslash)", at)
    }
  }

  private readHexEscape(digits: number, at: SourcePos): string {
    const hex = this.src.text.slice(this.i, this.i + digits)
    const code = /^[0-9a-fA-F]+$/.test(hex) && hex.length === digits ? parseInt(hex, 16) : NaN
    if (!(code <= 0x10ffff)) this.fail("Syntax", "invalid escape sequence in a string", at)
    this.i += digits
    return String.fromCodePoint(code)
  }

  private readSingleQuoted(): string {
    const open = this.here()
    const end = this.src.text.indexOf("'", this.i + 1)
    if (end < 0) this.fail("Syntax", "string is never closed (missing \"'\")", open)
    const s = this.src.text.slice(this.i + 1, end)
    this.i = end + 1
    return s
  }

  // ---- include ------------------------------------------------------------

  private parseInclude(scope: Scope, depth: number): void {
    this.skipInline()
    const at = this.here()
    const c = this.peek()
    let name: string
    if (c === Ch.DQUOTE) name = this.readDoubleQuoted()
    else if (c === Ch.SQUOTE) name = this.readSingleQuoted()
    else {
      const start = this.i
      while (!endsBare(this.peek())) this.i++
      name = this.src.text.slice(start, this.i)
    }
    if (name === "") this.fail("Include", "include needs a file name", at)
    this.expectValueEnd("include")
    if (this.ctx.envValue) this.fail("Include", "include is not allowed here", at)
    const file = path.isAbsolute(name) ? path.normalize(name) : path.join(path.dirname(this.src.file), name)
    const stack = this.ctx.includeStack
    if (stack.includes(file)) {
      this.fail("Include", `include cycle: ${[...stack, file].map((f) => path.basename(f)).join(" -> ")}`, at)
    }
    if (stack.length > MAX_INCLUDE_DEPTH) this.fail("Include", `includes nested more than ${MAX_INCLUDE_DEPTH} deep`, at)
    const text = this.ctx.readFile(file)
    if (text === undefined) this.fail("Include", `cannot read include file "${name}" (looked for ${file})`, at)
    this.ctx.files.push(file)
    const child = new FileParser(new Source(text, file), { ...this.ctx, includeStack: [...stack, file] })
    child.parseTop(scope, depth)
  }
}

/** An environment variable's value is parsed like a value (`22` is a number); anything else stays a string. */
const parseEnvValue = (text: string, name: string, ctx: Context): ConfValue => {
  const parser = new FileParser(new Source(text, `$${name}`), { ...ctx, envValue: true })
  try {
    return parser.parseWholeValue() ?? text
  } catch (e) {
    if (e instanceof Fail) return text
    throw e
  }
}

/**
 * Parses configuration text. `file` names it in errors and anchors relative
 * includes; includes are read with `readFile`, unresolved `$VARS` with `env`.
 */
export const parseConfig = (text: string, file: string, env: ParseEnv): Either.Either<ParsedConfig, ConfigError> => {
  const index = new SourceIndex()
  const files = [file]
  const ctx: Context = { ...env, index, files, includeStack: [file], envValue: false }
  const root: Record<string, ConfValue> = {}
  try {
    new FileParser(new Source(text, file), ctx).parseTop({ map: root, parent: undefined }, 0)
  } catch (e) {
    if (e instanceof Fail) return Either.left(e.error)
    throw e
  }
  return Either.right({
    file,
    root,
    files,
    locate: (keys) => index.locate(root, keys),
    isUsedVariable: (map, key) => index.isUsed(map, key)
  })
}

/** Reads `file` with `env.readFile` and parses it. */
export const parseConfigFile = (file: string, env: ParseEnv): Either.Either<ParsedConfig, ConfigError> => {
  const text = env.readFile(file)
  if (text === undefined) return Either.left(configError("File", `cannot read configuration file "${file}"`))
  return parseConfig(text, file, env)
}
