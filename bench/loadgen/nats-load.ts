// NATS load: publish/subscribe flows, request-reply latency, idle connections.
// Everything runs on raw sockets in this (load-generator) process.
import * as net from "node:net"
import { performance } from "node:perf_hooks"
import type { JobResult, NatsFlowJob, NatsIdleJob, NatsReqRepJob } from "./jobs.js"
import { connectLine, encodePub, NatsReader, payload, PING, PONG, pubBatch } from "./nats-wire.js"
import { ProcWatch } from "./procfs.js"

const HOST = "127.0.0.1"
/** Target bytes of one pre-encoded publish batch (each batch ends with a PING). */
const BATCH_BYTES = Number(process.env.BENCH_BATCH ?? 256 * 1024)
/** Batches a publisher may have written without their PONG. */
const MAX_PINGS_OUT = Number(process.env.BENCH_PINGS ?? 4)
/** Wire bytes a publisher may be ahead of the slowest receiver. */
const WINDOW_BYTES = Number(process.env.BENCH_WINDOW ?? 32 * 1024 * 1024)
/** No receive progress for this long after publishing ends = the rest is lost. */
const STALL_MS = 3000

export class Conn {
  readonly reader = new NatsReader()
  private readonly pongWaiters: Array<() => void> = []
  closed = false
  closeReason: string | undefined

  constructor(readonly sock: net.Socket) {
    this.reader.onPing = () => {
      sock.write(PONG)
    }
    this.reader.onPong = () => {
      const w = this.pongWaiters.shift()
      if (w !== undefined) w()
    }
  }

  /** PING and wait for the PONG: everything written before has been processed. */
  flush(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error(`connection closed: ${this.closeReason ?? ""}`))
      this.pongWaiters.push(resolve)
      this.sock.write(PING)
    })
  }

  destroy(): void {
    this.closed = true
    this.sock.destroy()
  }
}

/** Connect, wait for INFO, send CONNECT + PING, wait for PONG. */
export const connect = (port: number, name: string, onData?: (c: Conn) => void): Promise<Conn> =>
  new Promise((resolve, reject) => {
    const sock = net.connect({ host: HOST, port })
    sock.setNoDelay(true)
    const c = new Conn(sock)
    let ready = false
    c.reader.onInfo = () => {
      c.reader.onInfo = undefined
      sock.write(connectLine(name))
      c.flush().then(
        () => {
          ready = true
          resolve(c)
        },
        reject
      )
    }
    sock.on("data", (b: Buffer) => {
      c.reader.feed(b)
      if (onData !== undefined) onData(c)
    })
    sock.on("error", (e) => {
      c.closeReason = e.message
      if (!ready) reject(e)
    })
    sock.on("close", () => {
      c.closed = true
      if (c.closeReason === undefined) c.closeReason = "closed by peer"
      if (!ready) reject(new Error(`connection closed before ready: ${c.reader.errors.join("; ")}`))
    })
  })

const watches = new Map<number, ProcWatch>()
export const watch = (pid: number): ProcWatch => {
  let w = watches.get(pid)
  if (w === undefined) {
    w = new ProcWatch(pid)
    watches.set(pid, w)
  }
  return w
}

/** Both servers' CPU together (a cluster run), or the one server's. */
const serverCpu = (serverPid: number, otherPid: number | undefined): { readonly total: number; readonly system: number } | undefined => {
  const a = watch(serverPid).cpuTimes()
  if (otherPid === undefined || a === undefined) return a
  const b = watch(otherPid).cpuTimes()
  return b === undefined ? undefined : { total: a.total + b.total, system: a.system + b.system }
}

export const cpuNow = (serverPid: number, otherPid?: number) => ({
  t: performance.now(),
  gen: process.cpuUsage(),
  srv: serverCpu(serverPid, otherPid)
})

/**
 * A cluster run: wait until interest made on the subscribers' server (`subject`,
 * subscribed by `watcher` after everything before it) is known to the publishers'
 * (`pub`): probes published there reach `watcher`. Interest crosses a route in order, so
 * the subscriptions made before the watcher's are known too.
 */
