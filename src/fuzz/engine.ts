// A small coverage-guided fuzzer: mutates a corpus of inputs, runs each through a
// target, and keeps the inputs that reach new V8 code blocks (precise block coverage
// through node:inspector). All choices come from one seeded generator, so a seed and
// a run count replay the same sequence of inputs.
import { Session } from "node:inspector"
import { Rng } from "../sim/rng.js"

export interface FuzzTarget {
  readonly name: string
  /** Valid inputs to start from. */
  readonly seeds: ReadonlyArray<Uint8Array>
  /** Tokens worth inserting whole (keywords, separators, numbers). */
  readonly dictionary: ReadonlyArray<Uint8Array>
  readonly maxLength: number
  /** Script urls containing one of these count as the code under test. */
  readonly coverage: ReadonlyArray<string>
  /** Runs one input; a throw is a finding (the target catches its documented rejections). */
  readonly run: (input: Buffer) => void
}

export interface FuzzOptions {
  readonly seed: number
  /** Exact number of executions (seed inputs included); wins over `seconds`. */
  readonly runs?: number
  readonly seconds?: number
  /** Keep inputs that reach new blocks (default true); false mutates the seeds only. */
  readonly feedback?: boolean
  /** Inputs run between two coverage takes. */
  readonly batch?: number
}

export interface Finding {
  readonly target: string
  readonly input: Buffer
  readonly error: unknown
  /** Executions before it, seed inputs included (0-based index of the input). */
  readonly exec: number
}

export interface FuzzResult {
  readonly target: string
  readonly execs: number
  readonly elapsedMs: number
  readonly seedCount: number
  readonly corpusSize: number
  readonly blocks: number
  readonly findings: ReadonlyArray<Finding>
}

// ---- coverage ---------------------------------------------------------------

type Range = { readonly startOffset: number; readonly endOffset: number; readonly count: number }
type Segments = Array<readonly [number, number]>

interface RawCoverage {
  readonly result: ReadonlyArray<{ readonly url: string; readonly functions: ReadonlyArray<{ readonly ranges: ReadonlyArray<Range> }> }>
}

let session: Session | undefined

/** The inspector session of this isolate, with precise block coverage started once. */
const coverageSession = (): Session => {
  if (session !== undefined) return session
  const s = new Session()
  s.connect()
  // Profiler methods run synchronously on this thread when given a callback.
  s.post("Profiler.enable", () => undefined)
  s.post("Profiler.startPreciseCoverage", { callCount: true, detailed: true }, () => undefined)
  session = s
  return s
}

/** The coverage since the last take: each function that ran, by script url and function start. */
const take = (): RawCoverage => {
  let raw: RawCoverage | undefined
  let failure: unknown
  coverageSession().post("Profiler.takePreciseCoverage", (err, res) => {
    failure = err
    raw = res as unknown as RawCoverage
  })
  if (raw === undefined) throw new Error(`takePreciseCoverage did not answer synchronously: ${String(failure)}`)
  return raw
}

/**
 * The parts of a function that did not run: where the innermost range has count 0.
 * V8 nests ranges (outer first) and drops a block whose count equals its parent's,
 * so ranges with a count > 0 come and go with the counts; only the zeros are stable.
 */
const zeroSegments = (ranges: ReadonlyArray<Range>): Segments => {
  const out: Segments = []
  const emit = (s: number, e: number, count: number) => {
    if (e <= s || count !== 0) return
    const last = out[out.length - 1]
    if (last !== undefined && last[1] === s) out[out.length - 1] = [last[0], e]
    else out.push([s, e])
  }
  const stack: Array<Range> = []
  let pos = ranges[0].startOffset
  for (const r of ranges) {
    while (stack.length > 0 && stack[stack.length - 1].endOffset <= r.startOffset) {
      const top = stack.pop() as Range
      emit(pos, top.endOffset, top.count)
      pos = top.endOffset
    }
    if (stack.length > 0) emit(pos, r.startOffset, stack[stack.length - 1].count)
    pos = r.startOffset
    stack.push(r)
  }
  while (stack.length > 0) {
    const top = stack.pop() as Range
    emit(pos, top.endOffset, top.count)
    pos = top.endOffset
  }
  return out
}

