// /ipqueuesz (per-connection outbound buffers plus the server's own queues),
// /raftz (no consensus groups exist yet: nats-server's 404 answer) and
// /stacksz (the safe parts of Node's diagnostic report).
import type { ErrorBody, Ipqueuesz, Stacksz } from "../../schema/monitor.js"
import type { ConnSnapshot, QueueSnapshot } from "./source.js"

/** Queue name of a connection's outbound buffer; its `pending` is in bytes. */
export const outboundQueueName = (c: ConnSnapshot): string => `outbound ${c.kind.toLowerCase()} cid=${c.cid}`

export const buildIpqueuesz = (
  conns: ReadonlyArray<ConnSnapshot>,
  queues: ReadonlyArray<QueueSnapshot>,
  o: { readonly all: boolean; readonly filter: string | undefined }
): Ipqueuesz => {
  const out: Record<string, { pending: number; in_progress?: number }> = {}
  const add = (name: string, pending: number, inProgress: number) => {
    if (!o.all && pending === 0 && inProgress === 0) return
    if (o.filter !== undefined && !name.includes(o.filter)) return
    out[name] = { pending, ...(inProgress > 0 ? { in_progress: inProgress } : {}) }
  }
  for (const q of queues) add(q.name, q.pending, q.inProgress)
  for (const c of [...conns].sort((a, b) => a.cid - b.cid)) add(outboundQueueName(c), c.pendingBytes, 0)
  return out
}

export const NoRaftNodes: ErrorBody = { error: "No Raft nodes registered" }

/** Header fields of the report that are safe to publish (no command line, cwd, host or network). */
const SafeHeaderKeys = [
  "reportVersion",
  "event",
  "trigger",
  "dumpEventTime",
  "dumpEventTimeStamp",
  "processId",
  "threadId",
  "nodejsVersion",
  "wordSize",
  "arch",
  "platform",
  "componentVersions",
  "release",
  "osName",
  "osRelease",
  "osVersion",
  "osMachine",
  "cpus"
] as const

const asObject = (v: unknown): Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
const asArray = (v: unknown): ReadonlyArray<unknown> => (Array.isArray(v) ? v : [])

/**
 * Keep the parts of `process.report.getReport()` that show what the process is
 * doing (stacks, heap, libuv handles, resource use) and drop what may hold
 * secrets: environment variables, command line, working directory, host name,
 * network interfaces, user limits and loaded libraries.
 */
export const sanitizeReport = (report: Readonly<Record<string, unknown>>): Stacksz => {
  const header = asObject(report.header)
  const safeHeader: Record<string, unknown> = {}
  for (const k of SafeHeaderKeys) if (k in header) safeHeader[k] = header[k]
  const js = asObject(report.javascriptStack)
  return {
    header: safeHeader,
    javascriptStack: {
      message: typeof js.message === "string" ? js.message : "",
      stack: asArray(js.stack).filter((l): l is string => typeof l === "string")
    },
    nativeStack: asArray(report.nativeStack),
    javascriptHeap: asObject(report.javascriptHeap),
    resourceUsage: asObject(report.resourceUsage),
    uvthreadResourceUsage: asObject(report.uvthreadResourceUsage),
    libuv: asArray(report.libuv),
    // Each worker carries a full report of its own (environment included): sanitize it too.
    workers: asArray(report.workers).map((w) => sanitizeReport(asObject(w)))
  }
}
