// Starting the stream subsystem: recover the stored streams, serve the `$JS.API`
// requests (api.ts) one at a time in arrival order, run the subsystem's timer, and on
// the way out save every consumer's state. This is the top of server/jetstream: the
// API handlers are wired in here, and nothing below imports them.
// `startJetStreamOnDisk` does it on the file store under `store_dir` (the embedded
// default): the store lives as long as the caller's scope, and closes after the
// subsystem stops using it. The disk is Node's unless the context provides a Disk.
import { Cause, Effect, Fiber, Layer, Mailbox, Option, type Scope } from "effect"
import type { JetStreamOptions } from "../../config/options.js"
import { JsErr } from "../../core/jetstream/errors.js"
import { Disk } from "../../services/disk.js"
import { layerNode } from "../../services/disk-node.js"
import { GroupCommit } from "../../services/group-commit.js"
import { Log } from "../../services/log.js"
import { Store, type StoreError } from "../../services/store.js"
import { layerFile } from "../../services/store-file.js"
import { startAlarm } from "../alarm.js"
import type { Server } from "../server.js"
import { handleApi } from "./api.js"
import { type ApiRequest, JetStream } from "./jetstream.js"

export type { JetStream }

/** Resolution of the subsystem's timers (ack_wait, pull expiry, heartbeats, max_age): the closest two runs may be. */
const TICK_MS = 25

/** Answer one request: a client's response to its reply subject, counted in /jsz's api totals; an internal caller's handed back. */
const answer = (js: JetStream, { acc, subject, reply, body, internal }: ApiRequest): Effect.Effect<void> =>
  handleApi(js, acc, subject, body, internal?.adopt === true).pipe(
    Effect.catchAllDefect((d) => Effect.succeed({ type: "io.nats.jetstream.api.v1.error_response", error: JsErr.streamStoreFailed(String(d)) })),
    Effect.flatMap((res) =>
      Effect.sync(() => {
        if (internal !== undefined) return internal.respond(res)
        if (res === undefined) return
        js.apiTotal++
        acc.apiTotal++
        if ("error" in res) {
          js.apiErrors++
          acc.apiErrors++
        }
        if (reply !== "") js.server.router.publish(acc.principal, reply, "", undefined, Buffer.from(JSON.stringify(res)))
      })
    ),
    // Never let one failed request stop the ones queued behind it.
    Effect.catchAllCause((cause) => Effect.sync(() => js.log.error(`JetStream API request on '${subject}' failed: ${String(Cause.squash(cause))}`))),
    // An internal caller always hears back, also when the request failed or was cut short.
    Effect.ensuring(Effect.sync(() => internal?.respond(undefined)))
  )

/**
 * The API layer's fiber: requests one at a time, in arrival order, each answered before
 * the next is taken, so that each sees the effects of the one before (a long check
 * inside one yields the event loop between its slices, but no other request starts).
 */
const serveRequests = (js: JetStream, requests: Mailbox.ReadonlyMailbox<ApiRequest>): Effect.Effect<void> =>
  Effect.forever(Effect.flatMap(requests.take, (r) => answer(js, r))).pipe(
    Effect.catchTag("NoSuchElementException", () => Effect.void)
  )

/** Start the subsystem on the given Store: recover streams, serve the API in every known account. */
export const startJetStream = (
  server: Server,
  options: JetStreamOptions
): Effect.Effect<JetStream, StoreError, Store | Log | Scope.Scope> =>
  Effect.gen(function*() {
    const store = yield* Store
    const log = yield* Log
    const groupCommit = yield* GroupCommit
    // The subscriptions queue requests (synchronously, from the router); one fiber answers them.
    const requests = yield* Mailbox.make<ApiRequest>()
    const js = new JetStream(server, options, store, log, groupCommit, (r) => {
      if (!requests.unsafeOffer(r)) r.internal?.respond(undefined)
    })
    const api = yield* Effect.forkScoped(serveRequests(js, requests))
    // One timer for every time-driven thing in the subsystem (max_age, ack_wait, pull
    // expiry, heartbeats, inactivity, the sync_interval fsync, compaction), armed only
    // when one of them is pending: Effect's Clock, so tests drive it with TestClock.
    js.alarm = yield* startAlarm((now) => js.runDue(now), TICK_MS)
    yield* js.recover()
    for (const name of server.accounts.keys()) if (name !== server.options.systemAccount) js.account(name)
    // On the way out, no request changes anything while consumers are saved and streams closed.
    // Internal callers still queued hear that no answer is coming.
    const dropQueued = Effect.flatMap(requests.clear, (left) => Effect.sync(() => {
      for (const r of left) r.internal?.respond(undefined)
    }))
    yield* Effect.addFinalizer(() => Effect.zipRight(Effect.zipRight(Effect.zipRight(requests.shutdown, Fiber.interrupt(api)), dropQueued), js.stop()))
    return js
  })

export const startJetStreamOnDisk = (
  server: Server,
  options: JetStreamOptions
): Effect.Effect<JetStream, StoreError, Log | Scope.Scope> =>
  Effect.gen(function*() {
    // Node's file system, unless the caller provides another disk (the tests' simulated one).
    const given = yield* Effect.serviceOption(Disk)
    const disk = Option.isSome(given) ? Layer.succeed(Disk, given.value) : layerNode
    // Group commit rounds in this runtime, reporting to the server's log.
    const commits = yield* Layer.build(GroupCommit.layer)
    const store = yield* Layer.build(layerFile(options.storeDir).pipe(Layer.provide(disk), Layer.provide(Layer.succeedContext(commits))))
    return yield* startJetStream(server, options).pipe(Effect.provide(store), Effect.provide(commits))
  })
