// An in-memory StreamView and small drivers for testing the consumer machine
// (used by the consumer unit tests).
import { ConsumerMachine, type ConsumerOptions } from "../../src/core/consumer/machine.js"
import type { ConsumerConfig } from "../../src/core/consumer/config.js"
import type { ConsumerAction, DeliverAction, StatusAction, StoredMsgMeta, StreamView } from "../../src/core/consumer/types.js"
import { subjectMatches } from "../../src/core/stream/stream-index.js"

export class MemStream implements StreamView {
  readonly msgs = new Map<number, StoredMsgMeta>()
  firstSeq = 1
  lastSeq = 0

  add(subject: string, timestampMs = this.lastSeq * 1000, size = 10): number {
    const seq = ++this.lastSeq
    this.msgs.set(seq, { seq, subject, timestampMs, size })
    return seq
  }

  remove(seq: number): void {
    this.msgs.delete(seq)
    this.fixFirst()
  }

  purge(): void {
    this.msgs.clear()
    this.firstSeq = this.lastSeq + 1
  }

  private fixFirst(): void {
    while (this.firstSeq <= this.lastSeq && !this.msgs.has(this.firstSeq)) this.firstSeq++
  }

  private matches(subject: string, filters: ReadonlyArray<string>): boolean {
    return filters.length === 0 || filters.some((f) => subjectMatches(subject, f))
  }

  loadNextMatching(filters: ReadonlyArray<string>, fromSeq: number): StoredMsgMeta | undefined {
    for (let s = Math.max(fromSeq, this.firstSeq); s <= this.lastSeq; s++) {
      const m = this.msgs.get(s)
      if (m && this.matches(m.subject, filters)) return m
    }
    return undefined
  }

  numPending(filters: ReadonlyArray<string>, fromSeq: number): number {
    let n = 0
    for (const m of this.msgs.values()) if (m.seq >= fromSeq && this.matches(m.subject, filters)) n++
    return n
  }

  lastPerSubject(filters: ReadonlyArray<string>): ReadonlyArray<number> {
    const last = new Map<string, number>()
    for (const m of this.msgs.values()) if (this.matches(m.subject, filters)) last.set(m.subject, m.seq)
    return [...last.values()].sort((a, b) => a - b)
  }

  seqAtOrAfterTime(ms: number): number {
    for (const m of this.msgs.values()) if (m.timestampMs >= ms) return m.seq
    return this.lastSeq + 1
  }
}

export const SEC = 1000
export const NS = 1_000_000

export const machine = (
  config: ConsumerConfig,
  view: StreamView = new MemStream(),
  now = 0,
  extra: Partial<ConsumerOptions> = {}
): ConsumerMachine => ConsumerMachine.create({ stream: "S", name: config.durable_name ?? config.name ?? "C", config, view, ...extra }, now)

export const delivers = (out: ReadonlyArray<ConsumerAction>): DeliverAction[] =>
  out.filter((a): a is DeliverAction => a.type === "deliver")

export const seqs = (out: ReadonlyArray<ConsumerAction>): number[] => delivers(out).map((d) => d.seq)

export const statuses = (out: ReadonlyArray<ConsumerAction>): StatusAction[] =>
  out.filter((a): a is StatusAction => a.type === "status")

export const ack = (m: ConsumerMachine, seq: number, now: number, payload = "+ACK", reply?: string) =>
  m.step({ type: "ack", ack: { streamSeq: seq }, payload, ...(reply ? { reply } : {}) }, now)

export const pull = (m: ConsumerMachine, now: number, request: { batch?: number; expires?: number; no_wait?: boolean; max_bytes?: number; idle_heartbeat?: number } = {}, reply = "_INBOX.r") =>
  m.step({ type: "pull", request, reply }, now)

export const tick = (m: ConsumerMachine, now: number) => m.step({ type: "tick" }, now)