const intersect = (a: Segments, b: Segments): Segments => {
  const out: Segments = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    const s = Math.max(a[i][0], b[j][0])
    const e = Math.min(a[i][1], b[j][1])
    if (s < e) out.push([s, e])
    if (a[i][1] < b[j][1]) i++
    else j++
  }
  return out
}

const span = (a: Segments): number => a.reduce((n, [s, e]) => n + e - s, 0)

/**
 * What has run so far, per function: the segments that never ran. An input is new
 * when it runs a function for the first time or a byte of a never-run segment.
 */
class CoverageMap {
  private readonly never = new Map<string, Segments>()
  /** Starts of every never-run segment met, per function, to count blocks reached. */
  private readonly blockStarts = new Map<string, Set<number>>()

  constructor(private readonly include: ReadonlyArray<string>) {}

  /** Takes coverage; with `record`, merges it in. True when it reached something new. */
  takeNew(record: boolean): boolean {
    let fresh = false
    for (const script of take().result) {
      if (!this.include.some((p) => script.url.includes(p))) continue
      for (const fn of script.functions) {
        const head = fn.ranges[0]
        if (head === undefined || head.count === 0) continue
        const key = `${script.url}:${head.startOffset}:${head.endOffset}`
        const zeros = zeroSegments(fn.ranges)
        const before = this.never.get(key)
        const after = before === undefined ? zeros : intersect(before, zeros)
        if (before !== undefined && span(after) === span(before)) continue
        fresh = true
        if (!record) return true
        this.never.set(key, after)
        const starts = this.blockStarts.get(key) ?? new Set<number>()
        for (const [s] of zeros) starts.add(s)
        this.blockStarts.set(key, starts)
      }
    }
    return fresh
  }

  /** Functions run plus blocks once seen unrun that have run since. */
  get blocks(): number {
    let n = 0
    for (const [key, starts] of this.blockStarts) {
      const zeros = this.never.get(key) ?? []
      n++
      for (const s of starts) if (!zeros.some(([a, b]) => s >= a && s < b)) n++
    }
    return n
  }
}

// ---- mutation ---------------------------------------------------------------

const INTERESTING = Buffer.from([0, 0xff, 0x7f, 0x80, 0x0d, 0x0a, 0x20, 0x2e, 0x2a, 0x3e, 0x7b, 0x7d, 0x22, 0x27, 0x24])

const interesting = (rng: Rng): number => INTERESTING[rng.int(0, INTERESTING.length - 1)]

const splice = (a: Buffer, at: number, del: number, ins: Uint8Array): Buffer =>
  Buffer.concat([a.subarray(0, at), ins, a.subarray(at + del)])

/** One random edit of `input`; `other` is another corpus entry for splicing. */
const mutateOnce = (rng: Rng, input: Buffer, other: Buffer, dict: ReadonlyArray<Uint8Array>): Buffer => {
  const n = input.length
  switch (rng.int(0, 7)) {
    case 0: {
      if (n === 0) return Buffer.from([rng.int(0, 255)])
      const b = Buffer.from(input)
      b[rng.int(0, n - 1)] ^= 1 << rng.int(0, 7)
      return b
    }
    case 1: {
      if (n === 0) return Buffer.from([interesting(rng)])
      const b = Buffer.from(input)
      b[rng.int(0, n - 1)] = interesting(rng)
      return b
    }
    case 2: {
      const at = rng.int(0, n)
      const len = rng.int(1, 4)
      const ins = Buffer.alloc(len)
      for (let i = 0; i < len; i++) ins[i] = rng.chance(0.5) ? interesting(rng) : rng.int(0, 255)
      return splice(input, at, 0, ins)
    }
    case 3: {
      if (n === 0) return input
      const at = rng.int(0, n - 1)
      return splice(input, at, rng.int(1, Math.min(16, n - at)), Buffer.alloc(0))
    }
    case 4: {
      if (n === 0) return input
      const at = rng.int(0, n - 1)
      const len = rng.int(1, Math.min(32, n - at))
      return splice(input, rng.int(0, n), 0, Buffer.from(input.subarray(at, at + len)))
    }
    case 5: {
      // Head of one entry, tail of another.
      const cutA = rng.int(0, n)
      const cutB = rng.int(0, other.length)
      return Buffer.concat([input.subarray(0, cutA), other.subarray(cutB)])
    }
    default: {
      if (dict.length === 0) return input
      const tok = rng.pick(dict)
      const at = rng.int(0, n)
      return rng.chance(0.7) ? splice(input, at, 0, tok) : splice(input, at, Math.min(tok.length, n - at), tok)
    }
  }
}

