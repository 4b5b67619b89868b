// A raw MQTT 5.0 connection for end-to-end tests that must see every packet the server
// sends (reason codes, properties, a DISCONNECT before the close) or send what no client
// library would: packets are built and read by mqtt-packet (protocol level 5).
import * as net from "node:net"
import * as MqttPacket from "mqtt-packet"
import { eventually } from "./server.js"

export class RawMqtt5 {
  readonly received: Array<MqttPacket.Packet> = []
  closed = false
  private readonly parser = MqttPacket.parser({ protocolVersion: 5 })

  private constructor(readonly socket: net.Socket) {
    this.parser.on("packet", (p: MqttPacket.Packet) => this.received.push(p))
    this.parser.on("error", (e: Error) => this.received.push({ cmd: "parse-error", message: e.message } as unknown as MqttPacket.Packet))
    socket.on("data", (d) => this.parser.parse(d))
    socket.on("close", () => {
      this.closed = true
    })
    socket.on("error", () => {})
  }

  static open(port: number): Promise<RawMqtt5> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", port }, () => resolve(new RawMqtt5(s)))
      s.once("error", reject)
    })
  }

  /** Sends a packet as mqtt-packet generates it for protocol level 5. */
  send(p: Record<string, unknown>): void {
    this.socket.write(MqttPacket.generate(p as unknown as MqttPacket.Packet, { protocolVersion: 5 }))
  }

  sendBytes(b: Buffer): void {
    this.socket.write(b)
  }

  /** CONNECT at level 5 (client id, clean start and properties as given); resolves with the CONNACK. */
  async connect(over: Record<string, unknown> = {}): Promise<MqttPacket.IConnackPacket> {
    this.send({ cmd: "connect", protocolId: "MQTT", protocolVersion: 5, clean: true, keepalive: 60, clientId: "raw5", ...over })
    return (await this.next("connack")) as MqttPacket.IConnackPacket
  }

  /** The first packet of type `cmd` not taken yet (taken from `received`). */
  async next(cmd: string, what = cmd): Promise<MqttPacket.Packet> {
    let found: MqttPacket.Packet | undefined
    await eventually(() => {
      const i = this.received.findIndex((p) => p.cmd === cmd)
      if (i < 0) return false
      found = this.received.splice(i, 1)[0]
      return true
    }, `${what} from the server (have ${JSON.stringify(this.received.map((p) => p.cmd))}, closed ${this.closed})`)
    return found!
  }

  waitClosed(): Promise<void> {
    return eventually(() => this.closed, "the server to close the connection")
  }

  end(): void {
    this.socket.destroy()
  }
}
