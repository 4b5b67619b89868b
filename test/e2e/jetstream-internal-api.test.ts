// `JetStream.call`: the server's own `$JS.API` requests (the MQTT bridge creates its
// `$MQTT_*` streams this way) go through the same queue and handlers as a client's, the
// response handed back to the caller; they are not counted as client API traffic, and a
// caller never waits forever on a stopped subsystem.
import { afterEach, describe, expect, it } from "vitest"
import { type JsTestServer, startJsServer } from "../helpers/jetstream.js"

let js: JsTestServer | undefined

afterEach(async () => {
  await js?.close()
  js = undefined
})

describe("internal JetStream API requests", () => {
  it("create a stream as a client's request would, answered to the caller and not counted in /jsz's api totals", async () => {
    js = await startJsServer()
    const sub = js.srv.serving.jetstream!
    const before = sub.apiTotal
    const res = await sub.call("$G", "$JS.API.STREAM.CREATE.INNER", JSON.stringify({ name: "INNER", subjects: ["inner.>"] }))
    expect(res?.type).toBe("io.nats.jetstream.api.v1.stream_create_response")
    expect((res?.config as { name?: string } | undefined)?.name).toBe("INNER")
    expect(sub.apiTotal).toBe(before)
    // A client sees the stream it made.
    const { jsm } = await js.client()
    expect((await jsm.streams.info("INNER")).config.subjects).toEqual(["inner.>"])
    // Errors come back as a client's would.
    const clash = await sub.call("$G", "$JS.API.STREAM.CREATE.OTHER", JSON.stringify({ name: "OTHER", subjects: ["inner.x"] }))
    expect((clash?.error as { err_code?: number } | undefined)?.err_code).toBe(10065)
  })

  it("answer undefined once the subsystem has stopped, instead of never", async () => {
    js = await startJsServer()
    const sub = js.srv.serving.jetstream!
    await js.srv.close()
    expect(await sub.call("$G", "$JS.API.STREAM.CREATE.LATE", JSON.stringify({ name: "LATE", subjects: ["late"] }))).toBeUndefined()
  })
})
