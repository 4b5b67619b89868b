// mosquitto_pub and mosquitto_sub (Debian's mosquitto-clients) through the MQTT client
// matrix. Each case runs the commands as a user would and reads what they print:
// messages in a fixed format (-F "%t|%q|%r|%p"), and with -d the packets they exchanged
// ("Subscribed (mid: 1): 2", "received PUBCOMP", "Connection Refused: not authorised.").
// The clients have no WebSocket transport.
import { type ChildProcess, spawn } from "node:child_process"
import { hasCommand, INSTALL, type Json, requireInstalled } from "../run.js"
import { eventually } from "../../helpers/server.js"
import { describeMqttMatrix, type MqttCase } from "../mqtt-matrix.js"

const FORMAT = "%t|%q|%r|%p"

interface Running {
  readonly child: ChildProcess
  /** stdout and stderr, as they arrive. */
  output(): string
  exited(): Promise<number | null>
}

const start = (cmd: string, args: ReadonlyArray<string>): Running => {
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] })
  let out = ""
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d))
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (out += d))
  const exit = new Promise<number | null>((res) => child.on("close", (code) => res(code)))
  return { child, output: () => out, exited: () => exit }
}

/** Run to the end (bounded); its output. */
const run = async (cmd: string, args: ReadonlyArray<string>): Promise<{ code: number | null; out: string }> => {
  const r = start(cmd, args)
  const timer = setTimeout(() => r.child.kill("SIGKILL"), 30_000)
  const code = await r.exited()
  clearTimeout(timer)
  return { code, out: r.output() }
}

const connArgs = (hostPort: string, args: Record<string, string>, id: string): Array<string> => {
  const [host, port] = hostPort.split(":")
  return [
    "-h", host, "-p", port, "-i", args.id ?? id, "-V", "mqttv311",
    ...(args.user !== undefined ? ["-u", args.user, "-P", args.pass] : []),
    ...(args.ca !== undefined ? ["--cafile", args.ca] : [])
  ]
}

/** The messages mosquitto_sub printed in FORMAT, as "topic|qos|retain|payload". */
const messages = (out: string): Array<string> =>
  out.split("\n").filter((l) => l.startsWith("mx/")).map((l) => {
    const [t, q, r, ...p] = l.split("|")
    return `${t}|${q}|${r === "1"}|${p.join("|")}`
  }).sort()

/** The granted QoS mosquitto_sub -d printed on SUBACK. */
const granted = (out: string): Array<number> =>
  [...out.matchAll(/Subscribed \(mid: \d+\): ([\d, ]+)/g)].flatMap((m) => m[1].split(",").map((s) => Number(s.trim())))

/**
 * mosquitto_sub, line-buffered (stdbuf) so its output is read as it comes; resolves once
 * its SUBACK is in. `messages(n)` waits for n messages (and the SUBACK, whichever order
 * they came in), then stops it with SIGINT (it disconnects cleanly) and returns its output.
 */
const subscriber = async (hostPort: string, id: string, topic: string, qos: number, extra: Array<string> = [], waitSuback = true) => {
  const s = start("stdbuf", ["-oL", "mosquitto_sub", ...connArgs(hostPort, {}, id), "-t", topic, "-q", String(qos), "-F", FORMAT, "-d", ...extra])
  const suback = () => granted(s.output()).length > 0
  if (waitSuback) await eventually(() => suback() || s.child.exitCode !== null, `${id}'s SUBACK (have ${JSON.stringify(s.output())})`)
  return {
    ...s,
    messages: async (n: number): Promise<string> => {
      await eventually(() => (suback() && messages(s.output()).length >= n) || s.child.exitCode !== null, `${n} messages for ${id} (have ${JSON.stringify(s.output())})`)
      s.child.kill("SIGINT")
      await s.exited()
      return s.output()
    }
  }
}