const routedInterest = async (pub: Conn, watcher: Conn, subject: string, sid: number): Promise<void> => {
  watcher.sock.write(`SUB ${subject} ${sid}\r\n`)
  await watcher.flush()
  const before = watcher.reader.msgs
  const until = performance.now() + 10_000
  while (watcher.reader.msgs === before) {
    if (performance.now() > until) throw new Error(`the subscribers' interest did not reach the publishers' server within 10 s (${subject})`)
    pub.sock.write(`PUB ${subject} 0\r\n\r\n`)
    await pub.flush()
    await watcher.flush()
    await new Promise((r) => setTimeout(r, 10))
  }
}

export const cpuMetrics = (
  start: ReturnType<typeof cpuNow>,
  end: ReturnType<typeof cpuNow>,
  msgs: number
): Record<string, number> => {
  const wallUs = (end.t - start.t) * 1000
  const g = process.cpuUsage(start.gen)
  const genUs = g.user + g.system
  const out: Record<string, number> = {
    genCpuPct: (100 * genUs) / wallUs,
    genUsPerMsg: msgs > 0 ? genUs / msgs : 0
  }
  if (start.srv !== undefined && end.srv !== undefined) {
    const srvUs = end.srv.total - start.srv.total
    out.srvCpuPct = (100 * srvUs) / wallUs
    out.srvUsPerMsg = msgs > 0 ? srvUs / msgs : 0
    // the kernel's share (socket and file system calls): what no user-space change removes
    if (srvUs > 0) out.srvSysPct = (100 * (end.srv.system - start.srv.system)) / srvUs
  }
  return out
}

// ---------------------------------------------------------------- flows

