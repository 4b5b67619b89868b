// The engine's Router on its own: who a message reaches (plain subscribers, one member
// per queue group, echo), the checks every door shares, the 503 for a request nobody
// took, and the Delivery records it reuses, nested routing included.
import { describe, expect, it } from "vitest"
import { ClientPermissions } from "../../src/engine/permissions.js"
import { type Delivery, Principal, Subscription } from "../../src/engine/principal.js"
import { Router } from "../../src/engine/router.js"

/** A principal that records what reaches it (what a driver would write for its peer). */
class Recorder extends Principal {
  readonly got: Array<string> = []
  readonly noResponse: Array<string> = []
  refuse = false

  deliver(s: Subscription, d: Delivery): boolean {
    if (this.refuse) return false
    s.delivered++
    this.got.push(`${s.sid} ${d.subject} ${d.buf.toString("latin1", d.payloadStart, d.end)} q${d.origin.qos}`)
    return true
  }

  override sendNoResponders(s: Subscription, reply: string): void {
    this.noResponse.push(`${s.sid} ${reply}`)
  }
}

const seeded = (): (() => number) => {
  let x = 12345
  return () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff
    return x / 0x80000000
  }
}

const setup = () => {
  const router = new Router({ now: () => 1_000, random: seeded() })
  const acc = router.account("A")
  const who = (name: string) => {
    const p = new Recorder(acc)
    p.user = name
    return p
  }
  // a subscription under the client's own sid, as a NATS SUB makes it
  const sub = (p: Principal, subject: string, sid: string, queue?: string) => {
    const s = new Subscription(p, subject, queue, sid)
    p.addSub(s)
    return s
  }
  const publish = (from: Principal, subject: string, payload: string, reply = "") => {
    const buf = Buffer.from(payload)
    const d = router.message(from)
    d.subject = subject
    d.reply = reply
    d.hdrLen = -1
    d.buf = buf
    d.start = 0
    d.end = buf.length
    return router.route(d)
  }
  return { router, acc, who, sub, publish }
}