const mutate = (rng: Rng, corpus: ReadonlyArray<Buffer>, target: FuzzTarget): Buffer => {
  let b = rng.pick(corpus)
  const edits = 1 << rng.int(0, 3)
  for (let i = 0; i < edits; i++) b = mutateOnce(rng, b, rng.pick(corpus), target.dictionary)
  return b.length > target.maxLength ? b.subarray(0, target.maxLength) : b
}

// ---- the loop ---------------------------------------------------------------

const tryRun = (target: FuzzTarget, input: Buffer): unknown => {
  try {
    target.run(input)
    return undefined
  } catch (e) {
    return e ?? new Error(`threw ${String(e)}`)
  }
}

/**
 * Fuzzes one target until `runs` executions or `seconds` pass, or the first finding.
 * Batches of inputs share one coverage take; a batch that reached new blocks is
 * bisected to find which inputs to keep.
 */
export const fuzz = (target: FuzzTarget, options: FuzzOptions): FuzzResult => {
  const rng = new Rng(options.seed)
  const feedback = options.feedback ?? true
  const batchSize = options.batch ?? 64
  const started = Date.now()
  const deadline = options.runs === undefined ? started + (options.seconds ?? 60) * 1000 : Infinity
  const maxRuns = options.runs ?? Infinity
  const corpus: Array<Buffer> = []
  const coverage = new CoverageMap(target.coverage)
  const findings: Array<Finding> = []
  let execs = 0

  /** Reruns halves of a batch that reached something new down to the inputs that did (a take costs ~10 runs). */
  const locate = (inputs: ReadonlyArray<Buffer>): void => {
    const mid = inputs.length >> 1
    for (const half of [inputs.slice(0, mid), inputs.slice(mid)]) {
      if (half.length === 0) continue
      for (const input of half) tryRun(target, input)
      if (half.length > 1) {
        if (coverage.takeNew(false)) locate(half)
      } else if (coverage.takeNew(true)) corpus.push(half[0])
    }
  }

  if (feedback) take() // drop what ran before
  for (const s of target.seeds) {
    const input = Buffer.from(s)
    const error = tryRun(target, input)
    if (error !== undefined) findings.push({ target: target.name, input, error, exec: execs })
    execs++
    corpus.push(input)
    if (feedback) coverage.takeNew(true)
  }
  if (corpus.length === 0) corpus.push(Buffer.alloc(0))
  const seedCount = corpus.length

  while (findings.length === 0 && execs < maxRuns && Date.now() < deadline) {
    const n = Math.min(batchSize, maxRuns - execs)
    const batch: Array<Buffer> = []
    for (let i = 0; i < n && findings.length === 0; i++) {
      const input = mutate(rng, corpus, target)
      batch.push(input)
      const error = tryRun(target, input)
      if (error !== undefined) findings.push({ target: target.name, input, error, exec: execs })
      execs++
    }
    if (feedback && findings.length === 0 && coverage.takeNew(false)) locate(batch)
  }

  return {
    target: target.name,
    execs,
    elapsedMs: Date.now() - started,
    seedCount,
    corpusSize: corpus.length,
    blocks: coverage.blocks,
    findings
  }
}

// ---- reporting --------------------------------------------------------------

/** The input as printable text: ASCII kept, the rest as escapes. */
export const escapeInput = (b: Uint8Array): string => {
  let out = ""
  for (const c of b) {
    if (c === 0x0a) out += "\\n"
    else if (c === 0x0d) out += "\\r"
    else if (c === 0x09) out += "\\t"
    else if (c === 0x5c) out += "\\\\"
    else if (c >= 0x20 && c < 0x7f) out += String.fromCharCode(c)
    else out += `\\x${c.toString(16).padStart(2, "0")}`
  }
  return out
}

export const describeFinding = (f: Finding): string => {
  const e = f.error
  const err = e instanceof Error ? (e.stack ?? e.message) : String(e)
  return [
    `finding in ${f.target} (input ${f.exec}, ${f.input.length} bytes)`,
    `  hex:  ${f.input.toString("hex")}`,
    `  text: ${escapeInput(f.input)}`,
    `  error: ${err.split("\n").join("\n    ")}`
  ].join("\n")
}
