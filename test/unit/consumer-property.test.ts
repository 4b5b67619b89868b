// Random ack/nak/progress/term/tick/publish/pull sequences against an explicit-ack
// consumer: every message matching the filter is delivered at least once, acked or
// terminated messages are never delivered again, and the machine's pending count
// agrees with a plain model of what was delivered and not yet settled.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { ConsumerMachine } from "../../src/core/consumer/machine.js"
import type { ConsumerAction } from "../../src/core/consumer/types.js"
import { machine, MemStream, NS } from "../helpers/consumer-machine.js"
import { subjectMatches } from "../../src/core/stream/stream-index.js"

const SUBJECTS = ["a.1", "a.2", "b.1", "c.9"]
const matches = (subject: string, filters: ReadonlyArray<string>) => filters.some((f) => subjectMatches(subject, f))

const command = fc.oneof(
  fc.record({ t: fc.constant("publish" as const), s: fc.nat(SUBJECTS.length - 1) }),
  fc.record({ t: fc.constant("pull" as const), batch: fc.integer({ min: 1, max: 5 }), noWait: fc.boolean(), expires: fc.integer({ min: 1, max: 5000 }) }),
  fc.record({ t: fc.constant("ack" as const), k: fc.nat() }),
  fc.record({ t: fc.constant("nak" as const), k: fc.nat(), delay: fc.option(fc.integer({ min: 1, max: 3000 }), { nil: undefined }) }),
  fc.record({ t: fc.constant("wpi" as const), k: fc.nat() }),
  fc.record({ t: fc.constant("term" as const), k: fc.nat() }),
  fc.record({ t: fc.constant("tick" as const), dt: fc.integer({ min: 0, max: 2500 }) })
)

describe("consumer property", () => {
  it("explicit ack: at-least-once for every matching message, never after ack or term", () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(SUBJECTS.length - 1), { maxLength: 8 }),
        fc.array(command, { maxLength: 80 }),
        fc.constantFrom(0, 2, 5),
        fc.boolean(),
        fc.constantFrom(["a.*"], ["a.1", "c.9"], [">"]),
        fc.constantFrom(0, 3),
        (initial, cmds, maxAckPending, useBackoff, filters, maxDeliver) => {
          const st = new MemStream()
          for (const s of initial) st.add(SUBJECTS[s])
          const m: ConsumerMachine = machine(
            {
              durable_name: "p",
              ack_policy: "explicit",
              ack_wait: 1000 * NS,
              ...(maxAckPending ? { max_ack_pending: maxAckPending } : {}),
              ...(useBackoff ? { backoff: [500 * NS, 1500 * NS] } : {}),
              ...(maxDeliver ? { max_deliver: maxDeliver } : {}),
              ...(filters.length === 1 ? { filter_subject: filters[0] } : { filter_subjects: filters })
            },
            st
          )
          const delivered = new Map<number, number>() // seq -> deliveries
          const settled = new Set<number>()
          let outstanding: number[] = []
          let lastCseq = 0
          let now = 0
          let reply = 0
          const exhausted = new Set<number>()
          const observe = (out: ConsumerAction[]) => {
            for (const a of out) {
              if (a.type === "advisory" && a.kind === "max_deliveries") {
                expect(a.deliveries).toBe(maxDeliver)
                exhausted.add(a.streamSeq)
                settle(a.streamSeq)
              }
              if (a.type !== "deliver") continue
              expect(settled.has(a.seq)).toBe(false)
              expect(matches(a.subject, filters)).toBe(true)
              expect(a.consumerSeq).toBe(lastCseq + 1)
              lastCseq = a.consumerSeq
              const n = (delivered.get(a.seq) ?? 0) + 1
              expect(a.deliveryCount).toBe(n)
              if (maxDeliver) expect(n).toBeLessThanOrEqual(maxDeliver)
              delivered.set(a.seq, n)
              if (n === 1) outstanding.push(a.seq)
            }
            expect(m.info().num_ack_pending).toBe(outstanding.length)
          }
          function settle(seq: number) {
            settled.add(seq)
            outstanding = outstanding.filter((s) => s !== seq)
          }
          const pick = (k: number) => (outstanding.length ? outstanding[k % outstanding.length] : undefined)
          const payloadFor = (seq: number, payload: string) => ({ type: "ack" as const, ack: { streamSeq: seq }, payload })

          for (const c of cmds) {
            switch (c.t) {
              case "publish":
                st.add(SUBJECTS[c.s], now)
                observe(m.step({ type: "newMessages" }, now))
                break
              case "pull":
                observe(m.step({ type: "pull", request: { batch: c.batch, no_wait: c.noWait, expires: c.expires * NS }, reply: `r${reply++}` }, now))
                break
              case "tick":
                now += c.dt
                observe(m.step({ type: "tick" }, now))
                break
              default: {
                const seq = pick(c.k)
                if (seq === undefined) break
                const payload = c.t === "ack" ? "+ACK" : c.t === "wpi" ? "+WPI" : c.t === "term" ? "+TERM" : c.delay ? `-NAK {"delay":${c.delay * NS}}` : "-NAK"
                if (c.t === "ack" || c.t === "term") settle(seq)
                observe(m.step(payloadFor(seq, payload), now))
              }
            }
          }
          // Drain: keep pulling, acking everything, and letting timers run.
          for (let round = 0; round < 200; round++) {
            now += 2000
            observe(m.step({ type: "tick" }, now))
            observe(m.step({ type: "pull", request: { batch: 50, no_wait: true }, reply: "drain" }, now))
            for (const seq of [...outstanding]) {
              settle(seq)
              observe(m.step(payloadFor(seq, "+ACK"), now))
            }
            if (outstanding.length === 0 && m.info().num_pending === 0) break
          }
          for (const msg of st.msgs.values()) {
            if (matches(msg.subject, filters)) expect(delivered.has(msg.seq)).toBe(true)
            else expect(delivered.has(msg.seq)).toBe(false)
          }
          if (!maxDeliver) expect(exhausted.size).toBe(0)
          expect(m.info()).toMatchObject({ num_ack_pending: 0, num_pending: 0, ack_floor: { stream_seq: m.info().delivered.stream_seq } })
        }
      ),
      { numRuns: 300 }
    )
  })
})
