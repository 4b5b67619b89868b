// Session expiry, will delay and message expiry as arithmetic on times passed in.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  forwardedExpiry,
  messageExpiresAt,
  PacketError,
  SESSION_NEVER_EXPIRES,
  sessionEndsAt,
  sessionExpiry,
  sessionExpiryOnDisconnect,
  willDueAt,
  willSurvives
} from "../../src/core/mqtt/v5/index.js"

const T0 = 1_700_000_000_000

describe("Session Expiry Interval", () => {
  it("absent means 0: the session ends with the connection", () => {
    expect(sessionExpiry(undefined)).toEqual({ interval: 0, announce: undefined })
    expect(sessionEndsAt(T0, 0)).toBe(T0)
  })

  it("[MQTT-3.1.2-23] a session with an interval outlives its connection by that long", () => {
    expect(sessionExpiry(3600)).toEqual({ interval: 3600, announce: undefined })
    expect(sessionEndsAt(T0, 3600)).toBe(T0 + 3_600_000)
  })

  it("0xFFFFFFFF never expires", () => {
    expect(sessionEndsAt(T0, SESSION_NEVER_EXPIRES)).toBe(Number.POSITIVE_INFINITY)
  })

  it("the server's maximum caps it, and the CONNACK then announces the server's value", () => {
    expect(sessionExpiry(SESSION_NEVER_EXPIRES, 86_400)).toEqual({ interval: 86_400, announce: 86_400 })
    expect(sessionExpiry(60, 86_400)).toEqual({ interval: 60, announce: undefined })
  })

  it("a DISCONNECT may change it, but not from 0 to more (3.14.2.2.2)", () => {
    expect(sessionExpiryOnDisconnect(60, undefined)).toBe(60)
    expect(sessionExpiryOnDisconnect(60, 0)).toBe(0)
    expect(sessionExpiryOnDisconnect(60, 7200, 3600)).toBe(3600)
    expect(sessionExpiryOnDisconnect(0, 0)).toBe(0)
    expect(() => sessionExpiryOnDisconnect(0, 10)).toThrow(PacketError)
    expect(() => sessionExpiryOnDisconnect(0, 10)).toThrow(expect.objectContaining({ code: 0x82 }))
  })
})

describe("the will", () => {
  it("[MQTT-3.1.3-9] is due after its Will Delay Interval, or when the session ends if that comes first", () => {
    expect(willDueAt(T0, undefined, 3600)).toBe(T0)
    expect(willDueAt(T0, 30, 3600)).toBe(T0 + 30_000)
    expect(willDueAt(T0, 300, 60)).toBe(T0 + 60_000)
    expect(willDueAt(T0, 300, SESSION_NEVER_EXPIRES)).toBe(T0 + 300_000)
  })

  it("[MQTT-3.14.4-3] is dropped after a normal DISCONNECT, kept after 0x04 and after any other end", () => {
    expect(willSurvives(0x00)).toBe(false)
    expect(willSurvives(0x04)).toBe(true)
    expect(willSurvives(0x80)).toBe(true)
    expect(willSurvives(undefined)).toBe(true)
  })
})

describe("Message Expiry Interval", () => {
  it("[MQTT-3.3.2-6] is forwarded less the time the message waited in the server", () => {
    expect(forwardedExpiry(60, T0, T0)).toBe(60)
    expect(forwardedExpiry(60, T0, T0 + 10_000)).toBe(50)
    expect(forwardedExpiry(60, T0, T0 + 1_500)).toBe(59) // 58.5 s left: rounded up, never sent as less life than it has
  })

  it("[MQTT-3.3.2-5] a message whose life has passed is not forwarded", () => {
    expect(forwardedExpiry(60, T0, T0 + 60_001)).toBeUndefined()
    expect(forwardedExpiry(60, T0, T0 + 60_000)).toBe(0)
    expect(messageExpiresAt(T0, 60)).toBe(T0 + 60_000)
  })

  it("never grows, and is never more than what was received", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffff_ffff }), fc.integer({ min: 0, max: 10_000_000 }), fc.integer({ min: 0, max: 10_000_000 }), (interval, a, b) => {
        const [early, late] = a <= b ? [a, b] : [b, a]
        const e1 = forwardedExpiry(interval, T0, T0 + early)
        const e2 = forwardedExpiry(interval, T0, T0 + late)
        if (e1 !== undefined) expect(e1).toBeLessThanOrEqual(interval)
        if (e2 !== undefined) expect(e1).toBeDefined()
        if (e1 !== undefined && e2 !== undefined) expect(e2).toBeLessThanOrEqual(e1)
      })
    )
  })
})
