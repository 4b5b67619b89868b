// The conf parser: every syntax form, scalars, variables, includes, and each
// syntax error with the line and column it reports.
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as path from "node:path"
import {
  ConfSize,
  parseConfig,
  parseConfigFile,
  parseSizeText,
  type ConfValue,
  type ParseEnv
} from "../../src/config/conf-parser.js"
import type { ConfigError } from "../../src/config/errors.js"

const noFiles: ParseEnv = { readFile: () => undefined, env: {} }

const parse = (text: string, env: ParseEnv = noFiles) => {
  const r = parseConfig(text, "test.conf", env)
  if (Either.isLeft(r)) throw new Error(`unexpected error: ${r.left.message}`)
  return r.right.root
}

const parseError = (text: string, env: ParseEnv = noFiles): ConfigError => {
  const r = parseConfig(text, "test.conf", env)
  if (Either.isRight(r)) throw new Error(`expected an error, got ${JSON.stringify(r.right.root)}`)
  return r.left
}

const memory = (files: Record<string, string>, env: Record<string, string> = {}): ParseEnv => ({
  readFile: (p) => files[p],
  env
})

describe("key/value forms", () => {
  it("accepts '=', ':' and whitespace as separators", () => {
    expect(parse("a = 1\nb: 2\nc 3\nd=4\ne:5")).toEqual({ a: 1, b: 2, c: 3, d: 4, e: 5 })
  })

  it("accepts ';' and ',' as terminators", () => {
    expect(parse("foo='1'; bar=2.2; baz=true; boo=22")).toEqual({ foo: "1", bar: 2.2, baz: true, boo: 22 })
    expect(parse("a: 1, b: 2")).toEqual({ a: 1, b: 2 })
  })

  it("accepts quoted keys", () => {
    expect(parse(`"http port": 8222\n'x': y`)).toEqual({ "http port": 8222, x: "y" })
  })

  it("lets a later key win", () => {
    expect(parse("port: 1\nport: 2")).toEqual({ port: 2 })
  })

  it("parses an empty file and a file of comments", () => {
    expect(parse("")).toEqual({})
    expect(parse("\n\n   \n")).toEqual({})
    expect(parse("# just comments\n// and more\n")).toEqual({})
  })

  it("keeps keys named like Object.prototype members as plain data", () => {
    const root = parse("__proto__: 1\nconstructor: 2")
    expect(Object.keys(root)).toEqual(["__proto__", "constructor"])
    expect(root["__proto__"]).toBe(1)
    expect(Object.getPrototypeOf(root)).toBe(Object.prototype)
  })
})

describe("maps and arrays", () => {
  it("parses nested maps with and without separators", () => {
    const text = `
      foo {
        host {
          ip   = '127.0.0.1'
          port = 4242
        }
        servers = [ "a.com", "b.com", "c.com"]
      }
      bar: { x: 1 }
      baz = { y: 2 }
    `
    expect(parse(text)).toEqual({
      foo: { host: { ip: "127.0.0.1", port: 4242 }, servers: ["a.com", "b.com", "c.com"] },
      bar: { x: 1 },
      baz: { y: 2 }
    })
  })

  it("separates array elements by commas or newlines, with comments between", () => {
    const text = `
      routes = [
        nats-route://foo:bar@apcera.me:4245   # first
        nats-route://foo:bar@apcera.me:4246,  // second
        "third", 4
      ]
    `
    expect(parse(text)).toEqual({
      routes: ["nats-route://foo:bar@apcera.me:4245", "nats-route://foo:bar@apcera.me:4246", "third", 4]
    })
  })

  it("parses arrays of maps and empty containers", () => {
    expect(parse("array [\n { abc: 123 }\n { xyz: \"word\" }\n]\ne = []\nm = {}")).toEqual({
      array: [{ abc: 123 }, { xyz: "word" }],
      e: [],
      m: {}
    })
  })

  it("accepts a file wrapped in braces, JSON style", () => {
    const text = `{
      "http_port": 8227,
      "port": 4227,
      "write_deadline": "1h",
      "cluster": { "port": 6222, "routes": ["nats://127.0.0.1:4222", "nats://127.0.0.1:4223"] },
    }`
    expect(parse(text)).toEqual({
      http_port: 8227,
      port: 4227,
      write_deadline: "1h",
      cluster: { port: 6222, routes: ["nats://127.0.0.1:4222", "nats://127.0.0.1:4223"] }
    })
    expect(parse("{}")).toEqual({})
    expect(parse("{ listen: 0.0.0.0:4222 }")).toEqual({ listen: "0.0.0.0:4222" })
  })
})

