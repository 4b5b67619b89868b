// schemas/ is generated from the endpoint table: the checked-in files must be
// exactly what the generator produces, and every one must compile.
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Ajv } from "ajv"
import addFormats from "ajv-formats"
import { MonitorEndpoints } from "../../src/core/monitor/endpoints.js"
import { generateSchemaFiles, MonitorApiVersion } from "../../src/core/monitor/openapi.js"

const dir = join(process.cwd(), "schemas")

describe("schemas/", () => {
  const generated = generateSchemaFiles(MonitorEndpoints, MonitorApiVersion)

  it("matches the generator (run `npm run schemas` after changing a schema)", () => {
    const onDisk = readdirSync(dir).filter((f) => f.endsWith(".json")).sort()
    expect(onDisk).toEqual(Object.keys(generated).sort())
    for (const [name, contents] of Object.entries(generated)) expect(readFileSync(join(dir, name), "utf8"), name).toBe(contents)
  })

  it("has one schema per JSON endpoint, each compiling under ajv", () => {
    const ajv = new Ajv({ strict: false })
    addFormats.default(ajv)
    for (const e of MonitorEndpoints) {
      if (e.response === undefined) continue
      expect(() => ajv.compile(JSON.parse(generated[`${e.name}.json`])), e.name).not.toThrow()
    }
  })

  it("the OpenAPI document covers every path, alias, parameter and error answer", () => {
    const doc = JSON.parse(generated["openapi.json"])
    expect(doc.openapi).toBe("3.1.0")
    for (const e of MonitorEndpoints) {
      for (const p of [e.path, ...e.aliases]) {
        const op = doc.paths[p]?.get
        expect(op, p).toBeDefined()
        expect(op.parameters.map((x: any) => x.name).sort()).toEqual(Object.keys(e.params).sort())
        for (const err of e.errors) expect(op.responses[String(err.status)], `${p} ${err.status}`).toBeDefined()
        expect(Object.keys(op.responses["200"].content)).toEqual([e.produces])
      }
    }
    // Every $ref resolves inside the document.
    const refs = [...generated["openapi.json"].matchAll(/"\$ref": "#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1])
    for (const r of refs) expect(doc.components.schemas[r], r).toBeDefined()
  })
})
