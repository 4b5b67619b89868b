// aedes (npm) as an MQTT peer: `node dist/bench/servers/aedes.js <port>`, loopback
// only, in-memory persistence. Loaded dynamically: aedes is optional and not a
// dependency of Switchyard.
import * as net from "node:net"

type Handle = (stream: net.Socket) => void
type AedesModule = {
  Aedes?: { createBroker?: () => Promise<{ handle: Handle }> }
  default?: unknown
}

const port = Number(process.argv[2] ?? "1883")
const name = "aedes"
const mod = (await import(name)) as AedesModule
let handle: Handle
if (mod.Aedes?.createBroker !== undefined) {
  handle = (await mod.Aedes.createBroker()).handle
} else {
  // older releases export a factory function
  const factory = (mod.default ?? mod) as () => { handle: Handle }
  handle = factory().handle
}
net.createServer(handle).listen(port, "127.0.0.1")