describe("comments", () => {
  it("ignores # and // comments on their own lines and after values", () => {
    const text = `
      # hash comment
      // slash comment
      port: 4222 # trailing
      host: 0.0.0.0 // trailing
      list: [1, 2] # after a list
      map { a: 1 } // after a map
    `
    expect(parse(text)).toEqual({ port: 4222, host: "0.0.0.0", list: [1, 2], map: { a: 1 } })
  })

  it("keeps '//' and '#' that are part of a bare value", () => {
    expect(parse("url: nats://host:4222\npw: abc#123")).toEqual({ url: "nats://host:4222", pw: "abc#123" })
  })
})

describe("strings", () => {
  it("reads bare strings, including host:port and IPs", () => {
    expect(parse("host: 0.0.0.0\nlisten: 127.0.0.1:4222\nname: my-server_1\nnow: 2016-05-04T18:53:41Z")).toEqual({
      host: "0.0.0.0",
      listen: "127.0.0.1:4222",
      name: "my-server_1",
      now: "2016-05-04T18:53:41Z"
    })
  })

  it("reads double-quoted strings with escapes", () => {
    expect(parse(String.raw`s: "a\tb\nc\"d\\e\/f\u00e9\x41"`)).toEqual({ s: 'a\tb\nc"d\\e/féA' })
  })

  it("reads single-quoted strings raw, across lines", () => {
    expect(parse("expr = '(true == \"false\")'\ntext = 'multi\nline \\n'")).toEqual({
      expr: '(true == "false")',
      text: "multi\nline \\n"
    })
  })

  it("keeps quoted numbers, booleans and $ as strings", () => {
    expect(parse(`a: "22"\nb: 'true'\nc: "$NOT_A_VAR"`)).toEqual({ a: "22", b: "true", c: "$NOT_A_VAR" })
  })

  it("reads words that start with digits but are not numbers as strings", () => {
    expect(parse("a: 0K1abc\nb: 8m4dwr\nc: 5e7bcd-abc10\nd: 1.2.3\ne: 3secret")).toEqual({
      a: "0K1abc",
      b: "8m4dwr",
      c: "5e7bcd-abc10",
      d: "1.2.3",
      e: "3secret"
    })
  })
})