/** mosquitto_pub -d: true once the flow of its QoS completed (PUBACK, PUBCOMP; QoS 0 has none). */
const publish = async (hostPort: string, id: string, topic: string, payload: string, qos: number, retain = false): Promise<boolean> => {
  const r = await run("mosquitto_pub", [...connArgs(hostPort, {}, id), "-t", topic, "-m", payload, "-q", String(qos), "-d", ...(retain ? ["-r"] : [])])
  const done = qos === 0 ? /sending PUBLISH/ : qos === 1 ? /received PUBACK/ : /received PUBCOMP/
  return r.code === 0 && done.test(r.out)
}

const cases: Record<MqttCase, (hostPort: string, args: Record<string, string>) => Promise<Json>> = {
  connect: async (hostPort, args) => {
    const r = await run("mosquitto_pub", [...connArgs(hostPort, args, "mosq-connect"), "-t", "mx/connect", "-m", "x", "-d"])
    const refused = /Connection error: (.*)/.exec(r.out)
    return { connack: refused !== null ? { failure: true, reason: refused[1].trim() } : { failure: !/received CONNACK \(0\)/.test(r.out), reason: "" } }
  },
  qos: async (hostPort) => {
    const sub = await subscriber(hostPort, "mosq-qos-sub", "mx/qos/#", 2)
    const published: Array<number> = []
    for (const q of [0, 1, 2]) if (await publish(hostPort, "mosq-qos-pub", `mx/qos/q${q}`, `hello ${q}`, q)) published.push(q)
    const out = await sub.messages(3)
    return { granted: granted(out), published, received: messages(out) }
  },
  retained: async (hostPort) => {
    await publish(hostPort, "mosq-ret-pub", "mx/ret", "kept", 1, true)
    const sub = await subscriber(hostPort, "mosq-ret-sub", "mx/ret", 1, [], false)
    const out = await sub.messages(1)
    return { granted: granted(out), received: messages(out) }
  },
  will: async (hostPort) => {
    const sub = await subscriber(hostPort, "mosq-will-sub", "mx/will", 1)
    const device = await subscriber(hostPort, "mosq-will-dev", "mx/device", 0, ["--will-topic", "mx/will", "--will-payload", "gone", "--will-qos", "1"])
    device.child.kill("SIGKILL") // no DISCONNECT: the socket just closes
    return { received: messages(await sub.messages(1)) }
  },
  persist_subscribe: async (hostPort, args) => {
    // -c: clean session 0; -E: exit (with DISCONNECT) once subscribed.
    const r = await run("mosquitto_sub", [...connArgs(hostPort, args, "unused"), "-c", "-t", "mx/persist", "-q", "1", "-E", "-d"])
    return { granted: granted(r.out) }
  },
  publish: async (hostPort, args) => ({ published: await publish(hostPort, "mosq-publisher", args.topic, args.payload, Number(args.qos)) }),
  persist_resume: async (hostPort, args) => {
    // mosquitto_sub always subscribes; the message was published before this session
    // came back, so only the stored session can deliver it.
    const r = await run("mosquitto_sub", [...connArgs(hostPort, args, "unused"), "-c", "-t", "mx/persist", "-q", "1", "-C", "1", "-W", "20", "-F", FORMAT])
    return { received: messages(r.out) }
  }
}

describeMqttMatrix({
  name: "mosquitto_pub / mosquitto_sub 2.0.11",
  prepare: async () => {
    requireInstalled("mosquitto_pub and mosquitto_sub", () => hasCommand("mosquitto_pub") && hasCommand("mosquitto_sub"), INSTALL.mosquitto)
    requireInstalled("stdbuf (coreutils)", () => hasCommand("stdbuf"), "apt-get install -y coreutils")
  },
  run: (c, hostPort, args = {}) => cases[c](hostPort, args),
  websocket: false,
  reportsSessionPresent: false,
  notAuthorized: /^Connection Refused: not authori[sz]ed\.?$/
})