describe("Router.route", () => {
  it("reaches every plain subscriber and one member of each queue group, counting a group once", () => {
    const { who, sub, publish } = setup()
    const [pub, a, b, q1, q2] = ["pub", "a", "b", "q1", "q2"].map(who)
    sub(a, "x.*", "1")
    sub(b, "x.y", "2")
    sub(q1, "x.y", "3", "workers")
    sub(q2, "x.>", "4", "workers")
    let groupHits = 0
    for (let i = 0; i < 50; i++) {
      expect(publish(pub, "x.y", `m${i}`)).toBe(3)
      groupHits = q1.got.length + q2.got.length
      expect(groupHits).toBe(i + 1)
    }
    expect(a.got).toHaveLength(50)
    expect(b.got).toHaveLength(50)
    // the seeded choice spreads the group's messages over both members
    expect(q1.got.length).toBeGreaterThan(0)
    expect(q2.got.length).toBeGreaterThan(0)
  })

  it("skips the publisher's own subscriptions without echo, and a queue member that cannot take it", () => {
    const { who, sub, publish } = setup()
    const [me, other, q1, q2] = ["me", "other", "q1", "q2"].map(who)
    sub(me, "t", "1")
    sub(other, "t", "2")
    me.echo = false
    expect(publish(me, "t", "hi")).toBe(1)
    expect(me.got).toEqual([])
    q1.refuse = true
    sub(q1, "job", "3", "g")
    sub(q2, "job", "4", "g")
    for (let i = 0; i < 10; i++) expect(publish(other, "job", `j${i}`)).toBe(1)
    expect(q2.got).toHaveLength(10)
  })

  it("applies the checks every door shares: closed, subscribe deny, and reply grants under allow_responses", () => {
    const { who, sub, publish } = setup()
    const pub = who("pub")
    const denied = who("denied")
    denied.perms = new ClientPermissions({ publish: undefined, subscribe: { allow: undefined, deny: ["secret.>"] }, allowResponses: undefined })
    sub(denied, ">", "1")
    const responder = who("responder")
    responder.perms = new ClientPermissions({ publish: { allow: [], deny: undefined }, subscribe: undefined, allowResponses: { maxMsgs: 1, expiresMs: 100 } })
    sub(responder, "svc", "2")
    const gone = who("gone")
    const s = sub(gone, "svc", "3")
    gone.closed = true
    expect(publish(pub, "secret.x", "no")).toBe(0)
    expect(denied.got).toEqual([])
    expect(publish(pub, "svc", "req", "_INBOX.1")).toBe(2)
    expect(s.delivered).toBe(0)
    // the reply subject it was handed may be answered once, within the grant's time (the record's clock)
    expect(responder.perms.canPublish("_INBOX.1", { now: () => 1_050 })).toBe(true)
    expect(responder.perms.canPublish("_INBOX.1", { now: () => 1_050 })).toBe(false)
  })

  it("answers a request nobody took with a 503 on the publisher's own reply subscription, when it asked for that", () => {
    const { who, sub, publish } = setup()
    const asker = who("asker")
    sub(asker, "_INBOX.a.*", "9")
    expect(publish(asker, "nobody.home", "?", "_INBOX.a.1")).toBe(0)
    expect(asker.noResponse).toEqual([])
    asker.noResponders = true
    asker.headers = true
    expect(publish(asker, "nobody.home", "?", "_INBOX.a.2")).toBe(0)
    expect(asker.noResponse).toEqual(["9 _INBOX.a.2"])
    // a request without a reply subject is not one
    expect(publish(asker, "nobody.home", "?")).toBe(0)
    expect(asker.noResponse).toHaveLength(1)
  })

  it("keeps the outer record intact while a handler routes anew from inside a delivery (an import)", () => {
    const { router, who, sub, publish } = setup()
    const other = router.account("B")
    const into = router.internal("B", "import")
    const listener = router.internal("A", "export")
    const pub = who("pub")
    const before = who("before")
    const after = who("after")
    const inB = new Recorder(other)
    sub(before, "ev.*", "1")
    router.subscribe(listener, "ev.*", undefined, (d) => {
      expect(router.forward(into, d, `imported.${d.subject}`, d.reply)).toBe(2)
    })
    sub(after, "ev.*", "2")
    sub(inB, "imported.>", "3")
    const seqs: Array<number> = []
    router.subscribe(router.internal("B", "watch"), "imported.>", undefined, (d) => {
      seqs.push(d.seq)
      expect(d.origin.publisher).toBe(into)
    })
    const d = router.message(pub)
    d.subject = "ev.one"
    d.reply = ""
    d.buf = Buffer.from("payload")
    d.start = 0
    d.end = d.buf.length
    d.hdrLen = -1
    d.origin.qos = 1
    d.origin.ref = 42
    const outerSeq = d.seq
    expect(router.route(d)).toBe(3)
    expect(before.got).toEqual(["1 ev.one payload q1"])
    expect(after.got).toEqual(["2 ev.one payload q1"])
    // forwarded with its QoS; a stored copy's reference stays in the account it was stored in
    expect(inB.got).toEqual(["3 imported.ev.one payload q1"])
    expect(seqs).toHaveLength(1)
    expect(seqs[0]).not.toBe(outerSeq)
    // the records are reused: the next message of the same depth is the same object
    expect(router.message(pub)).toBe(d)
    expect(publish(pub, "ev.two", "again")).toBe(3)
    expect(after.got.at(-1)).toBe("2 ev.two again q0")
  })

  it("hands a forwarded message's stored copy on only within its account", () => {
    const { router, who } = setup()
    const into = router.internal("B", "import")
    const refs: Array<number | undefined> = []
    router.subscribe(router.internal("B", "watch"), "x", undefined, (d) => refs.push(d.origin.ref))
    const d = router.message(who("pub"))
    d.subject = "x"
    d.buf = Buffer.from("p")
    d.end = 1
    d.origin.ref = 7
    router.forward(into, d, "x", "")
    expect(refs).toEqual([undefined])
  })

  it("delivers a consumer's message to the subscribers of another subject, showing its own", () => {
    const { router, who, sub } = setup()
    const js = router.internal("A", "JetStream")
    const inbox = who("puller")
    sub(inbox, "_INBOX.p", "5")
    const d = router.compose(js, "orders.1", "$JS.ACK.x", Buffer.from("NATS/1.0\r\nA: b\r\n\r\n"), Buffer.from("body"))
    router.deliverTo("_INBOX.p", d)
    expect(inbox.got).toEqual(["5 orders.1 body q0"])
  })
})