describe("numbers and booleans", () => {
  it("reads integers, negative integers and floats", () => {
    expect(parse("a: 22\nb: -1\nc: 2.5\nd: -0.5\ne: 1e3\nf: +7")).toEqual({ a: 22, b: -1, c: 2.5, d: -0.5, e: 1000, f: 7 })
  })

  it("keeps integers too large to be exact as strings", () => {
    expect(parse("a: 123456789012345678901234")).toEqual({ a: "123456789012345678901234" })
  })

  it("reads size suffixes as nats-server does: k = 1000, kb/ki/kib = 1024, case-insensitive", () => {
    const root = parse(`
      k = 8k
      kb = 4kb
      ki = 3ki
      kib = 4KiB
      m = 1m
      mb = 2MB
      mi = 2Mi
      mib = 64MiB
      g = 2g
      gb = 22GB
      gib = 1GiB
      tb = 1TB
      neg = -1MB
    `)
    const bytes = Object.fromEntries(Object.entries(root).map(([k, v]) => [k, (v as ConfSize).bytes]))
    expect(bytes).toEqual({
      k: 8000,
      kb: 4096,
      ki: 3072,
      kib: 4096,
      m: 1_000_000,
      mb: 2 * 1024 ** 2,
      mi: 2 * 1024 ** 2,
      mib: 64 * 1024 ** 2,
      g: 2e9,
      gb: 22 * 1024 ** 3,
      gib: 1024 ** 3,
      tb: 1024 ** 4,
      neg: -(1024 ** 2)
    })
    expect(root.mb).toEqual(new ConfSize(2 * 1024 ** 2, "2MB"))
  })

  it("parseSizeText agrees with the parser", () => {
    expect(parseSizeText("64k")).toBe(64_000)
    expect(parseSizeText("1KB")).toBe(1024)
    expect(parseSizeText("10M")).toBe(10_000_000)
    expect(parseSizeText("1Mi")).toBe(1024 ** 2)
    expect(parseSizeText("123")).toBe(123)
    expect(parseSizeText("abc")).toBeUndefined()
    expect(parseSizeText("1.5MB")).toBeUndefined()
  })

  it("reads booleans true/false/yes/no/on/off in any case", () => {
    expect(parse("a: true\nb: TRUE\nc: yes\nd: On\ne: false\nf: NO\ng: off\nh: False")).toEqual({
      a: true,
      b: true,
      c: true,
      d: true,
      e: false,
      f: false,
      g: false,
      h: false
    })
  })

  it("keeps durations as written: strings, or a size whose text is kept", () => {
    const root = parse(`a: "30s"\nb: 30s\nc: 1h30m\nd: 500ms\ne: 2m`)
    expect(root.a).toBe("30s")
    expect(root.b).toBe("30s")
    expect(root.c).toBe("1h30m")
    expect(root.d).toBe("500ms")
    expect(root.e).toEqual(new ConfSize(2_000_000, "2m"))
  })
})

describe("variables", () => {
  it("resolves a variable defined earlier in the same block", () => {
    expect(parse("index = 22\nfoo = $index")).toEqual({ index: 22, foo: 22 })
  })

  it("resolves from the innermost enclosing block first", () => {
    const text = `
      index = 22
      nest {
        index = 11
        foo = $index
        deeper { bar = $index }
      }
      bar = $index
    `
    expect(parse(text)).toEqual({ index: 22, nest: { index: 11, foo: 11, deeper: { bar: 11 } }, bar: 22 })
  })

  it("resolves maps and lists by value, from maps inside lists too", () => {
    const text = `
      USERS = [ { user: a } ]
      PERMS = { publish: "x" }
      authorization { users = $USERS }
      list = [ { p: $PERMS } ]
    `
    expect(parse(text)).toMatchObject({ authorization: { users: [{ user: "a" }] }, list: [{ p: { publish: "x" } }] })
  })

  it("falls back to the environment, parsing the value like a value", () => {
    const env = memory({}, { NUM: "22", WORD: "xyz", QUOTED: "'3xyz'", SIZE: "3Gyz", MAP: "{ a: 1 }", SPACED: "a b" })
    expect(parse("a=$NUM\nb=$WORD\nc=$QUOTED\nd=$SIZE\ne=$MAP\nf=$SPACED", env)).toEqual({
      a: 22,
      b: "xyz",
      c: "3xyz",
      d: "3Gyz",
      e: { a: 1 },
      f: "a b"
    })
  })

  it("prefers a block variable over the environment", () => {
    expect(parse("TOKEN: local\nt: $TOKEN", memory({}, { TOKEN: "env" }))).toEqual({ TOKEN: "local", t: "local" })
  })

  it("reads $2a$… (bcrypt hashes) as strings", () => {
    expect(parse("password: $2a$11$ooo")).toEqual({ password: "$2a$11$ooo" })
  })

  it("records which keys were used as variables", () => {
    const r = parseConfig("A = 1\nB = 2\nc = $A\nn { d = $A }", "t.conf", noFiles)
    if (Either.isLeft(r)) throw new Error(r.left.message)
    expect(r.right.isUsedVariable(r.right.root, "A")).toBe(true)
    expect(r.right.isUsedVariable(r.right.root, "B")).toBe(false)
  })

  it("fails on an undefined variable, at the reference", () => {
    const e = parseError("port: 4222\nfoo = $index")
    expect(e.reason).toBe("Variable")
    expect([e.file, e.line, e.column]).toEqual(["test.conf", 2, 7])
    expect(e.message).toBe('test.conf:2:7: variable "$index" is not defined in an enclosing block or the environment')
  })

  it("a variable named like an Object.prototype member is undefined, not a crash (found by the fuzzer)", () => {
    for (const name of ["toString", "constructor", "__proto__", "hasOwnProperty"]) {
      const r = parseConfig(`port: $${name}\n`, "test.conf", { readFile: () => undefined, env: process.env })
      expect(Either.isLeft(r) && r.left.reason).toBe("Variable")
    }
  })

  it("does not see variables of sibling or later blocks", () => {
    expect(parseError("a { X = 1 }\nb { y = $X }").reason).toBe("Variable")
    expect(parseError("y = $X\nX = 1").reason).toBe("Variable")
  })

  it("fails on a malformed reference without echoing it", () => {
    const e = parseError("password: $ecret!pass")
    expect(e.reason).toBe("Variable")
    expect([e.line, e.column]).toEqual([1, 11])
    expect(e.message).not.toContain("ecret")
  })
})

