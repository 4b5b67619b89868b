// `switchyard --signal <command>[=<pid or pid file>]`: send a running server one of
// nats-server's signal commands and exit. Without a target, the configured `pid_file`
// names the process (nats-server would look for processes by name; a pid file is
// what service managers and containers keep).
import { readFileSync } from "node:fs"
import { parsePid, type SignalRequest } from "./config/signal.js"

/** The process a signal request is for, or why it cannot be found. */
export const resolveTarget = (req: SignalRequest, pidFile: string | undefined): { pid: number } | { error: string } => {
  const direct = req.target === undefined ? undefined : parsePid(req.target)
  if (direct !== undefined) return { pid: direct }
  const file = req.target ?? pidFile
  if (file === undefined) {
    return { error: `no process to signal: give one (--signal ${req.command}=<pid> or =<pid file>) or set pid_file in the configuration` }
  }
  let text: string
  try {
    text = readFileSync(file, "utf8")
  } catch (e) {
    return { error: `cannot read the pid file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` }
  }
  const pid = parsePid(text)
  return pid === undefined ? { error: `the pid file ${file} does not hold a process id` } : { pid }
}

/** Send it; undefined when sent, else the reason it was not. */
export const sendSignal = (req: SignalRequest, pidFile: string | undefined): string | undefined => {
  const target = resolveTarget(req, pidFile)
  if ("error" in target) return target.error
  try {
    process.kill(target.pid, req.signal)
    return undefined
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    return code === "ESRCH" ? `no process with id ${target.pid}`
      : code === "EPERM" ? `not permitted to signal process ${target.pid}`
      : `cannot signal process ${target.pid}: ${(e as Error).message}`
  }
}
