// The pid file and the ports file: names, URL lists (a wildcard bind is every address
// of the machine), written whole, moved by a reload, removed at a clean stop.
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { listenerUrls, portsFileName, ProcessFiles } from "../../src/server/process-files.js"
import { useTempDirs } from "../helpers/tmp.js"

const tmp = useTempDirs("sy-files-")

const addresses = () => [
  { address: "127.0.0.1", family: "IPv4" },
  { address: "::1", family: "IPv6" },
  { address: "10.1.2.3", family: "IPv4" },
  { address: "fe80::1", family: "IPv6" }
]

describe("listenerUrls", () => {
  it("lists one URL for a bound host, every IPv4 address for 0.0.0.0, both families (no link-local) for ::", () => {
    expect(listenerUrls("nats", "127.0.0.1", 4222, addresses)).toEqual(["nats://127.0.0.1:4222"])
    expect(listenerUrls("http", "0.0.0.0", 8222, addresses)).toEqual(["http://127.0.0.1:8222", "http://10.1.2.3:8222"])
    expect(listenerUrls("nats", "::", 4222, addresses)).toEqual(["nats://127.0.0.1:4222", "nats://[::1]:4222", "nats://10.1.2.3:4222"])
    expect(listenerUrls("ws", "::1", 8080, addresses, "/mqtt")).toEqual(["ws://[::1]:8080/mqtt"])
  })
})

describe("portsFileName", () => {
  it("is the program's name without extension and the pid, as nats-server names it", () => {
    expect(portsFileName("/usr/lib/switchyard/bin/switchyard.js", 42)).toBe("switchyard_42.ports")
    expect(portsFileName("/usr/local/bin/nats-server", 7)).toBe("nats-server_7.ports")
  })
})

describe("ProcessFiles", () => {
  it("writes the pid and the ports, moves them on a new configuration, removes them at the end", () => {
    const dir = tmp()
    const other = tmp()
    const files = new ProcessFiles(() => ({ nats: ["nats://127.0.0.1:4222"] }))
    const pidFile = path.join(dir, "s.pid")
    files.apply({ pidFile, portsFileDir: dir })
    const ports = path.join(dir, portsFileName(process.argv[1], process.pid))
    expect(fs.readFileSync(pidFile, "utf8")).toBe(String(process.pid))
    expect(JSON.parse(fs.readFileSync(ports, "utf8"))).toEqual({ nats: ["nats://127.0.0.1:4222"] })
    // No temporary file is left behind.
    expect(fs.readdirSync(dir).sort()).toEqual([path.basename(ports), "s.pid"].sort())
    files.apply({ pidFile: path.join(other, "t.pid"), portsFileDir: undefined })
    expect(fs.existsSync(pidFile)).toBe(false)
    expect(fs.existsSync(ports)).toBe(false)
    expect(fs.readFileSync(path.join(other, "t.pid"), "utf8")).toBe(String(process.pid))
    files.remove()
    expect(fs.readdirSync(other)).toEqual([])
  })

  it("leaves a pid file that another process has taken over", () => {
    const dir = tmp()
    const pidFile = path.join(dir, "s.pid")
    const files = new ProcessFiles(() => ({ nats: [] }))
    files.apply({ pidFile, portsFileDir: undefined })
    fs.writeFileSync(pidFile, "99999")
    files.remove()
    expect(fs.readFileSync(pidFile, "utf8")).toBe("99999")
  })

  it("throws with the reason when a file cannot be written", () => {
    const files = new ProcessFiles(() => ({ nats: [] }))
    expect(() => files.apply({ pidFile: path.join(tmp(), "no", "such", "dir", "s.pid"), portsFileDir: undefined })).toThrow(/ENOENT/)
  })
})
