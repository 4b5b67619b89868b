// The files a running server leaves for the tools around it: `pid_file` (the process
// id, for `--signal` and service managers) and `ports_file_dir`'s `<exe>_<pid>.ports`
// (the URL of every listener, as JSON, which client test harnesses read to find a
// server started on random ports). Both are removed at a clean stop.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** The ports file's shape: nats-server's keys, plus Switchyard's MQTT listeners. */
export interface PortsInfo {
  readonly nats: ReadonlyArray<string>
  readonly monitoring?: ReadonlyArray<string>
  /** MQTT over TCP (`mqtt://`, `mqtts://`); Switchyard's own key. */
  readonly mqtt?: ReadonlyArray<string>
  /** MQTT over WebSocket (`ws://…/mqtt`, `wss://…/mqtt`); Switchyard's own key (nats-server's `websocket` is NATS over WebSocket). */
  readonly mqtt_websocket?: ReadonlyArray<string>
}

const bracket = (a: string): string => (a.includes(":") ? `[${a}]` : a)

/**
 * The URLs a listener on host:port is reached at. A wildcard bind is every address of
 * the machine (IPv4 for 0.0.0.0; both families for ::), as nats-server lists them.
 */
export const listenerUrls = (
  scheme: string,
  host: string,
  port: number,
  addresses: () => ReadonlyArray<{ readonly address: string; readonly family: string }>,
  pathSuffix = ""
): Array<string> => {
  const hosts = host === "0.0.0.0" || host === "" ? addresses().filter((a) => a.family === "IPv4").map((a) => a.address)
    : host === "::" ? addresses().filter((a) => !a.address.startsWith("fe80:")).map((a) => a.address)
    : [host]
  return hosts.map((h) => `${scheme}://${bracket(h)}:${port}${pathSuffix}`)
}

/** Every address of this machine's interfaces. */
export const machineAddresses = (): Array<{ address: string; family: string }> =>
  Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((a) => ({ address: a.address, family: a.family })))

/** The ports file's name: the program's name (without extension) and the process id, as nats-server names it. */
export const portsFileName = (argv1: string | undefined, pid: number): string => {
  const exe = path.basename(argv1 ?? "switchyard").replace(/\.(c|m)?js$/, "") || "switchyard"
  return `${exe}_${pid}.ports`
}

/** Written whole or not at all: readers poll for the file and must never see half of it. */
const writeAtomically = (file: string, text: string): void => {
  const tmp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(tmp, text)
  fs.renameSync(tmp, file)
}

/** The pid file and ports file of this process, kept to the configuration (and to a reload of it). */
export class ProcessFiles {
  private pidFile: string | undefined
  private portsFile: string | undefined

  constructor(private readonly ports: () => PortsInfo) {}

  /**
   * Write (or move) the files the options ask for; a file no longer asked for is removed.
   * Throws with the reason when one cannot be written (the earlier ones stay as they were).
   */
  apply(o: { readonly pidFile: string | undefined; readonly portsFileDir: string | undefined }): void {
    if (o.pidFile !== this.pidFile) {
      if (o.pidFile !== undefined) writeAtomically(o.pidFile, `${process.pid}`)
      this.removePid()
      this.pidFile = o.pidFile
    }
    const portsFile = o.portsFileDir === undefined ? undefined : path.join(o.portsFileDir, portsFileName(process.argv[1], process.pid))
    if (portsFile !== this.portsFile) {
      if (portsFile !== undefined) writeAtomically(portsFile, `${JSON.stringify(this.ports())}\n`)
      this.removePorts()
      this.portsFile = portsFile
    }
  }

  /** A clean stop: both files go (a pid file is removed only while it still names this process). */
  remove(): void {
    this.removePid()
    this.removePorts()
    this.pidFile = undefined
    this.portsFile = undefined
  }

  private removePid(): void {
    const f = this.pidFile
    if (f === undefined) return
    try {
      if (fs.readFileSync(f, "utf8").trim() === String(process.pid)) fs.rmSync(f, { force: true })
    } catch {
      // gone already
    }
  }

  private removePorts(): void {
    if (this.portsFile !== undefined) fs.rmSync(this.portsFile, { force: true })
  }
}
