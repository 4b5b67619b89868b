// What the server asks of V8 depends on V8's version and on the Node options the operator
// set; both are read here. Dependency-free: main.ts's start-up tuning uses it before
// anything loads.

/**
 * V8 12 (Node 22) and later: `gc` takes the `last-resort` flavor, so the server trims its
 * own memory (server/gc-pacer.ts), and the start-up tuning that relies on the trim
 * (startup-tiering.ts, malloc-tuning.ts's young-generation floor) applies.
 */
export const trimsMemory = (v8Version: string): boolean => Number(v8Version.split(".")[0]) >= 12

/** Whether one of the process's Node options (command line or NODE_OPTIONS) matches `option`. */
export const setsNodeOption = (option: RegExp, execArgv: ReadonlyArray<string>, nodeOptions: string | undefined): boolean =>
  option.test(` ${execArgv.join(" ")} ${nodeOptions ?? ""} `)