describe("include", () => {
  const here = path.dirname(fileURLToPath(import.meta.url))
  const fixtures = path.join(here, "..", "fixtures", "config")
  const disk: ParseEnv = {
    readFile: (p) => {
      try {
        return readFileSync(p, "utf8")
      } catch {
        return undefined
      }
    },
    env: {}
  }

  it("merges included files relative to the including file, variables included", () => {
    const r = parseConfigFile(path.join(fixtures, "main.conf"), disk)
    if (Either.isLeft(r)) throw new Error(r.left.message)
    expect(r.right.root).toEqual({
      port: 4300,
      max_payload: new ConfSize(512 * 1024, "512KB"),
      max_connections: 50,
      authorization: {
        ALICE_PASS: "alice-secret",
        BOB_PASS: "bob-secret",
        users: [
          { user: "alice", password: "alice-secret" },
          { user: "bob", password: "bob-secret" }
        ]
      }
    })
    expect(r.right.files.map((f) => path.relative(fixtures, f))).toEqual([
      "main.conf",
      path.join("includes", "limits.conf"),
      path.join("includes", "passwords.conf")
    ])
    // Positions point into the file that holds the key.
    expect(r.right.locate(["max_payload"])).toEqual({ file: path.join(fixtures, "includes", "limits.conf"), line: 1, column: 1 })
    expect(r.right.locate(["authorization", "users", 1])).toMatchObject({ line: 9, column: 5 })
  })

  it("accepts bare, double- and single-quoted names", () => {
    const files = { "/c/a.conf": "a: 1", "/c/b.conf": "b: 2", "/c/sub/c.conf": "c: 3" }
    const text = `include a.conf\ninclude "b.conf"\ninclude 'sub/c.conf'`
    const r = parseConfig(text, "/c/main.conf", memory(files))
    expect(Either.getOrThrow(r).root).toEqual({ a: 1, b: 2, c: 3 })
  })

  it("accepts an included file wrapped in braces", () => {
    const r = parseConfig("accounts { foo { include 'foo.json' } }", "/c/main.conf", memory({
      "/c/foo.json": `{ "users": [ {"user": "foo"} ] }`
    }))
    expect(Either.getOrThrow(r).root).toEqual({ accounts: { foo: { users: [{ user: "foo" }] } } })
  })

  it("lets included text use the including file's variables", () => {
    const r = parseConfig("PORT = 5000\ninclude x.conf", "/c/main.conf", memory({ "/c/x.conf": "port: $PORT" }))
    expect(Either.getOrThrow(r).root).toEqual({ PORT: 5000, port: 5000 })
  })

  it("treats include followed by ':' as an ordinary key", () => {
    expect(parse("include: yes")).toEqual({ include: true })
  })

  it("fails on a missing include, at the directive", () => {
    const r = parseConfigFile(path.join(fixtures, "bad-include.conf"), disk)
    const e = Either.getLeft(r).pipe((o) => (o._tag === "Some" ? o.value : undefined))!
    expect(e.reason).toBe("Include")
    expect([path.basename(e.file!), e.line, e.column]).toEqual(["bad-include.conf", 2, 9])
    expect(e.message).toContain('cannot read include file "./includes/missing.conf"')
  })

  it("fails on an include cycle", () => {
    const r = parseConfigFile(path.join(fixtures, "cycle-a.conf"), disk)
    const e = Either.getLeft(r).pipe((o) => (o._tag === "Some" ? o.value : undefined))!
    expect(e.reason).toBe("Include")
    expect(e.detail).toBe("include cycle: cycle-a.conf -> cycle-b.conf -> cycle-a.conf")
    expect([path.basename(e.file!), e.line]).toEqual(["cycle-b.conf", 2])
  })

  it("reports syntax errors inside an include with the included file's name", () => {
    const e = Either.getLeft(parseConfig("a: 1\ninclude bad.conf", "/c/main.conf", memory({ "/c/bad.conf": "\n  x = [1, 2" })))
    expect(e._tag === "Some" && [e.value.reason, e.value.file, e.value.line, e.value.column]).toEqual([
      "Syntax",
      "/c/bad.conf",
      2,
      7
    ])
  })

  it("fails when the main file cannot be read", () => {
    const e = Either.getLeft(parseConfigFile("/nope.conf", noFiles))
    expect(e._tag === "Some" && [e.value.reason, e.value.message]).toEqual([
      "File",
      'cannot read configuration file "/nope.conf"'
    ])
  })

  it("fails on include without a name", () => {
    const e = parseError("include   \n")
    expect([e.reason, e.line, e.column, e.detail]).toEqual(["Include", 1, 11, "include needs a file name"])
    const e2 = parseError("include ''")
    expect([e2.reason, e2.line, e2.column]).toEqual(["Include", 1, 9])
  })
})

