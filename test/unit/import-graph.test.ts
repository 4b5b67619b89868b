// The shape issue #16 reached, kept: no import circle anywhere in src/ (type-only imports
// count too: a circle of types is still two modules that cannot be read apart), and the
// floors import only downwards: core and schema import nothing of the shell, the engine
// nothing of the server.
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const SRC = path.resolve(__dirname, "../../src")

const files = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    return e.isDirectory() ? files(p) : e.name.endsWith(".ts") ? [p] : []
  })

/** Each module's relative imports (static, `export ... from`, and `import("...")` with a literal), as files. */
const graph = (): Map<string, Array<string>> => {
  const g = new Map<string, Array<string>>()
  for (const f of files(SRC)) {
    const text = fs.readFileSync(f, "utf8")
    const deps = new Set<string>()
    for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)"(\.{1,2}\/[^"]+)"/g)) {
      const target = path.resolve(path.dirname(f), m[1]!.replace(/\.js$/, ".ts"))
      if (fs.existsSync(target)) deps.add(target)
    }
    g.set(f, [...deps])
  }
  return g
}

/** Strongly connected components of more than one module (Tarjan). */
const circles = (g: Map<string, Array<string>>): Array<Array<string>> => {
  let index = 0
  const idx = new Map<string, number>(), low = new Map<string, number>(), on = new Set<string>(), stack: Array<string> = []
  const out: Array<Array<string>> = []
  const visit = (v: string): void => {
    idx.set(v, index)
    low.set(v, index++)
    stack.push(v)
    on.add(v)
    for (const w of g.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!))
    }
    if (low.get(v) === idx.get(v)) {
      const comp: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        on.delete(w)
        comp.push(path.relative(SRC, w))
      } while (w !== v)
      if (comp.length > 1) out.push(comp.sort())
    }
  }
  for (const v of g.keys()) if (!idx.has(v)) visit(v)
  return out
}

describe("the import graph of src/", () => {
  const g = graph()

  it("has no circle", () => {
    expect(circles(g)).toEqual([])
  })

  it("imports only downwards: core and schema nothing of the shell, the engine nothing of the server", () => {
    const wrong: Array<string> = []
    for (const [f, deps] of g) {
      const from = path.relative(SRC, f)
      for (const d of deps) {
        const to = path.relative(SRC, d)
        const pure = from.startsWith("core/") || from.startsWith("schema/")
        if (pure && /^(server|services|engine|config|sim|fuzz)\//.test(to)) wrong.push(`${from} -> ${to}`)
        if (from.startsWith("engine/") && /^(server|services)\//.test(to)) wrong.push(`${from} -> ${to}`)
      }
    }
    expect(wrong).toEqual([])
  })

  it("sees the modules it checks (the graph is not empty by a wrong path)", () => {
    expect(g.size).toBeGreaterThan(150)
    expect([...g.values()].reduce((n, d) => n + d.length, 0)).toBeGreaterThan(500)
  })
})