export const runFlow = async (job: NatsFlowJob): Promise<JobResult> => {
  const subject = "bench.flow"
  const errors: Array<string> = []
  let blocked = false
  const pumps: Array<Pump> = []
  const kick = (): void => {
    if (!blocked) return
    blocked = false
    for (const p of pumps) p.pump()
  }

  const subPort = job.subPort ?? job.port
  // A cluster run: the route is up (a first probe crosses it) before the subscriptions are made.
  const probes = job.subPort === undefined ? undefined : [await connect(job.port, "bench-probe-pub"), await connect(subPort, "bench-probe-sub")] as const
  if (probes !== undefined) await routedInterest(probes[0], probes[1], "bench.probe.route", 1)
  // Everyone on one server of a pair: the route is up (a probe subscribed on the peer gets a
  // message published here), then the probe leaves, so the peer has no interest at all.
  if (job.peerPort !== undefined && job.subPort === undefined) {
    const local = await connect(job.port, "bench-probe-local")
    const remote = await connect(job.peerPort, "bench-probe-peer")
    await routedInterest(local, remote, "bench.probe.route", 1)
    for (const c of [local, remote]) c.destroy()
  }
  const subs: Array<Conn> = []
  for (let i = 0; i < job.subs; i++) {
    const c = await connect(subPort, `bench-sub-${i}`, kick)
    c.sock.write(job.queue ? `SUB ${subject} q 1\r\n` : `SUB ${subject} 1\r\n`)
    await c.flush()
    subs.push(c)
  }
  if (probes !== undefined) {
    await routedInterest(probes[0], probes[1], "bench.probe.subs", 2)
    for (const c of probes) c.destroy()
  }
  const pubConns: Array<Conn> = []
  for (let i = 0; i < job.pubs; i++) pubConns.push(await connect(job.port, `bench-pub-${i}`))

  const msg = encodePub(subject, undefined, payload(job.size))
  const batch = pubBatch(msg, BATCH_BYTES)
  const windowMsgs = Math.max(batch.perBatch * MAX_PINGS_OUT, Math.floor(WINDOW_BYTES / msg.length))

  let sentTotal = 0
  // what each receiver (or the group) must get: everything published, known once publishing ended
  const expectedPerSub = (): number => (job.subs === 0 || job.queue ? 0 : sentTotal)
  const expectedTotal = (): number => (job.subs === 0 ? 0 : job.queue ? sentTotal : sentTotal * job.subs)
  const deadline = job.durationMs > 0 ? performance.now() + job.durationMs : Infinity
  const received = (): number => {
    let n = 0
    for (const s of subs) n += s.reader.msgs
    return n
  }
  /** Messages published that the slowest receiver (or the group) has not seen yet. */
  const inFlight = (): number => {
    if (job.subs === 0) return 0
    if (job.queue) return sentTotal - received()
    let min = Infinity
    for (const s of subs) if (s.reader.msgs < min) min = s.reader.msgs
    return sentTotal - min
  }

  class Pump {
    sent = 0
    pingsOut = 0
    waitingDrain = false
    done = false
    onDone: (() => void) | undefined
    constructor(readonly conn: Conn, public total: number) {
      conn.reader.onPong = () => {
        this.pingsOut--
        if (!this.finishIfDone()) this.pump()
      }
    }
    /** Everything sent has its PONG: this publisher is done. */
    finishIfDone(): boolean {
      if (this.done || this.sent !== this.total || this.pingsOut !== 0) return this.done
      this.done = true
      if (this.onDone !== undefined) this.onDone()
      return true
    }
    pump(): void {
      if (this.waitingDrain || this.conn.closed) return
      while (this.sent < this.total) {
        if (this.pingsOut >= MAX_PINGS_OUT) return
        // time is up: what was sent is the total (done when the last PONG comes)
        // (a pump kicked by the subscribers, not by a PONG, may find every PONG already in)
        if (performance.now() >= deadline) {
          this.total = this.sent
          this.finishIfDone()
          return
        }
        if (inFlight() >= windowMsgs) {
          blocked = true
          return
        }
        const n = Math.min(batch.perBatch, this.total - this.sent)
        const buf = n === batch.perBatch ? batch.full : batch.partial(n)
        this.sent += n
        sentTotal += n
        this.pingsOut++
        if (!this.conn.sock.write(buf)) {
          this.waitingDrain = true
          this.conn.sock.once("drain", () => {
            this.waitingDrain = false
            this.pump()
          })
          return
        }
      }
    }
  }

  const per = Math.floor(job.count / job.pubs)
  for (let i = 0; i < job.pubs; i++) {
    pumps.push(new Pump(pubConns[i]!, per + (i < job.count % job.pubs ? 1 : 0)))
  }

  const start = cpuNow(job.serverPid, job.subServerPid ?? job.peerPid)
  let pubDoneAt = 0
  let endAt = 0
  const finished = new Promise<void>((resolve) => {
    let pubsDone = 0
    let lastRecv = -1
    let lastSentSeen = 0
    let lastRecvAt = 0
    let lastProgress = performance.now()
    const check = (): boolean => {
      const r = received()
      if (pubsDone === job.pubs && r >= expectedTotal()) {
        // the end is the last delivery (the final PONG may come after it)
        if (endAt === 0) endAt = job.subs === 0 ? pubDoneAt : lastRecvAt > 0 ? lastRecvAt : performance.now()
        clearInterval(timer)
        resolve()
        return true
      }
      return false
    }
    const timer = setInterval(() => {
      if (check()) return
      const r = received()
      const now = performance.now()
      const pubSent = pumps.reduce((a, p) => a + p.sent, 0)
      if (r !== lastRecv || pubSent !== lastSentSeen) {
        lastRecv = r
        lastSentSeen = pubSent
        lastProgress = now
      } else if (now - lastProgress > STALL_MS) {
        errors.push(
          `stalled: no progress for ${STALL_MS} ms (published ${pubSent}, received ${r}/${expectedTotal()})`
        )
        for (const c of [...subs, ...pubConns]) if (c.closed) errors.push(`connection closed: ${c.closeReason}`)
        endAt = lastRecvAt > 0 ? lastRecvAt : now
        if (pubDoneAt === 0) pubDoneAt = now
        clearInterval(timer)
        resolve()
      }
    }, 50)
    for (const p of pumps) {
      p.onDone = () => {
        pubsDone++
        if (pubsDone === job.pubs) pubDoneAt = performance.now()
        check()
      }
    }
    // precise end time: the receivers check completion on each chunk
    for (const s of subs) {
      s.sock.on("data", () => {
        lastRecvAt = performance.now()
        if (pubsDone === job.pubs) check()
      })
    }
  })
  for (const p of pumps) p.pump()
  await finished
  const end = cpuNow(job.serverPid, job.subServerPid ?? job.peerPid)
  // CPU figures cover the whole interval up to the last delivery
  const got = received()
  const headline = job.subs === 0 ? sentTotal : got
  const elapsedMs = (job.subs === 0 ? pubDoneAt : endAt) - start.t
  for (const c of [...subs, ...pubConns]) {
    for (const e of c.reader.errors) errors.push(e)
  }
  let loss = 0
  let excess = 0
  if (job.subs > 0) {
    if (job.queue) {
      loss = Math.max(0, expectedTotal() - got)
      excess = Math.max(0, got - expectedTotal())
    } else {
      for (const s of subs) {
        loss += Math.max(0, expectedPerSub() - s.reader.msgs)
        excess += Math.max(0, s.reader.msgs - expectedPerSub())
      }
    }
  }
  // publish only: batches whose PONG never came (a stall) are what the server may have dropped
  if (job.subs === 0) {
    for (const p of pumps) if (!p.done) loss += Math.min(p.sent, p.pingsOut * batch.perBatch)
    if (job.durationMs === 0) loss += job.count - sentTotal
  }
  const metrics: Record<string, number> = {
    rate: (headline * 1000) / elapsedMs,
    mbps: (headline * job.size * 1000) / elapsedMs / 1e6,
    pubRate: (sentTotal * 1000) / (pubDoneAt - start.t),
    published: sentTotal,
    delivered: got,
    elapsedMs,
    ...cpuMetrics(start, end, headline)
  }
  if (job.queue) {
    // how evenly the group shared the load: smallest share / fair share
    const fair = got / job.subs
    metrics.queueBalance = fair > 0 ? Math.min(...subs.map((s) => s.reader.msgs)) / fair : 0
  }
  for (const c of [...subs, ...pubConns]) c.destroy()
  return { ok: true, metrics, loss, excess, errors }
}