describe("syntax errors carry the file, line and column", () => {
  const cases: ReadonlyArray<readonly [string, string, number, number, string]> = [
    ["key without a value", "port: 4222\n  lonely\n", 2, 9, 'missing value for key "lonely"'],
    ["key with a separator and no value", "port =   # nothing\n", 1, 10, 'missing value for key "port"'],
    ["text after a value", "port: 4222\nname: my server\n", 2, 10, 'unexpected text after the value of "name"'],
    ["unclosed map", "a {\n  b: 1\n", 1, 3, "'{' is never closed"],
    ["unclosed array", "a: 1\nb [1, 2\n", 2, 3, "'[' is never closed"],
    ["stray closing brace", "a: 1\n}\n", 2, 1, "unexpected '}' with no block open"],
    ["missing comma in an array", "a: [1 2]", 1, 7, `expected ',' or ']' after an element of "a"`],
    ["unterminated double quote", 'a: 1\nb: "abc\n', 2, 4, "string is never closed"],
    ["unterminated single quote", "a: 'abc", 1, 4, "string is never closed"],
    ["bad escape", 'a: "x\\qy"', 1, 6, "invalid escape sequence"],
    ["bad unicode escape", 'a: "\\u12"', 1, 5, "invalid escape sequence"],
    ["a value where a key belongs", "a: 1\n= 2", 2, 1, `unexpected "=" where a key was expected`],
    ["a closing bracket as a value", "a: ]", 1, 4, `unexpected "]" where a value was expected`],
    ["text after a braced file", "{ a: 1 }\nb: 2", 2, 1, "unexpected text after the closing '}'"]
  ]
  for (const [name, text, line, column, detail] of cases) {
    it(name, () => {
      const e = parseError(text)
      expect(e._tag).toBe("ConfigError")
      expect(e.reason).toBe("Syntax")
      expect([e.file, e.line, e.column]).toEqual(["test.conf", line, column])
      expect(e.detail).toContain(detail)
      expect(e.message.startsWith(`test.conf:${line}:${column}: `)).toBe(true)
    })
  }

  it("counts columns after CRLF line ends and a BOM", () => {
    const e = parseError("\uFEFFa: 1\r\nb c d\r\n")
    expect([e.line, e.column]).toEqual([2, 5])
  })

  it("limits nesting instead of overflowing the stack", () => {
    const e = parseError("a: " + "[".repeat(10_000))
    expect(e.detail).toContain("nested more than")
  })

  it("never echoes the text of a bad value", () => {
    const e = parseError('password: "hunter2 and more\n')
    expect(e.message).not.toContain("hunter2")
    const e2 = parseError("password: hunter2 hunter3")
    expect(e2.message).not.toContain("hunter")
  })
})

