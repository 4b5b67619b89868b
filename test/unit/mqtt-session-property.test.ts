import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { bytes, connected, pkt } from "../helpers/mqtt-session.js"
import type { SessionInput } from "../../src/core/mqtt/types.js"

const id = fc.integer({ min: 1, max: 6 })
const input: fc.Arbitrary<SessionInput> = fc.oneof(
  fc.record({ subject: fc.constantFrom("t.a", "t.b", "$SYS.x", "u"), qos: fc.constantFrom(0, 1, 2) }).map(
    ({ subject, qos }) => ({ type: "deliver", subject, payload: bytes("p"), qos }) as const
  ),
  id.map((messageId) => pkt({ cmd: "puback", messageId })),
  id.map((messageId) => pkt({ cmd: "pubrec", messageId })),
  id.map((messageId) => pkt({ cmd: "pubcomp", messageId })),
  id.map((messageId) => pkt({ cmd: "pubrel", messageId })),
  fc.record({ messageId: id, qos: fc.constantFrom(0, 1, 2) }).map(({ messageId, qos }) =>
    pkt({ cmd: "publish", topic: "in", payload: bytes("x"), qos, retain: false, dup: false, messageId })
  ),
  id.map((packetId) => ({ type: "published", packetId }) as const),
  fc.constant({ type: "tick" } as const),
  fc.constant(pkt({ cmd: "pingreq" }))
)

describe("session invariants under random input sequences", () => {
  it("[MQTT-2.3.1-1] never sends packet id 0, never exceeds max_ack_pending, never reuses an id in flight", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(input, fc.integer({ min: 0, max: 2000 })), { maxLength: 80 }), (steps) => {
        const { session } = connected({ config: { maxAckPending: 3, ackWaitMs: 1000 }, connect: { keepalive: 0 } })
        session.step(pkt({ cmd: "subscribe", messageId: 1, subscriptions: [{ topic: "t/#", qos: 2 }, { topic: "u", qos: 1 }] }), 0)
        let now = 0
        const inFlight = new Set<number>()
        for (const [inp, dt] of steps) {
          // The one violation random input can commit: a PUBREL before its PUBREC was sent.
          if (session.isClosed) break
          now += dt
          for (const a of session.step(inp, now)) {
            if (a.type === "send" && a.packet.cmd === "publish" && a.packet.qos > 0) {
              const mid = a.packet.messageId!
              expect(mid).toBeGreaterThan(0)
              if (!a.packet.dup) expect(inFlight.has(mid)).toBe(false)
              inFlight.add(mid)
            }
          }
          for (const m of [...inFlight]) if (!session.snapshot().outbound.some((o) => o.packetId === m)) inFlight.delete(m)
          expect(session.inflightCount).toBeLessThanOrEqual(3)
          const d = session.nextDeadline()
          if (d !== undefined && inp.type === "tick") expect(d).toBeGreaterThan(now)
        }
        if (session.isClosed) expect(session.closeReason).toBe("Protocol Violation: PUBREL before PUBREC")
      }),
      { numRuns: 300 }
    )
  })
})
