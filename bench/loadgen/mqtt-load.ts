// MQTT load: QoS 0/1/2 flows (1→N, and MQTT → NATS through the server's bridge) and
// the connect rate. Everything runs on raw sockets in this (load-generator) process.
import * as net from "node:net"
import { performance } from "node:perf_hooks"
import type { JobResult, MqttConnectJob, MqttFlowJob } from "./jobs.js"
import {
  AckWriter,
  ackTables,
  encodeConnect,
  encodePublish,
  encodeSubscribe,
  MqttReader,
  PINGREQ,
  PublishBatch,
  PUBREC,
  PUBREL,
  SUBACK
} from "./mqtt-wire.js"
import { type Conn, connect as natsConnect, cpuMetrics, cpuNow, watch } from "./nats-load.js"
import { payload } from "./nats-wire.js"

const HOST = "127.0.0.1"
/** QoS 1/2: messages published and not yet acknowledged (PUBACK / PUBCOMP), at most. */
const WINDOW = Number(process.env.BENCH_MQTT_WINDOW ?? 1000)
/** QoS 0: messages a publisher may be ahead of the slowest receiver. */
const WINDOW_QOS0_BYTES = Number(process.env.BENCH_MQTT_WINDOW0 ?? 4 * 1024 * 1024)
/**
 * Target bytes of one pre-encoded publish batch. QoS 0 has as much in flight as the NATS
 * publisher (4 × 256 KiB): with 64 KiB batches a 16 KiB flow had 16 messages in flight and
 * measured the round trip, not the server (Switchyard 35 k → 51 k msgs/s, mosquitto the same).
 */
const BATCH_BYTES = Number(process.env.BENCH_MQTT_BATCH ?? 256 * 1024)
/** QoS 0 batches (each followed by a PINGREQ) written without their PINGRESP. */
const MAX_PINGS_OUT = Number(process.env.BENCH_MQTT_PINGS ?? 4)
/** No progress for this long = the rest is lost. */
const STALL_MS = Number(process.env.BENCH_STALL_MS ?? 5000)

export class MConn {
  readonly reader: MqttReader
  closed = false
  closeReason: string | undefined
  constructor(
    readonly sock: net.Socket,
    readonly v5 = false
  ) {
    this.reader = new MqttReader(v5)
  }
  destroy(): void {
    this.closed = true
    this.sock.destroy()
  }
}

/** TCP connect, CONNECT (clean session unless asked otherwise, no keep-alive; `v5`: MQTT 5.0), wait for CONNACK 0. */
export const mqttConnect = (port: number, clientId: string, clean = true, v5 = false): Promise<MConn> =>
  new Promise((resolve, reject) => {
    const sock = net.connect({ host: HOST, port })
    sock.setNoDelay(true)
    const c = new MConn(sock, v5)
    let ready = false
    sock.on("connect", () => {
      sock.write(encodeConnect(clientId, clean, 0, v5))
    })
    c.reader.onConnack = (code) => {
      c.reader.onConnack = undefined
      if (code === 0) {
        ready = true
        resolve(c)
      } else {
        reject(new Error(`CONNACK return code ${code}`))
        sock.destroy()
      }
    }
    sock.on("data", (b: Buffer) => c.reader.feed(b))
    sock.on("error", (e) => {
      c.closeReason = e.message
      if (!ready) reject(e)
    })
    sock.on("close", () => {
      c.closed = true
      if (c.closeReason === undefined) c.closeReason = "closed by peer"
      if (!ready) reject(new Error(`connection closed before CONNACK: ${c.closeReason}`))
    })
  })

/** SUBSCRIBE and wait for the SUBACK; returns the granted QoS (0x80 = refused). */
const subscribe = (c: MConn, filter: string, qos: 0 | 1 | 2): Promise<number> =>
  new Promise((resolve, reject) => {
    const prev = c.reader.onAck
    const timer = setTimeout(() => reject(new Error(`no SUBACK for ${filter} within 10 s`)), 10_000)
    c.reader.onAck = (type, id) => {
      if (type === SUBACK) {
        clearTimeout(timer)
        c.reader.onAck = prev
        resolve(c.reader.subackCode)
      } else if (prev !== undefined) prev(type, id)
    }
    c.sock.write(encodeSubscribe(1, filter, qos, c.v5))
  })