describe("the other servers of a cluster (RemoteRouting, InterestWatcher)", () => {
  /** A stand-in for the cluster: records what it is handed and says how many servers took it. */
  const remoteOf = (takes: number) => {
    const calls: Array<string> = []
    return {
      calls,
      forward: (d: Delivery, served: ReadonlyArray<string>) => {
        calls.push(`${d.subject} served=[${served.join(",")}]`)
        return takes
      }
    }
  }

  class Peer extends Recorder {
    override readonly remote = true
  }

  it("hands a message published here on after local delivery, with the queue groups a local member took", () => {
    const { router, who, sub, publish } = setup()
    const remote = remoteOf(1)
    router.remote = remote
    const [pub, a, q] = ["pub", "a", "q"].map(who)
    sub(a, "x", "1")
    sub(q, "x", "2", "W")
    expect(publish(pub, "x", "m")).toBe(3)
    expect(remote.calls).toEqual(["x served=[W]"])
    expect(publish(pub, "nothing.here", "m")).toBe(1)
    expect(remote.calls[1]).toBe("nothing.here served=[]")
  })

  it("never hands on what came from another server, nor a copy marked local", () => {
    const { router, acc, sub } = setup()
    const remote = remoteOf(1)
    router.remote = remote
    const peer = new Peer(acc)
    const local = new Recorder(acc)
    sub(local, "x", "1")
    const d = router.message(peer)
    d.subject = "x"
    d.buf = Buffer.from("m")
    d.end = 1
    d.origin.queues = []
    expect(router.route(d)).toBe(1)
    const e = router.message(local)
    e.subject = "x"
    e.buf = Buffer.from("m")
    e.end = 1
    e.origin.local = true
    router.route(e)
    expect(remote.calls).toEqual([])
  })

  it("hands the leaf nodes (edge) what came from a route too, after the routes, with the groups a route was picked for", () => {
    const { router, acc, who, sub, publish } = setup()
    const routes = { calls: [] as Array<string>, forward: (d: Delivery, served: Array<string>) => {
      routes.calls.push(`${d.subject} served=[${served.join(",")}]`)
      served.push("R")
      return 1
    } }
    const edge = remoteOf(1)
    router.remote = routes
    router.edge = edge
    const [pub, q] = ["pub", "q"].map(who)
    sub(q, "x", "1", "W")
    expect(publish(pub, "x", "m")).toBe(3)
    expect([routes.calls, edge.calls]).toEqual([["x served=[W]"], ["x served=[W,R]"]])
    const peer = new Peer(acc)
    const d = router.message(peer)
    d.subject = "y"
    d.buf = Buffer.from("m")
    d.end = 1
    d.origin.queues = []
    router.route(d)
    expect(routes.calls).toHaveLength(1)
    expect(edge.calls[1]).toBe("y served=[]")
  })

  it("gives nothing another server published to a principal that does not announce (that server's own subsystems answered it)", () => {
    const { router, acc, who, sub, publish } = setup()
    class Foreign extends Recorder {
      override readonly foreign = true
    }
    const peer = new Foreign(acc)
    const [own, plain, q] = ["own", "plain", "q"].map(who)
    own.announce = false
    q.announce = false
    sub(own, "$JS.API.INFO", "1")
    sub(plain, "$JS.API.INFO", "2")
    sub(q, "$JS.API.INFO", "3", "G")
    const d = router.message(peer)
    d.subject = "$JS.API.INFO"
    d.buf = Buffer.from("m")
    d.end = 1
    expect(router.route(d)).toBe(1)
    expect([own.got.length, plain.got.length, q.got.length]).toEqual([0, 1, 0])
    // A local publisher's reaches all three.
    expect(publish(who("client"), "$JS.API.INFO", "m")).toBe(3)
  })

  it("sends a consumer's delivery (deliverTo) to other servers by its target, the subject it shows after an @ in the reply", () => {
    const { router, acc, who, sub } = setup()
    const sent: Array<string> = []
    const forward = (d: Delivery) => {
      sent.push(`${d.subject} ${d.reply} ${d.buf.toString("latin1", d.start, d.end)}`)
      return 1
    }
    router.remote = { forward }
    router.edge = { forward }
    const inbox = who("inbox")
    sub(inbox, "_INBOX.1", "1")
    const d = router.compose(who("js"), "orders.1", "$JS.ACK.S.D.1.1.1.0.0", undefined, Buffer.from("x"))
    router.deliverTo("_INBOX.1", d)
    expect(inbox.got).toEqual(["1 orders.1 x q0"])
    expect(sent).toEqual(["_INBOX.1 $JS.ACK.S.D.1.1.1.0.0@orders.1 x", "_INBOX.1 $JS.ACK.S.D.1.1.1.0.0@orders.1 x"])
    // What came from a route goes on to leaf nodes only.
    const peer = new Peer(acc)
    const e = router.compose(peer, "orders.2", "$JS.ACK.S.D.1.2.2.0.0", undefined, Buffer.from("y"))
    router.deliverTo("_INBOX.1", e)
    expect(sent.slice(2)).toEqual(["_INBOX.1 $JS.ACK.S.D.1.2.2.0.0@orders.2 y"])
    // Without an ack reply there is nothing to carry the subject in: it goes by its target alone.
    router.deliverTo("_INBOX.1", router.compose(who("js"), "orders.3", "", undefined, Buffer.from("z")))
    expect(sent.slice(3)).toEqual(["_INBOX.1  z", "_INBOX.1  z"])
  })

  it("delivers a message from another server to plain subscribers and only the queue groups it names", () => {
    const { router, acc, who, sub } = setup()
    const peer = new Peer(acc)
    const [plain, w, v] = ["plain", "w", "v"].map(who)
    sub(plain, "job", "1")
    sub(w, "job", "2", "W")
    sub(v, "job", "3", "V")
    const send = (queues: ReadonlyArray<string>) => {
      const d = router.message(peer)
      d.subject = "job"
      d.buf = Buffer.from("m")
      d.end = 1
      d.origin.queues = queues
      return router.route(d)
    }
    expect(send([])).toBe(1)
    expect(send(["W"])).toBe(2)
    expect(send(["W", "V"])).toBe(3)
    expect([plain.got.length, w.got.length, v.got.length]).toEqual([3, 2, 1])
  })

  it("counts a server that took a request: no 503 then, one when nobody anywhere took it", () => {
    const { router, who, sub, publish } = setup()
    const pub = who("pub")
    pub.headers = true
    pub.noResponders = true
    sub(pub, "_INBOX.1", "9")
    router.remote = remoteOf(1)
    publish(pub, "svc", "req", "_INBOX.1")
    expect(pub.noResponse).toEqual([])
    router.remote = remoteOf(0)
    publish(pub, "svc", "req", "_INBOX.1")
    expect(pub.noResponse).toEqual(["9 _INBOX.1"])
  })

  it("tells its watcher of every subscription of every account, those created later too", () => {
    const { router, acc, sub } = setup()
    const seen: Array<string> = []
    router.watch({
      subscribed: (a, s) => seen.push(`+${a.name} ${s.subject}`),
      unsubscribed: (a, s) => seen.push(`-${a.name} ${s.subject}`)
    })
    const p = new Recorder(acc)
    const s = sub(p, "x", "1")
    const q = new Recorder(router.account("LATER"))
    sub(q, "y", "2")
    p.removeSub(s)
    expect(seen).toEqual(["+A x", "+LATER y", "-A x"])
  })
})

describe("a stream consumer's delivery from another server (jsDeliveryAt)", () => {
  it("splits only a $JS.ACK reply, at its last @, and leaves every other reply whole", async () => {
    const { jsDeliveryAt } = await import("../../src/server/cluster/link.js")
    const r = "$JS.ACK.S.D.1.1.1.1795587940444397940.0@orders.1"
    expect([r.slice(0, jsDeliveryAt(r)), r.slice(jsDeliveryAt(r) + 1)]).toEqual(["$JS.ACK.S.D.1.1.1.1795587940444397940.0", "orders.1"])
    for (const plain of ["", "user@example.com", "_INBOX.a@b", "$JS.ACK.S.D.1@", "$JS.ACK.@x", "$JS.ACK.S.D.1.1.1.0.0"]) expect(jsDeliveryAt(plain)).toBe(-1)
  })
})
