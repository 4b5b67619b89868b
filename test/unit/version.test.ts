import { describe, expect, it } from "vitest"
import * as fs from "node:fs"
import { VERSION } from "../../src/version.js"

describe("version", () => {
  it("matches package.json, so --version, INFO and /varz tell the truth", () => {
    const pkg = JSON.parse(fs.readFileSync("package.json", "utf8")) as { version: string }
    expect(VERSION).toBe(pkg.version)
  })
})
