// mosquitto_pub and mosquitto_sub (Debian's mosquitto-clients) speaking MQTT 5.0 (`-V
// mqttv5`) to a listener with `protocol_versions: [4, 5]`, and to a 3.1.1-only one. What
// they print is what the library reported: messages in a fixed format (-F), and with -d
// the packets with their reason codes ("received PUBACK (Mid: 1, RC:135)", "Subscribed
// (mid: 1): 135, 1", "received CONNACK (140)"), warnings with the server's Reason String.
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { mqttOptions, type MqttServer, startMqttServer } from "../../helpers/mqtt.js"
import { authorization, eventually, limitedUser } from "../../helpers/server.js"
import { hasCommand, INSTALL, requireInstalled } from "../run.js"


/** Runs a command to its end (bounded); its exit code and output (stdout and stderr). */
const run = (cmd: string, args: ReadonlyArray<string>): Promise<{ code: number | null; out: string }> =>
  new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d))
    child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d))
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, out })
    })
  })

describe("MQTT 5.0 with mosquitto_pub / mosquitto_sub 2.0.11 (-V mqttv5)", () => {
  let srv: MqttServer
  let v4only: MqttServer
  const conn = (id: string, who = "admin", port = srv.mqttPort, version = "mqttv5") =>
    ["-h", "127.0.0.1", "-p", String(port), "-i", id, "-V", version, "-u", who, "-P", `${who}-pw`]

  beforeAll(async () => {
    requireInstalled("mosquitto_pub and mosquitto_sub", () => hasCommand("mosquitto_pub") && hasCommand("mosquitto_sub"), INSTALL.mosquitto)
    srv = await startMqttServer({
      mqtt: mqttOptions({ protocolVersions: [4, 5] }),
      authorization: authorization({ users: [limitedUser("admin"), limitedUser("guest", ["public.>"], ["public.>"])] })
    })
    v4only = await startMqttServer()
  })
  afterAll(async () => {
    await Promise.all([srv?.close(), v4only?.close()])
  })

  it("carries QoS 0, 1 and 2 from v5 and 3.1.1 publishers to a v5 subscriber", async () => {
    const sub = spawn("stdbuf", ["-oL", "mosquitto_sub", ...conn("mosq5-sub"), "-t", "mx5/#", "-q", "2", "-C", "4", "-W", "30", "-F", "%t|%q|%p", "-d"],
      { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    sub.stdout.setEncoding("utf8").on("data", (d: string) => (out += d))
    const exited = new Promise<number | null>((resolve) => sub.on("close", resolve))
    await eventually(() => /Subscribed \(mid: \d+\): 2/.test(out), `the SUBACK (have ${JSON.stringify(out)})`)
    for (const q of [0, 1, 2]) {
      const r = await run("mosquitto_pub", [...conn("mosq5-pub"), "-t", `mx5/q${q}`, "-m", `v5 ${q}`, "-q", String(q), "-d"])
      expect(r.code).toBe(0)
      if (q === 1) expect(r.out).toMatch(/received PUBACK \(Mid: 1, RC:0\)/)
      if (q === 2) expect(r.out).toMatch(/received PUBCOMP \(Mid: 1, RC:0\)/)
    }
    const old = await run("mosquitto_pub", [...conn("mosq4-pub", "admin", srv.mqttPort, "mqttv311"), "-t", "mx5/v4", "-m", "v4 1", "-q", "1", "-d"])
    expect(old.out).toMatch(/received PUBACK \(Mid: 1, RC:0\)/) // mosquitto prints RC:0 for 3.1.1 too
    expect(await exited).toBe(0)
    expect(out.split("\n").filter((l) => l.startsWith("mx5/"))).toEqual(["mx5/q0|0|v5 0", "mx5/q1|1|v5 1", "mx5/q2|2|v5 2", "mx5/v4|1|v4 1"])
  })

  it("reports PUBACK 0x87 with the server's Reason String, and SUBACK codes per filter", async () => {
    const pub = await run("mosquitto_pub", [...conn("mosq5-guest", "guest"), "-t", "private/x", "-m", "no", "-q", "1", "-d"])
    expect(pub.out).toMatch(/received PUBACK \(Mid: 1, RC:135\)/)
    expect(pub.out).toMatch(/Publish 1 failed: Not authorized/)
    expect(pub.out).toMatch(/not authorized to publish to this topic/)
    const sub = await run("mosquitto_sub", [...conn("mosq5-guest-sub", "guest"), "-t", "private/x", "-t", "public/x", "-q", "1", "-d", "-E"])
    expect(sub.out).toMatch(/Subscribed \(mid: 1\): 135, 1/)
  })

  it("reports PUBACK 0x10 for a PUBLISH nobody receives, and 0x99 for a payload its Payload Format Indicator misdescribes", async () => {
    const none = await run("mosquitto_pub", [...conn("mosq5-nomatch"), "-t", "nobody/listens", "-m", "x", "-q", "1", "-d"])
    expect(none.code).toBe(0) // a success code
    expect(none.out).toMatch(/received PUBACK \(Mid: 1, RC:16\)/)
    const dir = mkdtempSync(join(tmpdir(), "mosq5-"))
    const file = join(dir, "payload.bin")
    writeFileSync(file, Buffer.from([0x68, 0xc3, 0x28]))
    try {
      const bad = await run("mosquitto_pub", [...conn("mosq5-pfi"), "-t", "public/x", "-f", file, "-q", "1", "-d", "-D", "publish", "payload-format-indicator", "1"])
      expect(bad.out).toMatch(/received PUBACK \(Mid: 1, RC:153\)/)
      expect(bad.out).toMatch(/Payload format invalid/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("is refused with CONNACK 0x8C for an authentication method, 0x87 for a bad password, and by a 3.1.1-only listener", async () => {
    const auth = await run("mosquitto_sub", [...conn("mosq5-auth"), "-t", "a", "-E", "-D", "connect", "authentication-method", "SCRAM-SHA-1"])
    expect(auth.out).toMatch(/Connection error: Bad authentication method/)
    const bad = await run("mosquitto_sub", ["-h", "127.0.0.1", "-p", String(srv.mqttPort), "-i", "mosq5-bad", "-V", "mqttv5", "-u", "admin", "-P", "wrong", "-t", "a", "-E"])
    expect(bad.out).toMatch(/Connection error: Not authorized/)
    const old = await run("mosquitto_sub", ["-h", "127.0.0.1", "-p", String(v4only.mqttPort), "-i", "mosq5-old", "-V", "mqttv5", "-t", "a", "-E"])
    expect(old.out).toMatch(/Connection error: Unsupported Protocol Version/)
  })
})
