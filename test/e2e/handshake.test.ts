// The NATS handshake byte for byte, as nats-server answers it: INFO, then the client's
// CONNECT + PING is answered by `+OK` (verbose) and PONG and nothing else; the server's
// first RTT PING comes only once the client is past its handshake. nats.go, libnats and
// nats-py fail to connect when a PING comes before that PONG (issue #20). Time runs on
// Effect's TestClock, so "nothing else" is exact: no timer can fire unless a test moves it.
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Layer, TestClock } from "effect"
import { layerMemoryLog } from "../../src/services/log.js"
import { layerNode } from "../../src/services/transport-node.js"
import { type RunningServer, startNatsServer } from "../../src/server/run.js"
import { type Client, FirstRtt } from "../../src/server/nats/client.js"
import { eventually, RawClient, testOptions } from "../helpers/server.js"

const withServer = (over: Parameters<typeof testOptions>[0] = {}) =>
  startNatsServer(testOptions(over)).pipe(Effect.provide(Layer.merge(layerNode, layerMemoryLog([]))))

/** What nats.go, libnats and nats-py send: CONNECT (protocol 1) and PING in one write. */
const CONNECT = (extra: Record<string, unknown> = {}) =>
  `CONNECT ${JSON.stringify({ verbose: false, pedantic: false, protocol: 1, lang: "go", version: "1.22.1", headers: true, ...extra })}\r\n`

/** Connect, read INFO exactly, and return the client with INFO removed from what it received. */
const afterInfo = (port: number) =>
  Effect.promise(async () => {
    const c = await RawClient.connect(port)
    const data = await c.waitFor("\r\n")
    expect(data).toMatch(/^INFO \{.*\}\r\n$/)
    c.data = ""
    return c
  })

const wait = (c: RawClient, text: string) => Effect.promise(() => c.waitFor(text))

/** A client past its handshake (CONNECT + PING answered), with what it received cleared. */
const handshaken = (running: RunningServer) =>
  Effect.gen(function*() {
    const c = yield* afterInfo(running.port)
    c.send(`${CONNECT()}PING\r\n`)
    yield* wait(c, "PONG\r\n")
    c.data = ""
    return { c, client: [...running.server.clients.values()][0] }
  })

/** Receive the RTT PING, answer it `after` later (TestClock), and check the measured RTT. */
const answerRtt = (c: RawClient, client: Client, after: Duration.DurationInput, ns: number) =>
  Effect.gen(function*() {
    yield* wait(c, "PING\r\n")
    expect(c.data).toBe("PING\r\n")
    yield* TestClock.adjust(after)
    c.send("PONG\r\nPING\r\n")
    yield* wait(c, "PONG\r\n")
    expect(client.rttNs).toBe(ns)
    // Not counted as an unanswered liveness PING.
    expect(client.pingsOut).toBe(0)
  })

describe("NATS handshake", () => {
  it.scoped("answers CONNECT + PING with exactly PONG: no server PING before or with it", () =>
    Effect.gen(function*() {
      const running = yield* withServer()
      const c = yield* afterInfo(running.port)
      c.send(`${CONNECT()}PING\r\n`)
      yield* wait(c, "PONG\r\n")
      expect(c.data).toBe("PONG\r\n")
      c.close()
    }))

  it.scoped("answers a verbose CONNECT + PING with exactly +OK then PONG", () =>
    Effect.gen(function*() {
      const running = yield* withServer()
      const c = yield* afterInfo(running.port)
      c.send(`${CONNECT({ verbose: true })}PING\r\n`)
      yield* wait(c, "PONG\r\n")
      expect(c.data).toBe("+OK\r\nPONG\r\n")
      c.close()
    }))

  it.scoped("answers CONNECT and PING sent in separate writes the same way", () =>
    Effect.gen(function*() {
      const running = yield* withServer()
      const c = yield* afterInfo(running.port)
      c.send(CONNECT())
      const client = [...running.server.clients.values()][0]
      yield* Effect.promise(() => eventually(() => client.connectReceived, "the CONNECT to be processed"))
      c.send("PING\r\n")
      yield* wait(c, "PONG\r\n")
      expect(c.data).toBe("PONG\r\n")
      c.close()
    }))

  it.scoped("sends the first RTT PING with the client's next write after the handshake, and measures it", () =>
    Effect.gen(function*() {
      const { c, client } = yield* handshaken(yield* withServer())
      c.send("SUB greet.> 1\r\n")
      yield* answerRtt(c, client, "3 millis", 3_000_000)
      c.close()
    }))

  it.scoped("sends the first RTT PING a second after the handshake to a client that stays silent", () =>
    Effect.gen(function*() {
      const { c, client } = yield* handshaken(yield* withServer())
      yield* TestClock.adjust("999 millis")
      expect(client.firstRtt).toBe(FirstRtt.Handshaken)
      expect(client.out.length).toBe(0)
      // Due a second after the handshake: the timer tick (every 500ms here) at 1s sends it.
      yield* TestClock.adjust("1 millis")
      yield* answerRtt(c, client, "250 micros", 250_000)
      c.close()
    }))

  it.scoped("a client that sends CONNECT without PING gets its RTT PING a second later", () =>
    Effect.gen(function*() {
      const running = yield* withServer()
      const c = yield* afterInfo(running.port)
      c.send(CONNECT())
      yield* TestClock.adjust("1500 millis")
      yield* wait(c, "PING\r\n")
      expect(c.data).toBe("PING\r\n")
      c.close()
    }))

  it.scoped("a protocol 0 client is pinged only by the ping timer", () =>
    Effect.gen(function*() {
      const running = yield* withServer({ pingIntervalMs: 60_000 })
      const c = yield* afterInfo(running.port)
      c.send('CONNECT {"verbose":false}\r\nPING\r\n')
      yield* wait(c, "PONG\r\n")
      c.send("SUB a 1\r\nPING\r\n")
      yield* TestClock.adjust("30 seconds")
      yield* wait(c, "PONG\r\nPONG\r\n")
      expect(c.data).toBe("PONG\r\nPONG\r\n")
      yield* TestClock.adjust("31 seconds")
      yield* wait(c, "PING\r\n")
      c.close()
    }))
})
