// paho-mqtt (pip, pinned by .ci/run) through the MQTT client matrix:
// test/clients/python/paho_client.py, over TCP, WebSocket and TLS.
import { fileURLToPath } from "node:url"
import { INSTALL, pipVersion, requireInstalled, runCase } from "../run.js"
import { describeMqttMatrix } from "../mqtt-matrix.js"

const script = fileURLToPath(new URL("paho_client.py", import.meta.url))
const VERSION = "2.1.0"

describeMqttMatrix({
  name: `paho-mqtt ${VERSION} (Python)`,
  prepare: async () => {
    requireInstalled(`paho-mqtt ${VERSION}`, () => pipVersion("paho-mqtt") === VERSION, INSTALL.python)
  },
  run: (c, hostPort, args) => runCase(["python3", script], c, hostPort, args),
  websocket: true,
  reportsSessionPresent: true,
  notAuthorized: /^Not authorized$/
})
