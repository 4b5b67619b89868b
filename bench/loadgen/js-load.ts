// JetStream load over the NATS wire protocol: acknowledged publish into a file-backed
// stream (a window of outstanding PUBs with a reply subject, PubAcks counted), and the
// replay of the stored messages through a pull consumer. The API calls that set the
// stream and the consumer up are plain request-replies with JSON bodies.
import { performance } from "node:perf_hooks"
import type { JobResult, JsPubJob, JsReplayJob } from "./jobs.js"
import { type Conn, connect, cpuMetrics, cpuNow } from "./nats-load.js"
import { encodePub, payload } from "./nats-wire.js"

/** PUBs sent and not yet answered by a PubAck, at most. */
const WINDOW = Number(process.env.BENCH_JS_WINDOW ?? 1000)
/** Messages asked for by one pull request; two requests are kept outstanding. */
const PULL_BATCH = Number(process.env.BENCH_JS_PULL ?? 1000)
const BATCH_BYTES = 64 * 1024
const STALL_MS = Number(process.env.BENCH_STALL_MS ?? 5000)
/**
 * For scripts/clustering/js-r3.mjs, which points this load at other set-ups: the API prefix
 * (`$JS.HUB.API` reaches a domain's JetStream) and the stream's replicas. `npm run bench`
 * leaves both alone.
 */
const API = process.env.BENCH_JS_API ?? "$JS.API"
const REPLICAS = Number(process.env.BENCH_JS_REPLICAS ?? 1)
const STREAM = "BENCH"
const SUBJECT = "bench.js"

