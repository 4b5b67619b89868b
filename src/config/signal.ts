// `--signal <command>[=<pid or pid file>]` (nats-server's `-sl`): which signal each
// command sends to a running server. The commands and signals are nats-server's.

export const SignalCommands = {
  /** Kill at once (SIGKILL: nothing is flushed). */
  stop: "SIGKILL",
  /** Stop gracefully. */
  quit: "SIGINT",
  /** Stop gracefully. */
  term: "SIGTERM",
  /** Reopen the log file. */
  reopen: "SIGUSR1",
  /** Reload the configuration file. */
  reload: "SIGHUP",
  /** Lame duck mode: stop accepting, close the clients gradually, then stop. */
  ldm: "SIGUSR2"
} as const

export type SignalCommand = keyof typeof SignalCommands

export interface SignalRequest {
  readonly command: SignalCommand
  readonly signal: (typeof SignalCommands)[SignalCommand]
  /** A process id, or the path of a pid file; undefined = the configured `pid_file`. */
  readonly target: string | undefined
}

const isCommand = (c: string): c is SignalCommand => Object.prototype.hasOwnProperty.call(SignalCommands, c)

/** `reload`, `reload=4242`, `ldm=/run/switchyard.pid`; undefined when the command is not one of them. */
export const parseSignalRequest = (value: string): SignalRequest | undefined => {
  const eq = value.indexOf("=")
  const command = (eq < 0 ? value : value.slice(0, eq)).trim().toLowerCase()
  const target = eq < 0 ? undefined : value.slice(eq + 1).trim()
  if (!isCommand(command) || target === "") return undefined
  return { command, signal: SignalCommands[command], target }
}

/** A pid file's contents (or a pid given directly): a positive integer, or undefined. */
export const parsePid = (text: string): number | undefined => {
  const t = text.trim()
  return /^[1-9]\d{0,9}$/.test(t) ? Number(t) : undefined
}