// ---- properties ---------------------------------------------------------------

/** Prints a tree in one of the syntaxes the format allows. */
const printValue = (v: ConfValue, style: number, indent: string): string => {
  if (typeof v === "string") return JSON.stringify(v)
  if (typeof v === "number" || typeof v === "boolean") return String(v)
  if (v instanceof ConfSize) return v.text
  if (Array.isArray(v)) {
    const sep = style % 2 === 0 ? ", " : `\n${indent}  `
    return `[${sep === ", " ? "" : sep}${v.map((x) => printValue(x, style, indent + "  ")).join(sep)}${sep === ", " ? "" : "\n" + indent}]`
  }
  return `{\n${printBody(v as Record<string, ConfValue>, style, indent + "  ")}${indent}}`
}

const SEPARATORS = [" = ", ": ", " ", ":", "="]

const printBody = (m: Record<string, ConfValue>, style: number, indent: string): string =>
  Object.entries(m)
    .map(([k, v], i) => {
      const sep = SEPARATORS[(style + i) % SEPARATORS.length]
      const comment = (style + i) % 3 === 0 ? " # note" : (style + i) % 3 === 1 ? " // note" : ""
      return `${indent}${JSON.stringify(k)}${sep}${printValue(v, style, indent)}${comment}\n`
    })
    .join("")

const scalar = fc.oneof(
  fc.string({ unit: "grapheme" }),
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }).filter((d) => !Object.is(d, -0)),
  fc.boolean()
)

const tree = fc.letrec<{ value: ConfValue; map: Record<string, ConfValue> }>((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, tie("map"), fc.array(tie("value"), { maxLength: 4 })),
  map: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }).filter((k) => k !== "include"), tie("value"), {
    maxKeys: 5,
    noNullPrototype: true
  })
})).map

describe("properties", () => {
  it("never throws: any text gives a tree or a ConfigError", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (text) => {
        const r = parseConfig(text, "fuzz.conf", memory({ "/x.conf": text }, { A: "1" }))
        if (Either.isLeft(r)) expect(r.left._tag).toBe("ConfigError")
      }),
      { numRuns: 2000 }
    )
  })

  it("never throws on text made of the format's own tokens", () => {
    const token = fc.constantFrom(
      "{", "}", "[", "]", ",", ";", ":", "=", " ", "\n", "\t", "#", "//", '"', "'", "\\", "$", "$A", "$B",
      "include", "include x.conf", "a", "port", "1", "-1", "2.5", "1MB", "30s", "true", "0.0.0.0:4222", "\\u00e9"
    )
    fc.assert(
      fc.property(fc.array(token, { maxLength: 60 }), (tokens) => {
        const text = tokens.join("")
        const r = parseConfig(text, "/fuzz.conf", memory({ "/x.conf": text }, { A: "{ b: [1, $A] }" }))
        if (Either.isLeft(r)) {
          expect(r.left._tag).toBe("ConfigError")
          expect(r.left.line).toBeGreaterThanOrEqual(1)
        }
      }),
      { numRuns: 3000 }
    )
  })

  it("reads back what it prints, in every syntax style", () => {
    fc.assert(
      fc.property(tree, fc.nat(30), (m, style) => {
        const text = printBody(m, style, "")
        const r = parseConfig(text, "rt.conf", noFiles)
        if (Either.isLeft(r)) throw new Error(`${r.left.message}\n${text}`)
        expect(r.right.root).toEqual(m)
      }),
      { numRuns: 500 }
    )
  })
})
