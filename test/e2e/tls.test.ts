// TLS on the client port: INFO in the clear with tls_required, then the upgrade; real
// `nats` clients over certificates made for the test; `verify` demanding client
// certificates; failed handshakes closed as 'TLS Handshake Failure', counted, and the
// listener unharmed; the TLS fields of /varz and /connz.
import * as tls from "node:tls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, type NatsConnection, StringCodec } from "nats"
import type { TlsOptions } from "../../src/config/options.js"
import { makeTestCerts, serverTls, type TestCerts } from "../helpers/certs.js"
import { getJson, startMonitoredServer } from "../helpers/monitor.js"
import { eventually, RawClient, startTestServer } from "../helpers/server.js"

const sc = StringCodec()
let certs: TestCerts
beforeAll(() => {
  certs = makeTestCerts()
})
afterAll(() => certs.remove())

const tlsBlock = (over: Partial<TlsOptions> = {}): TlsOptions => serverTls(certs, over)

const roundTrip = async (nc: NatsConnection, subject: string): Promise<string> => {
  const sub = nc.subscribe(subject, { max: 1 })
  nc.publish(subject, sc.encode("over tls"))
  for await (const m of sub) return sc.decode(m.data)
  throw new Error("no message")
}

describe("TLS on the client port", () => {
  it("advertises tls_required in a clear-text INFO and serves a real client over TLS", async () => {
    const srv = await startTestServer({ tls: tlsBlock() })
    try {
      const raw = await RawClient.connect(srv.port)
      await raw.waitFor('"tls_required":true')
      raw.close()
      const nc = await connect({ servers: srv.url, tls: { caFile: certs.caFile }, reconnect: false })
      expect(await roundTrip(nc, "tls.hello")).toBe("over tls")
      const c = [...srv.server.clients.values()].find((x) => x.conn.tls !== undefined)
      expect(c?.conn.tls?.version).toMatch(/^1\.[23]$/)
      expect(c?.conn.tls?.cipher).toMatch(/^TLS_/)
      await nc.close()
    } finally {
      await srv.close()
    }
  })

  it("closes a client that speaks plain text with 'TLS Handshake Failure', counts it, and keeps serving", async () => {
    const srv = await startTestServer({ tls: tlsBlock() })
    try {
      const raw = await RawClient.connect(srv.port)
      await raw.waitFor("\r\n")
      raw.send('CONNECT {"verbose":false}\r\nPING\r\n')
      await raw.waitClosed()
      await eventually(() => srv.server.closed.toArray().some((c) => c.reason === "TLS Handshake Failure"), "the failure in the closed ring")
      expect(srv.server.tlsHandshakeFailures).toBe(1)
      expect(srv.lines.join("")).toContain("TLS handshake error")
      // The listener is fine.
      const nc = await connect({ servers: srv.url, tls: { caFile: certs.caFile }, reconnect: false })
      expect(await roundTrip(nc, "tls.after")).toBe("over tls")
      await nc.close()
    } finally {
      await srv.close()
    }
  })

  it("closes a client that never starts the handshake once the TLS timeout passes", async () => {
    const srv = await startTestServer({ tls: tlsBlock({ timeoutMs: 200 }) })
    try {
      const raw = await RawClient.connect(srv.port)
      await raw.waitFor("\r\n")
      await raw.waitClosed()
      await eventually(() => srv.server.closed.toArray().some((c) => c.reason === "TLS Handshake Failure"), "the timeout in the closed ring")
    } finally {
      await srv.close()
    }
  })

  it("survives peers that vanish mid-handshake or send junk, and turns away connections over the limit", async () => {
    const srv = await startTestServer({ tls: tlsBlock(), maxConnections: 1 })
    const net = await import("node:net")
    try {
      const nc = await connect({ servers: srv.url, tls: { caFile: certs.caFile }, reconnect: false })
      // Over the limit: the refusal goes out in the clear, no handshake is attempted.
      const over = await RawClient.connect(srv.port)
      await over.waitFor("-ERR 'Maximum Connections Exceeded'")
      await over.waitClosed()
      await nc.close()
      await eventually(() => srv.server.clients.size === 0, "the client gone")
      for (let i = 0; i < 5; i++) {
        // A ClientHello cut short, then a reset.
        const s = net.connect({ host: "127.0.0.1", port: srv.port })
        await new Promise<void>((r) => s.once("data", () => r()))
        s.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc]))
        s.resetAndDestroy()
        await eventually(() => srv.server.clients.size === 0, "the reset connection gone")
        // Junk where a handshake should be.
        const j = await RawClient.connect(srv.port)
        await j.waitFor("\r\n")
        j.send(Buffer.alloc(64, 0xff))
        await j.waitClosed()
      }
      await eventually(() => srv.server.tlsHandshakeFailures === 10 && srv.server.clients.size === 0, `ten handshake failures (${srv.server.tlsHandshakeFailures}, ${srv.server.clients.size} open, ${srv.server.closed.toArray().map((c) => c.reason)})`)
      const again = await connect({ servers: srv.url, tls: { caFile: certs.caFile }, reconnect: false })
      expect(await roundTrip(again, "tls.survived")).toBe("over tls")
      await again.close()
    } finally {
      await srv.close()
    }
  })

  it("a plain client refuses a server that requires TLS, a TLS client one that does not", async () => {
    const srv = await startTestServer({ tls: tlsBlock() })
    const plain = await startTestServer()
    try {
      await expect(connect({ servers: srv.url, tls: null, reconnect: false })).rejects.toThrow()
      await expect(connect({ servers: plain.url, tls: { caFile: certs.caFile }, reconnect: false })).rejects.toThrow()
    } finally {
      await srv.close()
      await plain.close()
    }
  })

  describe("verify", () => {
    it("accepts a client certificate signed by the CA", async () => {
      const srv = await startTestServer({ tls: tlsBlock({ verify: true }) })
      try {
        const raw = await RawClient.connect(srv.port)
        await raw.waitFor('"tls_verify":true')
        raw.close()
        const nc = await connect({
          servers: srv.url,
          tls: { caFile: certs.caFile, certFile: certs.clientCert, keyFile: certs.clientKey },
          reconnect: false
        })
        expect(await roundTrip(nc, "tls.verified")).toBe("over tls")
        await nc.close()
      } finally {
        await srv.close()
      }
    })

    it("refuses clients without a certificate, or with one from another CA", async () => {
      const srv = await startTestServer({ tls: tlsBlock({ verify: true }) })
      try {
        await expect(connect({ servers: srv.url, tls: { caFile: certs.caFile }, reconnect: false })).rejects.toThrow()
        await expect(connect({
          servers: srv.url,
          tls: { caFile: certs.caFile, certFile: certs.strangerCert, keyFile: certs.strangerKey },
          reconnect: false
        })).rejects.toThrow()
        await eventually(
          () => srv.server.closed.toArray().filter((c) => c.reason === "TLS Handshake Failure").length === 2,
          "two handshake failures"
        )
        expect(srv.server.tlsHandshakeFailures).toBe(2)
        expect(srv.server.clients.size).toBe(0)
      } finally {
        await srv.close()
      }
    })
  })

  it("refuses to start when the certificate cannot be loaded, naming the problem but no key material", async () => {
    await expect(startTestServer({ tls: tlsBlock({ keyFile: `${certs.dir}/missing.key` }) })).rejects.toThrow(/tls: cannot load/)
  })

  it("/varz shows tls_required, tls_verify and tls_cert_not_after; /connz tls_version and tls_cipher_suite", async () => {
    const srv = await startMonitoredServer({ tls: tlsBlock({ verify: true }) })
    try {
      const nc = await connect({
        servers: srv.url,
        tls: { caFile: certs.caFile, certFile: certs.clientCert, keyFile: certs.clientKey },
        reconnect: false
      })
      await nc.flush()
      const { json: varz } = await getJson(srv.base, "/varz")
      expect(varz.tls_required).toBe(true)
      expect(varz.tls_verify).toBe(true)
      const notAfter = Date.parse(varz.tls_cert_not_after)
      expect(notAfter).toBeGreaterThan(Date.now())
      const { json: connz } = await getJson(srv.base, "/connz")
      expect(connz.connections).toHaveLength(1)
      expect(connz.connections[0].tls_version).toMatch(/^1\.[23]$/)
      expect(connz.connections[0].tls_cipher_suite).toMatch(/^TLS_/)
      await nc.close()
      await eventually(() => srv.serving.server.closed.size === 1, "the client in the closed ring")
      const { json: closed } = await getJson(srv.base, "/connz?state=closed")
      expect(closed.connections[0].tls_version).toMatch(/^1\.[23]$/)
    } finally {
      await srv.close()
    }
  })

  it("raw TLS socket: the server's certificate is the configured one", async () => {
    const srv = await startTestServer({ tls: tlsBlock() })
    try {
      const raw = await RawClient.connect(srv.port)
      await raw.waitFor("\r\n")
      raw.close()
      // Handshake over a fresh socket after reading INFO, as clients do.
      const net = await import("node:net")
      const sock = net.connect({ host: "127.0.0.1", port: srv.port })
      await new Promise<void>((r) => sock.once("data", () => r()))
      const secured = tls.connect({ socket: sock, ca: (await import("node:fs")).readFileSync(certs.caFile), servername: "localhost" })
      await new Promise<void>((resolve, reject) => {
        secured.once("secureConnect", () => resolve())
        secured.once("error", reject)
      })
      expect(secured.getPeerCertificate().subject.CN).toBe("server")
      secured.destroy()
    } finally {
      await srv.close()
    }
  })
})