/** Answer incoming QoS 1/2 PUBLISHes and PUBRELs from the pre-encoded tables. */
const autoAnswer = (c: MConn): void => {
  const t = ackTables()
  const write = (b: Buffer): void => {
    if (!c.closed) c.sock.write(b)
  }
  const puback = new AckWriter(t.puback, write)
  const pubrec = new AckWriter(t.pubrec, write)
  const pubcomp = new AckWriter(t.pubcomp, write)
  c.reader.onPublish = (qos, id) => {
    if (qos === 1) puback.add(id)
    else if (qos === 2) pubrec.add(id)
  }
  c.reader.onAck = (type, id) => {
    if (type === PUBREL) pubcomp.add(id)
  }
  // answers of all chunks read in one pass of the event loop go out in one write each
  let scheduled = false
  const flush = (): void => {
    scheduled = false
    puback.flush()
    pubrec.flush()
    pubcomp.flush()
  }
  c.reader.onChunkEnd = () => {
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
}

// ---------------------------------------------------------------- flows

export const runMqttFlow = async (job: MqttFlowJob): Promise<JobResult> => {
  const topic = "bench/flow"
  const errors: Array<string> = []
  let pump: () => void = () => {}

  // receivers: MQTT clients at the job's QoS, or NATS connections on the mapped subject
  const mqttSubs: Array<MConn> = []
  const natsSubs: Array<Conn> = []
  // persistent sessions get ids of their own, so a run never resumes another's session
  const subId = (i: number): string => (job.persistent === true ? `bench-sub-${i}-${process.pid}` : `bench-sub-${i}`)
  for (let i = 0; i < job.subs; i++) {
    if (job.natsSubs) {
      const c = await natsConnect(job.natsPort, `bench-bridge-sub-${i}`, () => pump())
      c.sock.write("SUB bench.flow 1\r\n")
      await c.flush()
      natsSubs.push(c)
    } else {
      const c = await mqttConnect(job.port, subId(i), job.persistent !== true, job.v5 === true)
      // MQTT 5.0 Shared Subscription: the subscribers split the messages
      const filter = job.shared === true ? `$share/bench/${topic}` : topic
      const granted = await subscribe(c, filter, job.qos)
      if (granted >= 0x80) throw new Error(`SUBSCRIBE ${filter} at QoS ${job.qos} refused (SUBACK 0x${granted.toString(16)})`)
      if (granted !== job.qos) errors.push(`subscription granted QoS ${granted}, asked ${job.qos}`)
      autoAnswer(c)
      c.sock.on("data", () => pump())
      mqttSubs.push(c)
    }
  }
  const received = (i: number): number => (job.natsSubs ? natsSubs[i]!.reader.msgs : mqttSubs[i]!.reader.publishes)
  const totalReceived = (): number => {
    let n = 0
    for (let i = 0; i < job.subs; i++) n += received(i)
    return n
  }
  /** How far the slowest receiver is (shared: all of them together, each message reaching one). */
  const minReceived = (): number => {
    if (job.subs === 0) return Infinity
    if (job.shared === true) return totalReceived()
    let m = Infinity
    for (let i = 0; i < job.subs; i++) m = Math.min(m, received(i))
    return m
  }

  const pub = await mqttConnect(job.port, "bench-pub", true, job.v5 === true)
  const msg = encodePublish(topic, job.qos, payload(job.size), job.v5 === true)
  const perBatch =
    job.qos === 0
      ? Math.max(1, Math.floor(BATCH_BYTES / msg.buf.length))
      : Math.max(1, Math.min(Math.floor(WINDOW / 4), Math.floor(BATCH_BYTES / msg.buf.length)))
  const windowMsgs =
    job.qos === 0 ? Math.max(perBatch * MAX_PINGS_OUT, Math.floor(WINDOW_QOS0_BYTES / msg.buf.length)) : WINDOW

  // batches: one (immutable) for QoS 0; for QoS 1/2 a pool, each slot patched only
  // once its previous write has been handed to the kernel
  interface Slot {
    readonly batch: PublishBatch
    busy: boolean
    readonly free: () => void
  }
  const pool: Array<Slot> = []
  const newSlot = (): Slot => {
    const s: Slot = {
      batch: new PublishBatch(msg, perBatch),
      busy: false,
      free: () => {
        s.busy = false
      }
    }
    pool.push(s)
    return s
  }
  newSlot()
  const freeSlot = (): Slot => {
    for (const s of pool) if (!s.busy) return s
    return newSlot()
  }

  let sent = 0
  /** Messages to publish: `count`, or what was sent when the time was up. */
  let target = job.count
  const deadline = job.durationMs > 0 ? performance.now() + job.durationMs : Infinity
  let nextId = 1
  let pingsOut = 0
  let waitingDrain = false
  let pubDone = false
  let pubDoneAt = 0
  const completed = (): number =>
    job.qos === 0 ? sent : job.qos === 1 ? pub.reader.pubacks : pub.reader.pubcomps
  const t = ackTables()
  const pubrel = new AckWriter(t.pubrel, (b) => {
    if (!pub.closed) pub.sock.write(b)
  })
  let onPubDone: () => void = () => {}
  const checkPubDone = (): void => {
    if (pubDone || sent < target) return
    if (job.qos === 0 ? pingsOut === 0 : completed() >= target) {
      pubDone = true
      pubDoneAt = performance.now()
      onPubDone()
    }
  }
  pub.reader.onAck = (type, id) => {
    if (type === PUBREC) pubrel.add(id)
  }
  pub.reader.onPingresp = () => {
    pingsOut--
  }
  pub.reader.onChunkEnd = () => {
    pubrel.flush()
    checkPubDone()
    pump()
  }

  pump = (): void => {
    if (waitingDrain || pub.closed) return
    while (sent < target) {
      if (performance.now() >= deadline) {
        target = sent
        checkPubDone()
        return
      }
      const n = Math.min(perBatch, target - sent)
      if (job.qos === 0 && pingsOut >= MAX_PINGS_OUT) return
      if (job.qos > 0 && sent - completed() + n > windowMsgs) return
      if (job.subs > 0 && sent - minReceived() + n > windowMsgs) return
      const slot = job.qos === 0 ? pool[0]! : freeSlot()
      if (job.qos > 0) {
        nextId = slot.batch.patch(nextId, n)
        slot.busy = true
      }
      const buf = n === perBatch ? slot.batch.buf : slot.batch.buf.subarray(0, n * slot.batch.msgLen)
      sent += n
      let ok = pub.sock.write(buf, job.qos === 0 ? undefined : slot.free)
      if (job.qos === 0) {
        pingsOut++
        ok = pub.sock.write(PINGREQ)
      }
      if (!ok) {
        waitingDrain = true
        pub.sock.once("drain", () => {
          waitingDrain = false
          pump()
        })
        return
      }
    }
  }

  const expected = (): number => (job.shared === true ? target : target * job.subs)
  const start = cpuNow(job.serverPid)
  let endAt = 0
  let lastRecvAt = 0
  const finished = new Promise<void>((resolve) => {
    let last = -1
    let lastSent = -1
    let lastDone = -1
    let lastProgress = performance.now()
    const check = (): boolean => {
      if (pubDone && totalReceived() >= expected()) {
        if (endAt === 0) endAt = job.subs === 0 ? pubDoneAt : Math.max(lastRecvAt, pubDoneAt)
        clearInterval(timer)
        resolve()
        return true
      }
      return false
    }
    onPubDone = () => {
      check()
    }
    const timer = setInterval(() => {
      if (check()) return
      const r = totalReceived()
      const d = completed()
      const now = performance.now()
      if (r !== last || sent !== lastSent || d !== lastDone) {
        last = r
        lastSent = sent
        lastDone = d
        lastProgress = now
      } else if (now - lastProgress > STALL_MS) {
        errors.push(
          `stalled: no progress for ${STALL_MS} ms (published ${sent}/${target}, acknowledged ${
            job.qos === 0 ? "-" : d
          }, received ${r}/${expected()})`
        )
        for (const c of [pub, ...mqttSubs, ...natsSubs]) if (c.closed) errors.push(`connection closed: ${c.closeReason}`)
        endAt = lastRecvAt > 0 ? lastRecvAt : now
        if (pubDoneAt === 0) pubDoneAt = now
        clearInterval(timer)
        resolve()
      }
    }, 50)
    const onData = (): void => {
      lastRecvAt = performance.now()
      if (pubDone) check()
    }
    for (const s of mqttSubs) s.sock.on("data", onData)
    for (const s of natsSubs) s.sock.on("data", onData)
  })
  pump()
  await finished
  const end = cpuNow(job.serverPid)
  const got = totalReceived()
  const headline = job.subs === 0 ? sent : got
  const elapsedMs = endAt - start.t
  let loss = 0
  let excess = 0
  if (job.shared === true) {
    // each message to exactly one member of the group
    loss = Math.max(0, target - got)
    excess = Math.max(0, got - target)
  } else {
    for (let i = 0; i < job.subs; i++) {
      loss += Math.max(0, target - received(i))
      excess += Math.max(0, received(i) - target)
    }
  }
  if (job.qos > 0 && completed() < target) {
    errors.push(`publisher: ${completed()} of ${target} acknowledged (${job.qos === 1 ? "PUBACK" : "PUBCOMP"})`)
  }
  for (const c of [pub, ...mqttSubs]) for (const e of c.reader.errors) errors.push(e)
  for (const c of natsSubs) for (const e of c.reader.errors) errors.push(e)
  if (pub.closed) errors.push(`publisher connection closed: ${pub.closeReason}`)
  for (const c of mqttSubs) if (c.closed) errors.push(`subscriber connection closed: ${c.closeReason}`)
  const metrics: Record<string, number> = {
    rate: (headline * 1000) / elapsedMs,
    mbps: (headline * job.size * 1000) / elapsedMs / 1e6,
    pubRate: (sent * 1000) / ((pubDoneAt || endAt) - start.t),
    published: sent,
    delivered: got,
    elapsedMs,
    ...cpuMetrics(start, end, headline)
  }
  for (const c of [pub, ...mqttSubs]) c.destroy()
  for (const c of natsSubs) c.destroy()
  // a clean-session CONNECT discards a persistent session [MQTT-3.1.2-6]: the next run on
  // this server (the measured one after the warm-up) finds no subscriber left behind
  if (job.persistent === true) {
    for (let i = 0; i < mqttSubs.length; i++) {
      const c = await mqttConnect(job.port, subId(i)).catch(() => undefined)
      c?.destroy()
    }
  }
  return { ok: true, metrics, loss, excess, errors: [...new Set(errors)] }
}

// ---------------------------------------------------------------- connect rate

export const runMqttConnect = async (job: MqttConnectJob): Promise<JobResult> => {
  const errors: Array<string> = []
  const CONCURRENCY = Number(process.env.BENCH_CONC ?? 64)
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
  const w = watch(job.serverPid)
  await sleep(300)
  const rssBefore = w.statusBytes("VmRSS") ?? 0
  const conns: Array<MConn> = []
  let failed = 0
  const errorKinds = new Map<string, number>()
  let next = 0
  const one = async (): Promise<void> => {
    const i = next++
    try {
      conns.push(await mqttConnect(job.port, `bench-c-${i}`))
    } catch (e) {
      failed++
      const k = (e instanceof Error ? e.message : String(e)).replace(/\s*\d+\.\d+\.\d+\.\d+:\d+.*$/, "")
      errorKinds.set(k, (errorKinds.get(k) ?? 0) + 1)
    }
  }
  // one at a time: the round trip of a single CONNECT/CONNACK
  const seq = Math.min(500, Math.floor(job.count / 4))
  const s0 = performance.now()
  while (next < seq) await one()
  const seqMs = performance.now() - s0
  const seqOk = conns.length
  // then many at a time
  const start = cpuNow(job.serverPid)
  const worker = async (): Promise<void> => {
    while (next < job.count) await one()
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, job.count - seq) }, worker))
  const connected = cpuNow(job.serverPid)
  await sleep(1500)
  const rssAfter = w.statusBytes("VmRSS") ?? 0
  const closedEarly = conns.filter((c) => c.closed).length
  for (const [k, n] of errorKinds) errors.push(`${n} × connect failed: ${k}`)
  if (closedEarly > 0) errors.push(`${closedEarly} connections closed by the server while idle`)
  const held = conns.length - closedEarly
  const elapsedMs = connected.t - start.t
  const metrics: Record<string, number> = {
    connRate: ((conns.length - seqOk) * 1000) / elapsedMs,
    seqConnRate: seq > 0 ? (seq * 1000) / seqMs : 0,
    kbPerConn: held > 0 ? (rssAfter - rssBefore) / held / 1024 : 0,
    rssAfterMB: rssAfter / 1048576,
    held,
    elapsedMs,
    ...cpuMetrics(start, connected, job.count - seq)
  }
  for (const c of conns) c.destroy()
  await sleep(200)
  return { ok: true, metrics, loss: failed + closedEarly, excess: 0, errors }
}