/** A connection for JetStream API calls: one request at a time, JSON back. */
const apiClient = async (port: number) => {
  const c = await connect(port, "bench-api")
  const waiting: Array<(body: string) => void> = []
  c.reader.capture = (m) => {
    const w = waiting.shift()
    if (w !== undefined) w(m.payload.toString("utf8"))
  }
  c.sock.write("SUB _INBOX.api 1\r\n")
  await c.flush()
  const request = (subject: string, body: unknown): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to ${subject} within 10 s`)), 10_000)
      waiting.push((s) => {
        clearTimeout(timer)
        try {
          const r = JSON.parse(s) as Record<string, unknown>
          if (r.error !== undefined) reject(new Error(`${subject}: ${JSON.stringify(r.error)}`))
          else resolve(r)
        } catch {
          reject(new Error(`${subject}: reply is not JSON: ${s.slice(0, 200)}`))
        }
      })
      c.sock.write(encodePub(subject, "_INBOX.api", Buffer.from(body === undefined ? "" : JSON.stringify(body))))
    })
  return { conn: c, request }
}

const createStream = (api: Awaited<ReturnType<typeof apiClient>>) =>
  api.request(`${API}.STREAM.CREATE.${STREAM}`, {
    name: STREAM,
    subjects: [SUBJECT],
    storage: "file",
    retention: "limits",
    num_replicas: REPLICAS
  })

const storedMessages = async (api: Awaited<ReturnType<typeof apiClient>>): Promise<number> => {
  const info = await api.request(`${API}.STREAM.INFO.${STREAM}`, undefined)
  return Number((info.state as { messages?: number } | undefined)?.messages ?? 0)
}

/**
 * Publish `count` messages (or as many as `durationMs` allows, when not 0) with reply
 * subject `_INBOX.ack`, at most WINDOW outstanding, from one pre-encoded batch buffer;
 * resolves when all PubAcks are in (or on a stall).
 */
const publishAcked = (
  port: number,
  size: number,
  count: number,
  durationMs: number,
  errors: Array<string>
): Promise<{ sent: number; acks: number; startT: number; endT: number; conn: Conn }> =>
  new Promise((resolve, reject) => {
    const msg = encodePub(SUBJECT, "_INBOX.ack", payload(size))
    const perBatch = Math.max(1, Math.min(Math.floor(WINDOW / 4), Math.floor(BATCH_BYTES / msg.length)))
    const batch = Buffer.allocUnsafe(perBatch * msg.length)
    for (let i = 0; i < perBatch; i++) msg.copy(batch, i * msg.length)
    let sent = 0
    let deadline = Infinity
    let waitingDrain = false
    let conn: Conn | undefined
    let startT = 0
    let done = false
    const pump = (): void => {
      if (conn === undefined || waitingDrain || conn.closed) return
      const c = conn
      while (sent < count) {
        if (performance.now() >= deadline) {
          count = sent
          if (c.reader.msgs >= count) finish()
          return
        }
        const n = Math.min(perBatch, count - sent)
        if (sent - c.reader.msgs + n > WINDOW) return
        sent += n
        if (!c.sock.write(n === perBatch ? batch : batch.subarray(0, n * msg.length))) {
          waitingDrain = true
          c.sock.once("drain", () => {
            waitingDrain = false
            pump()
          })
          return
        }
      }
    }
    const finish = (): void => {
      if (done) return
      done = true
      clearInterval(timer)
      resolve({ sent, acks: conn!.reader.msgs, startT, endT: performance.now(), conn: conn! })
    }
    let last = -1
    let lastProgress = performance.now()
    const timer = setInterval(() => {
      if (conn === undefined) return
      const a = conn.reader.msgs
      if (a !== last) {
        last = a
        lastProgress = performance.now()
      } else if (performance.now() - lastProgress > STALL_MS) {
        errors.push(`stalled: no PubAck for ${STALL_MS} ms (sent ${sent}/${count}, acknowledged ${a})`)
        if (conn.closed) errors.push(`connection closed: ${conn.closeReason}`)
        finish()
      }
    }, 50)
    connect(port, "bench-js-pub", (c) => {
      if (c.reader.msgs >= count) finish()
      else pump()
    }).then(async (c) => {
      c.sock.write("SUB _INBOX.ack 1\r\n")
      await c.flush()
      conn = c
      startT = performance.now()
      if (durationMs > 0) deadline = startT + durationMs
      pump()
    }, reject)
  })

/** The stream goes at the end of a job: the next one on the same server starts empty. */
const deleteStream = (api: Awaited<ReturnType<typeof apiClient>>) => api.request(`${API}.STREAM.DELETE.${STREAM}`, undefined)

export const runJsPub = async (job: JsPubJob): Promise<JobResult> => {
  const errors: Array<string> = []
  const api = await apiClient(job.port)
  await createStream(api)
  const start = cpuNow(job.serverPid)
  const r = await publishAcked(job.port, job.size, job.count, job.durationMs, errors)
  const end = cpuNow(job.serverPid)
  const stored = await storedMessages(api)
  await deleteStream(api)
  const elapsedMs = r.endT - start.t
  if (r.acks < r.sent) errors.push(`${r.acks} of ${r.sent} PubAcks received`)
  for (const e of r.conn.reader.errors) errors.push(e)
  const metrics: Record<string, number> = {
    rate: (r.acks * 1000) / elapsedMs,
    mbps: (r.acks * job.size * 1000) / elapsedMs / 1e6,
    acks: r.acks,
    stored,
    elapsedMs,
    ...cpuMetrics(start, end, r.acks)
  }
  r.conn.destroy()
  api.conn.destroy()
  // loss: published messages the stream does not hold (an error PubAck is one)
  return { ok: true, metrics, loss: Math.max(0, r.sent - stored), excess: Math.max(0, stored - r.sent), errors }
}

export const runJsReplay = async (job: JsReplayJob): Promise<JobResult> => {
  const errors: Array<string> = []
  const api = await apiClient(job.port)
  await createStream(api)
  const fill = await publishAcked(job.port, job.size, job.count, 0, errors)
  fill.conn.destroy()
  const stored = await storedMessages(api)
  if (stored !== job.count) errors.push(`stream holds ${stored} of ${job.count} messages before the replay`)
  await api.request(`${API}.CONSUMER.DURABLE.CREATE.${STREAM}.R`, {
    stream_name: STREAM,
    config: { durable_name: "R", deliver_policy: "all", ack_policy: "none", replay_policy: "instant" }
  })

  const fullReq = encodePub(`${API}.CONSUMER.MSG.NEXT.${STREAM}.R`, "_INBOX.pull", Buffer.from(JSON.stringify({ batch: PULL_BATCH })))
  let requested = 0
  let conn: Conn | undefined
  const plain = (c: Conn): number => c.reader.msgs - c.reader.hmsgs
  const ask = (c: Conn): void => {
    while (requested < job.count && requested - plain(c) < 2 * PULL_BATCH) {
      const n = Math.min(PULL_BATCH, job.count - requested)
      requested += n
      c.sock.write(
        n === PULL_BATCH
          ? fullReq
          : encodePub(`${API}.CONSUMER.MSG.NEXT.${STREAM}.R`, "_INBOX.pull", Buffer.from(JSON.stringify({ batch: n })))
      )
    }
  }
  let endAt = 0
  let resolveDone: () => void = () => {}
  const done = new Promise<void>((r) => {
    resolveDone = r
  })
  const c = await connect(job.port, "bench-js-pull", (cc) => {
    if (conn === undefined) return
    if (plain(cc) >= job.count) {
      if (endAt === 0) endAt = performance.now()
      resolveDone()
    } else ask(cc)
  })
  c.sock.write("SUB _INBOX.pull 1\r\n")
  await c.flush()
  conn = c
  const start = cpuNow(job.serverPid)
  let last = -1
  let lastProgress = performance.now()
  const timer = setInterval(() => {
    const n = c.reader.msgs
    if (n !== last) {
      last = n
      lastProgress = performance.now()
    } else if (performance.now() - lastProgress > STALL_MS) {
      errors.push(`stalled: nothing delivered for ${STALL_MS} ms (received ${plain(c)}/${job.count}, requested ${requested})`)
      if (c.closed) errors.push(`connection closed: ${c.closeReason}`)
      endAt = performance.now() - STALL_MS
      resolveDone()
    }
  }, 50)
  ask(c)
  await done
  clearInterval(timer)
  const end = cpuNow(job.serverPid)
  const got = plain(c)
  await deleteStream(api)
  if (c.reader.hmsgs > 0) errors.push(`${c.reader.hmsgs} status messages (HMSG) among the replies`)
  for (const e of [...c.reader.errors, ...api.conn.reader.errors]) errors.push(e)
  const elapsedMs = endAt - start.t
  const metrics: Record<string, number> = {
    rate: (got * 1000) / elapsedMs,
    mbps: (got * job.size * 1000) / elapsedMs / 1e6,
    delivered: got,
    fillRate: (fill.acks * 1000) / (fill.endT - fill.startT),
    elapsedMs,
    ...cpuMetrics(start, end, got)
  }
  c.destroy()
  api.conn.destroy()
  return { ok: true, metrics, loss: Math.max(0, job.count - got), excess: Math.max(0, got - job.count), errors }
}
