// /healthz: 200 {status:"ok"} or 503 {status:"unavailable", error} (spec §7);
// `js-enabled-only` also fails when streams are not enabled, `js-server-only`
// checks the server alone, `details` answers nats-server's errors-list form.
import type { Healthz, HealthzError, QueryOf } from "../../schema/monitor.js"
import { HealthzParams } from "../../schema/monitor.js"
import type { HealthSnapshot } from "./source.js"

export const JetStreamNotEnabled = "JetStream not enabled"

export interface HealthzOptions {
  readonly jsEnabledOnly: boolean
  readonly jsServerOnly: boolean
  readonly details: boolean
}

export const healthzOptions = (q: QueryOf<typeof HealthzParams>): HealthzOptions => ({
  jsEnabledOnly: (q["js-enabled-only"] ?? false) || (q["js-enabled"] ?? false),
  jsServerOnly: q["js-server-only"] ?? false,
  details: q.details ?? false
})

/** The first failing check, if any. */
const firstProblem = (h: HealthSnapshot, o: HealthzOptions): HealthzError | undefined => {
  if (h.notReady !== undefined) return { type: "CONNECTION", error: h.notReady }
  if (o.jsServerOnly) return undefined
  if (!h.jetstreamConfigured) return o.jsEnabledOnly ? { type: "JETSTREAM", error: JetStreamNotEnabled } : undefined
  if (h.jetstreamError === JetStreamNotEnabled) return { type: "JETSTREAM", error: JetStreamNotEnabled }
  if (o.jsEnabledOnly) return undefined
  if (h.jetstreamError !== undefined) return { type: "JETSTREAM", error: h.jetstreamError }
  return undefined
}

export const buildHealthz = (h: HealthSnapshot, o: HealthzOptions): { readonly status: 200 | 503; readonly body: Healthz } => {
  const problem = firstProblem(h, o)
  if (problem === undefined) return { status: 200, body: { status: "ok" } }
  if (o.details) return { status: 503, body: { status: "error", errors: [problem] } }
  return { status: 503, body: { status: "unavailable", error: problem.error ?? "unavailable" } }
}
