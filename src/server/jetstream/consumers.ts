// The consumers of one stream, held by the stream itself: registration and removal,
// the calls the stream makes after it stored or removed messages, the subsystem
// timer's run, shutdown, recovery from the stream's meta, and what /jsz shows.
import { Effect } from "effect"
import { clampToStream, type SequenceInfo } from "../../core/consumer/index.js"
import type { ConsumerSnapshot } from "../../core/monitor/source.js"
import type { LogService } from "../../services/log.js"
import { CONSUMER_META_PREFIX, type ConsumerSet, type ConsumerStream, JsConsumer, type StoredConsumer } from "./consumer.js"
import { releaseAllUnheld } from "./interest.js"

export class StreamConsumers implements ConsumerSet {
  /** By name, in creation order. */
  private readonly byName = new Map<string, JsConsumer>()

  constructor(private readonly stream: ConsumerStream) {}

  get size(): number {
    return this.byName.size
  }

  get(name: string): JsConsumer | undefined {
    return this.byName.get(name)
  }

  values(): IterableIterator<JsConsumer> {
    return this.byName.values()
  }

  /** A new consumer of the stream, registered (it replaces one of the same name); not started. */
  make(stored: StoredConsumer, now: number): JsConsumer {
    const c = JsConsumer.make(this.stream, stored, now)
    this.byName.set(c.name, c)
    return c
  }

  /** Forget a consumer and let go of what only it held. */
  remove(c: JsConsumer): Promise<void> {
    if (this.byName.get(c.name) === c) this.byName.delete(c.name)
    const removed = c.remove()
    this.releaseUnwanted(c.machine.info().ack_floor.stream_seq + 1)
    return removed
  }

  /**
   * Interest retention: remove every message from `from` on that no consumer holds any
   * more — after a consumer left or changed, and at recovery.
   */
  releaseUnwanted(from = 0): void {
    const s = this.stream
    if (s.config.retention !== "interest" || s.closed) return
    releaseAllUnheld(s.store, [...this.byName.values()], from)
  }

  /** Interest retention at publish: would any consumer hold the next message, on `subject`? */
  wantsNext(subject: string): boolean {
    if (this.byName.size === 0) return false
    const seq = this.stream.store.state().last_seq + 1
    for (const c of this.byName.values()) if (c.holds(seq, subject)) return true
    return false
  }

  /** After the stream stored (`removed` false) or removed messages: wake its consumers. */
  notify(removed: boolean): void {
    if (this.byName.size === 0) return
    for (const c of [...this.byName.values()]) {
      try {
        c.input(removed ? { type: "streamPurged" } : { type: "newMessages" })
      } catch (err) {
        // A failing consumer must not stop the publish that woke it.
        this.failed(c, err)
      }
    }
  }

  /** The subsystem's timer run: every consumer runs what is due; returns the earliest next deadline. */
  tick(now: number): number | undefined {
    let next = Infinity
    for (const c of [...this.byName.values()]) {
      try {
        const at = c.tick(now)
        if (at !== undefined) next = Math.min(next, at)
      } catch (err) {
        this.failed(c, err)
      }
    }
    return next === Infinity ? undefined : next
  }

  private failed(c: JsConsumer, err: unknown): void {
    this.stream.host.server.log.error(`JetStream consumer '${this.stream.name} > ${c.name}' failed: ${String(err)}`)
  }

  /** The stream is being deleted: stop its consumers (their state goes with the stream's store). */
  stopAll(): void {
    for (const c of this.byName.values()) c.stop()
    this.byName.clear()
  }

  /** Server shutdown: save every consumer's latest state (before the store closes) and stop them. */
  saveAll(): Array<Promise<unknown>> {
    const saves: Array<Promise<unknown>> = []
    for (const c of this.byName.values()) {
      if (c.closed) continue
      saves.push(c.save())
      c.stop()
    }
    return saves
  }

  /**
   * Reopen the consumers saved in a recovered stream's meta. An interest stream then
   * drops what none of them holds (removals not yet synced when the server stopped),
   * unless a consumer could not be read: its messages are kept rather than guessed at.
   */
  restore(log: LogService, now: () => number): Effect.Effect<void> {
    const self = this
    const s = this.stream
    return Effect.gen(function*() {
      const listed = yield* Effect.either(s.store.listMeta())
      let complete = listed._tag === "Right"
      for (const key of listed._tag === "Right" ? listed.right : []) {
        if (!key.startsWith(CONSUMER_META_PREFIX)) continue
        const raw = yield* Effect.orElseSucceed(s.store.readMeta(key), () => undefined)
        let stored: StoredConsumer | undefined
        try {
          stored = raw === undefined ? undefined : (JSON.parse(Buffer.from(raw).toString("utf8")) as StoredConsumer)
        } catch {
          stored = undefined
        }
        if (stored === undefined || typeof stored.name !== "string" || typeof stored.config !== "object" || stored.config === null) {
          complete = false
          log.error(`Error recovering consumer '${key.slice(CONSUMER_META_PREFIX.length)}' of stream '${s.name}': state is damaged`)
          continue
        }
        const c = self.make(stored, now())
        // Saved ahead of its stream (a power cut took back unsynced messages): restored at
        // the stream's end, and that is saved before anything new can take those sequences.
        const last = s.store.state().last_seq
        if (stored.state !== undefined && clampToStream(stored.state, last) !== stored.state) {
          log.warn(`Consumer '${stored.name}' of stream '${s.name}' was saved past the stream's last sequence ${last} (messages lost in a power cut were never acknowledged); it resumes from there`)
          yield* Effect.promise(() => c.save())
        }
        c.start()
      }
      if (complete) self.releaseUnwanted()
    })
  }

  /** What /jsz shows per consumer (with `consumers=true`). */
  snapshots(): ConsumerSnapshot[] {
    return [...this.byName.values()].map((c) => {
      const st = c.machine.info()
      const seqs = (q: SequenceInfo) => ({ consumerSeq: q.consumer_seq, streamSeq: q.stream_seq, lastActive: q.last_active })
      return {
        name: c.name,
        created: c.created,
        config: c.config as Readonly<Record<string, unknown>>,
        delivered: seqs(st.delivered),
        ackFloor: seqs(st.ack_floor),
        numAckPending: st.num_ack_pending,
        numRedelivered: st.num_redelivered,
        numWaiting: st.num_waiting,
        numPending: st.num_pending,
        pushBound: c.isPush ? c.pushBound : undefined
      }
    })
  }
}
