// Temporary directories for tests that write files (logs, pid and ports files,
// configuration files), each removed after its test.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach } from "vitest"

/** A function that makes a fresh directory, all of them removed after each test of the calling file. */
export const useTempDirs = (prefix: string): (() => string) => {
  const dirs: Array<string> = []
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true })
  })
  return () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
    dirs.push(d)
    return d
  }
}
