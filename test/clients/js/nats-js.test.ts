// The JavaScript NATS clients through the NATS client matrix, in process: `nats` (v2) and
// `@nats-io/transport-node` with `@nats-io/jetstream`, `@nats-io/kv` and `@nats-io/obj` (v3).
import * as natsV2 from "nats"
import * as core from "@nats-io/transport-node"
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream"
import { Kvm } from "@nats-io/kv"
import { Objm } from "@nats-io/obj"
import type { Json, RunOptions } from "../run.js"
import { describeNatsMatrix, type NatsCase } from "../nats-matrix.js"
import { coreCases, errorType, objectData, takeAcked } from "./nats-cases.js"

/* eslint-disable @typescript-eslint/no-explicit-any -- the two libraries' entries, as each returns them */
type Case = (url: string, args: Record<string, string>, opts: RunOptions) => Promise<Json>

const WAIT = 10_000
const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b ?? new Uint8Array())

/** Publish the three orders of the JetStream case; the acks as the library reports them. */
const publishOrders = async (js: any) => {
  const first = await js.publish("orders.new", "order 1")
  const dedup = []
  for (let i = 0; i < 2; i++) {
    const ack = await js.publish("orders.new", "order 2", { msgID: "order-2" })
    dedup.push({ seq: ack.seq, duplicate: ack.duplicate })
  }
  await js.publish("orders.paid", "order 3")
  return { first: { stream: first.stream, seq: first.seq, duplicate: first.duplicate }, dedup }
}

const pullOrders = async (jsm: any, js: any) => {
  await jsm.consumers.add("ORDERS", { durable_name: "puller", ack_policy: AckPolicy.Explicit })
  const c = await js.consumers.get("ORDERS", "puller")
  const pull = await takeAcked(await c.fetch({ max_messages: 3, expires: WAIT }), 3, (m) => m.string())
  return { pull, pull_acked: (await c.info()).ack_floor.stream_seq }
}

/** The KV case on a bucket, for the v2 and v3 KV clients (the same interface). */
const kvCase = async (kv: any) => {
  const watched: Array<string> = []
  const watch = await kv.watch()
  void (async () => {
    for await (const e of watch) watched.push(`${e.operation === "DEL" ? "DEL" : "PUT"}:${e.key}=${text(e.value)}`)
  })()
  const putRev = await kv.put("color", "red")
  const got = await kv.get("color")
  const updRev = await kv.update("color", "blue", putRev)
  const stale = await kv.update("color", "green", putRev).then(() => "none", errorType)
  await kv.put("size", "xl")
  await kv.delete("size")
  // nats.js answers a deleted key with its delete marker, not an error.
  const deleted = await kv.get("size")
  const keys: Array<string> = []
  for await (const k of await kv.keys()) keys.push(k)
  const history: Array<string> = []
  for await (const e of await kv.history({ key: "color" })) history.push(text(e.value))
  const deadline = Date.now() + WAIT
  while (watched.length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5))
  watch.stop()
  return {
    put_rev: putRev, get: text(got?.value), update_rev: updRev, stale_update_error_type: stale,
    deleted_get_error_type: deleted === null ? "null" : `entry:${deleted.operation}`,
    keys, history, watch: watched
  }
}

const objCase = async (os: any) => {
  const data = objectData()
  await os.putBlob({ name: "report.bin" }, data)
  const back: Uint8Array = await os.getBlob("report.bin")
  const info = await os.info("report.bin")
  const listed = (await os.list()).map((o: any) => o.name)
  return { size: info.size, chunks: info.chunks, intact: Buffer.from(back).equals(Buffer.from(data)), listed }
}

const connectOpts = (name: string, url: string) => ({ servers: url, name, timeout: WAIT })

const v2Cases: Record<NatsCase, Case> = {
  ...(coreCases({ connect: natsV2.connect, headers: natsV2.headers }, "matrix-nats-v2") as Record<NatsCase, Case>),
  jetstream: async (url) => {
    const nc = await natsV2.connect(connectOpts("matrix-nats-v2", url))
    const jsm = await nc.jetstreamManager()
    const js = nc.jetstream()
    const si = await jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"] })
    const published = await publishOrders(js)
    const pulled = await pullOrders(jsm, js)
    const o = natsV2.consumerOpts().durable("pusher").deliverAll().ackExplicit().deliverTo(natsV2.createInbox())
    const push = await takeAcked(await js.subscribe("orders.>", o), 3, (m) => `${m.info.streamSequence}:${m.string()}`)
    await nc.close()
    return { stream: si.config.name, ...published, ...pulled, push }
  },
  kv: async (url) => {
    const nc = await natsV2.connect(connectOpts("matrix-nats-v2", url))
    const r = await kvCase(await nc.jetstream().views.kv("settings", { history: 5 }))
    await nc.close()
    return r
  },
  objstore: async (url) => {
    const nc = await natsV2.connect(connectOpts("matrix-nats-v2", url))
    const r = await objCase(await nc.jetstream().views.os("files"))
    await nc.close()
    return r
  }
}

const v3Cases: Record<NatsCase, Case> = {
  ...(coreCases({ connect: core.connect, headers: core.headers }, "matrix-nats-v3") as Record<NatsCase, Case>),
  jetstream: async (url) => {
    const nc = await core.connect(connectOpts("matrix-nats-v3", url))
    const jsm = await jetstreamManager(nc)
    const js = jetstream(nc)
    const si = await jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"] })
    const published = await publishOrders(js)
    const pulled = await pullOrders(jsm, js)
    await jsm.consumers.add("ORDERS", {
      durable_name: "pusher", deliver_subject: core.createInbox(), ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All
    })
    const pc = await js.consumers.getPushConsumer("ORDERS", "pusher")
    const push = await takeAcked(await pc.consume(), 3, (m) => `${m.info.streamSequence}:${m.string()}`)
    await nc.close()
    return { stream: si.config.name, ...published, ...pulled, push }
  },
  kv: async (url) => {
    const nc = await core.connect(connectOpts("matrix-nats-v3", url))
    const r = await kvCase(await new Kvm(nc).create("settings", { history: 5 }))
    await nc.close()
    return r
  },
  objstore: async (url) => {
    const nc = await core.connect(connectOpts("matrix-nats-v3", url))
    const r = await objCase(await new Objm(nc).create("files"))
    await nc.close()
    return r
  }
}

const runWith = (cases: Record<NatsCase, Case>) => (c: NatsCase, url: string, args: Record<string, string> = {}, opts: RunOptions = {}) =>
  cases[c](url, args, opts)

describeNatsMatrix({
  name: "nats 2.29.3 (JavaScript, nats.js v2)",
  connName: "matrix-nats-v2",
  lang: "nats.js",
  prepare: async () => {},
  run: runWith(v2Cases),
  errors: {
    authorization: "NatsError:AUTHORIZATION_VIOLATION",
    noResponders: "NatsError:503",
    maxPayload: "NatsError:MAX_PAYLOAD_EXCEEDED",
    keyExists: "NatsError:400",
    keyNotFound: "entry:DEL"
  },
  objectStore: true
})

describeNatsMatrix({
  name: "@nats-io/transport-node, jetstream, kv, obj 3.4.0 (JavaScript, nats.js v3)",
  connName: "matrix-nats-v3",
  lang: "nats.js",
  prepare: async () => {},
  run: runWith(v3Cases),
  errors: {
    authorization: "AuthorizationError",
    noResponders: "RequestError:NoResponders",
    maxPayload: "InvalidArgumentError",
    keyExists: "JetStreamApiError:10071",
    keyNotFound: "entry:DEL"
  },
  objectStore: true
})
