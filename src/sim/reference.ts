// Reference implementations for the simulator's invariants, the fuzzer and tests: slow and obviously right.

/** nats-server's subject matching, token by token: `*` one token, `>` one or more at the end. */
export const refMatch = (literal: string, filter: string): boolean => {
  const l = literal.split(".")
  const f = filter.split(".")
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return l.length > i
    if (i >= l.length) return false
    if (f[i] !== "*" && f[i] !== l[i]) return false
  }
  return l.length === f.length
}