// ---------------------------------------------------------------- request-reply

export const runReqRep = async (job: NatsReqRepJob): Promise<JobResult> => {
  const errors: Array<string> = []
  const responder = await connect(job.port, "bench-responder")
  responder.reader.capture = (m) => {
    // MSG <subject> <sid> <reply> <size>: echo the payload to the reply subject
    const parts = m.line.split(" ")
    if (parts.length < 5) return
    const reply = parts[3]!
    responder.sock.write(encodePub(reply, undefined, m.payload))
  }
  responder.sock.write("SUB bench.req 1\r\n")
  await responder.flush()

  const inbox = "_INBOX.x"
  const requester = await connect(job.port, "bench-requester")
  requester.sock.write(`SUB ${inbox} 1\r\n`)
  await requester.flush()

  const req = encodePub("bench.req", inbox, payload(job.size))
  const warmup = Math.min(1000, Math.ceil(job.count / 10))
  const total = warmup + job.count
  const lat = new Float64Array(job.count)
  let done = 0
  let sentAt = 0
  let start: ReturnType<typeof cpuNow> | undefined
  const finished = new Promise<void>((resolve) => {
    let timer: NodeJS.Timeout | undefined
    const arm = (): void => {
      if (timer !== undefined) clearTimeout(timer)
      timer = setTimeout(() => {
        errors.push(`no reply within 5 s to request ${done + 1}`)
        resolve()
      }, 5000)
    }
    const send = (): void => {
      if (done === warmup) start = cpuNow(job.serverPid)
      sentAt = performance.now()
      requester.sock.write(req)
    }
    requester.reader.onMsg = () => {
      const now = performance.now()
      if (done >= warmup) lat[done - warmup] = (now - sentAt) * 1000
      done++
      if (done === total) {
        if (timer !== undefined) clearTimeout(timer)
        resolve()
        return
      }
      arm()
      send()
    }
    arm()
    send()
  })
  await finished
  const end = cpuNow(job.serverPid)
  for (const c of [responder, requester]) for (const e of c.reader.errors) errors.push(e)
  const measured = Math.max(0, done - warmup)
  const sorted = lat.subarray(0, measured).sort()
  const pct = (p: number): number =>
    measured === 0 ? 0 : sorted[Math.min(measured - 1, Math.ceil((p / 100) * measured) - 1)]!
  let sum = 0
  for (let i = 0; i < measured; i++) sum += sorted[i]!
  const s = start ?? end
  const elapsedMs = end.t - s.t
  const metrics: Record<string, number> = {
    p50: pct(50),
    p90: pct(90),
    p99: pct(99),
    p999: pct(99.9),
    max: measured === 0 ? 0 : sorted[measured - 1]!,
    mean: measured === 0 ? 0 : sum / measured,
    rate: elapsedMs > 0 ? (measured * 1000) / elapsedMs : 0,
    elapsedMs,
    ...cpuMetrics(s, end, measured)
  }
  responder.destroy()
  requester.destroy()
  return { ok: true, metrics, loss: job.count - measured, excess: 0, errors }
}

// ---------------------------------------------------------------- idle connections

export const runIdle = async (job: NatsIdleJob): Promise<JobResult> => {
  const errors: Array<string> = []
  const CONCURRENCY = Number(process.env.BENCH_CONC ?? 64)
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
  const w = watch(job.serverPid)
  await sleep(300)
  const rssBefore = w.statusBytes("VmRSS") ?? 0
  const conns: Array<Conn> = []
  let failed = 0
  const errorKinds = new Map<string, number>()
  const start = cpuNow(job.serverPid)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < job.count) {
      next++
      try {
        conns.push(await connect(job.port, "bench-idle"))
      } catch (e) {
        failed++
        // "connect EMFILE 127.0.0.1:4222 - Local (...)" -> "connect EMFILE"
        const k = (e instanceof Error ? e.message : String(e)).replace(/\s*\d+\.\d+\.\d+\.\d+:\d+.*$/, "")
        errorKinds.set(k, (errorKinds.get(k) ?? 0) + 1)
        // out of descriptors or ports: opening more only repeats the failure
        if (/EMFILE|ENFILE|EADDRNOTAVAIL/.test(k) && next < job.count) {
          errors.push(
            `out of descriptors/ports (${k}) after ${conns.length} connections; ${job.count - next} not attempted (ulimit -n is the limit)`
          )
          failed += job.count - next
          next = job.count
        }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, job.count) }, worker))
  const connected = cpuNow(job.serverPid)
  await sleep(1500)
  const rssAfter = w.statusBytes("VmRSS") ?? 0
  const closedEarly = conns.filter((c) => c.closed).length
  for (const [k, n] of errorKinds) errors.push(`${n} × connect failed: ${k}`)
  if (closedEarly > 0) errors.push(`${closedEarly} connections closed by the server while idle`)
  const held = conns.length - closedEarly
  const elapsedMs = connected.t - start.t
  const metrics: Record<string, number> = {
    connRate: (conns.length * 1000) / elapsedMs,
    kbPerConn: held > 0 ? (rssAfter - rssBefore) / held / 1024 : 0,
    rssBeforeMB: rssBefore / 1048576,
    rssAfterMB: rssAfter / 1048576,
    held,
    elapsedMs,
    ...cpuMetrics(start, connected, conns.length)
  }
  for (const c of conns) c.destroy()
  await sleep(200)
  return { ok: true, metrics, loss: failed + closedEarly, excess: 0, errors }
}
